"""The click counts on PostgreSQL: counters, visitor sketches, dedup records and offsets
that every API process of a fleet folds into and reads back.

The same contract as :class:`~lookup.shortener.analytics.counts.SqliteClickCounts`. A fold
is one transaction that first takes a transaction-scoped advisory lock (the counterpart
of SQLite's ``BEGIN IMMEDIATE``), so folds from several aggregators — in one process or
many — are serialised: a fold's read-merge-write of a visitor sketch can never lose
another fold's registers, and a consumer's offset is read and moved under the lock.

``consumer_scope`` keeps the offsets of aggregators that fold *different* click logs
apart: each API process of a fleet with its own embedded click log folds it into the
shared counters under its own consumer row (``<scope>/<name>``), while the counters,
sketches and dedup records are common to all.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import psycopg

from lookup.kit.postgres import PgPool, describe_url, ensure_schema

__all__ = ["PostgresClickCounts"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS click_counts (
    key     TEXT NOT NULL,
    grain   TEXT NOT NULL CHECK (grain IN ('m', 'h')),
    bucket  BIGINT NOT NULL,
    dim     TEXT NOT NULL,
    value   TEXT NOT NULL,
    n       BIGINT NOT NULL,
    PRIMARY KEY (key, grain, bucket, dim, value)
);
CREATE INDEX IF NOT EXISTS click_counts_by_bucket ON click_counts(grain, dim, bucket);
CREATE TABLE IF NOT EXISTS click_seen_events (
    event_id TEXT PRIMARY KEY,
    ts       DOUBLE PRECISION NOT NULL
);
CREATE INDEX IF NOT EXISTS click_seen_events_by_ts ON click_seen_events(ts);
CREATE TABLE IF NOT EXISTS click_seen_ranges (
    producer TEXT NOT NULL,
    lo       BIGINT NOT NULL,
    hi       BIGINT NOT NULL,
    ts       DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (producer, lo)
);
CREATE TABLE IF NOT EXISTS click_visitors (
    key     TEXT NOT NULL,
    day     BIGINT NOT NULL,
    sketch  BYTEA NOT NULL,
    PRIMARY KEY (key, day)
);
CREATE TABLE IF NOT EXISTS click_consumers (
    name        TEXT PRIMARY KEY,
    log_offset  BIGINT NOT NULL,
    counted     BIGINT NOT NULL,
    duplicates  BIGINT NOT NULL,
    last_ts     DOUBLE PRECISION
);
"""

#: One counter increment: ``(key, grain, bucket, dim, value, n)`` (as in :mod:`.counts`).
CountRow = tuple[str, str, int, str, str, int]

#: The advisory lock every fold takes first (one writer at a time, as in SQLite).
_FOLD_LOCK = "lookup.shortener.click_counts.fold"


class _PostgresBatch:
    def __init__(self, conn: psycopg.Connection[Any], name: str) -> None:
        self.conn = conn
        self.name = name

    def offset(self) -> int:
        row = self.conn.execute(
            "SELECT log_offset FROM click_consumers WHERE name = %s", (self.name,)
        ).fetchone()
        assert row is not None  # registered before the fold began
        return int(row[0])

    def seen_ranges(self, producer: str) -> list[tuple[int, int]]:
        rows = self.conn.execute(
            "SELECT lo, hi FROM click_seen_ranges WHERE producer = %s ORDER BY lo", (producer,)
        ).fetchall()
        return [(int(lo), int(hi)) for lo, hi in rows]

    def replace_ranges(self, producer: str, ranges: list[tuple[int, int]], ts: float) -> None:
        self.conn.execute("DELETE FROM click_seen_ranges WHERE producer = %s", (producer,))
        if ranges:
            with self.conn.cursor() as cur:
                cur.executemany(
                    "INSERT INTO click_seen_ranges (producer, lo, hi, ts) VALUES (%s, %s, %s, %s)",
                    [(producer, lo, hi, ts) for lo, hi in ranges],
                )

    def seen_event_ids(self, ids: list[str]) -> set[str]:
        if not ids:
            return set()
        rows = self.conn.execute(
            "SELECT event_id FROM click_seen_events WHERE event_id = ANY(%s)", (list(ids),)
        ).fetchall()
        return {row[0] for row in rows}

    def add_seen_events(self, events: list[tuple[str, float]]) -> None:
        if events:
            with self.conn.cursor() as cur:
                cur.executemany(
                    "INSERT INTO click_seen_events (event_id, ts) VALUES (%s, %s)", events
                )

    def add_counts(self, rows: Iterable[CountRow]) -> None:
        merged: dict[tuple[str, str, int, str, str], int] = {}
        for key, grain, bucket, dim, value, n in rows:  # one upsert per counter and batch
            merged[(key, grain, bucket, dim, value)] = (
                merged.get((key, grain, bucket, dim, value), 0) + n
            )
        if merged:
            with self.conn.cursor() as cur:
                cur.executemany(
                    "INSERT INTO click_counts (key, grain, bucket, dim, value, n)"
                    " VALUES (%s, %s, %s, %s, %s, %s)"
                    " ON CONFLICT (key, grain, bucket, dim, value)"
                    " DO UPDATE SET n = click_counts.n + excluded.n",
                    [(*k, n) for k, n in sorted(merged.items())],
                )

    def sketch(self, key: str, day: int) -> bytes | None:
        row = self.conn.execute(
            "SELECT sketch FROM click_visitors WHERE key = %s AND day = %s", (key, day)
        ).fetchone()
        return None if row is None else bytes(row[0])

    def put_sketch(self, key: str, day: int, registers: bytes) -> None:
        self.conn.execute(
            "INSERT INTO click_visitors (key, day, sketch) VALUES (%s, %s, %s)"
            " ON CONFLICT (key, day) DO UPDATE SET sketch = excluded.sketch",
            (key, day, registers),
        )

    def advance(self, offset: int, counted: int, duplicates: int, last_ts: float | None) -> None:
        self.conn.execute(
            "UPDATE click_consumers SET log_offset = %s, counted = counted + %s,"
            " duplicates = duplicates + %s,"
            " last_ts = GREATEST(COALESCE(last_ts, 0), COALESCE(%s::float8, 0))"
            " WHERE name = %s",
            (offset, counted, duplicates, last_ts, self.name),
        )


