"""The click log: an append-only stream of click records with offsets.

A record is a :class:`~lookup.shortener.analytics.events.RawClick` — what our shipper
writes: headers as they came, the IP already hashed — or a
:class:`~lookup.shortener.analytics.events.ClickEvent`, an already enriched click
(what an edge that parses user agents itself would send); the aggregator enriches the
first kind and folds both.

The interface is the shape of a real stream (Kafka, Redis Streams): producers
``append`` batches; a consumer ``read`` s from an offset and remembers where it got
to; old entries are ``trim`` med. Delivery is at least once — a producer that
retries after a lost acknowledgement writes the same events again — so consumers
de-duplicate by event id. Offsets never decrease, and ``read`` returns whole offset
groups: every event at an offset it returns is returned (a batch shares one offset,
as a Kafka record batch does).

Embedded default: :class:`SqliteClickLog`, one table in its own SQLite file (WAL)
holding one row per appended batch — the records as one JSON array of arrays, or for
the shipper's :class:`~lookup.shortener.analytics.events.RawBatch` its producer, first
sequence number and columns (the event ids are implied) — so appending and reading cost
a row per thousand clicks, not a row per click.
:class:`MemoryClickLog` is the same contract in memory, one offset per event, for
notebooks and tests. :func:`open_click_log` picks one from a URL (``sqlite:///path``,
``memory:``).
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from lookup.kit.sqlite import ConnectionPool, connect
from lookup.kit.storeurl import parse_store_url
from lookup.shortener.analytics.batches import LogRecord, decode_batch, encode_batch
from lookup.shortener.analytics.events import record_from_row

#: The click log's SQLite page size (bytes) and automatic checkpoint interval (pages):
#: a WAL of at most about 16 MB.
PAGE_SIZE = 65_536
WAL_CHECKPOINT_PAGES = 256


_SCHEMA = """
CREATE TABLE IF NOT EXISTS click_batches (
    seq      INTEGER PRIMARY KEY AUTOINCREMENT,
    first_ts REAL NOT NULL,
    last_ts  REAL NOT NULL,
    count    INTEGER NOT NULL,
    events   TEXT NOT NULL
);
"""


@runtime_checkable
class ClickLog(Protocol):
    """What the shipper writes to and the aggregator reads from."""

    def append(self, events: Sequence[LogRecord] | Sequence[tuple[Any, ...]]) -> None:
        """Add a batch durably (all or nothing); may raise, and the caller retries.

        Records may come as plain tuples in :class:`RawClick` or :class:`ClickEvent`
        field order (the shipper's form); they are read back as those named tuples."""

    def read(self, after: int, limit: int) -> list[tuple[int, LogRecord]]:
        """Entries with offset > ``after`` in offset order: whole offset groups, stopping
        once at least ``limit`` events are collected."""

    def trim(self, upto: int, before_ts: float) -> int:
        """Drop entries with offset <= ``upto`` older than ``before_ts``; returns how many."""

    def end_offset(self) -> int:
        """The offset of the newest entry (0 when empty)."""

    def backlog(self, after: int) -> int:
        """How many events have an offset > ``after``."""


class SqliteClickLog:
    """The click log as batch rows in its own SQLite file; thread- and process-safe."""

    def __init__(self, path: str | os.PathLike[str], *, synchronous: str = "NORMAL") -> None:
        self.path = str(path)
        self.synchronous = synchronous
        self._pool = ConnectionPool(self.path, self._open)
        self._conn().executescript(_SCHEMA)
        self.appended = 0

    def _open(self) -> sqlite3.Connection:
        # Rows here are ~200 KB batches: 64 KB pages store one in 3 pages instead of
        # 50, which halves SQLite's CPU per appended click (it runs in the redirect
        # server's process). Only a new file takes the size; it must precede WAL.
        conn = connect(
            self.path,
            synchronous=None,
            busy_timeout_ms=10_000,
            pragmas=(f"page_size = {PAGE_SIZE}",),
        )
        conn.execute(f"PRAGMA wal_autocheckpoint = {WAL_CHECKPOINT_PAGES}")
        conn.execute(f"PRAGMA synchronous = {self.synchronous}")
        return conn

    def _conn(self) -> sqlite3.Connection:
        return self._pool.get()

    def append(self, events: Sequence[LogRecord] | Sequence[tuple[Any, ...]]) -> None:
        if not events:
            return
        blob, first_ts, last_ts = encode_batch(events)
        self._conn().execute(
            "INSERT INTO click_batches (first_ts, last_ts, count, events) VALUES (?, ?, ?, ?)",
            (first_ts, last_ts, len(events), blob),
        )
        self.appended += len(events)

    def read(self, after: int, limit: int) -> list[tuple[int, LogRecord]]:
        out: list[tuple[int, LogRecord]] = []
        cursor = self._conn().execute(
            "SELECT seq, events FROM click_batches WHERE seq > ? ORDER BY seq", (after,)
        )
        for seq, blob in cursor:
            out.extend((seq, record) for record in decode_batch(blob))
            if len(out) >= limit:
                break
        cursor.close()
        return out

    def trim(self, upto: int, before_ts: float) -> int:
        cur = self._conn().execute(
            "DELETE FROM click_batches WHERE seq <= ? AND last_ts < ?", (upto, before_ts)
        )
        return cur.rowcount

    def end_offset(self) -> int:
        row = self._conn().execute("SELECT MAX(seq) FROM click_batches").fetchone()
        return int(row[0] or 0)

    def backlog(self, after: int) -> int:
        row = (
            self._conn()
            .execute("SELECT COALESCE(SUM(count), 0) FROM click_batches WHERE seq > ?", (after,))
            .fetchone()
        )
        return int(row[0])

    def count(self) -> int:
        """Events currently kept."""
        return self.backlog(0)

    def close(self) -> None:
        """Close every connection (they reopen on next use)."""
        self._pool.close()


class MemoryClickLog:
    """The same contract in memory (one offset per event, counting from 1)."""

    def __init__(self) -> None:
        self._entries: list[tuple[int, LogRecord]] = []
        self._next = 1
        self._lock = threading.Lock()

    def append(self, events: Sequence[LogRecord] | Sequence[tuple[Any, ...]]) -> None:
        records = [record_from_row(event) for event in events]
        with self._lock:
            for record in records:
                self._entries.append((self._next, record))
                self._next += 1

    def read(self, after: int, limit: int) -> list[tuple[int, LogRecord]]:
        with self._lock:
            return [entry for entry in self._entries if entry[0] > after][:limit]

    def trim(self, upto: int, before_ts: float) -> int:
        with self._lock:
            kept = [e for e in self._entries if not (e[0] <= upto and e[1][2] < before_ts)]
            dropped = len(self._entries) - len(kept)
            self._entries = kept
            return dropped

    def end_offset(self) -> int:
        with self._lock:
            return self._next - 1

    def backlog(self, after: int) -> int:
        with self._lock:
            return sum(1 for offset, _ in self._entries if offset > after)

    def events(self) -> list[LogRecord]:
        """Every record kept, in order (for tests and notebooks)."""
        with self._lock:
            return [e for _, e in self._entries]


def open_click_log(url: str, **options: Any) -> ClickLog:
    """The click log a URL names: ``sqlite:///path/clicklog.sqlite3``, ``memory:`` or
    ``redis://host:port/db[?stream=S&group=G&maxlen=N]`` (Redis Streams with a consumer
    group: :class:`~lookup.shortener.analytics.log_redis.RedisClickLog`).

    ``options`` go to the SQLite implementation (``synchronous``).
    """
    parsed = parse_store_url(url, ("sqlite", "memory", "redis"))
    if parsed.scheme == "memory":
        return MemoryClickLog()
    if parsed.scheme == "redis":
        from lookup.shortener.analytics.log_redis import RedisClickLog

        return RedisClickLog.from_url(url)
    assert parsed.path is not None
    return SqliteClickLog(parsed.path, **options)
