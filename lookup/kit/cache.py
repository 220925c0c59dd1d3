"""In-process caching for read paths: an LRU with TTL and single-flight.

* :class:`TTLCache` — bounded in-process LRU whose entries also expire after a TTL
  (with optional jitter, so a cohort of keys written together does not expire in the
  same instant and stampede the store together).
* :class:`SingleFlight` / :class:`AsyncSingleFlight` — when many callers miss the same
  key at once, one loads it and the others wait for that result: a viral key that
  falls out of the cache costs one store read, not thousands.

The cache shared by many processes moved to the seam :mod:`lookup.kit.sharedcache`: the
port (``SharedCache``, ``VersionedSharedCache``, ``CacheRead``, ``InvalidationOutbox``,
``open_shared_cache``) in its ``__init__``, the tiers in ``null.py``
(``NullSharedCache``), ``memory.py`` (``MemorySharedCache``) and ``redis.py``
(``RedisSharedCache``, formerly ``lookup.kit.cache_redis``). Those names are still
importable from here for one release; the tiers are loaded when first used (the memory
tier is built on this module's :class:`TTLCache`).

A cache is never the source of truth: losing any of these costs misses, never data.
"""

from __future__ import annotations

import asyncio
import random
import threading
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Hashable
from typing import Any, Generic, TypeVar, cast

from lookup.kit.lazy import lazy_exports
from lookup.kit.sharedcache import (
    CacheRead,
    InvalidationOutbox,
    SharedCache,
    VersionedSharedCache,
    open_shared_cache,
)

__all__ = [
    "MISSING",
    "AsyncSingleFlight",
    "CacheRead",
    "InvalidationOutbox",
    "SharedCache",
    "SingleFlight",
    "TTLCache",
    "VersionedSharedCache",
    "open_shared_cache",
]

#: The shared cache's tiers, kept here for one release (now :mod:`lookup.kit.sharedcache`),
#: imported when the name is used (so not in ``__all__``): the memory tier imports this module.
__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "MemorySharedCache": "lookup.kit.sharedcache.memory",
        "NullSharedCache": "lookup.kit.sharedcache.null",
    },
)

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")
T = TypeVar("T")


class _Missing:
    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"

    def __bool__(self) -> bool:
        return False


#: Returned by :meth:`TTLCache.get` when there is no live entry (``None`` is a valid value).
MISSING: Any = _Missing()


class TTLCache(Generic[K, V]):
    """A thread-safe LRU of at most ``maxsize`` entries, each living ``ttl`` seconds.

    ``get`` returns :data:`MISSING` for absent or expired keys. ``jitter`` spreads each
    entry's lifetime uniformly over ``ttl × [1 - jitter, 1 + jitter]``.
    """

    def __init__(
        self,
        maxsize: int,
        ttl: float,
        *,
        jitter: float = 0.0,
        clock: Callable[[], float] = time.monotonic,
        rng: random.Random | None = None,
    ) -> None:
        if maxsize < 1:
            raise ValueError("maxsize must be at least 1")
        if ttl <= 0:
            raise ValueError("ttl must be positive")
        if not 0.0 <= jitter < 1.0:
            raise ValueError("jitter must be in [0, 1)")
        self.maxsize = maxsize
        self.ttl = ttl
        self.jitter = jitter
        self._clock = clock
        self._rng = rng or random.Random()
        self._data: OrderedDict[K, tuple[V, float]] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0
        self.expirations = 0
        self.evictions = 0

    def get(self, key: K) -> V:
        """The live value for ``key`` (and mark it recently used), else :data:`MISSING`."""
        with self._lock:
            item = self._data.get(key)
            if item is None:
                self.misses += 1
                return MISSING
            value, deadline = item
            if self._clock() >= deadline:
                del self._data[key]
                self.expirations += 1
                self.misses += 1
                return MISSING
            self._data.move_to_end(key)
            self.hits += 1
            return value

    def set(self, key: K, value: V, ttl: float | None = None) -> None:
        """Store ``value``; evicts the least recently used entry when full."""
        life = self.ttl if ttl is None else ttl
        if self.jitter:
            life *= self._rng.uniform(1.0 - self.jitter, 1.0 + self.jitter)
        with self._lock:
            self._data[key] = (value, self._clock() + life)
            self._data.move_to_end(key)
            while len(self._data) > self.maxsize:
                self._data.popitem(last=False)
                self.evictions += 1

    def delete(self, key: K) -> bool:
        """Drop ``key``; True if it was present."""
        with self._lock:
            return self._data.pop(key, None) is not None

    def clear(self) -> None:
        """Drop every entry (counters are kept)."""
        with self._lock:
            self._data.clear()

    def __len__(self) -> int:
        return len(self._data)

    def __contains__(self, key: object) -> bool:
        with self._lock:
            item = self._data.get(cast(K, key))
            return item is not None and self._clock() < item[1]

    def stats(self) -> dict[str, int]:
        """Counters: hits, misses, expirations, evictions, size, maxsize."""
        return {
            "hits": self.hits,
            "misses": self.misses,
            "expirations": self.expirations,
            "evictions": self.evictions,
            "size": len(self._data),
            "maxsize": self.maxsize,
        }


