"""Radius and map-area search against a brute-force scan of the whole table.

Thousands of random searches — dense city, countryside, both poles, the antimeridian,
radius 100 m to 20 km, with and without filters — must return exactly the places the
oracle finds: nothing within the radius missed, nothing outside it returned.
"""

from __future__ import annotations

import math
import zlib
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lookup.geo import geohash as gh
from lookup.geo.index import GeohashIndex, ScanIndex, merge_cells
from lookup.geo.quadtree import QuadtreeIndex
from lookup.geo.search import WIDEN_STEPS_M, WIDEN_UNTIL, Filters, ProximitySearch
from tests.geo.conftest import NOW, Oracle

CATEGORIES = ("restaurant", "cafe", "pharmacy", "fuel", "hotel")


@pytest.fixture(scope="module")
def dense(dense_rows: list[dict[str, Any]]) -> tuple[GeohashIndex, Oracle]:
    return GeohashIndex.from_rows(dense_rows), Oracle(dense_rows)


@pytest.fixture(scope="module")
def built(built_rows: list[dict[str, Any]]) -> tuple[GeohashIndex, Oracle]:
    return GeohashIndex.from_rows(built_rows), Oracle(built_rows)


def _searcher(index: GeohashIndex, planner: str) -> ProximitySearch:
    if planner == "geohash":
        return ProximitySearch(index)
    if planner == "quadtree":
        return ProximitySearch(QuadtreeIndex(index))
    return ProximitySearch(ScanIndex(index))


def _random_point(
    rng: np.random.Generator, oracle: Oracle, near: float = 1 / 6
) -> tuple[float, float]:
    kind = 0 if rng.random() < near else rng.integers(1, 6)
    if kind == 0:  # next to a place (dense areas get most of these)
        i = int(rng.integers(0, len(oracle.lat)))
        return (
            float(np.clip(oracle.lat[i] + rng.normal(0, 0.02), -90, 90)),
            float((oracle.lng[i] + rng.normal(0, 0.02) + 180) % 360 - 180),
        )
    if kind == 1:  # anywhere (mostly countryside and ocean)
        return float(np.degrees(np.arcsin(rng.uniform(-1, 1)))), float(rng.uniform(-180, 180))
    if kind == 2:  # near a pole
        return float(rng.choice([-1, 1]) * rng.uniform(89.0, 90.0)), float(rng.uniform(-180, 180))
    if kind == 3:  # near the antimeridian
        return float(rng.uniform(-70, 70)), float(rng.choice([-1, 1]) * rng.uniform(179.0, 180.0))
    if kind == 4:  # the dense city centre
        return float(12.97 + rng.normal(0, 0.05)), float(77.59 + rng.normal(0, 0.05))
    return float(rng.uniform(-60, 70)), float(rng.uniform(-180, 180))


def _random_filters(rng: np.random.Generator) -> dict[str, Any]:
    f: dict[str, Any] = {}
    if rng.random() < 0.3:
        f["categories"] = tuple(
            rng.choice(CATEGORIES, size=int(rng.integers(1, 3)), replace=False).tolist()
        )
    if rng.random() < 0.2:
        f["prices"] = tuple(sorted({int(x) for x in rng.integers(1, 5, size=2)}))
    if rng.random() < 0.2:
        f["q"] = str(rng.choice(["biryani", "pizza", "Golden", "coffee cake", "Royal biryani"]))
    if rng.random() < 0.25:
        f["open_now"] = True
    return f


