"""The Bloom filter against a set oracle and against its own theory."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lookup.kit.bloom import BloomFilter, optimal_size


def test_sizing_matches_the_textbook_formula() -> None:
    m, k = optimal_size(1_000_000, 0.01)
    # ~9.585 bits per item and 7 hashes at 1 %.
    assert m == math.ceil(-1_000_000 * math.log(0.01) / math.log(2) ** 2)
    assert 9.5 < m / 1_000_000 < 9.7
    assert k == 7


@pytest.mark.parametrize("capacity,fp", [(0, 0.01), (10, 0.0), (10, 1.0), (-5, 0.5)])
def test_bad_sizes_are_rejected(capacity: int, fp: float) -> None:
    with pytest.raises(ValueError):
        BloomFilter(capacity, fp)


@pytest.mark.parametrize("fp_rate", [0.1, 0.01, 0.001])
def test_measured_false_positive_rate_is_close_to_theory(fp_rate: float) -> None:
    n = 20_000
    bloom = BloomFilter(n, fp_rate)
    bloom.update(f"http://host{i % 97}.test/page/{i}" for i in range(n))
    probes = 200_000
    false_pos = sum(
        bloom.might_contain(f"http://other{i % 89}.test/item/{i}") for i in range(probes)
    )
    measured = false_pos / probes
    theory = bloom.expected_fp_rate(n)
    # Theory at capacity is close to the rate asked for...
    assert theory == pytest.approx(fp_rate, rel=0.15)
    # ...and the measured rate is within 5 binomial standard deviations (+10 % model error).
    sd = math.sqrt(theory * (1 - theory) / probes)
    assert abs(measured - theory) <= 5 * sd + 0.1 * theory


def test_overfilling_degrades_as_predicted() -> None:
    bloom = BloomFilter(1_000, 0.01)
    bloom.update(str(i) for i in range(5_000))
    probes = 50_000
    measured = sum(bloom.might_contain(f"x{i}") for i in range(probes)) / probes
    assert measured > 0.1  # far past the 1 % it was sized for
    assert measured == pytest.approx(bloom.expected_fp_rate(5_000), rel=0.15)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(max_size=30), max_size=200), st.lists(st.text(max_size=30), max_size=100))
def test_against_a_set_oracle(added: list[str], probes: list[str]) -> None:
    bloom = BloomFilter(64, 0.05)
    oracle: set[str] = set()
    for item in added:
        was_new = bloom.add(item)
        if was_new:
            # "Definitely new" is never wrong.
            assert item not in oracle
        oracle.add(item)
    for item in added:
        assert bloom.might_contain(item)  # no false negatives, ever
    for item in probes:
        if not bloom.might_contain(item):
            assert item not in oracle
    assert len(bloom) <= len(oracle)


def test_bytes_and_str_are_the_same_item() -> None:
    bloom = BloomFilter(10)
    bloom.add("café")
    assert "café".encode() in bloom
    assert bloom.bits_set() <= bloom.num_hashes
