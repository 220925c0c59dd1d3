"""The click counts in one SQLite file: the embedded default (``sqlite:///path``,
``clickstats.sqlite3``).

WAL (readers never block the folds), synchronous NORMAL, a 10 s busy timeout and one
connection per thread; a fold is ``BEGIN IMMEDIATE`` … ``COMMIT``, so it holds the file's
write lock from its first statement and aggregators in several processes take turns.
The statements and the operations are :mod:`~lookup.shortener.analytics.clickcounts.sql`'s;
this module says how SQLite spells them and how it connects.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any

from lookup.kit.engines.sqlite import ConnectionPool
from lookup.kit.engines.storeurl import StoreUrl
from lookup.shortener.analytics.clickcounts.sql import (
    Connection,
    CountsSql,
    Dialect,
    SqlClickCounts,
)

__all__ = ["SQLITE", "SqliteClickCounts"]

SQLITE = Dialect(
    name="sqlite",
    tables={
        "counts": "counts",
        "seen_events": "seen_events",
        "seen_ranges": "seen_ranges",
        "visitors": "visitors",
        "consumers": "consumer",
    },
    types={"bigint": "INTEGER", "real": "REAL", "blob": "BLOB", "without_rowid": " WITHOUT ROWID"},
    greatest="MAX",
    float_value="?",
    byte_order="",  # TEXT sorts by bytes already
    merge_counts=False,  # one writer at a time: the rows go in as they come
)


class SqliteClickCounts(SqlClickCounts):
    """The counts in one SQLite file (WAL, synchronous NORMAL); thread- and process-safe."""

    sql = CountsSql(SQLITE)

    def __init__(self, path: str | os.PathLike[str]) -> None:
        super().__init__()
        self.path = str(path)
        self._pool = ConnectionPool(self.path)  # WAL, synchronous NORMAL, 10 s busy timeout
        self._conn().executescript(self.sql.schema)

    @classmethod
    def from_url(cls, url: StoreUrl, **options: Any) -> SqliteClickCounts:
        """The counts in the file ``url`` names (``sqlite:///path``)."""
        assert url.path is not None
        return cls(url.path, **options)

    def _conn(self) -> sqlite3.Connection:
        """This thread's connection."""
        return self._pool.get()

    def _read(self) -> AbstractContextManager[Connection]:
        return nullcontext(self._conn())

    def _write(self) -> AbstractContextManager[Connection]:
        return nullcontext(self._conn())

    @contextmanager
    def _fold_transaction(self) -> Iterator[Connection]:
        conn = self._conn()
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield conn
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    def close(self) -> None:
        """Close every connection (they reopen on next use)."""
        self._pool.close()
