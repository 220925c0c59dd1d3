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
    assert report.added + report.skipped == len({e["urlHash"] for e in fetched})
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
