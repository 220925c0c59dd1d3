"""Polygon and box search (issue 27 item 15): the cell cover's answer against brute force
with ``shapely`` over the built data set, on random polygons (holes, across ±180), with
the filters; pages that add up to the whole answer."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
import shapely
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lookup.geo.index import GeohashIndex
from lookup.geo.polygon import parse_bbox, parse_polygon
from lookup.geo.ranking import PRIOR_WEIGHT
from lookup.geo.search import Filters, ProximitySearch
from lookup.geo.within import within
from tests.geo.conftest import NOW
from tests.geo.test_polygon import _oracle, star_polygons


@pytest.fixture(scope="module")
def searcher(built_rows: list[dict[str, Any]]) -> ProximitySearch:
    index = GeohashIndex.from_rows(built_rows)
    by_num = {r["num"]: {"id": r["id"]} for r in built_rows}
    return ProximitySearch(index, profiles=lambda nums: {n: by_num[n] for n in nums})


def _all_ids(s: ProximitySearch, shape: Any, **kw: Any) -> list[str]:
    """Every page of an answer, followed by its cursors."""
    ids: list[str] = []
    cursor = None
    total = None
    while True:
        body = within(s, shape, cursor=cursor, now=NOW, **kw)
        total = body["total"] if total is None else total
        assert body["total"] == total
        ids += [r["id"] for r in body["results"]]
        if not body["truncated"]:
            assert body["nextCursor"] is None
            break
        cursor = body["nextCursor"]
    assert len(ids) == len(set(ids)) == total
    return ids


def _brute(rows: list[dict[str, Any]], geom: shapely.Polygon, keep: Any = None) -> set[str]:
    lat = np.array([r["lat"] for r in rows])
    lng = np.array([r["lng"] for r in rows])
    inside = np.zeros(len(rows), dtype=bool)
    for k in (-2, -1, 0, 1, 2):
        inside |= shapely.covers(geom, shapely.points(lng + 360.0 * k, lat))
    return {
        r["id"] for r, hit in zip(rows, inside, strict=True) if hit and (keep is None or keep(r))
    }


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(poly=star_polygons(), cells=st.integers(8, 300))
def test_the_cover_finds_what_brute_force_finds(
    poly: dict[str, Any], cells: int, searcher: ProximitySearch, built_rows: list[dict[str, Any]]
) -> None:
    shape = parse_polygon(poly, 1000)
    expected = _brute(built_rows, _oracle(poly))
    found = within(searcher, shape, limit=500, max_cells=cells, now=NOW)
    assert found["total"] == len(expected)
    assert set(_all_ids(searcher, shape, limit=500, max_cells=cells)) == expected
    scan = within(searcher, shape, limit=500, index="scan", now=NOW)
    assert scan["total"] == len(expected)


def _rating(rows: list[dict[str, Any]]) -> Any:
    stars = sum(r.get("review_stars") or 0 for r in rows)
    count = sum(r.get("review_count") or 0 for r in rows)
    prior = stars / count

    def of(r: dict[str, Any]) -> float:
        c, s = r.get("review_count") or 0, r.get("review_stars") or 0
        return float(np.float32((PRIOR_WEIGHT * prior + s) / (PRIOR_WEIGHT + c) / 5.0)) * 5.0

    return of


def test_filters_and_pages_over_a_dense_city(
    searcher: ProximitySearch, built_rows: list[dict[str, Any]]
) -> None:
    """A polygon round the densest city's businesses, with a hole: category and minRating
    as brute force computes them, and pages of 7 that add up to the whole answer."""
    biz = [r for r in built_rows if r["generated"]]
    lat = np.array([r["lat"] for r in biz])
    lng = np.array([r["lng"] for r in biz])
    cells, counts = np.unique(np.round(lat * 4) * 10_000 + np.round(lng * 4), return_counts=True)
    densest = cells[np.argmax(counts)]
    clat, clng = float(np.round(densest / 10_000)) / 4, float(densest % 10_000) / 4
    clng = clng - 2500 if clng > 1250 else clng
    shell = [[clng + 0.3 * math.cos(a / 5), clat + 0.25 * math.sin(a / 5)] for a in range(32)]
    hole = [[clng + 0.02 * math.cos(-a / 2), clat + 0.02 * math.sin(-a / 2)] for a in range(12)]
    poly = {"type": "Polygon", "coordinates": [[*shell, shell[0]], [*hole, hole[0]]]}
    shape = parse_polygon(poly, 1000)
    geom = _oracle(poly)
    everything = _brute(built_rows, geom)
    assert len(everything) > 50
    ids = _all_ids(searcher, shape, limit=7)
    assert set(ids) == everything
    rating = _rating(built_rows)
    cafes = _brute(built_rows, geom, lambda r: r["category"] == "cafe" and rating(r) >= 3.8)
    filters = searcher.check_filters(category="cafe")
    got = _all_ids(searcher, shape, filters=filters, min_rating=3.8, limit=5)
    assert set(got) == cafes and cafes


def test_a_box_is_a_rectangle_polygon(
    searcher: ProximitySearch, built_rows: list[dict[str, Any]]
) -> None:
    box = parse_bbox("-0.5,51.2,0.3,51.7")
    rect = shapely.box(-0.5, 51.2, 0.3, 51.7)
    assert set(_all_ids(searcher, box, limit=100)) == _brute(built_rows, rect)
    across = parse_bbox("170,-25,-170,-10")  # Fiji and Tonga, across ±180
    ids = set(_all_ids(searcher, across, limit=100))
    parts = _brute(built_rows, shapely.box(170, -25, 180, -10)) | _brute(
        built_rows, shapely.box(-180, -25, -170, -10)
    )
    assert ids == parts and ids
    assert Filters() == Filters()
