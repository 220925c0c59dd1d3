"""``GET /search/cached``: a crawled page's stored copy, from the WARC, safe in a browser."""

from __future__ import annotations

import io
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from selectolax.lexbor import LexborHTMLParser
from starlette.testclient import TestClient
from warcio.archiveiterator import ArchiveIterator
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from lookup.crawler import CrawlConfig, Sandbox, SandboxConfig, TrapPolicy, crawl
from lookup.search import build_index
from lookup.search.cached import CachedPages, StoredPages
from lookup.server import create_app

SEARCH = ["lookup.search.http:mount"]


@dataclass
class Served:
    client: TestClient
    crawl_dir: Path
    records: dict[str, tuple[str, str]]  # url → (record type, WARC-Date)


def warc_records(crawl_dir: Path) -> dict[str, tuple[str, str]]:
    """Every stored URL with its record type and fetch date, read with warcio directly."""
    out: dict[str, tuple[str, str]] = {}
    for path in sorted((crawl_dir / "warc").glob("*.warc.gz")):
        with path.open("rb") as f:
            for r in ArchiveIterator(f):
                if r.rec_type in ("response", "revisit"):
                    uri = r.rec_headers.get_header("WARC-Target-URI")
                    out[uri] = (r.rec_type, r.rec_headers.get_header("WARC-Date"))
    return out


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    web = Sandbox(SandboxConfig.small()).start()
    data = tmp_path_factory.mktemp("cached-data")
    crawl_dir = data / "crawls" / "crawl-1"
    try:
        crawl(
            CrawlConfig(
                crawl_dir, seeds=web.seeds(), hosts=web.hosts(), strict_hosts=True,
                min_delay=0.01, delay_factor=1.0, timeout=1.5, connect_timeout=1.0,
                max_pages=120, max_seconds=60, traps=TrapPolicy(host_budget=30, max_depth=6),
                concurrency=16, ca_bundle=web.ca_path,
            )
        )  # fmt: skip
    finally:
        web.stop()
    build_index(crawl_dir, data / "search", shards=2)
    with TestClient(create_app(data, subsystems=SEARCH), raise_server_exceptions=False) as c:
        yield Served(c, crawl_dir, warc_records(crawl_dir))


def banner_date(page: str) -> str:
    node = LexborHTMLParser(page).css_first("#fetched-at")
    assert node is not None
    return str(node.attributes["datetime"])


def test_every_stored_page_opens_with_its_fetch_date(served: Served) -> None:
    assert any(kind == "revisit" for kind, _ in served.records.values())  # exact duplicates too
    for url, (kind, date) in served.records.items():
        r = served.client.get("/search/cached", params={"url": url})
        assert r.status_code == 200, (url, r.text[:200])
        assert r.headers["content-type"].startswith("text/html")
        assert "script-src" not in r.headers["content-security-policy"]  # default-src 'none'
        assert "default-src 'none'" in r.headers["content-security-policy"]
        assert banner_date(r.text) == date
        assert "exists only inside the sandbox" in r.text
        if kind == "revisit":
            assert "exact duplicate" in r.text


def test_a_search_result_carries_the_link_to_its_stored_copy(served: Served) -> None:
    body = served.client.get("/search", params={"q": "python"}).json()
    assert body["results"]
    for item in body["results"]:
        assert list(item) == ["url", "title", "snippet", "score", "crawledAt", "cachedUrl"]
        r = served.client.get(item["cachedUrl"])
        assert r.status_code == 200
        assert item["url"] in LexborHTMLParser(r.text).css_first("#cached-banner").text()
        assert banner_date(r.text) == served.records[item["url"]][1]


def test_links_lead_to_stored_copies_or_are_marked(served: Served) -> None:
    home = next(
        u
        for u in served.records
        if urlsplit(u).hostname == "hub.sandbox.test" and urlsplit(u).path != "/robots.txt"
    )  # robots.txt answers are archived too
    page = LexborHTMLParser(served.client.get("/search/cached", params={"url": home}).text)
    hrefs = [a.attributes.get("href") or "" for a in page.css("a")]
    assert len(hrefs) >= 5  # the hub links every host; most were crawled
    for href in hrefs:
        assert href.startswith("/search/cached?url=")
        target = parse_qs(urlsplit(href).query)["url"][0]
        assert served.client.get(href).status_code == 200, target
    marked = page.css("span.link")  # hosts not stored (robots.txt failed): marked, not linked
    assert marked and all(s.css_first("a") is None for s in marked)


def test_a_crawl_is_chosen_by_name(served: Served) -> None:
    url = next(iter(served.records))
    r = served.client.get("/search/cached", params={"url": url, "crawl": "crawl-1"})
    assert r.status_code == 200
    # links inside keep naming the crawl they came from
    hrefs = [a.attributes["href"] for a in LexborHTMLParser(r.text).css("a.cached")]
    assert all(h.endswith("&crawl=crawl-1") for h in hrefs)


@pytest.mark.parametrize(
    ("params", "status", "code"),
    [
        ({}, 400, "MISSING_URL"),
        ({"url": "   "}, 400, "MISSING_URL"),
        ({"url": "http://nowhere.sandbox.test/"}, 404, "NOT_CACHED"),
        ({"url": "not a url at all"}, 404, "NOT_CACHED"),
        ({"url": "http://docs.sandbox.test/", "crawl": "../../etc"}, 400, "BAD_CRAWL"),
        ({"url": "http://docs.sandbox.test/", "crawl": "no-such-crawl"}, 404, "NO_SUCH_CRAWL"),
    ],
)
def test_bad_requests_answer_json(
    served: Served, params: dict[str, str], status: int, code: str
) -> None:
    r = served.client.get("/search/cached", params=params)
    assert r.status_code == status
    assert r.json()["error"] == code


