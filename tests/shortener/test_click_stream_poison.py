"""Poison entries in the Redis click stream: one that cannot be decoded, and one whose
fold keeps failing, go to the dead-letter stream instead of stalling the consumer."""

from __future__ import annotations

import uuid
from typing import Any

from lookup.shortener.analytics.events import RawClick
from lookup.shortener.analytics.log_redis import RedisClickLog

EVENTS = [
    RawClick(f"p1-{i:x}", "abc1234", 1_700_000_000.0 + i, f"ip{i}", "curl/8", None, None)
    for i in range(3)
]


def _log(redis_server: Any, **options: Any) -> RedisClickLog:
    return RedisClickLog(redis_server.url, stream=f"poison-{uuid.uuid4().hex[:8]}", **options)


def test_an_undecodable_entry_is_dead_lettered_and_the_good_ones_still_flow(
    redis_server: Any,
) -> None:
    log = _log(redis_server)
    log.append(EVENTS[:1])
    log._redis.xadd(log.stream, {"b": b"\x00not a batch", "n": 7, "f": "0", "l": "0"})
    log.append(EVENTS[1:])
    got = []
    for _ in range(5):
        batch = log.take("c1", count=1, min_idle_s=60)
        log.ack(offset for offset, _ in batch)
        got.extend(record for _offset, record in batch)
    assert [r[0] for r in got] == [e[0] for e in EVENTS]
    assert log.dead_lettered == 1
    (dead,) = log.dead_letters()
    assert dead["reason"].startswith("undecodable") and dead["events"] == "7"
    assert log.pending() == {}  # nothing left stuck with the consumer
    assert log.dead_letter_count() == 1
    log.close()


def test_an_entry_whose_fold_keeps_failing_is_dead_lettered_after_max_deliveries(
    redis_server: Any,
) -> None:
    log = _log(redis_server, max_deliveries=3)
    log.append(EVENTS[:1])  # the poison: taken, never acknowledged (its fold fails)
    log.append(EVENTS[1:])
    for attempt in range(3):
        batch = log.take("c1", count=1, min_idle_s=60)
        assert [r[0] for _o, r in batch] == [EVENTS[0][0]], attempt  # handed back, not skipped
    batch = log.take("c1", count=1, min_idle_s=60)  # a fourth delivery would exceed 3
    assert [r[0] for _o, r in batch] == [e[0] for e in EVENTS[1:]]
    assert log.dead_lettered == 1
    (dead,) = log.dead_letters()
    assert dead["reason"] == "delivered 4 times, never acknowledged"
    assert dead["events"] == "1"
    log.close()


def test_a_dead_consumers_poison_is_dead_lettered_by_the_claimer(redis_server: Any) -> None:
    log = _log(redis_server, max_deliveries=2)
    log.append(EVENTS[:1])
    log.take("victim", count=1, min_idle_s=0)
    log.take("victim", count=1, min_idle_s=0)  # delivered twice, never acknowledged
    assert log.take("survivor", count=1, min_idle_s=0) == []  # claimed: a third delivery
    assert log.dead_lettered == 1 and log.pending() == {}
    log.close()


def test_max_deliveries_round_trips_through_the_url(redis_server: Any) -> None:
    log = RedisClickLog.from_url(f"{redis_server.url}?stream=s1&max_deliveries=9")
    assert log.max_deliveries == 9
    assert RedisClickLog.from_url(log.locator()).max_deliveries == 9
    log.close()
