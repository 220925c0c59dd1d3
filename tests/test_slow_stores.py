"""A slow store freezes nothing but its own requests (issue 24, item 7).

The first two talk to a real ``lookup serve`` over a socket:

* PostgreSQL stopped under the shortener: owner-token checks wait for the pool (2 s each,
  then 503) while cached redirects and ``/healthz`` on the same process keep answering at
  once — no store call runs on the event loop;
* the places SQLite database write-locked by another connection for longer than the busy
  timeout: ``/v1/search``, ``/v1/places/area``, ``/v1/suggest``, a place's profile and
  ``/healthz`` keep answering at once, and the place write waiting for the lock gets a 503
  JSON error (``UNAVAILABLE``, ``Retry-After``) when the timeout runs out — never a 500.

The guard for the rule itself: the whole API in one process (its stores embedded, then on
PostgreSQL and Redis as a fleet runs them), every SQLite statement, PostgreSQL statement
and Redis command recorded, and a sweep of requests over every route; a store call made on
the thread of the event loop names itself and the request that made it. Then the pieces in
one process: a lock held too long is a 503 on FastAPI and fast-path routes alike (any other
database error stays a 500), and ``/healthz`` answers while a probe hangs, asking it once.

Bounds are generous (a loaded 2-core machine) but far below what a blocked loop costs: the
store waits here are 2 s (PostgreSQL's pool) and 5 s (SQLite's busy timeout) per request.
"""

from __future__ import annotations

import asyncio
import functools
import os
import shutil
import sqlite3
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import free_port, lookup_serve, wait_http
from tests.shortener.fleet import ApiProcess

ADMIN_TOKEN = "slow-stores-admin-token"
ADMIN = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
#: A hot path (a cached redirect, a search from memory) must answer within this, always.
HOT_BOUND_S = 1.5
#: /healthz waits at most LOOKUP_HEALTH_PROBE_TIMEOUT (0.5 s) for a probe, then says SLOW.
HEALTH_BOUND_S = 2.0
#: No request may take longer than this, store outage or not.
HANG_BOUND_S = 20.0
#: How long the test holds the places database's write lock (its busy timeout is 5 s).
HOLD_S = 7.0


def _timed_get(client: httpx.Client, url: str, **kw: Any) -> tuple[float, httpx.Response | None]:
    """(seconds, the answer); None when there was none within the client's timeout."""
    t0 = time.monotonic()
    try:
        resp: httpx.Response | None = client.get(url, **kw)
    except httpx.TimeoutException:
        resp = None
    return time.monotonic() - t0, resp


# -- (a) PostgreSQL stopped: the shortener's slow requests stall nobody else ---------------


def _pending(url: str, keys: list[str]) -> int:
    import psycopg

    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT COUNT(*) FROM links WHERE key = ANY(%s) AND scan_verdict = 'PENDING'", (keys,)
        ).fetchone()
    return int(row[0]) if row else len(keys)


def test_postgres_down_stalls_no_cached_redirect_nor_healthz(
    own_postgres: Any, tmp_path: Path
) -> None:
    # No Redis: copies older than 1 s are read again in the background (other workers'
    # writes go unheard), so the outage also proves those reads never hold a redirect up.
    env = {"LOOKUP_SHORTENER_STORE": own_postgres.url}
    api = ApiProcess(tmp_path / "api", env)
    try:
        api.wait_ready()
        _postgres_drill(api, own_postgres)
    finally:
        if not own_postgres.running():
            own_postgres.start()  # a clean shutdown flushes to the store
        api.stop()


