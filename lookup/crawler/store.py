"""Old import path of the crawl state's port, kept for one release: use :mod:`lookup.crawler.state`.

The records, :class:`CrawlWriter` and :class:`CrawlReader`, :class:`CrawlStateError`,
:func:`crawl_state_url`, :func:`open_crawl_store` and :func:`open_crawl_reader` are now
:mod:`lookup.crawler.state`, the seam's package (with its scheme registry ``BACKENDS``);
the backends are :mod:`lookup.crawler.state.sqlite` and :mod:`lookup.crawler.state.postgres`.
"""

from __future__ import annotations

from lookup.crawler.state import (
    ANSWER_FAILURES,
    HOST_COUNTERS,
    STATE_FILE,
    URL_STATES,
    ContentFacts,
    CrawlReader,
    CrawlStateError,
    CrawlWriter,
    CutRecord,
    CycleRecord,
    FetchedUrl,
    FetchRecord,
    FrontierHostState,
    HostCounter,
    HostPause,
    HostRecord,
    PageFacts,
    ProbeAnswer,
    RedirectRecord,
    RobotsRecord,
    Schedule,
    UrlFacts,
    UrlRecord,
    Validators,
    crawl_state_url,
    open_crawl_reader,
    open_crawl_store,
)

__all__ = [
    "ANSWER_FAILURES",
    "HOST_COUNTERS",
    "STATE_FILE",
    "URL_STATES",
    "ContentFacts",
    "CrawlReader",
    "CrawlStateError",
    "CrawlWriter",
    "CutRecord",
    "CycleRecord",
    "FetchRecord",
    "FetchedUrl",
    "FrontierHostState",
    "HostCounter",
    "HostPause",
    "HostRecord",
    "PageFacts",
    "ProbeAnswer",
    "RedirectRecord",
    "RobotsRecord",
    "Schedule",
    "UrlFacts",
    "UrlRecord",
    "Validators",
    "crawl_state_url",
    "open_crawl_reader",
    "open_crawl_store",
]
