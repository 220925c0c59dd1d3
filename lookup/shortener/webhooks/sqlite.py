"""The webhook store in SQLite (``sqlite:///path``): the embedded default.

Its tables live in the link store's file (``links.sqlite3``), so they share its writer
lock (:func:`~lookup.kit.engines.sqlitewriter.writer_lock`) and its durability: WAL,
``synchronous=NORMAL`` — a commit survives the death of the process. Every write is a
``BEGIN IMMEDIATE`` transaction, so a claim or a batch has the file to itself.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any

from lookup.kit.engines.sqlite import ConnectionPool, connect
from lookup.kit.engines.sqlitewriter import writer_lock
from lookup.kit.engines.storeurl import StoreUrl
from lookup.shortener.webhooks.sql import Connection, SqlWebhookStore, WebhookDialect, schema

__all__ = ["SQLITE", "SqliteWebhookStore"]

SQLITE = WebhookDialect(
    name="sqlite",
    serial="INTEGER PRIMARY KEY AUTOINCREMENT",
    real="REAL",
    placeholder="?",
    skip_locked="",  # BEGIN IMMEDIATE holds the whole file
)


class SqliteWebhookStore(SqlWebhookStore):
    """Webhook tables in one SQLite file; each thread has its own connection."""

    dialect = SQLITE

    def __init__(self, path: str | os.PathLike[str], *, busy_timeout_ms: int = 10_000) -> None:
        self.path = str(path)
        self.busy_timeout_ms = busy_timeout_ms
        self._pool = ConnectionPool(self.path, self._open)
        self._writer = writer_lock(self.path)
        with self._writer:
            self._pool.get().executescript(schema(SQLITE))

    @classmethod
    def from_url(cls, url: StoreUrl, **options: Any) -> SqliteWebhookStore:
        """The store in the file ``url`` names."""
        assert url.path is not None
        return cls(url.path, **options)

    def _open(self) -> sqlite3.Connection:
        return connect(self.path, synchronous="NORMAL", busy_timeout_ms=self.busy_timeout_ms)

    def _read(self) -> AbstractContextManager[Connection]:
        return nullcontext(self._pool.get())

    @contextmanager
    def _transaction(self) -> Iterator[Connection]:
        conn = self._pool.get()
        with self._writer:
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    def describe(self) -> str:
        """Where the webhooks live."""
        return "embedded"

    def close(self) -> None:
        """Close every connection (later calls reopen)."""
        self._pool.close()