def test_without_an_index_it_says_what_to_build(tmp_path: Path) -> None:
    with TestClient(create_app(tmp_path, subsystems=SEARCH), raise_server_exceptions=False) as c:
        r = c.get("/search/cached", params={"url": "http://docs.sandbox.test/"})
    assert r.status_code == 503 and r.json()["error"] == "NOT_BUILT"


# ------------------------------------------------------------------ a hostile stored page

HOSTILE = (
    """<!DOCTYPE html><html><head><title>Evil &lt;script&gt; title</title>
<script>document.title='pwned'</script><style>body{display:none}</style>
<meta http-equiv="refresh" content="0;url=http://evil.example/"><base href="http://evil.example/">
</head><body onload="alert(1)">
<h1 onclick="alert(2)" style="color:red">Hello <b>world</b></h1>
<p>Text with &lt;script&gt;alert(3)&lt;/script&gt; written out, and &amp; entities.</p>
<a href="javascript:alert(4)">js link</a>
<a href="JaVaScRiPt:alert(5)">js link 2</a>
<a href="data:text/html,<script>alert(6)</script>">data link</a>
<a href="/stored.html" onmouseover="alert(7)">a stored page</a>
<a href="http://other.sandbox.test/">a sandbox page not stored</a>
<a href="https://example.org/">the outside</a>
<iframe src="http://evil.example/"></iframe><object data="x.swf"></object>
<svg><script>alert(8)</script><a href="javascript:alert(9)">svg</a></svg>
<form action="http://evil.example/"><input name="q"><button>Go</button></form>
<img src="http://evil.example/pixel.gif" onerror="alert(10)" alt="a picture">
<div><span>"""
    + "<div>" * 400
    + "deep"
    + "</div>" * 400
    + """</span></div>
<noscript><a href="http://evil.example/">noscript</a></noscript>
<template><script>alert(11)</script></template>
</body></html>"""
)


def write_warc(crawl_dir: Path, pages: dict[str, str]) -> None:
    (crawl_dir / "warc").mkdir(parents=True)
    with (crawl_dir / "warc" / "crawl-00001.warc.gz").open("wb") as f:
        writer = WARCWriter(f, gzip=True)
        for url, text in pages.items():
            body = text.encode()
            headers = StatusAndHeaders(
                "200 OK", [("Content-Type", "text/html; charset=utf-8")], protocol="HTTP/1.1"
            )
            record = writer.create_warc_record(
                url, "response", payload=io.BytesIO(body), http_headers=headers,
                warc_headers_dict={"WARC-Date": "2026-01-02T03:04:05Z"},
            )  # fmt: skip
            writer.write_record(record)


def test_a_hostile_page_is_neutralised(tmp_path: Path) -> None:
    crawls = tmp_path / "crawls"
    write_warc(
        crawls / "c",
        {"http://bad.sandbox.test/": HOSTILE, "http://bad.sandbox.test/stored.html": "<p>ok</p>"},
    )
    out = CachedPages(crawls, lambda: crawls / "c").page("http://bad.sandbox.test/")
    doc = LexborHTMLParser(out)
    for tag in ("script", "iframe", "object", "embed", "form", "input", "button", "img",
                "svg", "base", "noscript", "template"):  # fmt: skip
        assert doc.css(tag) == [], tag
    # the cached view's own charset and style, in its head; none of the page's
    assert [m.attributes for m in doc.css("meta")] == [{"charset": "utf-8"}]
    assert len(doc.css("style")) == 1 and doc.css_first("div.page style") is None
    for node in doc.root.traverse():
        for name in node.attributes:
            assert not name.lower().startswith("on"), (node.tag, name)
            assert name in ("href", "class", "title", "id", "datetime", "lang", "charset")
    low = out.lower()
    assert "javascript:" not in low and "data:text" not in low and "evil.example" not in low
    assert "alert(" not in low.replace("&lt;script&gt;alert(3)", "")  # only the escaped text
    assert "&lt;script&gt;alert(3)&lt;/script&gt;" in out  # text stays text, escaped
    assert "Evil &lt;script&gt; title" in out
    links = doc.css("a")
    assert [a.text() for a in links] == ["a stored page"]
    assert links[0].attributes["href"] == (
        "/search/cached?url=http%3A%2F%2Fbad.sandbox.test%2Fstored.html"
    )
    marks = [m.text() for m in doc.css("sup.mark")]
    assert marks == ["sandbox only", "outside"]
    assert "deep" in out and "[image: a picture]" in out
    assert doc.css_first("#fetched-at").attributes["datetime"] == "2026-01-02T03:04:05Z"


def test_a_copy_stored_twice_shows_the_newest(tmp_path: Path) -> None:
    crawl_dir = tmp_path / "c"
    write_warc(crawl_dir, {"http://a.sandbox.test/": "<p>first</p>"})
    store = StoredPages(crawl_dir)
    assert store.find("http://a.sandbox.test/") is not None
    assert store.find("HTTP://A.SANDBOX.TEST:80/#top") is not None  # any spelling of it
    second = crawl_dir / "warc" / "crawl-00002.warc.gz"
    shutil.copy(crawl_dir / "warc" / "crawl-00001.warc.gz", second)  # a resumed run's file
    copy = store.find("http://a.sandbox.test/")
    assert copy is not None and copy.path == second  # the later file wins
