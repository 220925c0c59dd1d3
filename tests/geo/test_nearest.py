"""Nearest-k without a radius, ``sort=distance``, and map-area pins that say they were cut.

Issue 27 items 13 and 18. The anchors: PostGIS ``ORDER BY geom <-> point LIMIT k`` (the k
nearest, however far), Redis ``GEOSEARCH … ASC COUNT k`` and Elasticsearch's
``_geo_distance`` sort (order by distance), Typesense's ``sort_by=location(…):asc``.
Every answer is checked against brute force: haversine over every row, the filters
applied before the k are counted, ties at equal distance broken by place number — at the
poles, on the antimeridian and in the middle of the Pacific too.
"""

from __future__ import annotations

import json
import math
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient

from lookup.geo import nearest as nearest_walk
from lookup.geo.index import GeohashIndex, ScanIndex
from lookup.geo.nearest import rect_distance_m
from lookup.geo.quadtree import QuadtreeIndex
from lookup.geo.search import MAX_LIMIT, Filters, ProximitySearch, SearchError
from lookup.geo.service import PlacesService
from lookup.geo.store import row_dict
from lookup.kit.admin import admin_token_path
from lookup.server import create_app
from tests.geo.conftest import NOW, Oracle, write_places_db

CATEGORIES = ("restaurant", "cafe", "pharmacy", "fuel", "hotel")
PLANNERS = ("geohash", "quadtree", "scan")
#: Probes where a radius search finds nothing or where geometry is awkward.
AWKWARD = [
    (90.0, 0.0),  # the north pole
    (-90.0, 123.0),  # the south pole
    (89.9999, -45.0),
    (-89.99, 170.0),
    (0.0, 180.0),  # on the antimeridian
    (0.0, -180.0),
    (-17.7, 179.999),
    (-17.7, -179.999),
    (64.0, -180.0),
    (0.0, -150.0),  # the middle of the Pacific: thousands of km from anything dense
    (-30.0, -130.0),
    (10.0, -140.0),
]
PACIFIC = (0.0, -150.0)


@pytest.fixture(scope="module")
def dense(dense_rows: list[dict[str, Any]]) -> tuple[GeohashIndex, Oracle]:
    return GeohashIndex.from_rows(dense_rows), Oracle(dense_rows)


@pytest.fixture(scope="module")
def searchers(dense: tuple[GeohashIndex, Oracle]) -> dict[str, ProximitySearch]:
    index, _ = dense
    return {
        "geohash": ProximitySearch(index, clock=lambda: NOW),
        "quadtree": ProximitySearch(QuadtreeIndex(index), clock=lambda: NOW),
        "scan": ProximitySearch(ScanIndex(index), clock=lambda: NOW),
    }


def _filters(f: dict[str, Any]) -> Filters:
    return Filters(
        f.get("categories", ()), f.get("open_now", False), f.get("prices", ()), f.get("q", "")
    )


def truth(oracle: Oracle, lat: float, lng: float, **f: Any) -> tuple[np.ndarray, np.ndarray]:
    """Every matching place by (distance in micrometres, place number): brute force."""
    keep, d = oracle.mask(lat, lng, math.inf, now=NOW, **f)
    idx = np.flatnonzero(keep)
    key = np.rint(d[idx] * 1e6).astype(np.int64)
    order = np.lexsort((oracle.num[idx], key))
    return oracle.num[idx][order], d[idx][order]


def _nums(result: Any) -> list[int]:
    return [r["num"] for r in result.results]


point = st.one_of(
    st.sampled_from(AWKWARD),
    st.tuples(
        st.floats(min_value=-90, max_value=90, allow_nan=False),
        st.floats(min_value=-180, max_value=180, allow_nan=False),
    ),
    st.tuples(  # the dense city
        st.floats(min_value=12.7, max_value=13.2), st.floats(min_value=77.3, max_value=77.9)
    ),
)
filters = st.fixed_dictionaries(
    {},
    optional={
        "categories": st.lists(
            st.sampled_from(CATEGORIES), min_size=1, max_size=2, unique=True
        ).map(tuple),
        "prices": st.lists(st.integers(1, 4), min_size=1, max_size=2, unique=True).map(
            lambda p: tuple(sorted(p))
        ),
        "q": st.sampled_from(["biryani", "pizza", "Golden", "coffee cake", "Place 17", "zzzz"]),
        "open_now": st.just(True),
    },
)


# ------------------------------------------------------------------- geometry


