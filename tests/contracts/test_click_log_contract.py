"""The ClickLog contract, written once and run against every implementation.

What the shipper and the aggregator rely on: batches appended whole and read back in
order as typed records (raw clicks and enriched events, plain tuples or named ones, the
shipper's column batches), offsets that never decrease, reads of whole offset groups
from an offset, a backlog count, trimming of old entries. How many events share an
offset is the implementation's choice (SQLite and Redis Streams: a batch; memory: one
event), so the tests never assume it. The backends come from the seam's registry
(:data:`lookup.shortener.analytics.clicklog.BACKENDS`): a new backend registers its
scheme there, says below how to get a fresh, empty log of it (``FRESH``), and must pass
unchanged. ``redis`` runs on the session's throw-away redis-server, a fresh stream per test.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lookup.kit.storeurl import sqlite_url
from lookup.shortener.analytics.clicklog import BACKENDS, ClickLog, backend, open_click_log
from lookup.shortener.analytics.events import ClickEvent, RawBatch, RawClick
from tests.contracts.seams import (
    Fresh,
    check_port_imports_no_backend,
    check_registered,
    fresh_url,
)

T0 = 1_800_000_000.0


def _sqlite(tmp_path: Path) -> str:
    return sqlite_url(tmp_path / "clicklog.sqlite3")


@pytest.fixture
def redis_stream(redis_server: Any) -> str:
    """A new, empty stream on the session's redis-server: its URL."""
    return f"{redis_server.url}?stream=contract-{uuid.uuid4().hex[:10]}"


#: scheme -> how to get the URL of a fresh, empty log: a function of a temp dir, or the
#: name of the fixture that gives one on a real server.
FRESH: dict[str, Fresh] = {
    "sqlite": _sqlite,
    "memory": lambda tmp: "memory:",
    "redis": "redis_stream",
}


@pytest.fixture(params=list(BACKENDS))
def log(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ClickLog]:
    url = fresh_url(request, tmp_path, FRESH)
    click_log = open_click_log(url)
    yield click_log
    close = getattr(click_log, "close", None)
    if close is not None:
        close()


def test_every_registered_backend_is_a_click_log() -> None:
    check_registered(BACKENDS, backend, ClickLog)


def test_the_port_imports_no_backend() -> None:
    """``lookup.shortener.analytics.clicklog`` names its backends; it imports one only
    when a URL asks (so neither does the analytics package above it)."""
    check_port_imports_no_backend("lookup.shortener.analytics.clicklog", ())


def _raw(i: int, ts: float = T0) -> RawClick:
    return RawClick(f"edge-{i:x}", f"key{i % 3}", ts + i, f"ip{i}", "Mozilla/5.0", None, "IN")


def _event(i: int, ts: float = T0) -> ClickEvent:
    return ClickEvent(
        f"cdn-{i}", "key0", ts + i, "IN", "mobile", "iOS", "Safari", "", f"ip{i}", f"v{i}", "human"
    )


def _all(log: ClickLog, after: int = 0) -> list[tuple[int, Any]]:
    return log.read(after, 1_000_000)


def test_the_factory_gives_a_click_log(log: ClickLog) -> None:
    assert isinstance(log, ClickLog)


def test_unknown_schemes_are_refused_by_name() -> None:
    with pytest.raises(ValueError, match="memory"):
        open_click_log("kafka://broker/clicks")


def test_an_empty_log(log: ClickLog) -> None:
    assert log.end_offset() == 0 and log.backlog(0) == 0 and log.read(0, 10) == []
    log.append([])  # an empty batch is nothing
    assert log.end_offset() == 0


def test_batches_read_back_in_order_as_typed_records(log: ClickLog) -> None:
    first = [_raw(i) for i in range(3)]
    second = [tuple(_event(i)) for i in range(2)]  # plain tuples, the shipper's form
    log.append(first)
    log.append(second)
    entries = _all(log)
    records = [record for _, record in entries]
    assert records == [*first, *(_event(i) for i in range(2))]
    assert [type(r) for r in records] == [RawClick] * 3 + [ClickEvent] * 2
    offsets = [offset for offset, _ in entries]
    assert offsets == sorted(offsets) and offsets[0] > 0
    assert log.end_offset() == offsets[-1]
    assert log.backlog(0) == 5


def test_the_shippers_column_batches_read_back_as_raw_clicks(log: ClickLog) -> None:
    rows = [(f"key{i}", T0 + i, f"ip{i}", "curl/8", None, None) for i in range(4)]
    log.append(RawBatch.from_rows("p1", 16, rows))
    records = [record for _, record in _all(log)]
    assert [r.event_id for r in records] == ["p1-10", "p1-11", "p1-12", "p1-13"]
    assert records[2] == RawClick("p1-12", "key2", T0 + 2, "ip2", "curl/8", None, None)


def test_reads_start_after_an_offset_and_return_whole_offset_groups(log: ClickLog) -> None:
    for start in range(0, 12, 4):
        log.append([_raw(i) for i in range(start, start + 4)])
    entries = _all(log)
    some = log.read(0, 1)
    assert some, "a read with limit 1 returns at least one record"
    assert some == [e for e in entries if e[0] <= some[-1][0]]  # whole groups, in order
    rest = log.read(some[-1][0], 1_000_000)
    assert some + rest == entries  # nothing skipped, nothing twice
    middle = entries[len(entries) // 2][0]
    assert log.backlog(middle) == sum(1 for offset, _ in entries if offset > middle)
    assert log.read(log.end_offset(), 10) == []


def test_trim_drops_old_entries_only(log: ClickLog) -> None:
    log.append([_raw(i, T0) for i in range(3)])  # old
    log.append([_raw(i, T0 + 10_000) for i in range(3, 6)])  # new
    end = log.end_offset()
    assert log.trim(end, T0 + 5_000) > 0
    kept = [record.event_id for _, record in _all(log)]
    assert kept == [f"edge-{i:x}" for i in range(3, 6)]
    assert log.trim(end, T0 + 5_000) == 0
    assert log.end_offset() == end  # offsets never go back
    log.append([_raw(9, T0 + 20_000)])
    assert log.end_offset() > end
