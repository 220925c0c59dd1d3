"""Old import path of the PostgreSQL crawl controls, kept for one release: use
:mod:`lookup.crawler.controls.postgres` (the backend of the :mod:`lookup.crawler.controls`
seam).
"""

from __future__ import annotations

from lookup.crawler.controls.postgres import PostgresCrawlControls

__all__ = ["PostgresCrawlControls"]
