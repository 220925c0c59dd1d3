"""Web search as a cluster on real processes: one ``lookup serve`` API worker whose
coordinator follows the shard membership in etcd (``LOOKUP_SEARCH_SHARDS``), and
2 shards × 2 replicas of ``lookup search serve-shard --register``, each registered under
its own etcd lease.

The drills put a bounded query load on it (a fixed rate, a few seconds — issue 25's
10 s / 20 s scaled to 2 s / 4 s) and SIGKILL one replica, later SIGSTOP another: with
hedging, and the same with hedging off (``hedge=false`` per query), and with etcd itself
stopped. Each prints its figures (counts and ratios: the machine is a loaded two-core
box, so latencies are not speeds); asserts are generous bounds relative to the
configured deadline and TTL, and every full answer must equal the in-process engine's.
"""

from __future__ import annotations

import os
import signal
import statistics
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from lookup.kit.engines.etcdserver import EtcdServer
from lookup.kit.engines.ports import free_port
from lookup.search import SearchService, build_index
from lookup.search.shard_server import ShardFleet
from tests.conftest import _need_etcd, lookup_serve, wait_http
from tests.search.test_membership_etcd import START, wait_for

#: Lease TTL of every shard server (s): short, so a dead replica leaves in the drill.
TTL = 2.0
#: The per-query deadline (ms): long enough that a healthy shard on a loaded two-core
#: machine answers within it, short enough that a drill's stopped replica shows.
DEADLINE_MS = 2500.0
#: Queries per second of the load, and its length (s); the faults at 1/3 and 2/3 of it.
QPS = 8.0
SECONDS = 6.0
QUERIES = ["python", "return value", "file list", "site title", '"return value"', "pyth*"]


@dataclass
class Cluster:
    """The running cluster: etcd, the shard fleet, the API worker's URL, the oracle."""

    etcd: EtcdServer
    fleet: ShardFleet
    url: str
    client: httpx.Client
    oracle: dict[str, list[Any]] = field(default_factory=dict)

    def search(self, q: str, **extra: str) -> httpx.Response:
        params = {"q": q, "ranking": "hand", "collapse": "0", **extra}
        return self.client.get(f"{self.url}/search", params=params)

    def members(self) -> list[dict[str, Any]]:
        reply = self.client.get(f"{self.url}/search/shards")
        reply.raise_for_status()
        return list(reply.json()["cluster"]["members"])

    def slots(self) -> dict[tuple[int, int], str]:
        return {(m["shard"], m["replica"]): m["address"] for m in self.members()}

    def full_slots(self) -> bool:
        return set(self.slots()) == {(s, r) for s in range(2) for r in range(2)}


def _hits(body: dict[str, Any]) -> list[Any]:
    """What must equal the engine's: the total, and each hit's URL, score and snippet."""
    return [body["estimatedTotal"]] + [
        (r["url"], round(r["score"], 9), r["title"], r["snippet"]) for r in body["results"]
    ]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory, base_crawl: Path) -> Iterator[Cluster]:
    _need_etcd()
    data = tmp_path_factory.mktemp("cluster")
    build_index(base_crawl, data / "search", shards=2, segment_docs=60)
    oracle = SearchService(data / "search", realtime=False)
    want = {q: _hits(oracle.search(q, ranking="hand", collapse=0)) for q in QUERIES}
    oracle.close()
    log = (data / "api.log").open("wb")
    with EtcdServer() as etcd:
        fleet = ShardFleet(data / "search", shards=2, replicas=2, realtime=False,
                           etcd_url=etcd.url, member_ttl=TTL)  # fmt: skip
        port = free_port()
        env = {**os.environ, "LOOKUP_SEARCH_SHARDS": etcd.url,
               "LOOKUP_SEARCH_DEADLINE_MS": str(DEADLINE_MS),
               "LOOKUP_SEARCH_MEMBERS_POLL": "0.2", "LOOKUP_SEARCH_SYNONYMS": "off"}  # fmt: skip
        proc: subprocess.Popen[bytes] | None = None
        try:
            fleet.start()
            fleet.wait_ready(START)
            proc = lookup_serve(data, port, env=env, stdout=subprocess.DEVNULL, stderr=log)
            url = f"http://127.0.0.1:{port}"
            wait_http(f"{url}/healthz", proc, START)
            with httpx.Client(trust_env=False, timeout=60.0) as client:
                c = Cluster(etcd, fleet, url, client, want)
                wait_for("the four replicas in the worker's view", c.full_slots, START)
                yield c
        finally:
            if proc is not None:
                proc.terminate()
                try:
                    proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
            fleet.stop()
            log.close()