@settings(max_examples=400, deadline=None)
@given(
    lat=st.floats(-90, 90),
    lng=st.floats(-180, 180),
    south=st.floats(-90, 90),
    height=st.floats(0, 180),
    west=st.floats(-180, 180),
    width=st.floats(0, 360),
    u=st.floats(0, 1),
    v=st.floats(0, 1),
)
def test_rectangle_distance_is_a_lower_bound(
    lat: float,
    lng: float,
    south: float,
    height: float,
    west: float,
    width: float,
    u: float,
    v: float,
) -> None:
    """No point inside a cell is nearer than the cell's bound (the walk's whole premise),
    and a point inside the cell is at distance 0 from it."""
    north = min(south + height, 90.0)
    east = min(west + width, 180.0)
    bound = float(
        rect_distance_m(
            lat, lng, np.array([south]), np.array([north]), np.array([west]), np.array([east])
        )[0]
    )
    qlat, qlng = south + u * (north - south), west + v * (east - west)
    oracle = Oracle([{"num": 0, "lat": qlat, "lng": qlng, "category": "x", "name": "x"}])
    assert bound <= float(oracle.distances(lat, lng)[0]) + 1e-6
    assert bound >= 0.0
    if south <= lat <= north and west <= lng <= east:
        assert bound == 0.0


def test_rectangle_distance_is_tight_where_it_is_known() -> None:
    r = 6_371_000.0
    one = np.array
    # due north of a cell: the latitude gap
    d = rect_distance_m(10.0, 20.0, one([0.0]), one([5.0]), one([15.0]), one([25.0]))
    assert d[0] == pytest.approx(math.radians(5.0) * r)
    # across the antimeridian: the cell [170, 180] is 0.5° of longitude from lng −179.5
    d = rect_distance_m(0.0, -179.5, one([-1.0]), one([1.0]), one([170.0]), one([180.0]))
    assert d[0] == pytest.approx(math.radians(0.5) * r, rel=1e-9)
    # the pole is inside every cell that touches it
    d = rect_distance_m(90.0, 0.0, one([80.0]), one([90.0]), one([100.0]), one([110.0]))
    assert d[0] == pytest.approx(0.0, abs=1e-6)


# ------------------------------------------------------------------ nearest-k


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    where=point,
    k=st.integers(min_value=1, max_value=MAX_LIMIT),
    f=filters,
    planner=st.sampled_from(PLANNERS),
)
def test_nearest_k_equals_brute_force(
    dense: tuple[GeohashIndex, Oracle],
    searchers: dict[str, ProximitySearch],
    where: tuple[float, float],
    k: int,
    f: dict[str, Any],
    planner: str,
) -> None:
    _, oracle = dense
    lat, lng = where
    result = searchers[planner].nearest(lat, lng, filters=_filters(f), limit=k, now=NOW)
    nums, dist = truth(oracle, lat, lng, **f)
    assert _nums(result) == nums[:k].tolist(), (where, f, planner)
    np.testing.assert_allclose(
        [r["distanceM"] for r in result.results], np.rint(dist[:k]), atol=1.0
    )
    more = len(nums) > k
    assert (result.next_cursor is not None) == more
    assert result.total == min(k, len(nums)) and result.total_exact == (not more)


@pytest.mark.parametrize("planner", PLANNERS)
@pytest.mark.parametrize("where", AWKWARD)
def test_awkward_probes_equal_brute_force(
    dense: tuple[GeohashIndex, Oracle],
    searchers: dict[str, ProximitySearch],
    planner: str,
    where: tuple[float, float],
) -> None:
    _, oracle = dense
    for f in ({}, {"categories": ("pharmacy",), "q": "biryani"}, {"open_now": True}):
        result = searchers[planner].nearest(*where, filters=_filters(f), limit=25, now=NOW)
        nums, _ = truth(oracle, *where, **f)
        assert _nums(result) == nums[:25].tolist(), (where, f)
        assert len(result.results) == 25  # never empty, however far the nearest is


