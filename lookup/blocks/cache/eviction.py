"""Eviction policies, hand-written: LRU, LFU, FIFO, Redis-style sampled LRU, W-TinyLFU, and
Belady's offline optimum as the ceiling.

Every policy is a bounded set of keys with one operation, :meth:`EvictionPolicy.access`:
a hit returns True; a miss returns False and offers the key for admission (the policy
may evict to make room, or — W-TinyLFU — refuse the newcomer). That is all a hit-ratio
simulation needs, and it is what ``tests/blocks/test_cache_eviction.py`` compares with
``cachetools`` decision by decision (LRU, LFU, FIFO).

- :class:`LRU` evicts the least recently used key; :class:`FIFO` the first admitted
  (a hit changes nothing); :class:`LFU` the least frequently used since admission, ties
  to the one that reached that count first (``cachetools.LFUCache``'s rule), O(1) with
  frequency buckets.
- :class:`SampledLRU` is what Redis does under ``maxmemory-policy allkeys-lru``: no list
  at all, a last-access clock per key; to evict, sample ``samples`` keys at random
  (``maxmemory-samples``, 5), merge them into a pool of the 16 idlest candidates seen so
  far, and evict the idlest still resident.
- :class:`WTinyLFU` is Caffeine's policy: a window LRU (1 % of the capacity) in front of a
  segmented LRU main space (20 % probation, 80 % protected), and a count-min sketch of
  4-bit counters, halved every ``10 × capacity`` accesses (aging), that decides whether
  the window's victim may replace the main space's victim. Caffeine also climbs the window
  size adaptively and keeps a doorkeeper Bloom filter; neither is here (a fixed 1 %
  window, which Caffeine starts from).
- :class:`Belady` evicts the key used farthest in the future: it needs the whole trace,
  so it is an upper bound for the curves, not a cache.
"""

from __future__ import annotations

import heapq
import random
from collections import OrderedDict
from collections.abc import Hashable, Iterable, Sequence
from typing import Any, Protocol

__all__ = [
    "POLICIES",
    "FIFO",
    "LFU",
    "LRU",
    "Belady",
    "CountMinSketch",
    "EvictionPolicy",
    "SampledLRU",
    "WTinyLFU",
    "hit_ratio",
    "hit_ratio_curves",
    "make_policy",
]


class EvictionPolicy(Protocol):
    """A bounded set of keys that decides what to keep."""

    name: str
    capacity: int

    def access(self, key: Hashable) -> bool:
        """True on a hit; on a miss offer ``key`` for admission and return False."""
        ...

    def __contains__(self, key: object) -> bool: ...

    def __len__(self) -> int: ...


def _check_capacity(capacity: int) -> int:
    if capacity < 1:
        raise ValueError("capacity must be at least 1")
    return capacity


class LRU:
    """Least recently used: a hit moves the key to the back, the front is evicted."""

    name = "LRU"

    def __init__(self, capacity: int) -> None:
        self.capacity = _check_capacity(capacity)
        self._keys: OrderedDict[Hashable, None] = OrderedDict()

    def access(self, key: Hashable) -> bool:
        keys = self._keys
        if key in keys:
            keys.move_to_end(key)
            return True
        if len(keys) >= self.capacity:
            keys.popitem(last=False)
        keys[key] = None
        return False

    def __contains__(self, key: object) -> bool:
        return key in self._keys

    def __len__(self) -> int:
        return len(self._keys)


class FIFO:
    """First in, first out: admission order alone decides; hits change nothing."""

    name = "FIFO"

    def __init__(self, capacity: int) -> None:
        self.capacity = _check_capacity(capacity)
        self._keys: OrderedDict[Hashable, None] = OrderedDict()

    def access(self, key: Hashable) -> bool:
        if key in self._keys:
            return True
        if len(self._keys) >= self.capacity:
            self._keys.popitem(last=False)
        self._keys[key] = None
        return False

    def __contains__(self, key: object) -> bool:
        return key in self._keys

    def __len__(self) -> int:
        return len(self._keys)


class LFU:
    """Least frequently used since admission, O(1): a bucket of keys per use count.

    Within a count the key that reached it first goes first; an evicted key's count is
    forgotten (a returning key starts again at 1).
    """

    name = "LFU"

    def __init__(self, capacity: int) -> None:
        self.capacity = _check_capacity(capacity)
        self._count: dict[Hashable, int] = {}
        self._buckets: dict[int, OrderedDict[Hashable, None]] = {}
        self._min = 0

    def _bump(self, key: Hashable) -> None:
        c = self._count[key]
        bucket = self._buckets[c]
        del bucket[key]
        if not bucket:
            del self._buckets[c]
            if self._min == c:
                self._min = c + 1
        self._count[key] = c + 1
        self._buckets.setdefault(c + 1, OrderedDict())[key] = None

    def access(self, key: Hashable) -> bool:
        if key in self._count:
            self._bump(key)
            return True
        if len(self._count) >= self.capacity:
            bucket = self._buckets[self._min]
            victim, _ = bucket.popitem(last=False)
            if not bucket:
                del self._buckets[self._min]
            del self._count[victim]
        self._count[key] = 1
        self._buckets.setdefault(1, OrderedDict())[key] = None
        self._min = 1
        return False

    def __contains__(self, key: object) -> bool:
        return key in self._count

    def __len__(self) -> int:
        return len(self._count)


