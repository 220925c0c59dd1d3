"""PostGIS as an outside oracle and as a planner (issue 26, places item 3).

Radius (``ST_DWithin``) and nearest-k (``ORDER BY geog <-> point LIMIT k``) answered by
PostGIS equal brute force and the geohash index on random probes, the poles and the
antimeridian included. PostGIS measures on a sphere of 6,371,008.77 m with
``use_spheroid = false`` (ours: 6,371,000 m); :mod:`lookup.geo.postgis` scales by the
ratio, and a place within :func:`~lookup.geo.postgis.slack_m` of a circle's edge — where
two formulas may round apart — is left out of the comparison. ``index=postgis`` answers
``GET /v1/search`` exactly as the geohash planner does, and is refused (400
``POSTGIS_UNAVAILABLE``) by a server whose places live in SQLite.
"""

from __future__ import annotations

import math
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient

from lookup.geo.index import GeohashIndex
from lookup.geo.nearest import nearest_rows
from lookup.geo.postgis import (
    POSTGIS_SPHERE_M,
    SCALE,
    PostgisIndex,
    PostgisPlanner,
    create_points_table,
    slack_m,
)
from lookup.geo.search import Filters, ProximitySearch
from lookup.server import create_app
from tests.geo.conftest import NOW, Oracle, synthetic_rows

#: Probes where geometry is awkward: the poles, on and beside ±180, the empty Pacific.
AWKWARD = [
    (90.0, 0.0),
    (-90.0, 123.0),
    (89.9999, -45.0),
    (-89.99, 170.0),
    (0.0, 180.0),
    (0.0, -180.0),
    (-17.7, 179.999),
    (-17.7, -179.999),
    (64.0, -180.0),
    (0.0, -150.0),
]
RADII = (1.0, 500.0, 5_000.0, 50_000.0, 500_000.0, 5_000_000.0, 19_000_000.0)


