"""Capacity math: the seeds' figures, helper oracles, invariants and input validation."""

from __future__ import annotations

import dataclasses
import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from lookup import capacity as cap
from lookup.capacity import (
    CrawlerAssumptions,
    ProximityAssumptions,
    SearchAssumptions,
    ShortenerAssumptions,
    TypeaheadAssumptions,
)

ASSUMPTIONS = [
    ShortenerAssumptions,
    TypeaheadAssumptions,
    ProximityAssumptions,
    CrawlerAssumptions,
    SearchAssumptions,
]


# ------------------------------------------------------------------ seed figures


def test_shortener_seed_figures() -> None:
    p = cap.shortener()
    assert p.seconds_per_month == 2_592_000
    assert p.writes_per_s == pytest.approx(39, rel=0.02)
    assert 193 <= round(p.peak_writes_per_s) <= 200  # seed: ≈ 200/s
    assert p.reads_per_s == pytest.approx(3_900, rel=0.02)
    assert 19_300 <= round(p.peak_reads_per_s, -2) <= 20_000  # seed: ≈ 20,000/s
    assert p.links_total == 12e9
    assert p.storage_bytes == 6e12
    assert p.replicated_storage_bytes == 18e12
    assert p.clicks_per_day == pytest.approx(333e6, rel=0.01)
    assert p.click_bytes_per_day == pytest.approx(67e9, rel=0.01)
    assert round(p.peak_click_bytes_per_s / 1e6) == 4  # "≈ 4 MB/s"
    # 62^5 ≈ 916M is too short, 62^6 ≈ 56.8B is 21% full, 62^7 ≈ 3.52T is 0.34% full.
    assert p.too_short_length == 5
    assert p.too_short_key_space == 916_132_832 < p.links_total
    assert p.fit_length == 6
    assert p.fit_key_space == pytest.approx(56.8e9, rel=0.001)
    assert round(p.fit_density * 100) == 21
    assert p.key_length == 7
    assert p.key_space == pytest.approx(3.5216e12, rel=0.0001)
    assert round(p.key_density * 100, 2) == 0.34
    assert p.hot_set_bytes == 3e9


def test_typeahead_seed_figures() -> None:
    p = cap.typeahead()
    assert p.keystrokes_per_day == 12e9
    assert p.keystroke_rate_per_s == pytest.approx(139_000, rel=0.01)
    assert p.peak_keystroke_rate_per_s == pytest.approx(280_000, rel=0.01)
    assert p.requests_per_day == 6e9
    assert p.request_rate_per_s == pytest.approx(69_000, rel=0.01)
    assert p.peak_request_rate_per_s == pytest.approx(140_000, rel=0.01)
    assert p.origin_peak_per_s == pytest.approx(85_000, rel=0.02)
    assert p.nodes_min == 5  # ceil(4.2)
    assert p.nodes_with_headroom == 8
    assert p.string_bytes == 2e9
    assert p.score_bytes == pytest.approx(0.4e9)
    assert p.plain_trie_nodes == 2e9
    assert p.radix_nodes == 200e6
    assert p.node_bytes == 64
    assert p.trie_bytes == pytest.approx(12.8e9)
    assert p.total_bytes == pytest.approx(15e9, rel=0.02)
    assert p.topk_bytes == 8e9
    assert round(p.daily_decay_factor, 3) == 0.906
    assert round(p.interval_decay_factor, 3) == 0.996
    assert p.steady_state_score == pytest.approx(106_000, rel=0.01)


