"""The shared-cache contract, run against every tier behind ``open_shared_cache``.

Two kinds of tier share the interface: ones that hold values (``memory:``, ``redis://``)
and the null tier that holds nothing (``HOLDS_NOTHING``). Both must accept every call
without raising; a holding tier must return what was set, forget what was deleted, keep
keys apart and let an entry expire after its TTL (with the injected clock).

The tiers come from the seam's registry (:data:`lookup.kit.sharedcache.BACKENDS`): a new
backend registers its scheme there, says below how to get a fresh, empty tier of it
(``FRESH``) — and, if its server keeps time, how to move that time (``SERVER_CLOCKS``) —
and must pass unchanged.

Redis keeps time itself, so its tier's "clock" is a time machine on the server: moving it
forward by ``d`` shortens the remaining TTL of every key of the test by ``d`` (what the
passing of ``d`` seconds does to them), and each test gets its own key prefix.

The versioned half (``lookup``/``fill``/``watch``) runs against the tiers that have it.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from lookup.kit.sharedcache import (
    BACKENDS,
    SharedCache,
    VersionedSharedCache,
    backend,
    open_shared_cache,
)
from tests.contracts.seams import (
    Fresh,
    check_port_imports_no_backend,
    check_registered,
    fresh_url,
)


class FakeClock:
    def __init__(self) -> None:
        self.now = 50.0

    def __call__(self) -> float:
        return self.now


@dataclass
class Tier:
    cache: SharedCache
    clock: FakeClock
    holds: bool  # False for the null tier: every get misses


class RedisClock:
    """Advancing ``now`` ages every key under ``prefix`` on the server by the same amount."""

    def __init__(self, url: str, prefix: str) -> None:
        import redis

        self._redis = redis.Redis.from_url(url)
        self._prefix = prefix
        self._now = 50.0

    @property
    def now(self) -> float:
        return self._now

    @now.setter
    def now(self, value: float) -> None:
        elapsed_ms = int(round((value - self._now) * 1000))
        self._now = value
        for name in self._redis.scan_iter(match=self._prefix + "*"):
            left = self._redis.pttl(name)
            if left > elapsed_ms:
                self._redis.pexpire(name, left - elapsed_ms)
            elif left >= 0:  # its time is up (-1: no TTL, -2: gone already)
                self._redis.delete(name)

    def __call__(self) -> float:
        return self._now


@pytest.fixture
def redis_tier(redis_server: Any) -> str:
    """A fresh key prefix on the session's redis-server: the tier's URL."""
    return f"{redis_server.url}?prefix=contract-{uuid.uuid4().hex[:8]}:"


#: scheme -> how to get the URL of a fresh, empty tier: a function of a temp dir, or the
#: name of the fixture that gives one on a real server.
FRESH: dict[str, Fresh] = {
    "none": lambda tmp: "none:",
    "memory": lambda tmp: "memory:",
    "redis": "redis_tier",
}

#: The tiers that hold nothing: every ``get`` misses.
HOLDS_NOTHING = {"none"}

#: scheme -> the clock of a tier timed by its own server (the others take a FakeClock).
SERVER_CLOCKS: dict[str, Callable[[Any], Any]] = {
    "redis": lambda cache: RedisClock(cache.url, cache.prefix),
}


@pytest.fixture(params=list(BACKENDS))
def tier(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    url = fresh_url(request, tmp_path, FRESH)
    holds = request.param not in HOLDS_NOTHING
    server_clock = SERVER_CLOCKS.get(request.param)
    clock = FakeClock()
    cache = open_shared_cache(url, clock=clock)
    yield Tier(cache, server_clock(cache) if server_clock else clock, holds)
    close = getattr(cache, "close", None)
    if close is not None:
        close()


def test_every_registered_backend_opens_from_a_url() -> None:
    """Each class of the registry has ``from_url``; what it opens is checked below (the
    port has a data member, ``name``, so it is checked on instances, not classes)."""
    check_registered(BACKENDS, backend)


def test_the_port_imports_no_backend() -> None:
    """``lookup.kit.sharedcache`` names its tiers; it imports one only when a URL asks."""
    check_port_imports_no_backend("lookup.kit.sharedcache", ("redis",))


def test_the_factory_gives_a_versioned_shared_cache(tier: Tier) -> None:
    assert isinstance(tier.cache, VersionedSharedCache)


def test_it_has_a_name(tier: Tier) -> None:
    assert isinstance(tier.cache.name, str) and tier.cache.name


def test_a_missing_key_misses(tier: Tier) -> None:
    assert tier.cache.get("never-set") is None
    tier.cache.delete("never-set")  # deleting what is not there is fine


def test_set_then_get(tier: Tier) -> None:
    tier.cache.set("k", b"\x00value\xff", 60)
    assert tier.cache.get("k") == (b"\x00value\xff" if tier.holds else None)


def test_overwrite_keeps_the_newest(tier: Tier) -> None:
    tier.cache.set("k", b"old", 60)
    tier.cache.set("k", b"new", 60)
    assert tier.cache.get("k") == (b"new" if tier.holds else None)


def test_delete_invalidates(tier: Tier) -> None:
    tier.cache.set("k", b"v", 60)
    tier.cache.delete("k")
    assert tier.cache.get("k") is None


def test_keys_are_independent(tier: Tier) -> None:
    tier.cache.set("a", b"1", 60)
    tier.cache.set("b", b"2", 60)
    tier.cache.delete("a")
    assert tier.cache.get("a") is None
    assert tier.cache.get("b") == (b"2" if tier.holds else None)


def test_an_entry_expires_after_its_ttl(tier: Tier) -> None:
    tier.cache.set("short", b"s", 5)
    tier.cache.set("long", b"l", 100)
    tier.clock.now += 4.5
    assert tier.cache.get("short") == (b"s" if tier.holds else None)
    tier.clock.now += 1.0
    assert tier.cache.get("short") is None
    assert tier.cache.get("long") == (b"l" if tier.holds else None)


def test_an_empty_value_is_a_value(tier: Tier) -> None:
    tier.cache.set("empty", b"", 60)
    assert tier.cache.get("empty") == (b"" if tier.holds else None)


def test_an_unknown_url_names_the_accepted_ones() -> None:
    with pytest.raises(ValueError, match="memory:"):
        open_shared_cache("sqlite:///tmp/cache.sqlite")


# -- the versioned half: compare-and-set fills and invalidations told to watchers ---------


@pytest.fixture
def versioned(tier: Tier) -> VersionedSharedCache:
    if not isinstance(tier.cache, VersionedSharedCache):
        pytest.skip(f"{tier.cache.name} has no versioned fills")
    return tier.cache


def test_a_fill_after_a_read_is_kept(tier: Tier, versioned: VersionedSharedCache) -> None:
    read = versioned.lookup("k")
    assert read.value is None
    written = versioned.fill("k", b"v1", 60, read.token, 1)
    assert written is tier.holds
    assert versioned.lookup("k").value == (b"v1" if tier.holds else None)


def test_a_fill_after_an_invalidation_is_refused(versioned: VersionedSharedCache) -> None:
    read = versioned.lookup("k")  # a slow reader: read the tier, then the store (old record)
    versioned.delete("k")  # meanwhile a writer commits and invalidates
    assert versioned.fill("k", b"old", 60, read.token, 1) is False
    assert versioned.get("k") is None


def test_an_older_version_never_overwrites_a_newer_one(
    tier: Tier, versioned: VersionedSharedCache
) -> None:
    token = versioned.lookup("k").token
    assert versioned.fill("k", b"new", 60, token, 20) is tier.holds
    assert versioned.fill("k", b"old", 60, token, 10) is False
    assert versioned.get("k") == (b"new" if tier.holds else None)
    assert versioned.fill("k", b"newer", 60, versioned.lookup("k").token, 30) is tier.holds
    assert versioned.get("k") == (b"newer" if tier.holds else None)


def test_invalidations_reach_every_watcher(tier: Tier, versioned: VersionedSharedCache) -> None:
    if not tier.holds:
        pytest.skip("the null tier has nobody to tell")
    if versioned.name == "redis":  # another process's view: a second client of the same tier
        url, prefix = versioned.url, versioned.prefix  # type: ignore[attr-defined]
        other = open_shared_cache(f"{url}?prefix={prefix}")
    else:
        other = versioned
    heard: list[str | None] = []
    got = threading.Event()

    def watcher(key: str | None) -> None:
        heard.append(key)
        got.set()

    other.watch(watcher)  # type: ignore[attr-defined]
    wait = getattr(other, "wait_subscribed", None)
    if wait is not None:
        assert wait(10)
    versioned.delete("changed")
    assert got.wait(10)
    assert heard == ["changed"]
    if other is not versioned:
        other.close()  # type: ignore[attr-defined]


def test_it_describes_itself_without_secrets(versioned: VersionedSharedCache) -> None:
    text = versioned.describe()
    assert isinstance(text, str) and text and "@" not in text
