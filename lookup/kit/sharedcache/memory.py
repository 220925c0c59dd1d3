"""A shared tier held in one process (``memory:``): what Redis does for a fleet, for the
resolvers of one process — bytes in a TTL LRU (:class:`~lookup.kit.cache.TTLCache`),
versioned fills and invalidations told to every watcher included."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from lookup.kit.cache import MISSING, TTLCache
from lookup.kit.engines.storeurl import StoreUrl
from lookup.kit.sharedcache import CacheRead

__all__ = ["MemorySharedCache"]


class MemorySharedCache:
    """A shared tier held in this process (bytes in a TTL LRU): what Redis does for a fleet,
    for the resolvers of one process — versioned fills and invalidations told to every
    watcher included."""

    name = "memory"

    def __init__(
        self, maxsize: int = 100_000, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._cache: TTLCache[str, bytes] = TTLCache(maxsize, 3600.0, clock=clock)
        self._versions: dict[str, int] = {}
        self._generations: dict[str, int] = {}
        self._watchers: list[Callable[[str | None], None]] = []
        self._lock = threading.RLock()
        self.fills = 0
        self.refused = 0

    @classmethod
    def from_url(
        cls, url: StoreUrl, *, clock: Callable[[], float] = time.monotonic, **options: Any
    ) -> MemorySharedCache:
        """From ``memory:``, timed by ``clock``; it takes no other ``options`` (ignored)."""
        return cls(clock=clock)

    def get(self, key: str) -> bytes | None:
        """The cached bytes, or None."""
        value = self._cache.get(key)
        return None if value is MISSING else value

    def set(self, key: str, value: bytes, ttl: float) -> None:
        """Cache ``value`` for ``ttl`` seconds."""
        self._cache.set(key, value, ttl)

    def delete(self, key: str) -> None:
        """Invalidate ``key``: drop it, bump its counter, tell every watcher."""
        with self._lock:
            self._cache.delete(key)
            self._versions.pop(key, None)
            self._generations[key] = self._generations.get(key, 0) + 1
            watchers = list(self._watchers)
        for fn in watchers:
            fn(key)

    def lookup(self, key: str) -> CacheRead:
        """The cached bytes and the key's invalidation counter."""
        with self._lock:
            return CacheRead(self.get(key), self._generations.get(key, 0))

    def fill(self, key: str, value: bytes, ttl: float, token: Any, version: int) -> bool:
        """Compare-and-set on the invalidation counter and the version (see the protocol)."""
        with self._lock:
            held = self._versions.get(key) if key in self._cache else None
            if self._generations.get(key, 0) != token or (held is not None and held > version):
                self.refused += 1
                return False
            self._versions[key] = version
            self.set(key, value, ttl)
            self.fills += 1
            return True

    def watch(self, fn: Callable[[str | None], None]) -> None:
        """Call ``fn(key)`` after every :meth:`delete`."""
        with self._lock:
            self._watchers.append(fn)

    def listening(self) -> bool:
        """One process: every delete is heard."""
        return True

    def stats(self) -> dict[str, Any]:
        """Fills written and refused, entries held."""
        return {"fills": self.fills, "fillsRefused": self.refused, "size": len(self._cache)}

    def describe(self) -> str:
        """``memory`` (this process only)."""
        return "memory"

    def __len__(self) -> int:
        return len(self._cache)