class SampledLRU:
    """Redis's approximated LRU: sample ``samples`` keys, keep a pool of the idlest 16.

    Each key holds the tick of its last access; an eviction samples keys uniformly (a
    dense array with swap-removal, as Redis's dict sampling), merges them into the pool
    and evicts the pool's idlest key that is still resident (with its current last access).
    """

    name = "sampled LRU"
    POOL = 16

    def __init__(self, capacity: int, *, samples: int = 5, seed: int = 0) -> None:
        self.capacity = _check_capacity(capacity)
        if samples < 1:
            raise ValueError("samples must be at least 1")
        self.samples = samples
        self._rng = random.Random(seed)
        self._tick = 0
        self._last: dict[Hashable, int] = {}
        self._slot: dict[Hashable, int] = {}
        self._dense: list[Hashable] = []
        self._pool: list[tuple[int, Hashable]] = []  # (last access, key), idlest first

    def access(self, key: Hashable) -> bool:
        self._tick += 1
        if key in self._last:
            self._last[key] = self._tick
            return True
        if len(self._dense) >= self.capacity:
            self._evict()
        self._last[key] = self._tick
        self._slot[key] = len(self._dense)
        self._dense.append(key)
        return False

    def _evict(self) -> None:
        dense = self._dense
        last_access = self._last
        pool = {k: last_access[k] for _, k in self._pool if k in last_access}
        for _ in range(min(self.samples, len(dense))):
            k = dense[self._rng.randrange(len(dense))]
            pool[k] = last_access[k]
        ranked = sorted((t, k) for k, t in pool.items())
        victim = ranked[0][1]
        self._pool = ranked[1 : self.POOL + 1]
        del self._last[victim]
        i = self._slot.pop(victim)
        last = dense.pop()
        if i < len(dense):
            dense[i] = last
            self._slot[last] = i

    def __contains__(self, key: object) -> bool:
        return key in self._last

    def __len__(self) -> int:
        return len(self._dense)


