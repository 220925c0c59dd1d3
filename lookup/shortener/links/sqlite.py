"""The link store in one SQLite file: the embedded default (``sqlite:///path``).

One file in WAL mode (readers never block the writer), one connection per thread, an
in-process writer lock so the threads of one process queue without SQLite's busy-handler
sleeps (:mod:`lookup.kit.engines.sqlitewriter`), ``busy_timeout`` so writers of different processes
queue instead of failing, and ``BEGIN IMMEDIATE`` for every multi-statement write so a
transaction takes the write lock before it reads — which is also why a create needs no
lock of its own on its Idempotency-Key: there is one writer at a time. With
``synchronous=NORMAL`` a commit survives the death of the process (the SIGKILL test
checks it); a power cut may lose the last few commits.

The statements and the operations are :mod:`lookup.shortener.links.sql`'s; this module
says how SQLite spells them and how it connects. The id allocator's range leases live
in the same file (:class:`lookup.kit.idblocks.sqlite.SqliteIdAllocator`).
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any

from lookup.kit.engines.sqlite import SYNCHRONOUS_LEVELS, ConnectionPool, connect
from lookup.kit.engines.sqlitewriter import WalCheckpointer, writer_lock
from lookup.kit.engines.storeurl import StoreUrl
from lookup.shortener.links.sql import Connection, Dialect, LinkSql, SqlLinkStore
from lookup.shortener.links.sqldomains import FOLD_COLUMNS, FOLD_SCHEMA, fill_folds

__all__ = ["SQLITE", "SqliteLinkStore"]

SQLITE = Dialect(
    name="sqlite",
    types={
        "key": "TEXT",
        "bigint": "INTEGER",
        "boolean": "INTEGER",
        "false": "0",
        "true": "1",
        "real": "REAL",
        "json": "TEXT",
        "serial": "INTEGER PRIMARY KEY AUTOINCREMENT",
    },
    json_value="?",
    json_text="{column}",
    lock_rows="",  # BEGIN IMMEDIATE holds the whole file
    has_tag="EXISTS (SELECT 1 FROM json_each(links.tags) WHERE value = ?)",
    claim_with_audit=False,  # no INSERT inside WITH
    expire_in_one=False,  # RETURNING cannot name the FROM table
)

#: Columns added after the first release, with their definitions (added on open).
_ADDED_COLUMNS = {
    "scan_reasons": "TEXT NOT NULL DEFAULT '[]'",
    "forward_query": "INTEGER NOT NULL DEFAULT 1",
    "forward_path": "INTEGER NOT NULL DEFAULT 0",
    **FOLD_COLUMNS,
}


class SqliteLinkStore(SqlLinkStore):
    """SQLite link store; safe to share between threads (each thread gets its own connection)."""

    sql = LinkSql(SQLITE)

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        synchronous: str = "NORMAL",
        busy_timeout_ms: int = 10_000,
        idempotency_ttl_s: float = 86_400.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if synchronous.upper() not in SYNCHRONOUS_LEVELS:
            raise ValueError(f"unknown synchronous mode {synchronous!r}")
        super().__init__(idempotency_ttl_s=idempotency_ttl_s, clock=clock)
        self.path = str(path)
        self.synchronous = synchronous.upper()
        self.busy_timeout_ms = busy_timeout_ms
        self._pool = ConnectionPool(self.path, self._open)
        self._writer = writer_lock(self.path)
        self.checkpointer = WalCheckpointer(self.path, busy_timeout_ms=busy_timeout_ms)
        conn = self._conn()
        with self._writer:
            conn.executescript(self.sql.schema)
            have = {row[1] for row in conn.execute("PRAGMA table_info(links)")}
            for column, definition in _ADDED_COLUMNS.items():
                if column not in have:  # a database from before the column existed
                    conn.execute(f"ALTER TABLE links ADD COLUMN {column} {definition}")
            conn.executescript(FOLD_SCHEMA.format(**SQLITE.types))
            fill_folds(conn)  # rows from before keys were case-insensitive
        #: Keys that answer to their exact spelling only (see ``sqldomains``).
        self.case_collisions = self.exact_only_keys()

    @classmethod
    def from_url(cls, url: StoreUrl, **options: Any) -> SqliteLinkStore:
        """The store in the file ``url`` names (``sqlite:///path``)."""
        assert url.path is not None
        return cls(url.path, **options)

    # -- connections -------------------------------------------------------------------

    def _open(self) -> sqlite3.Connection:
        conn = connect(
            self.path, synchronous=self.synchronous, busy_timeout_ms=self.busy_timeout_ms
        )
        conn.execute("PRAGMA foreign_keys = ON")
        self.checkpointer.prepare(conn)
        return conn

    def _conn(self) -> sqlite3.Connection:
        return self._pool.get()

    def _read(self) -> AbstractContextManager[Connection]:
        return nullcontext(self._conn())

    @contextmanager
    def _write(self) -> Iterator[Connection]:
        """One statement under this process's writer lock (it commits on its own)."""
        conn = self._conn()
        with self._writer:
            yield conn
        self.checkpointer.committed()

    @contextmanager
    def _transaction(self) -> Iterator[Connection]:
        """A write transaction that holds the write lock from its first statement.

        The threads of this process queue on an in-process lock first (see
        :mod:`lookup.kit.engines.sqlitewriter`), so only writers of *other* processes ever meet
        SQLite's busy handler and its sleeps; the WAL is checkpointed by a background
        thread, never inside a commit (see
        :class:`lookup.kit.engines.sqlitewriter.WalCheckpointer`).
        """
        conn = self._conn()
        with self._writer:
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
        self.checkpointer.committed()

    def close(self) -> None:
        """Close every connection this store opened (in any thread); later calls reopen."""
        self.checkpointer.stop()
        self._pool.close()