def _postgres_drill(api: ApiProcess, pg: Any) -> None:
    with httpx.Client(timeout=HANG_BOUND_S) as client:
        token = client.post(f"{api.url}/v1/tokens").json()["token"]
        bearer = {"Authorization": f"Bearer {token}"}
        keys = [
            client.post(
                f"{api.url}/v1/links", json={"longUrl": f"https://example.com/slow/{i}"}
            ).json()["key"]
            for i in range(3)
        ]
        # The scanner's verdict is a change that drops the link from the cache: wait for
        # it, then resolve each link once, so the redirects below are served from memory.
        deadline = time.monotonic() + 60
        while _pending(pg.url, keys) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _pending(pg.url, keys), "the scanner never judged the links"
        for key in keys:
            assert client.get(f"{api.url}/{key}", follow_redirects=False).status_code == 302
        assert client.get(f"{api.url}/v1/links", headers=bearer).status_code == 200

    pg.stop("immediate")
    stop = threading.Event()
    owner_checks: list[tuple[float, int | None, dict[str, Any]]] = []
    lock = threading.Lock()

    def owner_checker() -> None:  # requests whose owner-token check waits on the store
        with httpx.Client(timeout=HANG_BOUND_S + 10) as client:
            while not stop.is_set():
                t0 = time.monotonic()
                try:
                    resp = client.get(f"{api.url}/v1/links", headers=bearer)
                    status, body = resp.status_code, resp.json()
                except httpx.HTTPError:
                    status, body = None, {}
                with lock:
                    owner_checks.append((time.monotonic() - t0, status, body))

    checkers = [threading.Thread(target=owner_checker) for _ in range(6)]
    for t in checkers:
        t.start()
    redirects: list[tuple[float, int | None]] = []
    health: list[tuple[float, int | None, dict[str, Any]]] = []
    try:
        time.sleep(0.5)  # every checker is waiting on the store now
        started = time.monotonic()
        with httpx.Client(timeout=HANG_BOUND_S) as client:
            while time.monotonic() - started < 6.0:
                for key in keys:
                    took, resp = _timed_get(client, f"{api.url}/{key}", follow_redirects=False)
                    redirects.append((took, resp and resp.status_code))
                took, resp = _timed_get(client, f"{api.url}/healthz")
                health.append((took, resp and resp.status_code, resp.json() if resp else {}))
                time.sleep(0.05)
    finally:
        stop.set()
        for t in checkers:
            t.join(HANG_BOUND_S + 15)

    slowest_redirect = max(t for t, _ in redirects)
    slowest_health = max(t for t, _, _ in health)
    said = sorted({str(_shortener_status(h)) for *_, h in health})
    print(
        f"\nPostgreSQL stopped: {len(owner_checks)} owner-token checks (slowest "
        f"{max(t for t, _, _ in owner_checks):.2f} s), {len(redirects)} cached redirects "
        f"(slowest {slowest_redirect:.3f} s), {len(health)} /healthz (slowest "
        f"{slowest_health:.3f} s); the shortener's probe said {said}"
    )
    assert slowest_redirect < HOT_BOUND_S, sorted(t for t, _ in redirects)[-5:]
    assert all(status == 302 for _, status in redirects)
    assert slowest_health < HEALTH_BOUND_S, sorted(t for t, _, _ in health)[-5:]
    assert all(status == 200 for _, status, _ in health)
    assert owner_checks, "no owner-token check was made"
    assert {s for _, s, _ in owner_checks} == {503}, owner_checks[:5]
    assert all(b.get("error") == "UNAVAILABLE" for _, _, b in owner_checks)
    assert max(t for t, _, _ in owner_checks) < HANG_BOUND_S
    # the probe does not pretend: the store is down, or too slow to say
    assert all(_shortener_status(h) in ("ERROR", "SLOW") for _, _, h in health), said


def _shortener_status(health: dict[str, Any]) -> Any:
    return health.get("systems", {}).get("shortener", {}).get("status")


# -- (b) the places database write-locked: reads stay fast, the write is a 503 --------------


