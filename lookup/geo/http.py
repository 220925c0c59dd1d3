"""HTTP for proximity search: the hot read routes on Starlette, management on FastAPI.

* ``GET /v1/search?lat=&lng=&radius=&category=&openNow=&price=&q=&limit=&cursor=`` —
  radius search (seed contract), a plain Starlette route. Extras: ``widen=false`` keeps
  the radius as asked, ``index=geohash|quadtree|scan|postgis`` picks the planner (to
  compare; ``postgis`` asks the PostgreSQL places table, :mod:`lookup.geo.postgis`),
  ``explain=true`` adds the cells searched, rows read vs matched and the time taken,
  ``cache=false`` bypasses the per-cell result cache, ``sort=distance`` orders by
  distance instead of the score — and, with no ``radius``, asks for the ``limit``
  nearest places however far (nearest-k: PostGIS ``ORDER BY geom <-> point LIMIT k``,
  Elasticsearch's ``_geo_distance`` sort with no distance filter), paged by the cursor;
* ``GET /v1/places/area`` — map-area search with pins or clusters; pins cut at ``limit``
  say ``truncated: true`` and give a ``nextCursor`` to the rest;
* ``GET /v1/places/within?polygon=…|bbox=…`` — places inside a drawn polygon or a box
  (:mod:`lookup.geo.within`);
* ``GET /v1/places/named?q=pun`` — cities and airports by name, as one types;
* ``GET/POST/PATCH/DELETE /v1/places...`` — owners' writes and profile reads, and
  ``GET /v1/places/index`` / ``POST /v1/places/index/rebuild`` for the index itself;
  every write needs the admin token (:mod:`lookup.kit.admin`);
* ``POST``/``GET /v1/places/model/train`` — train the learned ranking in the background
  (:mod:`lookup.geo.training`).

Both hot routes refuse a query parameter they do not know (``400 UNKNOWN_PARAMETER``
naming the accepted ones, as ``kit/asgi.py:known_query_only`` does for FastAPI routes):
a misspelt ``limt=5`` would otherwise answer a question the client did not ask. Their
parameters are declared once (:data:`SEARCH_QUERY`, :data:`AREA_QUERY`): the check and the
OpenAPI document (:func:`places_docs`) read the same table.

A missing data set answers ``503 {"error": "NOT_BUILT"}`` naming the command that
builds it. Writes go to the database and its change stream; the service's tailer (a
background task) applies the stream to the live index every second, and each write
syncs it at once.

No route reads or writes the database on the event loop. The hot routes rank on the loop
(the index, the result cache and the profiles held in memory: CPU work, which a worker
thread would only slow down with its GIL hand-offs, ≈2× the CPU per search); a page with a
place whose profile is not in memory reads it in a worker thread of the routes' own lane
(:data:`SEARCH_LANE`), as does a request that must load the index first, asks for the
brute-force scan or for the k nearest (whose work grows with how far they are). The
management routes are plain ``def`` (FastAPI runs them in its thread pool). A write that
waits out SQLite's busy timeout (another process holding the write lock) answers
``503 UNAVAILABLE`` with ``Retry-After`` (:func:`lookup.kit.engines.sqlite.busy_error`)
and stalls nothing else.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any, NamedTuple

import orjson
from fastapi import Body, Depends, Request
from starlette.requests import Request as StarletteRequest
from starlette.responses import Response
from starlette.routing import Route

from lookup import settings
from lookup.errors import Damaged, NotBuilt
from lookup.geo.gazetteer import MAX_LIMIT, NAMED_KINDS, Gazetteer
from lookup.geo.paging import MAX_LIMIT as MAX_SEARCH_LIMIT
from lookup.geo.paging import MAX_RADIUS_M, SORTS
from lookup.geo.places import PlaceError
from lookup.geo.reviewhttp import mount_reviews
from lookup.geo.search import ProximitySearch, RankedPage, SearchError
from lookup.geo.service import PLANNERS, SYNC_INTERVAL_S, NotInMemory, PlacesService
from lookup.geo.training import mount_training
from lookup.geo.units import UNITS, UnitError, check_unit, in_unit, parse_distance
from lookup.geo.within import mount_within
from lookup.kit.admin import ADMIN_RESPONSES, admin_token_of, check_admin
from lookup.kit.answercache import AnswerCache
from lookup.kit.http import ApiError, bool_param, choice_param, float_param, int_param
from lookup.kit.models import ModelSlot
from lookup.kit.threads import ThreadLane

log = logging.getLogger(__name__)

#: The worker threads of the hot read routes (``/v1/search``, ``/v1/places/area``): profile
#: reads, index loads and scans.
SEARCH_LANE = ThreadLane("places-search", 8)


#: ``GET /v1/search``'s query parameters: (name, JSON schema, what it does) — the accepted
#: set and the OpenAPI document both come from here.
SEARCH_QUERY: list[tuple[str, dict[str, Any], str]] = [
    ("lat", {"type": "number", "minimum": -90, "maximum": 90}, "latitude of the user"),
    ("lng", {"type": "number", "minimum": -180, "maximum": 180}, "longitude of the user"),
    (
        "radius",
        {"type": "string", "default": "2000", "examples": ["2000", "2km", "1.5mi"]},
        f"metres, or a number with a unit ({', '.join(UNITS)}: 2km, 1.5mi, as Elasticsearch "
        f"writes them; capped at {MAX_RADIUS_M:,.0f} m); widens while fewer than 20 match. "
        "Left out with sort=distance: no radius at all (nearest-k)",
    ),
    (
        "unit",
        {"type": "string", "enum": list(UNITS), "default": "m"},
        "also give each result's distance (distance) and the radius used (radiusUsed) in "
        "this unit; distanceM and radiusUsedM stay in metres",
    ),
    (
        "sort",
        {"type": "string", "enum": list(SORTS), "default": "score"},
        "score: the hand-set or learned score. distance: by distance, then place number "
        "(Redis GEOSEARCH ASC, Elasticsearch's _geo_distance sort) — with a radius, the "
        "same matches in that order; with no radius, the limit nearest places passing "
        "the filters however far (PostGIS ORDER BY geom <-> point LIMIT k), paged by "
        "nextCursor, score null",
    ),
    ("category", {"type": "string"}, "categories, comma-separated (restaurant,cafe)"),
    ("price", {"type": "string"}, "price levels 1-4, comma-separated (1,2)"),
    (
        "minRating",
        {"type": "number", "minimum": 0, "maximum": 5},
        "stars (0-5) of the rating the ranking uses: the review average pulled toward the "
        "mean of all places by a few prior reviews (seed 004's minimum rating)",
    ),
    ("openNow", {"type": "boolean", "default": False}, "only places open now"),
    ("q", {"type": "string", "maxLength": 200}, "words in the name, category or tags"),
    (
        "limit",
        {"type": "integer", "minimum": 1, "maximum": MAX_SEARCH_LIMIT, "default": 20},
        "page size (nearest-k: the k of each page)",
    ),
    ("cursor", {"type": "string"}, "nextCursor of the previous page (same query)"),
    ("widen", {"type": "boolean", "default": True}, "widen a short answer's radius"),
    (
        "index",
        {"type": "string", "enum": list(PLANNERS), "default": "geohash"},
        "the cell structure (scan: brute force, to compare; postgis: PostGIS picks the "
        "candidates by ST_DWithin or its KNN order — the places store on PostgreSQL only, "
        "else 400 POSTGIS_UNAVAILABLE)",
    ),
    ("explain", {"type": "boolean", "default": False}, "add how the answer was found"),
    ("cache", {"type": "boolean", "default": True}, "use the per-cell result cache"),
    (
        "ranking",
        {"type": "string", "enum": ["auto", "hand", "learned"], "default": "auto"},
        "the ranker (ignored by nearest-k, which ranks by distance alone)",
    ),
]
#: ``GET /v1/places/area``'s query parameters.
AREA_QUERY: list[tuple[str, dict[str, Any], str]] = [
    *[
        (edge, {"type": "number", "minimum": -lim, "maximum": lim}, f"{edge} edge of the view")
        for edge, lim in (("south", 90), ("west", 180), ("north", 90), ("east", 180))
    ],
    ("category", {"type": "string"}, "categories, comma-separated"),
    ("price", {"type": "string"}, "price levels 1-4, comma-separated"),
    (
        "minRating",
        {"type": "number", "minimum": 0, "maximum": 5},
        "stars (0-5) of the rating the ranking uses: the review average pulled toward the "
        "mean of all places by a few prior reviews (seed 004's minimum rating)",
    ),
    ("openNow", {"type": "boolean", "default": False}, "only places open now"),
    ("q", {"type": "string", "maxLength": 200}, "words in the name, category or tags"),
    (
        "limit",
        {"type": "integer", "minimum": 1, "maximum": 500, "default": 100},
        "pins per answer",
    ),
    (
        "maxPins",
        {"type": "integer", "minimum": 1, "maximum": 5000, "default": 300},
        "more matches than this answer with clusters",
    ),
    ("cursor", {"type": "string"}, "nextCursor of a truncated answer (same view)"),
    (
        "index",
        {"type": "string", "enum": list(PLANNERS), "default": "geohash"},
        "the cell structure",
    ),
    ("cache", {"type": "boolean", "default": True}, "accepted as on /v1/search (no area cache)"),
]
SEARCH_PARAMS = frozenset(name for name, _, _ in SEARCH_QUERY)
AREA_PARAMS = frozenset(name for name, _, _ in AREA_QUERY)


def distance_param(params: Any, name: str) -> float | None:
    """``name`` in metres: a number, or a number with a unit (:mod:`~lookup.geo.units`);
    None when absent or empty."""
    raw = params.get(name)
    if raw is None or not raw.strip():
        return None
    try:
        return parse_distance(raw)
    except UnitError as exc:
        raise ApiError(400, "INVALID_PARAMETER", f"{name}: {exc}") from None


def unit_param(params: Any) -> str | None:
    """The output unit asked for (``unit``), or None for metres only."""
    raw = params.get("unit")
    if raw is None:
        return None
    try:
        return check_unit(raw)
    except UnitError as exc:
        raise ApiError(400, "INVALID_PARAMETER", f"unit: {exc}") from None


def known_only(params: Any, accepted: frozenset[str]) -> None:
    """Refuse a query parameter not in ``accepted``: 400 ``UNKNOWN_PARAMETER`` naming the
    accepted ones. A loop over the handful of names given (no set built on the hot path)."""
    for name in params:
        if name not in accepted:
            unknown = sorted(set(params) - accepted)
            raise ApiError(
                400,
                "UNKNOWN_PARAMETER",
                f"unknown query parameter(s): {', '.join(unknown)}; this endpoint accepts: "
                f"{', '.join(sorted(accepted))}",
                extra={"accepted": sorted(accepted)},
            )


class Ranked(NamedTuple):
    """A search's page ranked, with the model that ranked it (read once per request)."""

    page: RankedPage
    active: Any  # ActiveModel | None: the hand-set constants
    ranking: str  # as asked: auto, hand or learned


