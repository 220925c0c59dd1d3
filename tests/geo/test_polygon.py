"""The polygon test and the hand-written geohash cover against ``shapely``, on random
polygons (with holes, crossing the antimeridian) drawn by hypothesis."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
import shapely
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lookup.geo import geohash as gh
from lookup.geo.cover import cover
from lookup.geo.polygon import PolygonError, parse_bbox, parse_polygon

MAX_VERTICES = 1000


def _wrap(x: float) -> float:
    return x - 360.0 if x > 180.0 else (x + 360.0 if x < -180.0 else x)


@st.composite
def star_polygons(draw: Any) -> dict[str, Any]:
    """A simple star-shaped polygon (sorted angles, random radii), maybe with a star hole,
    centred anywhere — often near ±180 so that it crosses it — with wrapped longitudes."""
    near_antimeridian = draw(st.booleans())
    clng = draw(st.floats(170.0, 190.0) if near_antimeridian else st.floats(-170.0, 170.0))
    clat = draw(st.floats(-60.0, 60.0))
    n = draw(st.integers(4, 12))
    angles = sorted(
        draw(st.lists(st.floats(0.0, 2 * math.pi), min_size=n, max_size=n, unique=True))
    )
    gaps = [b - a for a, b in zip(angles, angles[1:] + [angles[0] + 2 * math.pi], strict=True)]
    if min(gaps) < 0.05 or max(gaps) > 2.0:  # keep the centre (and a hole) well inside
        angles = [2 * math.pi * i / n for i in range(n)]
    scale = draw(st.floats(0.05, 8.0))
    radii = draw(st.lists(st.floats(0.5, 1.0), min_size=n, max_size=n))

    def ring(rs: list[float], k: float) -> list[list[float]]:
        pts = [
            [
                _wrap(round(clng + k * r * scale * math.cos(a), 6)),
                round(clat + k * r * scale * math.sin(a), 6),
            ]
            for a, r in zip(angles, rs, strict=True)
        ]
        return [*pts, pts[0]]

    rings = [ring(radii, 1.0)]
    if draw(st.booleans()):
        rings.append(ring([0.8] * n, 0.3)[::-1])  # well inside the shell's inner radius 0.5
    return {"type": "Polygon", "coordinates": rings}


def _oracle(poly: dict[str, Any]) -> shapely.Polygon:
    """The polygon in an unwrapped frame, unwrapped here independently of the package."""
    rings = []
    for raw in poly["coordinates"]:
        xs, turns = [raw[0][0]], 0
        for (a, _), (b, _) in zip(raw, raw[1:], strict=False):
            turns += -1 if b - a > 180 else (1 if b - a < -180 else 0)
            xs.append(b + 360.0 * turns if turns else b)
        rings.append([(x, p[1]) for x, p in zip(xs, raw, strict=True)])
    shell, holes = rings[0], rings[1:]
    west = min(x for x, _ in shell)
    fixed = []
    for h in holes:
        k = -math.floor((h[0][0] - west) / 360.0)
        fixed.append([(x + 360.0 * k, y) for x, y in h])
    return shapely.Polygon(shell, fixed)


def _oracle_covers(geom: shapely.Polygon, lat: np.ndarray, lng: np.ndarray) -> np.ndarray:
    out = np.zeros(len(lat), dtype=bool)
    for k in (-2, -1, 0, 1, 2):
        out |= shapely.covers(geom, shapely.points(lng + 360.0 * k, lat))
    return out


def _points(poly: dict[str, Any], seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Random points around the polygon, plus its vertices (exactly on the boundary)."""
    rng = np.random.default_rng(seed)
    verts = np.array([p for r in poly["coordinates"] for p in r], dtype=np.float64)
    lat0, lat1 = verts[:, 1].min() - 1, verts[:, 1].max() + 1
    lat = np.concatenate([rng.uniform(max(lat0, -90), min(lat1, 90), 3000), verts[:, 1]])
    lng = np.concatenate([rng.uniform(-180, 180, 1500), verts[:, 0]])
    around = verts[rng.integers(0, len(verts), 1500), 0] + rng.normal(0, 3, 1500)
    lng = np.concatenate([lng[:1500], np.clip(around, -180, 180), lng[1500:]])
    return lat, lng


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(poly=star_polygons(), seed=st.integers(0, 2**16))
def test_contains_equals_shapely_covers(poly: dict[str, Any], seed: int) -> None:
    shape = parse_polygon(poly, MAX_VERTICES)
    geom = _oracle(poly)
    assert geom.is_valid
    lat, lng = _points(poly, seed)
    ours = shape.contains(lat, lng)
    assert np.array_equal(ours, _oracle_covers(geom, lat, lng))
    # the vertices themselves lie on the boundary: inside by the covers rule
    assert ours[-sum(len(r) for r in poly["coordinates"]) :].all()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(poly=star_polygons(), seed=st.integers(0, 2**16))