class CountMinSketch:
    """Approximate access counts in ``depth`` rows of 4-bit counters (capped at 15).

    ``estimate`` never undercounts since the last reset; every ``sample_size`` increments
    all counters are halved, so yesterday's popularity fades (TinyLFU's aging).
    """

    MAX = 15

    def __init__(self, width: int, *, depth: int = 4, sample_size: int | None = None) -> None:
        size = 1
        while size < max(width, 16):
            size *= 2
        self.width = size
        self._mask = size - 1
        self.depth = depth
        self.rows = [[0] * size for _ in range(depth)]
        self.sample_size = sample_size or 10 * width
        self.additions = 0
        self.resets = 0

    def _indexes(self, key: Hashable) -> list[int]:
        h = hash(key) & 0xFFFFFFFFFFFFFFFF
        out = []
        for i in range(self.depth):
            h = (h * 0x9E3779B97F4A7C15 + i * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
            out.append((h ^ (h >> 29)) & self._mask)
        return out

    def increment(self, key: Hashable) -> None:
        bumped = False
        for row, i in zip(self.rows, self._indexes(key), strict=True):
            if row[i] < self.MAX:
                row[i] += 1
                bumped = True
        if bumped:
            self.additions += 1
            if self.additions >= self.sample_size:
                self._reset()

    def estimate(self, key: Hashable) -> int:
        return min(row[i] for row, i in zip(self.rows, self._indexes(key), strict=True))

    def _reset(self) -> None:
        self.rows = [[c >> 1 for c in row] for row in self.rows]
        self.additions //= 2
        self.resets += 1


class WTinyLFU:
    """Caffeine's W-TinyLFU: window LRU → TinyLFU admission → segmented LRU main space."""

    name = "W-TinyLFU"

    def __init__(self, capacity: int, *, window_share: float = 0.01,
                 protected_share: float = 0.8) -> None:  # fmt: skip
        self.capacity = _check_capacity(capacity)
        self.window_cap = max(1, round(capacity * window_share)) if capacity > 1 else 1
        self.main_cap = capacity - self.window_cap
        self.protected_cap = int(self.main_cap * protected_share)
        self.sketch = CountMinSketch(capacity)
        self._window: OrderedDict[Hashable, None] = OrderedDict()
        self._probation: OrderedDict[Hashable, None] = OrderedDict()
        self._protected: OrderedDict[Hashable, None] = OrderedDict()
        self.admitted = self.rejected = 0

    def access(self, key: Hashable) -> bool:
        self.sketch.increment(key)
        if key in self._window:
            self._window.move_to_end(key)
            return True
        if key in self._protected:
            self._protected.move_to_end(key)
            return True
        if key in self._probation:
            del self._probation[key]
            self._protected[key] = None
            if len(self._protected) > self.protected_cap:
                demoted, _ = self._protected.popitem(last=False)
                self._probation[demoted] = None
            return True
        self._window[key] = None
        if len(self._window) > self.window_cap:
            candidate, _ = self._window.popitem(last=False)
            self._offer(candidate)
        return False

    def _offer(self, candidate: Hashable) -> None:
        """The window's victim enters the main space if there is room or it is more
        frequent than the main space's victim (the probation segment's LRU)."""
        if len(self._probation) + len(self._protected) < self.main_cap:
            self._probation[candidate] = None
            return
        if self.main_cap == 0:  # a capacity of 1: the window is all there is
            self.rejected += 1
            return
        if not self._probation:  # the whole main space is protected: its LRU is the victim
            victim_seg = self._protected
        else:
            victim_seg = self._probation
        victim = next(iter(victim_seg))
        if self.sketch.estimate(candidate) > self.sketch.estimate(victim):
            del victim_seg[victim]
            self._probation[candidate] = None
            self.admitted += 1
        else:
            self.rejected += 1

    def __contains__(self, key: object) -> bool:
        return key in self._window or key in self._probation or key in self._protected

    def __len__(self) -> int:
        return len(self._window) + len(self._probation) + len(self._protected)


class Belady:
    """The offline optimum (MIN): evict the resident key next used farthest ahead.

    Built over the whole ``trace``; ``access`` must then be called with that trace in
    order. A ceiling for the curves, and an oracle no online policy may beat.
    """

    name = "Belady (optimal)"

    def __init__(self, capacity: int, trace: Sequence[Hashable]) -> None:
        self.capacity = _check_capacity(capacity)
        n = len(trace)
        self._next = [n] * n
        seen: dict[Hashable, int] = {}
        for i in range(n - 1, -1, -1):
            self._next[i] = seen.get(trace[i], n + i)  # never again: farthest of all
            seen[trace[i]] = i
        self._trace = trace
        self._i = 0
        self._resident: dict[Hashable, int] = {}  # key → its next use
        self._heap: list[tuple[int, Hashable]] = []  # (-next use, key), lazily deleted

    def access(self, key: Hashable) -> bool:
        i = self._i
        if key != self._trace[i]:
            raise ValueError("Belady must replay the trace it was built over, in order")
        self._i += 1
        nxt = self._next[i]
        hit = key in self._resident
        if not hit and len(self._resident) >= self.capacity:
            while True:
                neg, victim = heapq.heappop(self._heap)
                if self._resident.get(victim) == -neg:
                    del self._resident[victim]
                    break
        self._resident[key] = nxt
        heapq.heappush(self._heap, (-nxt, key))
        return hit

    def __contains__(self, key: object) -> bool:
        return key in self._resident

    def __len__(self) -> int:
        return len(self._resident)


#: The online policies by name, as the dashboard and the notebook offer them.
POLICIES: dict[str, type] = {
    "LRU": LRU, "LFU": LFU, "FIFO": FIFO, "sampled LRU": SampledLRU, "W-TinyLFU": WTinyLFU,
}  # fmt: skip


def make_policy(name: str, capacity: int, trace: Sequence[Hashable] | None = None) -> Any:
    """A new policy by name (``"Belady (optimal)"`` needs the ``trace``)."""
    if name == Belady.name:
        if trace is None:
            raise ValueError("Belady needs the trace it will replay")
        return Belady(capacity, trace)
    try:
        return POLICIES[name](capacity)
    except KeyError:
        known = ", ".join([*POLICIES, Belady.name])
        raise ValueError(f"unknown policy {name!r}; known: {known}") from None


def hit_ratio(policy: EvictionPolicy, trace: Iterable[Hashable]) -> float:
    """The share of ``trace``'s accesses that hit in ``policy`` (fresh, cold start)."""
    hits = total = 0
    access = policy.access
    for key in trace:
        hits += access(key)
        total += 1
    return hits / total if total else 0.0


def hit_ratio_curves(
    trace: Sequence[Hashable], sizes: Sequence[int], policies: Sequence[str] | None = None,
    *, optimal: bool = True,
) -> list[dict[str, Any]]:  # fmt: skip
    """Rows ``{policy, size, hit ratio}`` for every policy and cache size on one trace."""
    names = list(policies or POLICIES) + ([Belady.name] if optimal else [])
    rows = []
    for name in names:
        for size in sizes:
            ratio = hit_ratio(make_policy(name, size, trace), trace)
            rows.append({"policy": name, "size": size, "hit ratio": round(ratio, 4)})
    return rows
