"""The click counts store: what the aggregator folds the click log into, and reads back.

:class:`ClickCounts` names the operations :class:`~lookup.shortener.analytics.aggregate.
ClickAggregator` uses: a consumer's committed offset, and one **fold** — a unit of work
(:class:`CountsBatch`) that checks and records the event ids already counted, adds to
the counters, updates the visitor sketches and moves the offset, all committed together
or not at all (so a crash replays a batch and the de-duplication makes it harmless);
then the reads behind the stats endpoint and the scanner's hot keys, and housekeeping.

:class:`SqliteClickCounts` is the embedded implementation (``clickstats.sqlite3``, WAL);
:func:`open_click_counts` picks one from a URL (``sqlite:///path``; ``postgresql://…`` for
:mod:`~lookup.shortener.analytics.counts_pg`, shared by a fleet).
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any, Protocol, runtime_checkable

from lookup.kit.sqlite import ConnectionPool
from lookup.kit.storeurl import parse_store_url

_SCHEMA = """
CREATE TABLE IF NOT EXISTS counts (
    key     TEXT NOT NULL,
    grain   TEXT NOT NULL CHECK (grain IN ('m', 'h')),
    bucket  INTEGER NOT NULL,
    dim     TEXT NOT NULL,
    value   TEXT NOT NULL,
    n       INTEGER NOT NULL,
    PRIMARY KEY (key, grain, bucket, dim, value)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS counts_by_bucket ON counts(grain, dim, bucket);
CREATE TABLE IF NOT EXISTS seen_events (
    event_id TEXT PRIMARY KEY,
    ts       REAL NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS seen_events_by_ts ON seen_events(ts);
CREATE TABLE IF NOT EXISTS seen_ranges (
    producer TEXT NOT NULL,
    lo       INTEGER NOT NULL,
    hi       INTEGER NOT NULL,
    ts       REAL NOT NULL,
    PRIMARY KEY (producer, lo)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS visitors (
    key     TEXT NOT NULL,
    day     INTEGER NOT NULL,
    sketch  BLOB NOT NULL,
    PRIMARY KEY (key, day)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS consumer (
    name        TEXT PRIMARY KEY,
    log_offset  INTEGER NOT NULL,
    counted     INTEGER NOT NULL,
    duplicates  INTEGER NOT NULL,
    last_ts     REAL
);
"""

#: One counter increment: ``(key, grain, bucket, dim, value, n)``.
CountRow = tuple[str, str, int, str, str, int]


class CountsBatch(Protocol):
    """One fold's unit of work: everything it does commits together (see the module doc)."""

    def offset(self) -> int:
        """The consumer's committed offset, read inside the unit of work."""
        ...

    def seen_ranges(self, producer: str) -> list[tuple[int, int]]:
        """The ``(lo, hi)`` sequence ranges of ``producer`` already counted, by ``lo``."""
        ...

    def replace_ranges(self, producer: str, ranges: list[tuple[int, int]], ts: float) -> None:
        """Set ``producer``'s counted ranges (stamped ``ts`` for the dedup window)."""
        ...

    def seen_event_ids(self, ids: list[str]) -> set[str]:
        """Which of ``ids`` (foreign event ids) were counted before."""
        ...

    def add_seen_events(self, events: list[tuple[str, float]]) -> None:
        """Remember ``(event_id, ts)`` pairs as counted."""
        ...

    def add_counts(self, rows: Iterable[CountRow]) -> None:
        """Add each row's ``n`` to its counter."""
        ...

    def sketch(self, key: str, day: int) -> bytes | None:
        """The HyperLogLog registers of ``key`` on ``day`` (None before the first visitor)."""
        ...

    def put_sketch(self, key: str, day: int, registers: bytes) -> None:
        """Store the registers of ``key`` on ``day``."""
        ...

    def advance(self, offset: int, counted: int, duplicates: int, last_ts: float | None) -> None:
        """Move the consumer past ``offset``, adding to its counted/duplicate totals."""
        ...


@runtime_checkable
class ClickCounts(Protocol):
    """Where the aggregator keeps counters, sketches, seen ids and its offset."""

    def consumer_state(self, name: str) -> dict[str, Any]:
        """``offset``, ``counted``, ``duplicates``, ``lastClickTs`` of consumer ``name``."""
        ...

    def fold(self, name: str) -> Any:
        """A context manager yielding a :class:`CountsBatch` for consumer ``name``: it
        takes the write lock first (so several aggregators may share the store), commits
        on a clean exit and rolls back on an exception."""
        ...

    def counts(
        self, key: str, grain: str, first: int, last: int
    ) -> list[tuple[int, str, str, int]]:
        """``(bucket, dim, value, n)`` of ``key`` at ``grain`` with ``first <= bucket < last``."""
        ...

    def sketches(
        self, key: str, first_day: int | None = None, end: float | None = None
    ) -> list[bytes]:
        """The day sketches of ``key``: all of them, or those with ``first_day <= day < end``."""
        ...

    def clicks_since(self, keys: list[str], hour: int) -> dict[str, int]:
        """All clicks per key of ``keys`` in hour buckets from ``hour`` on (unclicked: absent)."""
        ...

    def top_keys(self, hour: int, limit: int) -> list[tuple[str, int]]:
        """The most clicked keys in hour buckets from ``hour`` on, most first (ties by key)."""
        ...

    def forget(self, seen_before: float, minutes_before: float) -> None:
        """Drop seen ids stamped before ``seen_before``, minute rows before ``minutes_before``."""
        ...

    def close(self) -> None:
        """Release connections; a later call reopens them."""
        ...


class _SqliteBatch:
    def __init__(self, conn: sqlite3.Connection, name: str) -> None:
        self.conn = conn
        self.name = name

    def offset(self) -> int:
        row = self.conn.execute(
            "SELECT log_offset FROM consumer WHERE name = ?", (self.name,)
        ).fetchone()
        return int(row[0])

    def seen_ranges(self, producer: str) -> list[tuple[int, int]]:
        return self.conn.execute(
            "SELECT lo, hi FROM seen_ranges WHERE producer = ? ORDER BY lo", (producer,)
        ).fetchall()

    def replace_ranges(self, producer: str, ranges: list[tuple[int, int]], ts: float) -> None:
        self.conn.execute("DELETE FROM seen_ranges WHERE producer = ?", (producer,))
        self.conn.executemany(
            "INSERT INTO seen_ranges (producer, lo, hi, ts) VALUES (?, ?, ?, ?)",
            [(producer, lo, hi, ts) for lo, hi in ranges],
        )

    def seen_event_ids(self, ids: list[str]) -> set[str]:
        seen: set[str] = set()
        for i in range(0, len(ids), 500):
            chunk = ids[i : i + 500]
            marks = ", ".join("?" * len(chunk))
            seen.update(
                row[0]
                for row in self.conn.execute(
                    f"SELECT event_id FROM seen_events WHERE event_id IN ({marks})", chunk
                )
            )
        return seen

    def add_seen_events(self, events: list[tuple[str, float]]) -> None:
        self.conn.executemany("INSERT INTO seen_events (event_id, ts) VALUES (?, ?)", events)

    def add_counts(self, rows: Iterable[CountRow]) -> None:
        self.conn.executemany(
            "INSERT INTO counts (key, grain, bucket, dim, value, n) VALUES (?, ?, ?, ?, ?, ?)"
            " ON CONFLICT(key, grain, bucket, dim, value) DO UPDATE SET n = n + excluded.n",
            rows,
        )

    def sketch(self, key: str, day: int) -> bytes | None:
        row = self.conn.execute(
            "SELECT sketch FROM visitors WHERE key = ? AND day = ?", (key, day)
        ).fetchone()
        return row[0] if row else None

    def put_sketch(self, key: str, day: int, registers: bytes) -> None:
        self.conn.execute(
            "INSERT INTO visitors (key, day, sketch) VALUES (?, ?, ?)"
            " ON CONFLICT(key, day) DO UPDATE SET sketch = excluded.sketch",
            (key, day, registers),
        )

    def advance(self, offset: int, counted: int, duplicates: int, last_ts: float | None) -> None:
        self.conn.execute(
            "UPDATE consumer SET log_offset = ?, counted = counted + ?,"
            " duplicates = duplicates + ?, last_ts = MAX(COALESCE(last_ts, 0), COALESCE(?, 0))"
            " WHERE name = ?",
            (offset, counted, duplicates, last_ts, self.name),
        )


class SqliteClickCounts:
    """The counts in one SQLite file (WAL, synchronous NORMAL); thread- and process-safe."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = str(path)
        self._pool = ConnectionPool(self.path)  # WAL, synchronous NORMAL, 10 s busy timeout
        self._conn().executescript(_SCHEMA)
        self._consumers: set[str] = set()

    def _conn(self) -> sqlite3.Connection:
        return self._pool.get()

    def _ensure(self, name: str) -> None:
        if name not in self._consumers:
            self._conn().execute(
                "INSERT INTO consumer (name, log_offset, counted, duplicates) VALUES (?, 0, 0, 0)"
                " ON CONFLICT(name) DO NOTHING",
                (name,),
            )
            self._consumers.add(name)

    def consumer_state(self, name: str) -> dict[str, Any]:
        self._ensure(name)
        row = (
            self._conn()
            .execute(
                "SELECT log_offset, counted, duplicates, last_ts FROM consumer WHERE name = ?",
                (name,),
            )
            .fetchone()
        )
        return {"offset": row[0], "counted": row[1], "duplicates": row[2], "lastClickTs": row[3]}

    @contextmanager
    def fold(self, name: str) -> Iterator[_SqliteBatch]:
        self._ensure(name)
        conn = self._conn()
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield _SqliteBatch(conn, name)
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    def counts(
        self, key: str, grain: str, first: int, last: int
    ) -> list[tuple[int, str, str, int]]:
        return (
            self._conn()
            .execute(
                "SELECT bucket, dim, value, n FROM counts"
                " WHERE key = ? AND grain = ? AND bucket >= ? AND bucket < ?",
                (key, grain, first, last),
            )
            .fetchall()
        )

    def sketches(
        self, key: str, first_day: int | None = None, end: float | None = None
    ) -> list[bytes]:
        conn = self._conn()
        if first_day is None or end is None:
            rows = conn.execute("SELECT sketch FROM visitors WHERE key = ?", (key,)).fetchall()
        else:
            rows = conn.execute(
                "SELECT sketch FROM visitors WHERE key = ? AND day >= ? AND day < ?",
                (key, first_day, end),
            ).fetchall()
        return [blob for (blob,) in rows]

    def clicks_since(self, keys: list[str], hour: int) -> dict[str, int]:
        out: dict[str, int] = {}
        conn = self._conn()
        for i in range(0, len(keys), 500):
            chunk = keys[i : i + 500]
            marks = ", ".join("?" * len(chunk))
            for key, n in conn.execute(
                f"SELECT key, SUM(n) FROM counts WHERE grain = 'h' AND dim = 'all'"
                f" AND bucket >= ? AND key IN ({marks}) GROUP BY key",
                (hour, *chunk),
            ):
                out[key] = int(n)
        return out

    def top_keys(self, hour: int, limit: int) -> list[tuple[str, int]]:
        rows = (
            self._conn()
            .execute(
                "SELECT key, SUM(n) AS c FROM counts WHERE grain = 'h' AND dim = 'all'"
                " AND bucket >= ? GROUP BY key ORDER BY c DESC, key LIMIT ?",
                (hour, limit),
            )
            .fetchall()
        )
        return [(k, int(n)) for k, n in rows]

    def forget(self, seen_before: float, minutes_before: float) -> None:
        conn = self._conn()
        conn.execute("DELETE FROM seen_events WHERE ts < ?", (seen_before,))
        conn.execute("DELETE FROM seen_ranges WHERE ts < ?", (seen_before,))
        conn.execute("DELETE FROM counts WHERE grain = 'm' AND bucket < ?", (minutes_before,))

    def close(self) -> None:
        """Close every connection (they reopen on next use)."""
        self._pool.close()


def open_click_counts(url: str, **options: Any) -> ClickCounts:
    """The click counts store a URL names: ``sqlite:///path/clickstats.sqlite3``, or
    ``postgresql://…`` (:class:`~lookup.shortener.analytics.counts_pg.PostgresClickCounts`,
    shared by a fleet; ``options``: ``consumer_scope``, ``pool_size``, ``pool_timeout_s``)."""
    parsed = parse_store_url(url, ("sqlite", "postgresql"))
    if parsed.scheme == "postgresql":
        from lookup.shortener.analytics.counts_pg import PostgresClickCounts

        return PostgresClickCounts(parsed.url, **options)
    assert parsed.path is not None
    return SqliteClickCounts(parsed.path, **options)


__all__ = [
    "ClickCounts",
    "CountRow",
    "CountsBatch",
    "SqliteClickCounts",
    "open_click_counts",
]
