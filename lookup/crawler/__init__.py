"""The web crawler: a polite crawl with every duplicate and trap accounted for.

Public API::

    from lookup.crawler import CrawlConfig, crawl, Sandbox, SandboxConfig

    with Sandbox(SandboxConfig.small()) as web:           # the local test web
        report = crawl(CrawlConfig(out_dir, seeds=web.seeds(), hosts=web.hosts(),
                                   strict_hosts=True, min_delay=0.01))

A crawl writes ``DIR/events.jsonl`` (one ``PageFetched`` event per new or changed
page), ``DIR/warc/*.warc.gz`` (raw pages; :func:`read_record` reads one back by its
``storageKey``) and ``DIR/crawl.sqlite`` (the crawl state: the durable frontier, the URL
store, host records, every cut with its rule, every fetch), written through
:class:`CrawlWriter` and read through :class:`CrawlReader` (:func:`open_crawl_reader`).
"""

from lookup.kit.lazy import lazy_exports

#: Each public name and the module it lives in, imported on first use.
_EXPORTS = {
    "CrawlConfig": "lookup.crawler.engine",
    "Crawler": "lookup.crawler.engine",
    "CrawlError": "lookup.crawler.engine",
    "CrawlProgress": "lookup.crawler.engine",
    "CrawlReport": "lookup.crawler.engine",
    "crawl": "lookup.crawler.engine",
    "DuplicateDetector": "lookup.crawler.dedup",
    "SimHashIndex": "lookup.crawler.dedup",
    "Verdict": "lookup.crawler.dedup",
    "hamming": "lookup.crawler.dedup",
    "simhash": "lookup.crawler.dedup",
    "DEFAULT_USER_AGENT": "lookup.crawler.fetcher",
    "DnsResolver": "lookup.crawler.fetcher",
    "parse_hosts_file": "lookup.crawler.fetcher",
    "Frontier": "lookup.crawler.frontier",
    "FrontierEntry": "lookup.crawler.frontier",
    "HostQueue": "lookup.crawler.frontier",
    "PolitenessPolicy": "lookup.crawler.frontier",
    "read_events": "lookup.crawler.output",
    "read_record": "lookup.crawler.output",
    "RobotsCache": "lookup.crawler.robots",
    "RobotsPolicy": "lookup.crawler.robots",
    "Sandbox": "lookup.crawler.sandbox",
    "SandboxConfig": "lookup.crawler.sandbox",
    "CrawlReader": "lookup.crawler.state",
    "CrawlWriter": "lookup.crawler.state",
    "open_crawl_reader": "lookup.crawler.state",
    "open_crawl_store": "lookup.crawler.state",
    "TrapGuard": "lookup.crawler.traps",
    "TrapPolicy": "lookup.crawler.traps",
    "url_pattern": "lookup.crawler.traps",
    "normalize_url": "lookup.kit.urlnorm",
    "url_hash": "lookup.kit.urlnorm",
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

__all__ = [
    "DEFAULT_USER_AGENT",
    "CrawlConfig",
    "CrawlError",
    "CrawlProgress",
    "CrawlReport",
    "CrawlReader",
    "CrawlWriter",
    "Crawler",
    "DuplicateDetector",
    "Frontier",
    "FrontierEntry",
    "HostQueue",
    "PolitenessPolicy",
    "DnsResolver",
    "RobotsCache",
    "RobotsPolicy",
    "Sandbox",
    "SandboxConfig",
    "SimHashIndex",
    "TrapGuard",
    "TrapPolicy",
    "Verdict",
    "crawl",
    "hamming",
    "normalize_url",
    "open_crawl_reader",
    "open_crawl_store",
    "parse_hosts_file",
    "read_events",
    "read_record",
    "simhash",
    "url_hash",
    "url_pattern",
]
