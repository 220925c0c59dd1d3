"""Old import path of the SQLite crawl state, kept for one release: use
:mod:`lookup.crawler.state.sqlite` (the backend of the :mod:`lookup.crawler.state` seam).
"""

from __future__ import annotations

from lookup.crawler.state.sqlite import (
    SqliteCrawlReader,
    SqliteCrawlStateError,
    SqliteCrawlStore,
)

__all__ = ["SqliteCrawlReader", "SqliteCrawlStateError", "SqliteCrawlStore"]
