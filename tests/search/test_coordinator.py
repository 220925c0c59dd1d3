"""Fan-out: hedged requests to replicas, per-shard deadlines, partial results, fault switches."""

from __future__ import annotations

import pytest

from lookup.search import SearchService
from tests.search.corpus import BASE_TIME

NOW = BASE_TIME + 40 * 86400
QUERY = "return value"


def _urls(body: dict) -> list[str]:
    return [r["url"] for r in body["results"]]


def test_dead_primary_is_hedged_to_its_replica(service_4: SearchService) -> None:
    healthy = service_4.search(QUERY, now=NOW)
    service_4.coordinator.set_fault(1, 0, "dead")
    body = service_4.search(QUERY, now=NOW, trace=True, deadline_ms=5000)
    assert body["shardsAnswered"] == body["shardsQueried"] == 4
    assert _urls(body) == _urls(healthy)
    shard1 = body["fanout"]["shards"][1]
    assert shard1["hedged"] and shard1["replica"] == 1 and not shard1["missedDeadline"]
    status = service_4.coordinator.status()["shards"][1]
    assert status["hedgesFired"] >= 1 and status["hedgeWins"] >= 1
    assert status["replicas"][0]["dropped"] >= 1


def test_slow_primary_is_overtaken_by_the_hedge(service_4: SearchService) -> None:
    healthy = service_4.search(QUERY, now=NOW)
    service_4.coordinator.set_fault(2, 0, "slow", delay_ms=3000)
    body = service_4.search(QUERY, now=NOW, trace=True, deadline_ms=2500)
    assert body["shardsAnswered"] == 4
    assert _urls(body) == _urls(healthy)
    assert body["fanout"]["shards"][2]["replica"] == 1
    assert service_4.coordinator.status()["shards"][2]["replicas"][0]["slowed"] == 1


def test_shard_that_misses_the_deadline_is_left_out(service_4: SearchService) -> None:
    healthy = service_4.search(QUERY, now=NOW, limit=100, trace=True)
    service_4.coordinator.set_fault(3, None, "dead")  # both replicas
    body = service_4.search(QUERY, now=NOW, limit=50, trace=True, deadline_ms=50)
    assert body["shardsQueried"] == 4 and body["shardsAnswered"] == 3
    trace = body["fanout"]["shards"][3]
    assert trace["missedDeadline"] and trace["latencyMs"] is None
    # the partial answer is the healthy ranking without shard 3's documents
    lost = {r["url"] for r in healthy["results"][:50]} - {r["url"] for r in body["results"]}
    snap = service_4.snapshot()
    from lookup.search.indexer import shard_of
    from tests.search.corpus import url_hash

    assert all(shard_of(url_hash(u), 4) == 3 for u in lost)
    assert _urls(body) == [u for u in _urls(healthy) if shard_of(url_hash(u), 4) != 3][:50]
    # the total is extrapolated from the shards that answered, not silently shrunk
    answered = sum(s["matched"] for s in body["fanout"]["shards"] if s["matched"] is not None)
    assert answered < healthy["estimatedTotal"]
    assert body["estimatedTotal"] == round(
        answered
        * snap.live_docs
        / sum(sum(int(v.live.sum()) for v in snap.shards[s].segments) for s in (0, 1, 2))
    )
    assert service_4.coordinator.status()["shards"][3]["deadlineMisses"] == 1
    # without hedging a dead primary is also a miss; healing brings the shard back
    service_4.coordinator.clear_faults()
    service_4.coordinator.set_fault(0, 0, "dead")
    body = service_4.search(QUERY, now=NOW, hedge=False, deadline_ms=50)
    assert body["shardsAnswered"] == 3
    service_4.coordinator.clear_faults()
    assert service_4.search(QUERY, now=NOW)["shardsAnswered"] == 4


def test_hedge_delay_learns_request_times_not_the_hedge_wait(service_4: SearchService) -> None:
    """A hedged answer's time since the query began includes the hedge wait; the window
    behind the hedge delay keeps the request's own time, or the delay would feed on
    itself and creep up until hedging stopped helping."""
    co = service_4.coordinator
    co.reset_stats()
    co.set_fault(0, 0, "slow", delay_ms=300)
    group = co.ensure_shards(4)[0]
    wait = group.hedge_delay_ms()
    body = service_4.search(QUERY, now=NOW, trace=True, deadline_ms=2000)
    shard0 = body["fanout"]["shards"][0]
    assert shard0["hedged"] and shard0["replica"] == 1
    assert len(group.latencies) == 1
    assert shard0["latencyMs"] - group.latencies[-1] >= wait - 0.01
    assert group.latencies[-1] < 300.0


def test_hedge_delay_follows_the_shards_p95(service_4: SearchService) -> None:
    group = service_4.coordinator.ensure_shards(4)[0]
    assert group.hedge_delay_ms() == pytest.approx(10.0)  # default before enough samples
    for x in [1.0] * 90 + [50.0] * 10:
        group.record(x)
    assert group.hedge_delay_ms() == pytest.approx(50.0)  # nearest-rank p95 of the window
    group.forget()
    for x in [2.0] * 99 + [400.0]:
        group.record(x)
    assert group.hedge_delay_ms() == pytest.approx(2.0)
    for x in [0.1] * 256:  # the whole window
        group.record(x)
    assert group.hedge_delay_ms() == pytest.approx(1.0)  # never below the floor


def test_fault_switch_validates(service_4: SearchService) -> None:
    co = service_4.coordinator
    with pytest.raises(ValueError):
        co.set_fault(0, 0, "melting")
    with pytest.raises(ValueError):
        co.set_fault(0, 0, "slow", probability=2.0)
    with pytest.raises(IndexError):
        co.set_fault(99, 0, "dead")
    co.set_fault(0, 1, "slow", delay_ms=5, probability=0.5)
    assert co.status()["shards"][0]["replicas"][1]["fault"] == {
        "mode": "slow",
        "delayMs": 5.0,
        "probability": 0.5,
    }
    co.reset_stats()
    assert co.status()["shards"][0]["queries"] == 0
