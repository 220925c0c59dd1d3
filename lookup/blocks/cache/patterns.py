"""The seed's caching patterns on a tier (:class:`~.tier.CacheTier`: Redis, or in-process)
over a store (:class:`~.store.BackingStore`): who reads the store, who writes it, and when.

============  =====================================  =======================================
pattern       read                                   write
============  =====================================  =======================================
cache-aside   app: tier, on a miss store + fill      app: store, then delete the tier's copy
read-through  the cache loads on a miss (one loader  (as cache-aside)
              per key: a lease), app asks the cache
write-through (read-through)                         store and tier, both before the ack
write-behind  (read-through)                         tier, ack, the store later in batches —
                                                     a crash loses what was not flushed
refresh-ahead tier; a hit near expiry reloads in      (as cache-aside)
              the background, so hot keys never miss
============  =====================================  =======================================

The shortener's redirect path is cache-aside (``shortener/resolver.py``).
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable

from lookup.blocks.cache.store import BackingStore
from lookup.blocks.cache.tier import CacheTier
from lookup.kit.cache import SingleFlight

__all__ = ["CacheAside", "ReadThrough", "RefreshAhead", "WriteBehind", "WriteThrough"]


class CacheAside:
    """The application holds both: tier first, the store on a miss, then fill the tier."""

    name = "cache-aside"

    def __init__(self, tier: CacheTier, store: BackingStore, ttl_ms: int = 60_000,
                 *, jitter: float = 0.0, seed: int = 0) -> None:  # fmt: skip
        if not 0.0 <= jitter < 1.0:
            raise ValueError("jitter must be in [0, 1)")
        self.tier, self.store, self.ttl_ms, self.jitter = tier, store, ttl_ms, jitter
        self._rng = random.Random(seed)
        self.hits = self.misses = 0

    def ttl(self) -> int:
        """A fill's lifetime: ``ttl_ms × U[1 − jitter, 1 + jitter]``."""
        if not self.jitter:
            return self.ttl_ms
        return max(1, int(self.ttl_ms * self._rng.uniform(1 - self.jitter, 1 + self.jitter)))

    def read(self, key: str) -> str | None:
        value = self.tier.get(key)
        if value is not None:
            self.hits += 1
            return value
        self.misses += 1
        value = self.store.get(key)
        if value is not None:
            self.tier.set(key, value, self.ttl())
        return value

    def write(self, key: str, value: str) -> None:
        """Store first, then drop the cached copy (the next read refills it)."""
        self.store.put(key, value)
        self.tier.delete(key)


class ReadThrough:
    """The cache owns loading: on a miss one caller (in-process single-flight, and across
    processes the tier's lease) runs ``loader``; the others wait for its fill.

    ``protect=False`` is the unprotected cache: every caller that misses loads.
    """

    name = "read-through"

    def __init__(self, tier: CacheTier, loader: Callable[[str], str | None], ttl_ms: int = 60_000,
                 *, protect: bool = True, lease_ms: int = 5_000,
                 wait_s: float = 5.0) -> None:  # fmt: skip
        self.tier, self.loader, self.ttl_ms = tier, loader, ttl_ms
        self.protect, self.lease_ms, self.wait_s = protect, lease_ms, wait_s
        self.flight = SingleFlight()
        self.hits = self.misses = self.waited = 0
        self._lock = threading.Lock()

    def _count(self, what: str) -> None:
        with self._lock:
            setattr(self, what, getattr(self, what) + 1)

    def read(self, key: str) -> str | None:
        value = self.tier.get(key)
        if value is not None:
            self._count("hits")
            return value
        self._count("misses")
        if not self.protect:
            return self._load(key)
        return self.flight.do(key, lambda: self._leased_load(key))

    def _load(self, key: str) -> str | None:
        value = self.loader(key)
        if value is not None:
            self.tier.set(key, value, self.ttl_ms)
        return value

    def _leased_load(self, key: str) -> str | None:
        """Load under the tier's lease; without it, poll the tier for the holder's fill."""
        deadline = time.monotonic() + self.wait_s
        while True:
            if self.tier.lease(key, self.lease_ms):
                try:  # a holder may have filled it between our miss and our lease
                    value = self.tier.get(key)
                    return value if value is not None else self._load(key)
                finally:
                    self.tier.release(key)
            self._count("waited")
            value = self.tier.get(key)
            if value is not None or time.monotonic() > deadline:
                return value if value is not None else self._load(key)
            time.sleep(0.005)  # another process holds the lease: poll for its fill

    def invalidate(self, key: str) -> None:
        self.tier.delete(key)


