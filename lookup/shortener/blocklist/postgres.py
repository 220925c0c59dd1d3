"""The shortener's domain blocklist in PostgreSQL, shared by every process of a fleet.

``shortener_blocklist`` holds one row per blocked domain; ``shortener_blocklist_rev``
one counter that every edit bumps in the same transaction. A process polls the counter
(:meth:`PostgresBlocklistSource.stamp`) and re-reads the domains only when it moved, so
an edit made through any process is enforced by all of them at their next poll (see
:mod:`lookup.shortener.blocklist`).
"""

from __future__ import annotations

import time
from collections.abc import Iterable

from lookup.kit.engines.postgres import PgPool, describe_url, ensure_schema
from lookup.kit.engines.storeurl import StoreUrl
from lookup.shortener.blocklist import Clean

__all__ = ["PostgresBlocklistSource"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS shortener_blocklist (
    domain    TEXT PRIMARY KEY,
    added_at  DOUBLE PRECISION NOT NULL
);
CREATE TABLE IF NOT EXISTS shortener_blocklist_rev (
    id   SMALLINT PRIMARY KEY CHECK (id = 1),
    rev  BIGINT NOT NULL
);
INSERT INTO shortener_blocklist_rev (id, rev) VALUES (1, 0) ON CONFLICT (id) DO NOTHING;
"""


class PostgresBlocklistSource:
    """Blocked domains in one PostgreSQL database (see the module docstring)."""

    #: Short: a create's blocklist check must not wait long for a server that is gone
    #: (the last list it read keeps being enforced meanwhile).
    POOL_TIMEOUT_S = 0.5

    def __init__(self, url: str, *, pool_timeout_s: float = POOL_TIMEOUT_S) -> None:
        self.url = url
        # The advisory lock keeps the old module's name: processes of both releases queue.
        ensure_schema(url, "lookup.shortener.blocklist", _SCHEMA, "the blocklist")
        self._pool = PgPool(url, what="the blocklist", max_size=2, pool_timeout_s=pool_timeout_s)

    @classmethod
    def from_url(cls, url: StoreUrl) -> PostgresBlocklistSource:
        """The list in the database ``url`` names."""
        return cls(url.url)

    def describe(self) -> str:
        return describe_url(self.url)

    def stamp(self) -> object:
        with self._pool.connection() as conn:
            row = conn.execute("SELECT rev FROM shortener_blocklist_rev WHERE id = 1").fetchone()
        return None if row is None else int(row[0])

    def entries(self, clean: Clean) -> frozenset[str]:
        with self._pool.connection() as conn:
            rows = conn.execute("SELECT domain FROM shortener_blocklist").fetchall()
        return frozenset(clean(str(r[0])) for r in rows) - {""}

    def edit(
        self, add: Iterable[str], remove: Iterable[str], clean: Clean
    ) -> tuple[list[str], list[str]]:
        wanted_remove = sorted(set(remove))
        wanted_add = [d for d in dict.fromkeys(add) if d not in set(wanted_remove)]
        with self._pool.transaction() as conn:
            removed = [
                str(r[0])
                for r in conn.execute(
                    "DELETE FROM shortener_blocklist WHERE domain = ANY(%s) RETURNING domain",
                    (wanted_remove,),
                ).fetchall()
            ]
            added: list[str] = []
            now = time.time()
            for domain in wanted_add:
                row = conn.execute(
                    "INSERT INTO shortener_blocklist (domain, added_at) VALUES (%s, %s)"
                    " ON CONFLICT (domain) DO NOTHING RETURNING domain",
                    (domain, now),
                ).fetchone()
                if row is not None:
                    added.append(domain)
            if added or removed:
                conn.execute("UPDATE shortener_blocklist_rev SET rev = rev + 1 WHERE id = 1")
        return added, sorted(removed)

    def close(self) -> None:
        self._pool.close()