def _json(body: dict[str, Any]) -> Response:
    """A JSON response encoded by orjson (the hot routes: several times faster than json)."""
    return Response(
        orjson.dumps(body, option=orjson.OPT_SERIALIZE_NUMPY), media_type="application/json"
    )


def _not_built() -> NotBuilt:
    return NotBuilt(
        "the places data set is not built yet; run: lookup datasets build places",
        command="lookup datasets build places",
    )


def mount(mounts: Any) -> None:
    """Register the proximity routes, the change-stream tailer and the health probe."""
    service = PlacesService(
        mounts.data_dir,
        store_url=settings.get("places_store_url"),
        read_url=settings.get("places_read_url"),  # a read replica to load and tail from
    )
    mounts.api.state.places = service

    def planner_of(params: Any) -> str:
        return str(choice_param(params, "index", PLANNERS, "geohash"))

    def searcher(params: Any) -> ProximitySearch:
        return service.searcher(planner_of(params))

    def in_memory(params: Any) -> ProximitySearch | None:
        """The searcher to answer on the event loop: the index loaded, the searcher built
        and not the brute-force scan; else None (the lane loads, builds or scans)."""
        planner = planner_of(params)
        if planner in ("scan", "postgis"):  # reads every row, or asks the database
            return None
        return service.searcher_in_memory(planner)

    def nearest_k(params: Any) -> bool:
        """Whether a search asks for the k nearest (``sort=distance``, no radius): its work
        grows with how far those are — a filter matching little reads much of the index —
        so, like the scan, it runs in the lane and never holds the event loop."""
        return params.get("sort") == "distance" and not (params.get("radius") or "").strip()

    answers = AnswerCache(settings.get("places_answer_cache"))

    def token_of(kept: tuple[bytes, str, str]) -> tuple[Any, ...] | None:
        """What a kept answer (its body, planner and ranking) was computed from: the index
        version and the changes applied to it, the model, the minute (``openNow``, the
        hours). None when it cannot be said without I/O (the model store is due a read)."""
        s = service.searcher_in_memory(kept[1])
        if s is None:
            return None
        if kept[2] == "hand":  # the hand-set constants: no model involved
            model = None
        else:
            if service.model_due():
                return None
            try:
                active = service.model(kept[2])
            except LookupError:
                return None
            model = None if active is None else active.version
        return s.places.version, s.places.generation, model, int(time.time() // 60)

    async def search(request: StarletteRequest) -> Response:
        raw = request.scope.get("query_string", b"")
        kept = answers.get_with(raw, token_of)
        if kept is not None:  # asked before, and nothing it was computed from has changed
            return Response(kept[0], media_type="application/json")
        params = request.query_params
        known_only(params, SEARCH_PARAMS)
        s = in_memory(params)
        if s is None or nearest_k(params):
            return await SEARCH_LANE.run(search_answer, params)
        ranking = str(choice_param(params, "ranking", ("auto", "hand", "learned"), "auto"))
        cacheable = bool_param(params, "cache", True) and not bool_param(params, "explain")
        token = token_of((b"", planner_of(params), ranking)) if cacheable else None
        # Ranking is memory and CPU only: on the loop (a worker thread would add its GIL
        # hand-offs to every request). What reads a store goes to the lane: the model
        # store's check (once a second) and the profiles not in memory.
        if service.model_due():
            ranked = await SEARCH_LANE.run(rank, s, params)
        else:
            ranked = rank(s, params)
        nums = ranked.page.nums
        profiles = service.profiles_in_memory(nums)
        if profiles is None:
            profiles = await SEARCH_LANE.run(service.profiles, nums)
        response = answer(s, params, ranked, profiles)
        if token is not None:
            answers.put(raw, token, (bytes(response.body), planner_of(params), ranking))
        return response

    def search_answer(params: Any) -> Response:
        """The whole search in a worker thread (loads the index first if need be)."""
        s = searcher(params)
        ranked = rank(s, params)
        return answer(s, params, ranked, service.profiles(ranked.page.nums))

    def rank(s: ProximitySearch, params: Any) -> Ranked:
        """The request's page ranked (by the model read once here), before hydration."""
        lat = float_param(params, "lat", required=True)
        lng = float_param(params, "lng", required=True)
        radius = distance_param(params, "radius")
        unit_param(params)  # refused before any work, not after it
        sort = choice_param(params, "sort", SORTS, "score")
        ranking = choice_param(params, "ranking", ("auto", "hand", "learned"), "auto")
        nearest = sort == "distance" and radius is None  # nearest-k: no radius, no score
        active = None
        if not nearest:
            try:
                active = service.model(ranking)
            except LookupError as exc:
                raise ApiError(400, "NO_MODEL", str(exc)) from None
        model = active.ranker if active is not None else None
        try:
            filters = s.check_filters(
                category=params.get("category"),
                open_now=bool_param(params, "openNow"),
                price=params.get("price"),
                q=params.get("q"),
                min_rating=float_param(params, "minRating", low=0.0, high=5.0),
            )
            limit, cursor = params.get("limit", "20"), params.get("cursor") or None
            widen = bool_param(params, "widen", True)  # checked by nearest-k too, unused there
            use_cache = bool_param(params, "cache", True)
            if nearest:
                found = s.rank_nearest(lat, lng, filters=filters, limit=limit, cursor=cursor)
                return Ranked(found, None, "distance")
            page = s.rank(
                lat,
                lng,
                2000.0 if radius is None else radius,
                filters=filters,
                limit=limit,
                cursor=cursor,
                widen=widen,
                use_cache=use_cache,
                model=model,
                features=model is not None and bool(bool_param(params, "explain")),
                sort=sort,
            )
        except SearchError as exc:
            raise ApiError(400, exc.code, exc.message) from None
        return Ranked(page, active, ranking)

    def answer(
        s: ProximitySearch,
        params: Any,
        ranked: Ranked,
        profiles: dict[int, dict[str, Any]],
    ) -> Response:
        active, ranking = ranked.active, ranked.ranking
        model = active.ranker if active is not None else None
        result = s.finish(ranked.page, profiles)
        body = result.to_json(explain=bool_param(params, "explain"))
        if body.get("explain") is not None and model is not None:
            for item in body["results"]:  # each feature's share of the learned score
                x = [[item["features"][f] for f in model.features]]
                parts = model.contributions(x)[0]
                item["contributions"] = dict(zip(model.features, map(float, parts), strict=True))
        if body.get("explain") is not None and ranking == "distance":
            body["explain"]["ranking"] = {
                "ranking": "distance",
                "reason": "sort=distance without a radius: the nearest, by distance alone",
            }
        elif body.get("explain") is not None:
            why = "asked for" if ranking == "hand" else service.models.fallback
            body["explain"]["ranking"] = (
                ModelSlot.describe(active)
                if active is not None
                else {"ranking": "hand", "reason": why}
            )
        if body.get("explain") is not None:
            plan = result.plan
            body["explain"]["index"] = s.planner.name
            body["explain"]["indexVersion"] = s.places.version
            body["explain"]["boxes"] = [list(b) for b in plan.boxes]
        unit = unit_param(params)
        for item in body["results"]:
            item.pop("num", None)
            if unit is not None:
                item["distance"] = in_unit(item["distanceM"], unit)
        if unit is not None:
            body["unit"] = unit
            if body.get("radiusUsedM") is not None:
                body["radiusUsed"] = in_unit(body["radiusUsedM"], unit)
        return _json(body)

    async def area(request: StarletteRequest) -> Response:
        params = request.query_params
        known_only(params, AREA_PARAMS)
        s = in_memory(params)
        if s is not None:
            try:  # on the loop while every pin's profile is in memory (as a search)
                return area_answer(params, s, service.memory_profiles)
            except NotInMemory:
                pass
        return await SEARCH_LANE.run(area_answer, params)

    def area_answer(
        params: Any, s: ProximitySearch | None = None, profiles: Any = None
    ) -> Response:
        bounds = [float_param(params, k, required=True) for k in ("south", "west", "north", "east")]
        bool_param(params, "cache", True)  # accepted (and checked) as on /v1/search
        s = s or searcher(params)
        try:
            filters = s.check_filters(
                category=params.get("category"),
                open_now=bool_param(params, "openNow"),
                price=params.get("price"),
                q=params.get("q"),
                min_rating=float_param(params, "minRating", low=0.0, high=5.0),
            )
            limit = int_param(params, "limit", 100, low=1, high=500)
            max_pins = int_param(params, "maxPins", 300, low=1, high=5000)
            body = s.area(
                *bounds,
                filters=filters,
                limit=limit,
                max_pins=max_pins,
                profiles=profiles,
                cursor=params.get("cursor") or None,
            )
        except SearchError as exc:
            raise ApiError(400, exc.code, exc.message) from None
        for item in body["results"]:
            item.pop("num", None)
        body["index"] = s.planner.name
        return _json(body)

    mounts.fast_routes.append(Route("/v1/search", search, methods=["GET"]))
    mounts.fast_routes.append(Route("/v1/places/area", area, methods=["GET"]))
    mounts.fast_route_docs.update(places_docs())
    mount_within(mounts, service, known_only)  # GET /v1/places/within (polygon, bbox)

    # ---------------------------------------------------------- management

    api = mounts.api
    admin_token = admin_token_of(mounts)  # read on first use: the shortener may publish it

    def admin(request: StarletteRequest) -> None:
        """Every write: the admin token, or 401/403."""
        check_admin(request.headers.get("authorization"), admin_token(), "changing places")

    guarded = [Depends(admin)]
    mount_training(mounts, service, guarded)  # POST/GET /v1/places/model/train
    mount_reviews(mounts, service, guarded)  # POST/GET /v1/places/{id}/reviews

    def store() -> Any:
        service.require()
        return service.store

    def place_error(exc: PlaceError) -> ApiError:
        status = {"NOT_FOUND": 404, "ALREADY_EXISTS": 409}.get(exc.code, 400)
        return ApiError(status, exc.code, exc.message)

    @api.get("/v1/places/index", tags=["places"], summary="The live index: version, size, memory")
    def index_stats() -> dict[str, Any]:
        stats = service.index_status()
        if stats["status"] == "NOT_BUILT":
            raise _not_built()
        return stats

    @api.post(
        "/v1/places/index/rebuild",
        tags=["places"],
        summary="Rebuild the index from the database and swap it in (admin token)",
        dependencies=guarded,
        responses=ADMIN_RESPONSES,
    )
    def rebuild() -> dict[str, Any]:
        store()
        return service.rebuild()

    gazetteer: list[Gazetteer] = []  # built on the first name lookup, then kept

    def named_index() -> Gazetteer:
        if not gazetteer:
            columns = ("id", "name", "kind", "country", "lat", "lng", "population", "tags")
            rows = store().rows_of_kinds(NAMED_KINDS, columns)
            gazetteer.append(Gazetteer.from_rows(rows, alternate_names=True))
        return gazetteer[0]

    @api.get(
        "/v1/places/named",
        tags=["places"],
        summary="Cities and airports whose name (or a word of it) starts with q",
        description="Also by GeoNames' other names (Latin, Devanagari) and airport codes, "
        "with typos (one from 5 characters, two from 9; the first letter as typed); "
        "each result's matched says which name, its field and the typos.",
    )
    def named(request: Request) -> dict[str, Any]:
        params = request.query_params
        q = params.get("q")
        if q is None or len(q) > 100:
            raise ApiError(400, "INVALID_PARAMETER", "q must be given, at most 100 characters")
        limit = int_param(params, "limit", 8, low=1, high=MAX_LIMIT)
        assert limit is not None
        index = named_index()
        found = index.search(q, limit)  # each with what it matched: another name, a code
        return {"q": q, "results": [{**p.to_dict(), "matched": m} for p, m in found]}

    @api.get("/v1/places/{place_id}", tags=["places"], summary="One place's profile")
    def get_place(place_id: str) -> dict[str, Any]:
        row = store().get(place_id)
        if row is None:
            raise ApiError(404, "NOT_FOUND", f"no place with id {place_id!r}")
        return _public(row)

    @api.post(
        "/v1/places",
        tags=["places"],
        status_code=201,
        summary="Add a business (admin token)",
        dependencies=guarded,
        responses=ADMIN_RESPONSES,
    )
    def add_place(fields: dict[str, Any] = Body(...)) -> dict[str, Any]:
        try:
            row = store().add(fields)
        except PlaceError as exc:
            raise place_error(exc) from None
        service.sync()
        return _public(row)

    @api.patch(
        "/v1/places/{place_id}",
        tags=["places"],
        summary="Edit a place (a new lat/lng moves it; admin token)",
        dependencies=guarded,
        responses=ADMIN_RESPONSES,
    )
    def edit_place(place_id: str, fields: dict[str, Any] = Body(...)) -> dict[str, Any]:
        try:
            row = store().edit(place_id, fields)
        except PlaceError as exc:
            raise place_error(exc) from None
        service.sync()
        return _public(row)

    @api.delete(
        "/v1/places/{place_id}",
        tags=["places"],
        summary="Delete a place (admin token)",
        dependencies=guarded,
        responses=ADMIN_RESPONSES,
    )
    def delete_place(place_id: str) -> dict[str, Any]:
        try:
            row = store().delete(place_id)
        except PlaceError as exc:
            raise place_error(exc) from None
        service.sync()
        return {"deleted": row["id"]}

    # ---------------------------------------------------------- lifecycle

    async def start() -> None:
        await asyncio.to_thread(service.start, SYNC_INTERVAL_S)
        # the name index too, off the loop, so the first keystroke need not wait for it
        asyncio.get_running_loop().run_in_executor(None, warm_names)

    def warm_names() -> None:
        try:
            if service.ready():
                named_index()
        except Damaged:
            pass  # logged once; the requests that need the database answer 503 DAMAGED
        except Exception:  # the first lookup builds it (and reports) instead
            log.exception("could not build the place-name index at start-up")

    async def stop() -> None:
        await asyncio.to_thread(service.close)

    mounts.on_startup.append(start)
    mounts.on_shutdown.append(stop)

    def status() -> dict[str, Any]:
        return {**service.status(), "answerCache": answers.stats()}

    mounts.health["places"] = status


def _public(row: dict[str, Any]) -> dict[str, Any]:
    import json

    out = dict(row)
    out["tags"] = json.loads(row.get("tags") or "[]")
    out["hours"] = json.loads(row["hours"]) if row.get("hours") else None
    out["generated"] = bool(row.get("generated"))
    count, stars = row.get("review_count") or 0, row.get("review_stars") or 0
    out["rating"] = round(stars / count, 1) if count else None
    return out


def _parameters(table: list[tuple[str, dict[str, Any], str]], required: set[str]) -> list[Any]:
    return [
        {
            "name": name,
            "in": "query",
            "required": name in required,
            "schema": schema,
            "description": text,
        }
        for name, schema, text in table
    ]


_ERRORS = {
    "400": {
        "description": 'a bad or unknown parameter: {"error", "message"} (INVALID_PARAMETER, '
        "UNKNOWN_PARAMETER with the accepted names in accepted)"
    },
    "503": {"description": "the places data set is not built (NOT_BUILT) or damaged"},
}

SEARCH_DESCRIPTION = """\
Places near a point, best first (the seed contract: results, radiusUsedM, nextCursor, \
total).

* **Radius search** (default): places within radius metres (capped at 20 km, widened \
2 → 5 → 10 → 20 km while fewer than 20 match; widen=false keeps it), ordered by the \
hand-set or learned score; sort=distance orders the same matches by distance, then \
place number (Redis GEOSEARCH … ASC, Elasticsearch's _geo_distance sort).
* **Nearest-k**: sort=distance and no radius — the limit nearest places passing the \
filters, however far (PostGIS ORDER BY geom <-> point LIMIT k): from the middle of the \
Pacific too, where a radius search finds nothing. Found by a best-first walk over the \
index's cells; ties at equal distance by place number; the filters apply before the k \
are counted. nextCursor pages on by distance; total counts the places of this and the \
earlier pages and is a lower bound (totalRelation: gte) while a next page exists; \
radiusUsedM is the distance of the page's farthest place; score is null (no radius to \
score distance against).

Unknown query parameters are refused (400 UNKNOWN_PARAMETER)."""

AREA_DESCRIPTION = """\
Places inside a map rectangle (west > east crosses ±180). Up to maxPins matches: pins, \
ranked from the rectangle's centre; more: clusters (counts per geohash cell, never \
truncated). Pins cut at limit say truncated: true and give nextCursor to the next ones \
in the same order (total is every match in view); the last page says truncated: false. \
Unknown query parameters are refused (400 UNKNOWN_PARAMETER)."""


def places_docs() -> dict[str, dict[str, Any]]:
    """The two hot routes (plain Starlette, unknown to FastAPI) as OpenAPI path items, from
    the same parameter tables the handlers check against (``Mounts.fast_route_docs``)."""
    return {
        "/v1/search": {
            "get": {
                "tags": ["places"],
                "summary": "Places near a point: radius search, or the k nearest however far",
                "description": SEARCH_DESCRIPTION,
                "operationId": "places_search_get",
                "parameters": _parameters(SEARCH_QUERY, {"lat", "lng"}),
                "responses": {"200": {"description": "one page of places"}, **_ERRORS},
            }
        },
        "/v1/places/area": {
            "get": {
                "tags": ["places"],
                "summary": "Places in a map view: pins (paged when cut) or clusters",
                "description": AREA_DESCRIPTION,
                "operationId": "places_area_get",
                "parameters": _parameters(AREA_QUERY, {"south", "west", "north", "east"}),
                "responses": {
                    "200": {"description": "pins (truncated, nextCursor) or clusters"},
                    **_ERRORS,
                },
            }
        },
    }
