"""The rate-limiter experiments: the seed's claims, measured on the real limiters.

Figures that follow from the definitions are asserted exactly (the boundary burst, the
limit/N split); measured ones against the documented bounds.
"""

from __future__ import annotations

import pytest

from lookup.blocks.limits import experiments as ex
from lookup.blocks.limits.traffic import PATTERNS, ManualClock, make_stream, replay
from lookup.kit.ratelimit import ALGORITHM_NAMES, RatePolicy, open_rate_limiter
from lookup.kit.redisserver import RedisServer


def _by(rows: list[dict], key: str) -> dict:
    return {r[key]: r for r in rows}


def test_the_boundary_burst_doubles_the_fixed_window_and_the_counter_removes_it() -> None:
    rows = _by(ex.boundary_burst(100, 60.0), "algorithm")
    assert rows["fixed_window"]["admitted in 2 s"] == 198  # 99 at 0:59 + 99 at 1:00
    assert rows["fixed_window"]["× limit"] == 1.98
    assert rows["sliding_counter"]["admitted in 2 s"] == 100  # prev·(1 − 0) + 1 = the limit
    assert rows["sliding_log"]["admitted in 2 s"] == 100
    for bucket in ("token_bucket", "leaky_bucket"):  # 99 + what 1 s refills/drains (1.67)
        assert rows[bucket]["admitted in 2 s"] == 101


def test_random_streams_stay_within_each_documented_bound() -> None:
    rows = _by(ex.error_bounds(streams=8, limit=10), "algorithm")
    assert set(rows) == set(ALGORITHM_NAMES)
    assert all(r["within bound"] for r in rows.values())
    assert rows["sliding_log"]["worst span ÷ limit"] == 1.0
    assert rows["sliding_log"]["decisions unlike the log"] == "0.00%"
    assert rows["fixed_window"]["worst span ÷ limit"] > 1.0  # the streams do hit boundaries


def test_max_in_span_counts_a_half_open_window() -> None:
    assert ex.max_in_span([0.0, 1.0, 2.0, 3.0], 2.0) == 2  # (t − 2, t]
    assert ex.max_in_span([0.0, 0.0, 5.0], 1.0, [2.0, 3.0, 1.0]) == 5.0
    assert ex.excess_over_bucket([(0.0, 1.0)] * 5, 3, 1.0) == 2.0
    assert ex.excess_over_bucket([(float(t), 1.0) for t in range(10)], 1, 1.0) == 0.0


def test_in_process_memory_is_o1_for_counters_and_grows_with_requests_for_logs() -> None:
    one = _by(ex.memory_in_process(2_000, 1), "algorithm")
    five = _by(ex.memory_in_process(2_000, 5), "algorithm")
    for name in ("token_bucket", "fixed_window", "sliding_counter"):
        assert 0 < one[name]["bytes per identity"] < 400
        assert abs(five[name]["bytes per identity"] - one[name]["bytes per identity"]) < 40
    for name in ("sliding_log", "leaky_bucket"):
        assert five[name]["bytes per identity"] > one[name]["bytes per identity"] + 100


def test_redis_memory_per_identity(redis_server: RedisServer) -> None:
    rows = _by(ex.memory_on_redis(redis_server.url, 2_000, 2), "algorithm")
    for name, row in rows.items():
        assert 20 < row["bytes per identity (used_memory)"] < 2_000, name
        assert row["MEMORY USAGE of one"] > 0, name
    assert (rows["sliding_log"]["MEMORY USAGE of one"]
            > rows["fixed_window"]["MEMORY USAGE of one"])  # fmt: skip


@pytest.mark.parametrize("algorithm", ["token_bucket", "fixed_window"])
def test_limit_over_n_refuses_within_the_quota_and_overshoots_when_n_grows(
    algorithm: str,
) -> None:
    rows = ex.split_quota(100, (0.8, 0.1, 0.05, 0.05), offered=2.0, algorithm=algorithm)
    exact, divided, grown, hybrid = rows
    assert exact["admitted"] == 100 and exact["refused within the quota"] == 0
    # the busy instance gets 80% of the traffic but 25% of the quota
    assert divided["per instance"][0] == 25 and divided["refused within the quota"] > 20
    assert divided["admitted beyond the quota"] == 0
    assert grown["admitted beyond the quota"] > 50  # 8 × 25 = 2× the limit available
    assert hybrid["admitted"] == 100  # prepaid from the shared limit: exact here


def test_limit_over_n_against_one_shared_limit_on_redis(redis_server: RedisServer) -> None:
    rows = ex.split_quota(100, shared_url=redis_server.url)
    assert rows[0]["enforcement"].startswith("one shared limit (Redis")
    assert rows[0]["admitted"] == 100 and rows[3]["admitted"] == 100
    assert rows[1]["admitted"] < 100


def test_the_hybrid_stays_within_its_bounds() -> None:
    rows = ex.hybrid_bound(limit=50, windows=10, local_budgets=(0.05, 0.2))
    for row in rows[:-1]:
        assert row["over the shared curve (worst span)"] <= row["bound N × batch"]
        assert row["unspent elsewhere at a refusal (worst)"] <= row["bound (N − 1) × batch"]
    assert rows[-1]["local budget"] == 0.0  # the exact shared bucket, for comparison


@pytest.mark.parametrize("pattern", list(PATTERNS))
def test_every_pattern_replays_at_a_limiter(pattern: str) -> None:
    stream = make_stream(pattern, 10, 60.0)
    assert stream and all(b.t >= a.t for a, b in zip(stream, stream[1:], strict=False))
    clock = ManualClock()
    limiter = open_rate_limiter(
        "memory:?algorithm=sliding_log", RatePolicy.per(10, 60), clock=clock
    )
    got = replay(limiter, stream, clock)
    assert len(got) == len(stream)
    assert 0 < sum(d.decision.allowed for d in got) < len(stream)  # each pattern overloads
    with pytest.raises(ValueError, match="pattern"):
        make_stream("tsunami", 10, 60.0)
