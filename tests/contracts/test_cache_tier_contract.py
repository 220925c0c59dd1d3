"""The cache-tier contract (``lookup.blocks.cache.tier``), run against every tier behind
``open_cache_tier``: ``memory:`` and a real ``redis://`` (a throw-away redis-server).
What is set is got back, deleted is gone, an entry expires after its TTL, one lease is
taken at a time, and a tier that cannot answer is a miss, never an exception."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from lookup.blocks.cache.tier import CacheTier, open_cache_tier


@pytest.fixture(params=["memory", "redis"])
def tier(request: pytest.FixtureRequest) -> Iterator[CacheTier]:
    if request.param == "memory":
        t = open_cache_tier("memory:")
    else:
        server: Any = request.getfixturevalue("redis_server")
        t = open_cache_tier(f"{server.url}?prefix=contract-{uuid.uuid4().hex[:8]}:")
    yield t
    t.flush()
    t.close()


def _until(check: Any, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.01)
    return False


def test_set_get_delete(tier: CacheTier) -> None:
    assert tier.get("a") is None and tier.get_with_ttl("a") == (None, -2)
    assert tier.set("a", "1")
    assert tier.get("a") == "1" and tier.get_with_ttl("a") == ("1", -1)
    tier.delete("a")
    assert tier.get("a") is None
    tier.set_many([("x", "1", None), ("y", "2", 60_000)])
    value, ttl = tier.get_with_ttl("y")
    assert tier.get("x") == "1" and value == "2" and 0 < ttl <= 60_000
    tier.flush()
    assert tier.get("x") is None and tier.get("y") is None


def test_entries_expire(tier: CacheTier) -> None:
    tier.set("short", "v", ttl_ms=50)
    assert _until(lambda: tier.get("short") is None)


def test_one_lease_at_a_time(tier: CacheTier) -> None:
    assert tier.lease("k", 60_000)
    assert not tier.lease("k", 60_000)
    tier.release("k")
    assert tier.lease("k", 60_000)
    tier.release("k")
    assert tier.lease("lapses", 50)
    assert _until(lambda: tier.lease("lapses", 60_000))


def test_a_dead_redis_is_a_miss_not_an_error(own_redis: Any) -> None:
    t = open_cache_tier(own_redis.url)
    t.set("k", "v")
    own_redis.stop()
    assert t.get("k") is None and not t.set("k", "w") and t.get_with_ttl("k") == (None, -2)
    assert t.lease("k", 1000)  # no tier, no lease: the caller loads (the store is the truth)
    assert sum(t.failures.values()) >= 4
    t.close()


def test_unknown_url_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown cache tier URL"):
        open_cache_tier("memcached://127.0.0.1:11211")
