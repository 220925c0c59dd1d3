"""Sitemaps as sites serve them (issue 28 item 13): XML, gzip, text, indexes, RSS, Atom,
and ``/sitemap.xml`` tried when robots.txt names none.

The parser is checked against ``ultimate-sitemap-parser`` (``usp``), an established
library reading the same formats, on random sitemaps built by hypothesis; then against
the cases a crawler meets: damaged gzip, a gzip bomb, entity declarations, HTML served
where a sitemap was named. A crawl of a loopback site with a gzip sitemap index, a text
sitemap, a feed and a broken sitemap shows the crawler fetching what they list and
counting the broken one.
"""

from __future__ import annotations

import gzip
import logging
import threading
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from xml.sax.saxutils import escape

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from usp.tree import sitemap_from_str

from lookup.crawler import CrawlConfig, crawl
from lookup.crawler.dedup import DuplicateDetector
from lookup.crawler.fetcher import FetchResult
from lookup.crawler.frontier import FrontierEntry
from lookup.crawler.outcomes import FetchContext, RuleKit, decide
from lookup.crawler.output import WarcStore
from lookup.crawler.sitemaps import MAX_UNPACKED_BYTES, SitemapError, parse_sitemap, sitemap_sources
from lookup.crawler.traps import TrapGuard, TrapPolicy
from lookup.kit.urlnorm import url_hash

logging.getLogger("usp").setLevel(logging.ERROR)

paths = st.lists(
    st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-", min_size=1, max_size=12),
    min_size=1,
    max_size=20,
    unique=True,
)
days = st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2030, 1, 1)).map(
    lambda d: d.replace(microsecond=0, tzinfo=UTC)
)


def _urlset(urls: list[tuple[str, datetime]]) -> str:
    rows = "".join(
        f"<url><loc>{escape(u)}</loc><lastmod>{d.isoformat()}</lastmod></url>" for u, d in urls
    )
    return f'<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{rows}</urlset>'


def _rss(urls: list[tuple[str, datetime]]) -> str:
    rows = "".join(
        f"<item><title>t</title><link>{escape(u)}</link>"
        f"<pubDate>{d.strftime('%a, %d %b %Y %H:%M:%S GMT')}</pubDate></item>"
        for u, d in urls
    )
    return (
        f'<?xml version="1.0"?><rss version="2.0"><channel><title>x</title>{rows}</channel></rss>'
    )


def _atom(urls: list[tuple[str, datetime]]) -> str:
    rows = "".join(
        f'<entry><title>t</title><link rel="alternate" href="{escape(u)}"/>'
        f"<updated>{d.isoformat()}</updated></entry>"
        for u, d in urls
    )
    return f'<?xml version="1.0"?><feed xmlns="http://www.w3.org/2005/Atom"><title>x</title>{rows}</feed>'


@settings(max_examples=60, deadline=None)
@given(names=paths, stamps=st.lists(days, min_size=20, max_size=20), form=st.sampled_from(
    ["urlset", "rss", "atom", "text"]), packed=st.booleans())  # fmt: skip
def test_pages_and_dates_equal_an_established_parser(
    names: list[str], stamps: list[datetime], form: str, packed: bool
) -> None:
    urls = [(f"http://site.test/{n}.html", stamps[i]) for i, n in enumerate(names)]
    text = {"urlset": _urlset, "rss": _rss, "atom": _atom}.get(form, None)
    body = text(urls) if text else "\n".join(u for u, _ in urls) + "\n"
    raw = gzip.compress(body.encode()) if packed else body.encode()
    doc = parse_sitemap(raw)
    oracle = sitemap_from_str(body)
    assert [u for u, _ in doc.entries] == [p.url for p in oracle.all_pages()]
    if form == "urlset":
        expected = [p.last_modified.replace(tzinfo=UTC).timestamp() for p in oracle.all_pages()]
        assert [t for _, t in doc.entries] == expected
    elif form in ("rss", "atom"):
        assert [t for _, t in doc.entries] == [d.timestamp() for _, d in urls]
    else:
        assert all(t is None for _, t in doc.entries)


def test_an_index_lists_sitemaps_of_any_kind() -> None:
    body = (
        '<?xml version="1.0"?><sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        "<sitemap><loc>http://site.test/a.xml.gz</loc><lastmod>2026-01-02</lastmod></sitemap>"
        "<sitemap><loc>http://site.test/b.txt</loc></sitemap></sitemapindex>"
    )
    doc = parse_sitemap(body.encode())
    assert doc.lists_sitemaps and [u for u, _ in doc.entries] == [
        "http://site.test/a.xml.gz",
        "http://site.test/b.txt",
    ]
    oracle = sitemap_from_str(body)
    assert [s.url for s in oracle.sub_sitemaps] == [u for u, _ in doc.entries]


@pytest.mark.parametrize(
    ("body", "why"),
    [
        (b"", "empty"),
        (b"<html><body>Sign in</body></html>", "root element <html>"),
        (b"<urlset><url><loc>http://a.test/</loc></url>", "well-formed"),
        (b"\x1f\x8b\x08\x00garbage", "gzip"),
        (
            b'<?xml version="1.0"?><!DOCTYPE u [<!ENTITY a "aaaa">]><urlset>&a;</urlset>',
            "declares",
        ),
        (b"just some words\nand more words\n", "no http"),
    ],
)
def test_what_is_not_a_sitemap_says_why(body: bytes, why: str) -> None:
    with pytest.raises(SitemapError) as err:
        parse_sitemap(body)
    assert why in str(err.value)


def test_a_gzip_bomb_is_cut_at_the_size_limit() -> None:
    bomb = gzip.compress(b"\n" * (MAX_UNPACKED_BYTES + 1024))
    assert len(bomb) < 200_000
    with pytest.raises(SitemapError, match="larger than"):
        parse_sitemap(bomb)


