"""One server per embedded data directory (``<data-dir>/server.lock``, kit/serverlock.py).

Two servers over one embedded data directory each cached links the other changed: a
redirect stayed stale for up to a minute after an acknowledged PATCH or DELETE. Now the
second ``lookup serve`` (or a second ``uvicorn --workers`` worker) stops at once with one
line naming the first; a killed server (``kill -9``) never blocks the next; servers whose
state is shared (Redis cache tier, PostgreSQL links) still share one directory.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import psutil
import pytest

from lookup.kit.serverlock import LOCK_FILE, ServerLock, ServerLockRefused, holders, shares_state
from tests.conftest import free_port, lookup_serve, wait_http

ROOT = Path(__file__).resolve().parents[1]


def _env(**extra: str) -> dict[str, str]:
    env = {**os.environ, "LOOKUP_SHORTENER_ANALYTICS": "0", **extra}
    for name in ("LOOKUP_SHORTENER_STORE", "LOOKUP_CACHE_URL", "LOOKUP_PUBLIC_URL",
                 "LOOKUP_DATA_DIR"):  # fmt: skip
        if name not in extra:
            env.pop(name, None)
    return env


@contextmanager
def serving(data_dir: Path, **env: str) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    """A real ``lookup serve`` over ``data_dir`` that answers; stopped (with its children) after."""
    port = free_port()
    proc = lookup_serve(data_dir, port, env=_env(**env), stdout=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_http(f"{url}/healthz", proc, timeout=120)
        yield proc, url
    finally:
        _stop_tree(proc)


def _stop_tree(proc: subprocess.Popen[bytes], sig: int = signal.SIGTERM) -> None:
    try:
        children = psutil.Process(proc.pid).children(recursive=True)
    except psutil.NoSuchProcess:
        children = []
    if proc.poll() is None:
        proc.send_signal(sig)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    for child in children:  # e.g. the click aggregator of a server killed with -9
        try:
            child.kill()
        except psutil.NoSuchProcess:
            pass


def _second_serve(data_dir: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "lookup.cli", "serve", "--port", str(free_port()),
         "--data-dir", str(data_dir)],
        cwd=ROOT, env=_env(**env), capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def test_a_second_server_on_an_embedded_data_directory_stops_with_one_clear_line(
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    with serving(data) as (first, url):
        done = _second_serve(data)
        assert done.returncode == 2, (done.returncode, done.stderr[-2000:])
        line = done.stderr.strip()
        assert "\n" not in line and "Traceback" not in done.stderr, done.stderr
        assert f"pid {first.pid}" in line and url in line and str(data) in line, line
        assert "--data-dir" in line and "PostgreSQL/Redis" in line, line
        assert "lookup API on" not in done.stdout  # it never started serving
        assert httpx.get(f"{url}/healthz", timeout=10).status_code == 200  # the first goes on
        [holder] = holders(data)
        assert (holder.pid, holder.url, holder.shared) == (first.pid, url, False)

        # `lookup up` (make run) over the same directory stops before starting anything
        up = subprocess.run(
            [sys.executable, "-m", "lookup.cli", "up", "--skip-datasets", "--no-sandbox",
             "--data-dir", str(data), "--api-port", str(free_port()),
             "--app-port", str(free_port())],
            cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert up.returncode == 2 and f"pid {first.pid}" in up.stderr, up.stderr[-2000:]

        # commands that only read are never blocked
        listed = subprocess.run(
            [sys.executable, "-m", "lookup.cli", "datasets", "list", "--data-dir", str(data)],
            cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert listed.returncode == 0, listed.stderr[-2000:]


def test_a_server_killed_with_sigkill_does_not_block_the_next(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with serving(data) as (first, _url):
        _stop_tree(first, signal.SIGKILL)
        assert first.returncode == -signal.SIGKILL
        with serving(data) as (second, url):  # the kernel let go of the dead server's lock
            assert httpx.get(f"{url}/healthz", timeout=10).status_code == 200
            assert [h.pid for h in holders(data)] == [second.pid]


def test_workers_of_one_uvicorn_over_an_embedded_data_directory_are_refused(
    tmp_path: Path,
) -> None:
    """``uvicorn --workers 2``: each worker would keep its own link cache (measured on the
    old code: 53 of 80 redirects after an acknowledged PATCH still went to the old URL), so
    the second worker stops with the start-up failure code and uvicorn stops, not loops."""
    data = tmp_path / "data"
    done = subprocess.run(
        [sys.executable, "-m", "uvicorn", "--factory", "lookup.server:app_factory",
         "--port", str(free_port()), "--workers", "2", "--no-proxy-headers"],
        cwd=ROOT, env=_env(LOOKUP_DATA_DIR=str(data)), capture_output=True, text=True,
        timeout=240,
    )  # fmt: skip
    assert done.stderr.count("several worker processes of one server") == 1, done.stderr[-3000:]
    assert "failed to start, stopping the parent process" in done.stderr
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    assert holders(data) == []  # nothing is left holding the directory


def test_servers_that_share_state_through_redis_share_the_data_directory(
    tmp_path: Path, redis_server: Any
) -> None:
    data = tmp_path / "data"
    shared = {"LOOKUP_CACHE_URL": redis_server.url}
    with serving(data, **shared) as (a, url_a), serving(data, **shared) as (b, url_b):
        assert {h.pid for h in holders(data)} == {a.pid, b.pid}
        assert all(h.shared for h in holders(data))
        # an embedded server cannot join them: it would not hear their invalidations
        done = _second_serve(data)
        assert done.returncode == 2 and "a fleet's server is already serving" in done.stderr
        for url in (url_a, url_b):
            assert httpx.get(f"{url}/healthz", timeout=10).status_code == 200

    # uvicorn --workers 2 over shared state starts both workers and serves
    port = free_port()
    workers = subprocess.Popen(
        [sys.executable, "-m", "uvicorn", "--factory", "lookup.server:app_factory",
         "--port", str(port), "--workers", "2", "--no-proxy-headers"],
        cwd=ROOT, env=_env(LOOKUP_DATA_DIR=str(data), **shared),
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        wait_http(f"http://127.0.0.1:{port}/healthz", workers, timeout=180)
        deadline = time.monotonic() + 120
        while len(holders(data)) < 2 and time.monotonic() < deadline:
            time.sleep(0.2)  # the other worker may still be loading
        found = holders(data)
        assert len(found) == 2 and all(h.shared for h in found)
        assert {h.ppid for h in found} == {workers.pid}  # both workers of this uvicorn
    finally:
        _stop_tree(workers)


def test_a_fleet_with_the_links_in_sqlite_and_a_redis_cache_runs_two_workers(
    tmp_path: Path,
) -> None:
    """``lookup up --backend redis --workers 2``: the links stay in the data directory's
    SQLite, and the Redis cache tier tells both workers of every change, so they share it."""
    from tests.conftest import _need_redis
    from tests.test_fleet import _stop as stop_up
    from tests.test_fleet import _up, _wait_state

    _need_redis()
    proc = _up(tmp_path, "--backend", "redis", "--workers", "2", "--no-dashboard")
    try:
        state = _wait_state(tmp_path, proc)
        workers = [w["url"] for w in state["workers"]]
        assert len(workers) == 2
        for url in workers:
            assert httpx.get(f"{url}/healthz", timeout=10).status_code == 200
        assert len(holders(tmp_path)) == 2 and all(h.shared for h in holders(tmp_path))
    except BaseException:
        stop_up(proc, signal.SIGTERM)
        raise
    assert stop_up(proc, signal.SIGTERM) == 0


def test_a_fleet_without_shared_state_refuses_several_workers_before_starting(
    tmp_path: Path,
) -> None:
    from lookup.fleet import FleetError, ServingFleet

    fleet = ServingFleet(tmp_path, ("etcd",), workers=2, dashboard=False, quiet=True)
    try:
        with pytest.raises(FleetError, match="--workers 1"):
            fleet.start()
        assert fleet.etcd is None and fleet.procs == []  # nothing was started
    finally:
        fleet.stop()
    assert ServingFleet(tmp_path, ("redis",), workers=2).shares_state()
    assert ServingFleet(tmp_path, ("postgres",), workers=2).shares_state()


# ----------------------------------------------------------------------- the lock itself


def test_the_lock_is_exclusive_for_embedded_state_and_shared_for_a_fleet(tmp_path: Path) -> None:
    with ServerLock(tmp_path, url="http://127.0.0.1:1") as first:
        assert first.held and (tmp_path / LOCK_FILE).exists()
        assert ServerLock(tmp_path).refusal() is not None
        with pytest.raises(ServerLockRefused):
            ServerLock(tmp_path).acquire()
        with pytest.raises(ServerLockRefused, match="embedded lookup server"):
            ServerLock(tmp_path, shared=True).acquire()
    assert ServerLock(tmp_path).refusal() is None  # released
    with ServerLock(tmp_path, shared=True), ServerLock(tmp_path, shared=True):
        assert ServerLock(tmp_path, shared=True).refusal() is None
        with pytest.raises(ServerLockRefused):
            ServerLock(tmp_path).acquire()
    with ServerLock(tmp_path):
        pass  # every shared holder gone: embedded again


def test_a_lock_holder_killed_with_sigkill_leaves_the_lock_free(tmp_path: Path) -> None:
    code = (
        "import sys, time; from lookup.kit.serverlock import ServerLock; "
        "ServerLock(sys.argv[1], url='http://127.0.0.1:9').acquire(); "
        "print('held', flush=True); time.sleep(600)"
    )
    proc = subprocess.Popen([sys.executable, "-c", code, str(tmp_path)], cwd=ROOT,
                            stdout=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
        refusal = ServerLock(tmp_path).refusal()
        assert refusal is not None and f"pid {proc.pid}, http://127.0.0.1:9" in refusal
        proc.kill()
        proc.wait(timeout=20)
        with ServerLock(tmp_path):
            assert holders(tmp_path) == []  # the dead holder's line is not named
    finally:
        if proc.poll() is None:
            proc.kill()


@pytest.mark.parametrize(
    ("store", "cache", "shared"),
    [
        ("", "", False),
        ("sqlite:///x/links.sqlite3", "memory:", False),
        ("", "none:", False),
        ("postgresql://app@db/links", "", True),
        ("postgres://app@db/links", "", True),
        ("", "redis://127.0.0.1:6379/0", True),
        ("sqlite:///x/links.sqlite3", "redis://127.0.0.1:6379/0", True),
    ],
)
def test_which_state_may_be_shared(store: str, cache: str, shared: bool) -> None:
    assert shares_state(store, cache) is shared
