"""The seed's cache figures from the capacity planner, against the arithmetic written out."""

from __future__ import annotations

import pytest

from lookup import capacity


def test_the_seeds_figures() -> None:
    p = capacity.cache()
    assert p.store_reads_per_s == pytest.approx(200_000 * 0.05) == pytest.approx(10_000)
    assert p.store_reads_lower_per_s == pytest.approx(20_000)
    assert p.miss_rate_ratio == pytest.approx(2.0)  # five points of hit rate double the load
    assert (p.primaries, p.primaries_lower) == (1, 2)
    assert p.node_loss_reads_per_s == pytest.approx(10_000 + 190_000 / 10)
    assert p.cold_reads_per_s == 200_000 and p.cold_ratio == pytest.approx(20.0)
    assert "95%" in p.driver() and "10,000/s" in p.driver()


def test_by_name_and_bad_input() -> None:
    p = capacity.plan("cache", hit_rate=0.99, requests_per_s=1e6)
    assert p.store_reads_per_s == pytest.approx(10_000)
    with pytest.raises(ValueError):
        capacity.plan("cache", hit_rate=1.5)
    with pytest.raises(ValueError, match="unknown cache assumption"):
        capacity.plan("cache", hits=3)
