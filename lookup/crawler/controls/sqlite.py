"""The crawl controls log in one SQLite file, ``DIR/controls.sqlite``: the embedded crawl's.

A separate file next to the crawl's own state (``DIR/crawl.sqlite``), so the API appending
a command never takes the crawl writer's lock; WAL lets the API write while the crawler
reads. ``INTEGER PRIMARY KEY AUTOINCREMENT`` gives the commands their versions (never
reused), and every worker upserts the version it has applied.
"""

from __future__ import annotations

import time
from contextlib import closing
from pathlib import Path

from lookup.crawler.controls import Ack, ControlCommand, ControlRecord, validate
from lookup.kit.engines.sqlite import ConnectionPool
from lookup.kit.engines.storeurl import StoreUrl

__all__ = ["SqliteCrawlControls"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS controls (
    version INTEGER PRIMARY KEY AUTOINCREMENT,
    at      REAL NOT NULL,
    command TEXT NOT NULL,
    target  TEXT NOT NULL,
    value   REAL,
    note    TEXT NOT NULL DEFAULT ''
);
CREATE TABLE IF NOT EXISTS control_acks (
    worker  TEXT PRIMARY KEY,
    version INTEGER NOT NULL,
    at      REAL NOT NULL
);
"""


class SqliteCrawlControls:
    """The controls log in one SQLite file (WAL: the API writes while the crawler reads)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._pool = ConnectionPool(self.path)
        with closing(self._pool.get().cursor()) as cur:
            cur.executescript(_SCHEMA)

    @classmethod
    def from_url(cls, url: StoreUrl) -> SqliteCrawlControls:
        """The controls in the file ``url`` names."""
        assert url.path is not None  # parse_store_url gives every sqlite URL its path
        return cls(url.path)

    def issue(self, cmd: ControlCommand) -> ControlRecord:
        cmd = validate(cmd)
        at = time.time()
        cur = self._pool.get().execute(
            "INSERT INTO controls (at, command, target, value, note) VALUES (?, ?, ?, ?, ?)",
            (at, cmd.command, cmd.target, cmd.value, cmd.note),
        )
        assert cur.lastrowid is not None
        return ControlRecord(int(cur.lastrowid), at, cmd.command, cmd.target, cmd.value, cmd.note)

    def since(self, version: int) -> list[ControlRecord]:
        rows = self._pool.get().execute(
            "SELECT version, at, command, target, value, note FROM controls"
            " WHERE version > ? ORDER BY version",
            (int(version),),
        )
        return [ControlRecord(*row) for row in rows]

    def acknowledge(self, worker: str, version: int) -> None:
        self._pool.get().execute(
            "INSERT INTO control_acks (worker, version, at) VALUES (?, ?, ?)"
            " ON CONFLICT (worker) DO UPDATE SET version = max(version, excluded.version),"
            " at = excluded.at",
            (worker, int(version), time.time()),
        )

    def acks(self) -> list[Ack]:
        rows = self._pool.get().execute(
            "SELECT worker, version, at FROM control_acks ORDER BY worker"
        )
        return [Ack(*row) for row in rows]

    def close(self) -> None:
        self._pool.close()
