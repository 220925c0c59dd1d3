"""The rate-limiter contract, run against every implementation behind ``open_rate_limiter``.

Exact budgets under an injected clock, refill, refunds, ``peek`` that never charges,
``charge`` after the fact and ``check_all``'s all-or-nothing — once per algorithm
(``memory:?algorithm=NAME``). Where the algorithms legitimately differ (how long a refused
client waits, how the budget comes back) the expected figure is declared per algorithm.
A shared backend joins by adding its URLs to :data:`URLS`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator

import pytest

from lookup.kit.ratelimit import (
    ALGORITHM_NAMES,
    RateLimiter,
    RatePolicy,
    check_all,
    open_rate_limiter,
)

#: Every implementation the contract runs against: the default token bucket and each
#: other in-process algorithm.
URLS = ["memory:"] + [f"memory:?algorithm={name}" for name in ALGORITHM_NAMES[1:]]

#: Algorithms whose budget comes back continuously (one unit every ``1/rate`` seconds).
BUCKETS = {"token_bucket", "leaky_bucket"}


def algorithm_of(url: str) -> str:
    return url.partition("algorithm=")[2] or "token_bucket"


def full_retry(algorithm: str, capacity: float, per_s: float) -> int:
    """Retry-After of one more request once ``capacity`` unit requests were admitted at once.

    Buckets free a unit after ``1/rate``; the fixed window and the log wait the window
    out; the sliding counter waits until the old window's weight leaves room for one.
    """
    window = capacity / per_s
    if algorithm in BUCKETS:
        return math.ceil(1 / per_s)
    if algorithm == "sliding_counter":
        return math.ceil(window * (1 + 1 / capacity))
    return math.ceil(window)


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Make:
    """``make(capacity, per_s, name=...)``: a fresh limiter of the implementation and its clock."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.algorithm = algorithm_of(url)

    def __call__(
        self, capacity: float, per_s: float, name: str = "contract"
    ) -> tuple[RateLimiter, FakeClock]:
        clock = FakeClock()
        policy = RatePolicy(capacity, per_s)
        return open_rate_limiter(self.url, policy, name=name, clock=clock), clock


@pytest.fixture(params=URLS)
def make(request: pytest.FixtureRequest) -> Make:
    """A builder of fresh limiters of one implementation."""
    return Make(request.param)


def test_it_is_a_rate_limiter(make: Make) -> None:
    limiter, _ = make(3, 1, name="owner")
    assert isinstance(limiter, RateLimiter)
    assert limiter.name == "owner" and limiter.policy == RatePolicy(3, 1)


def test_the_budget_is_exact(make: Make) -> None:
    limiter, _ = make(5, 1)
    decisions = [limiter.check("ip-1") for _ in range(8)]
    assert [d.allowed for d in decisions] == [True] * 5 + [False] * 3
    assert [d.remaining for d in decisions[:5]] == [4, 3, 2, 1, 0]
    assert decisions[-1].limit == 5
    assert decisions[-1].retry_after_s == full_retry(make.algorithm, 5, 1)


def test_identities_have_their_own_buckets(
    make: Make,
) -> None:
    limiter, _ = make(1, 1)
    assert limiter.check("a").allowed and not limiter.check("a").allowed
    assert limiter.check("b").allowed
    assert limiter.check(("ip", "key")).allowed  # tuples are identities too


def test_tokens_refill_with_time_and_never_beyond_capacity(
    make: Make,
) -> None:
    if make.algorithm not in BUCKETS:
        pytest.skip("a window's budget comes back with the window (the next test)")
    limiter, clock = make(4, 2)
    for _ in range(4):
        assert limiter.check("k").allowed
    assert not limiter.check("k").allowed
    clock.now += 0.5  # one token at 2 per second
    assert limiter.check("k").allowed and not limiter.check("k").allowed
    clock.now += 3600
    assert limiter.peek("k").remaining == 4
    assert [limiter.check("k").allowed for _ in range(5)] == [True] * 4 + [False]


