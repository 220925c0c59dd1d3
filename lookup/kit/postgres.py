"""Old import path of PostgreSQL connections, kept for one release.

Its names moved to :mod:`lookup.kit.engines.postgres`, with the rest of the kit's engine
plumbing (:mod:`lookup.kit.engines`); this module gives the very same objects.
"""

from __future__ import annotations

from lookup.kit.engines.postgres import (
    CONNECT_TIMEOUT_S,
    POOL_TIMEOUT_S,
    PgPool,
    connect,
    describe_url,
    ensure_schema,
    unavailable,
)

__all__ = [
    "CONNECT_TIMEOUT_S",
    "POOL_TIMEOUT_S",
    "PgPool",
    "connect",
    "describe_url",
    "ensure_schema",
    "unavailable",
]
