"""Token-bucket rate limiting with the standard ``RateLimit-*`` response headers.

A bucket holds up to ``capacity`` tokens and refills at ``refill_per_s``; a request
costs tokens and is refused when the bucket cannot pay. Refill is lazy (computed from
the time since the last visit), so a bucket costs O(1) time and memory and needs no
timer. :class:`MemoryRateLimiter` keeps one bucket per identity (an owner, an IP
address) in a bounded LRU, so a flood of distinct identities cannot exhaust memory.

:class:`RateLimiter` is the interface the services use; :func:`open_rate_limiter`
picks the implementation from a URL (``memory:`` — the in-process buckets; a shared
backend keeping exact budgets across processes plugs in behind the same interface).

Every decision carries what the client needs to cooperate instead of guessing:
``RateLimit-Limit``, ``RateLimit-Remaining``, ``RateLimit-Reset`` (seconds until the
bucket is full again) and, when refused, ``Retry-After`` (seconds until the request
would succeed).
"""

from __future__ import annotations

import math
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

__all__ = [
    "MemoryRateLimiter",
    "PerIdentity",
    "RateDecision",
    "RateLimiter",
    "RatePolicy",
    "check_all",
    "most_restrictive",
]

#: Float noise tolerated when comparing token counts (a refill computed as
#: ``elapsed × rate`` may land a hair below the whole number it stands for).
_EPS = 1e-9

_POLICY = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*/\s*(\d+(?:\.\d+)?)\s*(?::\s*(\d+(?:\.\d+)?))?\s*$")


@dataclass(frozen=True)
class RatePolicy:
    """``capacity`` tokens of burst, refilled at ``refill_per_s`` tokens per second."""

    capacity: float
    refill_per_s: float

    def __post_init__(self) -> None:
        if self.capacity < 1 or self.refill_per_s <= 0:
            raise ValueError("a rate policy needs capacity >= 1 and a positive refill rate")

    @classmethod
    def per(cls, count: float, seconds: float, burst: float | None = None) -> RatePolicy:
        """``count`` requests per ``seconds`` on average, bursts up to ``burst`` (default count)."""
        if count <= 0 or seconds <= 0:
            raise ValueError("count and seconds must be positive")
        return cls(
            capacity=float(burst if burst is not None else count), refill_per_s=count / seconds
        )

    @classmethod
    def parse(cls, text: str) -> RatePolicy:
        """Parse ``"COUNT/SECONDS[:BURST]"``, e.g. ``"20/60"`` or ``"5/1:50"``."""
        m = _POLICY.match(text)
        if not m:
            raise ValueError(f"not a rate policy (want COUNT/SECONDS[:BURST]): {text!r}")
        burst = float(m.group(3)) if m.group(3) else None
        return cls.per(float(m.group(1)), float(m.group(2)), burst)

    def describe(self) -> str:
        """Human form, e.g. ``"20 burst, 0.333/s"``."""
        return f"{self.capacity:g} burst, {self.refill_per_s:.3g}/s"


@dataclass(frozen=True)
class RateDecision:
    """The outcome of one check, with the numbers for the response headers."""

    allowed: bool
    limit: int
    remaining: int
    reset_s: int
    retry_after_s: int

    def headers(self) -> dict[str, str]:
        """``RateLimit-Limit``/``-Remaining``/``-Reset``, plus ``Retry-After`` when refused."""
        out = {
            "RateLimit-Limit": str(self.limit),
            "RateLimit-Remaining": str(self.remaining),
            "RateLimit-Reset": str(self.reset_s),
        }
        if not self.allowed:
            out["Retry-After"] = str(self.retry_after_s)
        return out


def most_restrictive(decisions: Iterable[RateDecision]) -> RateDecision:
    """The decision a client should see: a refusal with the longest wait, else the least room."""
    items = list(decisions)
    if not items:
        raise ValueError("no decisions")
    refused = [d for d in items if not d.allowed]
    if refused:
        return max(refused, key=lambda d: d.retry_after_s)
    return min(items, key=lambda d: (d.remaining, -d.reset_s))


@runtime_checkable
class RateLimiter(Protocol):
    """Token buckets per identity under one policy: what the services ask of a rate limiter.

    ``check`` takes tokens when the identity can pay, ``peek`` only looks, ``charge``
    takes after the fact, ``refund`` gives back; ``reset`` forgets every identity and
    ``stats`` reports counters for dashboards.
    """

    policy: RatePolicy
    name: str

    def check(self, identity: Hashable, cost: float = 1.0) -> RateDecision:
        """Take ``cost`` tokens from ``identity``'s bucket if it can pay; say what happened."""
        ...

    def peek(self, identity: Hashable, cost: float = 1.0) -> RateDecision:
        """Whether ``identity`` could pay ``cost`` now, without taking anything."""
        ...

    def charge(self, identity: Hashable, cost: float = 1.0) -> None:
        """Take ``cost`` tokens after the fact (never below zero)."""
        ...

    def refund(self, identity: Hashable, cost: float = 1.0) -> None:
        """Give back tokens (never above the capacity)."""
        ...

    def reset(self) -> None:
        """Forget every bucket (all identities start full again)."""
        ...

    def stats(self) -> dict[str, object]:
        """Counters and the policy, for dashboards."""
        ...


