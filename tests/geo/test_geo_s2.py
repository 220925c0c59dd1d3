"""Our circle geometry checked against Google's S2 library (the ``s2geometry`` bindings).

``circle_box`` decides which cells a radius search reads; near the poles and across the
antimeridian it is the part most easily wrong. S2 computes the same bound
(``S2Cap.GetRectBound``) with its own code, so the two must agree. On the built data
set, S2's ``RegionCoverer`` covering and our plan (the coverings notebook 04 compares)
must both hold every place a brute-force scan finds within the radius.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lookup.geo import geohash as gh
from lookup.geo.index import GeohashIndex, circle_box
from tests.geo.conftest import Oracle

s2 = pytest.importorskip("s2geometry")

#: Degrees of disagreement allowed: S2 rounds its chord angles, we use doubles throughout.
TOLERANCE_DEG = 1e-9


def _cap(lat: float, lng: float, radius_m: float) -> Any:
    centre = s2.S2LatLng.FromDegrees(lat, lng).ToPoint()
    return s2.S2Cap(centre, s2.S1Angle.Radians(radius_m / gh.EARTH_RADIUS_M))


def _near_pole(lat: float, radius_m: float) -> bool:
    """The cap's edge passes within rounding of a pole (where "all longitudes" may flip)."""
    edge = 90.0 - abs(lat) - math.degrees(radius_m / gh.EARTH_RADIUS_M)
    return abs(edge) < TOLERANCE_DEG


@settings(max_examples=400, deadline=None)
@given(
    st.one_of(
        st.floats(min_value=-90, max_value=90),
        st.floats(min_value=88, max_value=90),
        st.floats(min_value=-90, max_value=-88),
    ),
    st.one_of(
        st.floats(min_value=-180, max_value=180),
        st.floats(min_value=179, max_value=180),
        st.floats(min_value=-180, max_value=-179),
    ),
    st.floats(min_value=1, max_value=20_000),
)
def test_circle_box_equals_s2_cap_rect_bound(lat: float, lng: float, radius: float) -> None:
    ours = circle_box(lat, lng, radius)
    rect = _cap(lat, lng, radius).GetRectBound()
    lat_lo, lat_hi = rect.lat_lo().degrees(), rect.lat_hi().degrees()
    lng_lo, lng_hi = rect.lng_lo().degrees(), rect.lng_hi().degrees()
    assert ours.south == pytest.approx(lat_lo, abs=TOLERANCE_DEG)
    assert ours.north == pytest.approx(lat_hi, abs=TOLERANCE_DEG)
    s2_full = lng_lo <= -180.0 and lng_hi >= 180.0
    ours_full = ours.lngs == ((-180.0, 180.0),)
    if s2_full != ours_full:
        assert _near_pole(lat, radius), (ours, (lat_lo, lat_hi, lng_lo, lng_hi))
        return
    if ours_full:
        return
    assert ours.span is not None
    west, east = ours.span  # unwrapped: may pass ±180
    if lng_hi < lng_lo:  # S2's interval crosses the antimeridian
        lng_hi += 360.0
    if west < -180.0:
        west, east = west + 360.0, east + 360.0
    assert west == pytest.approx(lng_lo, abs=TOLERANCE_DEG)
    assert east == pytest.approx(lng_hi, abs=TOLERANCE_DEG)


def _leaf_ids(lat: np.ndarray, lng: np.ndarray) -> np.ndarray:
    return np.array(
        [
            s2.S2CellId(s2.S2LatLng.FromDegrees(a, b)).id()
            for a, b in zip(lat.tolist(), lng.tolist(), strict=True)
        ],
        dtype=np.uint64,
    )


def test_s2_covering_and_our_plan_both_hold_every_hit(built_rows: list[dict[str, Any]]) -> None:
    index, oracle = GeohashIndex.from_rows(built_rows), Oracle(built_rows)
    leaves = _leaf_ids(oracle.lat, oracle.lng)
    coverer = s2.S2RegionCoverer()
    coverer.set_max_cells(8)
    rng = np.random.default_rng(11)
    checked = 0
    for k in range(150):
        i = int(rng.integers(len(oracle.lat)))
        if k % 3 == 0:  # anywhere, poles and antimeridian included
            lat = float(np.degrees(np.arcsin(rng.uniform(-1, 1))))
            lng = float(rng.uniform(-180, 180))
        else:  # beside a place
            lat = float(np.clip(oracle.lat[i] + rng.normal(0, 0.01), -90, 90))
            lng = float((oracle.lng[i] + rng.normal(0, 0.01) + 180) % 360 - 180)
        radius = float(rng.choice([100.0, 500.0, 2_000.0, 5_000.0, 20_000.0]))
        hits = set(oracle.num[oracle.distances(lat, lng) <= radius].tolist())
        in_s2 = np.zeros(len(leaves), dtype=bool)
        for cell in coverer.GetCovering(_cap(lat, lng, radius)):
            lo, hi = cell.range_min().id(), cell.range_max().id()
            in_s2 |= (leaves >= np.uint64(lo)) & (leaves <= np.uint64(hi))
        assert hits <= set(oracle.num[in_s2].tolist())
        plan = index.plan_radius(lat, lng, radius)
        base_rows, _ = index.positions(plan.ranges)
        assert hits <= set(index.base.num[base_rows].tolist())
        checked += bool(hits)
    assert checked >= 40  # most circles had places to miss
