"""Places inside a drawn polygon or a box: ``GET /v1/places/within``.

``polygon=`` takes a GeoJSON Polygon (holes allowed) as JSON text — Elasticsearch's
``geo_shape`` query with its default ``intersects`` relation, PostGIS
``ST_Intersects(area, place)``: a place on the edge is inside (:mod:`lookup.geo.polygon`
says why, and how ±180 is crossed) — and ``bbox=west,south,east,north`` a rectangle (as
Elasticsearch's ``envelope``; ``west > east`` crosses ±180). It is a GET with the shape
in the query, as Typesense takes its polygon filter, so a drawn area is a link and its
pages follow a cursor like the map area's.

The answer comes from a geohash cell cover (:mod:`lookup.geo.cover`): the places of
cells wholly inside are taken as they are, those of the edge's cells are tested one by
one. The filters are the search endpoint's cheap ones (category, price, openNow, q) and
``minRating``. Places are ranked like the map area's pins, from the centre of the
shape's box; pins cut at ``limit`` say ``truncated: true`` and give a ``nextCursor``.

The work (cover, reads, tests) runs in a lane of its own (:data:`WITHIN_LANE`), never on
the event loop nor in the radius search's lane: a large polygon never delays
``/v1/search``, which does not run any of this module.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import orjson
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from lookup import settings
from lookup.geo import geohash as gh
from lookup.geo.cover import cover
from lookup.geo.index import GeohashIndex, PlaceColumns
from lookup.geo.nearest import DIST_SCALE as _DIST_SCALE
from lookup.geo.paging import SearchError, decode_cursor, encode_cursor, fingerprint
from lookup.geo.polygon import PolygonError, Shape, parse_bbox, parse_polygon
from lookup.geo.ranking import haversine_m, score
from lookup.geo.search import Filters, Matches, ProximitySearch
from lookup.kit.http import ApiError, bool_param, choice_param, float_param, int_param
from lookup.kit.threads import ThreadLane

#: The worker threads of polygon searches (a lane apart from the radius search's).
WITHIN_LANE = ThreadLane("places-within", 4)
#: Ways to find the candidates: the cover, or every place (brute force, to compare).
WITHIN_INDEXES = ("geohash", "scan")
MAX_WITHIN_LIMIT = 500
_SCORE_SCALE = 1e9

#: ``GET /v1/places/within``'s query parameters: (name, JSON schema, what it does).
WITHIN_QUERY: list[tuple[str, dict[str, Any], str]] = [
    (
        "polygon",
        {"type": "string", "maxLength": 30_000},
        'a GeoJSON Polygon as JSON: {"type":"Polygon","coordinates":[[[lng,lat],…]]} — '
        "rings closed, ≥ 4 positions, holes after the shell; a step of more than 180° of "
        "longitude crosses ±180. Give polygon or bbox",
    ),
    ("bbox", {"type": "string"}, "west,south,east,north (west > east crosses ±180)"),
    ("category", {"type": "string"}, "categories, comma-separated"),
    ("price", {"type": "string"}, "price levels 1-4, comma-separated"),
    ("openNow", {"type": "boolean", "default": False}, "only places open now"),
    ("q", {"type": "string", "maxLength": 200}, "words in the name, category or tags"),
    (
        "minRating",
        {"type": "number", "minimum": 0, "maximum": 5},
        "stars (0-5) of the rating the ranking uses: the review average pulled toward "
        "the mean of all places by a few prior reviews, so one 5-star review is not a 5",
    ),
    (
        "limit",
        {"type": "integer", "minimum": 1, "maximum": MAX_WITHIN_LIMIT, "default": 100},
        "places per answer",
    ),
    ("cursor", {"type": "string"}, "nextCursor of a truncated answer (same shape and filters)"),
    (
        "index",
        {"type": "string", "enum": list(WITHIN_INDEXES), "default": "geohash"},
        "geohash: the cell cover; scan: test every place (brute force, to compare)",
    ),
    ("explain", {"type": "boolean", "default": False}, "add the cells of the cover"),
]
WITHIN_PARAMS = frozenset(name for name, _, _ in WITHIN_QUERY)

WITHIN_DESCRIPTION = """\
Places inside a polygon (GeoJSON Polygon with holes) or a box: Elasticsearch's geo_shape \
query with the intersects relation, PostGIS ST_Intersects — a place on the edge is \
inside. Edges are straight in degrees (GeoJSON, PostGIS geometry). Consecutive positions \
more than 180° of longitude apart are joined across ±180 (the polygon is cut there, as \
RFC 7946 §3.1.9 describes); a ring around a pole is refused. Found through a geohash \
cell cover — cells wholly inside taken whole, edge cells tested place by place — and \
ranked from the centre of the shape's box like the map area's pins; total counts every \
match, pins cut at limit say truncated: true and give nextCursor. A bad polygon (not \
closed, < 4 positions, out of range, self-intersecting, too many vertices) is 400 \
INVALID_POLYGON; unknown parameters 400 UNKNOWN_PARAMETER."""