class _Bucket:
    __slots__ = ("tokens", "stamp")

    def __init__(self, tokens: float, stamp: float) -> None:
        self.tokens = tokens
        self.stamp = stamp


class PerIdentity:
    """What every in-process limiter keeps: the policy, a lock, a bounded LRU of
    per-identity state (a flood of distinct identities cannot exhaust memory) and the
    allowed/refused counters."""

    #: The algorithm's name in stats (the token bucket, the default, names none).
    algorithm = ""

    def __init__(
        self,
        policy: RatePolicy,
        *,
        name: str = "",
        clock: Callable[[], float] = time.monotonic,
        max_identities: int = 100_000,
    ) -> None:
        self.policy = policy
        self.name = name
        self._clock = clock
        self._max = max_identities
        self._states: OrderedDict[Hashable, Any] = OrderedDict()
        self._lock = threading.Lock()
        self.allowed = 0
        self.refused = 0

    def _entry(
        self, identity: Hashable, new: Callable[[], Any], advance: Callable[[Any], None]
    ) -> Any:
        """``identity``'s state: made by ``new`` (evicting the least recent beyond the bound)
        or brought up to date by ``advance`` and marked most recent."""
        state = self._states.get(identity)
        if state is None:
            state = new()
            self._states[identity] = state
            while len(self._states) > self._max:
                self._states.popitem(last=False)
        else:
            advance(state)
            self._states.move_to_end(identity)
        return state

    def reset(self) -> None:
        """Forget every identity (all start with their full limit again)."""
        with self._lock:
            self._states.clear()

    def stats(self) -> dict[str, object]:
        """Counters, the policy (and the algorithm, where named), for dashboards."""
        out: dict[str, object] = {"policy": self.policy.describe()}
        if self.algorithm:
            out["algorithm"] = self.algorithm
        out.update(allowed=self.allowed, refused=self.refused, identities=len(self._states))
        return out


class MemoryRateLimiter(PerIdentity):
    """One in-process token bucket per identity under one :class:`RatePolicy`; thread-safe."""

    def _refill(self, identity: Hashable) -> _Bucket:
        now = self._clock()

        def advance(bucket: _Bucket) -> None:
            elapsed = max(0.0, now - bucket.stamp)
            bucket.tokens = min(
                self.policy.capacity, bucket.tokens + elapsed * self.policy.refill_per_s
            )
            bucket.stamp = now

        return self._entry(identity, lambda: _Bucket(self.policy.capacity, now), advance)

    def _decision(self, bucket: _Bucket, allowed: bool, cost: float) -> RateDecision:
        rate = self.policy.refill_per_s
        reset = math.ceil((self.policy.capacity - bucket.tokens) / rate - _EPS)
        retry = 0 if allowed else max(1, math.ceil((cost - bucket.tokens) / rate))
        return RateDecision(
            allowed=allowed,
            limit=int(self.policy.capacity),
            remaining=max(0, math.floor(bucket.tokens + _EPS)),
            reset_s=max(0, reset),
            retry_after_s=retry,
        )

    def check(self, identity: Hashable, cost: float = 1.0) -> RateDecision:
        """Take ``cost`` tokens from ``identity``'s bucket if it can pay; say what happened."""
        with self._lock:
            bucket = self._refill(identity)
            allowed = bucket.tokens + _EPS >= cost
            if allowed:
                bucket.tokens = max(0.0, bucket.tokens - cost)
                self.allowed += 1
            else:
                self.refused += 1
            return self._decision(bucket, allowed, cost)

    def peek(self, identity: Hashable, cost: float = 1.0) -> RateDecision:
        """Whether ``identity`` could pay ``cost`` now, without taking anything."""
        with self._lock:
            bucket = self._refill(identity)
            return self._decision(bucket, bucket.tokens + _EPS >= cost, cost)

    def charge(self, identity: Hashable, cost: float = 1.0) -> None:
        """Take ``cost`` tokens after the fact (never below zero), e.g. for a wasted store read."""
        with self._lock:
            bucket = self._refill(identity)
            bucket.tokens = max(0.0, bucket.tokens - cost)

    def refund(self, identity: Hashable, cost: float = 1.0) -> None:
        """Give back tokens taken by a check whose request was refused by another limit."""
        with self._lock:
            bucket = self._refill(identity)
            bucket.tokens = min(self.policy.capacity, bucket.tokens + cost)


def check_all(checks: Iterable[tuple[RateLimiter, Hashable]], cost: float = 1.0) -> RateDecision:
    """Pass only if every ``(limiter, identity)`` can pay ``cost``; all-or-nothing.

    Tokens taken from the limiters that agreed are refunded when a later one refuses,
    so a refused request costs nothing. Returns :func:`most_restrictive` of the decisions.
    """
    taken: list[tuple[RateLimiter, Hashable]] = []
    decisions: list[RateDecision] = []
    for limiter, identity in checks:
        decision = limiter.check(identity, cost)
        decisions.append(decision)
        if not decision.allowed:
            for done_limiter, done_identity in taken:
                done_limiter.refund(done_identity, cost)
            return most_restrictive(decisions)
        taken.append((limiter, identity))
    return most_restrictive(decisions)