class PostgresClickCounts:
    """The click counts in one PostgreSQL database; thread-safe, shared by many processes."""

    def __init__(
        self,
        url: str,
        *,
        consumer_scope: str = "",
        pool_size: int = 4,
        pool_timeout_s: float = 2.0,
    ) -> None:
        self.url = url
        self.consumer_scope = consumer_scope
        ensure_schema(url, "lookup.shortener.click_counts", _SCHEMA, "the click counts")
        self._pool = PgPool(
            url, what="the click counts", max_size=pool_size, pool_timeout_s=pool_timeout_s
        )
        self._consumers: set[str] = set()

    def describe(self) -> str:
        """Where the counts live, without credentials."""
        return describe_url(self.url)

    def _row(self, name: str) -> str:
        return f"{self.consumer_scope}/{name}" if self.consumer_scope else name

    def _ensure(self, name: str) -> str:
        row = self._row(name)
        if row not in self._consumers:
            with self._pool.connection() as conn:
                conn.execute(
                    "INSERT INTO click_consumers (name, log_offset, counted, duplicates)"
                    " VALUES (%s, 0, 0, 0) ON CONFLICT (name) DO NOTHING",
                    (row,),
                )
            self._consumers.add(row)
        return row

    def consumer_state(self, name: str) -> dict[str, Any]:
        row_name = self._ensure(name)
        with self._pool.connection() as conn:
            row = conn.execute(
                "SELECT log_offset, counted, duplicates, last_ts FROM click_consumers"
                " WHERE name = %s",
                (row_name,),
            ).fetchone()
        assert row is not None
        return {
            "offset": int(row[0]),
            "counted": int(row[1]),
            "duplicates": int(row[2]),
            "lastClickTs": row[3],
        }

    @contextmanager
    def fold(self, name: str) -> Iterator[_PostgresBatch]:
        row_name = self._ensure(name)
        with self._pool.transaction() as conn:  # commits on a clean exit, rolls back otherwise
            conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (_FOLD_LOCK,))
            yield _PostgresBatch(conn, row_name)

    def counts(
        self, key: str, grain: str, first: int, last: int
    ) -> list[tuple[int, str, str, int]]:
        with self._pool.connection() as conn:
            rows = conn.execute(
                "SELECT bucket, dim, value, n FROM click_counts"
                " WHERE key = %s AND grain = %s AND bucket >= %s AND bucket < %s",
                (key, grain, first, last),
            ).fetchall()
        return [(int(b), d, v, int(n)) for b, d, v, n in rows]

    def sketches(
        self, key: str, first_day: int | None = None, end: float | None = None
    ) -> list[bytes]:
        with self._pool.connection() as conn:
            if first_day is None or end is None:
                rows = conn.execute(
                    "SELECT sketch FROM click_visitors WHERE key = %s", (key,)
                ).fetchall()
            else:
                rows = conn.execute(
                    "SELECT sketch FROM click_visitors WHERE key = %s AND day >= %s AND day < %s",
                    (key, first_day, end),
                ).fetchall()
        return [bytes(blob) for (blob,) in rows]

    def clicks_since(self, keys: list[str], hour: int) -> dict[str, int]:
        if not keys:
            return {}
        with self._pool.connection() as conn:
            rows = conn.execute(
                "SELECT key, SUM(n) FROM click_counts WHERE grain = 'h' AND dim = 'all'"
                " AND bucket >= %s AND key = ANY(%s) GROUP BY key",
                (hour, list(keys)),
            ).fetchall()
        return {key: int(n) for key, n in rows}

    def top_keys(self, hour: int, limit: int) -> list[tuple[str, int]]:
        with self._pool.connection() as conn:
            rows = conn.execute(
                "SELECT key, SUM(n) AS c FROM click_counts WHERE grain = 'h' AND dim = 'all'"
                " AND bucket >= %s GROUP BY key ORDER BY c DESC, key COLLATE \"C\" LIMIT %s",
                (hour, limit),
            ).fetchall()
        return [(k, int(n)) for k, n in rows]

    def forget(self, seen_before: float, minutes_before: float) -> None:
        with self._pool.connection() as conn:
            conn.execute("DELETE FROM click_seen_events WHERE ts < %s", (seen_before,))
            conn.execute("DELETE FROM click_seen_ranges WHERE ts < %s", (seen_before,))
            conn.execute(
                "DELETE FROM click_counts WHERE grain = 'm' AND bucket < %s", (minutes_before,)
            )

    def close(self) -> None:
        """Close the pool's connections (they reopen on next use)."""
        self._pool.close()