def shape_of(params: Any) -> Shape:
    """The request's polygon or box, checked (``ApiError`` 400 otherwise)."""
    polygon, bbox = params.get("polygon"), params.get("bbox")
    if (polygon is None) == (bbox is None):
        raise ApiError(400, "INVALID_PARAMETER", "give one of polygon (GeoJSON) or bbox")
    try:
        if polygon is not None:
            limit = int(settings.get("places_polygon_max_vertices"))
            return parse_polygon(polygon, limit)
        return parse_bbox(bbox)
    except PolygonError as exc:
        raise ApiError(400, exc.code, exc.message) from None


def _rows(places: GeohashIndex, ranges: np.ndarray) -> PlaceColumns:
    base, delta = places.positions(ranges)
    return PlaceColumns.concat(places.base.take(base), places.delta.take(delta))


def _counter(places: GeohashIndex) -> Any:
    def count(cells: np.ndarray, precision: int) -> np.ndarray:
        shift = gh.CODE_BITS - 5 * precision
        bounds = np.stack([cells << shift, (cells + 1) << shift], axis=1).ravel()
        return places.range_counts(bounds)[0::2]

    return count


def within(
    search: ProximitySearch,
    shape: Shape,
    *,
    filters: Filters | None = None,
    min_rating: float | None = None,
    limit: int = 100,
    cursor: str | None = None,
    index: str = "geohash",
    max_cells: int = 256,
    now: float | None = None,
    explain: bool = False,
) -> dict[str, Any]:
    """The places of ``shape`` passing the filters: one ranked page and how it was found."""
    started = time.perf_counter()
    places = search.places
    filters = filters or Filters()
    asked = (shape.digest(), filters.key(), min_rating, index, "within")
    fp = fingerprint(*asked)
    after: tuple[int, int, int] | None = None
    if cursor:
        data = decode_cursor(cursor, search.cursor_key, "within")
        if data["f"] != fp:
            raise SearchError("INVALID_PARAMETER", "cursor belongs to a different search")
        now, after = float(data["t"]), (int(data["s"]), int(data["d"]), int(data["n"]))
    else:
        now = float(int(search.clock() if now is None else now))
    found = None
    if index == "scan":
        edge = _rows(places, np.array([[0, 1 << gh.CODE_BITS]], dtype=np.int64))
        whole = PlaceColumns.empty()
    else:
        found = cover(shape, max_cells, _counter(places))
        whole = _rows(places, found.ranges("inside"))
        edge = _rows(places, found.ranges("boundary"))
    read = len(whole) + len(edge)
    cols = PlaceColumns.concat(whole, edge.take(shape.contains(edge.lat, edge.lng)))
    keep, rel = search._static_mask(cols, filters)
    if min_rating is not None:
        keep &= cols.rating.astype(np.float64) * 5.0 >= min_rating
    cols, rel = cols.take(keep), rel[keep]
    if filters.open_now:
        keep = search.open_mask(cols, now)
        cols, rel = cols.take(keep), rel[keep]
    # ranked like the map area's pins: from the centre of the shape's box
    clat = (shape.south + shape.north) / 2.0
    clng = ((shape.west + shape.east) / 2.0 + 180.0) % 360.0 - 180.0
    dist = haversine_m(clat, clng, cols.lat, cols.lng)
    corner = ((shape.west + 180.0) % 360.0) - 180.0
    reach = float(haversine_m(clat, clng, np.array([shape.north]), np.array([corner]))[0])
    s = score(dist, max(reach, 1.0), cols.rating.astype(np.float64), rel)
    m = Matches(
        cols,
        dist,
        s,
        rel,
        np.rint(s * _SCORE_SCALE).astype(np.int64),
        np.rint(dist * _DIST_SCALE).astype(np.int64),
    )
    rows = None if after is None else m.after(after)
    page = m.first(limit, rows)
    body: dict[str, Any] = {
        "total": len(m),
        "results": [],
        "truncated": False,
        "nextCursor": None,
    }
    if (len(m) if rows is None else len(rows)) > limit:
        last = page[-1]
        payload = {"v": 1, "k": "within", "f": fp, "t": int(now)}
        payload |= {"s": int(m.score_key[last]), "d": int(m.dist_key[last])}
        body["nextCursor"] = encode_cursor(
            {**payload, "n": int(m.cols.num[last])}, search.cursor_key
        )
        body["truncated"] = True
    nums = m.cols.num[page].tolist()
    profiles = search.profiles(nums) if search.profiles is not None and nums else None
    body["results"] = search._render(m, page, now, profiles)
    for item in body["results"]:
        item.pop("num", None)
    body["shape"] = {
        "kind": shape.kind,
        "vertices": shape.vertices,
        "holes": len(shape.rings) - 1,
        "crossesAntimeridian": shape.crosses_antimeridian,
    }
    body["index"] = index
    body["read"] = read
    body["tested"] = len(edge)  # places tested one by one (the edge's cells)
    if found is not None:
        body["cells"] = {"inside": len(found.inside), "boundary": len(found.boundary)}
        if explain:
            body["explain"] = {**found.describe(), "polygon": shape.to_geojson()}
    body["tookMs"] = round((time.perf_counter() - started) * 1000.0, 3)
    return body