@pytest.mark.parametrize("planner", ["geohash", "quadtree"])
@pytest.mark.parametrize("data", ["dense", "built"])
def test_radius_search_equals_brute_force(planner: str, data: str, request: Any) -> None:
    index, oracle = request.getfixturevalue(data)
    search = _searcher(index, planner)
    rng = np.random.default_rng(zlib.crc32(f"{planner}/{data}".encode()))
    nonempty = matched = 0
    for _ in range(300):
        lat, lng = _random_point(rng, oracle, near=0.5 if data == "built" else 1 / 6)
        radius = float(math.exp(rng.uniform(math.log(100), math.log(20_000))))
        f = _random_filters(rng)
        filters = Filters(
            f.get("categories", ()), f.get("open_now", False), f.get("prices", ()), f.get("q", "")
        )
        m, plan, read, _ = search.matches(lat, lng, radius, filters, NOW)
        got = m.cols.num.tolist()
        expected = oracle.within(lat, lng, radius, now=NOW, **f)
        assert len(got) == len(set(got)), "a place was returned twice"
        assert set(got) == expected, (lat, lng, radius, f, plan.describe())
        if got:
            nonempty += 1
            matched += len(got)
            d = oracle.distances(lat, lng)[np.searchsorted(oracle.num, m.cols.num)]
            np.testing.assert_allclose(m.dist, d, rtol=1e-9, atol=1e-6)
        assert read >= len(got)
    assert nonempty > 25 and matched > (3000 if data == "dense" else 100)  # not vacuous


def test_scan_planner_equals_brute_force(dense: tuple[GeohashIndex, Oracle]) -> None:
    index, oracle = dense
    search = _searcher(index, "scan")
    rng = np.random.default_rng(5)
    for _ in range(40):
        lat, lng = _random_point(rng, oracle)
        m, *_ = search.matches(lat, lng, 5000.0, Filters(), NOW)
        assert set(m.cols.num.tolist()) == oracle.within(lat, lng, 5000.0)


@pytest.mark.parametrize(
    "lat, lng, radius",
    [
        (90.0, 0.0, 20_000),
        (-90.0, 123.0, 20_000),
        (89.999, 45.0, 100),
        (-89.95, -170.0, 5_000),
        (0.0, 180.0, 20_000),
        (0.0, -180.0, 3_000),
        (-17.7, 179.999, 20_000),
        (-17.7, -179.999, 800),
        (64.0, 180.0, 15_000),
        (45.0, -180.0, 20_000),
    ],
)
@pytest.mark.parametrize("planner", ["geohash", "quadtree"])
def test_awkward_places_equal_brute_force(
    dense: tuple[GeohashIndex, Oracle], planner: str, lat: float, lng: float, radius: float
) -> None:
    index, oracle = dense
    m, *_ = _searcher(index, planner).matches(lat, lng, radius, Filters(), NOW)
    expected = oracle.within(lat, lng, radius)
    assert set(m.cols.num.tolist()) == expected
    if lat in (90.0, -90.0) or radius == 20_000:
        assert expected  # these cases are not vacuous


def test_balltree_haversine_agrees(built: tuple[GeohashIndex, Oracle]) -> None:
    sklearn_neighbors = pytest.importorskip("sklearn.neighbors")
    index, oracle = built
    tree = sklearn_neighbors.BallTree(
        np.radians(np.stack([oracle.lat, oracle.lng], 1)), metric="haversine"
    )
    search = ProximitySearch(index)
    rng = np.random.default_rng(9)
    for _ in range(60):
        lat, lng = _random_point(rng, oracle)
        radius = float(rng.uniform(500, 20_000))
        m, *_ = search.matches(lat, lng, radius, Filters(), NOW)
        (hits,) = tree.query_radius(np.radians([[lat, lng]]), r=radius / 6_371_000.0)
        # points within a micrometre of the edge may fall either way between two formulas
        d = oracle.distances(lat, lng)
        edge = np.abs(d - radius) < 1e-6
        mine = set(m.cols.num.tolist())
        theirs = set(oracle.num[hits].tolist())
        assert mine ^ theirs <= set(oracle.num[edge].tolist())


#: The seed's formula, written out here (never imported): 0.5 distance + 0.35 rating +
#: 0.15 relevance; the Bayesian rating trusts a place after C = 25 reviews.
SEED_WEIGHTS = (0.5, 0.35, 0.15)
SEED_PRIOR_REVIEWS = 25.0


