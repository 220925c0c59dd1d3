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

from lookup.crawler.crawl import CrawlConfig, Crawler, CrawlError, CrawlProgress, CrawlReport, crawl
from lookup.crawler.dedup import DuplicateDetector, SimHashIndex, Verdict, hamming, simhash
from lookup.crawler.fetcher import DEFAULT_USER_AGENT, Resolver, parse_hosts_file
from lookup.crawler.frontier import Frontier, FrontierEntry, HostQueue, PolitenessPolicy
from lookup.crawler.output import read_events, read_record
from lookup.crawler.robots import RobotsCache, RobotsPolicy
from lookup.crawler.sandbox import Sandbox, SandboxConfig
from lookup.crawler.store import CrawlReader, CrawlWriter, open_crawl_reader, open_crawl_store
from lookup.crawler.traps import TrapGuard, TrapPolicy, url_pattern
from lookup.kit.urlnorm import normalize, url_hash

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
    "Resolver",
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
    "normalize",
    "open_crawl_reader",
    "open_crawl_store",
    "parse_hosts_file",
    "read_events",
    "read_record",
    "simhash",
    "url_hash",
    "url_pattern",
]