@pytest.mark.parametrize("steps", [0, 1, 6])
@pytest.mark.parametrize("planner", ("geohash", "quadtree"))
def test_the_walk_in_batches_equals_brute_force(
    dense: tuple[GeohashIndex, Oracle],
    searchers: dict[str, ProximitySearch],
    planner: str,
    steps: int,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Past WALK_STEPS the walk reads the unopened cells in batches (small ones here, so
    there are many): the answer is the same."""
    _, oracle = dense
    monkeypatch.setattr(nearest_walk, "WALK_STEPS", steps)
    monkeypatch.setattr(nearest_walk, "BATCH_MIN_ROWS", 50)
    rng = np.random.default_rng(steps)
    options = [{}, {"categories": ("hotel",), "q": "biryani"}, {"open_now": True}, {"q": "zzzz"}]
    batched = 0
    for n in range(30):
        lat, lng = (
            AWKWARD[n % len(AWKWARD)]
            if n % 2
            else (float(np.degrees(np.arcsin(rng.uniform(-1, 1)))), float(rng.uniform(-180, 180)))
        )
        f = options[n % len(options)]
        k = int(rng.integers(1, MAX_LIMIT + 1))
        result = searchers[planner].nearest(lat, lng, filters=_filters(f), limit=k, now=NOW)
        assert _nums(result) == truth(oracle, lat, lng, **f)[0][:k].tolist(), (lat, lng, f)
        batched += "batches" in result.plan.strategy
    assert batched >= 10  # not vacuous


def test_the_middle_of_the_pacific_finds_the_nearest_however_far(
    dense: tuple[GeohashIndex, Oracle], searchers: dict[str, ProximitySearch]
) -> None:
    """A radius search widens to 20 km and finds nothing; nearest-k answers anyway."""
    _, oracle = dense
    search = searchers["geohash"]
    assert search.search(*PACIFIC, 2000, now=NOW).results == []
    result = search.nearest(*PACIFIC, limit=10, now=NOW)
    nums, dist = truth(oracle, *PACIFIC)
    assert _nums(result) == nums[:10].tolist()
    assert dist[0] > 20_000  # beyond the widest radius a search widens to
    assert result.radius_used_m == pytest.approx(dist[9], abs=1e-3)  # the 10th's distance
    assert result.read < len(oracle.num) // 10  # cells near the point, not the world


def test_the_dense_city_reads_a_few_cells(
    dense: tuple[GeohashIndex, Oracle], searchers: dict[str, ProximitySearch]
) -> None:
    index, oracle = dense
    for planner in ("geohash", "quadtree"):
        result = searchers[planner].nearest(12.9716, 77.5946, limit=10, now=NOW)
        assert _nums(result) == truth(oracle, 12.9716, 77.5946)[0][:10].tolist()
        assert result.read < 2000 < len(index), (planner, result.read)
        assert result.plan.strategy == "nearest"


def test_no_match_anywhere_ends_empty_and_exact(
    dense: tuple[GeohashIndex, Oracle], searchers: dict[str, ProximitySearch]
) -> None:
    for planner in PLANNERS:
        started = time.perf_counter()
        result = searchers[planner].nearest(*PACIFIC, filters=Filters(q="zzzz"), limit=10, now=NOW)
        assert result.results == [] and result.next_cursor is None
        assert result.total == 0 and result.total_exact
        assert time.perf_counter() - started < 2.0


def test_an_empty_index_answers_empty() -> None:
    search = ProximitySearch(GeohashIndex.from_rows([]))
    result = search.nearest(10.0, 10.0, limit=5, now=NOW)
    assert result.results == [] and result.next_cursor is None and result.total == 0


def _row(num: int, lat: float, lng: float, **extra: Any) -> dict[str, Any]:
    return {
        "num": num,
        "name": f"P{num}",
        "lat": lat,
        "lng": lng,
        "category": "cafe",
        "tags": "[]",
        "timezone": "UTC",
        "hours": None,
        "price": None,
        "review_count": 0,
        "review_stars": 0,
        **extra,
    }


@pytest.mark.parametrize("planner", PLANNERS)
def test_ties_at_equal_distance_go_by_place_number(planner: str) -> None:
    """Places at one spot, and mirror images across the equator (equal distances in
    different cells): the order is place number, whichever cell the walk opens first."""
    rows = [_row(n, 0.01, 30.0) for n in (9, 4, 7)]  # one spot, north of the equator
    rows += [_row(5, -0.01, 30.0), _row(2, 0.02, 30.0), _row(8, -0.02, 30.0)]
    rows += [_row(100 + i, 40.0 + i, -100.0) for i in range(30)]  # elsewhere, far
    index = GeohashIndex.from_rows(rows)
    tree: Any = {"geohash": index, "quadtree": QuadtreeIndex(index, leaf_size=2)}.get(
        planner, ScanIndex(index)
    )
    search = ProximitySearch(tree)
    got = _nums(search.nearest(0.0, 30.0, limit=6, now=NOW))
    assert got == [4, 5, 7, 9, 2, 8]
    assert _nums(search.nearest(0.0, 30.0, limit=1, now=NOW)) == [4]
    # paged one at a time, the ties still come in place-number order
    seen, cursor = [], None
    for _ in range(10):
        page = search.nearest(0.0, 30.0, limit=1, cursor=cursor, now=NOW)
        seen += _nums(page)
        cursor = page.next_cursor
        if len(seen) == 6:
            break
    assert seen == [4, 5, 7, 9, 2, 8]


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    where=point,
    limit=st.integers(min_value=1, max_value=40),
    planner=st.sampled_from(("geohash", "quadtree")),
    category=st.sampled_from([None, "pharmacy"]),
)
def test_cursor_pages_continue_the_order(
    dense: tuple[GeohashIndex, Oracle],
    searchers: dict[str, ProximitySearch],
    where: tuple[float, float],
    limit: int,
    planner: str,
    category: str | None,
) -> None:
    """Pages of the k nearest concatenate to the brute-force order, each place once, with
    ``total`` a lower bound (the places seen so far) until the last page."""
    _, oracle = dense
    lat, lng = where
    f = {"categories": (category,)} if category else {}
    search = searchers[planner]
    seen: list[int] = []
    cursor = None
    pages = 0
    for _ in range(5):
        pages += 1
        page = search.nearest(lat, lng, filters=_filters(f), limit=limit, cursor=cursor)
        assert page.results
        seen += _nums(page)
        assert page.total == len(seen)
        cursor = page.next_cursor
        if cursor is None:
            break
        assert not page.total_exact
    assert seen == truth(oracle, lat, lng, **f)[0][: len(seen)].tolist()
    assert len(seen) == len(set(seen)) == min(limit * pages, len(oracle.num))


def test_a_whole_filtered_walk_ends_with_the_exact_total(
    dense: tuple[GeohashIndex, Oracle], searchers: dict[str, ProximitySearch]
) -> None:
    _, oracle = dense
    f = {"categories": ("fuel",), "q": "pizza", "prices": (1,), "open_now": True}
    nums, _ = truth(oracle, *PACIFIC, **f)
    assert 5 < len(nums) < 400
    seen, cursor, last = [], None, None
    while True:
        last = searchers["quadtree"].nearest(
            *PACIFIC, filters=_filters(f), limit=MAX_LIMIT, cursor=cursor
        )
        seen += _nums(last)
        cursor = last.next_cursor
        if cursor is None:
            break
    assert seen == nums.tolist()
    assert last.total == len(nums) and last.total_exact


def test_the_cursor_pins_the_clock_and_belongs_to_its_query(
    dense: tuple[GeohashIndex, Oracle],
) -> None:
    index, oracle = dense
    first = ProximitySearch(index, clock=lambda: NOW).nearest(
        12.97, 77.59, filters=Filters(open_now=True), limit=5
    )
    assert first.next_cursor
    later = ProximitySearch(index, clock=lambda: NOW + 6 * 3600)
    page = later.nearest(
        12.97, 77.59, filters=Filters(open_now=True), limit=5, cursor=first.next_cursor
    )
    nums, _ = truth(oracle, 12.97, 77.59, open_now=True)
    assert _nums(first) + _nums(page) == nums[:10].tolist()
    for other in (
        lambda: later.nearest(
            12.98, 77.59, filters=Filters(open_now=True), cursor=first.next_cursor
        ),
        lambda: later.nearest(12.97, 77.59, cursor=first.next_cursor),
        lambda: later.search(12.97, 77.59, 2000, cursor=first.next_cursor),
        lambda: later.search(12.97, 77.59, 2000, sort="distance", cursor=first.next_cursor),
    ):
        with pytest.raises(SearchError):
            other()


def test_live_writes_and_deletes_reach_nearest(
    built_rows: list[dict[str, Any]], tmp_path: Path
) -> None:
    """A place added in the Pacific (the index's delta) is the nearest at once; deleted, it
    is gone — through both cell structures."""
    data = write_places_db(tmp_path / "data", [r for r in built_rows if r["num"] % 3 == 0])
    service = PlacesService(data, cache_ttl=0.0)
    try:
        assert service.ready() and service.store is not None
        added = service.store.add(
            {"name": "Atoll Cafe", "lat": 0.01, "lng": -150.0, "category": "cafe"}
        )
        service.sync()
        for planner in ("geohash", "quadtree", "scan"):
            result = service.searcher(planner).nearest(*PACIFIC, limit=3, now=NOW)
            assert result.results[0]["id"] == added["id"], planner
        service.store.delete(added["id"])
        service.sync()
        _, rows = service.store.snapshot()
        oracle = Oracle(row_dict(r) for r in rows)
        for planner in ("geohash", "quadtree"):
            result = service.searcher(planner).nearest(*PACIFIC, limit=3, now=NOW)
            assert added["id"] not in [r["id"] for r in result.results]
            assert _nums(result) == truth(oracle, *PACIFIC)[0][:3].tolist()
    finally:
        service.close()


# ----------------------------------------------------------- sort=distance (radius)


@pytest.mark.parametrize("planner", ("geohash", "quadtree"))
def test_sort_by_distance_orders_a_radius_search(
    dense: tuple[GeohashIndex, Oracle], searchers: dict[str, ProximitySearch], planner: str
) -> None:
    _, oracle = dense
    search = searchers[planner]
    rng = np.random.default_rng(27)
    for _ in range(30):
        i = int(rng.integers(0, len(oracle.num)))
        lat, lng = float(oracle.lat[i]), float(oracle.lng[i])
        radius = float(rng.uniform(300, 20_000))
        f = {"categories": ("cafe",)} if rng.random() < 0.3 else {}
        nums, dist = truth(oracle, lat, lng, **f)
        inside = nums[dist <= radius].tolist()
        limit = min(MAX_LIMIT, max(int(rng.integers(1, 30)), math.ceil(len(inside) / 25)))
        seen, cursor = [], None
        for _page in range(1000):
            page = search.search(
                lat,
                lng,
                radius,
                filters=_filters(f),
                limit=limit,
                cursor=cursor,
                widen=False,
                sort="distance",
            )
            seen += _nums(page)
            cursor = page.next_cursor
            if cursor is None:
                break
        assert seen == inside
        by_score = search.search(
            lat, lng, radius, filters=_filters(f), limit=MAX_LIMIT, widen=False
        )
        assert by_score.total == len(seen)  # the same matches, another order


def test_sort_by_distance_keeps_widening(
    dense: tuple[GeohashIndex, Oracle], searchers: dict[str, ProximitySearch]
) -> None:
    """With a radius, sort=distance changes the order only: the radius still widens."""
    search = searchers["geohash"]
    a = search.search(-17.7, 179.99, 100, limit=20, sort="distance")
    b = search.search(-17.7, 179.99, 100, limit=20)
    assert a.radius_used_m == b.radius_used_m > 100 and a.total == b.total
    assert [r["distanceM"] for r in a.results] == sorted(r["distanceM"] for r in a.results)


def test_unknown_sort_is_refused(searchers: dict[str, ProximitySearch]) -> None:
    with pytest.raises(SearchError):
        searchers["geohash"].search(10.0, 10.0, 2000, sort="rating")


# ------------------------------------------------------------------- map area


def _oracle_box(oracle: Oracle, south: float, west: float, north: float, east: float) -> set[int]:
    in_lng = (
        (oracle.lng >= west) & (oracle.lng <= east)
        if west <= east
        else (oracle.lng >= west) | (oracle.lng <= east)
    )
    keep = in_lng & (oracle.lat >= south) & (oracle.lat <= north)
    return set(oracle.num[keep].tolist())


@pytest.mark.parametrize("planner", ("geohash", "quadtree"))
@pytest.mark.parametrize(
    "box",
    [(12.95, 77.57, 12.99, 77.61), (-17.85, 179.85, -17.55, -179.85), (89.95, 0.0, 90.0, 90.0)],
)
def test_cut_pins_say_so_and_page_to_the_end(
    dense: tuple[GeohashIndex, Oracle],
    searchers: dict[str, ProximitySearch],
    planner: str,
    box: tuple[float, float, float, float],
) -> None:
    _, oracle = dense
    search = searchers[planner]
    whole = search.area(*box, limit=500, max_pins=5000, now=NOW)
    assert whole["mode"] == "pins" and whole["truncated"] is False
    assert whole["nextCursor"] is None
    assert {r["num"] for r in whole["results"]} == _oracle_box(oracle, *box)
    assert 100 < whole["total"] <= 500
    seen: list[int] = []
    cursor = None
    for _ in range(100):
        page = search.area(*box, limit=37, max_pins=5000, cursor=cursor)
        assert page["total"] == whole["total"]
        seen += [r["num"] for r in page["results"]]
        cursor = page["nextCursor"]
        assert page["truncated"] is (cursor is not None)
        if cursor is None:
            break
    assert seen == [r["num"] for r in whole["results"]]  # the one order, cut into pages


def test_clusters_are_not_truncated_and_a_cursor_belongs_to_its_view(
    dense: tuple[GeohashIndex, Oracle], searchers: dict[str, ProximitySearch]
) -> None:
    search = searchers["geohash"]
    world = search.area(-90, -180, 90, 180)
    assert world["mode"] == "clusters" and world["truncated"] is False
    assert world["nextCursor"] is None
    cut = search.area(12.95, 77.57, 12.99, 77.61, limit=10, now=NOW)
    assert cut["truncated"] is True and cut["nextCursor"]
    with pytest.raises(SearchError):
        search.area(12.95, 77.57, 12.99, 77.62, limit=10, cursor=cut["nextCursor"])
    with pytest.raises(SearchError):
        search.area(12.95, 77.57, 12.99, 77.61, cursor=cut["nextCursor"][:-3] + "AAA")
    with pytest.raises(SearchError):  # a radius search's cursor is not an area's
        first = search.search(12.97, 77.59, 2000, limit=1)
        search.area(12.95, 77.57, 12.99, 77.61, cursor=first.next_cursor)


# ------------------------------------------------------------------------ HTTP

ADMIN_TOKEN = "nearest-admin-token-for-tests"
KORAMANGALA = {"lat": 12.9352, "lng": 77.6245}


@pytest.fixture(scope="module")
def client(built_data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    data = tmp_path_factory.mktemp("nearest-http") / "data"
    shutil.copytree(built_data_dir, data)
    admin_token_path(data).parent.mkdir(parents=True, exist_ok=True)
    admin_token_path(data).write_text(ADMIN_TOKEN + "\n")
    with TestClient(create_app(data)) as c:
        yield c


@pytest.fixture(scope="module")
def built_oracle(built_rows: list[dict[str, Any]]) -> Oracle:
    return Oracle(built_rows)


def test_nearest_over_http_equals_brute_force(
    client: TestClient, built_oracle: Oracle, built_rows: list[dict[str, Any]]
) -> None:
    """``sort=distance`` without a radius: the k nearest, paged by the signed cursor."""
    by_num = {r["num"]: r["id"] for r in built_rows}
    rng = np.random.default_rng(13)
    probes = [
        *AWKWARD,
        *(
            (float(np.degrees(np.arcsin(rng.uniform(-1, 1)))), float(rng.uniform(-180, 180)))
            for _ in range(8)
        ),
    ]
    for n, (lat, lng) in enumerate(probes):
        f: dict[str, Any] = [{}, {"categories": ("restaurant",)}, {"q": "biryani"}][n % 3]
        params: dict[str, Any] = {"lat": lat, "lng": lng, "sort": "distance", "limit": 9}
        if f.get("categories"):
            params["category"] = ",".join(f["categories"])
        if f.get("q"):
            params["q"] = f["q"]
        nums, dist = truth(built_oracle, lat, lng, **f)
        got: list[dict[str, Any]] = []
        for _page in range(3):
            r = client.get("/v1/search", params=params)
            assert r.status_code == 200, r.text
            body = r.json()
            got += body["results"]
            assert body["total"] == len(got)
            assert body.get("totalRelation") == ("gte" if body["nextCursor"] else None)
            if not body["nextCursor"]:
                break
            params["cursor"] = body["nextCursor"]
        assert [g["id"] for g in got] == [by_num[int(x)] for x in nums[: len(got)]], (lat, lng)
        assert [g["distanceM"] for g in got] == np.rint(dist[: len(got)]).astype(int).tolist()
        assert body["radiusUsedM"] == pytest.approx(dist[len(got) - 1], abs=1e-3)
        assert all(g["score"] is None for g in got)  # no radius: ordered by distance alone


def test_nearest_over_http_explains_the_walk(client: TestClient) -> None:
    for index in ("geohash", "quadtree", "scan"):
        body = client.get(
            "/v1/search",
            params={**PACIFIC_PARAMS, "sort": "distance", "explain": "true", "index": index},
        ).json()
        ex = body["explain"]
        assert ex["strategy"] == ("scan" if index == "scan" else "nearest")
        assert ex["ranking"]["ranking"] == "distance"
        assert ex["read"] >= len(body["results"]) == 20


PACIFIC_PARAMS = {"lat": PACIFIC[0], "lng": PACIFIC[1]}


def test_sort_distance_with_a_radius_over_http(client: TestClient) -> None:
    params = {**KORAMANGALA, "radius": 20_000, "widen": "false", "limit": 100}
    by_score = client.get("/v1/search", params=params).json()
    by_distance = client.get("/v1/search", params={**params, "sort": "distance"}).json()
    assert by_distance["total"] == by_score["total"] > 5
    assert by_distance["radiusUsedM"] == 20_000
    d = [r["distanceM"] for r in by_distance["results"]]
    assert d == sorted(d) and all(r["score"] is not None for r in by_distance["results"])
    assert {r["id"] for r in by_distance["results"]} == {r["id"] for r in by_score["results"]}
    r = client.get("/v1/search", params={**params, "sort": "rating"})
    assert r.status_code == 400 and r.json()["error"] == "INVALID_PARAMETER"


#: What the dashboard's Places page sends (app/views/places.py: search_params,
#: compare_params, nearest_city, hand_moves, area_search and filter_params).
DASHBOARD_SEARCH = {
    **KORAMANGALA,
    "radius": "2000",
    "limit": "20",
    "explain": "true",
    "index": "geohash",
    "widen": "true",
    "ranking": "hand",
    "category": "restaurant,cafe",
    "price": "1,2",
    "openNow": "true",
    "q": "biryani",
    "cache": "false",
}
DASHBOARD_AREA = {
    "south": "12.85",
    "west": "77.5",
    "north": "13.05",
    "east": "77.75",
    "limit": "500",
    "maxPins": "800",
    "category": "restaurant,cafe",
    "price": "1,2",
    "openNow": "true",
    "q": "biryani",
}


@pytest.mark.parametrize(
    ("path", "params"),
    [
        ("/v1/search", {**KORAMANGALA, "limt": "5"}),
        ("/v1/places/area", {**DASHBOARD_AREA, "zoom": "12", "bbox": "1,2,3,4"}),
    ],
)
def test_unknown_parameters_are_refused_naming_the_accepted(
    client: TestClient, path: str, params: dict[str, Any]
) -> None:
    r = client.get(path, params=params)
    assert r.status_code == 400, r.text
    body = r.json()
    assert body["error"] == "UNKNOWN_PARAMETER"
    unknown = sorted(set(params) - set(DASHBOARD_SEARCH) - set(DASHBOARD_AREA))
    assert f"unknown query parameter(s): {', '.join(unknown)};" in body["message"]
    assert "limit" in body["accepted"] and "cursor" in body["accepted"]
    assert all(name in body["message"] for name in body["accepted"])


def test_what_the_dashboard_sends_is_accepted(client: TestClient) -> None:
    r = client.get("/v1/search", params=DASHBOARD_SEARCH)
    assert r.status_code == 200, r.text
    r = client.get("/v1/places/area", params=DASHBOARD_AREA)
    assert r.status_code == 200, r.text
    assert {"truncated", "nextCursor"} <= set(r.json())


def test_area_pins_page_over_http(client: TestClient, built_oracle: Oracle) -> None:
    box = {"south": 12.85, "west": 77.5, "north": 13.05, "east": 77.75}
    inside = _oracle_box(built_oracle, 12.85, 77.5, 13.05, 77.75)
    params: dict[str, Any] = {**box, "limit": 4, "maxPins": 5000}
    ids: list[str] = []
    for _ in range(100):
        body = client.get("/v1/places/area", params=params).json()
        assert body["mode"] == "pins" and body["total"] == len(inside) > 8
        ids += [r["id"] for r in body["results"]]
        assert body["truncated"] is (body["nextCursor"] is not None)
        if not body["nextCursor"]:
            break
        params["cursor"] = body["nextCursor"]
    assert len(ids) == len(set(ids)) == len(inside)
    bad = client.get("/v1/places/area", params={**box, "cursor": "nope"})
    assert bad.status_code == 400 and bad.json()["error"] == "INVALID_PARAMETER"


def test_openapi_documents_both_routes(client: TestClient) -> None:
    doc = client.get("/openapi.json").json()
    search = doc["paths"]["/v1/search"]["get"]
    names = {p["name"] for p in search["parameters"]}
    assert names == set(DASHBOARD_SEARCH) | {"lat", "lng", "cursor", "sort", "minRating", "unit"}
    sort = next(p for p in search["parameters"] if p["name"] == "sort")
    assert sort["schema"]["enum"] == ["score", "distance"]
    assert "nearest" in sort["description"] and "radius" in sort["description"]
    assert "nearest" in search["description"].lower()
    area = doc["paths"]["/v1/places/area"]["get"]
    area_names = {p["name"] for p in area["parameters"]}
    assert area_names >= set(DASHBOARD_AREA) | {"cursor", "index"}
    assert "truncated" in area["description"]
    assert json.dumps(doc)  # the document still serialises


# ---------------------------------------------------------------- compatibility


def test_the_checks_and_cursors_moved_to_paging_stay_importable_from_search() -> None:
    from lookup.geo import paging, search

    for name in (
        "SearchError",
        "MAX_RADIUS_M",
        "MIN_RADIUS_M",
        "DEFAULT_RADIUS_M",
        "DEFAULT_LIMIT",
        "MAX_LIMIT",
        "PROCESS_CURSOR_KEY",
        "check_point",
        "check_radius",
        "check_limit",
        "encode_cursor",
        "decode_cursor",
    ):
        assert getattr(search, name) is getattr(paging, name), name


def test_radius_cursors_keep_their_old_form(dense: tuple[GeohashIndex, Oracle]) -> None:
    """A cursor a server made before this change (no kind, the old fingerprint) still
    pages on: the places data directory keeps its key across the upgrade."""
    import hashlib

    from lookup.geo.paging import encode_cursor

    index, _ = dense
    search = ProximitySearch(index, cursor_key=b"k" * 32)
    first = search.search(12.97, 77.59, 5000, limit=5, widen=False, now=NOW)
    last = first.results[-1]
    raw = json.dumps([round(12.97, 9), round(77.59, 9), 5000.0, Filters().key(), False, "geohash"])
    m, *_ = search.matches(12.97, 77.59, 5000.0, Filters(), NOW)
    at = int(np.flatnonzero(m.cols.num == last["num"])[0])
    old = encode_cursor(
        {
            "v": 1,
            "f": hashlib.sha256(raw.encode()).hexdigest()[:16],
            "r": 5000.0,
            "t": int(NOW),
            "s": int(m.score_key[at]),
            "d": int(m.dist_key[at]),
            "n": int(last["num"]),
        },
        b"k" * 32,
    )
    assert old == first.next_cursor
    page = search.search(12.97, 77.59, 5000, limit=5, widen=False, cursor=old)
    assert page.results and not {r["num"] for r in page.results} & set(_nums(first))


def test_nearest_k_runs_in_the_lane_and_a_radius_search_on_the_loop(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A nearest walk may read much of the index (a filter matching little): like the
    brute-force scan it never holds the event loop; a radius search still ranks there."""
    from lookup.geo import http as geo_http

    calls: list[str] = []
    run = geo_http.SEARCH_LANE.run

    async def counting(fn: Any, *args: Any, **kwargs: Any) -> Any:
        calls.append(getattr(fn, "__name__", repr(fn)))
        return await run(fn, *args, **kwargs)

    monkeypatch.setattr(geo_http.SEARCH_LANE, "run", counting)
    params = {**KORAMANGALA, "radius": 20_000, "widen": "false", "limit": 5}
    for _ in range(3):  # warm: the index and the page's profiles in memory
        assert client.get("/v1/search", params=params).status_code == 200
    calls.clear()
    client.get("/v1/search", params=params)
    assert "search_answer" not in calls
    assert client.get("/v1/search", params={**KORAMANGALA, "sort": "distance"}).status_code == 200
    assert calls[-1] == "search_answer"


# ----------------------------------------------------------- minimum rating (issue 27 item 14)
@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    stars=st.sampled_from([0.0, 2.5, 3.0, 3.5, 3.8, 4.0, 4.2, 4.5, 5.0]),
    planner=st.sampled_from(["geohash", "quadtree", "scan"]),
)
def test_a_minimum_rating_keeps_exactly_the_places_rated_that_high(
    dense: tuple[GeohashIndex, Oracle], searchers: dict[str, ProximitySearch],
    stars: float, planner: str,
) -> None:  # fmt: skip
    """minRating filters by the rating the ranking uses, (C·m + stars) / (C + count) / 5
    (C = 25 prior votes), written out here: a radius search and nearest-k both answer
    exactly the brute-force set."""
    index, oracle = dense
    rated = ((25.0 * index.prior_mean + oracle.stars) / (25.0 + oracle.count) / 5.0).astype(
        np.float32
    )
    good = rated.astype(np.float64) * 5.0 >= stars
    s = searchers[planner]
    f = s.check_filters(min_rating=stars)
    lat, lng = 12.9716, 77.5946
    got = s.search(lat, lng, 800, filters=f, limit=MAX_LIMIT, widen=False, now=NOW)
    keep, _ = oracle.mask(lat, lng, 800, now=NOW)
    assert got.total == int((keep & good).sum())
    assert {r["num"] for r in got.results} <= set(oracle.num[keep & good].tolist())
    near = s.nearest(lat, lng, filters=f, limit=10, now=NOW)
    everywhere, d = oracle.mask(lat, lng, math.inf, now=NOW)
    idx = np.flatnonzero(everywhere & good)
    order = np.lexsort((oracle.num[idx], np.rint(d[idx] * 1e6).astype(np.int64)))
    assert _nums(near) == oracle.num[idx][order][:10].tolist()


def test_a_minimum_rating_out_of_range_is_refused(
    searchers: dict[str, ProximitySearch],
) -> None:
    with pytest.raises(SearchError):
        searchers["geohash"].check_filters(min_rating=5.5)
