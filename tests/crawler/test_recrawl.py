"""Adaptive recrawl: intervals halve on change and grow when not; unchanged pages send nothing."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from lookup.crawler import CrawlConfig, Sandbox, SandboxConfig, crawl, read_events


def test_recrawl_adapts_to_how_often_pages_change(tmp_path: Path) -> None:
    # 1 real second = 200 s on the sandbox clock: the fastest post changes every 0.15 s.
    web = Sandbox(SandboxConfig.small(time_scale=200.0, blog_posts=5)).start()
    try:
        out = tmp_path / "r"
        report = crawl(
            CrawlConfig(
                out,
                seeds=[web.url("blog", "/")],
                hosts=web.hosts(),
                strict_hosts=True,
                min_delay=0.01,
                delay_factor=2.0,
                recrawl=True,
                recrawl_initial=0.4,
                recrawl_min=0.1,
                recrawl_max=3.0,
                max_seconds=5.0,
            )
        )
        log = web.log.entries()
    finally:
        web.stop()
    assert report.stop_reason == "max-seconds"
    periods = {c["url"]: c["period"] for c in web.manifest()["changing"]}
    fast = next(u for u, p in periods.items() if p == 30.0)
    never = next(u for u, p in periods.items() if p is None)
    db = sqlite3.connect(out / "crawl.sqlite")
    db.row_factory = sqlite3.Row
    rows = {r["url"]: r for r in db.execute("SELECT * FROM urls")}
    db.close()
    events = read_events(out / "events.jsonl")

    # The page that keeps changing is fetched again and again, each change sent on ...
    assert rows[fast]["fetches"] >= 3 and rows[fast]["changes"] >= 2
    assert rows[fast]["interval"] < 0.4
    assert sum(e["url"] == fast for e in events) == rows[fast]["changes"] + 1
    # ... the page that never changes backs off, answers 304, and sends one event only.
    assert rows[never]["fetches"] >= 2 and rows[never]["interval"] > 0.4
    assert sum(e["url"] == never for e in events) == 1
    never_path = never.split(str(web.port), 1)[1]
    answers = [e.status for e in log if e.host == "blog.sandbox.test" and e.target == never_path]
    assert answers[0] == 200 and 304 in answers[1:]
    # Each (urlHash, contentHash) is sent once: an idempotent stream for the indexer.
    keys = [(e["urlHash"], e["contentHash"]) for e in events]
    assert len(keys) == len(set(keys))


def test_robots_txt_is_read_again_when_its_copy_expires(tmp_path: Path) -> None:
    web = Sandbox(SandboxConfig.small(crawl_delay=0.1)).start()
    try:
        report = crawl(
            CrawlConfig(
                tmp_path / "t",
                seeds=[web.url("docs", "/")],
                hosts=web.hosts(),
                strict_hosts=True,
                min_delay=0.01,
                robots_ttl=0.5,  # a copy is trusted for half a second only
                max_seconds=2.5,
            )
        )
        log = [e for e in web.log.entries() if e.host == "docs.sandbox.test"]
    finally:
        web.stop()
    assert report.pages > 5
    robots = [e for e in log if e.path == "/robots.txt"]
    assert len(robots) >= 2 and log[0].path == "/robots.txt"
