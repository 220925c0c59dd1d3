"""Geohash written by hand, checked against pygeohash and the seed's examples."""

from __future__ import annotations

import math

import numpy as np
import pygeohash
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lookup.geo import geohash as gh

lats = st.floats(min_value=-90.0, max_value=90.0, allow_nan=False)
lngs = st.floats(min_value=-180.0, max_value=180.0, allow_nan=False)
precisions = st.integers(min_value=1, max_value=12)
geohashes = st.text(alphabet=gh.BASE32, min_size=1, max_size=12)

# pygeohash's direction names for our compass points, composed for the diagonals
_PYGEOHASH_STEPS = {
    "n": ["top"],
    "s": ["bottom"],
    "e": ["right"],
    "w": ["left"],
    "ne": ["top", "right"],
    "nw": ["top", "left"],
    "se": ["bottom", "right"],
    "sw": ["bottom", "left"],
}


def test_seed_koramangala_cell_and_its_eight_neighbours() -> None:
    assert gh.encode(12.9352, 77.6245, 5) == "tdr1w"
    # the seed's 3×3 picture: tdr1v tdr1y tdr1z / tdr1t [tdr1w] tdr1x / tdr1m tdr1q tdr1r
    assert gh.neighbours("tdr1w") == {
        "nw": "tdr1v",
        "n": "tdr1y",
        "ne": "tdr1z",
        "w": "tdr1t",
        "e": "tdr1x",
        "sw": "tdr1m",
        "s": "tdr1q",
        "se": "tdr1r",
    }


def test_seed_edge_example_54_metres_apart_share_four_characters() -> None:
    a = gh.encode(12.9400, 77.6511, 7)
    b = gh.encode(12.9400, 77.6516, 7)
    assert (a, b) == ("tdr1wgx", "tdr1x58")
    assert gh.common_prefix(a, b) == "tdr1"
    from lookup.geo.ranking import haversine_m

    d = float(haversine_m(12.94, 77.6511, np.array([12.94]), np.array([77.6516]))[0])
    assert round(d) == 54


def test_seed_equator_example_shares_no_prefix() -> None:
    # 0.0004° of latitude ≈ 44 m, straddling the equator: s0p058 and kpzpgx
    a, b = gh.encode(0.0002, 10.0, 6), gh.encode(-0.0002, 10.0, 6)
    assert (a, b) == ("s0p058", "kpzpgx")
    assert gh.common_prefix(a, b) == ""


def test_seed_precision_for_two_kilometres_is_five() -> None:
    assert gh.precision_for_radius(2000, 12.9352) == 5


@settings(max_examples=400, deadline=None)
@given(lats, lngs, precisions)
def test_encode_matches_pygeohash(lat: float, lng: float, precision: int) -> None:
    assert gh.encode(lat, lng, precision) == pygeohash.encode(lat, lng, precision)


@settings(max_examples=300, deadline=None)
@given(geohashes)
def test_decode_bounds_match_pygeohash(code: str) -> None:
    cell = gh.decode(code)
    box = pygeohash.get_bounding_box(code)
    assert (cell.south, cell.west, cell.north, cell.east) == pytest.approx(
        (box.min_lat, box.min_lon, box.max_lat, box.max_lon), abs=1e-12
    )


@settings(max_examples=300, deadline=None)
@given(lats, lngs, precisions)
def test_point_lies_in_its_cell(lat: float, lng: float, precision: int) -> None:
    cell = gh.decode(gh.encode(lat, lng, precision))
    assert cell.south <= lat <= cell.north
    assert cell.west <= lng <= cell.east
    h, w = gh.cell_size_deg(precision)
    assert cell.height_deg == pytest.approx(h) and cell.width_deg == pytest.approx(w)


@settings(max_examples=300, deadline=None)
@given(geohashes)
def test_neighbours_match_pygeohash_including_poles_and_antimeridian(code: str) -> None:
    mine = gh.neighbours(code)
    for direction, steps in _PYGEOHASH_STEPS.items():
        try:
            expected = code
            for step in steps:
                expected = pygeohash.get_adjacent(expected, step)
        except ValueError:  # beyond a pole
            assert direction not in mine
            continue
        assert mine[direction] == expected, direction


@pytest.mark.parametrize(
    "code, count",
    [("b", 5), ("zzzz", 5), ("0", 5), ("pbpb", 5), ("s0000", 8), ("kpbpbp", 8)],
)
def test_neighbour_counts_at_poles_and_antimeridian(code: str, count: int) -> None:
    assert len(gh.neighbours(code)) == count
    assert len(set(gh.block(code))) == count + 1