@pytest.fixture(scope="module")
def built_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data directory with small places and typeahead data sets built."""
    from lookup.datasets import places
    from lookup.typeahead import querylog
    from lookup.typeahead.pipeline import BuildConfig, run

    data_dir = tmp_path_factory.mktemp("slow-stores") / "data"
    places.build(data_dir, count=1000, seed=11, progress=False)
    log = querylog.generate(5000, 7)
    assert run(data_dir, querylog.write(log, querylog.log_path(data_dir)), config=BuildConfig()).ok
    return data_dir


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOOKUP_")}
    env.update(LOOKUP_ADMIN_TOKEN=ADMIN_TOKEN, **extra)
    return env


@pytest.fixture
def places_api(built_dir: Path, tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """``lookup serve`` over a private copy of the built data; (its URL, the places file)."""
    from lookup.datasets.places import db_path

    data_dir = tmp_path / "data"
    shutil.copytree(built_dir, data_dir)
    port = free_port()
    log = (tmp_path / "serve.log").open("wb")
    proc = lookup_serve(data_dir, port, env=_env(), stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_http(f"{url}/healthz", proc)
        yield url, db_path(data_dir)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def _business_points(db: Path, n: int) -> list[tuple[str, float, float]]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        rows = conn.execute(
            "SELECT id, lat, lng FROM places WHERE kind = 'business' ORDER BY num LIMIT ?", (n,)
        ).fetchall()
    finally:
        conn.close()
    return [(str(r[0]), float(r[1]), float(r[2])) for r in rows]


NEW_PLACE = {"name": "Lock Wait Cafe", "lat": 12.93, "lng": 77.62, "category": "cafe"}


def test_a_write_locked_places_database_stalls_only_the_write(
    places_api: tuple[str, Path],
) -> None:
    url, db = places_api
    points = _business_points(db, 200)
    probes: list[tuple[str, dict[str, Any]]] = []
    for i, (pid, lat, lng) in enumerate(points):
        probes.append(("/v1/search", {"lat": lat, "lng": lng, "radius": 3000, "cache": "false"}))
        probes.append(("/v1/suggest", {"q": "abcdefghijklmnopqrstuvwxyz"[i % 26], "limit": 5}))
        if i % 4 == 0:
            box = {"south": lat - 0.05, "west": lng - 0.05, "north": lat + 0.05,
                   "east": lng + 0.05, "cache": "false"}  # fmt: skip
            probes.append(("/v1/places/area", box))
            probes.append((f"/v1/places/{pid}", {}))
            probes.append(("/healthz", {}))
    with httpx.Client(timeout=HANG_BOUND_S) as client:
        for path, params in probes[:5]:  # everything answers before the lock
            assert client.get(f"{url}{path}", params=params).status_code == 200, path

        locker = sqlite3.connect(db, isolation_level=None, timeout=0)
        locker.execute("BEGIN IMMEDIATE")  # another process's long write transaction
        held_at = time.monotonic()
        write: dict[str, Any] = {}

        def place_write() -> None:
            t0 = time.monotonic()
            resp = httpx.post(f"{url}/v1/places", json=NEW_PLACE, headers=ADMIN,
                              timeout=HANG_BOUND_S)  # fmt: skip
            write.update(took=time.monotonic() - t0, resp=resp)

        writer = threading.Thread(target=place_write)
        writer.start()
        answers: list[tuple[str, float, int]] = []
        try:
            time.sleep(0.3)  # the write is waiting for the lock now
            i = 0
            while time.monotonic() - held_at < HOLD_S:
                path, params = probes[i % len(probes)]
                i += 1
                took, resp = _timed_get(client, f"{url}{path}", params=params)
                answers.append((path, took, resp.status_code if resp else 0))
            writer.join(HANG_BOUND_S)
        finally:
            locker.execute("ROLLBACK")
            locker.close()
        assert not writer.is_alive(), "the place write never answered"
        after = client.post(f"{url}/v1/places", json=NEW_PLACE, headers=ADMIN)

    slowest: dict[str, float] = {}
    for path, took, _ in answers:
        kind = "/v1/places/{id}" if path.count("/") == 3 and "area" not in path else path
        slowest[kind] = max(slowest.get(kind, 0.0), took)
    resp = write["resp"]
    print(
        f"\nplaces database write-locked for {HOLD_S:.0f} s: the write answered "
        f"{resp.status_code} after {write['took']:.2f} s; {len(answers)} reads meanwhile, "
        "slowest " + ", ".join(f"{k} {v:.3f} s" for k, v in sorted(slowest.items()))
    )
    assert resp.status_code == 503, resp.text
    assert resp.headers["content-type"].startswith("application/json")
    assert resp.json()["error"] == "UNAVAILABLE", resp.json()
    assert "locked" in resp.json()["message"] or "busy" in resp.json()["message"]
    assert resp.headers.get("retry-after") == "1"
    assert write["took"] < HANG_BOUND_S
    assert {status for _, _, status in answers} == {200}, [a for a in answers if a[2] != 200][:5]
    assert len(slowest) == 5, slowest
    assert max(slowest.values()) < HOT_BOUND_S, slowest
    assert after.status_code == 201, after.text  # the lock gone, writes succeed again


# -- (c) the guard: no SQLite statement on the event loop's thread, on any route -----------


class LoopCalls:
    """Every store call (a SQLite statement, a PostgreSQL statement, a Redis command) made
    on a thread whose event loop is running — there should be none — and how many in all."""

    def __init__(self) -> None:
        self.recording = False
        self.request = ""  # the request being answered (the sweep makes one at a time)
        self.found: set[str] = set()
        self.counted: dict[str, int] = {"sqlite": 0, "postgresql": 0, "redis": 0}

    def saw(self, store: str, what: object) -> None:
        if not self.recording:
            return
        self.counted[store] += 1
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return  # a worker thread: where a store call belongs
        text = " ".join(str(what).split())[:80]
        self.found.add(f"{self.request}: {store}: {text}")

    def watch(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """Record every SQLite connection's statements, psycopg's and redis-py's calls."""
        import psycopg
        import redis

        real_connect = sqlite3.connect

        def traced_connect(*args: Any, **kwargs: Any) -> sqlite3.Connection:
            conn = real_connect(*args, **kwargs)
            conn.set_trace_callback(lambda statement: self.saw("sqlite", statement))
            return conn

        monkeypatch.setattr(sqlite3, "connect", traced_connect)
        for cls, name, store in (
            (psycopg.Cursor, "execute", "postgresql"),
            (psycopg.Cursor, "executemany", "postgresql"),
            (redis.client.Redis, "execute_command", "redis"),
            (redis.client.Pipeline, "execute", "redis"),
        ):
            monkeypatch.setattr(cls, name, self._watched(getattr(cls, name), store))

    def _watched(self, method: Any, store: str) -> Any:
        @functools.wraps(method)
        def call(this: Any, *args: Any, **kwargs: Any) -> Any:
            self.saw(store, args[0] if args else name)
            return method(this, *args, **kwargs)

        name = method.__name__
        return call


