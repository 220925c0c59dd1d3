"""End to end: the real crawler crawls the sandbox web, ``lookup index`` indexes its output."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from lookup.crawler import CrawlConfig, Sandbox, SandboxConfig, TrapPolicy, crawl
from lookup.search import SearchService, build_index


@pytest.fixture(scope="module")
def crawled(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    web = Sandbox(SandboxConfig.small()).start()
    out = tmp_path_factory.mktemp("realcrawl")
    try:
        crawl(
            CrawlConfig(
                out, seeds=web.seeds(), hosts=web.hosts(), strict_hosts=True, min_delay=0.01,
                delay_factor=1.0, timeout=1.5, connect_timeout=1.0, max_pages=60,
                max_seconds=60, traps=TrapPolicy(host_budget=40, max_depth=6), concurrency=16,
            )
        )  # fmt: skip
    finally:
        web.stop()
    return out


def test_the_crawlers_output_indexes_and_answers(crawled: Path, tmp_path: Path) -> None:
    events = [json.loads(x) for x in (crawled / "events.jsonl").read_text().splitlines()]
    fetched = [e for e in events if e.get("type") == "PageFetched"]
    assert fetched, "the crawl produced no pages"
    report = build_index(crawled, tmp_path / "idx", shards=2)
    assert report.failed == 0
    last = {e["urlHash"]: e["type"] for e in events}  # a page its canonical replaced left
    assert report.added + report.skipped == sum(t == "PageFetched" for t in last.values())
    svc = SearchService(tmp_path / "idx", realtime=False)
    found = 0
    for e in fetched[:25]:
        title = e.get("title") or ""
        if not title.strip():
            continue
        urls = [r["url"] for r in svc.search(title, limit=50)["results"]]
        found += e["url"] in urls
    assert found >= 10
    snap = svc.snapshot()
    assert snap.link_counts.size and snap.link_counts.max() >= 2  # the crawl graph has hubs
    svc.close()


@pytest.fixture(scope="module")
def docs_crawl(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A crawl of the sandbox's documentation host (40 module pages), indexed."""
    web = Sandbox(SandboxConfig.small(doc_modules=40)).start()
    out = tmp_path_factory.mktemp("docscrawl")
    try:
        crawl(
            CrawlConfig(
                out, seeds=[web.url("docs", "/")], hosts=web.hosts(), strict_hosts=True,
                min_delay=0.01, delay_factor=1.0, timeout=1.5, connect_timeout=1.0, max_pages=140,
                max_seconds=90, traps=TrapPolicy(host_budget=120, max_depth=4), concurrency=16,
            )
        )  # fmt: skip
    finally:
        web.stop()
    build_index(out, out / "index", shards=2)
    return out


def known_item_rate(crawl_dir: Path) -> tuple[float, int]:
    """Share of the docs' module pages found in the top 3 for a query of their title."""
    events = [json.loads(x) for x in (crawl_dir / "events.jsonl").read_text().splitlines()]
    pages = {
        e["url"]: e["title"]
        for e in events
        if e.get("type") == "PageFetched" and "/lib/" in e["url"] and e.get("title")
    }
    svc = SearchService(crawl_dir / "index", realtime=False)
    try:
        hits = sum(
            url in [r["url"] for r in svc.search(title, limit=3)["results"]]
            for url, title in pages.items()
        )
    finally:
        svc.close()
    return hits / max(len(pages), 1), len(pages)


def test_known_items_are_found_by_their_titles(docs_crawl: Path) -> None:
    """Queries built from the docs' page titles find their page in the top 3 (>= 85 %)."""
    rate, n = known_item_rate(docs_crawl)
    print(f"known-item success at 3: {rate:.1%} of {n} docs pages")
    assert n >= 30
    assert rate >= 0.85


def test_links_and_freshness_never_override_a_clear_relevance_lead(docs_crawl: Path) -> None:
    """``q=decoder`` once put the docs' home page (many in-links) above ``json.decoder``:
    on the real crawl, a page ranked above another never has a clearly lower BM25."""
    events = [json.loads(x) for x in (docs_crawl / "events.jsonl").read_text().splitlines()]
    words = {
        e["url"].rsplit("/", 1)[-1].removesuffix(".html").rsplit(".", 1)[-1]
        for e in events
        if e.get("type") == "PageFetched" and "/lib/" in e["url"]
    }
    svc = SearchService(docs_crawl / "index", realtime=False)
    try:
        for q in sorted(words):
            bms = [r["explain"]["bm25"] for r in svc.search(q, explain=True)["results"]]
            for hi, lo in zip(bms, bms[1:], strict=False):
                assert lo <= hi * 1.25, (q, bms)
    finally:
        svc.close()


