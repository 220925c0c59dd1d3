"""The read path: key → link through three layers, each with its own counters.

1. an in-process LRU with TTL (:class:`~lookup.kit.cache.TTLCache`) for the hot keys —
   a hit touches no lock but the cache's own, no thread and no SQLite;
2. a negative cache (≈30 s) of keys the store does not have, kept apart from the LRU
   so a scraper guessing keys cannot evict the hot set;
3. a pluggable shared tier (:class:`~lookup.kit.sharedcache.SharedCache`; none by default,
   ``redis://`` for a fleet) and finally the :class:`~lookup.shortener.links.LinkStore`.

A tier shared by processes (:class:`~lookup.kit.sharedcache.VersionedSharedCache`: Redis) adds
two guarantees. A fill is a compare-and-set inside the tier — refused if the key was
invalidated anywhere since this load read the tier, or if a newer version of the link
(its ``updated_at``) is already there — so a slow load never puts an old record back.
And the tier tells every process of every invalidation (Redis pub/sub), so a link
disabled or retargeted through one process stops being served from the L1 of all the
others at once; when that feed was interrupted the whole L1 is dropped. An invalidation
Redis could not take is kept in the link store (the tier's outbox) until some process
can send it, so a process that crashed during an outage leaves nothing stale behind.

Misses go through single-flight, so when a viral key expires from the cache the many
requests that miss together cost one load. Writes call :meth:`Resolver.invalidate`;
a load that started before an invalidation *of its key* (or a :meth:`Resolver.clear`)
does not put its possibly stale result back. Invalidations of other keys leave it
alone: a scanner verdict on one link must not make every load in flight a wasted read.

Keys are case-insensitive: every layer is keyed by the *lookup key*
(:meth:`Resolver.lookup_key`: the fold of ``key`` or ``key@domain``), so ``IPL-Final`` and
``ipl-final`` share one entry and one invalidation drops both.

The resolver returns the stored record; the expiry rule (:func:`~lookup.shortener.model.verdict`)
is applied by the caller on every read, so caching never delays an expiry.

Every call of the shortener that may wait on a store — the link store, the shared tier, a
rate limit kept on Redis — runs in a worker thread of :data:`STORE_LANE`, never on the
event loop, and at most that many at once: a store that hangs (PostgreSQL down) holds the
shortener's own requests that need it, and neither cached redirects nor other systems.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, replace
from typing import Any

from lookup.kit.cache import MISSING, AsyncSingleFlight, SingleFlight, TTLCache
from lookup.kit.sharedcache import InvalidationOutbox, SharedCache, VersionedSharedCache
from lookup.kit.sharedcache.null import NullSharedCache
from lookup.kit.threads import ThreadLane
from lookup.shortener.links import LinkStore
from lookup.shortener.links.sqldomains import EXACT_ONLY
from lookup.shortener.model import Link, Status
from lookup.shortener.rules import RuleStore
from lookup.shortener.rules.model import decode_rules, encode_rules

log = logging.getLogger("lookup.shortener.resolver")

_NEGATIVE = b"\x00NOT_FOUND"

#: The worker threads of the shortener's store calls (see the module docstring).
STORE_LANE = ThreadLane("shortener", 40)
#: Keys being read again in the background at once, at most (see ``Resolver._revalidate``).
_MAX_REVALIDATING = 256


def encode_link(link: Link) -> bytes:
    """The bytes a shared cache holds for a link."""
    data = asdict(link)
    data["status"] = link.status.value
    data["tags"] = list(link.tags)
    data["rules"] = encode_rules(link.rules)
    return json.dumps(data, separators=(",", ":")).encode()


def decode_link(raw: bytes) -> Link:
    """Inverse of :func:`encode_link`."""
    data = json.loads(raw)
    data["status"] = Status(data["status"])
    data["tags"] = tuple(data["tags"])
    data["scan_reasons"] = tuple(data.get("scan_reasons", ()))  # absent in older entries
    data["rules"] = decode_rules(data.get("rules", ()))
    return Link(**data)


def _exact_only_keys(store: LinkStore) -> list[str]:
    """The store's exact-spelling-only keys (none for a store without the case rule)."""
    keys = getattr(store, "exact_only_keys", None)
    return [] if keys is None else list(keys())


class _Load:
    """One load in flight; ``stale`` once its key is invalidated before it fills."""

    __slots__ = ("stale",)

    def __init__(self) -> None:
        self.stale = False


