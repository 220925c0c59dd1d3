"""Old import path of the throw-away PostgreSQL, kept for one release.

Its names moved to :mod:`lookup.kit.engines.pgserver`, with the rest of the kit's engine
plumbing (:mod:`lookup.kit.engines`); this module gives the very same objects.
"""

from __future__ import annotations

from lookup.kit.engines.pgserver import PostgresServer, postgres_available, postgres_bin

__all__ = ["PostgresServer", "postgres_available", "postgres_bin"]
