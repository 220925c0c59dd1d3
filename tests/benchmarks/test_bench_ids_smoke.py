"""``benchmarks/bench_ids.py`` at a toy size, so its code paths do not rot.

No timing assertions: only that every generator runs, every kind's B-tree is built and
measured, the "newest 100" answers are right, and the report has its shape.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks import bench_ids
from lookup.blocks.ids import ID_KINDS


def test_the_benchmark_runs_end_to_end_at_toy_size(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "ids.json"
    code = bench_ids.main(["--rows", "600", "--rate-ids", "300", "--runs", "1", "--json", str(out)])
    assert code == 0
    figures = json.loads(out.read_text())
    assert set(figures["rates"]) >= {"uuid.uuid4() (anchor)", "uuid6.uuid7()", "python-ulid ULID()"}
    assert all(r > 0 for r in figures["rates"].values())
    kinds = [r["kind"] for r in figures["sqlite"]["rows"]]
    assert kinds == list(ID_KINDS)
    assert all(r["newest_correct"] for r in figures["sqlite"]["rows"])
    assert all(0 < r["leaf_density"] <= 1 for r in figures["sqlite"]["rows"])
    anchor = next(r for r in figures["sqlite"]["ratios"] if r["kind"] == "sequential int")
    assert anchor["pages ×"] == 1.0
    if bench_ids.postgres_bin() is not None:
        pg = figures["postgres"]
        assert set(pg) == set(ID_KINDS)
        assert all(0 < v["leaf_density"] <= 1 and v["leaf_pages"] > 0 for v in pg.values())
    text = capsys.readouterr().out
    assert "× uuid4()" in text and "leaf density" in text
