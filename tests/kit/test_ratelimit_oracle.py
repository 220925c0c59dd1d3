"""Every rate-limit algorithm against a brute-force oracle, on random request streams.

The oracles recompute each decision from the whole admitted history in exact
``Fraction`` arithmetic, from the algorithm's *definition* rather than its incremental
state:

- sliding log: admitted cost in ``(t − W, t]`` plus the request is at most the limit —
  the exact sliding window every other algorithm is measured against;
- fixed window: the same within the aligned window ``[k·W, (k+1)·W)``; its documented
  error: up to 2× the limit in a span of ``W`` across a boundary;
- sliding counter: ``prev · (1 − f) + curr`` from the history; its documented bound: in
  ``(t − W, t]`` at most ``limit + f(t) · prev``;
- token bucket: the arrival-curve form (a request fits iff for every earlier admitted
  instant ``s``, the cost admitted in ``[s, t]`` plus it is at most ``C + r·(t − s)``);
- leaky bucket: departures ``d_i = max(t_i, d_{i−1}) + c_i / r`` and the queue (cost not
  yet departed) plus the request at most the capacity.

Times are multiples of 1/4 s and rates powers of two, so the float implementations and the
exact oracles see the same numbers.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction as F

from hypothesis import given, settings
from hypothesis import strategies as st

from lookup.kit.ratelimit import ALGORITHM_NAMES, RatePolicy, open_rate_limiter

Event = tuple[F, int]  # (time, cost) of one admitted request


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


policies = st.tuples(st.integers(1, 8), st.sampled_from([0.25, 0.5, 1.0, 2.0, 4.0]))
streams = st.lists(
    st.tuples(st.integers(0, 12), st.integers(1, 3)),  # (gap in quarter seconds, cost)
    min_size=1,
    max_size=60,
)


def _in(events: list[Event], lo: F, hi: F, *, closed_lo: bool) -> int:
    return sum(c for t, c in events if (t >= lo if closed_lo else t > lo) and t <= hi)


def log_oracle(cap: int, rate: F) -> Callable[[list[Event], F, int], bool]:
    window = cap / rate
    return lambda ev, t, cost: _in(ev, t - window, t, closed_lo=False) + cost <= cap


def fixed_oracle(cap: int, rate: F) -> Callable[[list[Event], F, int], bool]:
    window = cap / rate

    def fits(ev: list[Event], t: F, cost: int) -> bool:
        k = math.floor(t / window)
        return sum(c for s, c in ev if math.floor(s / window) == k) + cost <= cap

    return fits


def counter_estimate(ev: list[Event], t: F, window: F) -> tuple[F, F, int]:
    """``(estimate, f, prev)`` of the sliding counter at ``t``, from the history."""
    k = math.floor(t / window)
    curr = sum(c for s, c in ev if math.floor(s / window) == k)
    prev = sum(c for s, c in ev if math.floor(s / window) == k - 1)
    f = (t - k * window) / window
    return prev * (1 - f) + curr, f, prev


def counter_oracle(cap: int, rate: F) -> Callable[[list[Event], F, int], bool]:
    window = cap / rate
    return lambda ev, t, cost: counter_estimate(ev, t, window)[0] + cost <= cap


def token_oracle(cap: int, rate: F) -> Callable[[list[Event], F, int], bool]:
    def fits(ev: list[Event], t: F, cost: int) -> bool:
        starts = [s for s, _ in ev] + [t]
        return all(_in(ev, s, t, closed_lo=True) + cost <= cap + rate * (t - s) for s in starts)

    return fits


def departures(ev: list[Event], rate: F) -> list[F]:
    out: list[F] = []
    for t, c in ev:
        out.append(max(t, out[-1] if out else t) + c / rate)
    return out


def leaky_oracle(cap: int, rate: F) -> Callable[[list[Event], F, int], bool]:
    def fits(ev: list[Event], t: F, cost: int) -> bool:
        queued = sum(c for (_, c), d in zip(ev, departures(ev, rate), strict=True) if d > t)
        return queued + cost <= cap

    return fits


ORACLES = {
    "sliding_log": log_oracle,
    "fixed_window": fixed_oracle,
    "sliding_counter": counter_oracle,
    "token_bucket": token_oracle,
    "leaky_bucket": leaky_oracle,
}


def replay(
    algorithm: str, cap: int, rate: float, stream: list[tuple[int, int]]
) -> tuple[list[bool], list[bool], list[Event]]:
    """The limiter's decisions, the oracle's, and the admitted history (time, cost)."""
    clock = Clock()
    url = "memory:" if algorithm == "token_bucket" else f"memory:?algorithm={algorithm}"
    limiter = open_rate_limiter(url, RatePolicy(cap, rate), clock=clock)
    oracle = ORACLES[algorithm](cap, F(rate))
    admitted: list[Event] = []
    got: list[bool] = []
    want: list[bool] = []
    t = F(0)
    for gap, cost in stream:
        t += F(gap, 4)
        clock.now = float(t)
        want.append(oracle(admitted, t, cost))
        got.append(limiter.check("k", cost).allowed)
        if got[-1]:
            admitted.append((t, cost))
    return got, want, admitted


def test_every_algorithm_has_an_oracle() -> None:
    assert set(ORACLES) == set(ALGORITHM_NAMES)


@settings(max_examples=150, deadline=None)
@given(policy=policies, stream=streams, algorithm=st.sampled_from(sorted(ORACLES)))
def test_each_algorithm_decides_exactly_as_its_definition(
    policy: tuple[int, float], stream: list[tuple[int, int]], algorithm: str
) -> None:
    cap, rate = policy
    got, want, _ = replay(algorithm, cap, rate, stream)
    assert got == want


@settings(max_examples=150, deadline=None)
@given(policy=policies, stream=streams)
def test_the_fixed_window_admits_at_most_twice_the_limit_in_any_window(
    policy: tuple[int, float], stream: list[tuple[int, int]]
) -> None:
    cap, rate = policy
    window = cap / F(rate)
    _, _, admitted = replay("fixed_window", cap, rate, stream)
    for t, _ in admitted:
        assert _in(admitted, t - window, t, closed_lo=False) <= 2 * cap


@settings(max_examples=150, deadline=None)
@given(policy=policies, stream=streams)
def test_the_sliding_counter_stays_within_its_weighted_bound(
    policy: tuple[int, float], stream: list[tuple[int, int]]
) -> None:
    cap, rate = policy
    window = cap / F(rate)
    _, _, admitted = replay("sliding_counter", cap, rate, stream)
    for t, _ in admitted:
        _, f, prev = counter_estimate(admitted, t, window)
        assert _in(admitted, t - window, t, closed_lo=False) <= cap + f * prev <= 2 * cap


@settings(max_examples=150, deadline=None)
@given(policy=policies, stream=streams)
def test_the_sliding_log_never_exceeds_the_limit_in_any_window(
    policy: tuple[int, float], stream: list[tuple[int, int]]
) -> None:
    cap, rate = policy
    window = cap / F(rate)
    _, _, admitted = replay("sliding_log", cap, rate, stream)
    for t, _ in admitted:
        assert _in(admitted, t - window, t, closed_lo=False) <= cap


@settings(max_examples=150, deadline=None)
@given(policy=policies, stream=streams)
def test_the_leaky_bucket_lets_work_out_at_its_rate_and_queues_at_most_its_capacity(
    policy: tuple[int, float], stream: list[tuple[int, int]]
) -> None:
    cap, rate = policy
    _, _, admitted = replay("leaky_bucket", cap, rate, stream)
    out = departures(admitted, F(rate))
    for i, ((t, c), d) in enumerate(zip(admitted, out, strict=True)):
        assert d - max(t, out[i - 1] if i else t) == c / F(rate)  # one at a time, at the rate
        queued = sum(cj for (tj, cj), dj in zip(admitted, out, strict=True) if tj <= t < dj)
        assert queued <= cap


@settings(max_examples=100, deadline=None)
@given(
    policy=policies,
    stream=streams,
    algorithm=st.sampled_from(sorted(ORACLES)),
    cost=st.integers(1, 3),
)
def test_retry_after_is_the_first_whole_second_the_request_fits(
    policy: tuple[int, float], stream: list[tuple[int, int]], algorithm: str, cost: int
) -> None:
    cap, rate = policy
    if cost > cap:
        return
    clock = Clock()
    url = "memory:" if algorithm == "token_bucket" else f"memory:?algorithm={algorithm}"
    limiter = open_rate_limiter(url, RatePolicy(cap, rate), clock=clock)
    for gap, c in stream:
        clock.now += gap / 4
        limiter.check("k", c)
    decision = limiter.peek("k", cost)
    if decision.allowed:
        assert decision.retry_after_s == 0
        return
    start = clock.now  # the clock only moves forward: a second short first, then on time
    if decision.retry_after_s > 1:
        clock.now = start + decision.retry_after_s - 1
        assert not limiter.peek("k", cost).allowed
    clock.now = start + decision.retry_after_s
    assert limiter.peek("k", cost).allowed


def boundary_attack(algorithm: str) -> int:
    """The seed's figure: limit 100/min, 99 requests at 0:59 and 99 at 1:00 — how many pass."""
    clock = Clock()
    url = "memory:" if algorithm == "token_bucket" else f"memory:?algorithm={algorithm}"
    limiter = open_rate_limiter(url, RatePolicy.per(100, 60), clock=clock)
    clock.now = 60.0 - 1
    admitted = sum(limiter.check("k").allowed for _ in range(99))
    clock.now = 60.0
    return admitted + sum(limiter.check("k").allowed for _ in range(99))


def test_the_boundary_burst_of_the_seed_and_what_the_others_make_of_it() -> None:
    results = {name: boundary_attack(name) for name in ALGORITHM_NAMES}
    assert results["fixed_window"] == 198  # 99 + 99 in two seconds: the 2× burst
    assert results["sliding_log"] == 100  # exact
    assert results["sliding_counter"] == 100  # at f = 0 the old window weighs fully
    # the buckets: 1 left after the 99, plus 100/60 ≈ 1.67 refilled (drained) in the second
    assert results["token_bucket"] == 101
    assert results["leaky_bucket"] == 101


def test_a_long_lived_log_keeps_its_total_exact_with_fractional_costs() -> None:
    clock = Clock()
    limiter = open_rate_limiter("memory:?algorithm=sliding_log", RatePolicy(10, 10), clock=clock)
    for i in range(20_000):  # window 1 s; 0.1-unit requests every 12.5 ms: 8 units in it
        clock.now = i / 80
        assert limiter.check("k", 0.1).allowed
    assert limiter.peek("k").remaining == 2
    assert limiter.peek("k", 2).allowed and not limiter.peek("k", 2.2).allowed
    clock.now += 10
    assert limiter.peek("k").remaining == 10