def test_the_api_worker_answers_from_registered_shards_as_the_engine_does(
    cluster: Cluster,
) -> None:
    health = cluster.client.get(f"{cluster.url}/healthz").json()
    view = health["systems"]["search-cluster"]
    assert view["stale"] is False and len(view["members"]) == 4
    for q in QUERIES:
        reply = cluster.search(q)
        assert reply.status_code == 200, reply.text
        body = reply.json()
        assert body["shardsAnswered"] == body["shardsQueried"] == 2
        assert _hits(body) == cluster.oracle[q], q
    shard = cluster.client.get(f"{cluster.fleet.addresses[(0, 1)]}/healthz").json()
    assert shard["systems"]["search-shard"]["membership"]["registered"] is True


def test_a_killed_replica_leaves_and_a_new_one_joins_and_takes_traffic(cluster: Cluster) -> None:
    fleet = cluster.fleet
    old = fleet.addresses[(0, 0)]
    fleet.signal(0, 0, signal.SIGKILL)
    took = wait_for("the killed replica to leave", lambda: (0, 0) not in cluster.slots())
    print(f"\nSIGKILLed replica left the worker's view {took:.2f} s after the kill (TTL {TTL})")
    assert took <= 5 * TTL + 5.0
    for q in QUERIES:  # answered in full by the replica left
        body = cluster.search(q).json()
        assert body["shardsAnswered"] == 2 and _hits(body) == cluster.oracle[q]
    new = fleet.add(0, 0)  # another process at a new address: nothing restarts
    assert new != old
    joined = wait_for("the new replica to join", lambda: cluster.slots().get((0, 0)) == new, START)
    print(f"a new replica joined {joined:.2f} s after it was started")
    for q in QUERIES:
        body = cluster.search(q).json()
        assert body["shardsAnswered"] == 2 and _hits(body) == cluster.oracle[q]
    counts = {(m["shard"], m["replica"]): m for m in cluster.members()}
    assert counts[(0, 0)]["address"] == new
    assert counts[(0, 0)]["requests"] >= len(QUERIES)  # the primary again: it takes traffic
    assert counts[(0, 0)]["errors"] == 0


@dataclass
class Load:
    """What one bounded load saw: per query (status, shardsAnswered, tookMs, equal)."""

    rows: list[tuple[int, int, float, bool]] = field(default_factory=list)
    start: float = 0.0
    views: list[tuple[float, set[tuple[int, int]], set[str]]] = field(default_factory=list)

    def figures(self) -> dict[str, Any]:
        ok = [r for r in self.rows if r[0] == 200]
        took = sorted(r[2] for r in ok) or [0.0]
        return {
            "queries": len(self.rows),
            "5xx": sum(1 for r in self.rows if r[0] >= 500),
            "partial": sum(1 for r in ok if r[1] < 2),
            "fullShare": sum(1 for r in ok if r[1] == 2) / max(1, len(self.rows)),
            "p50": statistics.median(took),
            "p99": took[min(len(took) - 1, int(0.99 * len(took)))],
            "max": took[-1],
            "unequal": sum(1 for r in ok if r[1] == 2 and not r[3]),
        }


def run_load(
    cluster: Cluster, faults: list[tuple[float, Callable[[], None]]], **params: str
) -> Load:
    """``QPS`` queries a second for ``SECONDS`` (sent on a small pool, so a slow answer
    does not hold the schedule back), the ``faults`` fired at their times, and the
    worker's member view sampled all along."""
    load = Load()
    lock = threading.Lock()
    start = load.start = time.monotonic()
    done = threading.Event()

    def ask(q: str) -> None:
        try:
            reply = cluster.search(q, **params)
            status = reply.status_code
            body = reply.json() if status == 200 else {}
        except httpx.HTTPError:
            status, body = 599, {}
        answered = int(body.get("shardsAnswered", 0))
        equal = answered == 2 and _hits(body) == cluster.oracle[q]
        with lock:
            load.rows.append((status, answered, float(body.get("tookMs", 0.0)), equal))

    def watch() -> None:
        while not done.wait(0.1):
            try:
                members = cluster.members()
            except (httpx.HTTPError, KeyError, ValueError):
                continue
            slots = {(m["shard"], m["replica"]) for m in members}
            load.views.append((time.monotonic() - start, slots, {m["address"] for m in members}))

    timers = [threading.Timer(at, fault) for at, fault in faults]
    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    for t in timers:
        t.start()
    with ThreadPoolExecutor(8) as pool:
        n = int(QPS * SECONDS)
        for i in range(n):
            wait = start + i / QPS - time.monotonic()
            if wait > 0:
                time.sleep(wait)  # the load's own schedule, not a synchronisation
            pool.submit(ask, QUERIES[i % len(QUERIES)])
    for t in timers:
        t.join()
    done.set()
    watcher.join()
    return load


