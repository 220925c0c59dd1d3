"""Fleet-wide trending and the searches stream over real ``lookup serve`` processes.

Two API processes share one data directory and one Redis (``LOOKUP_TYPEAHEAD_SEARCHES_URL``):

* a spike sent half to each trends at the single server's threshold (one search short of
  the floor: nowhere; at the floor: on both), and the brigade defences hold across them —
  one user from many networks, many users from one network, split between the two;
* drill: ``kill -9`` of one worker while searches stream in and its copier holds a batch
  (``LOOKUP_TYPEAHEAD_SEARCHES_COPY_DELAY``): the other claims the dead copier's entries
  (``XAUTOCLAIM``), and the build's CSV holds every acknowledged search exactly once.
"""

from __future__ import annotations

import csv
import os
import shutil
import signal
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis

from tests.conftest import free_port, lookup_serve, wait_http

ADMIN_TOKEN = "searchfeed-fleet-admin-token-0001"
ADMIN = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
FLOOR, USERS, NETWORKS = 20, 4, 3


@contextmanager
def _workers(data: Path, env: dict[str, str], n: int = 2) -> Iterator[list[Any]]:
    """``n`` real ``lookup serve`` over ``data``; yields ``(url, process)`` pairs."""
    full = {**os.environ, "LOOKUP_ADMIN_TOKEN": ADMIN_TOKEN, **env}
    full.pop("LOOKUP_PUBLIC_URL", None)
    procs = []
    try:
        for _ in range(n):
            port = free_port()
            proc = lookup_serve(data, port, env=full, stdout=subprocess.DEVNULL)
            procs.append((f"http://127.0.0.1:{port}", proc))
        for url, proc in procs:
            wait_http(f"{url}/healthz", proc, timeout=120)
        yield procs
    finally:
        for _url, proc in procs:
            if proc.poll() is None:
                proc.terminate()
        for _url, proc in procs:
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()


def _env(redis_url: str, **extra: str) -> dict[str, str]:
    return {
        "LOOKUP_TYPEAHEAD_SEARCHES_URL": f"{redis_url}?prefix=fleet-{uuid.uuid4().hex[:8]}",
        "LOOKUP_TYPEAHEAD_TRENDING_GATES": f"{FLOOR}/{USERS}/{NETWORKS}",
        "LOOKUP_TYPEAHEAD_SEARCHES_CLAIM_IDLE": "1",
        "LOOKUP_CACHE_URL": redis_url,  # a fleet: the workers may share the data directory
        "LOOKUP_SHORTENER_ANALYTICS": "0",
        **extra,
    }


def _search(client: httpx.Client, base: str, q: str, user: str, address: str) -> int:
    body = {"q": q, "market": "en-IN", "userId": user, "clientAddress": address}
    return client.post(f"{base}/v1/searches", json=body, headers=ADMIN).status_code


def _typeahead(client: httpx.Client, base: str) -> dict[str, Any]:
    out: dict[str, Any] = client.get(f"{base}/healthz").json()["systems"]["typeahead"]
    return out