def _as_points(rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return [(r["num"], r["id"], r["lat"], r["lng"], r["category"], r["price"]) for r in rows]


@pytest.fixture(scope="module")
def pg_url(postgres_server: Any) -> Iterator[str]:
    """One database for the module on the session's cluster (dropped after)."""
    name = f"t_postgis_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(postgres_server.url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    yield postgres_server.url.rsplit("/", 1)[0] + f"/{name}"
    with psycopg.connect(postgres_server.url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(scope="module")
def world(pg_url: str) -> Iterator[tuple[PostgisIndex, GeohashIndex, Oracle]]:
    """3,006 awkward places (a dense city, both poles, astride ±180, the exact poles and
    ±180) in PostGIS, in the geohash index and in the brute-force oracle."""
    every = synthetic_rows()
    rows = every[:-6:10] + every[-6:]
    create_points_table(pg_url, _as_points(rows), table="world")
    index = PostgisIndex(pg_url, "world")
    yield index, GeohashIndex.from_rows(rows), Oracle(rows)
    index.close()


def _haversine(lat1: float, lng1: float, lat2: float, lng2: float) -> float:
    """Great-circle metres on our sphere, written out here."""
    p1, p2 = math.radians(lat1), math.radians(lat2)
    a = (
        math.sin((p2 - p1) / 2) ** 2
        + math.cos(p1) * math.cos(p2) * math.sin(math.radians(lng2 - lng1) / 2) ** 2
    )
    return 2 * 6_371_000.0 * math.asin(math.sqrt(min(a, 1.0)))


def _off_edge(d: np.ndarray, radius: float) -> np.ndarray:
    """Places not within rounding of the circle's edge."""
    return np.abs(d - radius) > slack_m(radius)


point = st.one_of(
    st.sampled_from(AWKWARD),
    st.tuples(
        st.floats(min_value=-90, max_value=90, allow_nan=False),
        st.floats(min_value=-180, max_value=180, allow_nan=False),
    ),
    st.tuples(st.floats(89.5, 90.0), st.floats(-180, 180)),
    st.tuples(st.floats(-90.0, -89.5), st.floats(-180, 180)),
    st.tuples(st.floats(-19.0, -16.0), st.sampled_from([179.9, -179.9, 180.0, -180.0])),
)


# ------------------------------------------------------------------------ sphere


def test_the_sphere_postgis_measures_on_is_scaled_to_ours(pg_url: str) -> None:
    """``use_spheroid = false`` is a sphere of the WGS84 mean radius; divided by
    :data:`SCALE` its distances are our haversine's (the spheroid's are not)."""
    assert POSTGIS_SPHERE_M == pytest.approx(6_371_008.7714, abs=1e-3)
    pairs = [
        ((0, 0), (0, 1)),
        ((10, 20), (30, 40)),
        ((89.9, 0), (-89.9, 179)),
        ((0, 179.9), (0, -179.9)),
    ]
    with psycopg.connect(pg_url) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS postgis")
        for (a, b), (c, d) in pairs:
            pt = "ST_MakePoint(%s, %s)::geography"
            sphere, spheroid = conn.execute(
                f"SELECT ST_Distance({pt}, {pt}, false), ST_Distance({pt}, {pt})",
                (b, a, d, c, b, a, d, c),
            ).fetchone()
            ours = _haversine(a, b, c, d)
            assert sphere / SCALE == pytest.approx(ours, rel=1e-10)
            assert abs(spheroid - ours) > 1e-4 * ours  # why use_spheroid is off


def test_the_radius_query_uses_the_gist_index(world: Any) -> None:
    index, _, _ = world
    assert "world_geog_gist" in index.plan_of(12.97, 77.59, 1000.0)


# ------------------------------------------------------------------ the oracle


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(where=point, radius=st.one_of(st.sampled_from(RADII), st.floats(1.0, 2e7)))
def test_radius_equals_brute_force_and_the_geohash_index(
    world: Any, where: tuple[float, float], radius: float
) -> None:
    postgis, geo, oracle = world
    lat, lng = where
    d = oracle.distances(lat, lng)
    clear = _off_edge(d, radius)
    truth = set(oracle.num[(d <= radius) & clear].tolist())
    counted = set(oracle.num[clear].tolist())
    hits = postgis.radius(lat, lng, radius)
    found = {h.num for h in hits} & counted
    plan = geo.plan_radius(lat, lng, radius)
    cols, _, _ = geo.within_radius(plan.ranges, lat, lng, radius)
    ours = set(cols.num.tolist()) & counted
    assert found == truth
    assert ours == truth
    at = {n: i for i, n in enumerate(oracle.num.tolist())}
    theirs = np.array([h.distance_m for h in hits])
    mine = d[[at[h.num] for h in hits]]
    assert np.allclose(theirs, mine, rtol=1e-9, atol=1e-6)  # PostGIS's, scaled, is ours


def _nearest_truth(oracle: Oracle, lat: float, lng: float, k: int) -> list[int] | None:
    """The k nearest by (micrometres, number), or None when two places a rounding apart
    straddle the k-th (the two formulas may order them differently)."""
    d = oracle.distances(lat, lng)
    key = np.rint(d * 1e6).astype(np.int64)
    order = np.lexsort((oracle.num, key))
    top = d[order[: k + 1]]
    gaps = np.diff(top)
    if np.any((gaps > 0) & (gaps <= slack_m(float(top[-1])))):
        return None
    return oracle.num[order[:k]].tolist()  # type: ignore[no-any-return]


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(where=point, k=st.integers(1, 40))
def test_nearest_k_equals_brute_force_and_the_geohash_walk(
    world: Any, where: tuple[float, float], k: int
) -> None:
    postgis, geo, oracle = world
    lat, lng = where
    truth = _nearest_truth(oracle, lat, lng, k)
    if truth is None:
        return
    assert [h.num for h in postgis.nearest(lat, lng, k)] == truth
    walk = nearest_rows(geo, lat, lng, k, lambda cols: np.ones(len(cols), dtype=bool))
    assert walk.cols.num.tolist() == truth


places = st.lists(
    st.one_of(
        st.tuples(st.floats(-90, 90), st.floats(-180, 180)),
        st.tuples(st.sampled_from([90.0, -90.0, 89.999, -89.999]), st.floats(-180, 180)),
        st.tuples(st.floats(-5, 5), st.sampled_from([180.0, -180.0, 179.99, -179.99])),
    ),
    min_size=0,
    max_size=40,
)


@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(spots=places, where=point, radius=st.floats(1.0, 2e7), k=st.integers(1, 8))
def test_random_places_agree_three_ways(
    pg_url: str, spots: list[tuple[float, float]], where: tuple[float, float], radius: float, k: int
) -> None:
    """Fresh random places each time (duplicates, the poles, ±180 both spelt)."""
    rows = [
        {
            "id": f"r{i}",
            "num": i,
            "name": f"r{i}",
            "lat": a,
            "lng": b,
            "category": "cafe",
            "price": 1 + i % 4,
        }
        for i, (a, b) in enumerate(spots)
    ]
    create_points_table(pg_url, _as_points(rows), table="spots", drop=True)
    postgis = PostgisIndex(pg_url, "spots", pool_size=1)
    try:
        oracle = Oracle(rows)
        lat, lng = where
        d = oracle.distances(lat, lng) if rows else np.zeros(0)
        clear = _off_edge(d, radius)
        truth = set(oracle.num[(d <= radius) & clear].tolist()) if rows else set()
        counted = set(oracle.num[clear].tolist()) if rows else set()
        assert {h.num for h in postgis.radius(lat, lng, radius)} & counted == truth
        if rows:
            near = _nearest_truth(oracle, lat, lng, min(k, len(rows)))
            if near is not None:
                assert [h.num for h in postgis.nearest(lat, lng, k)] == near
        else:
            assert postgis.nearest(lat, lng, k) == []
        cats = postgis.radius(lat, lng, 2.1e7, prices=[2])  # the price filter in SQL
        assert {h.num for h in cats} == {r["num"] for r in rows if r["price"] == 2}
    finally:
        postgis.close()


def test_knn_refused_at_plus_and_minus_180_falls_back_to_the_same_order(pg_url: str) -> None:
    """PostGIS 3.3's geography KNN raises "index returned tuples in wrong order" for a
    probe and a place at one point spelt +180 and -180; the sort without the index
    answers, in the same order, and the walk over it too."""
    spots = [(0.0, 180.0), (0.0, -180.0), (1.0, 179.0), (2.0, -179.0), (45.0, 180.0)]
    rows = [(i, f"p{i}", a, b, "cafe", 1) for i, (a, b) in enumerate(spots)]
    create_points_table(pg_url, rows, table="seam", drop=True)
    postgis = PostgisIndex(pg_url, "seam", pool_size=1)
    try:
        with psycopg.connect(pg_url) as conn:  # the engine's own refusal, as found
            conn.execute("SET enable_seqscan = off")
            with pytest.raises(psycopg.errors.InternalError, match="wrong order"):
                conn.execute(
                    "SELECT num FROM seam ORDER BY geog <-> ST_MakePoint(180, 0)::geography LIMIT 3"
                ).fetchall()
        hits, refused = postgis.knn_batch(0.0, 180.0, 3)
        assert [h.num for h in hits] == [0, 1, 2] and hits[1].distance_m == 0.0
        assert postgis.nearest(0.0, -180.0, 4) == postgis.nearest(0.0, 180.0, 4)
        geo = GeohashIndex.from_rows(
            [
                {"num": n, "id": i, "name": i, "lat": a, "lng": b, "category": c, "price": p}
                for n, i, a, b, c, p in rows
            ]  # fmt: skip
        )
        walk = PostgisPlanner(geo, postgis).nearest_walk(
            0.0, 180.0, 5, lambda cols: np.ones(len(cols), dtype=bool)
        )
        assert walk.cols.num.tolist() == [0, 1, 2, 3, 4]
        assert refused or postgis.knn_fallbacks == 0  # refused here, or fixed upstream
    finally:
        postgis.close()


# ------------------------------------------------------------------- planner


@pytest.fixture(scope="module")
def searchers(
    world: Any,
) -> Iterator[tuple[ProximitySearch, ProximitySearch, PostgisIndex]]:
    postgis, geo, _ = world
    yield (
        ProximitySearch(geo, clock=lambda: NOW),
        ProximitySearch(PostgisPlanner(geo, postgis), clock=lambda: NOW),
        postgis,
    )


def _page(result: Any) -> list[tuple[int, float, float]]:
    return [(r["num"], r["distanceM"], r.get("score") or 0.0) for r in result.results]


@pytest.mark.parametrize("where", [(12.9716, 77.5946), *AWKWARD[:6]])
@pytest.mark.parametrize(
    "filters", [Filters(), Filters(categories=("cafe",), prices=(2, 3)), Filters(q="biryani")]
)
def test_the_postgis_planner_answers_as_the_geohash_planner(
    searchers: Any, where: tuple[float, float], filters: Filters
) -> None:
    ours, theirs, _ = searchers
    lat, lng = where
    a = ours.search(lat, lng, 2000.0, filters=filters, limit=50)
    b = theirs.search(lat, lng, 2000.0, filters=filters, limit=50)
    assert _page(b) == _page(a)
    assert (b.total, b.radius_used_m) == (a.total, a.radius_used_m)
    explain = b.to_json(explain=True)["explain"]
    assert explain["strategy"] == "st_dwithin"
    assert explain["postgis"]["rows"] >= b.total


@pytest.mark.parametrize("where", [(12.9716, 77.5946), *AWKWARD])
def test_the_postgis_planner_pages_nearest_k_as_the_walk(
    searchers: Any, where: tuple[float, float]
) -> None:
    ours, theirs, _ = searchers
    lat, lng = where
    filters = Filters(categories=("pharmacy",))
    cursors: list[str | None] = [None, None]
    for _ in range(3):  # three pages, each continuing by its own cursor
        a = ours.nearest(lat, lng, filters=filters, limit=7, cursor=cursors[0])
        b = theirs.nearest(lat, lng, filters=filters, limit=7, cursor=cursors[1])
        assert _page(b) == _page(a)
        cursors = [a.next_cursor, b.next_cursor]
    assert b.to_json(explain=True)["explain"]["strategy"] == "knn"


def test_a_filter_matching_nothing_reads_postgis_to_its_end(searchers: Any) -> None:
    _, theirs, _ = searchers
    result = theirs.nearest(0.0, -150.0, filters=Filters(q="zzzz"), limit=5)
    assert result.results == [] and result.total == 0
    assert result.radius_used_m == pytest.approx(math.pi * 6_371_000.0)


# ---------------------------------------------------------------------- HTTP


@pytest.fixture(scope="module")
def sqlite_client(
    built_data_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[TestClient]:
    data = tmp_path_factory.mktemp("postgis-http") / "data"
    shutil.copytree(built_data_dir, data)
    with TestClient(create_app(data)) as c:
        yield c


@pytest.mark.parametrize("path", ["/v1/search", "/v1/places/area"])
def test_index_postgis_on_sqlite_places_says_why(sqlite_client: TestClient, path: str) -> None:
    params = (
        {"lat": 12.93, "lng": 77.62, "index": "postgis", "explain": "true"}
        if path == "/v1/search"
        else {"south": 12.9, "west": 77.6, "north": 13.0, "east": 77.7, "index": "postgis"}
    )
    r = sqlite_client.get(path, params=params)
    assert r.status_code == 400, r.text
    body = r.json()
    assert body["error"] == "POSTGIS_UNAVAILABLE"
    assert "PostgreSQL" in body["message"]


@pytest.fixture(scope="module")
def pg_client(
    postgres_server: Any, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[TestClient]:
    """An API whose places live in the PostgreSQL place store (3,006 awkward places)."""
    from lookup.geo.places import open_place_writer

    name = f"t_pgplaces_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(postgres_server.url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    url = postgres_server.url.rsplit("/", 1)[0] + f"/{name}"
    every = synthetic_rows()
    with open_place_writer(url) as writer:
        writer.insert_dicts(every[:-6:10] + every[-6:])
        writer.finish({})
    patch = pytest.MonkeyPatch()
    patch.setenv("LOOKUP_PLACES_STORE_URL", url)
    try:  # the places service reads the store's URL when the app is made
        app = create_app(tmp_path_factory.mktemp("postgis-pg") / "data")
    finally:
        patch.undo()
    try:
        with TestClient(app) as c:
            yield c
    finally:
        with psycopg.connect(postgres_server.url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _answer(body: dict[str, Any]) -> tuple[Any, ...]:
    return (
        body["total"],
        body["radiusUsedM"],
        [(r["id"], r["distanceM"], r.get("score")) for r in body["results"]],
    )


@pytest.mark.parametrize("where", [(12.9716, 77.5946), (90.0, 0.0), (0.0, 180.0), (-17.7, -179.9)])
@pytest.mark.parametrize("extra", [{}, {"sort": "distance"}, {"radius": "5km", "category": "cafe"}])
def test_index_postgis_over_http_answers_as_geohash(
    pg_client: TestClient, where: tuple[float, float], extra: dict[str, str]
) -> None:
    """The dashboard's comparison: same query, ``index=postgis`` and ``index=geohash``."""
    params = {"lat": where[0], "lng": where[1], "limit": 30, "cache": "false", **extra}
    geo = pg_client.get("/v1/search", params={**params, "index": "geohash"})
    pgis = pg_client.get("/v1/search", params={**params, "index": "postgis", "explain": "true"})
    assert geo.status_code == pgis.status_code == 200, pgis.text
    assert _answer(pgis.json()) == _answer(geo.json())
    explain = pgis.json()["explain"]
    assert explain["index"] == "postgis"
    assert explain["strategy"] in ("st_dwithin", "knn")
    assert explain["postgis"]["rows"] >= 0
    if extra.get("sort") == "distance":  # the next page continues by the cursor
        cursor = pgis.json()["nextCursor"]
        more = pg_client.get("/v1/search", params={**params, "index": "postgis", "cursor": cursor})
        again = pg_client.get(
            "/v1/search", params={**params, "index": "geohash", "cursor": geo.json()["nextCursor"]}
        )
        assert _answer(more.json()) == _answer(again.json())


def test_index_postgis_over_http_map_area(pg_client: TestClient) -> None:
    view = {"south": -19.0, "west": 179.0, "north": -16.0, "east": -179.0, "maxPins": 1000}
    geo = pg_client.get("/v1/places/area", params={**view, "index": "geohash"})
    pgis = pg_client.get("/v1/places/area", params={**view, "index": "postgis"})
    assert pgis.status_code == 200, pgis.text
    assert pgis.json()["index"] == "postgis"
    ids = sorted(r["id"] for r in pgis.json()["results"])
    assert ids == sorted(r["id"] for r in geo.json()["results"]) and ids
