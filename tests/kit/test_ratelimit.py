"""Token buckets against an exact GCRA oracle, the seed's burst trace, headers and bounds."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lookup.kit.ratelimit import (
    MemoryRateLimiter,
    RateLimiter,
    RatePolicy,
    check_all,
    most_restrictive,
    open_rate_limiter,
)


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class Gcra:
    """Oracle: the generic cell rate algorithm in exact arithmetic (equivalent to a token
    bucket of the same capacity and rate that starts full)."""

    def __init__(self, capacity: int, rate: Fraction) -> None:
        self.interval = 1 / rate
        self.tolerance = (capacity - 1) * self.interval
        self.tat = Fraction(0)

    def allow(self, t: Fraction) -> bool:
        if t < self.tat - self.tolerance:
            return False
        self.tat = max(self.tat, t) + self.interval
        return True


@settings(max_examples=200, deadline=None)
@given(
    st.integers(min_value=1, max_value=20),
    st.sampled_from([1, 2, 4, 8, 16, 32]),
    st.lists(st.integers(min_value=0, max_value=512), min_size=1, max_size=120),
)
def test_token_bucket_agrees_with_gcra(capacity: int, rate: int, gaps: list[int]) -> None:
    # Times on a 1/1024 s grid and power-of-two rates keep the float bucket exact.
    clock = FakeClock()
    limiter = MemoryRateLimiter(RatePolicy(capacity, rate), clock=clock)
    oracle = Gcra(capacity, Fraction(rate))
    t = Fraction(0)
    for gap in gaps:
        t += Fraction(gap, 1024)
        clock.now = float(t)
        assert limiter.check("who").allowed == oracle.allow(t)


def test_the_seed_trace_capacity_20_refill_10_per_second() -> None:
    clock = FakeClock()
    limiter = MemoryRateLimiter(RatePolicy(20, 10), clock=clock)
    burst = [limiter.check("ip").allowed for _ in range(30)]
    assert burst == [True] * 20 + [False] * 10
    refused = limiter.check("ip")
    assert refused.retry_after_s == 1 and refused.remaining == 0
    clock.now = 0.1  # one token refilled
    assert limiter.check("ip").allowed
    assert not limiter.check("ip").allowed


@settings(max_examples=100, deadline=None)
@given(
    st.integers(min_value=1, max_value=10),
    st.floats(min_value=0.01, max_value=50),
    st.integers(min_value=1, max_value=40),
)
def test_retry_after_is_enough_and_reset_means_full(capacity: int, rate: float, n: int) -> None:
    clock = FakeClock()
    limiter = MemoryRateLimiter(RatePolicy(capacity, rate), clock=clock)
    decision = None
    for _ in range(n):
        decision = limiter.check("k")
    assert decision is not None
    if not decision.allowed:
        assert decision.retry_after_s >= 1
        clock.now += decision.retry_after_s
        assert limiter.check("k").allowed
    else:
        clock.now += decision.reset_s
        assert limiter.peek("k").remaining == capacity


def test_headers_are_the_standard_ones() -> None:
    limiter = MemoryRateLimiter(RatePolicy.per(2, 60), clock=FakeClock())
    ok = limiter.check("a")
    assert ok.headers() == {
        "RateLimit-Limit": "2",
        "RateLimit-Remaining": "1",
        "RateLimit-Reset": "30",
    }
    limiter.check("a")
    refused = limiter.check("a")
    headers = refused.headers()
    assert headers["RateLimit-Remaining"] == "0" and headers["Retry-After"] == "30"
    assert headers["RateLimit-Reset"] == "60"


def test_identities_are_independent_and_bounded() -> None:
    limiter = MemoryRateLimiter(RatePolicy(1, 1), clock=FakeClock(), max_identities=3)
    assert limiter.check("a").allowed and not limiter.check("a").allowed
    assert limiter.check("b").allowed
    for who in "cdef":
        limiter.check(who)
    assert limiter.stats()["identities"] == 3


def test_check_all_is_all_or_nothing() -> None:
    clock = FakeClock()
    owner = MemoryRateLimiter(RatePolicy(5, 1), clock=clock)
    ip = MemoryRateLimiter(RatePolicy(1, 1), clock=clock)
    assert check_all([(owner, "o"), (ip, "1.2.3.4")]).allowed
    refused = check_all([(owner, "o"), (ip, "1.2.3.4")])
    assert not refused.allowed and refused.retry_after_s == 1
    assert owner.peek("o").remaining == 4  # the refused request was refunded


def test_charge_and_refund_stay_within_the_bucket() -> None:
    limiter = MemoryRateLimiter(RatePolicy(3, 1), clock=FakeClock())
    limiter.charge("k", 10)
    assert limiter.peek("k").remaining == 0
    limiter.refund("k", 10)
    assert limiter.peek("k").remaining == 3


@pytest.mark.parametrize(
    ("text", "capacity", "rate"),
    [("20/60", 20, 1 / 3), ("5/1:50", 50, 5), (" 1.5 / 3 ", 1.5, 0.5)],
)
def test_policy_parsing(text: str, capacity: float, rate: float) -> None:
    policy = RatePolicy.parse(text)
    assert policy.capacity == capacity and math.isclose(policy.refill_per_s, rate)


@pytest.mark.parametrize("text", ["", "20", "a/b", "0/60", "5/0", "-1/2", "5/1:0"])
def test_bad_policies_are_refused(text: str) -> None:
    with pytest.raises(ValueError):
        RatePolicy.parse(text)


def test_most_restrictive_picks_the_longest_wait() -> None:
    clock = FakeClock()
    a = MemoryRateLimiter(RatePolicy(1, 1), clock=clock)
    b = MemoryRateLimiter(RatePolicy(1, 0.1), clock=clock)
    a.check("x")
    b.check("x")
    chosen = most_restrictive([a.check("x"), b.check("x")])
    assert chosen.retry_after_s == 10
    with pytest.raises(ValueError):
        most_restrictive([])


def test_the_factory_opens_in_process_buckets_and_refuses_unknown_urls() -> None:
    limiter = open_rate_limiter("memory:", RatePolicy(2, 1), name="ip", clock=FakeClock())
    assert isinstance(limiter, MemoryRateLimiter) and isinstance(limiter, RateLimiter)
    assert limiter.name == "ip" and limiter.stats()["policy"] == RatePolicy(2, 1).describe()
    for url in ("mongodb://127.0.0.1/0", "sqlite:///tmp/limits.sqlite", ""):
        with pytest.raises(ValueError, match="memory:.*redis://"):
            open_rate_limiter(url, RatePolicy(2, 1))
    shared = open_rate_limiter("redis://127.0.0.1:6379/0", RatePolicy(2, 1))  # no I/O yet
    assert isinstance(shared, RateLimiter) and shared.stats()["backend"] == "redis"
