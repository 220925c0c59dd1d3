"""``lookup up --backend …``: a real fleet (PostgreSQL, redis-server, two API processes,
aggregators) started as a subprocess, driven over HTTP, stopped by a signal — and after
the signal no child is alive and no port listens."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest

from lookup.fleet import ServingFleet, parse_backends, read_state, redact, state_path

ROOT = Path(__file__).resolve().parents[1]


def test_backends_parse_and_unknown_ones_are_refused() -> None:
    assert parse_backends("postgres,redis") == ("postgres", "redis")
    assert parse_backends(" Redis ") == ("redis",)
    assert parse_backends("redis,redis") == ("redis",)
    for bad in ("mysql", "", "postgres,kafka"):
        with pytest.raises(ValueError):
            parse_backends(bad)


def test_redact_hides_a_password_only() -> None:
    assert redact("postgresql://app:s3cret@db:5432/links") == "postgresql://app:***@db:5432/links"
    assert redact("redis://127.0.0.1:6379/0") == "redis://127.0.0.1:6379/0"


def test_the_typeahead_blocklist_goes_where_the_store_goes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("LOOKUP_TYPEAHEAD_BLOCKLIST", raising=False)
    store = "postgresql://postgres@127.0.0.1:5999/lookup"
    on_pg = ServingFleet(tmp_path, ("postgres",), urls={"store_url": store}).environment()
    assert on_pg["LOOKUP_TYPEAHEAD_BLOCKLIST"] == store
    assert "LOOKUP_TYPEAHEAD_BLOCKLIST" not in ServingFleet(tmp_path, ("redis",)).environment()
    monkeypatch.setenv("LOOKUP_TYPEAHEAD_BLOCKLIST", "postgresql://elsewhere/db")
    named = ServingFleet(tmp_path, ("postgres",), urls={"store_url": store}).environment()
    assert named["LOOKUP_TYPEAHEAD_BLOCKLIST"] == "postgresql://elsewhere/db"


def test_a_redis_fleet_shares_searches_and_trending(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("LOOKUP_TYPEAHEAD_SEARCHES_URL", raising=False)
    clicks = "redis://127.0.0.1:6999/0?stream=clicks"
    urls = {"clicks_url": clicks, "cache_url": clicks, "limits_url": clicks}
    env = ServingFleet(tmp_path, ("redis",), urls=urls).environment()
    assert env["LOOKUP_TYPEAHEAD_SEARCHES_URL"] == "redis://127.0.0.1:6999/0"  # not the clicks'
    store = {"store_url": "postgresql://postgres@127.0.0.1:5999/lookup"}
    on_pg = ServingFleet(tmp_path, ("postgres",), urls=store).environment()
    assert "LOOKUP_TYPEAHEAD_SEARCHES_URL" not in on_pg


def test_no_state_without_a_running_supervisor(tmp_path: Path) -> None:
    assert read_state(tmp_path) is None
    state_path(tmp_path).parent.mkdir(parents=True)
    state_path(tmp_path).write_text(json.dumps({"pid": 2**22 + 12345}))  # no such process
    assert read_state(tmp_path) is None


# ------------------------------------------------------------------------------ real fleet


@contextmanager
def reachable_dir() -> Iterator[Path]:
    """A data directory the ``postgres`` user can reach (tmp_path's parents are 0700)."""
    path = Path(tempfile.mkdtemp(prefix="lookup-fleet-"))
    os.chmod(path, 0o755)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def data_dir() -> Iterator[Path]:
    with reachable_dir() as path:
        yield path


@contextmanager
def running_fleet(data_dir: Path, *args: str, dashboard: bool = False) -> Iterator[dict[str, Any]]:
    """``lookup up ARGS`` over ``data_dir`` (no sandbox; a dashboard only if asked); yields
    its state, stopped with SIGINT after."""
    proc = _up(data_dir, *args, *([] if dashboard else ["--no-dashboard"]))
    try:
        yield _wait_state(data_dir, proc)
    finally:
        _stop(proc, signal.SIGINT)


def _up(data_dir: Path, *args: str) -> subprocess.Popen[bytes]:
    # The fleet's output goes to a file: a pipe nobody reads would fill up and block every
    # child that logs (an outage drill logs a lot).
    with open(data_dir / "up.log", "wb") as log:
        return subprocess.Popen(
            [sys.executable, "-m", "lookup.cli", "up", *args, "--api-port", "0",
             "--app-port", "0", "--no-sandbox", "--skip-datasets", "--data-dir", str(data_dir)],
            cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
        )  # fmt: skip


def _wait_state(data_dir: Path, proc: subprocess.Popen[bytes], timeout: float = 120) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            out = (data_dir / "up.log").read_text(errors="replace")
            raise AssertionError(f"lookup up exited with {proc.returncode}:\n{out[-3000:]}")
        state = read_state(data_dir)
        if state is not None:
            return state
        time.sleep(0.2)
    raise AssertionError("the fleet did not come up")


def _postmaster_pid(data_dir: Path) -> int:
    return int((data_dir / "servers/postgres/data/postmaster.pid").read_text().split()[0])


def _port(url: str) -> int:
    return int(url.rsplit(":", 1)[1].split("/")[0])


def _listening(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie is not running: it only waits for its parent to read its status
    stat = Path(f"/proc/{pid}/stat")
    return not (stat.exists() and stat.read_text().split(") ", 1)[1].startswith("Z"))


def _stop(proc: subprocess.Popen[bytes], signum: int) -> int:
    proc.send_signal(signum)
    try:
        return proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()


def _nothing_left(pids: list[int], ports: list[int]) -> None:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        alive = [p for p in pids if _alive(p)]
        open_ports = [p for p in ports if _listening(p)]
        if not alive and not open_ports:
            return
        time.sleep(0.2)
    raise AssertionError(f"still alive: {alive}; still listening: {open_ports}")


def _shorten(base: str, long_url: str, token: str) -> str:
    made = httpx.post(
        f"{base}/v1/links",
        json={"longUrl": long_url},
        headers={"Authorization": f"Bearer {token}"},
        timeout=10,
    )
    assert made.status_code == 201, made.text
    return str(made.json()["key"])


def _redirects(base: str, key: str) -> str | None:
    answer = httpx.get(f"{base}/{key}", timeout=10)
    assert answer.status_code == 302, (answer.status_code, answer.text[:200])
    return answer.headers.get("location")


def test_a_fleet_on_postgres_and_redis_starts_serves_and_leaves_nothing_running(
    data_dir: Path,
) -> None:
    from tests.conftest import _need_postgres, _need_redis

    _need_postgres()
    _need_redis()
    proc = _up(data_dir, "--backend", "postgres,redis", "--workers", "2", "--no-dashboard")
    try:
        state = _wait_state(data_dir, proc)
        servers: dict[str, Any] = state["servers"]
        assert servers["postgres"]["started"] and servers["redis"]["started"]
        assert servers["postgres"]["url"].startswith("postgresql://postgres@127.0.0.1:")
        workers = [w["url"] for w in state["workers"]]
        assert len(workers) == 2 and len(set(workers)) == 2
        names = [p["name"] for p in state["processes"]]
        assert {"click aggregator 1", "click aggregator 2"} <= set(names)
        postmaster = _postmaster_pid(data_dir)
        pids = [p["pid"] for p in state["processes"]] + [servers["redis"]["pid"], postmaster]
        ports = [_port(u) for u in workers] + [
            _port(servers["redis"]["url"]), _port(servers["postgres"]["url"]),
            _port(state["control"]),
        ]  # fmt: skip
        assert all(_listening(p) for p in ports)

        # one fleet: a link made through worker 1 redirects through worker 2
        token = httpx.post(f"{workers[0]}/v1/tokens", timeout=10).json()["token"]
        key = _shorten(workers[0], "https://example.org/fleet", token)
        assert _redirects(workers[1], key) == "https://example.org/fleet"
        # clicks through both workers reach the shared counts once each (the stream, two
        # aggregators in one consumer group, the counts in PostgreSQL)
        browser = {"User-Agent": "Mozilla/5.0 (X11; Linux x86_64) Chrome/124.0 Safari/537.36"}
        for i in range(9):
            assert httpx.get(f"{workers[i % 2]}/{key}", headers=browser).status_code == 302
        owner = {"Authorization": f"Bearer {token}"}
        deadline = time.monotonic() + 60
        while True:
            totals = [httpx.get(f"{w}/v1/links/{key}/stats", headers=owner, timeout=10)
                      .json()["totals"]["total"] for w in workers]  # fmt: skip
            if totals == [10, 10] or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        assert totals == [10, 10]

        # the control endpoint: the cache tier stops (admin token only) and comes back
        control = state["control"]
        token = (data_dir / "servers" / "admin.token").read_text().strip()
        assert httpx.post(f"{control}/fleet/cache/stop", timeout=10).status_code == 401
        wrong = {"Authorization": "Bearer not-the-token"}
        answer = httpx.post(f"{control}/fleet/cache/stop", headers=wrong, timeout=10)
        assert answer.status_code == 403 and answer.json()["error"] == "FORBIDDEN"
        assert httpx.post(f"{control}/fleet/nope", timeout=10).status_code == 404
        admin = {"Authorization": f"Bearer {token}"}
        stopped = httpx.post(f"{control}/fleet/cache/stop", headers=admin, timeout=30).json()
        assert stopped["running"] is False
        assert not _listening(_port(servers["redis"]["url"]))
        assert read_state(data_dir)["servers"]["redis"]["running"] is False
        for base in workers:  # redirects keep answering without the cache tier
            assert _redirects(base, key) == "https://example.org/fleet"
        assert proc.poll() is None, "a stopped cache tier is not a reason to stop the fleet"
        started = httpx.post(f"{control}/fleet/cache/start", headers=admin, timeout=30).json()
        assert started["running"] is True and _listening(_port(servers["redis"]["url"]))
        pids.append(started["pid"])
    except BaseException:
        _stop(proc, signal.SIGTERM)
        raise
    assert _stop(proc, signal.SIGINT) == 0
    _nothing_left(pids, ports)
    assert not state_path(data_dir).exists()


def test_given_urls_are_used_and_never_stopped(
    data_dir: Path, redis_server: Any, postgres_db: str
) -> None:
    url = redis_server.url
    proc = _up(
        data_dir, "--backend", "postgres,redis", "--workers", "1", "--store-url", postgres_db,
        "--cache-url", url, "--limits-url", url, "--clicks-url", url, "--no-dashboard",
    )  # fmt: skip
    try:
        state = _wait_state(data_dir, proc)
        assert state["servers"]["postgres"] == {"url": postgres_db, "started": False, "dir": None}
        assert state["servers"]["redis"]["started"] is False
        assert state["servers"]["redis"]["url"] == url
        assert not (data_dir / "servers" / "postgres").exists()
        token = (data_dir / "servers" / "admin.token").read_text().strip()
        admin = {"Authorization": f"Bearer {token}"}
        answer = httpx.post(f"{state['control']}/fleet/cache/stop", headers=admin, timeout=10)
        assert answer.status_code == 409 and answer.json()["error"] == "NOT_STARTED_HERE"
        # the typeahead hot blocklist lives in the fleet's PostgreSQL, as the shortener's
        worker = state["workers"][0]["url"]
        answer = httpx.post(f"{worker}/v1/typeahead/blocklist", json={"terms": ["Fleet Phrase"]},
                            headers=admin, timeout=30)  # fmt: skip
        assert answer.status_code == 200, answer.text
        with psycopg.connect(postgres_db) as conn:
            rows = conn.execute("SELECT term FROM typeahead_blocklist").fetchall()
        assert rows == [("fleet phrase",)]
        pids = [p["pid"] for p in state["processes"]]
        ports = [_port(w["url"]) for w in state["workers"]] + [_port(state["control"])]
    except BaseException:
        _stop(proc, signal.SIGTERM)
        raise
    assert _stop(proc, signal.SIGTERM) == 0
    _nothing_left(pids, ports)
    assert _listening(redis_server.port), "a given server is not ours to stop"


def test_redis_alone_starts_only_redis(data_dir: Path) -> None:
    from tests.conftest import _need_redis

    _need_redis()
    proc = _up(data_dir, "--backend", "redis", "--workers", "1", "--no-dashboard")
    try:
        state = _wait_state(data_dir, proc)
        assert set(state["servers"]) == {"redis"} and state["servers"]["redis"]["started"]
        pids = [p["pid"] for p in state["processes"]] + [state["servers"]["redis"]["pid"]]
        ports = [_port(state["servers"]["redis"]["url"]), _port(state["workers"][0]["url"])]
    except BaseException:
        _stop(proc, signal.SIGTERM)
        raise
    assert _stop(proc, signal.SIGTERM) == 0
    _nothing_left(pids, ports)
    assert not (data_dir / "servers" / "postgres").exists()


def test_an_unknown_backend_is_a_usage_error(data_dir: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "lookup.cli", "up", "--backend", "mysql", "--skip-datasets",
         "--data-dir", str(data_dir)],
        cwd=ROOT, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2 and "unknown backend mysql" in done.stderr


# ------------------------------------------------------------ ports from the command line


def test_make_run_fleet_passes_the_sandbox_and_control_ports() -> None:
    done = subprocess.run(
        ["make", "-n", "run-fleet", "SANDBOX_PORT=8777", "CONTROL_PORT=8778"],
        cwd=ROOT, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    line = next(x for x in done.stdout.splitlines() if "lookup up --backend" in x)
    assert "--sandbox-port 8777" in line and "--control-port 8778" in line, line


def test_lookup_up_hands_the_sandbox_and_control_ports_to_the_fleet(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import lookup.fleet as fleet_module
    from lookup import cli

    seen: dict[str, Any] = {}

    class Recorded(fleet_module.ServingFleet):
        def start(self) -> fleet_module.ServingFleet:
            seen.update(sandbox=self.sandbox_port, control=getattr(self, "control_port", None))
            raise fleet_module.FleetError("recorded, not started")

    monkeypatch.setattr(fleet_module, "ServingFleet", Recorded)
    code = cli.main([
        "up", "--backend", "redis", "--skip-datasets", "--data-dir", str(tmp_path),
        "--sandbox-port", "8777", "--control-port", "8778",
    ])  # fmt: skip
    assert code == 1 and seen == {"sandbox": 8777, "control": 8778}


def test_the_control_endpoint_listens_on_the_port_given(tmp_path: Path) -> None:
    from lookup.fleet import FleetControl, ServingFleet
    from lookup.kit.ports import free_port

    port = free_port()
    fleet = ServingFleet(tmp_path, ("redis",), control_port=port)
    control = FleetControl(fleet, port=fleet.control_port).start()
    try:
        assert control.url == f"http://127.0.0.1:{port}"
        answer = httpx.get(f"{control.url}/nope", timeout=10)
        assert answer.status_code == 404 and answer.json()["error"] == "NOT_FOUND"
    finally:
        control.stop()
