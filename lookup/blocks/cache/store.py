"""The source of truth behind the cache experiments: a SQLite table that counts its loads.

Every experiment measures *store load* — how many reads reach the database, and when —
so :class:`BackingStore` records the time of every read. ``read_latency_s`` holds each
read for that long outside the lock: the cost of a query on a loaded database, which is
what makes a stampede's window of simultaneous misses exist at all (a SQLite read on
this machine takes microseconds).
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

from lookup.kit.engines.sqlite import connect

__all__ = ["BackingStore"]


class BackingStore:
    """``items(key, value)`` in a SQLite file; ``loads`` are the monotonic times of reads."""

    def __init__(self, path: str | Path, *, read_latency_s: float = 0.0) -> None:
        self.path = Path(path)
        self.read_latency_s = read_latency_s
        self._conn = connect(self.path)
        self._conn.execute("CREATE TABLE IF NOT EXISTS items (key TEXT PRIMARY KEY, value TEXT)")
        self._lock = threading.Lock()
        self.loads: list[float] = []
        self.writes = 0

    def get(self, key: str) -> str | None:
        """The value of ``key`` (None if absent); counted as one load."""
        if self.read_latency_s:
            time.sleep(self.read_latency_s)
        with self._lock:
            self.loads.append(time.monotonic())
            row = self._conn.execute("SELECT value FROM items WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def put(self, key: str, value: str) -> None:
        with self._lock:
            self._conn.execute(
                "INSERT INTO items (key, value) VALUES (?, ?) "
                "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                (key, value),
            )
            self.writes += 1

    def put_many(self, items: list[tuple[str, str]]) -> None:
        """One transaction for a batch (the write-behind flush)."""
        with self._lock:
            self._conn.execute("BEGIN")
            self._conn.executemany(
                "INSERT INTO items (key, value) VALUES (?, ?) "
                "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                items,
            )
            self._conn.execute("COMMIT")
            self.writes += len(items)

    def keys(self) -> set[str]:
        with self._lock:
            return {str(r[0]) for r in self._conn.execute("SELECT key FROM items")}

    def reset_counts(self) -> None:
        with self._lock:
            self.loads = []
            self.writes = 0

    def close(self) -> None:
        self._conn.close()
