"""Recent searches in PostgreSQL, shared by every API process of a fleet."""

from __future__ import annotations

from lookup.kit.engines.postgres import PgPool, describe_url, ensure_schema
from lookup.kit.engines.storeurl import StoreUrl
from lookup.typeahead.recent import RecentSearch

__all__ = ["PostgresRecentStore"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS typeahead_recent (
    user_id TEXT NOT NULL,
    market  TEXT NOT NULL,
    query   TEXT NOT NULL,
    at      DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (user_id, market, query)
);
CREATE INDEX IF NOT EXISTS typeahead_recent_by_time ON typeahead_recent (user_id, market, at);
"""


class PostgresRecentStore:
    """The :class:`~lookup.typeahead.recent.RecentStore` in one PostgreSQL database."""

    def __init__(self, url: str) -> None:
        self.url = url
        what = "the typeahead recent searches"
        ensure_schema(url, "lookup.typeahead.recent", _SCHEMA, what)
        self._pool = PgPool(url, what=what, max_size=4)

    @classmethod
    def from_url(cls, url: StoreUrl) -> PostgresRecentStore:
        """The store in the database ``url`` names."""
        return cls(url.url)

    def describe(self) -> str:
        return describe_url(self.url)

    def add(self, user: str, market: str, query: str, at: float, keep: int) -> None:
        with self._pool.transaction() as conn:
            # one device's writes queue behind each other, so the bound holds
            conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (user,))
            conn.execute(
                "INSERT INTO typeahead_recent (user_id, market, query, at) VALUES (%s, %s, %s, %s)"
                " ON CONFLICT (user_id, market, query) DO UPDATE SET at = excluded.at",
                (user, market, query, at),
            )
            conn.execute(
                "DELETE FROM typeahead_recent WHERE user_id = %s AND market = %s AND query NOT IN"
                " (SELECT query FROM typeahead_recent WHERE user_id = %s AND market = %s"
                "  ORDER BY at DESC, query LIMIT %s)",
                (user, market, user, market, keep),
            )

    def recent(self, user: str, market: str, limit: int) -> list[RecentSearch]:
        with self._pool.connection() as conn:
            rows = conn.execute(
                "SELECT query, at FROM typeahead_recent WHERE user_id = %s AND market = %s"
                " ORDER BY at DESC, query LIMIT %s",
                (user, market, limit),
            ).fetchall()
        return [RecentSearch(str(q), float(at)) for q, at in rows]

    def clear(self, user: str) -> int:
        with self._pool.transaction() as conn:
            cur = conn.execute("DELETE FROM typeahead_recent WHERE user_id = %s", (user,))
            return int(cur.rowcount)

    def close(self) -> None:
        self._pool.close()
