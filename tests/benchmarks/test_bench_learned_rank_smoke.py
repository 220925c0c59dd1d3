"""``benchmarks/bench_learned_rank.py`` at its quick size, so it does not rot (no timings)."""

from __future__ import annotations

import pytest

from benchmarks import bench_learned_rank


def test_the_benchmark_runs_and_prints_its_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert bench_learned_rank.main(["--quick"]) == 0
    out = capsys.readouterr().out
    assert "Query latency (ms)" in out
    for way in ("hand", "hand@50", "learned"):
        assert f"\n{way} " in out