class _Call:
    __slots__ = ("done", "value", "error", "waiters")

    def __init__(self) -> None:
        self.done = threading.Event()
        self.value: Any = None
        self.error: BaseException | None = None
        self.waiters = 0


class SingleFlight:
    """Collapse concurrent loads of one key (threads) into a single call.

    The first caller for a key runs ``fn``; callers arriving while it runs wait and
    receive the same result (or the same exception). ``collapsed`` counts the callers
    that were spared a load.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._calls: dict[Hashable, _Call] = {}
        self.loads = 0
        self.collapsed = 0

    def do(self, key: Hashable, fn: Callable[[], T]) -> T:
        """``fn()``'s result, shared with every concurrent caller for the same ``key``."""
        with self._lock:
            call = self._calls.get(key)
            if call is not None:
                call.waiters += 1
                self.collapsed += 1
                leader = False
            else:
                call = self._calls[key] = _Call()
                self.loads += 1
                leader = True
        if not leader:
            call.done.wait()
            if call.error is not None:
                raise call.error
            return call.value  # type: ignore[no-any-return]
        try:
            call.value = fn()
        except BaseException as exc:
            call.error = exc
            raise
        finally:
            with self._lock:
                del self._calls[key]
            call.done.set()
        return call.value  # type: ignore[no-any-return]

    def in_flight(self) -> int:
        """How many distinct keys are being loaded right now."""
        return len(self._calls)


class AsyncSingleFlight:
    """Collapse concurrent loads of one key (asyncio tasks) into a single awaitable.

    Must be used from one event loop. The leader's load is shielded: a waiter that is
    cancelled does not cancel the load the others are waiting for.
    """

    def __init__(self) -> None:
        self._futures: dict[Hashable, asyncio.Future[Any]] = {}
        self.loads = 0
        self.collapsed = 0

    async def do(self, key: Hashable, fn: Callable[[], Awaitable[T]]) -> T:
        """The result of ``await fn()``, shared with every concurrent caller for ``key``."""
        fut = self._futures.get(key)
        if fut is not None:
            self.collapsed += 1
            return await asyncio.shield(fut)  # type: ignore[no-any-return]
        self.loads += 1
        fut = asyncio.ensure_future(fn())
        self._futures[key] = fut

        def _forget(done: asyncio.Future[Any]) -> None:
            if self._futures.get(key) is done:
                del self._futures[key]
            if not done.cancelled():
                done.exception()  # mark retrieved even if every waiter went away

        fut.add_done_callback(_forget)
        return await asyncio.shield(fut)  # type: ignore[no-any-return]

    def in_flight(self) -> int:
        """How many distinct keys are being loaded right now."""
        return len(self._futures)