class _Site(BaseHTTPRequestHandler):
    """robots.txt names a gzip sitemap index; the index names a text sitemap, an RSS feed
    and a broken sitemap; those list the pages."""

    paths: list[str] = []
    port = 0

    def do_GET(self) -> None:  # noqa: N802 (the http.server hook's name)
        type(self).paths.append(self.path)
        base = f"http://site.test:{type(self).port}"
        ctype = "text/html; charset=utf-8"
        if self.path == "/robots.txt":
            body, ctype = f"User-agent: *\nSitemap: {base}/index.xml.gz\n".encode(), "text/plain"
        elif self.path == "/index.xml.gz":
            index = (
                '<?xml version="1.0"?><sitemapindex '
                'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
                f"<sitemap><loc>{base}/list.txt</loc></sitemap>"
                f"<sitemap><loc>{base}/feed.rss</loc></sitemap>"
                f"<sitemap><loc>{base}/broken.xml</loc></sitemap></sitemapindex>"
            )
            body, ctype = gzip.compress(index.encode()), "application/x-gzip"
        elif self.path == "/list.txt":
            body, ctype = f"{base}/from-text.html\n".encode(), "text/plain"
        elif self.path == "/feed.rss":
            body = _rss([(f"{base}/from-feed.html", datetime(2026, 1, 5, tzinfo=UTC))]).encode()
            ctype = "application/rss+xml"
        elif self.path == "/broken.xml":
            body = b"<html><body>Maintenance</body></html>"
        else:
            body = b"<!DOCTYPE html><html><head><title>p</title></head><body>page</body></html>"
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def test_a_crawl_follows_gzip_index_text_and_feed_and_counts_the_broken_one(
    tmp_path: Path,
) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Site)
    _Site.paths, _Site.port = [], server.server_address[1]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        report = crawl(
            CrawlConfig(
                tmp_path / "out", seeds=[f"http://site.test:{_Site.port}/"],
                hosts={"site.test": "127.0.0.1"}, strict_hosts=True, min_delay=0.01,
                delay_factor=1.0, timeout=2.0, connect_timeout=1.0, max_seconds=60,
                concurrency=4,
            )
        )  # fmt: skip
    finally:
        server.shutdown()
        server.server_close()
    assert report.stop_reason == "done"
    assert {"/from-text.html", "/from-feed.html", "/broken.xml"} <= set(_Site.paths)
    assert report.outcomes.get("sitemap-unparseable") == 1
    assert report.outcomes.get("sitemap") == 3  # the index, the text list and the feed


# -- /sitemap.xml tried when robots.txt names none ------------------------------------------


def test_sitemap_xml_is_tried_only_when_robots_txt_names_none() -> None:
    named = ["http://s.test:81/a.xml.gz", "http://s.test:81/b.txt"]
    assert sitemap_sources("rules", named, "http://s.test:81") == [
        (named[0], "sitemap"), (named[1], "sitemap"),
    ]  # fmt: skip
    probe = [("http://s.test:81/sitemap.xml", "sitemap-probe")]
    assert sitemap_sources("rules", [], "http://s.test:81") == probe
    assert sitemap_sources("allow-all", [], "http://s.test:81") == probe  # robots.txt 404
    assert sitemap_sources("disallow-all", [], "http://s.test:81") == []  # no crawling at all


def _answer(kind: str, status: int, body: bytes, ctype: str, tmp_path: Path) -> FetchContext:
    url = "http://s.test/sitemap.xml"
    kit = RuleKit(
        CrawlConfig(tmp_path), DuplicateDetector(), WarcStore(tmp_path),
        TrapGuard(TrapPolicy()), {}, lambda _h: None,
    )  # fmt: skip
    res = FetchResult(url, "127.0.0.1", 0.0, 0.01, status, {"content-type": ctype}, [], body, ctype)
    entry = FrontierEntry(url, url_hash(url), "s.test", kind=kind)
    return FetchContext(entry, res, None, delay=0.1, retry_after=None, kit=kit)


@pytest.mark.parametrize(
    ("kind", "status", "body", "ctype", "outcome"),
    [
        ("sitemap-probe", 404, b"<h1>Not found</h1>", "text/html", "sitemap-absent"),
        ("sitemap-probe", 410, b"", "text/html", "sitemap-absent"),
        ("sitemap-probe", 403, b"", "text/html", "sitemap-absent"),
        # a "not found" page served as 200 where we only guessed: no sitemap either
        ("sitemap-probe", 200, b"<html><p>Nothing here</p></html>", "text/html", "sitemap-absent"),
        # but a broken sitemap at /sitemap.xml is still reported
        ("sitemap-probe", 200, b"<urlset><url>", "application/xml", "sitemap-unparseable"),
        ("sitemap-probe", 200, b"http://s.test/a.html\n", "text/plain", "sitemap"),
        ("sitemap-probe", 503, b"", "text/html", "retry:http-503"),
        # a sitemap robots.txt names is expected to be there: its 404 stays an HTTP 404
        ("sitemap", 404, b"", "text/html", "http-404"),
        ("sitemap", 200, b"<html><p>Maintenance</p></html>", "text/html", "sitemap-unparseable"),
    ],
)
def test_what_the_probe_finds(
    tmp_path: Path, kind: str, status: int, body: bytes, ctype: str, outcome: str
) -> None:
    out = decide(_answer(kind, status, body, ctype, tmp_path))
    assert out.name == outcome
    if outcome == "sitemap-absent":
        assert out.facts.reason and "robots.txt names none" in out.facts.reason
        assert not out.requeue and out.host_counter is None  # no error, no back-off