def test_proximity_seed_figures() -> None:
    p = cap.proximity()
    assert p.searches_per_day == 500e6
    assert p.search_rate_per_s == pytest.approx(5_800, rel=0.01)
    assert p.peak_search_rate_per_s == pytest.approx(17_000, rel=0.03)
    assert p.edit_rate_per_s == pytest.approx(12, rel=0.05)
    assert 1_400 <= p.reads_per_write_at_peak <= 1_500 * (1 + 1e-9)
    assert p.index_bytes == 8e9
    assert p.quadtree_leaves == 2e6
    assert p.quadtree_internal_nodes == pytest.approx(0.7e6, rel=0.05)
    assert p.quadtree_node_bytes == pytest.approx(170e6, rel=0.01)
    assert p.quadtree_id_bytes == 1.6e9
    assert round(p.quadtree_total_bytes / 1e9) == 2
    assert p.profile_bytes == 200e9
    assert p.review_bytes_per_year == pytest.approx(3.6e12, rel=0.02)


def test_crawler_seed_figures() -> None:
    p = cap.crawler()
    assert p.fetch_rate_per_s == pytest.approx(386, rel=0.002)
    assert p.peak_fetch_rate_per_s == pytest.approx(800, rel=0.04)
    assert p.bandwidth_bytes_per_s == pytest.approx(38.6e6, rel=0.002)
    assert p.bandwidth_bits_per_s == pytest.approx(310e6, rel=0.01)
    assert p.peak_bandwidth_bits_per_s == pytest.approx(620e6, rel=0.01)
    assert p.raw_bytes_per_month == 100e12
    assert p.compressed_bytes_per_month == 20e12
    assert p.retained_bytes == 240e12
    assert p.link_checks_per_s == pytest.approx(19_300, rel=0.002)
    assert p.bloom_bits_per_url == pytest.approx(9.6, rel=0.002)
    assert p.bloom_bits == pytest.approx(192e9, rel=0.002)
    assert p.bloom_bytes == pytest.approx(24e9, rel=0.002)
    assert p.bloom_partition_bytes == pytest.approx(375e6, rel=0.002)
    assert p.bloom_hashes == 7
    assert p.url_metadata_bytes == 4e12
    assert p.in_flight == pytest.approx(1_600, rel=0.04)
    assert p.fetch_machines == 4
    assert p.big_site_seconds == 20e6
    assert p.big_site_days == pytest.approx(230, rel=0.01)


def test_search_seed_figures() -> None:
    p = cap.search()
    assert p.fanout_tail_probability == pytest.approx(0.095, abs=0.0005)
    assert p.postings == 5e12
    assert p.index_bytes == 20e12  # "a few bytes each → tens of TB" at 4 B
    assert 10e12 <= p.index_bytes < 100e12
    assert p.text_bytes_per_month == 5e12
    assert p.page_to_text_ratio == 20
    assert p.candidates_merged == 1_000
    assert p.seen_url_bloom_bytes == pytest.approx(12e9, rel=0.01)


# ---------------------------------------------------------------- key space


def test_keyspace_powers() -> None:
    assert cap.keyspace(5) == 916_132_832
    assert cap.keyspace(6) == 56_800_235_584
    assert cap.keyspace(7) == 3_521_614_606_208
    assert cap.keyspace(0) == 1
    assert cap.keyspace(3, alphabet=10) == 1000


def test_key_length_for_seed() -> None:
    assert cap.key_length_for(12e9) == 7  # ≤ 1% full
    assert cap.key_length_for(12e9, max_density=1.0) == 6  # merely fits
    assert cap.key_length_for(12e9, max_density=0.25) == 6
    assert cap.key_length_for(0) == 1


def _brute_force_length(count: float, max_density: float, alphabet: int) -> int:
    return next(length for length in itertools.count(1) if count / alphabet**length <= max_density)


@given(
    count=st.floats(0, 1e18, allow_nan=False),
    max_density=st.floats(1e-6, 1.0),
    alphabet=st.integers(2, 100),
)
def test_key_length_for_matches_brute_force(count, max_density, alphabet) -> None:
    length = cap.key_length_for(count, max_density=max_density, alphabet=alphabet)
    assert length == _brute_force_length(count, max_density, alphabet)
    assert cap.density(count, length, alphabet) <= max_density
    if length > 1:
        assert cap.density(count, length - 1, alphabet) > max_density


