"""Old import path of the PostgreSQL hot blocklist, kept for one release: use
:mod:`lookup.typeahead.blocklist.postgres` (the backend of the
:mod:`lookup.typeahead.blocklist` seam).
"""

from __future__ import annotations

from lookup.typeahead.blocklist.postgres import PostgresHotTermSource

__all__ = ["PostgresHotTermSource"]
