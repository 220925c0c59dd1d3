"""Worker ids leased from a real etcd: exclusive, fenced, never re-used after a restart,
and refused the moment the lease is gone or its deadline has passed."""

from __future__ import annotations

import pytest

from lookup.blocks.ids import SEED_LAYOUT, LeaseLost, ReservationExhausted, WorkerLease
from lookup.blocks.ids.etcd import EtcdServer, etcd_client
from lookup.blocks.ids.workers import HIGH_PREFIX, worker_holders
from lookup.errors import Unavailable


class Hand:
    """A monotonic clock moved by hand, starting at the real one's reading."""

    def __init__(self, start: float) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now


def test_two_holders_never_share_a_worker_id(etcd: EtcdServer) -> None:
    client = etcd_client(etcd.url)
    first = WorkerLease(client, ttl_s=3, workers=range(100, 103))
    second = WorkerLease(client, ttl_s=3, workers=range(100, 103))
    with first, second:
        assert {first.worker_id, second.worker_id} == {100, 101}
        holders = worker_holders(client)
        assert holders[first.worker_id]["lease"] == first.lease_id
        assert holders[second.worker_id]["lease"] == second.lease_id
        third = WorkerLease(client, ttl_s=3, workers=[100, 101])
        with pytest.raises(Unavailable, match="leased"):
            third.acquire()
    assert 100 not in worker_holders(client) and 101 not in worker_holders(client)


def test_a_graceful_restart_continues_after_the_last_id(etcd: EtcdServer) -> None:
    client = etcd_client(etcd.url)
    with WorkerLease(client, ttl_s=3, workers=[200]) as old:
        issued = old.generator().take(5000)
    mark = int(client.get(f"{HIGH_PREFIX}200")[0])
    assert mark == SEED_LAYOUT.decode(issued[-1]).unix_ms  # lowered to the last id on release
    with WorkerLease(client, ttl_s=3, workers=[200]) as new:
        again = new.generator().take(5000)
    assert min(again) > max(issued)
    assert not set(issued) & set(again)


def test_a_crashed_holders_reservation_is_waited_out(etcd: EtcdServer) -> None:
    client = etcd_client(etcd.url)
    old = WorkerLease(client, ttl_s=2, workers=[201])
    old.acquire()
    issued = old.generator().take(2000)
    reserved = old.reserved_ms
    client.post(client.get_url("/kv/lease/revoke"), json={"ID": old.lease_id})  # "crash"
    new = WorkerLease(client, ttl_s=2, workers=[201])
    new.acquire(wait_s=10)
    try:
        again = new.generator().take(2000)
    finally:
        new.release()
        old.release()
    assert SEED_LAYOUT.decode(again[0]).unix_ms > reserved >= SEED_LAYOUT.decode(issued[-1]).unix_ms
    assert any(e.kind == "waited" for e in new.events)
    assert not set(issued) & set(again)


def test_past_the_deadline_nothing_is_issued(etcd: EtcdServer) -> None:
    import time

    hand = Hand(time.monotonic())
    lease = WorkerLease(etcd_client(etcd.url), ttl_s=60, workers=[300], monotonic=hand)
    lease.acquire()
    try:
        gen = lease.generator()
        gen.take(10)
        hand.now += 59.9  # renewals stuck: the deadline is all that is left
        gen.next_id()
        hand.now += 0.2
        with pytest.raises(LeaseLost, match="deadline"):
            gen.next_id()
        assert gen.issued == 11
        assert "deadline" in lease.lost
    finally:
        lease.release()


def test_ids_never_run_past_the_reservation(etcd: EtcdServer) -> None:
    lease = WorkerLease(etcd_client(etcd.url), ttl_s=30, workers=[301])
    lease.acquire()
    try:
        with pytest.raises(ReservationExhausted):
            lease.permit(lease.reserved_ms + 1)
        lease.permit(lease.reserved_ms)
    finally:
        lease.release()


def test_a_revoked_lease_stops_the_generator_at_the_next_renewal(etcd: EtcdServer) -> None:
    import time

    client = etcd_client(etcd.url)
    lease = WorkerLease(client, ttl_s=2, workers=[302])
    lease.acquire()
    gen = lease.generator()
    gen.take(10)
    client.post(client.get_url("/kv/lease/revoke"), json={"ID": lease.lease_id})
    give_up = time.monotonic() + 30
    with pytest.raises(LeaseLost):
        while time.monotonic() < give_up:
            gen.next_id()
            time.sleep(0.01)
    assert any(e.kind == "lost" for e in lease.events)
    issued = gen.issued
    with pytest.raises(LeaseLost):
        gen.next_id()
    assert gen.issued == issued  # refused for good, not only once
    lease.release()


def test_a_leased_generator_refuses_a_backwards_step(etcd: EtcdServer) -> None:
    from lookup.blocks.ids import ClockMovedBackwards, wall_clock_ms

    class Wall:
        """The real wall clock plus an offset the test moves (an NTP step)."""

        offset = 0

        def __call__(self) -> int:
            return wall_clock_ms() + self.offset

    wall = Wall()
    lease = WorkerLease(etcd_client(etcd.url), ttl_s=30, workers=[303], clock=wall)
    lease.acquire()
    try:
        gen = lease.generator()
        before = gen.take(1000)
        wall.offset = -5_000  # the clock steps back five seconds
        with pytest.raises(ClockMovedBackwards):
            gen.next_id()
        assert gen.issued == 1000
        wall.offset = 0
        after = gen.take(1000)
    finally:
        lease.release()
    assert not set(before) & set(after) and max(before) < min(after)
    assert gen.refusals == 1


def test_the_ttl_comes_from_the_setting(etcd: EtcdServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOOKUP_SNOWFLAKE_LEASE_TTL", "7")
    client = etcd_client(etcd.url)
    with WorkerLease(client, workers=[304]) as lease:
        assert lease.ttl == 7
        granted = client.post(client.get_url("/kv/lease/timetolive"), json={"ID": lease.lease_id})
        assert int(granted["grantedTTL"]) == 7
    assert WorkerLease(client, ttl_s=0.5).ttl == 2  # etcd's floor: whole seconds, at least 2
