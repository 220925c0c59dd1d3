"""Old import path of the PostgreSQL id allocator, kept for one release: use
:mod:`lookup.kit.idblocks.postgres` (or :func:`lookup.kit.idblocks.open_id_allocator`).
"""

from __future__ import annotations

from lookup.kit.idblocks.postgres import PostgresIdAllocator

__all__ = ["PostgresIdAllocator"]
