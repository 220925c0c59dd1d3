"""Fleet-wide secrets in PostgreSQL (``postgresql://…``): the ``fleet_secrets`` table of
the shared database.

Creation is one conditional write — ``INSERT … ON CONFLICT (name) DO NOTHING`` — and then
a ``SELECT`` of what is stored, so of many processes starting at once exactly one value
wins and every process reads that one (see :mod:`lookup.kit.secrets`).
"""

from __future__ import annotations

import time
from collections.abc import Callable

import psycopg

from lookup.kit.engines.postgres import connect, describe_url, ensure_schema, unavailable
from lookup.kit.engines.storeurl import StoreUrl
from lookup.kit.secrets import check_name

__all__ = ["PostgresSecretStore"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS fleet_secrets (
    name        TEXT PRIMARY KEY,
    value       BYTEA NOT NULL,
    created_at  DOUBLE PRECISION NOT NULL
);
"""


class PostgresSecretStore:
    """Named secrets in one PostgreSQL database, created once for the whole fleet.

    Secrets are read when a process starts, so each call opens a short-lived connection
    instead of keeping a pool.
    """

    def __init__(self, url: str) -> None:
        self.url = url
        ensure_schema(url, "lookup.kit.fleet_secrets", _SCHEMA, "the secret store")

    @classmethod
    def from_url(cls, url: StoreUrl) -> PostgresSecretStore:
        """The store in the database ``url`` names."""
        return cls(url.url)

    def describe(self) -> str:
        return describe_url(self.url)

    def get_or_create(self, name: str, make: Callable[[], bytes]) -> bytes:
        check_name(name)
        try:
            with connect(self.url) as conn:
                row = conn.execute(
                    "SELECT value FROM fleet_secrets WHERE name = %s", (name,)
                ).fetchone()
                if row is None:
                    conn.execute(
                        "INSERT INTO fleet_secrets (name, value, created_at) VALUES (%s, %s, %s)"
                        " ON CONFLICT (name) DO NOTHING",
                        (name, make(), time.time()),
                    )
                    conn.commit()  # visible to every process before anyone reads it back
                    row = conn.execute(
                        "SELECT value FROM fleet_secrets WHERE name = %s", (name,)
                    ).fetchone()
        except (psycopg.OperationalError, psycopg.InterfaceError) as exc:
            raise unavailable("the secret store", self.url, exc) from exc
        assert row is not None  # inserted by us or by whoever won the race
        return bytes(row[0])
