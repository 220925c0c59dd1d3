"""The shared cache: one cache tier for every process of a service, between each process's
in-process LRU and the store.

Values are bytes, so any network cache can hold them, and a cache is never the source of
truth: losing the tier costs misses, never data. A tier shared by *processes* needs more
than get/set/delete (:class:`SharedCache`): a read that also returns an invalidation token
(:meth:`VersionedSharedCache.lookup`), a compare-and-set fill that refuses to write once
the key was invalidated since that read or over a newer version
(:meth:`VersionedSharedCache.fill`), and a feed of invalidations made anywhere
(:meth:`VersionedSharedCache.watch`), so every process can drop its own in-process copy.
An invalidation the tier cannot take now goes to an :class:`InvalidationOutbox` kept
beside the records (the link store), which any process sends later.

This package is the seam. Its ``__init__`` is the port and imports no backend: the
protocols above, :class:`CacheRead`, :data:`BACKENDS` (the registry
``scheme → "module:Class"``) and :func:`open_shared_cache`, which imports the backend a
URL names when it is called. The backends:

* :mod:`.null` — ``none:`` (or no URL): no tier at all, the embedded default;
* :mod:`.memory` — ``memory:``: a tier inside one process (bytes in a TTL LRU), with
  versioned fills and invalidations told to every watcher;
* :mod:`.redis` — ``redis://host:port/db[?prefix=P]``: the tier a fleet shares
  (compare-and-set fills in Lua, pub/sub invalidation, a circuit breaker, the outbox).

Adding a backend is one file with a class that has ``from_url`` plus one line in
:data:`BACKENDS`; ``tests/contracts/test_shared_cache_contract.py`` then runs against it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple, Protocol, TypeAlias, cast, runtime_checkable

from lookup.kit.engines.storeurl import parse_store_url
from lookup.kit.registry import Backend as SeamBackend
from lookup.kit.registry import load_backend

__all__ = [
    "BACKENDS",
    "Backend",
    "CacheRead",
    "InvalidationOutbox",
    "SharedCache",
    "VersionedSharedCache",
    "backend",
    "open_shared_cache",
]

#: Each URL scheme and the class that serves it, imported when a URL names the scheme.
BACKENDS: dict[str, str] = {
    "none": "lookup.kit.sharedcache.null:NullSharedCache",
    "memory": "lookup.kit.sharedcache.memory:MemorySharedCache",
    "redis": "lookup.kit.sharedcache.redis:RedisSharedCache",
}

#: How a scheme is written when the factory refuses a URL (a server's scheme: ``s://``).
_SPELLINGS = {"none": "none:", "memory": "memory:"}


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


#: What :data:`BACKENDS` names: a class whose ``from_url(url, clock=...)`` opens a
#: :class:`SharedCache` (a tier timed by its own server ignores ``clock``).
Backend: TypeAlias = SeamBackend[SharedCache]


def backend(scheme: str) -> Backend:
    """The class registered for ``scheme`` in :data:`BACKENDS`, imported now (ValueError
    naming the registered schemes for another)."""
    return cast(Backend, load_backend(BACKENDS, scheme))


def open_shared_cache(
    url: str | None = "", *, clock: Callable[[], float] = time.monotonic
) -> SharedCache:
    """The shared cache tier ``url`` names.

    ``none:`` or an empty URL: no tier (:class:`~.null.NullSharedCache`, the embedded
    default); ``memory:``: a tier inside this process (:class:`~.memory.MemorySharedCache`;
    ``clock`` is its time source); ``redis://host:port/db[?prefix=P]``: the tier every
    process of a fleet shares (:class:`~.redis.RedisSharedCache`, entries timed by Redis,
    so ``clock`` does not apply). An unknown scheme raises ValueError naming the
    registered ones.
    """
    text = (url or "").strip()
    if not text or text.lower() in ("none", "none:"):
        text = "none:"
    try:
        parsed = parse_store_url(text, tuple(BACKENDS))
        if parsed.scheme == "none" and text != "none:":
            raise ValueError(text)  # none: takes no path or parameters
    except ValueError:
        accepted = ", ".join(_SPELLINGS.get(s, f"{s}://") for s in BACKENDS)
        raise ValueError(
            f"unsupported shared cache URL {url!r}; expected one of: {accepted}"
        ) from None
    return cast(SharedCache, backend(parsed.scheme).from_url(parsed, clock=clock))