@pytest.mark.parametrize("backends", ["embedded", "postgresql+redis"])
def test_no_route_calls_a_store_on_the_event_loop(
    backends: str,
    built_dir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    request: pytest.FixtureRequest,
) -> None:
    from starlette.testclient import TestClient

    from lookup.server import create_app

    data_dir = tmp_path / "data"
    shutil.copytree(built_dir, data_dir)
    monkeypatch.setenv("LOOKUP_ADMIN_TOKEN", ADMIN_TOKEN)
    monkeypatch.setenv("LOOKUP_SHORTENER_AGGREGATOR", "thread")
    if backends != "embedded":  # the shortener as a fleet runs it: every seam on a server
        redis_url = request.getfixturevalue("redis_server").url
        monkeypatch.setenv("LOOKUP_SHORTENER_STORE", request.getfixturevalue("postgres_db"))
        monkeypatch.setenv("LOOKUP_CACHE_URL", redis_url)
        monkeypatch.setenv("LOOKUP_LIMITS_URL", redis_url)
        monkeypatch.setenv("LOOKUP_CLICKS_URL", redis_url)
    calls = LoopCalls()
    calls.watch(monkeypatch)
    with TestClient(create_app(data_dir)) as client:
        calls.recording = True
        seen = _sweep_every_route(client, calls)
        calls.recording = False
    broken = {what: status for what, status in seen.items() if status == 500}
    assert not broken, broken
    assert calls.counted["sqlite"] > 20, calls.counted  # the sweep reached the stores
    if backends != "embedded":
        assert calls.counted["postgresql"] > 20 and calls.counted["redis"] > 20, calls.counted
    assert not calls.found, "\n".join(sorted(calls.found))


