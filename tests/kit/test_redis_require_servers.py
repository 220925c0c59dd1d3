"""Without the redis-server binary the Redis limiter tests skip — unless
``LOOKUP_REQUIRE_SERVERS=1`` (CI), then they fail instead of passing by skipping."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from lookup import settings

ROOT = Path(__file__).resolve().parents[2]
ONE_TEST = "tests/kit/test_ratelimit_redis.py::test_an_unknown_outage_policy_is_refused"


def _run(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs", ONE_TEST],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
        env=settings.child_environ(LOOKUP_REDIS_BIN=str(tmp_path / "no-redis"), **env),
    )  # fmt: skip


def test_missing_redis_skips_locally(tmp_path: Path) -> None:
    done = _run(tmp_path, LOOKUP_REQUIRE_SERVERS="0")
    assert done.returncode == 0, done.stdout
    assert "1 skipped" in done.stdout and "redis-server" in done.stdout


def test_missing_redis_fails_when_servers_are_required(tmp_path: Path) -> None:
    done = _run(tmp_path, LOOKUP_REQUIRE_SERVERS="1")
    assert done.returncode == 1, done.stdout
    assert "LOOKUP_REQUIRE_SERVERS" in done.stdout
