"""A circuit breaker: stop calling a dependency that keeps failing, probe it now and then.

Closed (normal): calls go through; ``failure_threshold`` consecutive failures open the
breaker. Open: calls are refused at once (:class:`CircuitOpen`) for ``reset_timeout_s``,
so a dead server costs a refusal per request instead of a connect timeout per request.
Half-open: after that pause one caller is let through as a probe; its success closes the
breaker, its failure opens it for another pause. Anyone who learns the dependency is back
(a subscriber that reconnected) may call :meth:`CircuitBreaker.record_success` to close it
at once.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["CLOSED", "HALF_OPEN", "OPEN", "CircuitBreaker", "CircuitOpen"]

T = TypeVar("T")

CLOSED, OPEN, HALF_OPEN = "closed", "open", "half_open"


class CircuitOpen(Exception):
    """Refused without trying: the breaker is open (or a probe is already out)."""


class CircuitBreaker:
    """A thread-safe three-state breaker (see the module docstring)."""

    def __init__(
        self,
        name: str,
        *,
        failure_threshold: int = 3,
        reset_timeout_s: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if failure_threshold < 1 or reset_timeout_s <= 0:
            raise ValueError("a breaker needs failure_threshold >= 1 and a positive reset timeout")
        self.name = name
        self.failure_threshold = failure_threshold
        self.reset_timeout_s = reset_timeout_s
        self._clock = clock
        self._lock = threading.Lock()
        self._state = CLOSED
        self._failures = 0  # consecutive, while closed
        self._opened_at = 0.0
        self._probe_at = 0.0
        self.trips = 0
        self.short_circuited = 0
        self.probes = 0
        self.recoveries = 0

    @property
    def state(self) -> str:
        """``closed``, ``open`` or ``half_open`` (an open breaker past its pause reads open
        until a caller takes the probe)."""
        return self._state

    def allow(self) -> bool:
        """Whether a call may go out now; an allowed caller must report its outcome."""
        with self._lock:
            if self._state == CLOSED:
                return True
            now = self._clock()
            if self._state == OPEN and now - self._opened_at >= self.reset_timeout_s:
                self._state, self._probe_at = HALF_OPEN, now
                self.probes += 1
                return True
            if self._state == HALF_OPEN and now - self._probe_at >= self.reset_timeout_s:
                self._probe_at = now  # the last probe never reported: send another
                self.probes += 1
                return True
            self.short_circuited += 1
            return False

    def record_success(self) -> None:
        """A call succeeded (or the dependency is known to be back): close."""
        with self._lock:
            if self._state != CLOSED:
                self.recoveries += 1
            self._state, self._failures = CLOSED, 0

    def record_failure(self) -> None:
        """A call failed: count it while closed, reopen when half-open."""
        with self._lock:
            if self._state == CLOSED:
                self._failures += 1
                if self._failures < self.failure_threshold:
                    return
                self.trips += 1
            self._state, self._opened_at, self._failures = OPEN, self._clock(), 0

    def call(
        self, fn: Callable[[], T], failures: tuple[type[BaseException], ...] = (Exception,)
    ) -> T:
        """``fn()`` through the breaker: :class:`CircuitOpen` when refused; an exception in
        ``failures`` counts against the dependency and is raised again."""
        if not self.allow():
            raise CircuitOpen(f"{self.name}: circuit open")
        try:
            result = fn()
        except failures:
            self.record_failure()
            raise
        self.record_success()
        return result

    def stats(self) -> dict[str, Any]:
        """State and counters, for metrics."""
        return {
            "state": self._state,
            "trips": self.trips,
            "shortCircuited": self.short_circuited,
            "probes": self.probes,
            "recoveries": self.recoveries,
        }
