"""RFC 9309 §2.3.1.2: a robots.txt that redirects to another host is followed (up to five
hops), each hop under the target host's politeness, and the file found there is obeyed."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from lookup.crawler import Sandbox, SandboxConfig, crawl
from tests.crawler.conftest import test_config

MIN_DELAY = 0.2


def test_a_robots_txt_redirected_to_www_is_followed_politely(tmp_path: Path) -> None:
    web = Sandbox(SandboxConfig.small()).start()
    try:
        out = tmp_path / "moved"
        seed = web.url("moved", "/")
        report = crawl(
            test_config(
                out, web, seeds=[seed], min_delay=MIN_DELAY, delay_factor=1.0, max_seconds=20
            )
        )
        log = web.log.entries()
        truth = web.sites.handlers["moved"].manifest()
    finally:
        web.stop()
    assert report.stop_reason == "done"
    db = sqlite3.connect(out / "crawl.sqlite")
    db.row_factory = sqlite3.Row
    rows = {r["url"]: r for r in db.execute("SELECT url, state, outcome FROM urls")}
    db.close()
    assert rows[seed]["outcome"] == "ok"  # crawled: the redirected file allows it
    for url in truth["allowed"]:
        assert rows[url]["state"] == "done" and rows[url]["outcome"] == "ok"
    for url in truth["disallowed"]:  # the rules of the file on www apply to the old name
        assert rows[url]["state"] == "blocked" and rows[url]["outcome"] == "robots-disallowed"
    # the server saw the hop on www, after a full pause on the shared address
    on_address = sorted(
        (e for e in log if e.host.endswith("moved.sandbox.test")), key=lambda e: e.start
    )
    robots = [(e.host, e.target, e.status) for e in on_address if e.target == "/robots.txt"]
    assert robots[:2] == [
        ("moved.sandbox.test", "/robots.txt", 301),
        ("www.moved.sandbox.test", "/robots.txt", 200),
    ]
    for before, after in zip(on_address, on_address[1:], strict=False):
        assert after.start - before.end >= MIN_DELAY * 0.99, (before, after)
