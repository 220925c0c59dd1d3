"""Id blocks in a SQLite file (``sqlite:///path``): the embedded default.

The counter is a row of the ``id_allocator`` table, in the same file as the link store
(whose owner sets the journal mode). See :mod:`lookup.kit.idblocks`.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from typing import Any

from lookup.kit.engines.sqlite import connect
from lookup.kit.engines.sqlitewriter import writer_lock
from lookup.kit.engines.storeurl import StoreUrl
from lookup.kit.idblocks import BlockSpender, IdBlock

__all__ = ["SqliteIdAllocator"]


class SqliteIdAllocator(BlockSpender):
    """Range-leased ids from one allocator row in a SQLite database.

    ``lease()`` moves the row forward by ``block_size`` in one atomic
    ``UPDATE ... RETURNING`` statement, so concurrent processes (each with its own
    allocator) always get disjoint blocks. ``next_id()`` spends the current block in
    memory and leases a new one when it runs out. Ids left in a block when a process
    dies are never handed out again: a gap, never a duplicate.
    """

    def __init__(
        self,
        db_path: str | os.PathLike[str],
        name: str = "default",
        *,
        block_size: int = 10_000,
        limit: int | None = None,
        start: int = 0,
    ) -> None:
        super().__init__(name, block_size=block_size, limit=limit)
        self.db_path = str(db_path)
        self._db_lock = threading.Lock()
        self._start = start
        self._conn: sqlite3.Connection | None = None
        with self._db_lock, writer_lock(self.db_path):
            self._connect()

    @classmethod
    def from_url(cls, url: StoreUrl, name: str = "default", **options: Any) -> SqliteIdAllocator:
        """The allocator of the row ``name`` in the file ``url`` names (``sqlite:///path``)."""
        assert url.path is not None
        return cls(url.path, name, **options)

    def _connect(self) -> sqlite3.Connection:
        if self._conn is None:
            # The table shares a file whose journal mode its owner sets (the link store).
            conn = connect(self.db_path, wal=False, synchronous=None, busy_timeout_ms=10_000)
            conn.execute(
                "CREATE TABLE IF NOT EXISTS id_allocator ("
                " name TEXT PRIMARY KEY, next_id INTEGER NOT NULL)"
            )
            conn.execute(
                "INSERT INTO id_allocator(name, next_id) VALUES (?, ?)"
                " ON CONFLICT(name) DO NOTHING",
                (self.name, self._start),
            )
            self._conn = conn
        return self._conn

    def lease(self) -> IdBlock:
        """Take the next block from the allocator row (one atomic statement)."""
        with self._db_lock, writer_lock(self.db_path):
            rows = (
                self._connect()
                .execute(
                    "UPDATE id_allocator SET next_id = next_id + ?"
                    " WHERE name = ? RETURNING next_id",
                    (self.block_size, self.name),
                )
                .fetchall()
            )  # step to the end, so the statement completes and commits
            if not rows:
                raise RuntimeError(f"allocator row {self.name!r} disappeared")
            return self._leased(int(rows[0][0]))

    def close(self) -> None:
        """Close the connection (reopened on the next lease); the current block stays usable."""
        with self._db_lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
