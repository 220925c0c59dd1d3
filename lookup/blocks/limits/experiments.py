"""Seed 004's claims about rate limiters, measured on the real limiters.

Every function drives the limiters of :mod:`lookup.kit.ratelimit` — in-process with an
injected clock (minutes replay in milliseconds), on Redis where a URL is given — and
returns rows of figures (lists of dicts) for the notebook, the dashboard and the report:

- :func:`boundary_burst` — the fixed window's ``99 at 0:59 + 99 at 1:00``, per algorithm;
- :func:`error_bounds` — on random bursty streams, the most each algorithm admits in any
  window-long span (÷ the limit, against its documented bound) and how often it decides
  differently from the exact sliding log (the oracle tests in
  ``tests/kit/test_ratelimit_oracle.py`` assert the bounds; this measures how close
  streams come to them);
- :func:`memory_in_process` / :func:`memory_on_redis` — bytes per identity;
- :func:`split_quota` — "each instance allows limit/N" under skewed traffic against one
  shared limit and the hybrid;
- :func:`hybrid_bound` — the hybrid's over- and under-limiting against its stated bounds.
"""

from __future__ import annotations

import gc
import random
import tracemalloc
from collections.abc import Hashable, Sequence
from typing import Any

from lookup.blocks.limits.traffic import ManualClock, Request, make_stream, replay
from lookup.kit.ratelimit import (
    ALGORITHM_NAMES,
    HybridRateLimiter,
    MemoryRateLimiter,
    RateLimiter,
    RatePolicy,
    open_rate_limiter,
)
from lookup.kit.ratelimit.windows import ALGORITHMS

__all__ = [
    "BOUNDS",
    "boundary_burst",
    "error_bounds",
    "excess_over_bucket",
    "hybrid_bound",
    "max_in_span",
    "memory_in_process",
    "memory_on_redis",
    "memory_url",
    "split_quota",
]

#: The documented bound on what each algorithm admits in any span of one window, as a
#: multiple of the limit (capacity = limit, refill = limit per window).
BOUNDS: dict[str, float] = {
    "token_bucket": 2.0,  # C + r·W
    "fixed_window": 2.0,  # a full window each side of a boundary
    "sliding_log": 1.0,  # the exact definition
    "sliding_counter": 2.0,  # limit + f·prev, prev ≤ limit
    "leaky_bucket": 2.0,  # a full queue plus r·W drained
}

#: A refill so slow that nothing comes back while an experiment runs (a window of 10^6 s).
_SLOW = 1e-6


def memory_url(algorithm: str) -> str:
    """The in-process limiter URL of ``algorithm``."""
    return "memory:" if algorithm == "token_bucket" else f"memory:?algorithm={algorithm}"


def _limiter(
    algorithm: str, policy: RatePolicy, clock: ManualClock, max_identities: int = 100_000
) -> RateLimiter:
    """The in-process limiter of ``algorithm`` on ``clock``."""
    if algorithm == "token_bucket":
        return MemoryRateLimiter(policy, clock=clock, max_identities=max_identities)
    return ALGORITHMS[algorithm](policy, clock=clock, max_identities=max_identities)


def max_in_span(times: Sequence[float], span: float, costs: Sequence[float] | None = None) -> float:
    """The most cost admitted in any half-open span ``(t − span, t]`` (times sorted)."""
    costs = costs if costs is not None else [1.0] * len(times)
    best = inside = 0.0
    lo = 0
    for hi, t in enumerate(times):
        inside += costs[hi]
        while times[lo] <= t - span:
            inside -= costs[lo]
            lo += 1
        best = max(best, inside)
    return best


def boundary_burst(limit: int = 100, window_s: float = 60.0) -> list[dict[str, Any]]:
    """The seed's attack — ``limit − 1`` at 0:59 and ``limit − 1`` at 1:00 — per algorithm."""
    stream = make_stream("boundary attack", limit, window_s)
    policy = RatePolicy.per(limit, window_s)
    rows = []
    for algorithm in ALGORITHM_NAMES:
        clock = ManualClock()
        got = replay(_limiter(algorithm, policy, clock), stream, clock)
        at_59 = sum(d.decision.allowed for d in got if d.request.t < window_s)
        at_60 = sum(d.decision.allowed for d in got if d.request.t >= window_s)
        admitted = at_59 + at_60
        rows.append({"algorithm": algorithm, "admitted at 0:59": at_59,
                     "admitted at 1:00": at_60, "admitted in 2 s": admitted,
                     "× limit": round(admitted / limit, 2)})  # fmt: skip
    return rows