def _sweep_every_route(client: Any, recorder: LoopCalls) -> dict[str, int]:
    """One request to every route of the API that may touch a store; {what: status}."""
    seen: dict[str, int] = {}

    def call(method: str, path: str, **kw: Any) -> Any:
        recorder.request = f"{method} {path}"
        resp = client.request(method, path, **kw)
        seen[f"{method} {path}"] = resp.status_code
        return resp

    token = call("POST", "/v1/tokens").json()["token"]
    owner = {"Authorization": f"Bearer {token}"}
    call("POST", "/v1/links", json={"longUrl": "https://example.com/anonymous"})
    key = call("POST", "/v1/links", json={"longUrl": "https://example.com/a"}, headers=owner)
    key = key.json()["key"]
    budget = call(
        "POST",
        "/v1/links",
        headers=owner,
        json={"longUrl": "https://example.com/b", "maxClicks": 5},
    ).json()["key"]
    locked = call(
        "POST",
        "/v1/links",
        headers=owner,
        json={"longUrl": "https://example.com/c", "password": "open sesame"},
    )
    locked = locked.json()["key"]
    call("GET", f"/{key}", follow_redirects=False)  # a miss: loads the link
    call("GET", f"/{key}", follow_redirects=False)  # a hit
    call("GET", "/zzzzzzz", follow_redirects=False)  # unknown: the misses' budget
    call("GET", f"/{key}+")
    call("GET", f"/{budget}", follow_redirects=False)  # a click budget: admitted by the store
    call("POST", f"/{locked}", data={"password": "open sesame"}, follow_redirects=False)
    call("GET", "/v1/links", headers=owner)
    call("GET", f"/v1/links/{key}", headers=owner)
    call("PATCH", f"/v1/links/{key}", json={"tags": ["x"]}, headers=owner)
    call("GET", f"/v1/links/{key}/history", headers=owner)
    call("GET", f"/v1/links/{key}/stats", headers=owner)
    call("GET", f"/v1/links/{key}/qr.svg")
    call("GET", "/v1/links/export.csv", headers=owner)
    call("POST", "/v1/links/import", content=b"longUrl\nhttps://example.com/i\n",
         headers={**owner, "Content-Type": "text/csv"})  # fmt: skip
    call("DELETE", f"/v1/links/{key}", headers=owner)
    call("GET", "/v1/shortener/blocklist", headers=ADMIN)
    call("POST", "/v1/shortener/blocklist", json={"add": ["blocked.example"]}, headers=ADMIN)
    call("GET", "/v1/shortener/metrics", headers=ADMIN)
    rotated = call("POST", "/v1/tokens/rotate", headers=owner).json()["token"]
    call("POST", "/v1/tokens/revoke", headers={"Authorization": f"Bearer {rotated}"})
    call("GET", "/healthz")
    # places
    near = {"lat": 12.93, "lng": 77.62, "radius": 5000, "cache": "false"}
    call("GET", "/v1/search", params=near)
    call("GET", "/v1/places/area",
         params={"south": 12.8, "west": 77.5, "north": 13.0, "east": 77.7})  # fmt: skip
    call("GET", "/v1/places/named", params={"q": "ban"})
    call("GET", "/v1/places/index")
    place = call("POST", "/v1/places", json=NEW_PLACE, headers=ADMIN).json()["id"]
    call("GET", f"/v1/places/{place}")
    call("PATCH", f"/v1/places/{place}", json={"name": "Renamed Cafe"}, headers=ADMIN)
    call("DELETE", f"/v1/places/{place}", headers=ADMIN)
    call("POST", "/v1/places/index/rebuild", headers=ADMIN)
    # typeahead, search, crawler (files and their own stores)
    call("GET", "/v1/suggest", params={"q": "a"})
    call("POST", "/v1/searches", json={"q": "cricket score", "market": "en-IN"})
    call("GET", "/v1/typeahead/snapshots")
    call("GET", "/search", params={"q": "python"})
    call("GET", "/crawler/controls")
    return seen