@given(
    count=st.floats(1, 1e15),
    more=st.floats(0, 1e15),
    length=st.integers(1, 12),
)
def test_density_monotone(count, more, length) -> None:
    assert cap.density(count, length + 1) < cap.density(count, length)
    assert cap.density(count + more, length) >= cap.density(count, length)


def test_keyspace_fill_series() -> None:
    rows = cap.keyspace_fill_series(1.2e9, 10)
    assert len(rows) == 3 * 11
    by_key = {(r["length"], r["year"]): r for r in rows}
    assert by_key[(6, 10)]["density"] == pytest.approx(0.211, rel=0.01)
    assert round(by_key[(7, 10)]["density"] * 100, 2) == 0.34
    assert by_key[(8, 0)]["density"] == 0
    for length in (6, 7, 8):
        series = [by_key[(length, y)]["density"] for y in range(11)]
        assert series == sorted(series)
        assert all(by_key[(length, y)]["key_space"] == 62.0**length for y in range(11))


# --------------------------------------------------------------------- Bloom


def _textbook_fp(bits_per_item: float, k: float) -> float:
    return (1 - math.exp(-k / bits_per_item)) ** k


def test_bloom_seed_values() -> None:
    assert cap.bloom_bits_per_item(0.01) == pytest.approx(9.585, abs=0.001)
    assert cap.bloom_size_bytes(20e9, 0.01) == pytest.approx(24e9, rel=0.002)
    assert cap.bloom_optimal_hashes(0.01) == 7
    assert cap.bloom_optimal_hashes(0.5) == 1


@given(p=st.floats(1e-9, 0.99))
def test_bloom_bits_round_trip_textbook(p) -> None:
    bits = cap.bloom_bits_per_item(p)
    assert bits == pytest.approx(-math.log(p) / math.log(2) ** 2)
    # With the real-valued optimum k = b·ln 2, the textbook rate gives p back.
    assert _textbook_fp(bits, bits * math.log(2)) == pytest.approx(p, rel=1e-9)
    assert cap.bloom_size_bytes(1000, p) == pytest.approx(1000 * bits / 8)


@given(p=st.floats(1e-9, 0.99))
def test_bloom_optimal_hashes_is_the_best_whole_number(p) -> None:
    bits = cap.bloom_bits_per_item(p)
    k = cap.bloom_optimal_hashes(p)
    best = min(range(1, 200), key=lambda j: _textbook_fp(bits, j))
    assert _textbook_fp(bits, k) == pytest.approx(_textbook_fp(bits, best), rel=1e-12)
    assert cap.bloom_false_positive_rate(bits, k) == pytest.approx(_textbook_fp(bits, k))


def _splitmix64(x: np.ndarray) -> np.ndarray:
    x = x + np.uint64(0x9E3779B97F4A7C15)
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def test_bloom_sizing_holds_on_a_real_filter() -> None:
    """A bit array sized by the formulas shows the promised false-positive rate."""
    n, p = 20_000, 0.01
    m = math.ceil(cap.bloom_size_bytes(n, p) * 8)
    k = cap.bloom_optimal_hashes(p)
    members = np.arange(n, dtype=np.uint64)  # distinct keys; the hashes scramble them
    strangers = np.arange(n, n + 200_000, dtype=np.uint64)

    def positions(x: np.ndarray) -> np.ndarray:
        with np.errstate(over="ignore"):
            h1 = _splitmix64(x)
            h2 = _splitmix64(x ^ np.uint64(0x5BD1E995)) | np.uint64(1)
            i = np.arange(k, dtype=np.uint64)[:, None]
            return ((h1[None, :] + i * h2[None, :]) % np.uint64(m)).astype(np.int64)

    bits = np.zeros(m, dtype=bool)
    bits[positions(members).ravel()] = True
    assert bits[positions(members)].all(axis=0).all()  # never a false negative
    fp = bits[positions(strangers)].all(axis=0).mean()
    assert fp == pytest.approx(p, abs=0.002)


