"""``benchmarks/bench_kv.py`` at a toy size, so its code paths do not rot.

No timing assertions: only that the KV cluster and the Redis anchor are both driven
without errors, every layer and ring rate is measured, and the report has its shape.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks import bench_kv
from lookup import settings
from lookup.kit.redisserver import redis_available


def test_the_benchmark_runs_end_to_end_at_toy_size(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    if not redis_available():
        if settings.get("require_servers"):
            pytest.fail("redis-server is missing and LOOKUP_REQUIRE_SERVERS is set")
        pytest.skip("redis-server is missing (the anchor)")
    out = tmp_path / "kv.json"
    code = bench_kv.main(
        [
            "--seconds",
            "0.5",
            "--runs",
            "1",
            "--samples",
            "5",
            "--lookups",
            "500",
            "--concurrency",
            "4",
            "--json",
            str(out),
        ]
    )
    assert code == 0
    figures = json.loads(out.read_text())
    assert figures["kv"]["ops/s"] > 0 and figures["redis"]["ops/s"] > 0
    assert figures["kv"]["errors"] == 0 and figures["redis"]["errors"] == 0
    assert len(figures["layers"]) == 6 and all(v > 0 for v in figures["layers"].values())
    assert set(figures["ring"]) == {
        "ours node_for",
        "uhashring get_node (anchor)",
        "ours preference_list(3)",
        "uhashring range(size=3) (anchor)",
    }
    text = capsys.readouterr().out
    assert "Where the time goes" in text and "× uhashring" in text
