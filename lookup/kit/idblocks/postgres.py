"""Id blocks on PostgreSQL (``postgresql://…``): the design notes' ``id_blocks`` ticket
row, shared by a fleet (see :mod:`lookup.kit.idblocks`).

``lease()`` is one statement — ``UPDATE id_blocks SET next_start = next_start + block
WHERE name = … RETURNING next_start`` — and the row lock it takes makes concurrent leases
from any number of processes return disjoint blocks. A process spends its block in
memory, so the database sees one round trip per ``block_size`` ids, and a process that
dies leaves a gap, never a duplicate. While the server is down a process keeps issuing
from the block it holds; the next lease raises :class:`~lookup.errors.Unavailable`.
"""

from __future__ import annotations

from typing import Any

from lookup.kit.engines.postgres import PgPool, describe_url, ensure_schema
from lookup.kit.engines.storeurl import StoreUrl
from lookup.kit.idblocks import BlockSpender, IdBlock

__all__ = ["PostgresIdAllocator"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS id_blocks (
    name        TEXT PRIMARY KEY,
    next_start  BIGINT NOT NULL
);
"""


class PostgresIdAllocator(BlockSpender):
    """Range-leased ids from the ``id_blocks`` row ``name`` of one PostgreSQL database."""

    def __init__(
        self,
        url: str,
        name: str = "default",
        *,
        block_size: int = 10_000,
        limit: int | None = None,
        start: int = 0,
        pool_timeout_s: float = 2.0,
    ) -> None:
        super().__init__(name, block_size=block_size, limit=limit)
        self.url = url
        ensure_schema(url, "lookup.kit.id_blocks", _SCHEMA, "the id allocator")
        # One connection is enough: a lease is one statement per block_size ids.
        self._pool = PgPool(url, what="the id allocator", max_size=2, pool_timeout_s=pool_timeout_s)
        with self._pool.connection() as conn:
            conn.execute(
                "INSERT INTO id_blocks (name, next_start) VALUES (%s, %s)"
                " ON CONFLICT (name) DO NOTHING",
                (name, start),
            )

    @classmethod
    def from_url(cls, url: StoreUrl, name: str = "default", **options: Any) -> PostgresIdAllocator:
        """The allocator of the ``id_blocks`` row ``name`` in the database ``url`` names."""
        return cls(url.url, name, **options)

    def describe(self) -> str:
        """Where the counter lives, without credentials."""
        return describe_url(self.url)

    def lease(self) -> IdBlock:
        """Take the next block ``[start, end)`` from the row (one atomic statement)."""
        with self._pool.connection() as conn:
            row = conn.execute(
                "UPDATE id_blocks SET next_start = next_start + %s WHERE name = %s"
                " RETURNING next_start",
                (self.block_size, self.name),
            ).fetchone()
        if row is None:
            raise RuntimeError(f"id_blocks row {self.name!r} disappeared")
        return self._leased(int(row[0]))

    def close(self) -> None:
        """Close the connection (reopened on the next lease); the current block stays usable."""
        self._pool.close()