# ------------------------------------------------------------------- fan-out


def test_fanout_tail_seed() -> None:
    assert cap.fanout_tail_probability(0.001, 100) == pytest.approx(0.0952, abs=0.0001)
    assert cap.fanout_tail_probability(0.0, 100) == 0.0
    assert cap.fanout_tail_probability(1.0, 3) == 1.0
    assert cap.fanout_tail_probability(0.2, 1) == pytest.approx(0.2)


@given(p=st.floats(0, 1), shards=st.integers(1, 5_000))
def test_fanout_tail_bounds_monotone_and_exact(p, shards) -> None:
    tail = cap.fanout_tail_probability(p, shards)
    assert 0.0 <= tail <= 1.0
    assert cap.fanout_tail_probability(p, shards + 1) >= tail
    if shards <= 300:
        exact = 1 - (1 - Fraction(p)) ** shards
        assert tail == pytest.approx(float(exact), abs=1e-12)


def test_fanout_tail_matches_simulation() -> None:
    rng = np.random.default_rng(11)
    slow = rng.random((20_000, 100)) < 0.001
    simulated = slow.any(axis=1).mean()
    assert simulated == pytest.approx(cap.fanout_tail_probability(0.001, 100), abs=0.008)


# --------------------------------------------------------------------- decay


def test_decay_factors_seed() -> None:
    assert cap.decay_factor(7, 1) == pytest.approx(0.5 ** (1 / 7))
    assert round(cap.decay_factor(7, 1), 3) == 0.906
    assert round(cap.decay_factor(168, 1), 3) == 0.996
    assert cap.decay_factor(7, 7) == pytest.approx(0.5)
    assert cap.decay_factor(7, 0) == 1.0
    assert cap.steady_state_score(10_000, cap.decay_factor(7, 1)) == pytest.approx(
        106_000, rel=0.01
    )


@given(
    count=st.floats(0, 1e6),
    half_life=st.floats(0.5, 60),
    days=st.integers(0, 120),
)
def test_decay_series_matches_closed_form(count, half_life, days) -> None:
    f = cap.decay_factor(half_life, 1)
    series = cap.decay_series(count, f, days)
    assert len(series) == days + 1
    for n, score in enumerate(series):
        assert score == pytest.approx(count * (1 - f**n) / (1 - f), rel=1e-9, abs=1e-9)
        assert score <= cap.steady_state_score(count, f) * (1 + 1e-9)


def test_decay_series_halves_after_stopping() -> None:
    f = cap.decay_factor(7, 1)
    series = cap.decay_series(10_000, f, 60, stop_after=30)
    assert series[37] == pytest.approx(series[30] / 2)
    assert series[44] == pytest.approx(series[30] / 4)
    assert series[30] == max(series)


def test_littles_law() -> None:
    assert cap.littles_law(800, 2) == 1_600
    assert cap.littles_law(0, 5) == 0


# ---------------------------------------------------------------- formatting


@pytest.mark.parametrize(
    ("value", "unit", "text"),
    [
        (6e12, "B", "6 TB"),
        (18e12, "B", "18 TB"),
        (66.666e9, "B", "66.7 GB"),
        (375e6, "B", "375 MB"),
        (100e3, "B", "100 KB"),
        (500, "B", "500 B"),
        (0, "B", "0 B"),
        (3.86e6, "B/s", "3.86 MB/s"),
        (192e9, "bit", "192 Gbit"),
        (308.6e6, "bit/s", "309 Mbit/s"),
        (139_000, "/s", "139,000/s"),
        (138_888.9, "/s", "139,000/s"),
        (38.58, "/s", "38.6/s"),
        (333.3e6, "/day", "333 million/day"),
        (0.0034, "fraction", "0.34%"),
        (0.0034, "%", "0.34%"),
        (0.2113, "fraction", "21.1%"),
        (1.0, "fraction", "100%"),
        (12e9, "count", "12 billion"),
        (56.8e9, "count", "56.8 billion"),
        (3.5216e12, "count", "3.52 trillion"),
        (916_132_832, "", "916 million"),
        (0.9057, "", "0.906"),
        (5, "nodes", "5 nodes"),
        (2_592_000, "s", "2,592,000 s"),
        (0.02, "s", "20 ms"),
        (231.48, "days", "231 days"),
        (999_999, "/s", "1 million/s"),
        (999_600, "B", "1 MB"),
        (0.99999, "s", "1 s"),  # rounds to 1,000 ms: was "1.000e+03 ms" (hypothesis found it)
    ],
)
def test_format_quantity(value, unit, text) -> None:
    assert cap.format_quantity(value, unit) == text


