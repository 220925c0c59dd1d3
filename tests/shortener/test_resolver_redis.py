"""The read path over the Redis tier: two resolvers standing for two processes.

Each resolver has its own :class:`~lookup.kit.cache_redis.RedisSharedCache` client (its
own subscriber, its own origin), so what one sees of the other goes through Redis — the
versioned fills, the invalidation channel and the breaker — as between processes.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lookup.kit.breaker import CircuitBreaker
from lookup.kit.cache_redis import RedisSharedCache
from lookup.shortener.model import Link
from lookup.shortener.resolver import Resolver
from lookup.shortener.store import LinkStore, SqliteLinkStore
from tests.shortener.test_resolver import Clock, CountingStore, _link


@pytest.fixture
def store(tmp_path: Path) -> Iterator[LinkStore]:
    s = SqliteLinkStore(tmp_path / "links.sqlite3")
    s.create(_link("hot-key"), render=lambda link: {})
    yield s
    s.close()


class ReadThenWait(CountingStore):
    """Reads the store at once, then holds the answer until ``gate`` opens: a slow load
    that already has the old record in hand."""

    def get(self, key: str) -> Link | None:
        self.reads += 1
        link = self.store.get(key)
        self.started.set()
        if self.gate is not None:
            self.gate.wait(10)
        return link

    def get_folded(self, key: str) -> Link | None:  # what the resolver reads
        return self.get(key)


def _tier(url: str, prefix: str) -> RedisSharedCache:
    # A pause longer than any test: the breaker stays open until the subscriber is back,
    # so the counts below do not depend on how fast a loaded machine runs the loop.
    return RedisSharedCache(url, prefix=prefix, breaker=CircuitBreaker("test", reset_timeout_s=600))


def _pair(store: LinkStore, url: str) -> Iterator[Any]:
    prefix = f"resolver-{uuid.uuid4().hex[:8]}:"
    tiers = [_tier(url, prefix), _tier(url, prefix)]
    counting = [ReadThenWait(store), ReadThenWait(store)]
    resolvers = [
        Resolver(c, shared=t, clock=Clock(), cache_jitter=0.0)  # type: ignore[arg-type]
        for c, t in zip(counting, tiers, strict=True)
    ]
    for tier in tiers:
        assert tier.wait_subscribed(10)
    return resolvers, counting, tiers


def _wait(check: Any, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "not in time"
        time.sleep(0.01)


def test_the_second_process_is_served_by_redis_and_hears_invalidations(
    store: LinkStore, redis_server: Any
) -> None:
    (a, b), (reads_a, reads_b), tiers = _pair(store, redis_server.url)
    try:
        assert a.resolve("hot-key") is not None and b.resolve("hot-key") is not None
        assert reads_a.reads == 1 and reads_b.reads == 0  # B's miss was a Redis hit
        assert b.stats()["layers"] == {"l1": 0, "negative": 0, "shared": 1, "store": 0}
        store.update("hot-key", {"long_url": "https://new.example/"}, actor=None)
        a.invalidate("hot-key")
        _wait(lambda: "hot-key" not in b.cache)  # dropped from B's L1 by the message
        assert b.resolve("hot-key").long_url == "https://new.example/"
        assert b.stats()["remoteInvalidations"]["keys"] == 1
        assert a.stats()["remoteInvalidations"]["keys"] == 0  # its own message is no news
    finally:
        for tier in tiers:
            tier.close()


@pytest.mark.parametrize("message", ["heard", "late"])
def test_a_slow_load_cannot_put_the_old_record_back(
    store: LinkStore, redis_server: Any, message: str
) -> None:
    (a, b), (reads_a, _), tiers = _pair(store, redis_server.url)
    if message == "late":  # A never hears B (as if the message came after A's fill):
        tiers[1]._origin = tiers[0]._origin  # only the compare-and-set in Redis stops it
    try:
        reads_a.gate = threading.Event()
        got: list[Any] = []
        slow = threading.Thread(target=lambda: got.append(a.resolve("hot-key")))
        slow.start()  # A read the tier (a miss) and the store (the old record), and waits
        assert reads_a.started.wait(10)
        store.update("hot-key", {"long_url": "https://new.example/"}, actor=None)
        b.invalidate("hot-key")  # B's writer commits and invalidates meanwhile
        if message == "heard":
            _wait(lambda: a.stats()["remoteInvalidations"]["keys"] == 1)
        reads_a.gate.set()
        slow.join(10)
        assert got and got[0].long_url == "https://example.com/"  # A answers what it read
        assert tiers[0].get("hot-key") is None  # but Redis does not keep it
        if message == "late":
            assert a.stats()["sharedFills"] == {"written": 0, "refused": 1}
        else:
            assert "hot-key" not in a.cache and a.stats()["staleFillsSkipped"] == 1
        assert b.resolve("hot-key").long_url == "https://new.example/"
    finally:
        for tier in tiers:
            tier.close()


def test_an_older_version_loses_to_a_newer_one_in_the_tier(
    store: LinkStore, redis_server: Any
) -> None:
    tier = _tier(redis_server.url, f"versions-{uuid.uuid4().hex[:8]}:")
    try:
        token = tier.lookup("k").token
        assert tier.fill("k", b"v2", 60, token, 2_000_000)
        assert not tier.fill("k", b"v1", 60, token, 1_000_000)
        assert tier.get("k") == b"v2" and tier.stats()["fillsRefused"] == 1
    finally:
        tier.close()


def test_with_redis_down_the_breaker_answers_and_recovery_replays_invalidations(
    store: LinkStore, own_redis: Any
) -> None:
    (a, b), (reads_a, _), tiers = _pair(store, own_redis.url)
    try:
        assert a.resolve("hot-key") is not None and b.resolve("hot-key") is not None
        own_redis.stop()
        _wait(lambda: b.stats()["remoteInvalidations"]["clears"] == 1)  # deaf: L1 dropped
        store.update("hot-key", {"long_url": "https://during.example/"}, actor=None)
        a.invalidate("hot-key")  # cannot reach Redis: kept for replay
        assert tiers[0].pending_invalidations() == 1
        for _ in range(20):  # A's L1 was dropped: every resolve reads the store
            a.cache.clear()
            assert a.resolve("hot-key").long_url == "https://during.example/"
        breaker = tiers[0].breaker.stats()
        assert breaker["state"] == "open" and breaker["shortCircuited"] >= 17
        assert tiers[0].stats()["errors"] == 3  # three tries opened it; the rest refused at once

        own_redis.start()  # same port, empty
        _wait(lambda: all(tier.stats()["resubscribes"] == 1 for tier in tiers))
        _wait(lambda: tiers[0].pending_invalidations() == 0)
        assert tiers[0].stats()["replayedInvalidations"] == 1
        _wait(lambda: b.stats()["remoteInvalidations"]["clears"] == 2)  # and again, once back
        assert b.resolve("hot-key").long_url == "https://during.example/"
        assert tiers[0].breaker.state == "closed"
        a.cache.clear()
        a.resolve("hot-key")
        assert a.stats()["sharedFills"]["written"] >= 1  # the tier is used again
    finally:
        for tier in tiers:
            tier.close()


def _free_redis_url() -> str:
    """A Redis URL nothing listens on: a process cut off from Redis."""
    from lookup.kit.ports import free_port

    return f"redis://127.0.0.1:{free_port()}/0"


def test_an_invalidation_outlives_a_process_that_crashed_during_a_redis_outage(
    tmp_path: Path, store: LinkStore, own_redis: Any
) -> None:
    """Redis stopped and restarted with its data (as with RDB persistence): A's unsent
    invalidation is in the link store's outbox, not in A's memory, so B sends it when
    Redis is back although A crashed; a change nobody invalidated shows the tier kept
    its entries across the restart."""
    import redis as redis_py

    store.create(_link("control-key"), render=lambda link: {})
    prefix = f"outbox-{uuid.uuid4().hex[:8]}:"
    tier_a, tier_b = _tier(own_redis.url, prefix), _tier(own_redis.url, prefix)
    store_b = SqliteLinkStore(tmp_path / "links.sqlite3")  # process B's own connection
    a = Resolver(store, shared=tier_a, cache_jitter=0.0)
    b = Resolver(store_b, shared=tier_b, cache_jitter=0.0)
    try:
        assert tier_a.wait_subscribed(10) and tier_b.wait_subscribed(10)
        for key in ("hot-key", "control-key"):
            assert b.resolve(key).long_url == "https://example.com/"  # in the tier now
        with redis_py.Redis.from_url(own_redis.url) as raw:
            raw.save()  # the tier's entries survive the restart
        own_redis.stop()
        store.update("hot-key", {"long_url": "https://new.example/"}, actor=None)
        a.invalidate("hot-key")  # Redis is down: into the outbox
        store.update("control-key", {"long_url": "https://new.example/"}, actor=None)
        assert [k for _i, k in store.deferred_invalidations(10)] == ["hot-key"]
        assert tier_a.stats()["deferredToOutbox"] == 1 and tier_a.pending_invalidations() == 0
        tier_a.close()  # A crashes: whatever it held in memory is gone

        own_redis.start()  # same port, the saved entries loaded again
        started = time.monotonic()
        # the row leaves the outbox a moment before the sender counts it: wait for both
        _wait(
            lambda: not store.deferred_invalidations(10) and tier_b.stats()["sentFromOutbox"] == 1
        )
        took = time.monotonic() - started
        print(f"\nthe crashed process's invalidation sent by another {took:.2f} s after Redis")
        b.cache.clear()
        assert b.resolve("hot-key").long_url == "https://new.example/"
        # the control: no invalidation was ever kept for it, and the tier still serves the
        # old record (until its TTL) — the restart kept the tier's data
        assert b.resolve("control-key").long_url == "https://example.com/"
    finally:
        tier_a.close()
        tier_b.close()
        store_b.close()


def test_an_outbox_entry_left_by_a_process_cut_off_from_redis_is_sent_by_another(
    tmp_path: Path, store: LinkStore, redis_server: Any
) -> None:
    """Only A cannot reach Redis (a partition), and A dies: B never saw an outage, yet its
    look at the outbox sends A's invalidation, drops the tier's entry and B's own L1."""
    prefix = f"outbox-{uuid.uuid4().hex[:8]}:"
    tier_a = _tier(_free_redis_url(), prefix)
    tier_b = RedisSharedCache(redis_server.url, prefix=prefix, outbox_poll_s=0.2)
    store_b = SqliteLinkStore(tmp_path / "links.sqlite3")
    a = Resolver(store, shared=tier_a, cache_jitter=0.0)
    b = Resolver(store_b, shared=tier_b, cache_jitter=0.0)
    try:
        assert tier_b.wait_subscribed(10)
        assert b.resolve("hot-key").long_url == "https://example.com/"  # B's L1 and the tier
        store.update("hot-key", {"long_url": "https://new.example/"}, actor=None)
        a.invalidate("hot-key")
        assert tier_a.stats()["deferredToOutbox"] == 1
        tier_a.close()  # A dies
        # the sender deletes the row, then counts it as sent: wait for both (as above)
        _wait(
            lambda: not store.deferred_invalidations(10) and tier_b.stats()["sentFromOutbox"] == 1
        )
        assert b.resolve("hot-key").long_url == "https://new.example/"  # L1 dropped, tier too
        assert b.stats()["layers"]["store"] == 2  # read anew from the store
    finally:
        tier_a.close()
        tier_b.close()
        store_b.close()