def _wait(check: Callable[[], bool], what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"{what}: not within {timeout} s"
        time.sleep(0.05)


def _refreshed(client: httpx.Client, bases: list[str]) -> None:
    """Wait until every worker has read the fleet's windows twice more (a full read that
    began after the last search)."""
    start = {b: _typeahead(client, b)["trending"]["refreshes"] for b in bases}
    _wait(
        lambda: all(_typeahead(client, b)["trending"]["refreshes"] >= start[b] + 2 for b in bases),
        "a trending refresh",
    )


def _trending(client: httpx.Client, base: str) -> set[str]:
    terms = client.get(f"{base}/v1/typeahead/trending", params={"market": "en-IN"}).json()
    return {t["q"] for t in terms["terms"]}


@pytest.fixture(scope="module")
def fleet(built: Any, redis_server: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """Two workers over a copy of the built data, for the whole module (the drill, last,
    kills the first); each copier pauses 0.3 s holding what it took."""
    data = tmp_path_factory.mktemp("searchfeed") / "data"
    shutil.copytree(built.data_dir, data)
    env = _env(redis_server.url, LOOKUP_TYPEAHEAD_SEARCHES_COPY_DELAY="0.3")
    with _workers(data, env) as workers:
        yield data, workers, redis_server.url


def test_a_spike_split_between_two_workers_trends_at_one_servers_threshold(fleet: Any) -> None:
    spike, one_user, one_network = "zq fleet spike", "zq one user", "zq one network"
    _data, workers, _redis = fleet
    with httpx.Client(timeout=30) as c:
        bases = [url for url, _ in workers]
        health = _typeahead(c, bases[0])
        assert health["searches"]["backend"].startswith("redis redis://")
        assert health["trending"]["backend"].startswith("redis redis://")
        for i in range(FLOOR - 1):  # one short of the floor, from 19 users on 19 networks
            assert _search(c, bases[i % 2], spike, f"u{i}", f"10.{i}.0.1") == 202
        for i in range(3 * FLOOR):  # brigades: one user on many networks ...
            assert _search(c, bases[i % 2], one_user, "mallory", f"10.{i}.0.1") == 202
        for i in range(3 * FLOOR):  # ... and many users on one network
            assert _search(c, bases[i % 2], one_network, f"m{i}", f"10.99.0.{i + 1}") == 202
        _refreshed(c, bases)
        assert _trending(c, bases[0]) == _trending(c, bases[1]) == set()
        assert _search(c, bases[1], spike, "u-last", "10.200.0.1") == 202  # the floor
        _refreshed(c, bases)
        assert _trending(c, bases[0]) == _trending(c, bases[1]) == {spike}
        suggested = c.get(f"{bases[0]}/v1/suggest", params={"q": "zq f", "market": "en-IN"})
        assert spike in suggested.json()["suggestions"]  # blended in, fleet-wide


def test_drill_kill_9_of_a_worker_loses_no_acknowledged_search(fleet: Any) -> None:
    data, workers, redis_url = fleet
    copy = data / "typeahead" / "searches.csv"
    before = _copied(copy)
    acked: list[str] = []
    sent: list[str] = []
    with httpx.Client(timeout=10) as c:
        (victim_url, victim), (survivor_url, _) = workers
        stop = threading.Event()

        def stream(base: str, tag: str) -> None:
            with httpx.Client(timeout=10) as own:
                i = 0
                while not stop.is_set() and i < 400:
                    q = f"zq drill {tag} {i}"
                    sent.append(q)
                    try:
                        if _search(own, base, q, f"d{i}", f"10.1.{i % 200}.1") == 202:
                            acked.append(q)
                    except httpx.HTTPError:
                        pass  # the victim is gone: not acknowledged
                    i += 1

        threads = [
            threading.Thread(target=stream, args=(victim_url, "a")),
            threading.Thread(target=stream, args=(survivor_url, "b")),
        ]
        for t in threads:
            t.start()
        _wait(lambda: sum(q.startswith("zq drill a") for q in acked) >= 40, "searches to A")
        feed = _typeahead(c, victim_url)["searches"]
        stream = feed["backend"].rsplit(" ", 1)[-1]
        probe = redis.Redis.from_url(redis_url)

        def holding() -> bool:
            mine = probe.xpending_range(
                stream, "copiers", "-", "+", 1, consumername=feed["consumer"]
            )
            return bool(mine)

        _wait(holding, "the victim's copier holding a batch")
        victim.send_signal(signal.SIGKILL)  # mid-stream, its copier holding a batch
        probe.close()
        victim.wait(10)
        _wait(lambda: sum(q.startswith("zq drill b") for q in acked) >= 120, "searches to B")
        stop.set()
        for t in threads:
            t.join(30)
        _wait(lambda: set(acked) <= set(_copied(copy)[len(before) :]), "the copy", 60)
        claimed = _typeahead(c, survivor_url)["searches"]["claimed"]
    copied = _copied(copy)[len(before) :]
    assert len(copied) == len(set(copied))  # nothing copied twice
    assert set(acked) <= set(copied) <= set(sent)
    # beyond the acknowledged: at most the one search in flight to the victim as it died
    assert len(set(copied) - set(acked)) <= 1
    assert claimed > 0  # the survivor took over the dead copier's batch (XAUTOCLAIM)


def _copied(path: Path) -> list[str]:
    if not path.exists():
        return []
    with open(path, newline="", encoding="utf-8") as f:
        return [row["query"] for row in csv.DictReader(f) if row.get("event")]
