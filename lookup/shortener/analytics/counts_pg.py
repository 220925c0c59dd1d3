"""Old import path of the click counts on PostgreSQL, kept for one release: use
:mod:`lookup.shortener.analytics.clickcounts.postgres` (or
:func:`lookup.shortener.analytics.clickcounts.open_click_counts`).
"""

from __future__ import annotations

from lookup.shortener.analytics.clickcounts.postgres import PostgresClickCounts

__all__ = ["PostgresClickCounts"]
