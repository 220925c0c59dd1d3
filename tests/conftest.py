"""Shared fixtures: free loopback ports, ASGI apps served in a thread, and running the real
``lookup`` command."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import settings as hypothesis_settings

from lookup.kit import ports

ROOT = Path(__file__).resolve().parents[1]

# No per-example deadline anywhere: on a loaded 2-core machine one example that stalls once
# (and not on replay) is reported by Hypothesis as a flaky failure. Speed is measured in
# benchmarks/, never by a unit test's clock.
hypothesis_settings.register_profile("suite", deadline=None)
hypothesis_settings.load_profile("suite")

# The dashboard gives up on an API call after 2 s and says the API is slow. On a loaded
# machine an in-thread API starved of the GIL can take longer; the pages' behaviour, not
# the machine's speed, is what the tests check (children, e.g. Streamlit, inherit this).
os.environ.setdefault("LOOKUP_API_TIMEOUT", "20")

# Under pytest-xdist each worker draws its loopback ports from its own share of the range
# (and so do the servers it starts, which inherit the variable): two workers never race for
# one port between choosing it and binding it.
if os.environ.get("PYTEST_XDIST_WORKER", "").startswith("gw"):
    os.environ["LOOKUP_PORT_SLOT"] = "{}/{}".format(
        int(os.environ["PYTEST_XDIST_WORKER"][2:]), os.environ["PYTEST_XDIST_WORKER_COUNT"]
    )


def shared_build(
    tmp_path_factory: pytest.TempPathFactory, name: str, build: Callable[[Path], None]
) -> Path:
    """A directory ``build`` fills once per test run, shared read-only by every worker.

    Under ``pytest -n`` each worker has a session of its own, so a session fixture that
    builds a data set would build it once per worker, on the same two cores. The first
    worker to get here builds into the run's common temporary directory under a file lock
    and marks it done; the others wait for the lock and find it built. Tests copy it to
    change it."""
    from filelock import FileLock

    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # the run's directory, above each worker's own
    target, done = root / f"shared-{name}", root / f"shared-{name}.built"
    with FileLock(f"{target}.lock"):
        if not done.exists():
            shutil.rmtree(target, ignore_errors=True)  # a build that failed half-way
            target.mkdir()
            build(target)
            done.touch()
    return target


def free_port() -> int:
    """A TCP port on 127.0.0.1 that is free right now (below the ephemeral range, never
    handed out twice: :func:`lookup.kit.ports.free_port`)."""
    return ports.free_port()


def loopback_socket() -> socket.socket:
    """A TCP socket bound to a free port on 127.0.0.1, for a server to listen on (no race
    for the port between choosing it and binding it)."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    return sock


@contextmanager
def serve_in_thread(
    app: object, sock: socket.socket | None = None, *, timeout_s: float = 30.0
) -> Iterator[str]:
    """Serve an ASGI app with uvicorn (lifespan on) in a thread on ``sock`` (a fresh
    loopback socket by default); yields its base URL and stops the server after."""
    import uvicorn

    sock = sock or loopback_socket()
    port = sock.getsockname()[1]
    server = uvicorn.Server(
        uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on")  # type: ignore[arg-type]
    )
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + timeout_s
    try:
        while not server.started:
            if not thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"the test server on port {port} did not start")
            time.sleep(0.02)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(15)
        sock.close()


def lookup_serve(data_dir: Path, port: int, **popen: Any) -> subprocess.Popen[bytes]:
    """Start the real ``lookup serve`` command on ``port`` over ``data_dir``."""
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "lookup.cli",
            "serve",
            "--port",
            str(port),
            "--data-dir",
            str(data_dir),
        ],
        cwd=ROOT,
        **popen,
    )


