"""The one etcd lease keep-alive (kit/etcdlease.py) against a real throw-away etcd:
granted in whole seconds, renewed every TTL/3, fenced by a local deadline that holds
even while the renewal hangs, and the owner told when etcd says the lease is gone."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import etcd3gw
import pytest

from lookup.kit.engines.etcd import etcd_client
from lookup.kit.engines.etcdlease import KeptLease
from lookup.kit.engines.etcdserver import EtcdServer
from tests.crawler.fleet_support import etcd_server, wait_for


class Hand:
    """A monotonic clock moved by hand, starting at the real one's reading."""

    def __init__(self) -> None:
        self.now = time.monotonic()

    def __call__(self) -> float:
        return self.now


class Calls:
    """What the lease told its owner, in order (the callbacks run on its thread)."""

    def __init__(self) -> None:
        self.kinds: list[str] = []
        self.errors: list[Exception] = []

    def renewed(self) -> None:
        self.kinds.append("renewed")

    def failure(self, exc: Exception) -> None:
        self.kinds.append("failure")
        self.errors.append(exc)

    def lost(self) -> None:
        self.kinds.append("lost")


@pytest.fixture(scope="module")
def etcd() -> Iterator[EtcdServer]:
    yield from etcd_server()


@pytest.fixture
def own_etcd() -> Iterator[EtcdServer]:
    yield from etcd_server()


def _time_to_live(server: EtcdServer, lease_id: int) -> int:
    client = etcd_client(server.url)
    return int(client.post(client.get_url("/kv/lease/timetolive"), json={"ID": lease_id})["TTL"])


def test_a_grant_is_whole_seconds_and_live_until_send_time_plus_ttl(etcd: EtcdServer) -> None:
    hand = Hand()
    kept = KeptLease(etcd_client(etcd.url), 2.5, monotonic=hand)
    assert kept.ttl == 3 and KeptLease(etcd_client(etcd.url), 0.5).ttl == 2
    assert not kept.live() and kept.id == 0
    sent = hand.now
    kept.grant()
    try:
        assert kept.id and kept.deadline == sent + 3
        assert 0 < _time_to_live(etcd, kept.id) <= 3
        assert kept.live()
        hand.now = sent + 2.999
        assert kept.live()
        hand.now = sent + 3
        assert not kept.live()  # the deadline is exclusive
    finally:
        kept.revoke()
    assert _time_to_live(etcd, kept.id) == -1 and not kept.live()


def test_a_renewal_moves_the_deadline_from_its_send_time(etcd: EtcdServer) -> None:
    hand = Hand()
    kept = KeptLease(etcd_client(etcd.url), 3, monotonic=hand)
    kept.grant()
    try:
        assert not kept.due()
        hand.now += 1.0  # TTL/3: a renewal is due
        assert kept.due()
        sent = hand.now
        assert kept.renew() is True
        assert kept.deadline == sent + 3 and not kept.due()
        hand.now += 2.5  # past the grant's deadline, within the renewal's
        assert kept.live()
    finally:
        kept.revoke()


def test_the_thread_renews_and_tells_the_owner(etcd: EtcdServer) -> None:
    calls = Calls()
    kept = KeptLease(
        etcd_client(etcd.url),
        2,
        on_renewed=calls.renewed,
        on_failure=calls.failure,
        on_lost=calls.lost,
    )
    kept.grant()
    first = kept.deadline
    kept.start()
    try:
        wait_for("two renewals", lambda: calls.kinds.count("renewed") >= 2, 30)
        assert kept.deadline > first and kept.live()
        assert "lost" not in calls.kinds and "failure" not in calls.kinds
    finally:
        kept.stop()
        kept.revoke()
    assert not kept._thread or not kept._thread.is_alive()


def test_a_frozen_etcd_is_not_live_past_the_deadline(own_etcd: EtcdServer) -> None:
    """etcd frozen (SIGSTOP): the renewal hangs, then fails; the local deadline alone
    decides, and asking it never waits for the hung request."""
    hand = Hand()
    calls = Calls()
    kept = KeptLease(
        etcd_client(own_etcd.url, timeout=1.0),
        3,
        monotonic=hand,
        on_renewed=calls.renewed,
        on_failure=calls.failure,
        on_lost=calls.lost,
    )
    kept.grant()
    sent = hand.now
    kept.start()
    try:
        own_etcd.pause()
        assert kept.live()  # within the deadline of the grant
        hand.now = sent + 3  # the grant's deadline: no renewal got through since
        asked = time.monotonic()
        assert not kept.live()
        assert time.monotonic() - asked < 1.0  # generous: it never waited for a request
        wait_for("a failed renewal reported", lambda: "failure" in calls.kinds, 30)
        assert not kept.live() and "lost" not in calls.kinds
    finally:
        own_etcd.resume()
        kept.stop()
        with contextlib.suppress(Exception):  # (etcd may have expired it meanwhile)
            kept.revoke()