def mount_within(mounts: Any, service: Any, known_only: Any) -> None:
    """Add ``GET /v1/places/within`` (a fast route, worked in :data:`WITHIN_LANE`)."""

    def answer(params: Any) -> Response:
        shape = shape_of(params)
        s = service.searcher("geohash")
        try:
            filters = s.check_filters(
                category=params.get("category"),
                open_now=bool_param(params, "openNow"),
                price=params.get("price"),
                q=params.get("q"),
            )
            body = within(
                s,
                shape,
                filters=filters,
                min_rating=float_param(params, "minRating", low=0.0, high=5.0),
                limit=int_param(params, "limit", 100, low=1, high=MAX_WITHIN_LIMIT),
                cursor=params.get("cursor") or None,
                index=str(choice_param(params, "index", WITHIN_INDEXES, "geohash")),
                max_cells=int(settings.get("places_polygon_max_cells")),
                explain=bool_param(params, "explain"),
            )
        except SearchError as exc:
            raise ApiError(400, exc.code, exc.message) from None
        return Response(orjson.dumps(body), media_type="application/json")

    async def route(request: Request) -> Response:
        params = request.query_params
        known_only(params, WITHIN_PARAMS)
        return await WITHIN_LANE.run(answer, params)

    mounts.fast_routes.append(Route("/v1/places/within", route, methods=["GET"]))
    mounts.fast_route_docs.update(within_docs())


def within_docs() -> dict[str, dict[str, Any]]:
    """The route as an OpenAPI path item, from the table the handler checks against."""
    return {
        "/v1/places/within": {
            "get": {
                "tags": ["places"],
                "summary": "Places inside a polygon (GeoJSON, holes, across ±180) or a box",
                "description": WITHIN_DESCRIPTION,
                "operationId": "places_within_get",
                "parameters": [
                    {"name": n, "in": "query", "required": False, "schema": sch, "description": d}
                    for n, sch, d in WITHIN_QUERY
                ],
                "responses": {
                    "200": {"description": "one page of places (truncated, nextCursor)"},
                    "400": {
                        "description": 'a bad polygon or parameter: {"error", "message"} '
                        "(INVALID_POLYGON, INVALID_PARAMETER, UNKNOWN_PARAMETER)"
                    },
                    "503": {"description": "the places data set is not built or damaged"},
                },
            }
        }
    }


__all__ = ["WITHIN_PARAMS", "WITHIN_QUERY", "mount_within", "shape_of", "within"]