def wait_http(url: str, proc: subprocess.Popen | None = None, timeout: float = 60.0) -> None:
    """Wait until ``url`` answers 200, failing early if ``proc`` exits."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"{proc.args} exited with {proc.returncode} before {url} answered")
        try:
            if httpx.get(url, timeout=1.0).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise TimeoutError(f"{url} did not answer within {timeout} s")


@contextmanager
def running_lookup(
    data_dir: Path, env: dict[str, str] | None = None, timeout: float = 60.0
) -> Iterator[str]:
    """A real ``lookup serve`` over ``data_dir`` on a free loopback port (``env`` added to
    this process's environment), stopped on exit; yields its base URL."""
    port = free_port()
    popen: dict[str, Any] = {"stdout": subprocess.DEVNULL}
    if env:
        popen["env"] = {**os.environ, **env}
    proc = lookup_serve(data_dir, port, **popen)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_http(f"{url}/healthz", proc, timeout)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


@pytest.fixture
def live_api(tmp_path: Path) -> Iterator[str]:
    """A real ``lookup serve`` process on a free loopback port; yields its base URL."""
    with running_lookup(tmp_path / "data") as url:
        yield url


#: Fixtures that start a real server, and the marker a test that uses one gets.
_SERVER_FIXTURES = {
    "postgres": {"postgres_server", "postgres_db", "own_postgres"},
    "redis": {"redis_server", "own_redis"},
    "etcd": {"etcd", "own_etcd"},
}
#: Words in a module's source that say it starts servers of its own (fleets, clusters).
_SERVER_WORDS = {
    "postgres": ("PostgresServer", "postgres_server"),
    "redis": ("RedisServer", "RedisCluster", "redis_server"),
    "etcd": ("EtcdServer",),
}
#: tests/<folder> → the system marker (``pytest -m places`` runs one system's tests).
_SYSTEM_OF_FOLDER = {
    "shortener": "shortener", "typeahead": "typeahead", "geo": "places", "datasets": "places",
    "crawler": "crawler", "search": "search", "blocks": "blocks", "kit": "blocks",
    "study": "study", "app": "dashboard", "browser": "dashboard",
}  # fmt: skip


def _measured_slow() -> set[str]:
    """The node ids listed in ``tests/measured_slow.txt``."""
    path = ROOT / "tests" / "measured_slow.txt"
    lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
    return {line.strip() for line in lines if line.strip() and not line.startswith("#")}


def _module_source(item: pytest.Item, cache: dict[Path, str]) -> str:
    path = Path(str(item.path))
    if path not in cache:
        cache[path] = path.read_text(encoding="utf-8") if path.suffix == ".py" else ""
    return cache[path]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark each test by what it needs, and put the longest work first.

    Markers come from the fixtures a test uses and the servers its module starts
    (``postgres``, ``redis``, ``etcd``), from its folder (``browser``, ``notebook``, one
    per system), from its name (``drill``), and ``slow`` for all of these: ``pytest -m
    "not slow"`` is the inner loop. The notebooks and then the browser modules run first,
    so that in a parallel run no worker starts a long one when the others are done.
    """
    sources: dict[Path, str] = {}
    measured_slow = _measured_slow()
    for item in items:
        names = set(getattr(item, "fixturenames", ()))
        source = _module_source(item, sources)
        folder = Path(str(item.path)).relative_to(ROOT / "tests").parts[0]
        marks: set[str] = set()
        for marker, fixtures in _SERVER_FIXTURES.items():
            if names & fixtures or any(w in source for w in _SERVER_WORDS[marker]):
                marks.add(marker)
        if folder == "browser":
            marks.add("browser")
        if folder == "test_notebooks.py":
            marks.add("notebook")
        if "drill" in item.nodeid.lower():
            marks.add("drill")
        if marks or item.nodeid in measured_slow or item.get_closest_marker("slow"):
            marks.add("slow")
        if folder in _SYSTEM_OF_FOLDER:
            marks.add(_SYSTEM_OF_FOLDER[folder])
        for marker in sorted(marks):
            item.add_marker(getattr(pytest.mark, marker))
    items.sort(key=lambda i: 0 if i.get_closest_marker("notebook") else
               1 if i.get_closest_marker("browser") else 2)  # fmt: skip


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """A parallel run hands out whole test modules (their module fixtures — a built data
    set, a dashboard — are made once), one notebook at a time, in collection order."""
    from xdist.scheduler import LoadScopeScheduling

    class ModulesLongestFirst(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            module = nodeid.split("::", 1)[0]
            return nodeid if module == "tests/test_notebooks.py" else module

    config.option.loadscopereorder = False  # keep the order above, not by test count
    return ModulesLongestFirst(config, log)


def _need_redis() -> None:
    """Skip without the redis-server binary; fail instead under ``.ci/run``."""
    from lookup import settings
    from lookup.kit.redisserver import redis_available

    if redis_available():
        return
    where = settings.get("redis_bin")
    if settings.get("require_servers"):
        pytest.fail(f"{where} is missing and LOOKUP_REQUIRE_SERVERS is set (.ci/run)")
    pytest.skip(f"{where} is missing (apt-get install redis-server)")


@pytest.fixture(scope="session")
def redis_server() -> Iterator[Any]:
    """One throw-away redis-server for the session (free loopback port, temporary dir)."""
    _need_redis()
    from lookup.kit.redisserver import RedisServer

    with RedisServer() as server:
        yield server


@pytest.fixture
def own_redis() -> Iterator[Any]:
    """A redis-server for one test alone (for drills that stop and restart it)."""
    _need_redis()
    from lookup.kit.redisserver import RedisServer

    with RedisServer() as server:
        yield server


def _need_postgres() -> None:
    """Skip without PostgreSQL installed; fail instead under ``.ci/run``."""
    from lookup import settings
    from lookup.kit.pgserver import postgres_available

    if postgres_available():
        return
    if settings.get("require_servers"):
        pytest.fail("PostgreSQL is missing and LOOKUP_REQUIRE_SERVERS is set (.ci/run)")
    pytest.skip("PostgreSQL is missing (apt-get install postgresql)")


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[Any]:
    """One throw-away PostgreSQL cluster for the session (free loopback port, fsync off)."""
    _need_postgres()
    from lookup.kit.pgserver import PostgresServer

    with PostgresServer() as server:
        yield server


@pytest.fixture
def postgres_db(postgres_server: Any) -> Iterator[str]:
    """A new, empty database on the session's cluster for one test; its URL (dropped after)."""
    import uuid

    import psycopg

    name = f"t_{uuid.uuid4().hex[:12]}"
    admin = postgres_server.url
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    yield admin.rsplit("/", 1)[0] + f"/{name}"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def own_postgres(tmp_path: Any) -> Iterator[Any]:
    """A durable PostgreSQL cluster for one test alone (for drills that crash and restart it)."""
    _need_postgres()
    from lookup.kit.pgserver import PostgresServer

    with PostgresServer(durable=True) as server:
        yield server


def _need_etcd() -> None:
    """Skip without etcd installed; fail instead under ``.ci/run``."""
    from lookup import settings
    from lookup.kit.engines.etcdserver import etcd_available

    if etcd_available():
        return
    where = settings.get("etcd_bin")
    if settings.get("require_servers"):
        pytest.fail(f"{where} is missing and LOOKUP_REQUIRE_SERVERS is set (.ci/run)")
    pytest.skip(f"{where} is missing (apt-get install etcd-server)")


@pytest.fixture(scope="module")
def etcd() -> Iterator[Any]:
    """One throw-away etcd for a test module (free loopback ports, temporary directory)."""
    _need_etcd()
    from lookup.kit.engines.etcdserver import EtcdServer

    with EtcdServer() as server:
        yield server


@pytest.fixture
def own_etcd() -> Iterator[Any]:
    """An etcd for one test alone (for drills that freeze or stop it)."""
    _need_etcd()
    from lookup.kit.engines.etcdserver import EtcdServer

    with EtcdServer() as server:
        yield server
