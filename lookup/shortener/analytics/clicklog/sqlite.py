"""The click log in one SQLite file: the embedded default (``sqlite:///path``).

One table in its own SQLite file (WAL) holding one row per appended batch — the records as
one JSON array of arrays, or for the shipper's
:class:`~lookup.shortener.analytics.events.RawBatch` its producer, first sequence number
and columns (the event ids are implied) — so appending and reading cost a row per
thousand clicks, not a row per click. An offset is a batch's row number.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Sequence
from typing import Any

from lookup.kit.engines.sqlite import ConnectionPool, connect
from lookup.kit.engines.storeurl import StoreUrl
from lookup.shortener.analytics.batches import LogRecord, decode_batch, encode_batch

__all__ = ["PAGE_SIZE", "WAL_CHECKPOINT_PAGES", "SqliteClickLog"]

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


class SqliteClickLog:
    """The click log as batch rows in its own SQLite file; thread- and process-safe."""

    def __init__(self, path: str | os.PathLike[str], *, synchronous: str = "NORMAL") -> None:
        self.path = str(path)
        self.synchronous = synchronous
        self._pool = ConnectionPool(self.path, self._open)
        self._conn().executescript(_SCHEMA)
        self.appended = 0

    @classmethod
    def from_url(cls, url: StoreUrl, **options: Any) -> SqliteClickLog:
        """The log in the file ``url`` names (``sqlite:///path``); ``options``:
        ``synchronous``."""
        assert url.path is not None
        return cls(url.path, **options)

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
