"""The circuit breaker's three states, driven by an injected clock."""

from __future__ import annotations

import pytest

from lookup.kit.breaker import CLOSED, HALF_OPEN, OPEN, CircuitBreaker, CircuitOpen


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _failing() -> None:
    raise ConnectionError("down")


def test_consecutive_failures_open_it_and_calls_are_refused_without_trying() -> None:
    clock = Clock()
    breaker = CircuitBreaker("dep", failure_threshold=3, reset_timeout_s=1.0, clock=clock)
    for _ in range(2):
        with pytest.raises(ConnectionError):
            breaker.call(_failing)
    assert breaker.state == CLOSED
    assert breaker.call(lambda: "ok") == "ok"  # a success resets the count
    for _ in range(3):
        with pytest.raises(ConnectionError):
            breaker.call(_failing)
    assert breaker.state == OPEN and breaker.trips == 1
    tried: list[int] = []
    with pytest.raises(CircuitOpen):
        breaker.call(lambda: tried.append(1))
    assert tried == [] and breaker.stats()["shortCircuited"] == 1


def test_after_the_pause_one_probe_goes_out_and_its_outcome_decides() -> None:
    clock = Clock()
    breaker = CircuitBreaker("dep", failure_threshold=1, reset_timeout_s=2.0, clock=clock)
    breaker.record_failure()
    clock.now += 1.9
    assert not breaker.allow()
    clock.now += 0.2
    assert breaker.allow() and breaker.state == HALF_OPEN
    assert not breaker.allow()  # one probe at a time
    breaker.record_failure()  # the probe failed: another full pause
    assert breaker.state == OPEN
    clock.now += 1.0
    assert not breaker.allow()
    clock.now += 1.0
    assert breaker.call(lambda: 42) == 42
    assert breaker.state == CLOSED and breaker.recoveries == 1 and breaker.probes == 2


def test_a_probe_that_never_reports_is_replaced() -> None:
    clock = Clock()
    breaker = CircuitBreaker("dep", failure_threshold=1, reset_timeout_s=1.0, clock=clock)
    breaker.record_failure()
    clock.now += 1.0
    assert breaker.allow()  # the probe's caller vanished without a word
    clock.now += 1.0
    assert breaker.allow() and breaker.probes == 2


def test_news_that_the_dependency_is_back_closes_it() -> None:
    breaker = CircuitBreaker("dep", failure_threshold=1, reset_timeout_s=60.0, clock=Clock())
    breaker.record_failure()
    assert not breaker.allow()
    breaker.record_success()
    assert breaker.allow() and breaker.state == CLOSED


def test_it_refuses_nonsense_settings() -> None:
    with pytest.raises(ValueError):
        CircuitBreaker("dep", failure_threshold=0)
    with pytest.raises(ValueError):
        CircuitBreaker("dep", reset_timeout_s=0)