def _north_of(lat: float, metres: float) -> float:
    """The latitude ``metres`` due north (a meridian arc: distance = R × Δφ exactly)."""
    return lat + math.degrees(metres / 6_371_000.0)


def test_ranking_matches_scores_worked_by_hand() -> None:
    """Three places scored with pencil and paper from the seed's formula.

    The prior m is 4.0 (2,000 stars over 500 reviews in the table); radius 1,000 m, no
    query (relevance 1):

    * A, 250 m, no reviews:     0.5×0.75 + 0.35×(25×4)/25/5          + 0.15 = 0.805
    * B, 500 m, 480★ over 100:  0.5×0.50 + 0.35×(100+480)/125/5      + 0.15 = 0.7248
    * C, 900 m, one 5★ review:  0.5×0.10 + 0.35×(100+5)/26/5         + 0.15 = 0.48269…
    """
    base = {"category": "restaurant", "tags": "[]", "timezone": "UTC", "hours": None, "price": None}
    rows = [
        {
            **base,
            "num": 1,
            "name": "A",
            "lat": _north_of(10.0, 250),
            "lng": 20.0,
            "review_count": 0,
            "review_stars": 0,
        },
        {
            **base,
            "num": 2,
            "name": "B",
            "lat": _north_of(10.0, 500),
            "lng": 20.0,
            "review_count": 100,
            "review_stars": 480,
        },
        {
            **base,
            "num": 3,
            "name": "C",
            "lat": _north_of(10.0, 900),
            "lng": 20.0,
            "review_count": 1,
            "review_stars": 5,
        },
        {
            **base,
            "num": 4,
            "name": "Far",
            "lat": -40.0,
            "lng": -60.0,
            "review_count": 399,
            "review_stars": 1515,
        },
    ]
    result = ProximitySearch(GeohashIndex.from_rows(rows)).search(
        10.0, 20.0, 1000, widen=False, now=NOW
    )
    assert [(r["num"], r["distanceM"]) for r in result.results] == [(1, 250), (2, 500), (3, 900)]
    assert [r["score"] for r in result.results] == [0.805, 0.7248, 0.4827]


def test_ranking_follows_the_formula(built: tuple[GeohashIndex, Oracle]) -> None:
    index, oracle = built
    search = ProximitySearch(index)
    w_distance, w_rating, w_relevance = SEED_WEIGHTS
    c = SEED_PRIOR_REVIEWS
    prior = oracle.stars.sum() / oracle.count.sum()
    rating = (c * prior + oracle.stars) / (c + oracle.count) / 5
    rng = np.random.default_rng(2)
    checked = 0
    for _ in range(80):
        i = int(rng.integers(0, len(oracle.lat)))
        lat, lng = float(oracle.lat[i]), float(oracle.lng[i])
        radius = float(rng.uniform(1000, 20_000))
        result = search.search(lat, lng, radius, limit=50, widen=False, now=NOW)
        nums = [r["num"] for r in result.results]
        pos = np.searchsorted(oracle.num, nums)
        d = oracle.distances(lat, lng)[pos]
        expected = w_distance * (1 - d / radius) + w_rating * rating[pos] + w_relevance * 1.0
        got = np.array([r["score"] for r in result.results])
        np.testing.assert_allclose(got, np.round(expected, 4), atol=1e-4)
        assert np.all(np.diff(expected) <= 1e-9), "page not sorted by score"
        checked += len(nums)
    assert checked > 200