def _restore(cluster: Cluster) -> None:
    """Both replicas of both shards alive and in the worker's view again."""
    fleet = cluster.fleet
    for key, proc in list(fleet.procs.items()):
        if proc.poll() is not None:
            fleet.add(*key)
        else:
            fleet.signal(*key, signal.SIGCONT)
    wait_for("all four replicas back", cluster.full_slots, START)


def _drill(cluster: Cluster, **params: str) -> tuple[Load, float | None]:
    """SIGKILL shard 0's primary at 1/3 of the load, SIGSTOP shard 1's at 2/3, SIGCONT
    at the end. Returns the load and when (s into the load) the killed one left."""
    _restore(cluster)
    fleet = cluster.fleet
    killed = fleet.addresses[(0, 0)]
    at_kill: list[float] = []

    def kill() -> None:
        at_kill.append(time.monotonic())
        fleet.signal(0, 0, signal.SIGKILL)

    load = run_load(
        cluster,
        [(SECONDS / 3, kill), (2 * SECONDS / 3, lambda: fleet.signal(1, 0, signal.SIGSTOP))],
        **params,
    )
    fleet.signal(1, 0, signal.SIGCONT)
    gone = next((t for t, _slots, addresses in load.views if killed not in addresses
                 and t > SECONDS / 3), None)  # fmt: skip
    left = None if gone is None else load.start + gone - at_kill[0]
    if left is None:  # not yet within the load: measure from the kill until it leaves
        wait_for("the killed replica to leave", lambda: killed not in cluster.slots().values())
        left = time.monotonic() - at_kill[0]
    after = [addresses for t, _s, addresses in load.views if gone is not None and t >= gone]
    assert all(killed not in a for a in after)  # once gone, never asked again
    return load, left


def _report(cluster: Cluster, name: str, load: Load, left: float | None) -> dict[str, Any]:
    f = load.figures()
    groups = cluster.client.get(f"{cluster.url}/search/shards").json().get("shards", [])
    delays = [round(g.get("hedgeDelayMs", 0.0), 1) for g in groups if isinstance(g, dict)]
    print(
        f"\n{name}: {f['queries']} queries at {QPS:g}/s over {SECONDS:g} s, deadline "
        f"{DEADLINE_MS:g} ms: 5xx {f['5xx']}, partial {f['partial']}, full "
        f"{f['fullShare']:.1%}, tookMs p50 {f['p50']:.1f} p99 {f['p99']:.1f} max "
        f"{f['max']:.1f}, unequal {f['unequal']}"
        + ("" if left is None else f"; killed replica left after {left:.2f} s (TTL {TTL:g} s)")
        + f"; hedge delays now {delays} ms"
    )
    return f


def test_drill_fanout_kill_and_stop_with_and_without_hedging(cluster: Cluster) -> None:
    hedged, left_h = _drill(cluster)
    fh = _report(cluster, "hedging on ", hedged, left_h)
    plain, left_p = _drill(cluster, hedge="false")
    fp = _report(cluster, "hedging off", plain, left_p)
    print(f"seed 003's arithmetic: 1 - 0.999^100 = {1 - 0.999**100:.4f} of 100-shard fan-outs "
          "wait on at least one slow shard (1-in-1000 slow) without hedging")  # fmt: skip
    for f, left in ((fh, left_h), (fp, left_p)):
        assert f["5xx"] == 0
        assert f["unequal"] == 0  # every full answer is the engine's
        assert f["max"] <= 1.5 * DEADLINE_MS  # an answer at the deadline, never long past it
        assert left is not None and left <= 5 * TTL + 5.0
    assert fh["fullShare"] >= 0.99
    assert fh["partial"] <= fp["partial"]
    _restore(cluster)


def test_drill_etcd_stopped_queries_answer_from_the_last_known_members(cluster: Cluster) -> None:
    _restore(cluster)
    cluster.etcd.pause()
    try:
        load = run_load(cluster, [])  # SECONDS = 3 TTLs of etcd away
        view = cluster.client.get(f"{cluster.url}/search/shards").json()["cluster"]
    finally:
        cluster.etcd.resume()
    f = _report(cluster, "etcd stopped", load, None)
    print(f"the worker's view while etcd was stopped: stale={view['stale']}, "
          f"{len(view['members'])} members, error {view['error'][:60]!r}")  # fmt: skip
    assert f["5xx"] == 0 and f["unequal"] == 0
    assert f["fullShare"] >= 0.99
    assert all(len(slots) == 4 for _t, slots, _a in load.views)  # the last known view, kept
    assert view["stale"] is True and len(view["members"]) == 4
    wait_for("the members after etcd came back", cluster.full_slots, START)
