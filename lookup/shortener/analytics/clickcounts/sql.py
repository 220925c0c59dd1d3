"""The click counts in SQL, written once for every engine: the tables, the statements, and
the operations over them (:class:`SqlClickCounts`, and a fold's :class:`SqlCountsBatch`).

A fold is one transaction that takes the store's write lock before anything else —
SQLite's ``BEGIN IMMEDIATE``, a transaction-scoped advisory lock on PostgreSQL — so folds
from several aggregators, in one process or many, are serialised: a fold's
read-merge-write of a visitor sketch can never lose another fold's registers, and a
consumer's offset is read and moved under the lock.

Tables: the counters (``(key, grain, bucket, dim, value) → n``, grain ``m`` or ``h``),
the dedup records (foreign event ids; our producers' counted sequence ranges), the
visitor sketches (a HyperLogLog's registers per key and day) and the consumers (offset,
totals, newest click time).

The statements are written with ``?`` for a parameter and each table's name in braces; a
:class:`Dialect` says how its engine spells what differs (the placeholder, the tables'
names — each engine's database has always named them its own way —, column types, "any
of a list", the larger of two values, byte order), and :class:`CountsSql` renders every
statement for it once. A backend subclasses :class:`SqlClickCounts` with its statements
and its connections, nothing else.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import Any, ClassVar

from lookup.kit.engines.dialects import Connection, SqlDialect, executemany
from lookup.shortener.analytics.clickcounts import CountRow

__all__ = ["SCHEMA", "TABLES", "Connection", "CountsSql", "Dialect", "SqlClickCounts"]

#: The tables, by the names the statements give them (a dialect maps them to its own).
TABLES = ("counts", "seen_events", "seen_ranges", "visitors", "consumers")

#: Every table and index, with the table names and the column types an engine spells its
#: own way in braces: ``bigint``, ``real``, ``blob``, and ``without_rowid`` (what follows
#: a table keyed by its primary key alone).
SCHEMA = """
CREATE TABLE IF NOT EXISTS {counts} (
    key     TEXT NOT NULL,
    grain   TEXT NOT NULL CHECK (grain IN ('m', 'h')),
    bucket  {bigint} NOT NULL,
    dim     TEXT NOT NULL,
    value   TEXT NOT NULL,
    n       {bigint} NOT NULL,
    PRIMARY KEY (key, grain, bucket, dim, value)
){without_rowid};
CREATE INDEX IF NOT EXISTS {counts}_by_bucket ON {counts}(grain, dim, bucket);
CREATE TABLE IF NOT EXISTS {seen_events} (
    event_id TEXT PRIMARY KEY,
    ts       {real} NOT NULL
){without_rowid};
CREATE INDEX IF NOT EXISTS {seen_events}_by_ts ON {seen_events}(ts);
CREATE TABLE IF NOT EXISTS {seen_ranges} (
    producer TEXT NOT NULL,
    lo       {bigint} NOT NULL,
    hi       {bigint} NOT NULL,
    ts       {real} NOT NULL,
    PRIMARY KEY (producer, lo)
){without_rowid};
CREATE TABLE IF NOT EXISTS {visitors} (
    key     TEXT NOT NULL,
    day     {bigint} NOT NULL,
    sketch  {blob} NOT NULL,
    PRIMARY KEY (key, day)
){without_rowid};
CREATE TABLE IF NOT EXISTS {consumers} (
    name        TEXT PRIMARY KEY,
    log_offset  {bigint} NOT NULL,
    counted     {bigint} NOT NULL,
    duplicates  {bigint} NOT NULL,
    last_ts     {real}
);
"""


@dataclass(frozen=True)
class Dialect(SqlDialect):
    """How one SQL engine spells what differs; the statements themselves are shared
    (the engine's name, its placeholder and "any of a list" are :class:`SqlDialect`'s)."""

    #: The name of each of :data:`TABLES` in this engine's database.
    tables: Mapping[str, str]
    #: The column types of :data:`SCHEMA` (and ``without_rowid``).
    types: Mapping[str, str]
    #: The function giving the larger of two values (``MAX`` or ``GREATEST``).
    greatest: str
    #: A nullable float parameter, where a value goes (``?`` or ``?::float8``).
    float_value: str
    #: What an ``ORDER BY key`` adds to sort by bytes (or nothing: already so).
    byte_order: str
    #: Whether a fold adds each counter once, in key order (its increments summed first).
    merge_counts: bool


class CountsSql:
    """Every statement of the click counts, rendered once for one :class:`Dialect`."""

    def __init__(self, dialect: Dialect) -> None:
        self.dialect = dialect
        b = dialect.bind
        t = dict(dialect.tables)
        counts, seen_events, seen_ranges = t["counts"], t["seen_events"], t["seen_ranges"]
        visitors, consumers = t["visitors"], t["consumers"]
        self.schema = SCHEMA.format(**t, **dialect.types)
        self.add_consumer = b(
            f"INSERT INTO {consumers} (name, log_offset, counted, duplicates)"
            " VALUES (?, 0, 0, 0) ON CONFLICT (name) DO NOTHING"
        )
        self.consumer = b(
            f"SELECT log_offset, counted, duplicates, last_ts FROM {consumers} WHERE name = ?"
        )
        self.offset = b(f"SELECT log_offset FROM {consumers} WHERE name = ?")
        self.advance = b(
            f"UPDATE {consumers} SET log_offset = ?, counted = counted + ?,"
            " duplicates = duplicates + ?,"
            f" last_ts = {dialect.greatest}(COALESCE(last_ts, 0),"
            f" COALESCE({dialect.float_value}, 0)) WHERE name = ?"
        )
        self.seen_ranges = b(f"SELECT lo, hi FROM {seen_ranges} WHERE producer = ? ORDER BY lo")
        self.drop_ranges = b(f"DELETE FROM {seen_ranges} WHERE producer = ?")
        self.add_range = b(f"INSERT INTO {seen_ranges} (producer, lo, hi, ts) VALUES (?, ?, ?, ?)")
        self.seen_events = b(
            f"SELECT event_id FROM {seen_events} WHERE {dialect.any_of.format(column='event_id')}"
        )
        self.add_seen_event = b(f"INSERT INTO {seen_events} (event_id, ts) VALUES (?, ?)")
        self.add_count = b(
            f"INSERT INTO {counts} (key, grain, bucket, dim, value, n)"
            " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (key, grain, bucket, dim, value)"
            f" DO UPDATE SET n = {counts}.n + excluded.n"
        )
        self.sketch = b(f"SELECT sketch FROM {visitors} WHERE key = ? AND day = ?")
        self.put_sketch = b(
            f"INSERT INTO {visitors} (key, day, sketch) VALUES (?, ?, ?)"
            " ON CONFLICT (key, day) DO UPDATE SET sketch = excluded.sketch"
        )
        self.counts = b(
            f"SELECT bucket, dim, value, n FROM {counts}"
            " WHERE key = ? AND grain = ? AND bucket >= ? AND bucket < ?"
        )
        self.sketches = b(f"SELECT sketch FROM {visitors} WHERE key = ?")
        self.sketches_between = b(
            f"SELECT sketch FROM {visitors} WHERE key = ? AND day >= ? AND day < ?"
        )
        self.clicks_since = b(
            f"SELECT key, SUM(n) FROM {counts} WHERE grain = 'h' AND dim = 'all'"
            f" AND bucket >= ? AND {dialect.any_of.format(column='key')} GROUP BY key"
        )
        self.link_totals = b(
            f"SELECT key, grain, dim, SUM(n), MAX(bucket) FROM {counts}"
            f" WHERE {dialect.any_of.format(column='key')} AND dim IN ('all', 'human')"
            " GROUP BY key, grain, dim"
        )
        self.top_keys = b(
            f"SELECT key, SUM(n) AS c FROM {counts} WHERE grain = 'h' AND dim = 'all'"
            f" AND bucket >= ? GROUP BY key ORDER BY c DESC, key{dialect.byte_order} LIMIT ?"
        )
        self.forget = (
            b(f"DELETE FROM {seen_events} WHERE ts < ?"),
            b(f"DELETE FROM {seen_ranges} WHERE ts < ?"),
        )
        self.forget_minutes = b(f"DELETE FROM {counts} WHERE grain = 'm' AND bucket < ?")


def _merged(rows: Iterable[CountRow]) -> list[CountRow]:
    """One row per counter, its increments summed, in key order."""
    merged: dict[tuple[str, str, int, str, str], int] = {}
    for key, grain, bucket, dim, value, n in rows:
        counter = (key, grain, bucket, dim, value)
        merged[counter] = merged.get(counter, 0) + n
    return [(*counter, n) for counter, n in sorted(merged.items())]


class SqlCountsBatch:
    """One fold's unit of work (:class:`~lookup.shortener.analytics.clickcounts.
    CountsBatch`) on a connection inside the fold's transaction."""

    def __init__(self, conn: Connection, sql: CountsSql, name: str) -> None:
        self.conn = conn
        self.sql = sql
        self.name = name

    def offset(self) -> int:
        row = self.conn.execute(self.sql.offset, (self.name,)).fetchone()
        assert row is not None  # registered before the fold began
        return int(row[0])

    def seen_ranges(self, producer: str) -> list[tuple[int, int]]:
        rows = self.conn.execute(self.sql.seen_ranges, (producer,)).fetchall()
        return [(int(lo), int(hi)) for lo, hi in rows]

    def replace_ranges(self, producer: str, ranges: list[tuple[int, int]], ts: float) -> None:
        self.conn.execute(self.sql.drop_ranges, (producer,))
        if ranges:
            executemany(
                self.conn, self.sql.add_range, [(producer, lo, hi, ts) for lo, hi in ranges]
            )

    def seen_event_ids(self, ids: list[str]) -> set[str]:
        if not ids:
            return set()
        rows = self.conn.execute(self.sql.seen_events, (self.sql.dialect.array(ids),)).fetchall()
        return {row[0] for row in rows}

    def add_seen_events(self, events: list[tuple[str, float]]) -> None:
        if events:
            executemany(self.conn, self.sql.add_seen_event, events)

    def add_counts(self, rows: Iterable[CountRow]) -> None:
        if self.sql.dialect.merge_counts:
            rows = _merged(rows)  # one upsert per counter and batch
            if not rows:
                return
        executemany(self.conn, self.sql.add_count, rows)

    def sketch(self, key: str, day: int) -> bytes | None:
        row = self.conn.execute(self.sql.sketch, (key, day)).fetchone()
        return None if row is None else bytes(row[0])

    def put_sketch(self, key: str, day: int, registers: bytes) -> None:
        self.conn.execute(self.sql.put_sketch, (key, day, registers))

    def advance(self, offset: int, counted: int, duplicates: int, last_ts: float | None) -> None:
        self.conn.execute(self.sql.advance, (offset, counted, duplicates, last_ts, self.name))


class SqlClickCounts(ABC):
    """Every operation of :class:`~lookup.shortener.analytics.clickcounts.ClickCounts`,
    over :class:`CountsSql`.

    A backend gives its statements (:attr:`sql`) and three ways to get a connection:
    :meth:`_read` (reads), :meth:`_write` (statements that each commit on their own) and
    :meth:`_fold_transaction` (a transaction holding the store's write lock from its
    start, committed on a clean exit, rolled back on an exception).
    """

    sql: ClassVar[CountsSql]
    #: Prefix of this process's consumer rows (``<scope>/<name>``), or none.
    consumer_scope: str = ""

    def __init__(self) -> None:
        self._consumers: set[str] = set()

    # -- what a backend provides ---------------------------------------------------------

    @abstractmethod
    def _read(self) -> AbstractContextManager[Connection]:
        """A connection for reads."""

    @abstractmethod
    def _write(self) -> AbstractContextManager[Connection]:
        """A connection for statements that each commit on their own."""

    @abstractmethod
    def _fold_transaction(self) -> AbstractContextManager[Connection]:
        """A connection inside one transaction that holds the write lock from its start."""

    @abstractmethod
    def close(self) -> None:
        """Release connections; a later call reopens them."""

    # -- the operations ------------------------------------------------------------------

    def _row(self, name: str) -> str:
        return f"{self.consumer_scope}/{name}" if self.consumer_scope else name

    def _ensure(self, name: str) -> str:
        """Register consumer ``name`` at offset 0 if it is new; its row's name."""
        row = self._row(name)
        if row not in self._consumers:
            with self._write() as conn:
                conn.execute(self.sql.add_consumer, (row,))
            self._consumers.add(row)
        return row

    def consumer_state(self, name: str) -> dict[str, Any]:
        """``offset``, ``counted``, ``duplicates``, ``lastClickTs`` of consumer ``name``."""
        row_name = self._ensure(name)
        with self._read() as conn:
            row = conn.execute(self.sql.consumer, (row_name,)).fetchone()
        assert row is not None
        return {
            "offset": int(row[0]),
            "counted": int(row[1]),
            "duplicates": int(row[2]),
            "lastClickTs": row[3],
        }

    @contextmanager
    def fold(self, name: str) -> Iterator[SqlCountsBatch]:
        """One fold's unit of work for consumer ``name``, under the write lock: committed
        on a clean exit, rolled back on an exception."""
        row_name = self._ensure(name)
        with self._fold_transaction() as conn:
            yield SqlCountsBatch(conn, self.sql, row_name)

    def counts(
        self, key: str, grain: str, first: int, last: int
    ) -> list[tuple[int, str, str, int]]:
        """``(bucket, dim, value, n)`` of ``key`` at ``grain`` with ``first <= bucket < last``."""
        with self._read() as conn:
            rows = conn.execute(self.sql.counts, (key, grain, first, last)).fetchall()
        return [(int(b), d, v, int(n)) for b, d, v, n in rows]

    def sketches(
        self, key: str, first_day: int | None = None, end: float | None = None
    ) -> list[bytes]:
        """The day sketches of ``key``: all of them, or those with ``first_day <= day < end``."""
        with self._read() as conn:
            if first_day is None or end is None:
                rows = conn.execute(self.sql.sketches, (key,)).fetchall()
            else:
                rows = conn.execute(self.sql.sketches_between, (key, first_day, end)).fetchall()
        return [bytes(blob) for (blob,) in rows]

    def clicks_since(self, keys: list[str], hour: int) -> dict[str, int]:
        """All clicks per key of ``keys`` in hour buckets from ``hour`` on (unclicked: absent)."""
        if not keys:
            return {}
        with self._read() as conn:
            rows = conn.execute(
                self.sql.clicks_since, (hour, self.sql.dialect.array(keys))
            ).fetchall()
        return {key: int(n) for key, n in rows}

    def link_totals(self, keys: list[str]) -> dict[str, tuple[int, int, int]]:
        """``(all clicks, human clicks, newest bucket)`` of each clicked key of ``keys``
        (unclicked keys absent), in chunks of 500 keys. The sums are the hourly roll-up's
        (what the stats' all-time totals add up); the newest bucket is the latest minute
        row, or the latest hour row once the minutes were forgotten."""
        out: dict[str, list[int]] = {}
        with self._read() as conn:
            for start in range(0, len(keys), 500):
                wanted = self.sql.dialect.array(keys[start : start + 500])
                for key, grain, dim, n, newest in conn.execute(
                    self.sql.link_totals, (wanted,)
                ).fetchall():
                    row = out.setdefault(key, [0, 0, 0])
                    if grain == "h":
                        row[0 if dim == "all" else 1] += int(n)
                    if dim == "all":
                        row[2] = max(row[2], int(newest))
        return {key: (row[0], row[1], row[2]) for key, row in out.items()}

    def top_keys(self, hour: int, limit: int) -> list[tuple[str, int]]:
        """The most clicked keys in hour buckets from ``hour`` on, most first (ties by key)."""
        with self._read() as conn:
            rows = conn.execute(self.sql.top_keys, (hour, limit)).fetchall()
        return [(k, int(n)) for k, n in rows]

    def forget(self, seen_before: float, minutes_before: float) -> None:
        """Drop seen ids stamped before ``seen_before``, minute rows before ``minutes_before``."""
        with self._write() as conn:
            for statement in self.sql.forget:
                conn.execute(statement, (seen_before,))
            conn.execute(self.sql.forget_minutes, (minutes_before,))
