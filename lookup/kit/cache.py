"""Caching building blocks for read paths: an LRU with TTL, single-flight, a shared tier.

* :class:`TTLCache` — bounded in-process LRU whose entries also expire after a TTL
  (with optional jitter, so a cohort of keys written together does not expire in the
  same instant and stampede the store together).
* :class:`SingleFlight` / :class:`AsyncSingleFlight` — when many callers miss the same
  key at once, one loads it and the others wait for that result: a viral key that
  falls out of the cache costs one store read, not thousands.
* :class:`SharedCache` — the interface of a cache shared by many processes;
  :class:`NullSharedCache` is the embedded default (no tier at all),
  :class:`MemorySharedCache` a tier inside a single process, and
  :class:`~lookup.kit.cache_redis.RedisSharedCache` the real one (``redis://``).
  :class:`VersionedSharedCache` adds what a tier shared by *processes* needs: a read
  that also returns an invalidation token (:meth:`~VersionedSharedCache.lookup`), a
  compare-and-set fill that refuses to write once the key was invalidated since that
  read or over a newer version (:meth:`~VersionedSharedCache.fill`), and a feed of
  invalidations made anywhere (:meth:`~VersionedSharedCache.watch`), so every process can
  drop its own in-process copy.

A cache is never the source of truth: losing any of these costs misses, never data.
"""

from __future__ import annotations

import asyncio
import random
import threading
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Hashable, Sequence
from typing import Any, Generic, NamedTuple, Protocol, TypeVar, cast, runtime_checkable

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


class SharedCache(Protocol):
    """A cache shared by every process of a service (Redis, memcached, ...).

    Values are bytes so that any network cache can hold them. Implementations must
    never raise for a cache failure on ``get`` — a broken tier is just a miss.
    """

    name: str

    def get(self, key: str) -> bytes | None:
        """The cached bytes, or None on a miss."""
        ...

    def set(self, key: str, value: bytes, ttl: float) -> None:
        """Cache ``value`` for ``ttl`` seconds."""
        ...

    def delete(self, key: str) -> None:
        """Invalidate ``key`` (called on every change to the underlying record)."""
        ...


class CacheRead(NamedTuple):
    """What :meth:`VersionedSharedCache.lookup` found: the bytes (None on a miss) and the
    token a later :meth:`~VersionedSharedCache.fill` must present (None: do not fill —
    the tier holds nothing or cannot be reached)."""

    value: bytes | None
    token: Any


@runtime_checkable
class VersionedSharedCache(SharedCache, Protocol):
    """A shared tier whose fills cannot put an older record over a newer one.

    Every :meth:`delete` of a key bumps that key's invalidation counter and tells every
    watcher; :meth:`fill` writes only if the counter is still what :meth:`lookup` saw
    (no invalidation since the read) and no entry of a higher ``version`` is there.
    """

    def lookup(self, key: str) -> CacheRead:
        """The cached bytes and the fill token, in one round trip."""
        ...

    def fill(self, key: str, value: bytes, ttl: float, token: Any, version: int) -> bool:
        """Compare-and-set: cache ``value`` (of record ``version``) unless ``key`` was
        invalidated since the :meth:`lookup` that gave ``token`` or holds a newer version;
        True if written."""
        ...

    def watch(self, fn: Callable[[str | None], None]) -> None:
        """Call ``fn(key)`` for every invalidation made anywhere, and ``fn(None)`` when some
        may have been missed (the feed was down): drop everything then."""
        ...

    def listening(self) -> bool:
        """True while invalidations made in other processes reach this one; while False
        an in-process copy may be stale, so callers keep theirs only briefly."""
        ...

    def stats(self) -> dict[str, Any]:
        """The tier's own counters (for metrics)."""
        ...

    def describe(self) -> str:
        """What the tier is, for status pages (``redis://host:port/db``; never a password)."""
        ...


@runtime_checkable
class InvalidationOutbox(Protocol):
    """Durable storage, beside the records, of the invalidations a shared tier could not
    send (its server unreachable): any process whose tier is reachable sends them later,
    so one that crashed with an unsent invalidation leaves no stale entry behind."""

    def defer_invalidations(self, keys: Sequence[str]) -> None:
        """Keep ``keys`` to invalidate later (duplicates allowed)."""
        ...

    def deferred_invalidations(self, limit: int) -> list[tuple[int, str]]:
        """Up to ``limit`` kept invalidations, oldest first: ``(id, key)`` each."""
        ...

    def forget_invalidations(self, ids: Sequence[int]) -> None:
        """Drop the kept invalidations ``ids`` (they were sent)."""
        ...


class NullSharedCache:
    """No shared tier at all: every ``get`` misses, writes are dropped."""

    name = "none"

    def get(self, key: str) -> bytes | None:
        """Always a miss."""
        return None

    def set(self, key: str, value: bytes, ttl: float) -> None:
        """Dropped."""

    def delete(self, key: str) -> None:
        """Nothing to invalidate."""

    def lookup(self, key: str) -> CacheRead:
        """A miss that must not be filled."""
        return CacheRead(None, None)

    def fill(self, key: str, value: bytes, ttl: float, token: Any, version: int) -> bool:
        """Nothing is kept."""
        return False

    def watch(self, fn: Callable[[str | None], None]) -> None:
        """No other process shares this tier: nothing to hear."""

    def listening(self) -> bool:
        """Nothing can be missed."""
        return True

    def stats(self) -> dict[str, Any]:
        """No counters of its own."""
        return {}

    def describe(self) -> str:
        """``none``."""
        return "none"


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


#: The shared cache tier's backends that live in modules of their own, by scheme.
REMOTE_BACKENDS = {"redis": "lookup.kit.cache_redis:RedisSharedCache"}


def open_shared_cache(
    url: str | None = "", *, clock: Callable[[], float] = time.monotonic
) -> SharedCache:
    """The shared cache tier ``url`` names.

    ``none:`` or an empty URL: no tier (:class:`NullSharedCache`, the embedded default);
    ``memory:``: a tier inside this process (:class:`MemorySharedCache`; ``clock`` is its
    time source); ``redis://host:port/db[?prefix=P]``: the tier every process of a fleet
    shares (:class:`~lookup.kit.cache_redis.RedisSharedCache`, entries timed by Redis, so
    ``clock`` does not apply). An unknown scheme raises ValueError naming the accepted ones.
    """
    from lookup.kit.engines.storeurl import parse_store_url

    text = (url or "").strip()
    if not text or text.lower() in ("none", "none:"):
        return NullSharedCache()
    try:
        parsed = parse_store_url(text, accepted=("memory", "redis"))
    except ValueError:
        raise ValueError(
            f"unsupported shared cache URL {url!r}; expected one of: none:, memory:, redis://"
        ) from None
    if parsed.scheme == "memory":
        return MemorySharedCache(clock=clock)
    if parsed.scheme == "redis":  # by name: the port never imports its adapter (no cycle)
        from lookup.kit.registry import load_backend

        return load_backend(REMOTE_BACKENDS, "redis").from_url(text)  # type: ignore[no-any-return]
    raise ValueError(f"unsupported shared cache URL {url!r}")  # pragma: no cover
