"""Recent searches in an embedded SQLite file (the default: ``<data-dir>/typeahead/recent.db``)."""

from __future__ import annotations

from pathlib import Path

from lookup.kit.engines.sqlite import ConnectionPool
from lookup.kit.engines.storeurl import StoreUrl
from lookup.typeahead.recent import RecentSearch

__all__ = ["SqliteRecentStore"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS typeahead_recent (
    user_id TEXT NOT NULL,
    market  TEXT NOT NULL,
    query   TEXT NOT NULL,
    at      REAL NOT NULL,
    PRIMARY KEY (user_id, market, query)
);
CREATE INDEX IF NOT EXISTS typeahead_recent_by_time ON typeahead_recent (user_id, market, at);
"""


class SqliteRecentStore:
    """The :class:`~lookup.typeahead.recent.RecentStore` in one SQLite file."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._pool = ConnectionPool(self.path)
        self._pool.get().executescript(_SCHEMA)

    @classmethod
    def from_url(cls, url: StoreUrl) -> SqliteRecentStore:
        """The store in the file ``url`` names."""
        assert url.path is not None
        return cls(url.path)

    def describe(self) -> str:
        return f"sqlite:///{self.path}"

    def add(self, user: str, market: str, query: str, at: float, keep: int) -> None:
        conn = self._pool.get()
        with conn:
            conn.execute("BEGIN IMMEDIATE")
            conn.execute(
                "INSERT INTO typeahead_recent (user_id, market, query, at) VALUES (?, ?, ?, ?)"
                " ON CONFLICT (user_id, market, query) DO UPDATE SET at = excluded.at",
                (user, market, query, at),
            )
            conn.execute(
                "DELETE FROM typeahead_recent WHERE user_id = ? AND market = ? AND query NOT IN"
                " (SELECT query FROM typeahead_recent WHERE user_id = ? AND market = ?"
                "  ORDER BY at DESC, query LIMIT ?)",
                (user, market, user, market, keep),
            )

    def recent(self, user: str, market: str, limit: int) -> list[RecentSearch]:
        rows = (
            self._pool.get()
            .execute(
                "SELECT query, at FROM typeahead_recent WHERE user_id = ? AND market = ?"
                " ORDER BY at DESC, query LIMIT ?",
                (user, market, limit),
            )
            .fetchall()
        )
        return [RecentSearch(str(q), float(at)) for q, at in rows]

    def clear(self, user: str) -> int:
        conn = self._pool.get()
        with conn:
            return int(
                conn.execute("DELETE FROM typeahead_recent WHERE user_id = ?", (user,)).rowcount
            )

    def close(self) -> None:
        self._pool.close()