@given(value=st.floats(0, 1e17), unit=st.sampled_from(["B", "bit/s", "/s", "count", "x", "s"]))
@example(value=0.99999, unit="s")
def test_format_quantity_never_uses_exponents(value, unit) -> None:
    text = cap.format_quantity(value, unit)
    assert "e+" not in text and "e-" not in text or value < 1e-3


# --------------------------------------------------------------------- rows


PLANNERS = [cap.shortener, cap.typeahead, cap.proximity, cap.crawler, cap.search]


def _check_rows(p) -> None:
    rows = p.rows()
    assert rows, "a plan lists its figures"
    keys = [r.key for r in rows]
    assert len(keys) == len(set(keys))
    field_names = {f.name for f in dataclasses.fields(p)}
    for r in rows:
        assert isinstance(r, cap.Figure)
        assert r.key in field_names
        assert r.value == getattr(p, r.key)
        assert math.isfinite(r.value)
        assert r.label and r.formula
        assert "nan" not in r.formula.lower() and "inf" not in r.formula.lower()
        assert r.text == cap.format_quantity(r.value, r.unit)
    for name, value in cap.figures(p).items():
        assert name != "assumptions"
        assert isinstance(value, int | float) and math.isfinite(value), name
    driver = p.driver()
    assert driver.endswith(".") and len(driver) > 40


@pytest.mark.parametrize("planner", PLANNERS)
def test_rows_and_driver_for_seed_assumptions(planner) -> None:
    _check_rows(planner())


def test_rows_show_the_seed_arithmetic() -> None:
    rows = {r.key: r for r in cap.shortener().rows()}
    assert rows["writes_per_s"].formula == "100M / 2,592,000 s"
    assert rows["storage_bytes"].formula == "12B × 500 B"
    assert rows["key_length"].text == "7 chars"
    assert [r.key for r in cap.shortener().rows()][:3] == [
        "seconds_per_month",
        "writes_per_s",
        "peak_writes_per_s",
    ]
    assert "density" in cap.shortener().driver().lower()
    assert "9.52%" in cap.search().driver()
    assert "231 days" in cap.crawler().driver()


def _strategy_for(f: dataclasses.Field) -> st.SearchStrategy:
    rule = f.metadata["rule"]
    lowest = rule["minimum"]
    if rule["integer"]:
        low = int(lowest) if rule["inclusive"] else int(lowest) + 1
        return st.integers(max(low, 1), max(low, 1, f.default * 4))
    if rule["maximum"] is not None:
        return st.floats(0.001, 0.98 * rule["maximum"])
    low = max(lowest, f.default / 10)
    return st.floats(low, f.default * 10)


@pytest.mark.parametrize("cls", ASSUMPTIONS)
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_rows_finite_for_any_valid_assumptions(cls, data) -> None:
    values = {f.name: data.draw(_strategy_for(f), label=f.name) for f in dataclasses.fields(cls)}
    assumptions = cls(**values)
    name = next(n for n, (c, _) in cap.PLANNERS.items() if c is cls)
    p = cap.PLANNERS[name][1](assumptions)
    _check_rows(p)
    assert cap.plan(name, **values) == p


