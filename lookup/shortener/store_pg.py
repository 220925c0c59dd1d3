"""Old import path of the PostgreSQL link store, kept for one release: use
:mod:`lookup.shortener.links.postgres` (or :func:`lookup.shortener.links.open_link_store`).
"""

from __future__ import annotations

from lookup.shortener.links.postgres import PostgresLinkStore

__all__ = ["PostgresLinkStore"]