def _random_stream(rng: random.Random, limit: int, window_s: float) -> list[Request]:
    """Bursty on/off traffic over 6 windows: bursts of up to 1.5× the limit, quiet gaps."""
    out: list[Request] = []
    t = 0.0
    while t < 6 * window_s:
        if rng.random() < 0.5:  # a burst: many requests within a tenth of a window
            for _ in range(rng.randint(1, int(1.5 * limit))):
                out.append(Request(t))
                t += rng.uniform(0, window_s / 10 / limit)
        else:
            t += rng.uniform(0, window_s)
        out.append(Request(t))
        t += rng.expovariate(2 * limit / window_s)
    return out


def error_bounds(streams: int = 50, limit: int = 20, seed: int = 0) -> list[dict[str, Any]]:
    """Per algorithm, over ``streams`` random bursty streams: the most admitted in any span
    of one window (÷ limit, worst stream) against :data:`BOUNDS`, and the share of
    decisions that differ from the exact sliding log's on the same stream."""
    rng = random.Random(seed)
    window_s = 60.0
    policy = RatePolicy.per(limit, window_s)
    worst = dict.fromkeys(ALGORITHM_NAMES, 0.0)
    differ = dict.fromkeys(ALGORITHM_NAMES, 0)
    admitted = dict.fromkeys(ALGORITHM_NAMES, 0)
    decisions = 0
    for _ in range(streams):
        stream = _random_stream(rng, limit, window_s)
        decided = {}
        for algorithm in ALGORITHM_NAMES:
            clock = ManualClock()
            got = replay(_limiter(algorithm, policy, clock), stream, clock)
            decided[algorithm] = [d.decision.allowed for d in got]
            times = [d.request.t for d in got if d.decision.allowed]
            worst[algorithm] = max(worst[algorithm], max_in_span(times, window_s) / limit)
            admitted[algorithm] += len(times)
        exact = decided["sliding_log"]
        for algorithm in ALGORITHM_NAMES:
            differ[algorithm] += sum(a != b for a, b in zip(decided[algorithm], exact, strict=True))
        decisions += len(stream)
    return [{"algorithm": a, "worst span ÷ limit": round(worst[a], 3),
             "documented bound": BOUNDS[a], "within bound": worst[a] <= BOUNDS[a] + 1e-9,
             "decisions unlike the log": f"{differ[a] / decisions:.2%}",
             "admitted ÷ the log's": round(admitted[a] / admitted["sliding_log"], 3)}
            for a in ALGORITHM_NAMES]  # fmt: skip


def _identities(n: int) -> list[str]:
    return [f"user-{i:07d}" for i in range(n)]


def memory_in_process(
    identities: int = 100_000, requests_each: int = 1, algorithms: Sequence[str] = ALGORITHM_NAMES
) -> list[dict[str, Any]]:
    """Bytes per identity of each in-process limiter (tracemalloc, the identity strings
    themselves excluded), after ``requests_each`` admitted requests per identity."""
    names = _identities(identities)
    rows = []
    for algorithm in algorithms:
        policy = RatePolicy(max(requests_each, 1) * 10, _SLOW)
        clock = ManualClock(1.0)
        gc.collect()
        tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
        limiter = _limiter(algorithm, policy, clock, max_identities=identities)
        for _ in range(requests_each):
            for name in names:
                limiter.check(name)
        used = tracemalloc.get_traced_memory()[0] - before
        tracemalloc.stop()
        rows.append({"algorithm": algorithm, "identities": identities,
                     "requests each": requests_each,
                     "bytes per identity": round(used / identities)})  # fmt: skip
        del limiter
    return rows