def test_bayesian_average_keeps_one_review_from_winning() -> None:
    rows = []
    for i, (count, stars) in enumerate([(1, 5), (1000, 4600), (0, 0)]):
        rows.append(
            {
                "num": i,
                "name": f"P{i}",
                "lat": 12.0,
                "lng": 77.0 + i * 1e-6,
                "category": "restaurant",
                "tags": "[]",
                "timezone": "UTC",
                "hours": None,
                "price": None,
                "review_count": count,
                "review_stars": stars,
            }
        )
    for j in range(20):  # elsewhere, the ordinary 3.5-star places that set the prior
        rows.append(
            {
                "num": 3 + j,
                "name": "Far",
                "lat": -30.0,
                "lng": float(j),
                "category": "cafe",
                "tags": "[]",
                "timezone": "UTC",
                "hours": None,
                "price": None,
                "review_count": 100,
                "review_stars": 350,
            }
        )
    search = ProximitySearch(GeohashIndex.from_rows(rows))
    result = search.search(12.0, 77.0, 500, widen=False, now=NOW)
    assert [r["num"] for r in result.results] == [1, 0, 2]


def test_text_query_filters_and_ranks(dense: tuple[GeohashIndex, Oracle]) -> None:
    index, oracle = dense
    search = ProximitySearch(index)
    filters = search.check_filters(q="Royal biryani")
    result = search.search(12.9716, 77.5946, 2000, filters=filters, limit=100, widen=False, now=NOW)
    assert result.total == len(oracle.within(12.9716, 77.5946, 2000, q="Royal biryani"))
    words = [oracle.words[int(np.searchsorted(oracle.num, r["num"]))] for r in result.results]
    assert all(w & {"royal", "biryani"} for w in words)
    # relevance is the share of query words a place has (both → 1.0, one → 0.5)
    m, *_ = search.matches(12.9716, 77.5946, 2000, filters, NOW)
    pos = np.searchsorted(oracle.num, m.cols.num)
    expected = np.array([len(oracle.words[p] & {"royal", "biryani"}) / 2 for p in pos])
    np.testing.assert_allclose(m.relevance, expected)
    assert {0.5, 1.0} <= set(expected.tolist())


@pytest.mark.parametrize("planner", ["geohash", "quadtree"])
def test_widening_follows_the_ladder(dense: tuple[GeohashIndex, Oracle], planner: str) -> None:
    index, oracle = dense
    search = _searcher(index, planner)
    rng = np.random.default_rng(4)
    widened = 0
    for _ in range(150):
        lat, lng = _random_point(rng, oracle)
        radius = float(rng.choice([100.0, 500.0, 1500.0, 3000.0]))
        limit = int(rng.integers(1, 40))
        f = _random_filters(rng)
        filters = Filters(
            f.get("categories", ()), f.get("open_now", False), f.get("prices", ()), f.get("q", "")
        )
        result = search.search(lat, lng, radius, filters=filters, limit=limit, now=NOW)
        ladder = [radius] + [r for r in WIDEN_STEPS_M if r > radius]
        expected_r = ladder[-1]
        for r in ladder:
            if len(oracle.within(lat, lng, r, now=NOW, **f)) >= WIDEN_UNTIL:  # not limit
                expected_r = r
                break
        assert result.radius_used_m == expected_r
        assert result.total == len(oracle.within(lat, lng, expected_r, now=NOW, **f))
        widened += expected_r != radius
    assert widened > 10