def test_the_budget_comes_back_once_the_window_has_passed(make: Make) -> None:
    limiter, clock = make(4, 2)  # 4 per 2 s
    for _ in range(4):
        assert limiter.check("k").allowed
    refused = limiter.check("k")
    assert not refused.allowed and 1 <= refused.retry_after_s <= 3
    clock.now += refused.retry_after_s
    assert limiter.check("k").allowed  # Retry-After is honest: the request then fits
    clock.now += 3600
    assert limiter.peek("k").remaining == 4 and limiter.peek("k").reset_s == 0
    assert [limiter.check("k").allowed for _ in range(5)] == [True] * 4 + [False]


def test_peek_never_charges(make: Make) -> None:
    limiter, _ = make(2, 1)
    for _ in range(10):
        assert limiter.peek("k").allowed and limiter.peek("k").remaining == 2
    limiter.check("k")
    limiter.check("k")
    refused = limiter.peek("k")
    assert not refused.allowed and refused.remaining == 0
    assert refused.retry_after_s == full_retry(make.algorithm, 2, 1)


def test_refund_gives_back_and_stops_at_capacity(
    make: Make,
) -> None:
    limiter, _ = make(3, 1)
    limiter.check("k")
    limiter.check("k")
    limiter.refund("k")
    assert limiter.peek("k").remaining == 2
    limiter.refund("k", 100)
    assert limiter.peek("k").remaining == 3


def test_charge_takes_after_the_fact_and_stops_at_zero(
    make: Make,
) -> None:
    limiter, _ = make(3, 1)
    limiter.charge("k", 2)
    assert limiter.peek("k").remaining == 1
    limiter.charge("k", 50)
    assert limiter.peek("k").remaining == 0 and not limiter.check("k").allowed
    limiter.refund("k")
    assert limiter.check("k").allowed  # a charge never leaves a debt behind


def test_cost_above_one(make: Make) -> None:
    limiter, _ = make(5, 1)
    assert limiter.check("k", 3).allowed
    refused = limiter.check("k", 3)
    assert not refused.allowed and refused.remaining == 2
    # token bucket: 1 token short at 1/s; leaky: the 3 queued leave at 3 s; the windows
    # wait theirs out (the counter until 3 × (1 − f) + 3 <= 5, f = 2/3 into the next)
    expected = {"token_bucket": 1, "leaky_bucket": 3, "fixed_window": 5, "sliding_log": 5}
    assert refused.retry_after_s == expected.get(make.algorithm, 7)


def test_reset_forgets_every_identity(make: Make) -> None:
    limiter, _ = make(1, 0.001)
    limiter.check("a")
    limiter.check("b")
    limiter.reset()
    assert limiter.check("a").allowed and limiter.check("b").allowed


def test_stats_count_decisions(make: Make) -> None:
    limiter, _ = make(1, 1)
    limiter.check("a")
    limiter.check("a")
    limiter.peek("a")
    stats = limiter.stats()
    assert stats["allowed"] == 1 and stats["refused"] == 1
    assert stats["policy"] == RatePolicy(1, 1).describe()


def test_check_all_refunds_when_a_later_limit_refuses(
    make: Make,
) -> None:
    owner, _ = make(5, 1, name="owner")
    ip, _ = make(1, 1, name="ip")
    assert check_all([(owner, "o"), (ip, "1.2.3.4")]).allowed
    refused = check_all([(owner, "o"), (ip, "1.2.3.4")])
    assert not refused.allowed and refused.retry_after_s == full_retry(make.algorithm, 1, 1)
    assert owner.peek("o").remaining == 4


def test_an_unknown_url_names_the_accepted_ones() -> None:
    with pytest.raises(ValueError, match="memory:"):
        open_rate_limiter("mongodb://x", RatePolicy(1, 1))


