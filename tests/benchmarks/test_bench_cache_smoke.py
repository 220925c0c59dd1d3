"""``benchmarks/bench_cache.py`` at a toy size, so it does not rot. No timing assertions:
only that every policy ran, and that the policies cachetools also has made the same
decisions (equal hit ratios)."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks import bench_cache


def test_the_benchmark_runs_end_to_end_at_toy_size(tmp_path: Path) -> None:
    out = tmp_path / "cache.json"
    assert bench_cache.main(["--accesses", "3000", "--runs", "1", "--json", str(out)]) == 0
    figures = json.loads(out.read_text())
    rows = {r["policy"]: r for r in figures["rows"]}
    assert set(rows) == set(bench_cache.ANCHORS)
    for name in ("LRU", "LFU", "FIFO"):
        assert rows[name]["ours_hit_ratio"] == rows[name]["anchor_hit_ratio"]
    assert all(r["ours_per_s"] > 0 and r["anchor_per_s"] > 0 for r in rows.values())
