"""Old import path of the click counts, kept for one release: use
:mod:`lookup.shortener.analytics.clickcounts`.

The port (:class:`ClickCounts`, :class:`CountsBatch`, :data:`CountRow`,
:func:`open_click_counts`) is now :mod:`lookup.shortener.analytics.clickcounts`; the
SQLite backend is :class:`~lookup.shortener.analytics.clickcounts.sqlite.SqliteClickCounts`.
"""

from __future__ import annotations

from lookup.shortener.analytics.clickcounts import (
    ClickCounts,
    CountRow,
    CountsBatch,
    open_click_counts,
)
from lookup.shortener.analytics.clickcounts.sqlite import SqliteClickCounts

__all__ = [
    "ClickCounts",
    "CountRow",
    "CountsBatch",
    "SqliteClickCounts",
    "open_click_counts",
]