def memory_on_redis(
    url: str,
    identities: int = 10_000,
    requests_each: int = 1,
    algorithms: Sequence[str] = ALGORITHM_NAMES,
    chunk: int = 2_000,
) -> list[dict[str, Any]]:
    """Bytes per identity on the Redis at ``url``: the growth of ``used_memory`` over
    ``identities`` identities, and ``MEMORY USAGE`` of one identity's keys. Each
    algorithm's keys are deleted afterwards."""
    from lookup.kit.ratelimit.redis_store import RedisRateLimiter  # the client, only here

    names = _identities(identities)
    rows = []
    for algorithm in algorithms:
        policy = RatePolicy(max(requests_each, 1) * 10, max(requests_each, 1) * 10 * _SLOW)
        limiter = RedisRateLimiter(url, policy, algorithm=algorithm, name="mem", timeout_s=60.0)
        limiter.reset()
        before = limiter.server_memory()
        for _ in range(requests_each):
            for i in range(0, identities, chunk):
                limiter.check_many(names[i : i + chunk])
        grown = limiter.server_memory() - before
        if limiter.unavailable:  # a fallback decision would not be on Redis: no figure
            raise RuntimeError(f"Redis did not answer {limiter.unavailable} times")
        rows.append({"algorithm": algorithm, "identities": identities,
                     "requests each": requests_each,
                     "bytes per identity (used_memory)": round(grown / identities),
                     "MEMORY USAGE of one": limiter.memory_usage(names[0])})  # fmt: skip
        limiter.reset()
        limiter.close()
    return rows


def _skewed(n: int, shares: Sequence[float], seed: int) -> list[int]:
    """Which instance each of ``n`` requests lands on, in proportion to ``shares``."""
    return random.Random(seed).choices(range(len(shares)), weights=shares, k=n)


def split_quota(
    limit: int = 100,
    shares: Sequence[float] = (0.8, 0.1, 0.05, 0.05),
    offered: float = 2.0,
    algorithm: str = "token_bucket",
    local_budget: float = 0.1,
    shared_url: str | None = None,
    seed: int = 0,
) -> list[dict[str, Any]]:
    """One identity's quota of ``limit`` (nothing refills meanwhile) under ``offered × limit``
    requests spread over the instances by ``shares``, enforced four ways:

    - one shared limit (on Redis when ``shared_url`` is given): exact;
    - each instance allowing ``limit / N``;
    - the same after the fleet doubled while each instance still allows ``limit / N``
      of the old N (uniform traffic);
    - the hybrid, ``local_budget`` of the quota per instance before the shared store.

    "Refused within the quota" = requests the exact limit admits that this refuses
    (over-limiting); "admitted beyond the quota" = admitted above the limit (under-limiting).
    """
    n = len(shares)
    policy = RatePolicy(limit, limit * _SLOW)
    requests = int(offered * limit)
    where = _skewed(requests, shares, seed)
    clock = ManualClock(1.0)
    key: Hashable = "client"

    def shared() -> RateLimiter:
        if shared_url is None:
            return _limiter(algorithm, policy, clock)
        lim = open_rate_limiter(f"{shared_url}?algorithm={algorithm}", policy, name="split")
        lim.reset()
        return lim

    def run(instances: list[RateLimiter], route: list[int]) -> tuple[int, list[int]]:
        per = [0] * len(instances)
        for i in route:
            per[i] += instances[i].check(key).allowed
        return sum(per), per

    one = shared()
    exact, exact_per = run([one] * n, where)
    split_policy = RatePolicy(max(1.0, limit / n), max(1.0, limit / n) * _SLOW)
    divided, divided_per = run([_limiter(algorithm, split_policy, clock) for _ in range(n)], where)
    grown_route = _skewed(requests, [1.0] * (2 * n), seed)
    grown, grown_per = run(
        [_limiter(algorithm, split_policy, clock) for _ in range(2 * n)], grown_route
    )
    one.reset()
    hybrids = [HybridRateLimiter(one, local_budget) for _ in range(n)]
    hybrid, hybrid_per = run(hybrids, where)  # type: ignore[arg-type]
    one.reset()
    backend = "Redis" if shared_url else "in-process"
    rows = []
    for name, total, per in [
        (f"one shared limit ({backend}, exact)", exact, exact_per),
        (f"each of {n} allows limit/{n}", divided, divided_per),
        (f"fleet grown to {2 * n}, each still limit/{n}", grown, grown_per),
        (f"hybrid, local budget {local_budget:g}", hybrid, hybrid_per),
    ]:
        rows.append({"enforcement": name, "offered": requests, "admitted": total,
                     "per instance": per,
                     "refused within the quota": max(0, min(limit, requests) - total),
                     "admitted beyond the quota": max(0, total - limit),
                     "× limit": round(total / limit, 2)})  # fmt: skip
    return rows


