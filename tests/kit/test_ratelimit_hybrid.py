"""The hybrid limiter: local prepaid budgets in front of a shared limit.

In-process (an injected clock) its decisions are checked against its stated bounds on
random skewed streams; on Redis, real processes sharing one limit through hybrids admit
exactly the limit when nothing refills, and stay within ``C + r·T + N × batch`` when it
does (T the whole run's wall time, an upper bound whatever the scheduling).
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import textwrap

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lookup.blocks.limits.experiments import excess_over_bucket
from lookup.kit.engines.redisserver import RedisServer
from lookup.kit.ratelimit import (
    HybridRateLimiter,
    MemoryRateLimiter,
    RateLimiter,
    RatePolicy,
    open_rate_limiter,
)

SLOW = 1e-6


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_it_is_a_rate_limiter_and_the_factory_spells_it_local_budget() -> None:
    hybrid = open_rate_limiter("memory:?local_budget=0.1", RatePolicy(100, 1))
    assert isinstance(hybrid, HybridRateLimiter) and isinstance(hybrid, RateLimiter)
    assert hybrid.batch == 10 and hybrid.stats()["backend"] == "hybrid+memory"
    for bad in ("0", "1.5", "-1", "x"):
        with pytest.raises(ValueError, match="local_budget"):
            open_rate_limiter(f"memory:?local_budget={bad}", RatePolicy(100, 1))


def test_a_budget_is_spent_locally_and_refilled_from_the_store() -> None:
    shared = MemoryRateLimiter(RatePolicy(25, SLOW), clock=lambda: 0.0)
    hybrid = HybridRateLimiter(shared, 0.2)  # batches of 5
    got = [hybrid.check("k") for _ in range(27)]
    assert [d.allowed for d in got] == [True] * 25 + [False] * 2
    assert hybrid.shared_calls == 5 + 2 and hybrid.local_decisions == 20
    assert got[-1].retry_after_s >= 1 and "Retry-After" in got[-1].headers()
    hybrid.refund("k", 2)
    assert hybrid.held("k") == 2 and hybrid.peek("k", 2).allowed
    hybrid.release()  # unspent budget goes back to the store
    assert hybrid.held("k") == 0 and shared.peek("k").remaining == 2


def test_less_than_a_batch_left_is_still_taken() -> None:
    shared = MemoryRateLimiter(RatePolicy(7, SLOW), clock=lambda: 0.0)
    a, b = HybridRateLimiter(shared, 0.5), HybridRateLimiter(shared, 0.5)  # batches of 3
    assert a.check("k").allowed and b.check("k").allowed  # 3 + 3 taken, 1 left
    assert a.held("k") == 2 and b.held("k") == 2
    assert sum(x.check("k").allowed for x in (a, a, a, a)) == 3  # 2 held + the last 1
    assert not a.check("k").allowed
    assert sum(b.check("k").allowed for _ in range(5)) == 2  # b's budget still spendable


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 10**6),
    share=st.sampled_from([0.05, 0.1, 0.25, 0.5]),
    instances=st.integers(2, 5),
)
def test_the_fleet_stays_within_its_bounds_on_random_streams(
    seed: int, share: float, instances: int
) -> None:
    rng = random.Random(seed)
    cap, rate = 40, 4.0
    clock = Clock()
    shared = MemoryRateLimiter(RatePolicy(cap, rate), clock=clock)
    fleet = [HybridRateLimiter(shared, share) for _ in range(instances)]
    weights = [rng.random() + 0.01 for _ in fleet]
    batch = fleet[0].batch
    events: list[tuple[float, float]] = []
    for _ in range(400):
        clock.now += rng.choice([0.0, 0.0, 0.01, 0.1, 1.0, 5.0])
        i = rng.choices(range(instances), weights=weights)[0]
        if fleet[i].check("k").allowed:
            events.append((clock.now, 1.0))
        else:  # under-limiting: what the others hold unspent is at most (N − 1) batches
            held = sum(h.held("k") for j, h in enumerate(fleet) if j != i)
            assert held <= (instances - 1) * batch + 1e-9
    # over-limiting: beyond the shared bucket's curve by at most N batches in any span
    assert excess_over_bucket(events, cap, rate) <= instances * batch + 1e-9
    assert excess_over_bucket(events, cap + instances * batch, rate) == 0


#: The workers wait for Redis as long as it takes: on a loaded machine a script may take
#: longer than the 0.25 s after which a limiter declares Redis down and decides locally,
#: and this test is about what Redis decides (the outage policy has its own test).
PATIENT = {**os.environ, "LOOKUP_RATELIMIT_REDIS_TIMEOUT": "30"}

_WORKER = textwrap.dedent(
    """
    import json, sys, time
    from lookup.kit.ratelimit import RatePolicy, open_rate_limiter
    url, cap, rate, seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
    limiter = open_rate_limiter(url, RatePolicy(cap, rate), name="hybrid-drill")
    admitted, tried = [], 0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        tried += 1
        if limiter.check("shared-key").allowed:
            admitted.append(time.monotonic())  # one clock for every process on this machine
        time.sleep(0.001)
    limiter.close()
    print(json.dumps({"admitted": admitted, "tried": tried,
                      "calls": limiter.stats()["shared_calls"]}))
    """
)


def _fleet(url: str, cap: int, rate: float, seconds: float, shares: list[float]) -> list[dict]:
    """Processes hammering one key, each for a time proportional to its share of traffic."""
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _WORKER, url, str(cap), str(rate), str(seconds * s)],
            stdout=subprocess.PIPE,
            text=True,
            env=PATIENT,
        )
        for s in shares
    ]
    out = [json.loads(p.communicate(timeout=120)[0]) for p in procs]
    assert all(p.returncode == 0 for p in procs)
    return out


def test_hybrids_in_four_processes_admit_exactly_the_limit_when_nothing_refills(
    redis_server: RedisServer,
) -> None:
    cap = 120
    url = f"{redis_server.url}?algorithm=token_bucket&local_budget=0.1"
    open_rate_limiter(url, RatePolicy(cap, cap * SLOW), name="hybrid-drill").reset()
    out = _fleet(url, cap, cap * SLOW, 1.5, [1.0, 0.5, 0.3, 0.3])
    assert sum(len(o["admitted"]) for o in out) == cap  # every unit taken from the store first
    tried, calls = sum(o["tried"] for o in out), sum(o["calls"] for o in out)
    assert tried > cap and calls < tried  # some decisions needed no round trip


#: How long after Redis granted a unit its process may note the time it admitted it (a
#: round trip and a descheduling): the bound is loosened by ``rate × SLACK_S``.
SLACK_S = 0.5


def test_hybrids_in_four_processes_stay_within_the_bound_while_it_refills(
    redis_server: RedisServer,
) -> None:
    cap, rate, share, n = 40, 40.0, 0.1, 4
    url = f"{redis_server.url}?algorithm=token_bucket&local_budget={share}"
    open_rate_limiter(url, RatePolicy(cap, rate), name="hybrid-drill").reset()
    out = _fleet(url, cap, rate, 2.0, [1.0, 0.5, 0.25, 0.25])
    events = sorted((t, 1.0) for o in out for t in o["admitted"])
    batch = max(1, int(share * cap))
    excess = excess_over_bucket(events, cap, rate)  # worst span, all processes together
    print(
        f"admitted {len(events)}; worst span {excess:.1f} over C + r·(t − s), "
        f"bound N × batch = {n * batch} (+ {rate * SLACK_S:.0f} slack)"
    )
    assert excess <= n * batch + rate * SLACK_S
    assert len(events) > cap  # it did refill: the bound was exercised, not vacuous


def test_the_budget_and_the_outage_share_are_two_knobs(redis_server: RedisServer) -> None:
    url = f"{redis_server.url}?algorithm=token_bucket&local_share=0.25&local_budget=0.1"
    hybrid = open_rate_limiter(url, RatePolicy(100, 1), name="knobs")
    assert isinstance(hybrid, HybridRateLimiter) and hybrid.batch == 10
    assert hybrid.stats()["localShare"] == 0.25  # the shared limiter's outage fallback
    hybrid.close()
