"""``benchmarks/bench_scaleout_store.py`` at a toy size, so its code paths do not rot.

No timing assertions: only that every configuration starts its real API processes (the
PostgreSQL ones on a throw-away cluster), takes creates, stops, and that the report has
its shape.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks import bench_scaleout_store
from benchmarks.common import wrk_path
from lookup.kit.pgserver import postgres_available


@pytest.mark.skipif(wrk_path() is None, reason="wrk is not installed (apt-get install wrk)")
@pytest.mark.skipif(not postgres_available(), reason="PostgreSQL is not installed")
def test_the_benchmark_runs_end_to_end_at_toy_size(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "scaleout.json"
    argv = ["--seconds", "1", "--runs", "1", "--connections", "4", "--json", str(out)]
    assert bench_scaleout_store.main(argv) == 0
    figures = json.loads(out.read_text())
    assert list(figures) == ["embedded × 1", "PostgreSQL × 1", "PostgreSQL × 2"]
    for row in figures.values():
        assert row["created"] > 0 and row["creates_per_s"] > 0 and len(row["runs"]) == 1
    assert figures["embedded × 1"]["ratio"] == 1.0
    assert figures["PostgreSQL × 2"]["processes"] == 2
    text = capsys.readouterr().out
    assert "× embedded" in text and "PostgreSQL × 2" in text
