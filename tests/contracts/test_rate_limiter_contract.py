"""The rate-limiter contract, run against every implementation behind ``open_rate_limiter``.

Exact budgets under an injected clock, refill, refunds, ``peek`` that never charges,
``charge`` after the fact and ``check_all``'s all-or-nothing. A shared backend joins by
adding its URL to :data:`URLS` (and skipping when its server is not available).
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from lookup.kit.ratelimit import RateLimiter, RatePolicy, check_all, open_rate_limiter

#: Every implementation the contract runs against (today the embedded one).
URLS = ["memory:"]


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


Make = Callable[..., tuple[RateLimiter, FakeClock]]


@pytest.fixture(params=URLS)
def make(request: pytest.FixtureRequest) -> Make:
    """``make(capacity, per_s, name=...)``: a fresh limiter of the implementation and its clock."""

    def build(
        capacity: float, per_s: float, name: str = "contract"
    ) -> tuple[RateLimiter, FakeClock]:
        clock = FakeClock()
        policy = RatePolicy(capacity, per_s)
        return open_rate_limiter(request.param, policy, name=name, clock=clock), clock

    return build


def test_it_is_a_rate_limiter(make: Make) -> None:
    limiter, _ = make(3, 1, name="owner")
    assert isinstance(limiter, RateLimiter)
    assert limiter.name == "owner" and limiter.policy == RatePolicy(3, 1)


def test_the_budget_is_exact(make: Make) -> None:
    limiter, _ = make(5, 1)
    decisions = [limiter.check("ip-1") for _ in range(8)]
    assert [d.allowed for d in decisions] == [True] * 5 + [False] * 3
    assert [d.remaining for d in decisions[:5]] == [4, 3, 2, 1, 0]
    assert decisions[-1].limit == 5 and decisions[-1].retry_after_s == 1


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
    limiter, clock = make(4, 2)
    for _ in range(4):
        assert limiter.check("k").allowed
    assert not limiter.check("k").allowed
    clock.now += 0.5  # one token at 2 per second
    assert limiter.check("k").allowed and not limiter.check("k").allowed
    clock.now += 3600
    assert limiter.peek("k").remaining == 4
    assert [limiter.check("k").allowed for _ in range(5)] == [True] * 4 + [False]


def test_peek_never_charges(make: Make) -> None:
    limiter, _ = make(2, 1)
    for _ in range(10):
        assert limiter.peek("k").allowed and limiter.peek("k").remaining == 2
    limiter.check("k")
    limiter.check("k")
    refused = limiter.peek("k")
    assert not refused.allowed and refused.remaining == 0
    assert refused.retry_after_s == 1


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
    assert not refused.allowed and refused.remaining == 2 and refused.retry_after_s == 1


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
    assert not refused.allowed and refused.retry_after_s == 1
    assert owner.peek("o").remaining == 4


def test_an_unknown_url_names_the_accepted_ones() -> None:
    with pytest.raises(ValueError, match="memory:"):
        open_rate_limiter("mongodb://x", RatePolicy(1, 1))
