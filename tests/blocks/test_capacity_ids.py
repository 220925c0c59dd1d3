"""The seed's Snowflake figures, from the capacity planner, against the arithmetic written out."""

from __future__ import annotations

from lookup import capacity
from lookup.blocks.ids import SEED_LAYOUT


def test_the_seeds_figures() -> None:
    p = capacity.ids()
    assert p.ids_per_ms_per_worker == 4096 == SEED_LAYOUT.max_sequence + 1
    assert p.workers == 1024 == SEED_LAYOUT.max_worker + 1
    assert p.ids_per_ms_fleet == 4096 * 1024 == 4_194_304  # "≈ 4.2M ids per ms fleet-wide"
    assert p.ids_per_s_fleet == 4_194_304_000
    assert 69 < p.range_years < 70  # "~69 years of range"
    assert p.range_years == (1 << 41) / (1000 * 86_400 * 365)
    assert p.repartition_workers == 4096 and p.repartition_sequence_bits == 10
    assert p.repartition_ids_per_ms_per_worker == 1024
    assert p.repartition_ids_per_ms_fleet == p.ids_per_ms_fleet


def test_the_planner_knows_ids_by_name() -> None:
    p = capacity.plan("ids", worker_bits=8, sequence_bits=14, repartition_worker_bits=11)
    assert p.workers == 256 and p.ids_per_ms_per_worker == 16_384
    assert p.repartition_sequence_bits == 11
    assert "leased" in p.driver()
    assert [r.key for r in p.rows()][:3] == ["ids_per_ms_per_worker", "workers", "ids_per_ms_fleet"]
