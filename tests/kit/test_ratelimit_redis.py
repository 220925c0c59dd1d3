"""The Redis limiters: the same decisions as in-process, exact across processes, and a
declared policy when Redis is down.

Redis times the scripts itself, so every assertion here is on counts under windows of a
million seconds (nothing refills or expires while a test runs), never on durations.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
import textwrap

import pytest

from lookup.kit.engines.redisserver import RedisServer
from lookup.kit.ratelimit import ALGORITHM_NAMES, RatePolicy, open_rate_limiter

SLOW = 1e-6  # refill per second per unit of capacity: a window of 10**6 s


def url_of(server: RedisServer, algorithm: str, **params: str) -> str:
    query = "&".join([f"algorithm={algorithm}", *(f"{k}={v}" for k, v in params.items())])
    return f"{server.url}?{query}"


def memory_url(algorithm: str) -> str:
    return "memory:" if algorithm == "token_bucket" else f"memory:?algorithm={algorithm}"


@pytest.mark.parametrize("algorithm", ALGORITHM_NAMES)
@pytest.mark.parametrize("seed", range(6))
def test_redis_decides_as_the_in_process_limiter(
    redis_server: RedisServer, algorithm: str, seed: int
) -> None:
    rng = random.Random(seed)
    cap = rng.randint(1, 8)
    policy = RatePolicy(cap, cap * SLOW)
    shared = open_rate_limiter(url_of(redis_server, algorithm), policy, name=f"eq{seed}")
    shared.reset()
    local = open_rate_limiter(memory_url(algorithm), policy, clock=lambda: 1000.0)
    for _ in range(60):
        op = rng.choice(["check", "check", "check", "peek", "charge", "refund"])
        identity, cost = rng.choice(["a", "b", ("ip", 1)]), rng.randint(1, 3)
        if op in ("charge", "refund"):
            getattr(shared, op)(identity, cost)
            getattr(local, op)(identity, cost)
            continue
        got, want = getattr(shared, op)(identity, cost), getattr(local, op)(identity, cost)
        assert (got.allowed, got.remaining, got.limit) == (want.allowed, want.remaining, want.limit)
    shared.reset()


#: The workers wait for Redis as long as it takes: on a loaded machine a script may take
#: longer than the 0.25 s after which a limiter declares Redis down and decides locally,
#: and this test is about what Redis decides (the outage policy has its own test).
PATIENT = {**os.environ, "LOOKUP_RATELIMIT_REDIS_TIMEOUT": "30"}

_WORKER = textwrap.dedent(
    """
    import sys
    from lookup.kit.ratelimit import RatePolicy, open_rate_limiter
    url, limit, tries = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    limiter = open_rate_limiter(url, RatePolicy(limit, limit * 1e-6), name="drill")
    print(sum(limiter.check("shared-key").allowed for _ in range(tries)))
    """
)


@pytest.mark.parametrize("algorithm", ALGORITHM_NAMES)
def test_four_processes_sharing_one_limit_admit_exactly_the_limit(
    redis_server: RedisServer, algorithm: str
) -> None:
    limit, tries, processes = 150, 100, 4
    url = url_of(redis_server, algorithm)
    open_rate_limiter(url, RatePolicy(limit, limit * SLOW), name="drill").reset()
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _WORKER, url, str(limit), str(tries)],
            stdout=subprocess.PIPE,
            text=True,
            env=PATIENT,
        )
        for _ in range(processes)
    ]
    admitted = [int(p.communicate(timeout=120)[0]) for p in procs]
    assert all(p.returncode == 0 for p in procs)
    assert sum(admitted) == limit  # 400 tries from 4 processes, exactly 150 through
    assert all(0 <= a <= tries for a in admitted)


@pytest.mark.parametrize("algorithm", ["token_bucket", "sliding_log"])
def test_redis_down_applies_the_declared_policy_and_recovers(
    own_redis: RedisServer, algorithm: str
) -> None:
    policy = RatePolicy(3, 3 * SLOW)
    limiters = {
        how: open_rate_limiter(url_of(own_redis, algorithm, on_unavailable=how), policy, name=how)
        for how in ("closed", "open", "local")
    }
    for limiter in limiters.values():
        assert limiter.check("k").allowed  # Redis counts one for each
    own_redis.stop()
    closed = [limiters["closed"].check("k") for _ in range(10)]
    assert not any(d.allowed for d in closed) and all(d.retry_after_s >= 1 for d in closed)
    assert all(limiters["open"].check("k").allowed for _ in range(10))
    # local: a per-process limiter of the same algorithm bounds the damage to one limit
    assert sum(limiters["local"].check("k").allowed for _ in range(10)) == 3
    assert limiters["local"].peek("k").remaining == 0
    for limiter in limiters.values():
        assert limiter.stats()["unavailable"] >= 10
    own_redis.start()  # the same port, an empty server (no persistence)
    for how, limiter in limiters.items():
        before = limiter.stats()["unavailable"]
        assert [limiter.check("k").allowed for _ in range(4)] == [True] * 3 + [False], how
        assert limiter.stats()["unavailable"] == before  # decided by Redis again


def test_an_unknown_outage_policy_is_refused(redis_server: RedisServer) -> None:
    with pytest.raises(ValueError, match="on_unavailable"):
        open_rate_limiter(url_of(redis_server, "token_bucket", on_unavailable="maybe"),
                          RatePolicy(1, 1))  # fmt: skip
    with pytest.raises(ValueError, match="on_unavailable"):
        open_rate_limiter("memory:?on_unavailable=open", RatePolicy(1, 1))


def test_reset_forgets_only_its_own_limiter(redis_server: RedisServer) -> None:
    policy = RatePolicy(1, SLOW)
    glob = open_rate_limiter(url_of(redis_server, "fixed_window"), policy, name="a*")
    other = open_rate_limiter(url_of(redis_server, "fixed_window"), policy, name="abc")
    other.reset()
    assert glob.check("k").allowed and other.check("k").allowed
    glob.reset()  # its name is a glob pattern; the keys of "abc" must survive it
    assert glob.check("k").allowed and not other.check("k").allowed
    other.reset()


@pytest.mark.parametrize("algorithm", ALGORITHM_NAMES)
def test_the_time_comes_from_redis_not_from_the_caller(
    redis_server: RedisServer, algorithm: str
) -> None:
    fake = {"now": 0.0}

    def clock() -> float:  # a caller clock leaping a year per call: Redis must not care
        fake["now"] += 365 * 86400.0
        return fake["now"]

    url = url_of(redis_server, algorithm)
    limiter = open_rate_limiter(url, RatePolicy(2, 2 * SLOW), name="time", clock=clock)
    limiter.reset()
    assert [limiter.check("k").allowed for _ in range(3)] == [True, True, False]
    assert fake["now"] == 0.0  # never even asked
    limiter.reset()
