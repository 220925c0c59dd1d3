"""``benchmarks/bench_crawler_controls.py`` at a toy size, so its code paths do not rot.

No timing assertions: every case runs to an empty frontier and the report has its shape.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks import bench_crawler_controls as bench


def test_the_benchmark_runs_end_to_end_at_toy_size(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "controls.json"
    assert bench.main(["--hosts", "5", "--urls", "3", "--runs", "1", "--json", str(out)]) == 0
    figures = json.loads(out.read_text())
    assert figures["ratio_to_anchor"]["plain frontier (anchor)"] == 1.0
    assert all(v > 0 for v in figures["leases_per_second"].values())
    assert set(figures["admission_check_us"]) == {"none issued", "80 in force"}
    assert "× anchor" in capsys.readouterr().out


def test_busy_controls_never_hold_the_benchmark_hosts() -> None:
    """The 80 controls name other hosts: the busy case leases every URL, as the anchor does."""
    state = bench._busy_state()
    assert len(state.blocked_hosts) == len(state.paused_hosts) == 20
    f, clock = bench._frontier(3, 2, state)
    leased = 0
    while len(f):
        clock.t += 1.0
        while (lease := f.lease()) is not None:
            f.complete(lease, 0.0)
            leased += 1
    assert leased == 3 * 2  # robots.txt already known: every page, none held