# ------------------------------------------------------------------ pagination


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    i=st.integers(min_value=0, max_value=30_000),
    radius=st.floats(min_value=100, max_value=20_000),
    limit=st.integers(min_value=1, max_value=37),
    planner=st.sampled_from(["geohash", "quadtree"]),
    category=st.sampled_from([None, "restaurant", "cafe"]),
)
def test_cursor_walk_yields_each_match_exactly_once(
    dense: tuple[GeohashIndex, Oracle],
    i: int,
    radius: float,
    limit: int,
    planner: str,
    category: str | None,
) -> None:
    index, oracle = dense
    i %= len(oracle.lat)
    lat, lng = float(oracle.lat[i]), float(oracle.lng[i])
    search = _searcher(index, planner)
    filters = Filters((category,) if category else ())
    m, *_ = search.matches(lat, lng, radius, filters, NOW)
    limit = min(100, max(limit, math.ceil(len(m) / 25)))  # a bounded number of pages
    first = search.search(lat, lng, radius, filters=filters, limit=limit, widen=False, now=NOW)
    seen = [r["num"] for r in first.results]
    cursor = first.next_cursor
    pages = 1
    while cursor and pages < 1000:
        page = search.search(
            lat, lng, radius, filters=filters, limit=limit, cursor=cursor, widen=False
        )
        assert page.results, "a cursor led to an empty page"
        seen += [r["num"] for r in page.results]
        cursor = page.next_cursor
        pages += 1
    assert cursor is None
    assert len(seen) == len(set(seen))
    expected = oracle.within(lat, lng, radius, categories=filters.categories)
    assert set(seen) == expected
    # pages concatenate to the single sorted order
    assert seen == m.cols.num[m.order()].tolist()


def test_cursor_pins_the_radius_used_and_the_clock(dense: tuple[GeohashIndex, Oracle]) -> None:
    index, _ = dense
    search = ProximitySearch(index, clock=lambda: NOW)
    first = search.search(-17.7, 179.99, 100, limit=5, filters=Filters(open_now=True))
    assert first.radius_used_m > 100 and first.next_cursor
    later = ProximitySearch(index, clock=lambda: NOW + 6 * 3600)  # a different hour
    page = later.search(
        -17.7, 179.99, 100, limit=5, filters=Filters(open_now=True), cursor=first.next_cursor
    )
    assert page.radius_used_m == first.radius_used_m
    ids = {r["num"] for r in first.results}
    assert not ids & {r["num"] for r in page.results}


# ----------------------------------------------------------------- result cache


def test_cached_results_are_exact_for_every_user_in_the_cell(
    dense: tuple[GeohashIndex, Oracle],
) -> None:
    index, oracle = dense
    cached = ProximitySearch(index, cache_ttl=60.0)
    plain = ProximitySearch(index)
    rng = np.random.default_rng(8)
    hits = 0
    for _ in range(40):
        lat, lng = _random_point(rng, oracle)
        cell = gh.decode(gh.encode(lat, lng, 6))
        radius = float(rng.choice([300.0, 2000.0, 7000.0]))
        for _ in range(3):
            ulat = float(rng.uniform(cell.south, cell.north))
            ulng = float(rng.uniform(cell.west, cell.east))
            a = cached.search(ulat, ulng, radius, limit=30, now=NOW, use_cache=True)
            b = plain.search(ulat, ulng, radius, limit=30, now=NOW)
            assert a.results == b.results
            assert (a.total, a.radius_used_m, a.next_cursor) == (
                b.total,
                b.radius_used_m,
                b.next_cursor,
            )
            hits += a.cache_hit
    assert hits >= 40  # users in the same cell shared entries


# ------------------------------------------------------------------- map area


@pytest.mark.parametrize("planner", ["geohash", "quadtree"])
def test_area_search_equals_brute_force(dense: tuple[GeohashIndex, Oracle], planner: str) -> None:
    index, oracle = dense
    search = _searcher(index, planner)
    rng = np.random.default_rng(12)
    for _ in range(60):
        lat, lng = _random_point(rng, oracle)
        h = float(math.exp(rng.uniform(math.log(0.01), math.log(30))))
        w = float(math.exp(rng.uniform(math.log(0.01), math.log(60))))
        south, north = max(lat - h, -90.0), min(lat + h, 90.0)
        west = (lng - w + 180) % 360 - 180
        east = (lng + w + 180) % 360 - 180
        f = _random_filters(rng)
        filters = Filters(
            f.get("categories", ()), f.get("open_now", False), f.get("prices", ()), f.get("q", "")
        )
        body = search.area(
            south, west, north, east, filters=filters, limit=500, max_pins=400, now=NOW
        )
        keep, _ = oracle.mask(lat, lng, 1e9, now=NOW, **f)
        if west <= east:
            in_lng = (oracle.lng >= west) & (oracle.lng <= east)
        else:
            in_lng = (oracle.lng >= west) | (oracle.lng <= east)
        keep &= in_lng & (oracle.lat >= south) & (oracle.lat <= north)
        assert body["total"] == int(keep.sum())
        if body["mode"] == "pins":
            assert {r["num"] for r in body["results"]} == set(oracle.num[keep].tolist())
        else:
            assert sum(c["count"] for c in body["clusters"]) == body["total"]
            for c in body["clusters"][:20]:
                cell = gh.decode(c["geohash"])
                assert cell.south <= c["lat"] <= cell.north


