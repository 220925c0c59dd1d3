"""PostGIS as an outside oracle and as a planner of the places search.

:class:`PostgisIndex` asks a PostgreSQL table with a ``geography(Point, 4326)`` column
(``geog``, GiST-indexed) the questions the geohash index answers: the places within a
radius (``ST_DWithin``), the k nearest however far (``ORDER BY geog <-> point LIMIT k``)
and the places in a latitude/longitude rectangle, each optionally cut to some categories
and price levels in SQL. It is an engine written by others, so a test can hold the
project's own index to it, and the benchmark can time both on the same places.

**The sphere.** The project measures on a sphere of radius
:data:`lookup.geo.geohash.EARTH_RADIUS_M` (6,371,000 m). PostGIS's geography measures on
the WGS84 spheroid unless ``use_spheroid`` is false; then on a sphere of the spheroid's
mean radius, (2a + b) / 3 = :data:`POSTGIS_SPHERE_M` (6,371,008.77 m). Every call here
passes ``false`` and scales by the ratio of the two radii (:data:`SCALE`): a radius in
our metres becomes ``r × SCALE`` PostGIS metres, a PostGIS distance ``d / SCALE`` of
ours. Both are then the same great-circle angle; what is left is rounding (≈1e-9 of the
distance), which is why a place at the very edge of the circle may fall either way —
:data:`EDGE_SLACK_M` and :data:`EDGE_SLACK_SHARE` say how near the edge that is.
``<->`` on geography is the same sphere distance, so the k nearest come in the same order.

:class:`PostgisPlanner` is the planner of ``index=postgis`` (``GET /v1/search``): PostGIS
picks the candidate places (a radius widened by the edge slack, so none at the edge is
lost), the in-memory index then reads exactly those places and the search's usual exact
haversine, filters and ranking decide — so the answer equals the geohash planner's while
the candidate step, and its cost, is the database's. Nearest-k walks PostGIS's KNN order
in batches of doubling size until the k-th best is nearer than anything not yet read.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np
import psycopg
from psycopg import sql

from lookup.geo import geohash as gh
from lookup.geo.index import Box, GeohashIndex, Plan, merge_ranges
from lookup.geo.nearest import DIST_SCALE, Keep, Walk, _Best
from lookup.kit.engines.postgres import PgPool

__all__ = [
    "EDGE_SLACK_M",
    "EDGE_SLACK_SHARE",
    "POSTGIS_SPHERE_M",
    "SCALE",
    "Hit",
    "PostgisIndex",
    "PostgisPlan",
    "PostgisPlanner",
    "create_points_table",
]

#: The sphere PostGIS geography measures on with ``use_spheroid = false``: the WGS84
#: spheroid's mean radius (2a + b) / 3, a = 6,378,137 m, f = 1 / 298.257223563.
POSTGIS_SPHERE_M = (2 * 6_378_137.0 + 6_378_137.0 * (1 - 1 / 298.257223563)) / 3
#: PostGIS metres per metre of ours (the same angle on the two spheres).
SCALE = POSTGIS_SPHERE_M / gh.EARTH_RADIUS_M
#: How near the edge of a circle a place may be and still be counted differently by the
#: two distance formulas: a millimetre plus this share of the radius.
EDGE_SLACK_M = 1e-3
EDGE_SLACK_SHARE = 1e-7
#: Rows the first nearest-k batch asks for at least (each later batch doubles).
FIRST_BATCH = 64

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")
_POINT = "ST_SetSRID(ST_MakePoint(%(lng)s, %(lat)s), 4326)::geography"


class Hit(NamedTuple):
    """One place PostGIS found, with its distance in the project's metres."""

    num: int
    id: str
    lat: float
    lng: float
    distance_m: float


def slack_m(radius_m: float) -> float:
    """How far past ``radius_m`` a candidate query reaches so rounding loses no place."""
    return EDGE_SLACK_M + EDGE_SLACK_SHARE * radius_m


def _table(name: str) -> sql.Identifier:
    if not _NAME.match(name):
        raise ValueError(f"not a plain SQL table name: {name!r}")
    return sql.Identifier(name)


