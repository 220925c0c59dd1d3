"""Bounding boxes of circles, the 3×3 block's coverage, and weekly opening hours."""

from __future__ import annotations

import json
import math
from datetime import datetime
from zoneinfo import ZoneInfo

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from lookup.geo import geohash as gh
from lookup.geo.hours import MINUTES_PER_WEEK, is_open, parse_hours, week_bitmap
from lookup.geo.index import COLUMN_DTYPES, GeohashIndex, PlaceColumns, Vocab, circle_box
from lookup.geo.ranking import TextIndex, haversine_m

R = 6_371_000.0


def _destinations(
    lat: float, lng: float, dist: np.ndarray, bearing: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Points at ``dist`` metres along ``bearing`` (the spherical direct problem)."""
    p1, l1, d = math.radians(lat), math.radians(lng), dist / R
    # atan2 rather than arcsin: well-conditioned next to the poles
    z = np.sin(p1) * np.cos(d) + np.cos(p1) * np.sin(d) * np.cos(bearing)
    x = np.cos(p1) * np.cos(d) - np.sin(p1) * np.sin(d) * np.cos(bearing)
    p2 = np.arctan2(z, np.hypot(x, np.sin(d) * np.sin(bearing)))
    l2 = l1 + np.arctan2(
        np.sin(bearing) * np.sin(d) * np.cos(p1), np.cos(d) - np.sin(p1) * np.sin(p2)
    )
    lng2 = (np.degrees(l2) + 180.0) % 360.0 - 180.0
    return np.degrees(p2), lng2


@settings(max_examples=300, deadline=None)
@given(
    st.floats(min_value=-90, max_value=90),
    st.floats(min_value=-180, max_value=180),
    st.floats(min_value=1, max_value=20_000),
)
@example(89.999, 0.0, 2.0)  # a metre-sized cap next to the pole (found by a CI run)
def test_circle_box_holds_the_whole_circle(lat: float, lng: float, radius: float) -> None:
    box = circle_box(lat, lng, radius)
    bearings = np.linspace(0, 2 * math.pi, 720, endpoint=False)
    for frac in (1.0, 0.999, 0.5):
        plat, plng = _destinations(lat, lng, np.full(720, radius * frac), bearings)
        assert box.contains(np.clip(plat, -90, 90), plng).all() or _only_rounding(box, plat, plng)


def _only_rounding(box, plat: np.ndarray, plng: np.ndarray) -> bool:  # type: ignore[no-untyped-def]
    # the direct problem itself rounds; allow a nanodegree of ground (0.1 mm) at the box's
    # edge. Next to a pole the oracle's longitude comes from a difference of two numbers
    # near 1 (cancellation), so its error in degrees grows as 1/cos(lat) while the ground
    # distance stays tiny: the longitude allowance is scaled the same way.
    eps = 1e-9
    lng_eps = eps / np.maximum(np.cos(np.radians(np.clip(plat, -90, 90))), 1e-12)
    lng_ok = np.zeros(len(plat), dtype=bool)
    for w, e in box.lngs:
        lng_ok |= (plng >= w - lng_eps) & (plng <= e + lng_eps)
    return bool((lng_ok & (plat >= box.south - eps) & (plat <= box.north + eps)).all())


@settings(max_examples=300, deadline=None)
@given(
    st.floats(min_value=-85, max_value=85),
    st.floats(min_value=-180, max_value=180),
    st.floats(min_value=1, max_value=20_000),
)
def test_block_covers_the_circle_when_it_says_so(lat: float, lng: float, radius: float) -> None:
    p = gh.precision_for_radius(radius, lat)
    box = circle_box(lat, lng, radius)
    if not GeohashIndex.block_covers(lat, lng, p, box):
        return
    block = set(gh.block(gh.encode(lat, lng, p)))
    bearings = np.linspace(0, 2 * math.pi, 360, endpoint=False)
    plat, plng = _destinations(lat, lng, np.full(360, radius * 0.9999), bearings)
    for a, b in zip(plat, plng, strict=True):
        assert gh.encode(float(np.clip(a, -90, 90)), float(b), p) in block


def test_haversine_known_distances() -> None:
    # one degree of latitude on the 6,371 km sphere, and the seed's 54 m
    d = haversine_m(0.0, 0.0, np.array([1.0, 0.0]), np.array([0.0, 180.0]))
    assert d[0] == pytest.approx(111_194.93, abs=0.01)
    assert d[1] == pytest.approx(math.pi * R)


# ------------------------------------------------------------------------ hours


def _ts(iso: str, tz: str) -> float:
    return datetime.fromisoformat(iso).replace(tzinfo=ZoneInfo(tz)).timestamp()


def test_open_now_in_the_places_own_time_zone() -> None:
    hours = {"mon": ["09:00-17:00"], "fri": ["18:00-02:00"], "sun": ["22:00-24:00"]}
    assert is_open(hours, _ts("2025-06-09T09:00", "Asia/Kolkata"), "Asia/Kolkata")  # Monday
    assert not is_open(hours, _ts("2025-06-09T17:00", "Asia/Kolkata"), "Asia/Kolkata")
    # the same instant is Sunday 20:30 in Los Angeles (closed) and 23:30 in New York (open)
    assert not is_open(hours, _ts("2025-06-09T09:00", "Asia/Kolkata"), "America/Los_Angeles")
    assert is_open(hours, _ts("2025-06-09T09:00", "Asia/Kolkata"), "America/New_York")
    # past midnight: Friday's late shift runs into Saturday
    assert is_open(hours, _ts("2025-06-14T01:30", "Europe/Paris"), "Europe/Paris")
    assert not is_open(hours, _ts("2025-06-14T02:00", "Europe/Paris"), "Europe/Paris")
    # Sunday night is the end of the week's bitmap
    assert is_open(hours, _ts("2025-06-15T23:59", "UTC"), "UTC")
    assert not is_open(None, _ts("2025-06-15T23:59", "UTC"), "UTC")


def test_week_bitmap_wraps_sunday_into_monday() -> None:
    bits = week_bitmap({"sun": ["23:00-01:00"]})
    assert bits.shape == (MINUTES_PER_WEEK,)
    assert bits[-60:].all() and bits[:60].all() and bits.sum() == 120
    assert week_bitmap({d: ["00:00-24:00"] for d in ("mon", "tue")}).sum() == 2 * 1440


@pytest.mark.parametrize(
    "bad",
    [
        '{"mon": "9-5"}',
        "[1]",
        '{"funday": []}',
        '{"mon": ["25:00-26:00"]}',
        '{"mon": ["09:00-24:30"]}',
        "not json",
        '{"mon": [9]}',
    ],
)
def test_bad_schedules_are_rejected(bad: str) -> None:
    with pytest.raises(ValueError):
        parse_hours(bad)
    assert parse_hours(json.dumps({"mon": ["09:00-17:00"]}))["tue"] == []


# -------------------------------------------------------------------- columns


def test_columns_and_vocab_are_narrow() -> None:
    vocab = Vocab()
    assert vocab.category("cafe") == vocab.category("cafe") == 0
    assert vocab.schedule(None) == 0 and vocab.timezone(None) == 0
    sid = vocab.schedule(json.dumps({"mon": ["09:00-10:00"]}))
    assert vocab.bitmaps[sid].sum() == 60
    # the narrow index: code 8 + lat 8 + lng 8 + place number 4 + rating 4 + category 2
    # + price 1 + time zone 2 + hours 2 = 39 bytes (the seed budgets 40)
    assert sum(np.dtype(d).itemsize for d in COLUMN_DTYPES.values()) == 39
    assert PlaceColumns.empty().nbytes == 0


def test_text_index_words_and_relevance() -> None:
    text = TextIndex.build(
        [0, 1, 3],
        ["Biryani House", "Café Olé", "Golden Pizzas"],
        ["restaurant", "cafe", "restaurant"],
        [["dosa"], [], ["pizza"]],
    )
    assert ("biryani", "name") in text.words_of(0)
    assert ("cafe", "name") in text.words_of(1)  # accents folded, name beats category
    assert text.words_of(2) == []
    q = text.query_ids("Pizza cafés")
    rel = text.relevance(np.array([0, 1, 3, 2]), q)
    assert rel.tolist() == [0.0, 0.5, 0.5, 0.0]
    text.set_place(0, "Pizza Cafe", "cafe", [])
    assert text.relevance(np.array([0]), q).tolist() == [1.0]
