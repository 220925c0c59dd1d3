"""Adaptive recrawl: intervals halve on change and grow when not; unchanged pages send nothing."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from warcio.archiveiterator import ArchiveIterator

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
    # The archive holds what Heritrix and StormCrawler users look for (issue 28 item 18).
    records = _warc_records(out)
    assert records[0][0] == "warcinfo" and "LookupBot" in records[0][3]
    by_id = {r[4]: r for r in records}
    responses = [r for r in records if r[0] == "response"]
    not_modified = [r for r in records if r[0] == "revisit" and r[2] and "not-modified" in r[2]]
    assert sum(r[1] == never for r in not_modified) == answers.count(304)
    requests = [r for r in records if r[0] == "request"]
    # every answer (a 304 too) with the request that asked for it
    assert len(requests) == len(responses) + len(not_modified)
    for _, url, _, _, _, concurrent in requests:
        assert by_id[concurrent][0] in ("response", "revisit") and by_id[concurrent][1] == url
    assert any(url.endswith("/robots.txt") for _, url, *_ in responses)  # robots archived


def _warc_records(out: Path) -> list[tuple[str, str, str | None, str, str, str | None]]:
    """(type, target URI, profile, warcinfo text, record id, concurrent-to) of every record."""
    found = []
    for path in sorted((out / "warc").glob("*.warc.gz")):
        with open(path, "rb") as f:
            for r in ArchiveIterator(f):
                h = r.rec_headers
                text = r.content_stream().read().decode() if r.rec_type == "warcinfo" else ""
                found.append(
                    (
                        r.rec_type, h.get_header("WARC-Target-URI") or "",
                        h.get_header("WARC-Profile"), text, h.get_header("WARC-Record-ID"),
                        h.get_header("WARC-Concurrent-To"),
                    )
                )  # fmt: skip
    return found


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
                robots_ttl=0.3,  # a copy is trusted for 0.3 s only
                # 8 pages at the file's Crawl-delay of 0.1 s take at least 0.7 s, so the
                # copy expires during the crawl however fast or loaded the machine is
                max_pages=8,
                max_seconds=120,
            )
        )
        log = [e for e in web.log.entries() if e.host == "docs.sandbox.test"]
    finally:
        web.stop()
    assert report.stop_reason == "max-pages" and report.pages == 8
    robots = [e for e in log if e.path == "/robots.txt"]
    assert len(robots) >= 2 and log[0].path == "/robots.txt"