def create_points_table(
    url: str, rows: Iterable[Sequence[Any]], *, table: str = "places", drop: bool = False
) -> int:
    """Make ``table`` with the columns :class:`PostgisIndex` reads and load ``rows``
    (``num, id, lat, lng, category, price``) by ``COPY``; returns the rows loaded.

    The minimal table a test or the benchmark needs when no PostgreSQL place store made
    one: ``geog`` is filled from ``lat``/``lng`` in the same statement, then GiST-indexed
    and analysed, as a store's table would be."""
    name = _table(table)
    pool = PgPool(url, what="the PostGIS table", max_size=1)
    try:
        with pool.transaction() as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS postgis")
            if drop:
                conn.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(name))
            conn.execute(
                sql.SQL(
                    "CREATE TABLE {} (num integer PRIMARY KEY, id text NOT NULL, "
                    "lat double precision NOT NULL, lng double precision NOT NULL, "
                    "category text NOT NULL DEFAULT '', price integer, "
                    "geog geography(Point, 4326))"
                ).format(name)
            )
            copy = sql.SQL("COPY {} (num, id, lat, lng, category, price) FROM STDIN").format(name)
            n = 0
            with conn.cursor() as cur, cur.copy(copy) as out:
                for row in rows:
                    out.write_row(tuple(row))
                    n += 1
            conn.execute(
                sql.SQL(
                    "UPDATE {} SET geog = ST_SetSRID(ST_MakePoint(lng, lat), 4326)::geography"
                ).format(name)
            )
            conn.execute(
                sql.SQL("CREATE INDEX {} ON {} USING gist (geog)").format(
                    sql.Identifier(f"{table}_geog_gist"), name
                )
            )
        with pool.connection() as conn:
            conn.execute(sql.SQL("ANALYZE {}").format(name))
    finally:
        pool.close()
    return n


