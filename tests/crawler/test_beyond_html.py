"""What the web serves besides HTML links, end to end (issue 28 items 13 and 14).

One crawl of the sandbox's press host (and the intl host, whose ``/sitemap.xml`` is a 404),
limited to those two hosts, then an index of it and searches:

- ``/sitemap.xml`` is tried when robots.txt names no sitemap — after robots.txt, in the
  host's turn — and what it lists is crawled (robots.txt still applies); a 404 there is the
  outcome ``sitemap-absent``, never an error;
- feeds a page announces in ``<link rel="alternate">`` are read as sitemaps, and the pages
  only they list are crawled;
- a meta refresh is followed like a redirect: through scope and robots.txt, one hop of the
  redirect limit, and the crawl's outcomes say it was a meta refresh; one too slow, or only
  inside ``<noscript>``, leaves an ordinary page;
- PDFs are indexed with their text and title (metadata title, else the first line), found by
  a word of their body, and kept byte for byte in the WARC; a damaged one is counted.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from lookup.crawler import CrawlReport, Sandbox, SandboxConfig, crawl
from lookup.crawler.output import read_events, read_record
from lookup.crawler.sandbox import LoggedRequest
from lookup.crawler.sandbox.sites.press import PDF_REPORTS, pdf_document
from lookup.crawler.scope import CrawlScope
from lookup.kit.urlnorm import normalize_url
from lookup.search import SearchService, build_index
from lookup.server import create_app
from tests.crawler.conftest import MIN_DELAY, test_config


@dataclass
class PressCrawl:
    web: Sandbox
    press: dict[str, Any]
    out: Path
    report: CrawlReport
    log: list[LoggedRequest]
    db: sqlite3.Connection

    def row(self, url: str) -> sqlite3.Row:
        found = self.db.execute(
            "SELECT * FROM urls WHERE url = ?", (normalize_url(url) or url,)
        ).fetchone()
        assert found is not None, f"the crawl never admitted {url}"
        return found

    def paths(self, host: str) -> list[str]:
        return [e.target for e in sorted(self.log, key=lambda e: e.start) if e.host == host]


@pytest.fixture(scope="module")
def press(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PressCrawl]:
    web = Sandbox(SandboxConfig.small()).start()
    out = tmp_path_factory.mktemp("press") / "crawls" / "crawl-1"  # a data directory's layout
    try:
        web.log.clear()
        config = test_config(
            out, web,
            seeds=[web.url("press", "/"), web.url("intl", "/")],
            scope=CrawlScope(allow_domains=("press.sandbox.test", "intl.sandbox.test")),
            max_seconds=90, concurrency=8,
        )  # fmt: skip
        report = crawl(config)
        log = web.log.entries()
        manifest = web.manifest()
    finally:
        web.stop()
    db = sqlite3.connect(out / "crawl.sqlite")
    db.row_factory = sqlite3.Row
    try:
        yield PressCrawl(web, manifest["hostile"]["press"], out, report, log, db)
    finally:
        db.close()


def _index(press: PressCrawl) -> Path:
    """The search index of the crawl, built once, where the server looks for it."""
    index = press.out.parent.parent / "search"
    if not index.exists():
        build_index(press.out, index, shards=1)
    return index


def _host(web: Sandbox, key: str) -> str:
    """A host's name as the sandbox's request log writes it (no port)."""
    return web.world.names[key]


def test_the_crawl_ends_and_its_report_names_the_new_outcomes(press: PressCrawl) -> None:
    r = press.report
    assert r.stop_reason == "done"
    assert r.outcomes.get("crawler-error", 0) == 0
    assert r.outcomes.get("meta-refresh", 0) >= 1
    assert r.outcomes.get("sitemap-absent") == 1  # intl's /sitemap.xml: a 404
    assert r.outcomes.get("unreadable-pdf") == 1
    saved = json.loads((press.out / "report.json").read_text())
    assert saved["outcomes"] == r.outcomes


def test_sitemap_xml_is_tried_when_robots_txt_names_none(press: PressCrawl) -> None:
    p = press.press
    paths = press.paths(p["host"])
    assert paths[0] == "/robots.txt" and paths.count("/sitemap.xml") == 1
    probe = press.row(p["sitemap_probe"])
    assert probe["kind"] == "sitemap-probe" and probe["outcome"] == "sitemap"
    # the page only the sitemap lists is crawled; the one robots.txt disallows is not asked
    assert press.row(p["only_in_sitemap"])["outcome"] == "ok"
    assert "/archive/2019-annual.html" in paths
    blocked = press.row(p["disallowed_in_sitemap"])
    assert blocked["state"] == "blocked" and "/internal/draft.html" not in paths


def test_a_404_at_sitemap_xml_is_no_error(press: PressCrawl) -> None:
    intl = _host(press.web, "intl")
    assert press.paths(intl).count("/sitemap.xml") == 1
    row = press.row(press.web.url("intl", "/sitemap.xml"))
    assert row["outcome"] == "sitemap-absent" and row["state"] == "done"
    assert "404" in row["reason"] and press.report.outcomes.get("http-404", 0) == 0


def test_the_probe_waits_its_turn_like_any_request(press: PressCrawl) -> None:
    for key in ("press", "intl"):
        entries = sorted((e for e in press.log if e.host == _host(press.web, key)),
                         key=lambda e: e.start)  # fmt: skip
        assert entries[0].target == "/robots.txt"
        for prev, nxt in zip(entries, entries[1:], strict=False):
            assert nxt.start >= prev.end + MIN_DELAY * 0.99, (prev.target, nxt.target)


def test_feeds_a_page_announces_are_discovery_sources(press: PressCrawl) -> None:
    p = press.press
    for feed in p["feeds"]:
        row = press.row(feed)
        assert row["kind"] == "sitemap" and row["outcome"] == "sitemap", feed
    for url in p["only_in_feeds"]:
        assert press.row(url)["outcome"] == "ok", url


def test_a_meta_refresh_is_followed_like_a_redirect(press: PressCrawl) -> None:
    refresh = press.press["refresh"]
    now = press.row(refresh["now"]["from"])
    assert now["outcome"] == "meta-refresh" and "meta refresh" in now["reason"]
    target = press.row(refresh["now"]["to"])
    assert target["outcome"] == "ok" and target["redirects"] == 1
    hops = press.db.execute("SELECT from_url, to_url FROM redirects").fetchall()
    assert (refresh["now"]["from"], refresh["now"]["to"]) in {tuple(h) for h in hops}
    # too slow to be a redirect, or only for browsers without scripts: an ordinary page
    assert press.row(refresh["later"])["outcome"] == "ok"
    assert press.row(refresh["noscript"])["outcome"] == "ok"


def test_meta_refresh_hops_count_toward_the_redirect_limit(press: PressCrawl) -> None:
    chain = press.press["refresh"]["chain"]
    limit = 5  # the crawl's max_redirects
    for url in chain[: limit + 1]:
        assert press.row(url)["outcome"] == "meta-refresh", url
    cut = press.db.execute("SELECT * FROM cuts WHERE rule = 'redirect-limit'").fetchall()
    assert [c["url"] for c in cut] == [chain[limit + 1]]
    assert not any(e.target == "/refresh/chain/7" for e in press.log)


def test_a_meta_refresh_goes_through_robots_and_scope(press: PressCrawl) -> None:
    refresh = press.press["refresh"]
    private = refresh["to_disallowed"]
    assert press.row(private["from"])["outcome"] == "meta-refresh"
    assert press.row(private["to"])["state"] == "blocked"
    assert not any(e.target == "/internal/secret.html" for e in press.log)
    away = refresh["to_other_host"]
    assert press.row(away["from"])["outcome"] == "meta-refresh"
    cuts = press.db.execute(
        "SELECT rule FROM cuts WHERE url = ?", (normalize_url(away["to"]),)
    ).fetchall()
    assert [c["rule"] for c in cuts] == ["out-of-scope"]
    assert not any(e.host == _host(press.web, "hub") for e in press.log)


def test_pdfs_are_indexed_with_their_title_and_kept_as_served(press: PressCrawl) -> None:
    events = {e["url"]: e for e in read_events(press.out / "events.jsonl")}
    for url, title in press.press["pdfs"].items():
        event = events[normalize_url(url)]
        assert event["type"] == "PageFetched" and event["title"] == title
        path = url.split(str(press.web.port), 1)[1]
        _kind, _headers, body = read_record(press.out, event["storageKey"])
        assert body == pdf_document(*PDF_REPORTS[path]), "the WARC holds the bytes served"
    damaged = press.row(press.press["damaged_pdf"])
    assert damaged["outcome"] == "unreadable-pdf" and "PDF" in damaged["reason"]
    assert normalize_url(press.press["damaged_pdf"]) not in events


@pytest.mark.parametrize(
    ("query", "path", "title"),
    [
        ("cormorant", "/reports/annual-report.pdf", "Harbour Authority Annual Report"),
        ("tidal turbines breakwater", "/reports/annual-report.pdf", None),
        ("samphire", "/reports/field-notes.pdf", "Field Notes from the Salt Marsh"),
        ("curlew sluice", "/reports/field-notes.pdf", None),
    ],
)
def test_the_search_finds_a_pdf_by_a_word_of_its_body(
    press: PressCrawl, query: str, path: str, title: str | None
) -> None:
    svc = SearchService(_index(press), realtime=False)
    try:
        svc.reload()
        results = svc.search(query)["results"]
    finally:
        svc.close()
    assert results, query
    assert results[0]["url"] == normalize_url(press.web.url("press", path))
    if title is not None:
        assert results[0]["title"] == title


def test_the_cached_copy_of_a_pdf_shows_its_text(press: PressCrawl) -> None:
    _index(press)
    url = normalize_url(press.web.url("press", "/reports/annual-report.pdf"))
    app = create_app(press.out.parent.parent, subsystems=["lookup.search.http:mount"])
    with TestClient(app, raise_server_exceptions=False) as client:
        r = client.get("/search/cached", params={"url": url})
    assert r.status_code == 200
    assert "Harbour Authority Annual Report" in r.text and "Cormorant numbers" in r.text
