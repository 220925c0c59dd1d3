"""Rate-limiter drill: the Redis every API instance counts in is killed mid-stream.

Several :class:`~lookup.kit.ratelimit.redis_store.RedisRateLimiter` instances (one per API
process) share one limit in a throw-away ``redis-server``. An abuser's requests are spread
over the instances; Redis is killed with ``SIGKILL``; the abuser and an ordinary client go
on. What each instance then admits is its declared ``on_unavailable`` policy at work:
``local`` (the project's default: an in-process bucket holding the instance's share of
the limit), ``open`` or ``closed``.
"""

from __future__ import annotations

import signal

from lookup.kit.ratelimit.bucket import RatePolicy
from lookup.kit.ratelimit.redis_store import ON_UNAVAILABLE, RedisRateLimiter
from lookup.study.drills_common import need, outcome
from lookup.study.measure import Drill, DrillOutcome

__all__ = ["LIMITS_DRILLS"]

LIMITER_CHOICES = {
    "open": "Every request gets through while Redis is down: the limit is gone",
    "closed": "Every request is refused while Redis is down, ordinary clients' too",
    "local": "Each instance falls back to its own share of the limit, so the fleet admits "
    "about one limit's worth and ordinary clients still get in",
    "errors": "The API answers errors: the limiter cannot decide without its store",
}


def ratelimit_store_down(on_unavailable: str = "local", instances: int = 3, limit: int = 60,
                         attempts: int = 300) -> DrillOutcome:  # fmt: skip
    """``attempts`` abusive requests before and after Redis is killed, spread over
    ``instances`` limiters that share ``limit`` per minute per client."""
    need("redis", drill="ratelimit_store_down")
    from lookup.kit.engines.redisserver import RedisServer

    instances, limit, attempts = int(instances), int(limit), int(attempts)
    if on_unavailable not in ON_UNAVAILABLE:
        raise ValueError(f"on_unavailable must be one of {', '.join(ON_UNAVAILABLE)}")
    if instances < 1 or limit < 1 or attempts < limit:
        raise ValueError("need instances >= 1, limit >= 1 and attempts >= limit")
    policy = RatePolicy.per(limit, 60.0)
    errors = 0
    with RedisServer() as server:
        limiters = [RedisRateLimiter(server.url, policy, name="drill", local_share=1 / instances,
                                     on_unavailable=on_unavailable)  # type: ignore[arg-type]
                    for _ in range(instances)]  # fmt: skip
        try:

            def send(who: str, n: int) -> int:
                nonlocal errors
                admitted = 0
                for i in range(n):
                    try:
                        admitted += limiters[i % instances].check(who).allowed
                    except Exception:  # noqa: BLE001 - an error reaching the caller is counted
                        errors += 1
                return admitted

            healthy = send("abuser", attempts)
            regular_healthy = send("regular", 3)
            assert server.proc is not None
            server.proc.send_signal(signal.SIGKILL)
            server.proc.wait(10)
            server.proc = None
            down = send("abuser", attempts)
            regular_down = send("regular-2", 3)
            outages = sum(lim.unavailable for lim in limiters)
        finally:
            for lim in limiters:
                lim.close()
    if errors > 0:
        choice = "errors"
    elif down >= 0.9 * attempts:
        choice = "open"
    elif down == 0 and regular_down == 0:
        choice = "closed"
    else:
        choice = "local"
    figures = {"instances": instances, "limit per minute": limit, "attempts each phase": attempts,
               "abuser admitted with Redis up": healthy,
               "abuser admitted with Redis down": down,
               "ordinary client admitted with Redis up (of 3)": regular_healthy,
               "ordinary client admitted with Redis down (of 3)": regular_down,
               "calls that found Redis unavailable": outages,
               "errors reaching the caller": errors}  # fmt: skip
    summary = (
        f"on_unavailable={on_unavailable}: with Redis up the abuser got {healthy} of "
        f"{attempts} through (limit {limit}); with Redis killed, {down} of {attempts}, "
        f"and an ordinary client {regular_down} of 3."
    )
    chain = (
        f"{instances} limiter instances (token bucket, {limit}/min per client) share one "
        "throw-away redis-server through an atomic script",
        f"an abuser sends {attempts} requests round-robin over the instances: {healthy} admitted",
        f"kill -9 of redis-server; the abuser sends {attempts} more: {down} admitted "
        f"({outages:,} calls found Redis away); an ordinary client's 3: {regular_down}",
        f"policy when Redis is away: {on_unavailable} (local = each instance's own bucket "
        f"with 1/{instances} of the limit)",
        "choice: an error → errors; ≥ 90% admitted → open; nothing admitted, ordinary "
        "client included → closed; otherwise → local",
    )
    return outcome(LIMITER_CHOICES, choice, figures, summary, chain)


LIMITS_DRILLS: dict[str, Drill] = {
    "ratelimit_store_down": Drill(
        "ratelimit_store_down",
        "The rate limiter's Redis goes down",
        LIMITER_CHOICES,
        ratelimit_store_down,
        {"on_unavailable": "local", "instances": 3, "limit": 60, "attempts": 300},
        requires=("redis",),
    ),
}
