"""The rule store on PostgreSQL (``postgresql://…``): the fleet's database, table
``link_rules`` beside ``links``; the schema is made on open under an advisory lock."""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any

from lookup.kit.engines.postgres import PgPool, describe_url, ensure_schema
from lookup.kit.engines.storeurl import StoreUrl
from lookup.shortener.rules.sql import Connection, RuleDialect, RuleSql, SqlRuleStore

__all__ = ["POSTGRES", "PostgresRuleStore"]

POSTGRES = RuleDialect(
    name="postgresql", json_type="JSONB", json_value="?::jsonb", json_text="rules::text"
)


class PostgresRuleStore(SqlRuleStore):
    """Rules in one PostgreSQL database; thread-safe, shared by many processes."""

    sql = RuleSql(POSTGRES)

    def __init__(self, url: str, *, pool_size: int = 4, pool_timeout_s: float = 2.0) -> None:
        self.url = url
        ensure_schema(url, "lookup.shortener.rules", self.sql.schema, "the rule store")
        self._pool = PgPool(
            url, what="the rule store", max_size=pool_size, pool_timeout_s=pool_timeout_s
        )

    @classmethod
    def from_url(cls, url: StoreUrl, **options: Any) -> PostgresRuleStore:
        """The store in the database ``url`` names."""
        return cls(url.url, **options)

    def _read(self) -> AbstractContextManager[Connection]:
        return self._pool.connection()

    def _write(self) -> AbstractContextManager[Connection]:
        return self._pool.connection()

    def describe(self) -> str:
        """Where the rules live, without credentials."""
        return describe_url(self.url)

    def close(self) -> None:
        """Close the pool (the next call opens a new one)."""
        self._pool.close()
