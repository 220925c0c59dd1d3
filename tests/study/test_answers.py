"""Reading a learner's number: units, words, bad input; scoring by ratio."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lookup.capacity.units import format_quantity
from lookup.study.answers import AnswerError, parse_answer, score


@pytest.mark.parametrize(
    ("text", "unit", "value"),
    [
        ("3.5k/s", "/s", 3500),
        ("3.5k qps", "/s", 3500),
        ("139,000/s", "/s", 139_000),
        ("8.64 million/day", "/s", 100),
        ("12 GB", "B", 12e9),
        ("12 B", "B", 12),
        ("1.5 TiB", "B", 1.5 * 2**40),
        ("8 Gbit", "B", 1e9),
        ("1e9", "count", 1e9),
        ("12B", "count", 12e9),
        ("12 billion", "count", 12e9),
        ("1.2 x 10^9", "count", 1.2e9),
        ("2^32", "count", 2**32),
        ("7 chars", "chars", 7),
        ("0.34%", "fraction", 0.0034),
        ("0.05", "fraction", 0.05),
        ("40 ms", "s", 0.04),
        ("2 min", "s", 120),
        ("2 km", "m", 2000),
        ("300 Mbit/s", "bit/s", 300e6),
        ("40 MB/s", "bit/s", 320e6),
        ("40 MB/s", "B/s", 40e6),
        ("70 years", "years", 70),
    ],
)
def test_numbers_are_read_the_way_people_write_them(text: str, unit: str, value: float) -> None:
    assert parse_answer(text, unit) == pytest.approx(value, rel=1e-12)


@pytest.mark.parametrize(
    ("text", "unit", "message"),
    [
        ("lots", "count", "not a number"),
        ("12 parsecs", "B", "not a unit"),
        ("", "/s", "empty"),
        ("   ", "/s", "empty"),
        ("-5", "count", "never negative"),
        ("-3.5k/s", "/s", "never negative"),
        ("5 GB", "/s", "wants a rate"),
        ("40 ms", "B", "wants bytes"),
        ("7" * 100, "count", "too long"),
    ],
)
def test_bad_answers_get_a_message_a_learner_can_act_on(text: str, unit: str, message: str) -> None:
    with pytest.raises(AnswerError, match=message):
        parse_answer(text, unit)


def test_scoring_by_ratio() -> None:
    assert score(100, 100).verdict == "exact"
    assert score(125, 100).verdict == "exact"
    assert score(80, 100).verdict == "exact"
    assert score(126, 100).verdict == "close"
    assert score(300, 100).verdict == "close"
    assert score(33, 100).verdict == "off"
    assert score(1000, 100).verdict == "off"
    assert score(0, 0).verdict == "exact"
    assert score(1, 0).verdict == "off"
    # A fraction near one is judged by its complement: 0.9 for 0.996 is far off.
    assert score(0.9, 0.996, "fraction").verdict == "off"
    assert score(0.995, 0.996, "fraction").verdict == "exact"
    assert score(0.2, 0.25, "fraction").verdict == "exact"
    # Small whole numbers (key length, precision) are exact only when equal.
    assert score(7, 7, "chars").verdict == "exact"
    assert score(8, 7, "chars").verdict == "close"
    assert score(9, 7, "chars").verdict == "off"
    assert score(6, 5, "count").verdict == "close"
    assert score(1200, 1000, "count").verdict == "exact"


@settings(deadline=None, max_examples=300)
@given(
    st.floats(min_value=1e-3, max_value=1e17, allow_nan=False, allow_infinity=False),
    st.sampled_from(
        ["B", "B/s", "bit", "bit/s", "/s", "/day", "s", "count", "fraction", "chars", "m"]
    ),
)
def test_a_figure_as_shown_reads_back_as_itself(value: float, unit: str) -> None:
    """What the planner prints (three significant figures) is an exact answer to itself."""
    if unit == "fraction":
        value = value / 1e17
    shown = format_quantity(value, unit)
    got = parse_answer(shown, unit)
    assert math.isfinite(got)
    assert score(got, value, unit).verdict == "exact", (shown, got, value)