def test_contains_equals_the_polygon_cut_at_the_antimeridian(
    poly: dict[str, Any], seed: int
) -> None:
    """RFC 7946 §3.1.9: cut at ±180 into pieces in [-180, 180] (shapely's clip), the same
    places inside — away from the cut and the edges, where rounding may differ."""
    shape = parse_polygon(poly, MAX_VERTICES)
    geom = _oracle(poly)
    pieces = []
    for k in (-1, 0, 1):
        moved = shapely.affinity.translate(geom, xoff=360.0 * k)
        piece = shapely.clip_by_rect(moved, -180, -90, 180, 90)
        if not piece.is_empty:
            pieces.append(piece)
    cut = shapely.union_all(pieces)
    assert cut.bounds[0] >= -180 and cut.bounds[2] <= 180
    lat, lng = _points(poly, seed)
    pts = shapely.points(lng, lat)
    clear = shapely.distance(cut.boundary, pts) > 1e-7
    assert np.array_equal(shape.contains(lat, lng)[clear], shapely.covers(cut, pts)[clear])


def _cells_of(lat: np.ndarray, lng: np.ndarray, cells: list[tuple[int, int]]) -> np.ndarray:
    codes = gh.encode_codes(lat, lng)
    hit = np.zeros(len(lat), dtype=bool)
    for c, p in cells:
        lo, hi = gh.cell_range(c, p)
        hit |= (codes >= lo) & (codes < hi)
    return hit


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(poly=star_polygons(), seed=st.integers(0, 2**16), budget=st.integers(16, 400))
def test_cover_takes_whole_only_cells_inside_and_misses_nothing(
    poly: dict[str, Any], seed: int, budget: int
) -> None:
    shape = parse_polygon(poly, MAX_VERTICES)
    found = cover(shape, budget)
    assert found.inside or found.boundary
    lat, lng = _points(poly, seed)
    inside = shape.contains(lat, lng)
    in_whole = _cells_of(lat, lng, found.inside)
    in_edge = _cells_of(lat, lng, found.boundary)
    assert inside[in_whole].all()  # a cell taken whole holds no outside point
    assert (in_whole | in_edge)[inside].all()  # every inside point is in the cover
    assert not (in_whole & in_edge).any()  # the two sets do not overlap
    # a point at the centre of every whole cell is inside (shapely, as a second opinion)
    geom = _oracle(poly)
    for c, p in found.inside[:50]:
        s, w, n, e = gh.cell_bounds(c, p)
        assert _oracle_covers(geom, np.array([(s + n) / 2]), np.array([(w + e) / 2]))[0]


def test_a_box_crossing_the_antimeridian_and_the_cover_reading_few_cells() -> None:
    box = parse_bbox("170,-10,-170,10")
    assert box.crosses_antimeridian
    lat = np.array([0.0, 0.0, 0.0, 0.0, 10.0, 11.0])
    lng = np.array([175.0, -175.0, 0.0, 180.0, -170.0, 175.0])
    assert box.contains(lat, lng).tolist() == [True, True, False, True, True, False]
    found = cover(box, 64)
    assert len(found.inside) + len(found.boundary) <= 64


@pytest.mark.parametrize(
    ("polygon", "says"),
    [
        ({"type": "Point", "coordinates": [0, 0]}, "Polygon"),
        ({"type": "Polygon", "coordinates": [[[0, 0], [1, 0], [0, 0]]]}, "at least 4"),
        ({"type": "Polygon", "coordinates": [[[0, 0], [1, 0], [1, 1], [0, 1]]]}, "not closed"),
        ({"type": "Polygon", "coordinates": [[[0, 0], [1, 0], [1, 91], [0, 0]]]}, "latitude"),
        ({"type": "Polygon", "coordinates": [[[0, 0], [181, 0], [1, 1], [0, 0]]]}, "longitude"),
        ({"type": "Polygon", "coordinates": [[[0, 0], [1, 1], [1, 0], [0, 1], [0, 0]]]}, "valid"),
        ({"type": "Polygon", "coordinates": [[[0, 0], [1, 0], [2, 0], [0, 0]]]}, "valid"),
        (
            {"type": "Polygon", "coordinates": [[[-180, 80], [-60, 80], [60, 80], [180, 80]]]},
            "not closed",
        ),
        (
            {"type": "Polygon", "coordinates": [[[0, 80], [120, 80], [-120, 80], [0, 80]]]},
            "pole",
        ),
        ({"type": "Polygon", "coordinates": [[[0, 0], [1, 0], [1, "x"], [0, 0]]]}, "number"),
        ("{not json", "JSON"),
    ],
)
def test_bad_polygons_are_refused_with_a_reason(polygon: Any, says: str) -> None:
    with pytest.raises(PolygonError, match=says):
        parse_polygon(polygon, MAX_VERTICES)


def test_the_vertex_limit() -> None:
    ring = [[math.cos(a / 10), math.sin(a / 10)] for a in range(60)]
    poly = {"type": "Polygon", "coordinates": [[*ring, ring[0]]]}
    parse_polygon(poly, 60)
    with pytest.raises(PolygonError, match="at most 59"):
        parse_polygon(poly, 59)
