"""Without the etcd binary the drills skip — unless ``LOOKUP_REQUIRE_SERVERS=1`` (CI), then
they fail, so a CI machine without etcd cannot pass by silently skipping them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from lookup import settings

ROOT = Path(__file__).resolve().parents[2]
ONE_DRILL = "tests/blocks/test_workers.py::test_ids_never_run_past_the_reservation"


def _run(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs", ONE_DRILL],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env=settings.child_environ(LOOKUP_ETCD_BIN=str(tmp_path / "no-etcd"), **env),
    )


def test_missing_etcd_skips_locally(tmp_path: Path) -> None:
    done = _run(tmp_path, LOOKUP_REQUIRE_SERVERS="0")
    assert done.returncode == 0, done.stdout
    assert "1 skipped" in done.stdout and "etcd-server" in done.stdout


def test_missing_etcd_fails_when_servers_are_required(tmp_path: Path) -> None:
    done = _run(tmp_path, LOOKUP_REQUIRE_SERVERS="1")
    assert done.returncode == 1, done.stdout
    assert "LOOKUP_REQUIRE_SERVERS" in done.stdout
