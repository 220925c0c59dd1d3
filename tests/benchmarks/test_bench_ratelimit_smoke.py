"""``benchmarks/bench_ratelimit.py`` at a toy size, so its code paths do not rot.

No timing assertions: only that every algorithm and both anchors are measured, in-process
and (when redis-server is installed) on Redis, and the report has its shape.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks import bench_ratelimit
from lookup.kit.ratelimit import ALGORITHM_NAMES
from lookup.kit.redisserver import redis_available


def test_the_benchmark_runs_end_to_end_at_toy_size(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "ratelimit.json"
    code = bench_ratelimit.main(
        [
            "--decisions",
            "300",
            "--redis-decisions",
            "30",
            "--runs",
            "1",
            "--json",
            str(out),
            "--memory",
            "50",
        ]  # fmt: skip
    )
    assert code == 0
    figures = json.loads(out.read_text())
    measured = {*ALGORITHM_NAMES, bench_ratelimit.HYBRID}
    assert set(figures["in_process"]) == {bench_ratelimit.DICT_ANCHOR, *measured}
    assert all(r > 0 for r in figures["in_process"].values())
    if redis_available():
        assert set(figures["redis"]) == {bench_ratelimit.INCR_ANCHOR, *measured}
        assert all(r > 0 for r in figures["redis"].values())
        assert [r["algorithm"] for r in figures["memory"]["redis"]] == list(ALGORITHM_NAMES)
    assert [r["algorithm"] for r in figures["memory"]["in_process"]] == list(ALGORITHM_NAMES)
    assert all(r["bytes per identity"] > 0 for r in figures["memory"]["in_process"])
    assert "time × the anchor's" in capsys.readouterr().out
