"""Old import path of the PostgreSQL domain blocklist, kept for one release: use
:mod:`lookup.shortener.blocklist.postgres` (the backend of the
:mod:`lookup.shortener.blocklist` seam).
"""

from __future__ import annotations

from lookup.shortener.blocklist.postgres import PostgresBlocklistSource

__all__ = ["PostgresBlocklistSource"]