class _HeldRenewals(etcd3gw.Etcd3Client):
    """A real etcd client whose renewals wait until the test lets them through."""

    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        super().__init__(
            host=parts.hostname or "127.0.0.1",
            port=parts.port or 2379,
            timeout=5.0,
            api_path="/v3/",
        )
        self.sent = threading.Event()
        self.through = threading.Event()

    def post(self, *args: Any, **kwargs: Any) -> Any:
        if str(args[0]).endswith("/lease/keepalive"):
            self.sent.set()
            assert self.through.wait(60)
        return super().post(*args, **kwargs)


def test_a_renewal_answered_late_counts_from_when_it_was_sent(etcd: EtcdServer) -> None:
    """A renewal held in flight: past the deadline the lease is not live; the late answer
    moves the deadline only to its send time + TTL; the next renewal moves it on."""
    hand = Hand()
    calls = Calls()
    client = _HeldRenewals(etcd.url)
    kept = KeptLease(client, 9, monotonic=hand, on_renewed=calls.renewed)
    kept.grant()
    sent = hand.now
    kept.start()
    try:
        assert client.sent.wait(60)  # the thread's first renewal (after 3 s) is held
        hand.now = sent + 9
        assert not kept.live()
        client.through.set()  # etcd answers (the lease is 9 s long there: still alive)
        wait_for("the late renewal", lambda: calls.kinds.count("renewed") >= 1, 30)
        assert kept.deadline == sent + 9 and not kept.live()  # sent before the clock moved
        wait_for("the next renewal", lambda: calls.kinds.count("renewed") >= 2, 30)
        assert kept.deadline == hand.now + 9 and kept.live()
    finally:
        client.through.set()
        kept.stop()
        kept.revoke()


def test_a_lease_revoked_in_etcd_is_lost_and_the_owner_can_grant_again(
    etcd: EtcdServer,
) -> None:
    client = etcd_client(etcd.url)
    calls = Calls()
    kept: KeptLease

    def rejoin() -> None:  # the crawler's choice: a new lease, new epochs
        calls.lost()
        kept.grant()

    kept = KeptLease(client, 2, on_renewed=calls.renewed, on_lost=rejoin)
    first = kept.grant().id
    kept.start()
    try:
        client.post(client.get_url("/kv/lease/revoke"), json={"ID": first})
        wait_for("the loss reported", lambda: "lost" in calls.kinds, 30)
        wait_for("a new lease renewed", lambda: calls.kinds[-1] == "renewed", 30)
        assert kept.id != first and kept.live()
        assert _time_to_live(etcd, kept.id) > 0
    finally:
        kept.stop()
        kept.revoke()


def test_an_owner_that_stops_on_loss_ends_the_thread(etcd: EtcdServer) -> None:
    client = etcd_client(etcd.url)
    lost = threading.Event()
    kept: KeptLease

    def give_up() -> None:  # the id generator's choice: lost for good
        lost.set()
        kept.stop(wait=False)

    kept = KeptLease(client, 2, on_lost=give_up)
    kept.grant()
    kept.start()
    try:
        client.post(client.get_url("/kv/lease/revoke"), json={"ID": kept.id})
        assert lost.wait(30)
        assert not kept.live()
        assert kept._thread is not None
        kept._thread.join(timeout=30)
        assert not kept._thread.is_alive()
    finally:
        kept.stop()


def test_a_failed_bind_keeps_the_current_lease(etcd: EtcdServer) -> None:
    kept = KeptLease(etcd_client(etcd.url), 3)
    kept.grant()
    before, deadline = kept.id, kept.deadline

    def refuse(_lease: object) -> None:
        raise RuntimeError("the membership key was not written")

    try:
        with pytest.raises(RuntimeError, match="membership"):
            kept.grant(bind=refuse)
        assert (kept.id, kept.deadline) == (before, deadline) and kept.live()
    finally:
        kept.revoke()


def test_a_failing_callback_does_not_end_the_renewals(etcd: EtcdServer) -> None:
    renewals: list[float] = []

    def broken() -> None:
        renewals.append(time.monotonic())
        raise ValueError("the owner's bug")

    kept = KeptLease(etcd_client(etcd.url), 2, on_renewed=broken)
    kept.grant()
    kept.start()
    try:
        wait_for("renewals after a failing callback", lambda: len(renewals) >= 2, 30)
        assert kept.live()
    finally:
        kept.stop()
        kept.revoke()
