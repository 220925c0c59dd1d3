"""Clicks the bounded click stream trims before the group counted them are counted and
reported (``lostToRetention`` in the click metrics), never silently acknowledged.

The oracle is arithmetic: every click appended is either counted by the aggregator or
reported lost, exactly, and the loss equals what the stream no longer holds."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

from lookup.shortener.analytics import ClickAnalytics
from lookup.shortener.analytics.events import RawClick
from lookup.shortener.analytics.log_redis import RedisClickLog

T0 = 1_700_000_000.0
PER_BATCH = 3


def _batch(i: int) -> list[RawClick]:
    return [
        RawClick(f"r-{i * PER_BATCH + j:x}", "abc1234", T0 + i, "ip", "curl/8", None, None)
        for j in range(PER_BATCH)
    ]


def _held_clicks(log: RedisClickLog) -> int:
    """Clicks the stream still holds (the entries ``MAXLEN`` has not trimmed)."""
    return sum(int(fields[b"n"]) for _eid, fields in log._redis.xrange(log.stream))


def test_clicks_trimmed_while_the_aggregators_are_stopped_are_reported_exactly(
    tmp_path: Path, redis_server: Any
) -> None:
    # maxlen 1, approximate: Redis trims whole 100-entry nodes, so of 350 batches it keeps
    # a few hundred entries at most and the rest are gone before any aggregator ran.
    log = RedisClickLog(redis_server.url, stream=f"ret-{uuid.uuid4().hex[:8]}", maxlen=1)
    analytics = ClickAnalytics(tmp_path, b"s" * 32, click_log=log, aggregator="thread")
    try:
        analytics.aggregator.catch_up()  # the group exists, nothing to count yet
        batches = 350
        for i in range(batches):
            log.append(_batch(i))
        appended = batches * PER_BATCH
        held = _held_clicks(log)
        assert 0 < held < appended  # something was trimmed, something is left
        figures = analytics.stats()["log"]
        print(f"appended {appended}, held {held}, reported lost {figures['lostToRetention']}")
        assert figures["lostToRetention"] == appended - held  # before any read reached the gap
        assert figures["undelivered"] == held
        assert figures["groupLag"] is None or figures["groupLag"] > 0

        analytics.aggregator.catch_up()  # the aggregators are back: they fold what is left
        counted = analytics.aggregator.consumer_state()
        assert counted["counted"] == held
        figures = analytics.stats()["log"]
        assert figures["lostToRetention"] == appended - held  # the read found the same gap
        assert figures["undelivered"] == 0
        assert counted["counted"] + figures["lostToRetention"] == appended
    finally:
        analytics.close()


def test_entries_trimmed_after_delivery_before_acknowledgement_count_as_lost(
    redis_server: Any,
) -> None:
    log = RedisClickLog(redis_server.url, stream=f"ret-{uuid.uuid4().hex[:8]}", maxlen=1)
    log.append(_batch(0))
    log.append(_batch(1))
    taken = log.take("victim", count=2, min_idle_s=60)  # delivered, never acknowledged
    assert len(taken) == 2 * PER_BATCH
    for i in range(2, 300):  # the stream moves on past maxlen: the two entries are trimmed
        log.append(_batch(i))
    appended = 300 * PER_BATCH
    held = _held_clicks(log)
    # lost already, though no read has found it: the victim's six clicks and the unread gap
    assert log.retention()["lostToRetention"] == appended - held
    counted = 0
    while batch := log.take("survivor", count=50, min_idle_s=0):  # claims the victim's
        counted += len(batch)
        log.ack(offset for offset, _ in batch)
    assert log.pending() == {}
    figures = log.retention()
    assert counted == held  # the victim's entries were gone when claimed: none counted
    assert figures["lostToRetention"] == appended - held  # found now, counted once
    assert int(log._redis.get(log._lost_key)) == appended - held
    assert not log._redis.hlen(log._inflight_key)  # nothing left to remember
    log.close()


def test_nothing_is_reported_lost_when_the_stream_is_within_retention(redis_server: Any) -> None:
    log = RedisClickLog(redis_server.url, stream=f"ret-{uuid.uuid4().hex[:8]}")
    assert log.retention() == {"lostToRetention": 0, "undelivered": 0, "groupLag": None}
    for i in range(5):
        log.append(_batch(i))
    log.ensure_group()
    assert log.retention() == {"lostToRetention": 0, "undelivered": 15, "groupLag": 5}
    batch = log.take("c1", count=3, min_idle_s=60)
    log.ack(offset for offset, _ in batch)
    assert log.retention() == {"lostToRetention": 0, "undelivered": 6, "groupLag": 2}
    log.close()
