"""Predict-then-run experiments on the crawler: politeness and the seen-URL set.

- the politeness run drives the real :class:`lookup.crawler.frontier.Frontier` (per-host
  queues, the heap of host ready times, the politeness delay) on a simulated clock: each
  lease is "fetched" in ``fetch_s`` seconds and completed, so hours of crawling replay in
  well under a second and the answer does not depend on this machine's speed;
- the dedup run sends discovered links, written many ways, through the real normaliser
  (:func:`lookup.kit.urlnorm.normalize_url`) and :class:`lookup.crawler.seen.SeenUrls`
  (Bloom filter plus a SQLite URL store in a temporary directory).
"""

from __future__ import annotations

import heapq
import itertools
import random
import tempfile
from pathlib import Path

from lookup.study.measure import Experiment, Measured

__all__ = ["EXPERIMENTS_CRAWLER", "crawl_politeness", "seen_dedup", "spellings"]


def crawl_politeness(
    pages: int = 600,
    hosts: int = 6,
    fetch_s: float = 0.2,
    min_delay: float = 1.0,
    delay_factor: float = 10.0,
    workers: int = 100,
    crawl_delay: float = 0.0,
) -> Measured:
    """Seconds of (simulated) time to fetch ``pages`` pages spread evenly over ``hosts``
    hosts with ``workers`` fetchers, when each fetch takes ``fetch_s`` and the frontier
    leaves a host alone for ``max(crawl_delay, delay_factor × fetch_s, min_delay)``."""
    from lookup.crawler.frontier import Frontier, FrontierEntry, HostTurn, PolitenessPolicy
    from lookup.kit.urlnorm import url_hash

    if not (
        1 <= hosts <= pages <= 200_000
        and workers >= 1
        and fetch_s > 0
        and min_delay >= 0
        and delay_factor >= 0
        and crawl_delay >= 0
    ):
        raise ValueError(
            "need 1 <= hosts <= pages <= 200,000, workers >= 1, fetch_s > 0 and non-negative delays"
        )
    now = [0.0]
    frontier = Frontier(PolitenessPolicy(min_delay, delay_factor), clock=lambda: now[0])
    for i in range(pages):
        h = i % hosts
        url = f"http://site{h}.test/page/{i}.html"
        frontier.add(
            FrontierEntry(url, url_hash(url), f"site{h}.test"), f"10.0.{h // 250}.{h % 250}"
        )
    busy: list[tuple[float, int, HostTurn]] = []  # (done at, order, lease)
    order = itertools.count()
    fetched = robots = 0
    last = 0.0
    per_host: dict[str, int] = {}
    for _ in range(20 * (pages + hosts) + 100):
        while len(busy) < workers and (lease := frontier.lease(now[0])) is not None:
            heapq.heappush(busy, (now[0] + fetch_s, next(order), lease))
        due = frontier.next_ready_at()
        if not busy:
            if due is None:
                break
            now[0] = max(now[0], due)
            continue
        done_at, _, lease = busy[0]
        if due is not None and due < done_at and len(busy) < workers:
            now[0] = max(now[0], due)
            continue
        heapq.heappop(busy)
        now[0] = done_at
        if lease.kind == "robots":
            frontier.robots_known(lease.host, crawl_delay=crawl_delay or None)
            robots += 1
        else:
            fetched += 1
            per_host[lease.host] = per_host.get(lease.host, 0) + 1
        frontier.complete(lease, fetch_s)
        last = now[0]
    else:
        raise RuntimeError("the simulated crawl did not finish")
    gap = max(crawl_delay, delay_factor * fetch_s, min_delay)
    biggest = max(per_host.values())
    host_bound = (biggest + 1) * fetch_s + biggest * gap
    fetch_bound = -(-(pages + hosts) // workers) * fetch_s
    last = round(last, 6)
    chain = (
        f"{pages:,} URLs queued on {hosts} host(s), each on its own address; {workers} fetchers",
        f"each request takes {fetch_s:g} s; after it the host rests max(Crawl-delay "
        f"{crawl_delay:g} s, {delay_factor:g} × {fetch_s:g} s, {min_delay:g} s) = {gap:g} s",
        f"every host's first request is its robots.txt: {robots} of those, then {fetched:,} pages",
        f"the busiest host has {biggest:,} page(s), so {biggest + 1:,} requests one after "
        f"another: {biggest + 1:,} × {fetch_s:g} s + {biggest:,} × {gap:g} s = "
        f"{host_bound:,.1f} s at least",
        f"the fetchers alone need ({pages + hosts:,} requests ÷ {workers}) × {fetch_s:g} s = "
        f"{fetch_bound:,.1f} s at least",
        f"the frontier finished the last page at {last:,.1f} s of simulated time",
    )
    return Measured(
        last,
        "s",
        chain,
        {
            "pages fetched": fetched,
            "robots fetched": robots,
            "per-host gap s": gap,
            "busiest host pages": biggest,
        },
    )


def spellings(url: str, rng: random.Random) -> str:
    """``url`` written one of the ways links to the same page turn up in the wild."""
    scheme, rest = url.split("://", 1)
    host, path = rest.split("/", 1)
    way = rng.randrange(6)
    if way == 0:
        return f"{scheme}://{host.upper()}/{path}"
    if way == 1:
        return f"{url}?utm_source=feed&utm_medium=rss"
    if way == 2:
        return f"{url}#section-{rng.randrange(9)}"
    if way == 3:
        return f"{scheme}://{host}:80/{path}"
    if way == 4:
        return f"{scheme}://{host}/./{path}"
    return f"{url}?sessionid={rng.getrandbits(32):08x}"


def seen_dedup(
    pages: int = 500,
    links_per_page: int = 40,
    site_urls: int = 5_000,
    variant_share: float = 0.3,
    normalize: bool = True,
    seed: int = 9,
) -> Measured:
    """Links found on ``pages`` pages, each to one of ``site_urls`` pages chosen at random
    and written another way ``variant_share`` of the time: the share the seen-URL check
    turns away as already known (``normalize=False`` checks the links as written)."""
    from lookup.crawler.seen import SeenUrls
    from lookup.crawler.store import UrlRecord, open_crawl_store
    from lookup.kit.engines.storeurl import sqlite_url
    from lookup.kit.urlnorm import host_of, normalize_url, url_hash

    if not (
        1 <= pages
        and 1 <= links_per_page
        and pages * links_per_page <= 200_000
        and 1 <= site_urls <= 1_000_000
        and 0.0 <= variant_share <= 1.0
    ):
        raise ValueError(
            "need pages, links_per_page >= 1 (at most 200,000 links), "
            "1 <= site_urls <= 1,000,000 and 0 <= variant_share <= 1"
        )
    rng = random.Random(seed)
    found = []
    for _ in range(pages * links_per_page):
        n = rng.randrange(site_urls)
        link = f"http://www.site{n % 7}.test/section{n % 23}/page{n}.html"
        found.append(spellings(link, rng) if rng.random() < variant_share else link)
    with tempfile.TemporaryDirectory(prefix="study-seen-") as tmp:
        store = open_crawl_store(sqlite_url(Path(tmp) / "crawl.sqlite"))
        try:
            seen = SeenUrls(store, capacity=max(1_000, site_urls), fp_rate=0.01)
            new = 0
            with store.transaction():
                for raw in found:
                    url = normalize_url(raw) if normalize else raw
                    assert url is not None
                    new += seen.check(UrlRecord(url_hash(url), url, host_of(url), "queued"))
            stats = seen.stats
            stored = sum(1 for _ in store.iter_url_hashes())
        finally:
            store.close()
    links = len(found)
    dropped = links - new
    share = dropped / links
    chain = (
        f"{pages:,} fetched pages with {links_per_page} links each: {links:,} links to "
        f"{site_urls:,} pages of a site, {variant_share:.0%} of them spelled another way "
        "(upper-case host, tracking or session parameters, a fragment, :80, /./)",
        (
            "each link normalised first, then checked"
            if normalize
            else "each link checked exactly as written, without normalising"
        ),
        f"the Bloom filter said 'definitely new' {stats.definitely_new:,} times (no store "
        f"lookup) and 'maybe seen' {stats.maybe_seen:,} times, {stats.false_positives} of "
        "them wrongly (the URL store corrected it)",
        f"new URLs written to the store: {new:,} (the store holds {stored:,})",
        f"links turned away as already seen: {dropped:,} of {links:,} = {share:.1%}",
    )
    return Measured(
        share,
        "fraction",
        chain,
        {
            "links": links,
            "new": new,
            "dropped": dropped,
            "definitely new": stats.definitely_new,
            "maybe seen": stats.maybe_seen,
            "false positives": stats.false_positives,
        },
    )


EXPERIMENTS_CRAWLER = (
    Experiment(
        "crawl_politeness",
        "How long a polite crawl takes when pages sit on few hosts",
        crawl_politeness,
        {
            "pages": 600,
            "hosts": 6,
            "fetch_s": 0.2,
            "min_delay": 1.0,
            "delay_factor": 10.0,
            "workers": 100,
            "crawl_delay": 0.0,
        },
    ),
    Experiment(
        "seen_dedup",
        "Discovered links the seen-URL check turns away",
        seen_dedup,
        {
            "pages": 500,
            "links_per_page": 40,
            "site_urls": 5_000,
            "variant_share": 0.3,
            "normalize": True,
            "seed": 9,
        },
    ),
)
