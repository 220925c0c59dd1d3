"""The click counts on PostgreSQL (``postgresql://…``): counters, visitor sketches, dedup
records and offsets that every API process of a fleet folds into and reads back.

The same statements and guarantees as the SQLite store
(:mod:`~lookup.shortener.analytics.clickcounts.sql`). A fold is one transaction that first
takes a transaction-scoped advisory lock (the counterpart of SQLite's ``BEGIN
IMMEDIATE``), so folds from several aggregators — in one process or many — are
serialised: a fold's read-merge-write of a visitor sketch can never lose another fold's
registers, and a consumer's offset is read and moved under the lock.

``consumer_scope`` keeps the offsets of aggregators that fold *different* click logs
apart: each API process of a fleet with its own embedded click log folds it into the
shared counters under its own consumer row (``<scope>/<name>``), while the counters,
sketches and dedup records are common to all.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any

from lookup.kit.engines.postgres import PgPool, describe_url, ensure_schema
from lookup.kit.engines.storeurl import StoreUrl
from lookup.shortener.analytics.clickcounts.sql import (
    Connection,
    CountsSql,
    Dialect,
    SqlClickCounts,
)

__all__ = ["POSTGRES", "PostgresClickCounts"]

POSTGRES = Dialect(
    name="postgresql",
    tables={
        "counts": "click_counts",
        "seen_events": "click_seen_events",
        "seen_ranges": "click_seen_ranges",
        "visitors": "click_visitors",
        "consumers": "click_consumers",
    },
    types={"bigint": "BIGINT", "real": "DOUBLE PRECISION", "blob": "BYTEA", "without_rowid": ""},
    greatest="GREATEST",
    float_value="?::float8",  # a None would leave the parameter's type unknown
    byte_order=' COLLATE "C"',  # byte order, as SQLite sorts
    merge_counts=True,  # one upsert per counter and fold, in key order
)

#: The advisory lock every fold takes first (one writer at a time, as in SQLite).
_FOLD_LOCK = "lookup.shortener.click_counts.fold"


class PostgresClickCounts(SqlClickCounts):
    """The click counts in one PostgreSQL database; thread-safe, shared by many processes."""

    sql = CountsSql(POSTGRES)

    def __init__(
        self,
        url: str,
        *,
        consumer_scope: str = "",
        pool_size: int = 4,
        pool_timeout_s: float = 2.0,
    ) -> None:
        super().__init__()
        self.url = url
        self.consumer_scope = consumer_scope
        ensure_schema(url, "lookup.shortener.click_counts", self.sql.schema, "the click counts")
        self._pool = PgPool(
            url, what="the click counts", max_size=pool_size, pool_timeout_s=pool_timeout_s
        )

    @classmethod
    def from_url(cls, url: StoreUrl, **options: Any) -> PostgresClickCounts:
        """The counts in the database ``url`` names; ``options``: ``consumer_scope``,
        ``pool_size``, ``pool_timeout_s``."""
        return cls(url.url, **options)

    def describe(self) -> str:
        """Where the counts live, without credentials."""
        return describe_url(self.url)

    # -- connections: autocommit for one statement, BEGIN … COMMIT for a fold ------------

    def _read(self) -> AbstractContextManager[Connection]:
        return self._pool.connection()

    def _write(self) -> AbstractContextManager[Connection]:
        return self._pool.connection()

    @contextmanager
    def _fold_transaction(self) -> Iterator[Connection]:
        with self._pool.transaction() as conn:  # commits on a clean exit, rolls back otherwise
            conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (_FOLD_LOCK,))
            yield conn

    def close(self) -> None:
        """Close the pool's connections (they reopen on next use)."""
        self._pool.close()
