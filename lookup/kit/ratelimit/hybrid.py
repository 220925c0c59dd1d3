"""The hybrid of seed 004: a local budget as the fast path, the shared store when it runs out.

Each process keeps, per identity, a local budget of at most ``batch = local_budget × limit``
units that it has already *taken* from the shared limiter in one atomic call. A request
is decided locally while the budget lasts (no round trip); when it runs out, the process
takes the next batch from the shared store (or what is left there, if less), and refuses
only when the shared store has nothing left for it either.

Because every unit admitted was first taken from the shared limit, nothing is admitted
that the shared limit did not grant — the error is only *when*: a batch taken at ``s``
may be spent later. The bounds, measured in ``lookup/blocks/limits/experiments.py`` and
asserted across processes on Redis in ``tests/kit/test_ratelimit_hybrid.py``:

- over-limiting (admitted beyond the shared limit): in any span, at most ``N × batch``
  more than the shared limit admits in that span (the budgets held when it starts);
  with no refill at all, exactly the limit;
- under-limiting (a refusal while the fleet still had room): at most ``(N − 1) × batch``
  units sit unspent in the other processes' budgets.

``close()`` (and eviction from the bounded table) hands unspent budgets back. One lock
guards a process's budgets; a round trip happens under it only when a budget runs out.
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from collections.abc import Hashable

from lookup.kit.ratelimit.bucket import RateDecision, RateLimiter, RatePolicy

__all__ = ["HybridRateLimiter"]

_EPS = 1e-9


class HybridRateLimiter:
    """Local prepaid budgets per identity in front of a shared :class:`RateLimiter`."""

    def __init__(
        self,
        shared: RateLimiter,
        local_budget: float,
        *,
        max_identities: int = 100_000,
    ) -> None:
        if not 0 < local_budget <= 1:
            raise ValueError(f"local_budget must be in (0, 1], not {local_budget!r}")
        self.shared = shared
        self.policy: RatePolicy = shared.policy
        self.name = shared.name
        self.local_budget = local_budget
        #: The most a process takes from the shared store at once.
        self.batch = max(1.0, math.floor(local_budget * shared.policy.capacity))
        self._budgets: OrderedDict[Hashable, float] = OrderedDict()
        self._max = max_identities
        self._lock = threading.Lock()
        self.allowed = 0
        self.refused = 0
        self.local_decisions = 0
        self.shared_calls = 0

    def _budget(self, identity: Hashable) -> float:
        budget = self._budgets.get(identity, 0.0)
        if identity in self._budgets:
            self._budgets.move_to_end(identity)
        return budget

    def _keep(self, identity: Hashable, budget: float) -> None:
        self._budgets[identity] = budget
        self._budgets.move_to_end(identity)
        while len(self._budgets) > self._max:
            old, left = self._budgets.popitem(last=False)
            if left > _EPS:
                self.shared.refund(old, left)

    def _take(self, identity: Hashable, cost: float) -> RateDecision:
        """Take a batch (at least ``cost``) from the shared store, or what it has left."""
        want = max(self.batch, cost)
        self.shared_calls += 1
        got = self.shared.check(identity, want)
        if got.allowed:
            self._keep(identity, self._budget(identity) + want)
            return got
        left = float(got.remaining)
        if left + _EPS >= cost:  # less than a batch is left: take what there is
            self.shared_calls += 1
            rest = self.shared.check(identity, left)
            if rest.allowed:
                self._keep(identity, self._budget(identity) + left)
                return rest
            got = rest
        return got

    def _decision(self, allowed: bool, budget: float, shared: RateDecision | None) -> RateDecision:
        limit = int(self.policy.capacity)
        if shared is None:  # decided locally: the local budget is what is known to remain
            return RateDecision(allowed, limit, max(0, math.floor(budget + _EPS)), 0, 0)
        return RateDecision(
            allowed=allowed,
            limit=limit,
            remaining=max(0, math.floor(budget + _EPS)) + (shared.remaining if allowed else 0),
            reset_s=shared.reset_s,
            retry_after_s=0 if allowed else max(1, shared.retry_after_s),
        )

    def check(self, identity: Hashable, cost: float = 1.0) -> RateDecision:
        """Spend ``cost`` from the local budget, refilling it from the shared store if short."""
        with self._lock:
            budget = self._budget(identity)
            shared = None
            if budget + _EPS < cost:
                shared = self._take(identity, cost)
                budget = self._budget(identity)
            else:
                self.local_decisions += 1
            allowed = budget + _EPS >= cost
            if allowed:
                budget = max(0.0, budget - cost)
                self._keep(identity, budget)
                self.allowed += 1
            else:
                self.refused += 1
            return self._decision(allowed, budget, shared)

    def peek(self, identity: Hashable, cost: float = 1.0) -> RateDecision:
        """Whether ``cost`` would be admitted now, taking nothing."""
        with self._lock:
            budget = self._budget(identity)
        if budget + _EPS >= cost:
            return self._decision(True, budget, None)
        seen = self.shared.peek(identity, cost - budget)
        return self._decision(seen.allowed, budget, seen)

    def charge(self, identity: Hashable, cost: float = 1.0) -> None:
        """Take ``cost`` after the fact: from the local budget first, the rest from the store."""
        with self._lock:
            budget = self._budget(identity)
            paid = min(budget, cost)
            if identity in self._budgets:
                self._keep(identity, budget - paid)
        if cost - paid > _EPS:
            self.shared.charge(identity, cost - paid)

    def refund(self, identity: Hashable, cost: float = 1.0) -> None:
        """Give back ``cost``: into the local budget (it was taken from the store already)."""
        with self._lock:
            self._keep(identity, self._budget(identity) + cost)

    def held(self, identity: Hashable) -> float:
        """The unspent local budget of ``identity`` (taken from the store, not yet used)."""
        with self._lock:
            return self._budgets.get(identity, 0.0)

    def release(self) -> None:
        """Hand every unspent local budget back to the shared store."""
        with self._lock:
            budgets, self._budgets = self._budgets, OrderedDict()
        for identity, left in budgets.items():
            if left > _EPS:
                self.shared.refund(identity, left)

    def reset(self) -> None:
        """Forget every identity, locally and in the shared store."""
        with self._lock:
            self._budgets.clear()
        self.shared.reset()

    def stats(self) -> dict[str, object]:
        """The shared limiter's stats, with the local budget and how often it was enough."""
        out = dict(self.shared.stats())
        out.update(
            backend=f"hybrid+{out.get('backend', 'memory')}",
            local_budget=self.local_budget,
            batch=self.batch,
            allowed=self.allowed,
            refused=self.refused,
            local_decisions=self.local_decisions,
            shared_calls=self.shared_calls,
        )
        return out

    def close(self) -> None:
        """Hand unspent budgets back, then let go of the shared limiter's connection."""
        self.release()
        close = getattr(self.shared, "close", None)
        if close is not None:
            close()
