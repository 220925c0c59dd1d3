"""Fan-out: hedged requests to replicas, per-shard deadlines, partial results, fault switches."""

from __future__ import annotations

import threading
import time

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


def test_the_caller_answers_the_first_healthy_shard_itself(service_4: SearchService) -> None:
    body = service_4.search(QUERY, now=NOW, trace=True)
    shards = body["fanout"]["shards"]
    assert [s["inline"] for s in shards] == [True, False, False, False]
    assert shards[0]["replica"] == 0 and not shards[0]["hedged"]
    # a shard whose primary has a fault switch set always goes through its pool
    service_4.coordinator.set_fault(0, 0, "slow", delay_ms=1)
    shards = service_4.search(QUERY, now=NOW, trace=True)["fanout"]["shards"]
    assert [s["inline"] for s in shards] == [False, True, False, False]
    service_4.coordinator.clear_faults()
    service_4.coordinator.inline = False
    shards = service_4.search(QUERY, now=NOW, trace=True)["fanout"]["shards"]
    assert not any(s["inline"] for s in shards)
    assert service_4.search(QUERY, now=NOW)["results"] == body["results"]


def test_an_inline_shard_past_the_deadline_is_left_out(service_1: SearchService) -> None:
    body = service_1.search(QUERY, now=NOW, trace=True, deadline_ms=1e-6)
    assert body["shardsAnswered"] == 0 and body["results"] == []
    shard = body["fanout"]["shards"][0]
    assert shard["inline"] and shard["missedDeadline"]


def test_answers_ready_by_the_deadline_count_while_the_caller_was_busy(
    service_4: SearchService, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Shard 0 runs on the caller's thread and takes longer than the deadline; the pooled
    shards answered in time meanwhile and must not be thrown away with it."""
    shard0 = service_4.snapshot().shards[0]
    original = shard0.search

    def slow(plan):  # type: ignore[no-untyped-def]
        time.sleep(1.5)
        return original(plan)

    monkeypatch.setattr(shard0, "search", slow)
    body = service_4.search(QUERY, now=NOW, trace=True, deadline_ms=1000, hedge=False)
    shards = body["fanout"]["shards"]
    assert shards[0]["inline"] and shards[0]["missedDeadline"]
    assert body["shardsAnswered"] == 3
    assert all(not s["missedDeadline"] for s in shards[1:])


def test_an_inline_failure_is_hedged_to_the_replica_at_once(
    service_4: SearchService, monkeypatch: pytest.MonkeyPatch
) -> None:
    healthy = service_4.search(QUERY, now=NOW)
    shard0 = service_4.snapshot().shards[0]
    original = shard0.search
    caller = threading.current_thread()

    def broken_here(plan):  # type: ignore[no-untyped-def]
        if threading.current_thread() is caller:
            raise RuntimeError("the primary crashed")
        return original(plan)

    monkeypatch.setattr(shard0, "search", broken_here)
    body = service_4.search(QUERY, now=NOW, trace=True, deadline_ms=5000)
    shard = body["fanout"]["shards"][0]
    assert shard["inline"] is False and shard["hedged"] and shard["replica"] == 1
    assert body["shardsAnswered"] == 4
    assert _urls(body) == _urls(healthy)


def test_a_primary_that_keeps_losing_gets_its_hedge_with_the_request(
    service_4: SearchService,
) -> None:
    co = service_4.coordinator
    group = co.ensure_shards(4)[0]
    assert not group.primary_lagging()
    co.set_fault(0, 0, "slow", delay_ms=3000)
    group.races.extend([False] * 9)
    assert not group.primary_lagging()  # too few races to judge
    group.races.append(False)
    assert group.primary_lagging() and co.status()["shards"][0]["primaryLagging"]
    # the hedge leaves with the request: shard 0 answers long before any hedge delay
    for _ in range(25):
        group.record(400.0)  # a p95 that a delayed hedge would have to wait out
    assert group.hedge_delay_ms() == pytest.approx(400.0)
    body = service_4.search(QUERY, now=NOW, trace=True, deadline_ms=2500)
    shard0 = body["fanout"]["shards"][0]
    assert shard0["hedged"] and shard0["replica"] == 1 and shard0["latencyMs"] < 300
    assert group.races[-1] is False
    # once the primary wins its races again, hedges wait for the p95 as before
    group.races.extend([True] * 20)
    assert not group.primary_lagging()


def test_reset_counters_keeps_the_learned_hedge_delay(service_4: SearchService) -> None:
    co = service_4.coordinator
    group = co.ensure_shards(4)[0]
    for _ in range(30):
        group.record(2.0)
    group.races.extend([False] * 12)
    service_4.search(QUERY, now=NOW)
    co.reset_counters()
    assert group.queries == 0 and group.hedges == 0 and not co.recent
    assert group.hedge_delay_ms() == pytest.approx(2.0) and group.primary_lagging()
    co.reset_stats()
    assert group.hedge_delay_ms() == pytest.approx(10.0) and not group.primary_lagging()


def test_every_round_of_a_query_spends_only_what_is_left_of_its_deadline(
    service_4: SearchService, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The typo fall-back's and the suggestion's searches run inside the query's deadline,
    not each in a deadline of its own (a query never outlives its deadline by rounds).
    The coordinator's clock jumps a second after the first round, as if it had been slow."""
    from types import SimpleNamespace

    from lookup.search import coordinator as module

    skew = [0.0]
    clock = SimpleNamespace(
        perf_counter=lambda: time.perf_counter() + skew[0], time=time.time, sleep=time.sleep
    )
    monkeypatch.setattr(module, "time", clock)
    coordinator = service_4.coordinator
    fan_out = coordinator._fan_out
    deadlines: list[float] = []

    def recording(snapshot, plan, deadline_ms, hedge):  # type: ignore[no-untyped-def]
        deadlines.append(deadline_ms)
        answer = fan_out(snapshot, plan, deadline_ms, hedge)
        skew[0] += 1.0
        return answer

    monkeypatch.setattr(coordinator, "_fan_out", recording)
    body = service_4.search("retrun vaule", now=NOW, deadline_ms=3000)
    assert "didYouMean" in body and len(deadlines) >= 2
    assert deadlines[0] <= 3000
    for i, left in enumerate(deadlines[1:], start=1):
        assert left <= 3000 - 1000 * i  # each round's second is gone from the next's budget