def excess_over_bucket(events: list[tuple[float, float]], capacity: float, rate: float) -> float:
    """The most the admitted ``(time, cost)`` events exceed a token bucket's arrival curve
    ``C + r·(t − s)`` over any span ``[s, t]`` (0 when they never do)."""
    best = 0.0
    low = float("inf")  # min over j ≤ k of (A_{j−1} − r·t_j)
    total = 0.0
    for t, cost in events:
        low = min(low, total - rate * t)
        total += cost
        best = max(best, (total - rate * t) - low - capacity)
    return best


def hybrid_bound(
    limit: int = 100,
    window_s: float = 10.0,
    shares: Sequence[float] = (0.8, 0.1, 0.05, 0.05),
    local_budgets: Sequence[float] = (0.01, 0.05, 0.1, 0.25),
    windows: int = 30,
    seed: int = 0,
) -> list[dict[str, Any]]:
    """The hybrid over a shared token bucket (``limit`` burst, ``limit`` per window), on
    bursty traffic skewed over the instances, with an injected clock.

    Over-limiting: the most the fleet's admissions exceed the shared bucket's curve
    ``C + r·(t − s)`` over any span, against the bound ``N × batch``. Under-limiting: at
    each refusal, the budget unspent in the other instances, against ``(N − 1) × batch``.
    Also: the share of admissions made with no call to the shared store (a refusal always
    asks it). The last row is one exact shared bucket on the same stream."""
    n = len(shares)
    policy = RatePolicy.per(limit, window_s)
    rng = random.Random(seed)
    stream = _random_stream(rng, limit, window_s)
    stream = [r for r in stream if r.t < windows * window_s]
    where = _skewed(len(stream), shares, seed)
    rows = []
    for share in local_budgets:
        clock = ManualClock()
        one = _limiter("token_bucket", policy, clock)
        hybrids = [HybridRateLimiter(one, share) for _ in range(n)]
        events: list[tuple[float, float]] = []
        held_worst = 0.0
        for request, i in zip(stream, where, strict=True):
            clock.now = request.t
            if hybrids[i].check("client").allowed:
                events.append((request.t, 1.0))
            else:
                held = sum(h.held("client") for j, h in enumerate(hybrids) if j != i)
                held_worst = max(held_worst, held)
        batch = hybrids[0].batch
        local = sum(h.local_decisions for h in hybrids)
        over = excess_over_bucket(events, policy.capacity, policy.refill_per_s)
        rows.append({"local budget": share, "batch": batch, "admitted": len(events),
                     "over the shared curve (worst span)": round(over, 2),
                     "bound N × batch": n * batch,
                     "unspent elsewhere at a refusal (worst)": round(held_worst, 2),
                     "bound (N − 1) × batch": (n - 1) * batch,
                     "admitted with no round trip":
                         f"{local / max(1, len(events)):.1%}"})  # fmt: skip
    clock = ManualClock()
    exact = _limiter("token_bucket", policy, clock)
    admitted = 0
    for request in stream:
        clock.now = request.t
        admitted += exact.check("client").allowed
    rows.append({"local budget": 0.0, "batch": 0, "admitted": admitted,
                 "over the shared curve (worst span)": 0.0, "bound N × batch": 0,
                 "unspent elsewhere at a refusal (worst)": 0.0, "bound (N − 1) × batch": 0,
                 "admitted with no round trip": "0.0%"})  # fmt: skip
    return rows
