"""Old import path of the fleet's PostgreSQL crawl state, kept for one release: use
:mod:`lookup.crawler.state.postgres` (the backend of the :mod:`lookup.crawler.state` seam).
"""

from __future__ import annotations

from lookup.crawler.state.postgres import PgCrawlReader, PgCrawlStore

__all__ = ["PgCrawlReader", "PgCrawlStore"]