class PostgisIndex:
    """Radius, nearest-k and rectangle questions answered by PostGIS over ``table``.

    ``url`` is the PostgreSQL database holding the table (the place store's own, or the
    benchmark's); the table needs ``num``, ``id``, ``lat``, ``lng``, ``category``,
    ``price`` and ``geog``. Thread-safe: each call takes a pooled connection."""

    def __init__(self, url: str, table: str = "places", *, pool_size: int = 4) -> None:
        self.url = url
        self.table = table
        self._name = _table(table)
        self.pool = PgPool(url, what="PostGIS", max_size=pool_size)
        #: milliseconds the last query spent in the database round trip
        self.last_ms = 0.0
        #: nearest-k batches PostGIS's KNN refused and a plain sort answered (see
        #: :meth:`knn_batch`)
        self.knn_fallbacks = 0

    def close(self) -> None:
        """Close the pooled connections (the next call opens new ones)."""
        self.pool.close()

    def _filters(
        self, categories: Sequence[str], prices: Sequence[int], params: dict[str, Any]
    ) -> sql.Composable:
        parts: list[sql.Composable] = []
        if categories:
            parts.append(sql.SQL(" AND category = ANY(%(cats)s)"))
            params["cats"] = list(categories)
        if prices:
            parts.append(sql.SQL(" AND price = ANY(%(prices)s)"))
            params["prices"] = [int(p) for p in prices]
        return sql.Composed(parts)

    def _rows(self, query: sql.Composed, params: dict[str, Any]) -> list[Hit]:
        started = time.perf_counter()
        with self.pool.connection() as conn:
            rows = conn.execute(query, params).fetchall()
        self.last_ms = (time.perf_counter() - started) * 1e3
        return [Hit(int(n), str(i), float(a), float(b), float(d) / SCALE) for n, i, a, b, d in rows]

    def _select(self) -> sql.Composed:
        return sql.SQL(
            "SELECT num, id, lat, lng, ST_Distance(geog, " + _POINT + ", false) FROM {} WHERE true"
        ).format(self._name)

    def radius(
        self,
        lat: float,
        lng: float,
        radius_m: float,
        *,
        categories: Sequence[str] = (),
        prices: Sequence[int] = (),
        slack: float = 0.0,
    ) -> list[Hit]:
        """Places within ``radius_m`` (+ ``slack``) metres of the point by ``ST_DWithin`` on
        the GiST index, nearest first (ties by place number)."""
        params: dict[str, Any] = {"lat": lat, "lng": lng, "r": (radius_m + slack) * SCALE}
        query = sql.Composed(
            [
                self._select(),
                sql.SQL(" AND ST_DWithin(geog, " + _POINT + ", %(r)s, false)"),
                self._filters(categories, prices, params),
            ]
        )
        return _ordered(self._rows(query, params))

    def radius_nums(self, lat: float, lng: float, radius_m: float) -> np.ndarray:
        """Only the numbers of the places within ``radius_m`` (no distance, no order): the
        benchmark's radius query, as lean as the in-memory answers it is timed beside."""
        params = {"lat": lat, "lng": lng, "r": radius_m * SCALE}
        query = sql.SQL(
            "SELECT num FROM {} WHERE ST_DWithin(geog, " + _POINT + ", %(r)s, false)"
        ).format(self._name)
        with self.pool.connection() as conn:
            rows = conn.execute(query, params).fetchall()
        return np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))

    def nearest_batch(self, lat: float, lng: float, limit: int, **options: Any) -> list[Hit]:
        """:meth:`knn_batch`'s rows alone."""
        return self.knn_batch(lat, lng, limit, **options)[0]

    def knn_batch(
        self,
        lat: float,
        lng: float,
        limit: int,
        *,
        offset: int = 0,
        beyond_m: float | None = None,
        categories: Sequence[str] = (),
        prices: Sequence[int] = (),
        exact_order: bool = False,
    ) -> tuple[list[Hit], bool]:
        """Rows ``offset`` to ``offset + limit`` of the table in PostGIS's KNN order
        (``ORDER BY geog <-> point``, the GiST index walked nearest first), and whether
        the KNN scan was refused and a plain sort answered; ``beyond_m`` skips places
        nearer than that many metres. ``exact_order``: by ``ST_Distance`` and place
        number without the index (what a refused KNN falls back to)."""
        params: dict[str, Any] = {"lat": lat, "lng": lng, "k": limit, "o": offset}
        parts: list[sql.Composable] = [self._select(), self._filters(categories, prices, params)]
        if beyond_m is not None and beyond_m > 0:
            params["skip"] = beyond_m * SCALE
            parts.append(sql.SQL(" AND NOT ST_DWithin(geog, " + _POINT + ", %(skip)s, false)"))
        knn = sql.SQL(" ORDER BY geog <-> " + _POINT + " LIMIT %(k)s OFFSET %(o)s")
        try:
            if not exact_order:
                return self._rows(sql.Composed([*parts, knn]), params), False
        except psycopg.errors.InternalError as exc:
            if "wrong order" not in str(exc):
                raise
        # PostGIS 3.3's geography KNN refuses a probe and a place at one point spelt with
        # longitude +180 and -180 ("index returned tuples in wrong order": the index's
        # bound exceeds the operator's 0): the same order without the index, exact
        if not exact_order:
            self.knn_fallbacks += 1
        by_distance = sql.SQL(
            " ORDER BY ST_Distance(geog, " + _POINT + ", false), num LIMIT %(k)s OFFSET %(o)s"
        )
        return self._rows(sql.Composed([*parts, by_distance]), params), not exact_order

    def nearest(
        self,
        lat: float,
        lng: float,
        k: int,
        *,
        categories: Sequence[str] = (),
        prices: Sequence[int] = (),
    ) -> list[Hit]:
        """The ``k`` nearest places, ordered by (distance in micrometres, place number) as
        the project orders them: the KNN query finds the k-th distance, then every place
        within it (plus the edge slack) is read, so a tie at the k-th is settled by number."""
        first = self.nearest_batch(lat, lng, k, categories=categories, prices=prices)
        if len(first) < k or not first:
            return _ordered(first)
        reach = max(h.distance_m for h in first)
        near = self.radius(
            lat, lng, reach, categories=categories, prices=prices, slack=slack_m(reach)
        )
        return _ordered(near)[:k]

    def box(self, south: float, west: float, north: float, east: float) -> list[Hit]:
        """Places inside a latitude/longitude rectangle (``west > east`` crosses ±180), by
        their ``lat``/``lng`` columns: a geography has no operator for a rectangle of
        parallels and meridians (its edges are great circles), so this is a table scan."""
        params: dict[str, Any] = {"lat": 0.0, "lng": 0.0, "s": south, "n": north}
        spans = Box.rect(south, west, north, east).lngs
        ors = []
        for i, (w, e) in enumerate(spans):
            params[f"w{i}"], params[f"e{i}"] = w, e
            ors.append(f"lng BETWEEN %(w{i})s AND %(e{i})s")
        query = sql.Composed(
            [
                self._select(),
                sql.SQL(" AND lat BETWEEN %(s)s AND %(n)s AND (" + " OR ".join(ors) + ")"),
            ]
        )
        return sorted(self._rows(query, params), key=lambda h: h.num)

    def plan_of(self, lat: float, lng: float, radius_m: float) -> str:
        """PostgreSQL's plan for a radius query (``EXPLAIN``): whether the GiST index is used."""
        params = {"lat": lat, "lng": lng, "r": radius_m * SCALE}
        query = sql.Composed(
            [
                sql.SQL("EXPLAIN "),
                self._select(),
                sql.SQL(" AND ST_DWithin(geog, " + _POINT + ", %(r)s, false)"),
            ]
        )
        with self.pool.connection() as conn:
            return "\n".join(str(r[0]) for r in conn.execute(query, params).fetchall())


def _ordered(hits: list[Hit]) -> list[Hit]:
    """Hits by (distance in micrometres, place number): the project's sort key."""
    return sorted(hits, key=lambda h: (round(h.distance_m * DIST_SCALE), h.num))


