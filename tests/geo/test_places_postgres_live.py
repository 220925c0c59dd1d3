"""Two real ``lookup serve`` processes on one PostgreSQL places database, no data directory
shared: each loads its index from the database and tails its change stream.

- a place added through worker A is found by a search through worker B within moments
  (polled with a deadline; the time it took is printed);
- the drill: PostgreSQL is killed with SIGKILL (the postmaster and every backend) in the
  middle of a stream of place writes through both workers, then restarted on its data.
  Every write acknowledged 2xx is in the table afterwards; writes during the outage get
  503 with a JSON error code, never a 500 or a hang; searches keep answering from memory
  on both workers; each worker's index converges to the table. The figures are printed.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest

from lookup.geo import geohash
from lookup.geo.places import open_place_writer
from tests.shortener.fleet import ApiProcess

TOKEN = "places-pg-admin-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
#: Where every place of these tests lies, and a radius that holds them all.
LAT, LNG, RADIUS = 12.97, 77.59, 5000
#: Generous bounds (a loaded 2-core machine): the measured figures are printed.
FOUND_BOUND_S = 20.0
HANG_BOUND_S = 20.0
RECOVERY_BOUND_S = 90.0


def _seed(url: str, n: int = 20) -> None:
    rows = []
    for i in range(n):
        lat, lng = LAT + i * 1e-4, LNG + i * 1e-4
        rows.append({
            "id": f"biz:{i:07d}", "num": i, "name": f"Seed Cafe {i}", "lat": lat, "lng": lng,
            "category": "cafe", "kind": "business", "geohash": geohash.encode(lat, lng),
            "country": "IN", "timezone": "Asia/Kolkata", "tags": "[]", "price": 2,
            "review_count": 0, "review_stars": 0, "generated": 1, "updated_at": 0.0,
        })  # fmt: skip
    with open_place_writer(url) as db:
        db.insert_dicts(rows)
        db.finish({"next_num": str(n)})


def _env(url: str) -> dict[str, str]:
    return {"LOOKUP_PLACES_STORE_URL": url, "LOOKUP_ADMIN_TOKEN": TOKEN}


@contextmanager
def _workers(root: Path, url: str) -> Iterator[list[ApiProcess]]:
    procs = [ApiProcess(root / f"api-{i}", _env(url)) for i in range(2)]
    try:
        for proc in procs:
            proc.wait_ready()
        yield procs
    finally:
        for proc in procs:
            proc.stop()


def _search(client: httpx.Client, base: str, q: str | None = None) -> httpx.Response:
    params: dict[str, Any] = {"lat": LAT, "lng": LNG, "radius": RADIUS, "limit": 50}
    if q:
        params["q"] = q
    return client.get(f"{base}/v1/search", params=params)


def _found(client: httpx.Client, base: str, name: str) -> bool:
    resp = _search(client, base, name)
    return resp.status_code == 200 and any(r["name"] == name for r in resp.json()["results"])


def _add(client: httpx.Client, base: str, name: str, i: int = 0) -> httpx.Response:
    body = {"name": name, "lat": LAT + 0.01 + i * 1e-5, "lng": LNG, "category": "cafe"}
    return client.post(f"{base}/v1/places", json=body, headers=AUTH)


@pytest.fixture
def seeded_db(postgres_db: str) -> str:
    _seed(postgres_db)
    return postgres_db


def test_a_place_added_through_one_worker_is_found_through_the_other(
    seeded_db: str, tmp_path: Path
) -> None:
    with _workers(tmp_path, seeded_db) as (a, b), httpx.Client(timeout=30) as client:
        assert _search(client, b.url).json()["results"], "B serves the loaded places"
        added = _add(client, a.url, "Tailed Bistro")
        assert added.status_code == 201, added.text
        t0 = time.monotonic()
        while not _found(client, b.url, "Tailed Bistro"):
            assert time.monotonic() - t0 < FOUND_BOUND_S, "B never saw A's place"
            time.sleep(0.02)
        took = time.monotonic() - t0
        assert _found(client, a.url, "Tailed Bistro")  # A applied its own write at once
        health = client.get(f"{b.url}/healthz").json()
        print(f"\nA's place found through B {took:.2f} s after A acknowledged it")
        assert health["systems"]["places"]["store"] == "postgresql"


@dataclass
class Attempt:
    started: float
    ended: float
    status: int | None  # None: no HTTP answer
    body: dict[str, Any]
    name: str


def _kill_postgres(pg: Any) -> None:
    """SIGKILL the postmaster and every process it started (a machine losing power)."""
    pid = int((pg.data / "postmaster.pid").read_text().split()[0])
    children = [
        int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit() and _ppid(p) == pid
    ]
    for victim in (pid, *children):
        try:
            os.kill(victim, signal.SIGKILL)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + 30
    while any(_alive(v) for v in (pid, *children)) and time.monotonic() < deadline:
        time.sleep(0.05)


def _ppid(proc_dir: Path) -> int:
    try:
        stat = (proc_dir / "stat").read_text()
    except OSError:
        return -1
    return int(stat.rsplit(")", 1)[1].split()[1])


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _table_names(url: str) -> set[str]:
    with psycopg.connect(url) as conn:
        return {r[0] for r in conn.execute("SELECT name FROM places").fetchall()}


def _seq(url: str) -> int:
    with psycopg.connect(url) as conn:
        row = conn.execute("SELECT COALESCE(MAX(seq), 0) FROM place_changes").fetchone()
    return int(row[0]) if row else 0


def test_drill_postgres_killed_during_place_writes_through_two_workers(
    own_postgres: Any, tmp_path: Path
) -> None:
    url = own_postgres.url
    _seed(url)
    with _workers(tmp_path, url) as procs:
        _drill(own_postgres, url, procs)


def _drill(pg: Any, url: str, procs: list[ApiProcess]) -> None:
    attempts: list[Attempt] = []
    lock = threading.Lock()
    stop = threading.Event()

    def writer(w: int) -> None:
        base = procs[w % 2].url
        with httpx.Client(timeout=HANG_BOUND_S + 10) as client:
            i = 0
            while not stop.is_set():
                name = f"Drill w{w} n{i}"
                t0 = time.monotonic()
                try:
                    resp = _add(client, base, name, i)
                    status, body = resp.status_code, resp.json()
                except httpx.HTTPError:
                    status, body = None, {}
                with lock:
                    attempts.append(Attempt(t0, time.monotonic(), status, body, name))
                i += 1

    def acked() -> list[Attempt]:
        with lock:
            return [a for a in attempts if a.status == 201]

    searches: list[int] = []
    threads = [threading.Thread(target=writer, args=(w,)) for w in range(4)]
    for t in threads:
        t.start()
    try:
        deadline = time.monotonic() + 60
        while len(acked()) < 40 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert len(acked()) >= 40, "writes did not flow before the crash"
        _kill_postgres(pg)
        crashed_at = time.monotonic()
        with httpx.Client(timeout=HANG_BOUND_S) as client:
            while time.monotonic() - crashed_at < 4.0:  # the outage: searches from memory
                for proc in procs:
                    searches.append(_search(client, proc.url).status_code)
                time.sleep(0.1)
        pg.start()
        restarted_at = time.monotonic()
        recovered_at = None
        while recovered_at is None and time.monotonic() < restarted_at + RECOVERY_BOUND_S:
            after = [a for a in acked() if a.started >= restarted_at]
            recovered_at = min((a.ended for a in after), default=None)
            time.sleep(0.05)
        time.sleep(0.5)  # a few more writes on the recovered server
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=HANG_BOUND_S + 15)

    during = [a for a in attempts if crashed_at <= a.started < restarted_at]
    refused = [a for a in during if a.status == 503]
    statuses = {a.status for a in attempts}
    names = _table_names(url)
    lost = [a.name for a in acked() if a.name not in names]
    # every worker's index converges to the table: its change position and its answers
    table_seq = _seq(url)
    converged_at: dict[str, float] = {}
    t0 = time.monotonic()
    with httpx.Client(timeout=30) as client:
        while len(converged_at) < len(procs) and time.monotonic() - t0 < RECOVERY_BOUND_S:
            for proc in procs:
                places = client.get(f"{proc.url}/v1/places/index").json()
                if proc.url not in converged_at and places.get("changeSeq") == table_seq:
                    converged_at[proc.url] = time.monotonic() - t0
            time.sleep(0.05)
        answers = [
            {r["name"] for r in _search(client, p.url, "Drill").json()["results"]} for p in procs
        ]
    print(
        f"\nPostgreSQL SIGKILL drill (two workers): {len(attempts)} writes, "
        f"{len(acked())} acknowledged, {len(lost)} of them lost; outage "
        f"{restarted_at - crashed_at:.1f} s with {len(refused)} writes refused (503), slowest "
        f"refusal {max((a.ended - a.started for a in refused), default=0):.2f} s; writes "
        f"acknowledged again "
        f"{'never' if recovered_at is None else f'{recovered_at - restarted_at:.2f} s'} after "
        f"the restart; {len(searches)} searches during the outage, "
        f"{searches.count(200)} answered 200; indexes converged to change {table_seq} in "
        f"{', '.join(f'{s:.2f} s' for s in converged_at.values())} after the writes stopped; "
        f"{sum(n.startswith('Drill') for n in names)} drill places in the table"
    )
    assert not lost, f"acknowledged writes lost: {lost[:5]}"
    assert statuses <= {201, 503}, f"unexpected answers: {statuses}"
    assert refused, "no write was refused during the outage"
    assert all(isinstance(a.body.get("error"), str) for a in refused), refused[0].body
    assert max(a.ended - a.started for a in refused) < HANG_BOUND_S
    assert searches and set(searches) == {200}, "searches stopped answering during the outage"
    assert recovered_at is not None, "writes never succeeded after the restart"
    assert len(converged_at) == len(procs), "a worker's index never caught up with the table"
    drill_names = {n for n in names if n.startswith("Drill")}
    for found in answers:  # 50 results at most: each is a place of the table
        assert found <= drill_names
