"""Old import path of the click log, kept for one release: use
:mod:`lookup.shortener.analytics.clicklog`.

The port (:class:`ClickLog`, :data:`LogRecord`, :func:`open_click_log`) is now
:mod:`lookup.shortener.analytics.clicklog`; the backends are
:class:`~lookup.shortener.analytics.clicklog.sqlite.SqliteClickLog` and
:class:`~lookup.shortener.analytics.clicklog.memory.MemoryClickLog`.
"""

from __future__ import annotations

from lookup.shortener.analytics.clicklog import ClickLog, LogRecord, open_click_log
from lookup.shortener.analytics.clicklog.memory import MemoryClickLog
from lookup.shortener.analytics.clicklog.sqlite import (
    PAGE_SIZE,
    WAL_CHECKPOINT_PAGES,
    SqliteClickLog,
)

__all__ = [
    "PAGE_SIZE",
    "WAL_CHECKPOINT_PAGES",
    "ClickLog",
    "LogRecord",
    "MemoryClickLog",
    "SqliteClickLog",
    "open_click_log",
]
