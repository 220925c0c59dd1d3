"""The rule store in the links' SQLite file (``sqlite:///…/links.sqlite3``).

Same file, same per-file writer lock as the link store
(:func:`~lookup.kit.engines.sqlitewriter.writer_lock`), a table of its own.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any

from lookup.kit.engines.sqlite import ConnectionPool, connect
from lookup.kit.engines.sqlitewriter import writer_lock
from lookup.kit.engines.storeurl import StoreUrl
from lookup.shortener.rules.sql import Connection, RuleDialect, RuleSql, SqlRuleStore

__all__ = ["SQLITE", "SqliteRuleStore"]

SQLITE = RuleDialect(name="sqlite")


class SqliteRuleStore(SqlRuleStore):
    """Rules in a SQLite file; thread-safe (a connection per thread)."""

    sql = RuleSql(SQLITE)

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        synchronous: str = "NORMAL",
        busy_timeout_ms: int = 10_000,
    ) -> None:
        self.path = str(path)
        self.synchronous = synchronous.upper()
        self.busy_timeout_ms = busy_timeout_ms
        self._pool = ConnectionPool(self.path, self._open)
        self._writer = writer_lock(self.path)
        with self._writer:
            self._pool.get().executescript(self.sql.schema)

    @classmethod
    def from_url(cls, url: StoreUrl, **options: Any) -> SqliteRuleStore:
        """The store in the file ``url`` names."""
        assert url.path is not None
        return cls(url.path, **options)

    def _open(self) -> Any:
        return connect(
            self.path, synchronous=self.synchronous, busy_timeout_ms=self.busy_timeout_ms
        )

    def _read(self) -> AbstractContextManager[Connection]:
        return nullcontext(self._pool.get())

    @contextmanager
    def _write(self) -> Iterator[Connection]:
        conn = self._pool.get()
        with self._writer:
            yield conn

    def describe(self) -> str:
        """Where the rules live."""
        return self.path

    def close(self) -> None:
        """Close every connection (they reopen on next use)."""
        self._pool.close()