def test_antimeridian_neighbours_wrap() -> None:
    # a cell touching 180°E has its eastern neighbour at 180°W
    east_edge = gh.encode(10.0, 179.99, 4)
    east = gh.decode(gh.neighbours(east_edge)["e"])
    assert east.west == -180.0
    west_edge = gh.encode(10.0, -179.99, 4)
    assert gh.neighbours(west_edge)["w"] == east_edge


@settings(max_examples=300, deadline=None)
@given(lats, lngs)
def test_integer_code_agrees_with_string_and_bisection(lat: float, lng: float) -> None:
    code = gh.encode_code(lat, lng)
    assert 0 <= code < (1 << gh.CODE_BITS)
    assert gh.to_string(code, 12) == gh.encode(lat, lng, 12)
    assert gh.to_cell(gh.encode(lat, lng, 12)) == (code, 12)
    bits = "".join(str(step["bit"]) for step in gh.bisection_steps(lat, lng, 12))
    assert int(bits, 2) == code
    clat, clng = gh.decode_code(code)
    assert abs(clat - lat) <= 180.0 / (1 << 30) and abs(clng - lng) <= 360.0 / (1 << 30)


def test_vectorised_codes_equal_scalar_codes() -> None:
    rng = np.random.default_rng(7)
    lat = np.concatenate([rng.uniform(-90, 90, 5000), [-90.0, 90.0, 0.0, -0.0, 45.0, -1e-300]])
    lng = np.concatenate([rng.uniform(-180, 180, 5000), [-180.0, 180.0, 0.0, 0.0, -90.0, 1e-300]])
    codes = gh.encode_codes(lat, lng)
    assert codes.dtype == np.int64
    assert [gh.encode_code(float(a), float(b)) for a, b in zip(lat, lng, strict=True)] == (
        codes.tolist()
    )
    with pytest.raises(ValueError):
        gh.encode_codes(np.array([91.0]), np.array([0.0]))


@settings(max_examples=200, deadline=None)
@given(lats, lngs, precisions)
def test_cell_is_a_code_range(lat: float, lng: float, precision: int) -> None:
    code = gh.encode_code(lat, lng)
    cell = gh.cell_value(code, precision)
    lo, hi = gh.cell_range(cell, precision)
    assert lo <= code < hi
    assert gh.to_string(cell, precision) == gh.encode(lat, lng, precision)
    assert gh.cell_bounds(cell, precision) == pytest.approx(
        tuple(
            getattr(gh.decode(gh.to_string(cell, precision)), k)
            for k in ("south", "west", "north", "east")
        )
    )


@settings(max_examples=300, deadline=None)
@given(st.floats(min_value=0.5, max_value=3_000_000.0), st.floats(min_value=-89.0, max_value=89.0))
def test_precision_for_radius_is_the_longest_wide_enough(radius: float, lat: float) -> None:
    p = gh.precision_for_radius(radius, lat)
    h, w = gh.cell_size_m(p, lat)
    if min(h, w) >= radius:
        if p < gh.MAX_PRECISION:
            h2, w2 = gh.cell_size_m(p + 1, lat)
            assert min(h2, w2) < radius
    else:
        assert p == 1  # nothing is wide enough


def test_cell_sizes_follow_the_seed_table() -> None:
    # precision 5 ≈ 4.9 km × 4.9 km, precision 6 ≈ 1.2 km × 0.61 km at the equator
    h5, w5 = gh.cell_size_m(5)
    h6, w6 = gh.cell_size_m(6)
    assert (round(h5 / 100), round(w5 / 100)) == (49, 49)
    assert (round(h6 / 10), round(w6 / 10)) == (61, 122)
    _, w6_60 = gh.cell_size_m(6, 60.0)
    assert w6_60 == pytest.approx(w6 * math.cos(math.radians(60.0)))


@pytest.mark.parametrize("bad", ["", "a", "tdr1wgxtdr1wgx", "TDR1!", 5])
def test_invalid_geohash_strings_are_rejected(bad: object) -> None:
    with pytest.raises(ValueError):
        gh.decode(bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("lat, lng", [(90.1, 0.0), (-91, 0), (0, 180.5), (float("nan"), 0.0)])
def test_out_of_range_points_are_rejected(lat: float, lng: float) -> None:
    with pytest.raises(ValueError):
        gh.encode(lat, lng, 5)


def test_precision_must_be_1_to_12() -> None:
    for p in (0, 13, True):
        with pytest.raises(ValueError):
            gh.encode(1.0, 1.0, p)  # type: ignore[arg-type]