# ----------------------------------------------------------------------- planner


@dataclass
class PostgisPlan(Plan):
    """A plan whose candidates PostGIS chose: the statement and its time besides."""

    statement: str = ""
    sql_ms: float = 0.0
    rows: int = 0
    batches: list[int] = field(default_factory=list)

    def describe(self) -> dict[str, Any]:
        return {
            **super().describe(),
            "postgis": {
                "statement": self.statement,
                "rows": self.rows,
                "sqlMs": round(self.sql_ms, 3),
                **({"batches": self.batches} if self.batches else {}),
            },
        }


def _ranges_of(hits: Sequence[Hit]) -> np.ndarray:
    """The index code ranges holding exactly these places' points (one code each)."""
    if not hits:
        return np.zeros((0, 2), dtype=np.int64)
    codes = np.unique(
        gh.encode_codes(np.array([h.lat for h in hits]), np.array([h.lng for h in hits]))
    )
    return merge_ranges(np.stack([codes, codes + 1], axis=1).astype(np.int64))


class PostgisPlanner:
    """The ``postgis`` planner: PostGIS chooses the candidates, the in-memory index (the
    same :class:`GeohashIndex` the other planners read) measures, filters and ranks."""

    name = "postgis"

    def __init__(self, places: GeohashIndex, postgis: PostgisIndex) -> None:
        self._places = places
        self.postgis = postgis

    @property
    def places(self) -> GeohashIndex:
        return self._places

    def plan_radius(self, lat: float, lng: float, radius_m: float) -> Plan:
        """``ST_DWithin`` widened by the edge slack; the exact haversine decides after."""
        started = time.perf_counter()
        hits = self.postgis.radius(lat, lng, radius_m, slack=slack_m(radius_m))
        ranges = _ranges_of(hits)
        return PostgisPlan(
            "st_dwithin",
            ranges,
            candidates=len(hits),
            statement="ST_DWithin(geog, point, r, false)",
            sql_ms=(time.perf_counter() - started) * 1e3,
            rows=len(hits),
        )

    def plan_box(self, box: Box) -> Plan:
        """The rows inside the rectangle's latitude band and longitude spans."""
        started = time.perf_counter()
        west, east = box.lngs[0][0], box.lngs[-1][1]
        hits = self.postgis.box(box.south, west, box.north, east)
        return PostgisPlan(
            "lat_lng_box",
            _ranges_of(hits),
            candidates=len(hits),
            statement="lat BETWEEN s AND n AND lng BETWEEN w AND e",
            sql_ms=(time.perf_counter() - started) * 1e3,
            rows=len(hits),
        )

    def nearest_walk(
        self, lat: float, lng: float, k: int, keep: Keep, after: tuple[int, int] | None = None
    ) -> Walk:
        """The ``k`` nearest live places passing ``keep`` after the cursor ``after``, read
        in PostGIS's KNN order, batches doubling, until the k-th best is nearer than the
        farthest place read (less the edge slack): every later row is farther still."""
        started = time.perf_counter()
        best = _Best(self._places, k, lat, lng, keep, after)
        beyond = None
        if after is not None:  # skip what earlier pages showed (less the slack)
            d = after[0] / DIST_SCALE
            beyond = max(d - slack_m(d), 0.0)
        offset, size, read, batches = 0, max(FIRST_BATCH, 2 * k), 0, []
        ranges: list[np.ndarray] = []
        exact = False
        while True:
            hits, refused = self.postgis.knn_batch(
                lat, lng, size, offset=offset, beyond_m=beyond, exact_order=exact
            )
            if refused:
                exact = True  # one order throughout: the batches so far are read again
                if offset:
                    offset, size = 0, max(FIRST_BATCH, 2 * k)
                    continue
            batches.append(len(hits))
            if hits:
                got = _ranges_of(hits)
                ranges.append(got)
                read += best.read(got)
            offset += len(hits)
            if len(hits) < size:
                break  # the table is read to its end
            reach = hits[-1].distance_m
            last = best.last_key
            if last is not None and last < (reach - slack_m(reach)) * DIST_SCALE:
                break
            size *= 2
        merged = merge_ranges(np.concatenate(ranges)) if ranges else np.zeros((0, 2), np.int64)
        plan = PostgisPlan(
            "knn",
            merged,
            candidates=read,
            statement="ORDER BY geog <-> point LIMIT n OFFSET o",
            sql_ms=(time.perf_counter() - started) * 1e3,
            rows=offset,
            batches=batches,
        )
        return Walk(best.columns(), best.dist, best.key, read, len(batches), plan)
