"""The cache tier the patterns run on: one interface, an in-process tier and Redis, and many
standalone ``redis-server``s behind a client-side ring.

- :class:`CacheTier` — what the patterns need: ``get`` a value or a miss (a tier that
  cannot answer is a miss, counted in ``failures``, never an exception), ``set`` with a TTL
  in milliseconds, the remaining TTL (refresh-ahead), a lease for a single loader
  (``SET NX PX`` on Redis), pipelined warming, ``flush``;
- :class:`MemoryTier` — the embedded tier (a dict with expiry times, one lock), for runs
  without a server; :class:`RedisTier` — one Redis; :func:`open_cache_tier` picks one from
  ``memory:`` or ``redis://host:port/db[?prefix=P]``.
- :class:`RingCache` — the seed's "memcached model": the servers know nothing of each
  other; the *client* hashes each key onto :class:`lookup.kit.ring.HashRing` and talks to
  that key's node only. A dead node costs the misses of its share of keys (about 1/N);
  removing it from the ring remaps only that share.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Protocol, cast
from urllib.parse import parse_qs, urlsplit

import redis

from lookup.kit.engines.redis import UNAVAILABLE, redis_client
from lookup.kit.ring import HashRing

__all__ = ["CacheTier", "MemoryTier", "RedisTier", "RingCache", "open_cache_tier"]

#: What a Redis tier counts as a failure (and answers as a miss).
_FAILURES: tuple[type[Exception], ...] = (*UNAVAILABLE, redis.RedisError)


class CacheTier(Protocol):
    """A cache tier whose failures are misses; TTLs in milliseconds."""

    failures: Counter[str]

    def get(self, key: str) -> str | None: ...

    def get_with_ttl(self, key: str) -> tuple[str | None, int]: ...

    def set(self, key: str, value: str, ttl_ms: int | None = None) -> bool: ...

    def set_many(self, items: Iterable[tuple[str, str, int | None]]) -> None: ...

    def delete(self, key: str) -> None: ...

    def lease(self, key: str, ttl_ms: int) -> bool: ...

    def release(self, key: str) -> None: ...

    def flush(self) -> None: ...

    def close(self) -> None: ...


class MemoryTier:
    """The embedded tier: one process's dict of (value, expiry), behind one lock."""

    def __init__(self, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._data: dict[str, tuple[str, float | None]] = {}
        self._lock = threading.Lock()
        self.failures: Counter[str] = Counter()

    def _live(self, key: str) -> tuple[str, float | None] | None:
        item = self._data.get(key)
        if item is not None and item[1] is not None and item[1] <= self._clock():
            del self._data[key]
            return None
        return item

    def get(self, key: str) -> str | None:
        with self._lock:
            item = self._live(key)
        return None if item is None else item[0]

    def get_with_ttl(self, key: str) -> tuple[str | None, int]:
        with self._lock:
            item = self._live(key)
            now = self._clock()
        if item is None:
            return None, -2
        return item[0], -1 if item[1] is None else int((item[1] - now) * 1000)

    def set(self, key: str, value: str, ttl_ms: int | None = None) -> bool:
        with self._lock:
            self._data[key] = (value, None if ttl_ms is None else self._clock() + ttl_ms / 1000)
        return True

    def set_many(self, items: Iterable[tuple[str, str, int | None]]) -> None:
        for key, value, ttl in items:
            self.set(key, value, ttl)

    def delete(self, key: str) -> None:
        with self._lock:
            self._data.pop(key, None)

    def lease(self, key: str, ttl_ms: int) -> bool:
        with self._lock:
            if self._live(f"lease:{key}") is not None:
                return False
            self._data[f"lease:{key}"] = ("1", self._clock() + ttl_ms / 1000)
            return True

    def release(self, key: str) -> None:
        self.delete(f"lease:{key}")

    def flush(self) -> None:
        with self._lock:
            self._data.clear()

    def close(self) -> None:
        self.flush()


def open_cache_tier(url: str, *, timeout_s: float = 0.25) -> CacheTier:
    """``memory:`` (in this process) or ``redis://host:port/db[?prefix=P]``."""
    parts = urlsplit(url.strip())
    if parts.scheme == "memory":
        return MemoryTier()
    if parts.scheme == "redis":
        prefix = parse_qs(parts.query).get("prefix", ["cache:"])[0]
        return RedisTier(parts._replace(query="").geturl(), timeout_s=timeout_s, prefix=prefix)
    raise ValueError(f"unknown cache tier URL {url!r}; use memory: or redis://host:port/db")


class RedisTier:
    """One Redis as a cache tier whose failures are misses."""

    def __init__(self, url: str, *, timeout_s: float = 0.25, prefix: str = "cache:",
                 max_connections: int | None = None) -> None:  # fmt: skip
        self.url = url
        self.prefix = prefix
        self.client = redis_client(url, timeout_s=timeout_s, max_connections=max_connections)
        self.failures: Counter[str] = Counter()

    def get(self, key: str) -> str | None:
        try:
            # bytes: the client is made without decode_responses
            value = cast("bytes | None", self.client.get(self.prefix + key))
        except _FAILURES as exc:
            self.failures[type(exc).__name__] += 1
            return None
        return None if value is None else value.decode()

    def get_with_ttl(self, key: str) -> tuple[str | None, int]:
        """The value and its remaining lifetime in ms (-2 absent, -1 no expiry)."""
        try:
            pipe = self.client.pipeline(transaction=False)
            pipe.get(self.prefix + key)
            pipe.pttl(self.prefix + key)
            value, ttl = pipe.execute()
        except _FAILURES as exc:
            self.failures[type(exc).__name__] += 1
            return None, -2
        return (None if value is None else value.decode()), int(ttl)

    def set(self, key: str, value: str, ttl_ms: int | None = None) -> bool:
        try:
            return bool(self.client.set(self.prefix + key, value, px=ttl_ms))
        except _FAILURES as exc:
            self.failures[type(exc).__name__] += 1
            return False

    def set_many(self, items: Iterable[tuple[str, str, int | None]]) -> None:
        """Pipelined ``SET … PX`` of (key, value, ttl ms) — warming a tier."""
        try:
            pipe = self.client.pipeline(transaction=False)
            for key, value, ttl in items:
                pipe.set(self.prefix + key, value, px=ttl)
            pipe.execute()
        except _FAILURES as exc:
            self.failures[type(exc).__name__] += 1

    def delete(self, key: str) -> None:
        try:
            self.client.delete(self.prefix + key)
        except _FAILURES as exc:
            self.failures[type(exc).__name__] += 1

    def lease(self, key: str, ttl_ms: int) -> bool:
        """Take the load lease of ``key`` (``SET NX PX``): True for the one caller that
        should load it; it lapses by itself if that caller dies."""
        try:
            return bool(self.client.set(f"{self.prefix}lease:{key}", "1", nx=True, px=ttl_ms))
        except _FAILURES as exc:
            self.failures[type(exc).__name__] += 1
            return True  # no tier, no lease: load (the store is the truth)

    def release(self, key: str) -> None:
        self.delete(f"lease:{key}")

    def flush(self) -> None:
        """Drop every key of this tier's prefix (between experiments)."""
        try:
            keys = list(self.client.scan_iter(match=self.prefix + "*", count=1000))
            for i in range(0, len(keys), 1000):
                self.client.delete(*keys[i : i + 1000])
        except _FAILURES as exc:
            self.failures[type(exc).__name__] += 1

    def close(self) -> None:
        self.client.close()


class RingCache:
    """Client-side consistent hashing over independent Redis nodes (name → URL)."""

    def __init__(self, nodes: dict[str, str], *, vnodes: int = 160,
                 timeout_s: float = 0.25) -> None:  # fmt: skip
        self.ring = HashRing(nodes, vnodes=vnodes)
        self.tiers = {name: RedisTier(url, timeout_s=timeout_s) for name, url in nodes.items()}

    def node_for(self, key: str) -> str:
        return self.ring.node_for(key)

    def get(self, key: str) -> str | None:
        return self.tiers[self.ring.node_for(key)].get(key)

    def set(self, key: str, value: str, ttl_ms: int | None = None) -> bool:
        return self.tiers[self.ring.node_for(key)].set(key, value, ttl_ms)

    def remove(self, name: str) -> None:
        """Take a node off the ring (what a failure detector does); its keys remap."""
        self.ring.remove(name)

    def failures(self) -> dict[str, int]:
        return {name: sum(t.failures.values()) for name, t in self.tiers.items()}

    def close(self) -> None:
        for t in self.tiers.values():
            t.close()