def test_shortener_key_rows_adapt_to_the_density_bound() -> None:
    loose = cap.shortener(ShortenerAssumptions(max_key_density=1.0))
    assert loose.key_length == loose.fit_length == 6
    assert "fit_density" not in {r.key for r in loose.rows()}
    small = cap.shortener(ShortenerAssumptions(links_per_month=1, retention_years=1))
    assert small.fit_length == 1 and small.too_short_length == 0
    assert "too_short_key_space" not in {r.key for r in small.rows()}
    _check_rows(small)


# ---------------------------------------------------------------- validation


@pytest.mark.parametrize("cls", ASSUMPTIONS)
@pytest.mark.parametrize("bad", [-1.0, 0.0, math.nan, math.inf, "10", True, None])
def test_assumptions_reject_bad_values(cls, bad) -> None:
    for f in dataclasses.fields(cls):
        rule = f.metadata["rule"]
        if bad == 0.0 and rule["inclusive"] and rule["minimum"] == 0:
            continue  # zero is allowed for this one
        with pytest.raises(ValueError, match=f.name):
            cls(**{f.name: bad})


def test_assumptions_check_upper_bounds_and_whole_numbers() -> None:
    with pytest.raises(ValueError, match="edge_hit_ratio must be less than 1"):
        TypeaheadAssumptions(edge_hit_ratio=1.0)
    with pytest.raises(ValueError, match="max_key_density must be at most 1"):
        ShortenerAssumptions(max_key_density=1.5)
    with pytest.raises(ValueError, match="replicas must be a whole number"):
        ShortenerAssumptions(replicas=2.5)
    with pytest.raises(ValueError, match="headroom_factor must be at least 1"):
        TypeaheadAssumptions(headroom_factor=0.5)
    assert ShortenerAssumptions(replicas=3.0).replicas == 3
    assert isinstance(ShortenerAssumptions(replicas=np.int64(2)).replicas, int)
    assert ProximityAssumptions(reviews_per_day=0).reviews_per_day == 0


def test_assumptions_are_frozen() -> None:
    a = ShortenerAssumptions()
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.replicas = 5  # type: ignore[misc]


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: cap.keyspace(-1), "length"),
        (lambda: cap.keyspace(3, alphabet=1), "alphabet"),
        (lambda: cap.keyspace(2.5), "length"),
        (lambda: cap.density(-5, 6), "count"),
        (lambda: cap.key_length_for(10, max_density=0), "max_density"),
        (lambda: cap.key_length_for(math.nan), "count"),
        (lambda: cap.bloom_bits_per_item(0), "fp_rate"),
        (lambda: cap.bloom_bits_per_item(1), "fp_rate"),
        (lambda: cap.bloom_size_bytes(-1, 0.01), "n"),
        (lambda: cap.bloom_false_positive_rate(9.6, 0), "hashes"),
        (lambda: cap.fanout_tail_probability(1.5, 10), "p_slow"),
        (lambda: cap.fanout_tail_probability(0.1, 0), "shards"),
        (lambda: cap.decay_factor(0, 1), "half_life"),
        (lambda: cap.decay_factor(7, -1), "interval"),
        (lambda: cap.steady_state_score(10, 1.0), "factor"),
        (lambda: cap.decay_series(10, 0.9, -1), "days"),
        (lambda: cap.littles_law(-1, 2), "rate"),
        (lambda: cap.keyspace_fill_series(1e9, 0), "years"),
        (lambda: cap.keyspace_fill_series(1e9, 5, lengths=()), "lengths"),
        (lambda: cap.plan("teleporter"), "unknown system"),
        (lambda: cap.plan("shortener", warp_factor=9), "warp_factor"),
        (lambda: cap.validate_assumption(ShortenerAssumptions, "nope", 1), "nope"),
    ],
)
def test_helpers_reject_bad_input(call, message) -> None:
    with pytest.raises(ValueError, match=message):
        call()
