"""The webhook store on PostgreSQL (``postgresql://…``): the fleet's database.

The same statements as SQLite (:mod:`lookup.shortener.webhooks.sql`); a claim's inner
``SELECT`` takes row locks with ``SKIP LOCKED`` so two senders never wait on each other,
and the outer ``WHERE`` is re-checked on a row another claim just changed, so a delivery
goes to one sender. Connections come from a :class:`~lookup.kit.engines.postgres.PgPool`
(an outage is :class:`~lookup.errors.Unavailable` within its timeout).
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any

from lookup.kit.engines.postgres import PgPool, describe_url, ensure_schema
from lookup.kit.engines.storeurl import StoreUrl
from lookup.shortener.webhooks.sql import Connection, SqlWebhookStore, WebhookDialect, schema

__all__ = ["POSTGRES", "PostgresWebhookStore"]

POSTGRES = WebhookDialect(
    name="postgresql",
    serial="BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY",
    real="DOUBLE PRECISION",
    placeholder="%s",
    skip_locked=" FOR UPDATE SKIP LOCKED",
)


class PostgresWebhookStore(SqlWebhookStore):
    """Webhook tables in one PostgreSQL database; thread-safe, shared by many processes."""

    dialect = POSTGRES

    def __init__(self, url: str, *, pool_size: int = 4, pool_timeout_s: float = 2.0) -> None:
        self.url = url
        ensure_schema(url, "lookup.shortener.webhooks", schema(POSTGRES), "the webhook store")
        self._pool = PgPool(
            url, what="the webhook store", max_size=pool_size, pool_timeout_s=pool_timeout_s
        )

    @classmethod
    def from_url(cls, url: StoreUrl, **options: Any) -> PostgresWebhookStore:
        """The store in the database ``url`` names."""
        return cls(url.url, **options)

    def describe(self) -> str:
        """Where the webhooks live, without credentials."""
        return describe_url(self.url)

    def _read(self) -> AbstractContextManager[Connection]:
        return self._pool.connection()

    def _transaction(self) -> AbstractContextManager[Connection]:
        return self._pool.transaction()

    def close(self) -> None:
        """Close the pool (the next call opens a new one)."""
        self._pool.close()
