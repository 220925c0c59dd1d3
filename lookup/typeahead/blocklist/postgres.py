"""The typeahead hot blocklist in PostgreSQL, shared by every process of a fleet.

``typeahead_blocklist`` holds one row per phrase; ``typeahead_blocklist_rev`` one counter.
An edit first locks the counter's row (so edits queue one behind the other and never
deadlock on each other's phrases), applies its inserts and deletes to the table, and
bumps the counter in the same transaction when something changed. A process polls the
counter (:meth:`PostgresHotTermSource.stamp`, one indexed row) and re-reads the phrases
only when it moved (see :mod:`lookup.typeahead.blocklist`).
"""

from __future__ import annotations

import time
from collections.abc import Iterable

from lookup.kit.engines.postgres import PgPool, describe_url, ensure_schema
from lookup.kit.engines.storeurl import StoreUrl

__all__ = ["PostgresHotTermSource"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS typeahead_blocklist (
    term      TEXT PRIMARY KEY,
    added_at  DOUBLE PRECISION NOT NULL
);
CREATE TABLE IF NOT EXISTS typeahead_blocklist_rev (
    id   SMALLINT PRIMARY KEY CHECK (id = 1),
    rev  BIGINT NOT NULL
);
INSERT INTO typeahead_blocklist_rev (id, rev) VALUES (1, 0) ON CONFLICT (id) DO NOTHING;
"""


class PostgresHotTermSource:
    """Hot blocklist phrases in one PostgreSQL database (see the module docstring)."""

    #: Short: an edit or a poll must not wait long for a server that is gone (the last
    #: list read keeps being enforced meanwhile; an edit answers 503).
    POOL_TIMEOUT_S = 1.0

    def __init__(self, url: str, *, pool_timeout_s: float = POOL_TIMEOUT_S) -> None:
        self.url = url
        what = "the typeahead blocklist"
        # The advisory lock keeps the old module's name: processes of both releases queue.
        ensure_schema(url, "lookup.typeahead.blocklist", _SCHEMA, what)
        self._pool = PgPool(url, what=what, max_size=2, pool_timeout_s=pool_timeout_s)

    @classmethod
    def from_url(cls, url: StoreUrl) -> PostgresHotTermSource:
        """The list in the database ``url`` names."""
        return cls(url.url)

    def describe(self) -> str:
        return describe_url(self.url)

    def stamp(self) -> object:
        with self._pool.connection() as conn:
            row = conn.execute("SELECT rev FROM typeahead_blocklist_rev WHERE id = 1").fetchone()
        return None if row is None else int(row[0])

    def terms(self) -> list[str]:
        with self._pool.connection() as conn:
            rows = conn.execute("SELECT term FROM typeahead_blocklist ORDER BY term").fetchall()
        return [str(r[0]) for r in rows]

    def edit(self, add: Iterable[str], remove: Iterable[str]) -> tuple[list[str], list[str]]:
        wanted_remove = sorted(set(remove))
        wanted_add = [t for t in dict.fromkeys(add) if t not in set(wanted_remove)]
        with self._pool.transaction() as conn:
            conn.execute("SELECT rev FROM typeahead_blocklist_rev WHERE id = 1 FOR UPDATE")
            removed = {
                str(r[0])
                for r in conn.execute(
                    "DELETE FROM typeahead_blocklist WHERE term = ANY(%s) RETURNING term",
                    (wanted_remove,),
                ).fetchall()
            }
            inserted = {
                str(r[0])
                for r in conn.execute(
                    "INSERT INTO typeahead_blocklist (term, added_at)"
                    " SELECT t, %s FROM unnest(%s::text[]) AS t"
                    " ON CONFLICT (term) DO NOTHING RETURNING term",
                    (time.time(), wanted_add),
                ).fetchall()
            }
            if inserted or removed:
                conn.execute("UPDATE typeahead_blocklist_rev SET rev = rev + 1 WHERE id = 1")
        return [t for t in wanted_add if t in inserted], sorted(removed)

    def close(self) -> None:
        self._pool.close()
