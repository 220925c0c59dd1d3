"""``benchmarks/bench_scaleout_cache.py`` at a toy size, so its code paths do not rot.

No timing assertions: only that every part runs against a real redis-server (and real
API processes), that the layers it claims to time are the ones that answered, and that
the report has its shape.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from benchmarks import bench_scaleout_cache
from benchmarks.common import wrk_path


def test_miss_path_and_invalidation_at_toy_size(
    tmp_path: Path, redis_server: Any, postgres_db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "scaleout.json"
    code = bench_scaleout_cache.main(
        ["--only", "miss,invalidation", "--samples", "20", "--retargets", "3",
         "--redis", redis_server.url, "--store", postgres_db, "--json", str(out)]
    )  # fmt: skip
    assert code == 0
    figures = json.loads(out.read_text())
    miss = figures["miss"]
    assert {
        "L1 hit", "Redis hit (L1 dropped)", "PostgreSQL via the tier (L1 + Redis dropped)",
        "PostgreSQL, no tier (L1 dropped)", "embedded SQLite miss (no tier, L1 dropped)",
    } <= set(miss)  # fmt: skip
    assert all(v["n"] == 20 for k, v in miss.items() if k not in ("stats", "store"))
    assert miss["stats"]["shared"] >= 20 and miss["stats"]["store"] >= 20  # each layer answered
    assert miss["store"].startswith("postgresql://")  # the miss path read PostgreSQL
    assert figures["invalidation"]["retarget seen on B"]["n"] == 3
    assert figures["invalidation"]["heard"]["keys"] >= 3  # B heard A's invalidations
    text = capsys.readouterr().out
    assert "One resolve, by the layer it stops at" in text and "Invalidation across" in text


@pytest.mark.skipif(wrk_path() is None, reason="wrk is not installed (apt-get install wrk)")
def test_hot_keys_at_toy_size(tmp_path: Path, redis_server: Any) -> None:
    out = tmp_path / "hot.json"
    code = bench_scaleout_cache.main(
        ["--only", "hot", "--seconds", "1", "--runs", "1", "--keys", "20",
         "--redis", redis_server.url, "--json", str(out)]
    )  # fmt: skip
    assert code == 0
    hot = json.loads(out.read_text())["hot"]
    assert hot["embedded"]["rate"] > 0 and hot["redis tier"]["rate"] > 0 and hot["ratio"] > 0
    assert hot["redis tier"]["layers"]["l1"] > 0 and hot["redis tier"]["layers"]["store"] == 0
