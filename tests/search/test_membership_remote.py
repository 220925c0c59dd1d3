"""The membership watcher feeding a coordinator over shard servers (real processes, real
etcd): a replica that registers joins the coordinator's replicas without a restart, and a
SIGKILLed one leaves them once its lease expires, while every answer stays the in-process
engine's.

Each shard server has a registering sidecar (``python -m lookup.search.membership
register``) that dies with it: killing both is a replica's death as etcd sees it.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from lookup.kit.engines.etcd import etcd_client
from lookup.kit.engines.etcdserver import EtcdServer
from lookup.search import SearchService
from lookup.search.membership import MemberRecord, MembershipWatcher
from lookup.search.remote import remote_coordinator
from lookup.search.shard_server import ShardFleet
from tests.search.test_membership_etcd import START, TTL, wait_for

ROOT = Path(__file__).resolve().parents[2]
QUERIES = ["python", "return value", "file list", "site title"]


def _sidecar(url: str, address: str, shard: int, replica: int) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "lookup.search.membership", "register", "--etcd", url,
         "--shard", str(shard), "--replica", str(replica), "--address", address,
         "--ttl", str(TTL)],
        cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def _answers(svc: SearchService) -> list[tuple[Any, ...]]:
    out = []
    for q in QUERIES:
        body = svc.search(q, ranking="hand")
        hits = [(r["url"], round(r["score"], 9)) for r in body["results"]]
        out.append((q, body["estimatedTotal"], body["shardsAnswered"], hits))
    return out


def test_the_watcher_feeds_the_coordinator_joins_and_kills(etcd: EtcdServer, index_1: Path) -> None:
    oracle = SearchService(index_1, realtime=False)
    want = _answers(oracle)
    coordinator, shards = remote_coordinator([], deadline_ms=10_000)
    remote = SearchService(index_1, realtime=False, coordinator=coordinator)
    fed: list[list[MemberRecord]] = []

    def feed(members: list[MemberRecord]) -> None:
        fed.append(members)
        shards.set_members([m.to_dict() for m in members])

    sidecars: dict[int, subprocess.Popen[str]] = {}
    watcher = MembershipWatcher(etcd_client(etcd.url, timeout=2.0), interval=0.2, on_change=feed)
    with ShardFleet(index_1, shards=1, replicas=2, realtime=False) as fleet:
        try:
            watcher.start()
            sidecars[0] = _sidecar(etcd.url, fleet.addresses[(0, 0)], 0, 0)
            wait_for("replica 0", lambda: [m["replica"] for m in shards.members()] == [0], START)
            assert _answers(remote) == want

            sidecars[1] = _sidecar(etcd.url, fleet.addresses[(0, 1)], 0, 1)
            wait_for("replica 1", lambda: len(shards.members()) == 2, START)
            assert _answers(remote) == want

            # the first member dies: the one that joined later takes all the traffic
            fleet.signal(0, 0, signal.SIGKILL)
            sidecars[0].kill()
            took = wait_for("replica 0 to leave",
                            lambda: [m["replica"] for m in shards.members()] == [1])  # fmt: skip
            print(f"killed replica left the coordinator {took:.2f} s after SIGKILL (TTL {TTL})")
            before = shards.members()[0]["requests"]
            assert _answers(remote) == want  # answered in full by the replica left
            assert shards.members()[0]["requests"] >= before + len(QUERIES)
            assert shards.members()[0]["errors"] == 0
            assert [sorted(m.replica for m in f) for f in fed] == [[0], [0, 1], [1]]
        finally:
            watcher.stop()
            for proc in sidecars.values():
                if proc.poll() is None:
                    proc.kill()
                proc.communicate(timeout=30)
            remote.close()
            oracle.close()