class WriteThrough:
    """Every write goes to the store and the tier before it is acknowledged."""

    name = "write-through"

    def __init__(self, tier: CacheTier, store: BackingStore, ttl_ms: int = 60_000) -> None:
        self.tier, self.store, self.ttl_ms = tier, store, ttl_ms
        self.reader = ReadThrough(tier, store.get, ttl_ms)

    def read(self, key: str) -> str | None:
        return self.reader.read(key)

    def write(self, key: str, value: str) -> None:
        self.store.put(key, value)
        self.tier.set(key, value, self.ttl_ms)


class WriteBehind:
    """Writes land in the tier and a queue and are acknowledged at once; a background
    flusher writes the queue to the store every ``flush_interval_s`` in one transaction.
    What is queued when the process dies is lost (``pending`` says how much)."""

    name = "write-behind"

    def __init__(self, tier: CacheTier, store: BackingStore, ttl_ms: int = 60_000,
                 *, flush_interval_s: float = 0.5) -> None:  # fmt: skip
        self.tier, self.store, self.ttl_ms = tier, store, ttl_ms
        self.flush_interval_s = flush_interval_s
        self.reader = ReadThrough(tier, store.get, ttl_ms)
        self._queue: dict[str, str] = {}  # coalesced: the last value of each key
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self.flushes = 0
        self._thread = threading.Thread(target=self._run, daemon=True, name="write-behind")
        self._thread.start()

    def read(self, key: str) -> str | None:
        return self.reader.read(key)

    def write(self, key: str, value: str) -> None:
        self.tier.set(key, value, self.ttl_ms)
        with self._lock:
            self._queue[key] = value

    @property
    def pending(self) -> int:
        with self._lock:
            return len(self._queue)

    def flush(self) -> int:
        with self._lock:
            batch, self._queue = list(self._queue.items()), {}
        if batch:
            self.store.put_many(batch)
            self.flushes += 1
        return len(batch)

    def _run(self) -> None:
        while not self._stop.wait(self.flush_interval_s):
            self.flush()

    def close(self) -> None:
        """Stop the flusher after a last flush (a clean shutdown loses nothing)."""
        self._stop.set()
        self._thread.join(5)
        self.flush()


class RefreshAhead:
    """A hit within the last ``1 − refresh_at`` of its TTL starts a background reload (one
    per key), so a key read steadily is replaced before it expires and never misses."""

    name = "refresh-ahead"

    def __init__(self, tier: CacheTier, store: BackingStore, ttl_ms: int = 60_000,
                 *, refresh_at: float = 0.75) -> None:  # fmt: skip
        if not 0.0 < refresh_at < 1.0:
            raise ValueError("refresh_at must be in (0, 1)")
        self.tier, self.store, self.ttl_ms, self.refresh_at = tier, store, ttl_ms, refresh_at
        self.hits = self.misses = self.refreshes = 0
        self._busy: set[str] = set()
        self._lock = threading.Lock()

    def read(self, key: str) -> str | None:
        value, ttl = self.tier.get_with_ttl(key)
        if value is None:
            self.misses += 1
            value = self.store.get(key)
            if value is not None:
                self.tier.set(key, value, self.ttl_ms)
            return value
        self.hits += 1
        if 0 <= ttl < (1.0 - self.refresh_at) * self.ttl_ms:
            with self._lock:
                start = key not in self._busy
                self._busy.add(key)
            if start:
                threading.Thread(target=self._refresh, args=(key,), daemon=True).start()
        return value

    def _refresh(self, key: str) -> None:
        try:
            value = self.store.get(key)
            if value is not None:
                self.tier.set(key, value, self.ttl_ms)
            self.refreshes += 1
        finally:
            with self._lock:
                self._busy.discard(key)