# -- the pieces, in one process: the busy mapping on both sides, the probes' deadline -------


def _raising(message: str) -> Any:
    def fail() -> None:
        raise sqlite3.OperationalError(message)

    return fail


class HangingProbe:
    """A health probe that hangs until released, counting its calls."""

    def __init__(self) -> None:
        self.calls = 0
        self.release = threading.Event()

    def __call__(self) -> dict[str, Any]:
        self.calls += 1
        self.release.wait(30)
        return {"status": "ready"}


def _store_errors_mount(mounts: Any, probe: HangingProbe) -> None:
    """Routes that raise what a store raises, and a health probe that hangs until told."""
    from starlette.routing import Route

    @mounts.api.post("/v1/locked")
    def locked() -> None:
        _raising("database is locked")()

    @mounts.api.post("/v1/broken")
    def broken() -> None:
        _raising("no such table: places")()

    async def fast(request: Any) -> Any:
        _raising(request.path_params["what"].replace("-", " "))()

    mounts.fast_routes.append(Route("/fast/{what}", fast))
    mounts.health["hanging"] = probe
    mounts.health["quick"] = lambda: {"status": "ready"}


@pytest.fixture
def hanging_probe() -> Iterator[HangingProbe]:
    probe = HangingProbe()
    yield probe
    probe.release.set()


@pytest.fixture
def errors_client(tmp_path: Path, hanging_probe: HangingProbe) -> Iterator[Any]:
    from starlette.testclient import TestClient

    from lookup.server import create_app

    mount = functools.partial(_store_errors_mount, probe=hanging_probe)
    app = create_app(tmp_path / "data", subsystems=[mount])
    with TestClient(app, raise_server_exceptions=False) as client:
        yield client


def test_a_database_locked_past_its_timeout_is_a_503_on_every_kind_of_route(
    errors_client: Any,
) -> None:
    for resp in (errors_client.post("/v1/locked"), errors_client.get("/fast/database-is-locked")):
        assert resp.status_code == 503, resp.text
        assert resp.json()["error"] == "UNAVAILABLE"
        assert "database is locked" in resp.json()["message"]
        assert resp.headers["retry-after"] == "1"
    # any other database error is a bug: a 500 with the one error format, never a 503
    for resp in (errors_client.post("/v1/broken"), errors_client.get("/fast/no-such-table")):
        assert resp.status_code == 500, resp.text
        assert resp.json()["error"] == "INTERNAL"


def test_healthz_answers_while_a_probe_hangs_and_asks_it_once(
    errors_client: Any, hanging_probe: HangingProbe, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LOOKUP_HEALTH_PROBE_TIMEOUT", "0.3")
    answers = []
    for _ in range(3):
        t0 = time.monotonic()
        body = errors_client.get("/healthz").json()
        answers.append((time.monotonic() - t0, body["systems"]))
    hanging_probe.release.set()
    assert all(took < HEALTH_BOUND_S for took, _ in answers), answers
    assert all(s["hanging"]["status"] == "SLOW" for _, s in answers), answers
    assert all(s["quick"]["status"] == "ready" for _, s in answers), answers
    assert hanging_probe.calls == 1  # a hung probe is waited for again, not asked again
    deadline = time.monotonic() + 10
    while errors_client.get("/healthz").json()["systems"]["hanging"]["status"] != "ready":
        assert time.monotonic() < deadline, "the probe's answer never showed"
        time.sleep(0.05)