def test_world_view_returns_clusters(dense: tuple[GeohashIndex, Oracle]) -> None:
    index, _ = dense
    body = ProximitySearch(index).area(-90, -180, 90, 180)
    assert body["mode"] == "clusters"
    assert body["total"] == len(index)
    assert 4 <= len(body["clusters"]) <= 256


# -------------------------------------------------------------------- planning


def test_plans_use_the_seed_block_and_adapt_to_density(
    dense: tuple[GeohashIndex, Oracle],
) -> None:
    index, _ = dense
    # countryside: the seed's 3×3 block at the precision chosen from the radius
    sparse = index.plan_radius(48.0, 10.0, 2000)
    assert (sparse.strategy, sparse.precision) == ("block", 5)
    assert sorted(sparse.cells) == sorted(gh.block(gh.encode(48.0, 10.0, 5)))
    # the packed city: the block at the radius's precision holds everything, so finer cells
    p0 = gh.precision_for_radius(5000, 12.9716)
    block_candidates = index.count_in(merge_cells(index.block_cells(12.9716, 77.5946, p0), p0))
    assert block_candidates > index.dense_candidates
    dense_plan = index.plan_radius(12.9716, 77.5946, 5000)
    assert dense_plan.strategy == "cover" and (dense_plan.precision or 0) > p0
    assert dense_plan.candidates < block_candidates / 2
    # near a pole the block cannot hold the circle: cover its bounding box instead
    assert index.plan_radius(89.99, 10.0, 5000).strategy == "cover"


def test_cell_counts_are_per_cell_density(dense: tuple[GeohashIndex, Oracle]) -> None:
    index, oracle = dense
    cells = ["tdr1", "tdr", "b", "zzzz", gh.encode(-17.7, 179.9, 3)]
    counts = index.cell_counts(cells)
    for cell, count in zip(cells, counts, strict=True):
        expected = sum(
            gh.encode(float(a), float(b), len(cell)) == cell
            for a, b in zip(oracle.lat, oracle.lng, strict=True)
        )
        assert count == expected


def test_narrow_index_is_under_40_bytes_per_place(built: tuple[GeohashIndex, Oracle]) -> None:
    index, _ = built
    memory = index.memory()
    assert memory["narrowBytesPerPlace"] < 40
    assert memory["narrowBytes"] == sum(
        getattr(index.base, k).nbytes
        for k in ("code", "lat", "lng", "num", "rating", "category", "price", "tz", "hours")
    )


def test_quadtree_leaves_partition_the_rows(dense: tuple[GeohashIndex, Oracle]) -> None:
    index, _ = dense
    tree = QuadtreeIndex(index)
    leaf = tree.first_child < 0
    assert np.all((tree.count[leaf] <= 100) | (tree.depth[leaf] == 30))
    assert int(tree.count[leaf].sum()) == len(index.base)
    assert tree.leaves > 100 and tree.depth.max() > 10  # the dense city split deep
    inner = ~leaf
    kids = tree.first_child[inner][:, None] + np.arange(4)
    assert np.array_equal(tree.count[kids].sum(1), tree.count[inner])