def test_a_page_that_goes_away_leaves_the_index_and_the_realtime_tier(tmp_path: Path) -> None:
    """Real crawler output: the moved host's ephemeral page answers 410 in the second crawl
    cycle; the crawler says so (a removal event with its reason) and search drops it, in
    the real-time tier at once and in the next batch build."""
    web = Sandbox(SandboxConfig.small()).start()
    out = tmp_path / "crawl"
    gone = web.sites.handlers["moved"].manifest()["ephemeral"]

    def cycle(**kw: object) -> None:
        options: dict[str, object] = {"max_seconds": 20.0, **kw}
        crawl(
            CrawlConfig(
                out, seeds=[web.url("moved", "/")], hosts=web.hosts(), strict_hosts=True,
                min_delay=0.01, delay_factor=1.0, timeout=1.5, connect_timeout=1.0,
                recrawl_initial=0.2, recrawl_min=0.1, **options,  # type: ignore[arg-type]
            )
        )  # fmt: skip

    try:
        cycle()
        build_index(out, tmp_path / "idx", shards=2)
        svc = SearchService(tmp_path / "idx")
        svc.reload()
        assert gone in [r["url"] for r in svc.search("marmoset")["results"]]
        cycle(resume=True, new_cycle=True, recrawl=True, max_seconds=3)
    finally:
        web.stop()
    events = [json.loads(x) for x in (out / "events.jsonl").read_text().splitlines()]
    removed = [e for e in events if e["type"] == "PageRemoved"]
    assert [(e["url"], e["reason"], e["httpStatus"]) for e in removed] == [(gone, "gone", 410)]
    try:
        assert svc.tier is not None and svc.tier.poll() >= 1
        assert svc.search("marmoset")["results"] == []  # the real-time tier hides it at once
    finally:
        svc.close()
    report = build_index(out, tmp_path / "idx")
    assert report.incremental and report.deleted == 1
    again = SearchService(tmp_path / "idx", realtime=False)
    try:
        assert again.search("marmoset")["results"] == []
        assert again.search("move")["results"]  # the rest of the site stays
    finally:
        again.close()


def test_search_shows_the_declared_canonical_of_a_duplicate_cluster(tmp_path: Path) -> None:
    """Print views, the www twin and the mirror repeat the docs pages and name them
    canonical (the sandbox's ground truth): search answers with the canonical URL only."""
    from lookup.crawler.scope import CrawlScope

    web = Sandbox(SandboxConfig.small()).start()
    out = tmp_path / "crawl"
    try:
        manifest = web.manifest()
        docs = web.url("docs", "/").split("//")[1].split(":")[0]
        mirror = web.url("mirror", "/").split("//")[1].split(":")[0]
        crawl(
            CrawlConfig(
                out, seeds=[web.url("mirror", "/"), web.url("docs", "/")], hosts=web.hosts(),
                strict_hosts=True, min_delay=0.01, delay_factor=1.0, timeout=1.5,
                connect_timeout=1.0, max_seconds=90, traps=TrapPolicy(host_budget=80, max_depth=6),
                concurrency=16, scope=CrawlScope(allow_domains=(docs, mirror)),
            )
        )  # fmt: skip
    finally:
        web.stop()
    build_index(out, tmp_path / "idx", shards=2)
    svc = SearchService(tmp_path / "idx", realtime=False)
    try:
        members: dict[str, list[str]] = {}
        for member, target in manifest["canonical"].items():
            members.setdefault(target, []).append(member)
        checked = 0
        for target, dups in members.items():
            module = target.rsplit("/", 1)[1].removesuffix(".html")
            urls = [r["url"] for r in svc.search(module, limit=50)["results"]]
            assert target in urls, (module, urls[:5])
            assert not set(dups) & set(urls), (module, set(dups) & set(urls))
            assert not [u for u in urls if mirror in u and u.endswith(f"/{module}.html")], urls
            checked += 1
        assert checked >= 5
    finally:
        svc.close()
