"""Request streams for the rate limiters, and replaying one at a real limiter.

A stream is a list of :class:`Request` — a time in seconds from the start, an identity,
a cost — built for a limit of ``limit`` per ``window_s`` by one of :data:`PATTERNS`:

- ``steady`` — evenly spaced, 1.5× the limit on average;
- ``burst`` — quiet, then 1.5× the limit within a twentieth of a window, once a window;
- ``boundary attack`` — the seed's: ``limit − 1`` requests at 0:59 and ``limit − 1`` at
  1:00 of a one-minute window (scaled to the window);
- ``many identities`` — 1.5× the limit per identity on average, over 200 identities with
  Zipf-skewed popularity (the heaviest far over its limit, most far under).

:func:`replay` fires a stream at a limiter: with a settable clock (the in-process
limiters' injected clock) it sets the time before each request, so minutes replay in
milliseconds; without one it waits for each request's time (a Redis limiter takes the
time from Redis, so the stream plays in real time — use a short window there).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass

from lookup.kit.ratelimit import RateDecision, RateLimiter

__all__ = ["PATTERNS", "Decided", "ManualClock", "Request", "make_stream", "replay"]


@dataclass(frozen=True)
class Request:
    """One request of a stream: when (s from the start), whose, how much."""

    t: float
    identity: Hashable = "client"
    cost: float = 1.0


@dataclass(frozen=True)
class Decided:
    """A request and the limiter's decision on it."""

    request: Request
    decision: RateDecision


class ManualClock:
    """A clock the caller sets: what the in-process limiters are given to replay a stream."""

    def __init__(self, now: float = 0.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def _steady(limit: int, window_s: float, windows: int) -> list[Request]:
    n = int(1.5 * limit * windows)
    step = window_s * windows / n
    return [Request(i * step) for i in range(n)]


def _burst(limit: int, window_s: float, windows: int) -> list[Request]:
    out: list[Request] = []
    per = int(1.5 * limit)
    for k in range(windows):
        start = (k + 0.3) * window_s
        out += [Request(start + i * window_s / 20 / per) for i in range(per)]
    return out


def _boundary(limit: int, window_s: float, windows: int) -> list[Request]:
    before = window_s * 59 / 60  # 0:59 of a one-minute window
    n = max(1, limit - 1)
    return [Request(before) for _ in range(n)] + [Request(window_s) for _ in range(n)]


def _many(limit: int, window_s: float, windows: int, identities: int = 200) -> list[Request]:
    rng = random.Random(7)
    weights = [1 / (rank + 1) for rank in range(identities)]
    n = int(1.5 * limit * windows * identities / 10)  # the heavy head far over its limit
    who = rng.choices(range(identities), weights=weights, k=n)
    times = sorted(rng.uniform(0, window_s * windows) for _ in range(n))
    return [Request(t, f"user-{i}") for t, i in zip(times, who, strict=True)]


#: Every traffic pattern by the name the dashboard and the notebook show.
PATTERNS: dict[str, Callable[[int, float, int], list[Request]]] = {
    "steady": _steady,
    "burst": _burst,
    "boundary attack": _boundary,
    "many identities": _many,
}


def make_stream(pattern: str, limit: int, window_s: float, windows: int = 3) -> list[Request]:
    """The stream of ``pattern`` for ``limit`` per ``window_s`` over ``windows`` windows."""
    if pattern not in PATTERNS:
        raise ValueError(f"unknown traffic pattern {pattern!r}; choose from {list(PATTERNS)}")
    if limit < 1 or window_s <= 0 or windows < 1:
        raise ValueError("a stream needs limit >= 1, a positive window and windows >= 1")
    return PATTERNS[pattern](limit, window_s, windows)


def replay(
    limiter: RateLimiter,
    stream: list[Request],
    clock: ManualClock | None = None,
    *,
    align_s: float | None = None,
) -> list[Decided]:
    """Fire ``stream`` at ``limiter``: on ``clock``'s time if given, else in real time.

    In real time, ``align_s`` starts the stream on a multiple of that many seconds of the
    wall clock (the clock a Redis on this machine aligns its windows to), so a boundary
    attack lands on a boundary.
    """
    out: list[Decided] = []
    if clock is None and align_s:
        time.sleep(align_s - time.time() % align_s)
    started = time.monotonic()
    for request in stream:
        if clock is not None:
            clock.now = request.t
        else:
            wait = started + request.t - time.monotonic()
            if wait > 0:
                time.sleep(wait)
        out.append(Decided(request, limiter.check(request.identity, request.cost)))
    return out