def test_the_factory_reads_the_algorithm_from_the_url() -> None:
    assert open_rate_limiter("memory:", RatePolicy(1, 1)).stats().get("algorithm") is None
    for name in ALGORITHM_NAMES[1:]:
        limiter = open_rate_limiter(f"memory:?algorithm={name}", RatePolicy(1, 1))
        assert limiter.stats()["algorithm"] == name
    with pytest.raises(ValueError, match="sliding_log"):
        open_rate_limiter("memory:?algorithm=nope", RatePolicy(1, 1))
    with pytest.raises(ValueError, match="unknown rate limiter URL parameter"):
        open_rate_limiter("memory:?algoritm=sliding_log", RatePolicy(1, 1))


# -- the shared limiter on Redis ------------------------------------------------------------
# Redis takes the time from its own clock (``TIME``), never from the caller, so these run
# the contract's clock-free half with windows of a million seconds: nothing refills or
# expires while a test runs, and every assertion is on counts.

SLOW = 1e-6  # refill per second per unit of capacity: a window of 10**6 s


@pytest.fixture(params=ALGORITHM_NAMES)
def shared(
    request: pytest.FixtureRequest, redis_server: object
) -> Iterator[Callable[..., RateLimiter]]:
    """``shared(capacity, name=...)``: a fresh Redis limiter of one algorithm."""
    made: list[RateLimiter] = []

    def build(capacity: float, name: str = "contract") -> RateLimiter:
        url = f"{redis_server.url}?algorithm={request.param}"  # type: ignore[attr-defined]
        limiter = open_rate_limiter(url, RatePolicy(capacity, capacity * SLOW), name=name)
        limiter.reset()
        made.append(limiter)
        return limiter

    yield build
    for limiter in made:
        limiter.reset()


def test_shared_the_budget_is_exact(shared: Callable[..., RateLimiter]) -> None:
    limiter = shared(5)
    assert isinstance(limiter, RateLimiter) and limiter.name == "contract"
    decisions = [limiter.check("ip-1") for _ in range(8)]
    assert [d.allowed for d in decisions] == [True] * 5 + [False] * 3
    assert [d.remaining for d in decisions[:5]] == [4, 3, 2, 1, 0]
    assert decisions[-1].limit == 5 and decisions[-1].retry_after_s >= 1
    assert limiter.check("ip-2").allowed and limiter.check(("ip", "key")).allowed


def test_shared_peek_refund_charge_and_cost(shared: Callable[..., RateLimiter]) -> None:
    limiter = shared(3)
    for _ in range(5):
        assert limiter.peek("k").remaining == 3
    limiter.check("k")
    limiter.check("k")
    limiter.refund("k")
    assert limiter.peek("k").remaining == 2
    limiter.refund("k", 100)
    assert limiter.peek("k").remaining == 3
    limiter.charge("k", 2)
    assert limiter.peek("k").remaining == 1
    limiter.charge("k", 50)
    assert limiter.peek("k").remaining == 0 and not limiter.check("k").allowed
    limiter.refund("k")
    assert limiter.check("k").allowed  # a charge never leaves a debt behind
    limiter.reset()
    assert limiter.check("k", 2).allowed
    refused = limiter.check("k", 2)
    assert not refused.allowed and refused.remaining == 1


def test_shared_reset_stats_and_check_all(shared: Callable[..., RateLimiter]) -> None:
    owner, ip = shared(5, name="owner"), shared(1, name="ip")
    assert check_all([(owner, "o"), (ip, "1.2.3.4")]).allowed
    assert not check_all([(owner, "o"), (ip, "1.2.3.4")]).allowed
    assert owner.peek("o").remaining == 4
    stats = ip.stats()
    assert stats["allowed"] == 1 and stats["refused"] == 1
    assert stats["policy"] == RatePolicy(1, SLOW).describe()
    ip.reset()
    assert ip.check("1.2.3.4").allowed and owner.peek("o").remaining == 4
