"""The link store on PostgreSQL (``postgresql://…``): one database shared by every API
process of a fleet.

The same statements and guarantees as the SQLite store (:mod:`lookup.shortener.links.sql`),
each uniqueness decision still one conditional write; what PostgreSQL does its own way:

* a click of a budgeted link is one ``UPDATE ... WHERE clicks < max_clicks``; under READ
  COMMITTED a second updater waits for the first and re-checks the condition on the new
  row, so exactly ``max_clicks`` succeed;
* a create with an Idempotency-Key first takes a transaction-scoped advisory lock on
  that key, so two retries of one request racing in two processes give one link and one
  replay (SQLite gets this from its single writer); without one, the claim and its
  audit row are a single statement, outside any transaction;
* updates lock the row (``SELECT ... FOR UPDATE``) before they read it.

Connections come from a :class:`~lookup.kit.engines.postgres.PgPool` with short timeouts: while
the server is down every call raises :class:`~lookup.errors.Unavailable` within the pool
timeout instead of hanging. The schema is created on open under an advisory lock.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

from lookup.kit.engines.postgres import PgPool, describe_url, ensure_schema
from lookup.kit.engines.storeurl import StoreUrl
from lookup.shortener.links import IdempotencyClaim
from lookup.shortener.links.sql import Connection, Dialect, LinkSql, SqlLinkStore
from lookup.shortener.links.sqldomains import FILL_FOLDS, FOLD_SCHEMA

__all__ = ["POSTGRES", "PostgresLinkStore"]

#: Columns added after the first release: a database from before gets them on open.
_ADDED_COLUMNS = """
ALTER TABLE links ADD COLUMN IF NOT EXISTS forward_query BOOLEAN NOT NULL DEFAULT TRUE;
ALTER TABLE links ADD COLUMN IF NOT EXISTS forward_path BOOLEAN NOT NULL DEFAULT FALSE;
ALTER TABLE links ADD COLUMN IF NOT EXISTS fold TEXT;
ALTER TABLE links ADD COLUMN IF NOT EXISTS domain TEXT NOT NULL DEFAULT '';
"""

POSTGRES = Dialect(
    name="postgresql",
    types={
        "key": 'TEXT COLLATE "C"',  # byte order, as SQLite sorts
        "bigint": "BIGINT",
        "boolean": "BOOLEAN",
        "false": "FALSE",
        "true": "TRUE",
        "real": "DOUBLE PRECISION",
        "json": "JSONB",
        "serial": "BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY",
    },
    json_value="?::jsonb",
    json_text="{column}::text",  # psycopg would hand JSONB back as lists
    lock_rows=" FOR UPDATE",
    has_tag="tags @> jsonb_build_array(?::text)",
    claim_with_audit=True,
    expire_in_one=True,
)


#: The case rule's index and tables, and the fold of rows from before it (once, under the
#: schema's advisory lock, so concurrent openers fold each row once).
_FOLDS = (
    FOLD_SCHEMA.format(real="DOUBLE PRECISION")
    + "DO $$ BEGIN IF EXISTS (SELECT 1 FROM links WHERE fold IS NULL) THEN "
    + FILL_FOLDS
    + "; END IF; END $$;\n"
)


class PostgresLinkStore(SqlLinkStore):
    """The link store in one PostgreSQL database; thread-safe, shared by many processes.

    ``pool_size`` caps this process's connections; ``pool_timeout_s`` is how long a call
    waits for one before it raises :class:`~lookup.errors.Unavailable`.
    """

    sql = LinkSql(POSTGRES)

    def __init__(
        self,
        url: str,
        *,
        idempotency_ttl_s: float = 86_400.0,
        clock: Callable[[], float] = time.time,
        pool_size: int = 8,
        pool_timeout_s: float = 2.0,
    ) -> None:
        super().__init__(idempotency_ttl_s=idempotency_ttl_s, clock=clock)
        self.url = url
        ensure_schema(
            url,
            "lookup.shortener.links",
            self.sql.schema + _ADDED_COLUMNS + _FOLDS,
            "the link store",
        )
        self._pool = PgPool(
            url, what="the link store", max_size=pool_size, pool_timeout_s=pool_timeout_s
        )
        #: Keys that answer to their exact spelling only (see ``sqldomains``).
        self.case_collisions = self.exact_only_keys()

    @classmethod
    def from_url(cls, url: StoreUrl, **options: Any) -> PostgresLinkStore:
        """The store in the database ``url`` names."""
        return cls(url.url, **options)

    def describe(self) -> str:
        """Where the links live, without credentials (for status pages)."""
        return describe_url(self.url)

    def close(self) -> None:
        """Close the pool's connections; the next call opens them again."""
        self._pool.close()

    # -- connections: autocommit for one statement, BEGIN … COMMIT for several ----------

    def _read(self) -> AbstractContextManager[Connection]:
        return self._pool.connection()

    def _write(self) -> AbstractContextManager[Connection]:
        return self._pool.connection()

    def _transaction(self) -> AbstractContextManager[Connection]:
        return self._pool.transaction()

    def _lock_claim(self, conn: Connection, idempotency: IdempotencyClaim) -> None:
        scope, key = idempotency.scope, idempotency.key
        conn.execute(
            "SELECT pg_advisory_xact_lock(hashtextextended(%s, 1))",
            (f"{len(scope)}:{scope}:{key}",),
        )
