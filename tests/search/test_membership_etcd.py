"""Shard membership on a real etcd with real processes: a SIGKILLed replica leaves the
coordinator's view once its lease expires, a new one joins without restarting anything,
a version change is seen, and an etcd frozen for ~3 TTLs leaves the last known members
in place (flagged stale) until the replicas are back under new or renewed leases.

Bounds are generous multiples of the TTL (the machine is loaded); what was measured is
printed for the report, never asserted tightly.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from lookup.cli import main
from lookup.kit.engines.etcd import etcd_client
from lookup.kit.engines.etcdserver import EtcdServer
from lookup.search.membership import MemberRecord, MembershipWatcher, ShardRegistration

ROOT = Path(__file__).resolve().parents[2]
TTL = 2
POLL = 0.2
#: How long a change may take to show: many TTLs, for a machine at load 15-20.
WAIT = 30.0 + 10 * TTL
#: How long a helper process may take to start and register (imports on a loaded machine).
START = 120.0


def wait_for(what: str, check: Callable[[], Any], timeout: float = WAIT) -> float:
    """Poll ``check`` until truthy; the seconds it took (fail after ``timeout``)."""
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        if check():
            return time.monotonic() - start
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")


def slots(watcher: MembershipWatcher) -> set[tuple[int, int]]:
    return {m.slot for m in watcher.members()}


class Member:
    """One ``python -m lookup.search.membership register`` process."""

    def __init__(self, url: str, shard: int, replica: int, version: int = 1) -> None:
        self.slot = (shard, replica)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "lookup.search.membership", "register", "--etcd", url,
             "--shard", str(shard), "--replica", str(replica), "--version", str(version),
             "--address", f"http://127.0.0.1:{9000 + shard * 10 + replica}", "--ttl", str(TTL)],
            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip

    def end(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.communicate(timeout=30)


@pytest.fixture
def members() -> Iterator[list[Member]]:
    started: list[Member] = []
    yield started
    for m in started:
        m.end()


def test_a_killed_replica_leaves_and_a_new_one_joins_without_a_restart(
    etcd: EtcdServer, members: list[Member]
) -> None:
    prefix = "/lookup/search/members/"
    changes: list[list[MemberRecord]] = []
    watcher = MembershipWatcher(etcd_client(etcd.url, timeout=2.0), interval=POLL,
                                on_change=changes.append).start()  # fmt: skip
    try:
        members += [Member(etcd.url, 0, 0), Member(etcd.url, 0, 1)]
        wait_for("two replicas", lambda: slots(watcher) == {(0, 0), (0, 1)}, START)
        pids = {m.slot: m.pid for m in watcher.members()}
        assert pids == {m.slot: m.proc.pid for m in members}

        members[0].proc.send_signal(signal.SIGKILL)
        took = wait_for("the killed replica to leave", lambda: slots(watcher) == {(0, 1)})
        print(f"SIGKILLed replica left the view after {took:.2f} s (TTL {TTL} s)")

        members.append(Member(etcd.url, 1, 0, version=3))
        wait_for("a new replica", lambda: slots(watcher) == {(0, 1), (1, 0)}, START)
        assert {m.slot: m.version for m in watcher.members()} == {(0, 1): 1, (1, 0): 3}

        members[1].proc.send_signal(signal.SIGTERM)  # a clean stop deregisters at once
        assert members[1].proc.wait(timeout=60) == 0
        took = wait_for("the stopped replica to leave", lambda: slots(watcher) == {(1, 0)})
        print(f"SIGTERMed replica left the view after {took:.2f} s")
        assert [sorted(m.slot for m in c) for c in changes][-1] == [(1, 0)]
        assert not watcher.stale()
    finally:
        watcher.stop()
        etcd_client(etcd.url).delete_prefix(prefix)


def test_a_version_change_is_seen_and_a_clean_stop_leaves_at_once(etcd: EtcdServer) -> None:
    client = etcd_client(etcd.url, timeout=2.0)
    record = MemberRecord("http://127.0.0.1:9100", 2, 0, 4, os.getpid(), time.time())
    registration = ShardRegistration(client, record, TTL).start()
    watcher = MembershipWatcher(etcd_client(etcd.url, timeout=2.0), interval=POLL).start()
    try:
        wait_for("the replica", lambda: [m.version for m in watcher.members()] == [4])
        assert registration.set_version(5)
        wait_for("version 5", lambda: [m.version for m in watcher.members()] == [5])
        assert watcher.members()[0] == record.with_version(5)
        registration.stop()
        assert client.get_prefix("/lookup/search/members/") == []  # gone now, not after TTL
        wait_for("the leave", lambda: watcher.members() == [])
    finally:
        registration.stop(deregister=False)
        watcher.stop()


def test_cli_prints_the_live_membership(etcd: EtcdServer, capsys: Any) -> None:
    client = etcd_client(etcd.url, timeout=2.0)
    record = MemberRecord("http://127.0.0.1:9200", 3, 1, 8, os.getpid(), 1.0)
    registration = ShardRegistration(client, record, TTL).start()
    try:
        assert main(["search", "members", "--etcd", etcd.url]) == 0
        shown = json.loads(capsys.readouterr().out)
        assert shown["members"] == [record.to_dict()] and shown["revision"] > 0
    finally:
        registration.stop()
    assert main(["search", "members", "--etcd", "not a url"]) == 2
    assert main(["search", "members", "--etcd", "http://127.0.0.1:1", "--timeout", "1"]) == 1


def test_drill_etcd_frozen_for_three_ttls_keeps_the_last_members(own_etcd: EtcdServer) -> None:
    def client() -> Any:
        return etcd_client(own_etcd.url, timeout=1.0)

    def record(shard: int) -> MemberRecord:
        return MemberRecord(f"http://127.0.0.1:{9300 + shard}", shard, 0, 1, os.getpid(), 1.0)

    regs = [ShardRegistration(client(), record(s), TTL).start() for s in (0, 1)]
    watcher = MembershipWatcher(client(), interval=POLL, stale_after=1.0).start()
    try:
        wait_for("both replicas", lambda: slots(watcher) == {(0, 0), (1, 0)})
        before = watcher.members()
        leases = [r.lease_id for r in regs]
        own_etcd.pause()
        paused = time.monotonic()
        try:
            wait_for("the view to turn stale", watcher.stale)
            while time.monotonic() - paused < 3 * TTL:  # etcd away for ~3 TTLs
                assert watcher.members() == before  # queries keep routing to these
                time.sleep(0.1)
            shot = watcher.snapshot()
            assert shot["stale"] and shot["ageSeconds"] >= 2 * TTL
            assert not any(r.live() for r in regs)  # their leases are past the fence
        finally:
            own_etcd.resume()
        took = wait_for("a fresh view", lambda: not watcher.stale()
                        and all(r.live() for r in regs)
                        and slots(watcher) == {(0, 0), (1, 0)})  # fmt: skip
        print(
            f"fresh again {took:.2f} s after etcd resumed; leases {leases} -> "
            f"{[r.lease_id for r in regs]}; events {[r.events.kinds() for r in regs]}"
        )
        # back under the same lease (a hung renewal landed first) or re-registered
        for reg in regs:
            kinds = reg.events.kinds()
            assert "renewal-failed" in kinds
            assert reg.lease_id in leases or kinds.count("registered") == 2
        assert {m.slot: m.address for m in watcher.members()} == {
            m.slot: m.address for m in before
        }  # fmt: skip
    finally:
        watcher.stop()
        for reg in regs:
            reg.stop()