class Resolver:
    """Cached ``key → Link`` lookups in front of the link store (see the module docstring)."""

    def __init__(
        self,
        store: LinkStore,
        *,
        cache_size: int = 100_000,
        cache_ttl_s: float = 60.0,
        cache_jitter: float = 0.1,
        negative_ttl_s: float = 30.0,
        negative_size: int = 100_000,
        shared: SharedCache | None = None,
        shared_ttl_s: float = 300.0,
        unwatched_ttl_s: float = 1.0,
        unheard_writers: bool = False,
        clock: Callable[[], float] = time.monotonic,
        rules: RuleStore | None = None,
    ) -> None:
        self.store = store
        #: Keys from before the case rule that answer to their exact spelling only.
        self.exact_only: frozenset[str] = frozenset(_exact_only_keys(store))
        #: Where links' redirect rules live; read with the link on a load, cached with it.
        self.rules = rules
        #: Other processes write this store and no tier tells us (a shared store with no
        #: shared cache): a copy older than ``unwatched_ttl_s`` is served while the store is
        #: read again in the background (stale-while-revalidate), so another worker's change
        #: shows within about a second and a store outage still serves what is cached.
        self.unheard_writers = unheard_writers
        self.fresh: TTLCache[str, bool] = TTLCache(cache_size, unwatched_ttl_s, clock=clock)
        self._revalidating: set[str] = set()
        self._refresher: ThreadPoolExecutor | None = None
        self.revalidations = 0
        self.revalidation_errors = 0
        self.cache: TTLCache[str, Link] = TTLCache(
            cache_size, cache_ttl_s, jitter=cache_jitter, clock=clock
        )
        self.negative: TTLCache[str, bool] = TTLCache(negative_size, negative_ttl_s, clock=clock)
        self.shared: SharedCache = shared if shared is not None else NullSharedCache()
        self.shared_ttl_s = shared_ttl_s
        self.unwatched_ttl_s = unwatched_ttl_s
        self.negative_ttl_s = negative_ttl_s
        self.flight = SingleFlight()
        self.aflight = AsyncSingleFlight()
        self._lock = threading.Lock()  # orders fills against invalidations
        self._loading: dict[str, list[_Load]] = {}  # keys with loads in flight
        self.requests = 0
        self.l1_hits = 0
        self.negative_hits = 0
        self.shared_hits = 0
        self.shared_negative_hits = 0
        self.shared_misses = 0
        self.shared_errors = 0
        self.store_reads = 0
        self.store_not_found = 0
        self.invalidations = 0
        self.stale_fills_skipped = 0
        self.shared_fills = 0
        self.shared_fills_refused = 0
        self.remote_invalidations = 0
        self.remote_clears = 0
        self._versioned = isinstance(self.shared, VersionedSharedCache)
        if self._versioned:
            self.shared.watch(self._heard_invalidation)  # type: ignore[attr-defined]
            use_outbox = getattr(self.shared, "use_outbox", None)
            if use_outbox is not None and isinstance(store, InvalidationOutbox):
                use_outbox(store)  # an unsent invalidation outlives this process

    # -- lookups -----------------------------------------------------------------------

    def cached(self, key: str) -> Any:
        """What the in-process layers know of the lookup key ``key`` (:meth:`lookup_key`)
        without any I/O: a Link, None (known missing) or :data:`~lookup.kit.cache.MISSING`
        (must load)."""
        self.requests += 1
        link = self.cache.get(key)
        if link is not MISSING:
            self.l1_hits += 1
            if self.unheard_writers and self.fresh.get(key) is MISSING:
                self._revalidate(key)
            return link
        if self.negative.get(key) is not MISSING:
            self.negative_hits += 1
            return None
        return MISSING

    def resolve(self, key: str) -> Link | None:
        """The link for ``key`` in any spelling (or None), from the nearest layer that has
        it. Thread-safe."""
        key = self.lookup_key(key)
        found = self.cached(key)
        if found is not MISSING:
            return found  # type: ignore[no-any-return]
        return self.flight.do(key, lambda: self._load(key))

    async def aresolve(self, key: str) -> Link | None:
        """Like :meth:`resolve` for an event loop: a cache hit never leaves the loop; a miss
        loads in a worker thread, once per key however many requests wait for it."""
        key = self.lookup_key(key)
        found = self.cached(key)
        if found is not MISSING:
            return found  # type: ignore[no-any-return]
        return await self.load(key)

    async def load(self, key: str) -> Link | None:
        """Load the lookup key ``key`` past the in-process layers (single-flight, in a
        worker thread)."""
        return await self.aflight.do(key, lambda: STORE_LANE.run(self._load, key))

    def _load(self, key: str) -> Link | None:
        ticket = self._begin(key)
        link: Link | None = None
        try:
            raw, token = self._shared_read(key)
            if raw is not None and raw == _NEGATIVE:
                self.shared_negative_hits += 1
            elif raw is not None:
                self.shared_hits += 1
                link = decode_link(raw)
            else:
                self.shared_misses += 1
                self.store_reads += 1
                link = self.store.get_folded(key)
                if link is None:
                    self.store_not_found += 1
                elif self.rules is not None and not link.is_tombstone:
                    rules = self.rules.get(link.key)
                    if rules:
                        link = replace(link, rules=rules)
                if not ticket.stale:
                    self._shared_fill(key, link, token)
                    if ticket.stale:  # invalidated while we wrote: take our entry back
                        self._shared_delete(key)
        except BaseException:
            self._finish(key, ticket, None, fill=False)
            raise
        self._finish(key, ticket, link)
        return link

    def _shared_read(self, key: str) -> tuple[bytes | None, Any]:
        """The tier's bytes and, for a versioned tier, its fill token."""
        if not self._versioned:
            return self._shared_get(key), None
        try:
            return self.shared.lookup(key)  # type: ignore[attr-defined,no-any-return]
        except Exception:
            self.shared_errors += 1
            log.warning("shared cache %s failed on lookup", self.shared.name, exc_info=True)
            return None, None

    def _shared_fill(self, key: str, link: Link | None, token: Any) -> None:
        value = _NEGATIVE if link is None else encode_link(link)
        ttl = self.negative_ttl_s if link is None else self.shared_ttl_s
        if not self._versioned:
            self._shared_set(key, value, ttl)
            return
        if token is None:  # the tier is out of reach: nothing to fill
            return
        version = 0 if link is None else int(link.updated_at * 1_000_000)
        try:
            written = self.shared.fill(key, value, ttl, token, version)  # type: ignore[attr-defined]
        except Exception:
            self.shared_errors += 1
            log.warning("shared cache %s failed on fill", self.shared.name, exc_info=True)
            return
        if written:
            self.shared_fills += 1
        else:
            self.shared_fills_refused += 1

    def _begin(self, key: str) -> _Load:
        ticket = _Load()
        with self._lock:
            self._loading.setdefault(key, []).append(ticket)
        return ticket

    def _finish(self, key: str, ticket: _Load, link: Link | None, *, fill: bool = True) -> None:
        """Fill the in-process layers unless ``key`` was invalidated since the load began;
        under the lock, so an invalidation lands either before the check or after the fill."""
        with self._lock:
            tickets = self._loading[key]
            tickets.remove(ticket)
            if not tickets:
                del self._loading[key]
            if not fill:
                return
            if ticket.stale:
                self.stale_fills_skipped += 1
            elif link is None:
                self.negative.set(key, True, self._l1_ttl(self.negative_ttl_s, negative=True))
            else:
                self.cache.set(key, link, self._l1_ttl(None))
                if self.unheard_writers:
                    self.fresh.set(key, True)

    def _l1_ttl(self, ttl: float | None, *, negative: bool = False) -> float | None:
        """``ttl`` — or, while this process cannot hear other processes' invalidations (a
        versioned tier whose feed is down; for misses, also a shared store with no tier),
        no more than ``unwatched_ttl_s``: a copy kept then may be changed elsewhere without
        our knowing. (Links under unheard writers are revalidated instead: :meth:`cached`.)"""
        if (negative and self.unheard_writers) or (
            self._versioned and not self.shared.listening()  # type: ignore[attr-defined]
        ):
            return min(self.unwatched_ttl_s, ttl or self.unwatched_ttl_s)
        return ttl

    def _revalidate(self, key: str) -> None:
        """Read ``key`` from the store again in a background thread (once at a time per key,
        at most :data:`_MAX_REVALIDATING` keys at once); the caller serves its copy now."""
        with self._lock:
            if key in self._revalidating or len(self._revalidating) >= _MAX_REVALIDATING:
                return
            self._revalidating.add(key)
            if self._refresher is None:
                self._refresher = ThreadPoolExecutor(2, thread_name_prefix="revalidate")
        self._refresher.submit(self._run_revalidation, key)

    def _run_revalidation(self, key: str) -> None:
        try:
            link = self.flight.do(key, lambda: self._load(key))
            if link is None:  # deleted elsewhere: our copy must go too
                with self._lock:
                    self.cache.delete(key)
            self.revalidations += 1
        except Exception as exc:  # the store is away: keep serving the copy until its TTL
            self.revalidation_errors += 1
            log.debug("revalidating %r failed: %s", key, exc)
        finally:
            with self._lock:
                self._revalidating.discard(key)

    def _shared_get(self, key: str) -> bytes | None:
        try:
            return self.shared.get(key)
        except Exception:  # a broken shared tier is a miss, never an error
            self.shared_errors += 1
            log.warning("shared cache %s failed on get", self.shared.name, exc_info=True)
            return None

    def _shared_set(self, key: str, value: bytes, ttl: float) -> None:
        try:
            self.shared.set(key, value, ttl)
        except Exception:
            self.shared_errors += 1
            log.warning("shared cache %s failed on set", self.shared.name, exc_info=True)

    # -- writes ------------------------------------------------------------------------

    def lookup_key(self, key: str) -> str:
        """The cache's and :meth:`~lookup.shortener.links.LinkStore.get_folded`'s key for a
        stored key or a visitor's spelling of one: its fold (keys are case-insensitive), or
        ``'!' + key`` for a key from before the rule that only its exact spelling reaches."""
        if self.exact_only and key in self.exact_only:
            return EXACT_ONLY + key
        return key.lower()

    def invalidate(self, key: str) -> None:
        """Drop the stored key ``key`` from every layer now (after a create, retarget,
        delete or disable)."""
        key = self.lookup_key(key)
        with self._lock:
            for ticket in self._loading.get(key, ()):
                ticket.stale = True
            self.invalidations += 1
            self.cache.delete(key)
            self.negative.delete(key)
        self._shared_delete(key)

    def _shared_delete(self, key: str) -> None:
        try:
            self.shared.delete(key)
        except Exception:
            self.shared_errors += 1
            log.warning("shared cache %s failed on delete", self.shared.name, exc_info=True)

    def _heard_invalidation(self, key: str | None) -> None:
        """Another process changed ``key`` (None: changes may have been missed): drop our
        copies, and no load in flight fills with what it read."""
        if key is None:
            self.remote_clears += 1
            self.clear()
            return
        with self._lock:
            for ticket in self._loading.get(key, ()):
                ticket.stale = True
            self.remote_invalidations += 1
            self.cache.delete(key)
            self.negative.delete(key)

    def remember(self, link: Link) -> None:
        """Put a record we just read or wrote into the in-process cache."""
        key = self.lookup_key(link.key)
        self.negative.delete(key)
        self.cache.set(key, link, self._l1_ttl(None))
        if self.unheard_writers:
            self.fresh.set(key, True)

    def clear(self) -> None:
        """Empty the in-process layers (counters are kept); no load in flight fills them."""
        with self._lock:
            for tickets in self._loading.values():
                for ticket in tickets:
                    ticket.stale = True
            self.cache.clear()
            self.negative.clear()

    # -- observability -----------------------------------------------------------------

    def stats(self) -> dict[str, Any]:
        """Per-layer counters: what each layer absorbed, for the dashboard and benchmarks."""
        l1 = self.cache.stats()
        return {
            "requests": self.requests,
            "l1": {
                "hits": self.l1_hits,
                "size": l1["size"],
                "maxsize": l1["maxsize"],
                "evictions": l1["evictions"],
                "expirations": l1["expirations"],
            },
            "negative": {
                "hits": self.negative_hits,
                "size": len(self.negative),
                "expirations": self.negative.expirations,
            },
            "shared": {
                "tier": self.shared.name,
                "hits": self.shared_hits,
                "negativeHits": self.shared_negative_hits,
                "misses": self.shared_misses,
                "errors": self.shared_errors,
            },
            "store": {"reads": self.store_reads, "notFound": self.store_not_found},
            "singleFlight": {
                "loads": self.flight.loads + self.aflight.loads,
                "collapsed": self.flight.collapsed + self.aflight.collapsed,
            },
            "invalidations": self.invalidations,
            "revalidations": {"done": self.revalidations, "failed": self.revalidation_errors},
            "staleFillsSkipped": self.stale_fills_skipped,
            "sharedFills": {"written": self.shared_fills, "refused": self.shared_fills_refused},
            "remoteInvalidations": {
                "keys": self.remote_invalidations,
                "clears": self.remote_clears,
            },
            "sharedTier": self.shared.stats() if self._versioned else {},  # type: ignore[attr-defined]
            "layers": {
                "l1": self.l1_hits,
                "negative": self.negative_hits,
                "shared": self.shared_hits + self.shared_negative_hits,
                "store": self.store_reads,
            },
        }
