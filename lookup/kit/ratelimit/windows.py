"""The other four algorithms of seed 004's figure, in-process, behind :class:`RateLimiter`.

Each reads its :class:`RatePolicy` as ``limit = capacity`` requests per window of
``window_s = capacity / refill_per_s`` seconds (``RatePolicy.per(100, 60)`` is 100 a
minute under every algorithm):

- :class:`FixedWindowLimiter` — one counter per aligned window ``[k·W, (k+1)·W)``.
  O(1) memory; up to **2× the limit** in any span of ``W`` that straddles a boundary.
- :class:`SlidingLogLimiter` — a timestamp per admitted request; a request is admitted
  when the cost admitted in ``(now − W, now]`` plus its own is at most the limit. The
  exact definition (the oracle the others are measured against), O(limit) memory.
- :class:`SlidingCounterLimiter` — two fixed-window counters blended:
  ``estimate = prev · (1 − f) + curr`` where ``f`` is the fraction of the current window
  gone. O(1) memory; in any span of ``W`` ending at ``t`` it admits at most
  ``limit + f(t) · prev`` (``prev`` = the previous window's admitted cost), which is at
  the boundary (``f = 0``) exactly the limit — the fixed window's 2× burst is gone there.
- :class:`LeakyBucketLimiter` — a queue of ``capacity`` drained at ``refill_per_s``: an
  admitted request occupies the queue until its departure time
  ``max(now, last departure) + cost / rate``, so admitted work leaves at a constant
  rate. O(capacity) memory.

All share the token bucket's conventions: ``charge`` never leaves a debt (it fills at
most up to the limit), ``refund`` gives back the newest use (never below empty),
identities live in a bounded LRU, and the clock is injected.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Hashable
from typing import Any

from lookup.kit.ratelimit.bucket import PerIdentity, RateDecision, RatePolicy

__all__ = [
    "ALGORITHMS",
    "FixedWindowLimiter",
    "LeakyBucketLimiter",
    "SlidingCounterLimiter",
    "SlidingLogLimiter",
]

#: Float noise tolerated when comparing counts (same tolerance as the token bucket).
_EPS = 1e-9


def _whole(seconds: float) -> int:
    """Seconds rounded up to a whole number, float noise forgiven."""
    return max(0, math.ceil(seconds - _EPS))


class _KeyedLimiter(PerIdentity, ABC):
    """The shared check/peek/charge/refund machinery; subclasses supply the algorithm."""

    def __init__(self, policy: RatePolicy, **options: Any) -> None:
        """``options``: ``name``, ``clock``, ``max_identities`` (as :class:`PerIdentity`)."""
        super().__init__(policy, **options)
        self._limit = float(policy.capacity)
        self._window = policy.capacity / policy.refill_per_s

    # -- what an algorithm supplies -------------------------------------------------
    @abstractmethod
    def _new(self, now: float) -> Any: ...

    @abstractmethod
    def _advance(self, state: Any, now: float) -> None:
        """Bring ``state`` up to ``now`` (drop what has expired)."""
        ...

    @abstractmethod
    def _used(self, state: Any, now: float) -> float:
        """The cost counted against the limit at ``now``."""
        ...

    @abstractmethod
    def _add(self, state: Any, now: float, cost: float) -> None: ...

    @abstractmethod
    def _remove(self, state: Any, now: float, cost: float) -> None: ...

    @abstractmethod
    def _wait(self, state: Any, now: float, cost: float) -> float:
        """Seconds until ``cost`` would be admitted (called only when it is not now)."""
        ...

    @abstractmethod
    def _until_empty(self, state: Any, now: float) -> float:
        """Seconds until nothing counts against the limit any more."""
        ...

    # -- the shared machinery -------------------------------------------------------
    def _state(self, identity: Hashable, now: float) -> Any:
        return self._entry(identity, lambda: self._new(now), lambda st: self._advance(st, now))

    def _fits(self, state: Any, now: float, cost: float) -> bool:
        return self._used(state, now) + cost <= self._limit + _EPS

    def _decision(self, state: Any, now: float, allowed: bool, cost: float) -> RateDecision:
        used = self._used(state, now)
        retry = 0 if allowed else max(1, _whole(self._wait(state, now, cost)))
        return RateDecision(
            allowed=allowed,
            limit=int(self._limit),
            remaining=max(0, math.floor(self._limit - used + _EPS)),
            reset_s=_whole(self._until_empty(state, now)),
            retry_after_s=retry,
        )

    def check(self, identity: Hashable, cost: float = 1.0) -> RateDecision:
        """Count ``cost`` against ``identity`` if it fits under the limit; say what happened."""
        with self._lock:
            now = self._clock()
            state = self._state(identity, now)
            allowed = self._fits(state, now, cost)
            if allowed:
                self._add(state, now, cost)
                self.allowed += 1
            else:
                self.refused += 1
            return self._decision(state, now, allowed, cost)

    def peek(self, identity: Hashable, cost: float = 1.0) -> RateDecision:
        """Whether ``cost`` would fit now, counting nothing."""
        with self._lock:
            now = self._clock()
            state = self._state(identity, now)
            return self._decision(state, now, self._fits(state, now, cost), cost)

    def charge(self, identity: Hashable, cost: float = 1.0) -> None:
        """Count ``cost`` after the fact, at most up to the limit (never a debt)."""
        with self._lock:
            now = self._clock()
            state = self._state(identity, now)
            room = self._limit - self._used(state, now)
            if room > _EPS:
                self._add(state, now, min(cost, room))

    def refund(self, identity: Hashable, cost: float = 1.0) -> None:
        """Give back the newest ``cost`` counted (never below empty)."""
        with self._lock:
            now = self._clock()
            self._remove(self._state(identity, now), now, cost)


class _Window:
    __slots__ = ("start", "count", "prev")

    def __init__(self, start: float) -> None:
        self.start = start
        self.count = 0.0
        self.prev = 0.0


class _Log:
    """``[time, cost]`` entries in time order and their running total (O(1) to read).

    The total is re-summed exactly every :attr:`RESUM` pushes, so fractional costs cannot
    let float drift accumulate past the comparison tolerance.
    """

    RESUM = 4096
    __slots__ = ("entries", "total", "_pushes")

    def __init__(self) -> None:
        self.entries: deque[list[float]] = deque()
        self.total = 0.0
        self._pushes = 0

    def push(self, stamp: float, cost: float) -> None:
        self.entries.append([stamp, cost])
        self.total += cost
        self._pushes += 1
        if self._pushes % self.RESUM == 0:
            self.total = math.fsum(c for _, c in self.entries)

    def drop_until(self, stamp: float) -> None:
        """Drop the entries whose time is at or before ``stamp``."""
        entries = self.entries
        while entries and entries[0][0] <= stamp:
            self.total -= entries.popleft()[1]
        if not entries:
            self.total = 0.0  # no float residue once empty

    def take_newest(self, cost: float, rate: float | None = None) -> None:
        """Remove ``cost`` from the newest entries; a partly refunded one keeps the rest
        (and, in a queue drained at ``rate``, departs that much earlier)."""
        entries = self.entries
        while cost > _EPS and entries:
            entry = entries[-1]
            if entry[1] <= cost + _EPS:
                cost -= entry[1]
                self.total -= entry[1]
                entries.pop()
            else:
                entry[1] -= cost
                if rate is not None:
                    entry[0] -= cost / rate
                self.total -= cost
                cost = 0.0
        if not entries:
            self.total = 0.0

    def wait_for(self, used: float, cost: float, limit: float) -> float | None:
        """The time of the entry whose expiry first leaves room for ``cost``."""
        for stamp, spent in self.entries:  # oldest first: each expiry frees its cost
            used -= spent
            if used + cost <= limit + _EPS:
                return stamp
        return None


class _AlignedWindows(_KeyedLimiter):
    """Counters over aligned windows ``[k·W, (k+1)·W)``: what fixed window and sliding
    counter share."""

    def _start(self, now: float) -> float:
        return math.floor(now / self._window) * self._window

    def _new(self, now: float) -> _Window:
        return _Window(self._start(now))

    def _add(self, state: _Window, now: float, cost: float) -> None:
        state.count += cost

    def _remove(self, state: _Window, now: float, cost: float) -> None:
        state.count = max(0.0, state.count - cost)


class FixedWindowLimiter(_AlignedWindows):
    """A counter per aligned window of ``W`` seconds; resets at each boundary."""

    algorithm = "fixed_window"

    def _advance(self, state: _Window, now: float) -> None:
        start = self._start(now)
        if start > state.start:
            state.start, state.count = start, 0.0

    def _used(self, state: _Window, now: float) -> float:
        return state.count

    def _wait(self, state: _Window, now: float, cost: float) -> float:
        return state.start + self._window - now

    def _until_empty(self, state: _Window, now: float) -> float:
        return state.start + self._window - now if state.count > _EPS else 0.0


class SlidingCounterLimiter(_AlignedWindows):
    """``prev · (1 − f) + curr`` over two aligned windows: the log approximated in O(1)."""

    algorithm = "sliding_counter"

    def _advance(self, state: _Window, now: float) -> None:
        start = self._start(now)
        if start > state.start:
            gone = round((start - state.start) / self._window)
            state.prev = state.count if gone == 1 else 0.0
            state.start, state.count = start, 0.0

    def _weight(self, state: _Window, now: float) -> float:
        """``1 − f``: the share of the previous window still inside the sliding one."""
        return max(0.0, 1.0 - (now - state.start) / self._window)

    def _used(self, state: _Window, now: float) -> float:
        return state.prev * self._weight(state, now) + state.count

    def _wait(self, state: _Window, now: float, cost: float) -> float:
        need = self._limit - cost  # the estimate must fall to this
        if need < -_EPS:
            return self._window  # more than the limit can never fit; a window is the honest wait
        if state.count <= need + _EPS:
            # within this window, once the previous one's weight has decayed enough
            f = 1.0 - (need - state.count) / state.prev if state.prev > 0 else 0.0
            return state.start + f * self._window - now
        # in the next window, where this one's count becomes the decaying ``prev``
        f = 1.0 - need / state.count
        return state.start + self._window + f * self._window - now

    def _until_empty(self, state: _Window, now: float) -> float:
        if state.count > _EPS:
            return state.start + 2 * self._window - now
        if state.prev > _EPS:
            return state.start + self._window - now
        return 0.0


class SlidingLogLimiter(_KeyedLimiter):
    """Every admitted ``(time, cost)`` kept for ``W`` seconds: the exact sliding window."""

    algorithm = "sliding_log"

    def _new(self, now: float) -> _Log:
        return _Log()

    def _advance(self, state: _Log, now: float) -> None:
        state.drop_until(now - self._window)  # an entry counts while now − time < W

    def _used(self, state: _Log, now: float) -> float:
        return state.total

    def _add(self, state: _Log, now: float, cost: float) -> None:
        state.push(now, cost)

    def _remove(self, state: _Log, now: float, cost: float) -> None:
        state.take_newest(cost)

    def _wait(self, state: _Log, now: float, cost: float) -> float:
        if cost > self._limit + _EPS:
            return self._window
        stamp = state.wait_for(state.total, cost, self._limit)
        return 0.0 if stamp is None else stamp + self._window - now

    def _until_empty(self, state: _Log, now: float) -> float:
        return state.entries[-1][0] + self._window - now if state.entries else 0.0


class LeakyBucketLimiter(_KeyedLimiter):
    """A queue of ``capacity`` drained at ``refill_per_s``: each admitted request holds its
    cost in the queue until its departure time, so admitted work leaves at a steady rate."""

    algorithm = "leaky_bucket"

    def _new(self, now: float) -> _Log:
        return _Log()  # [departure time, cost], in departure order

    def _advance(self, state: _Log, now: float) -> None:
        state.drop_until(now)

    def _used(self, state: _Log, now: float) -> float:
        return state.total

    def _add(self, state: _Log, now: float, cost: float) -> None:
        last = state.entries[-1][0] if state.entries else now
        state.push(max(now, last) + cost / self.policy.refill_per_s, cost)

    def _remove(self, state: _Log, now: float, cost: float) -> None:
        state.take_newest(cost, self.policy.refill_per_s)

    def _wait(self, state: _Log, now: float, cost: float) -> float:
        if cost > self._limit + _EPS:
            return self._limit / self.policy.refill_per_s
        departure = state.wait_for(state.total, cost, self._limit)
        return 0.0 if departure is None else departure - now

    def _until_empty(self, state: _Log, now: float) -> float:
        return state.entries[-1][0] - now if state.entries else 0.0

    def departure(self, identity: Hashable) -> float:
        """When the newest admitted request of ``identity`` leaves the queue (clock time)."""
        with self._lock:
            now = self._clock()
            state = self._state(identity, now)
            return state.entries[-1][0] if state.entries else now


#: Every in-process algorithm by the name the factory accepts (``token_bucket`` is the
#: default and lives in :mod:`lookup.kit.ratelimit.bucket`).
ALGORITHMS: dict[str, type[_KeyedLimiter]] = {
    cls.algorithm: cls
    for cls in (FixedWindowLimiter, SlidingLogLimiter, SlidingCounterLimiter, LeakyBucketLimiter)
}
