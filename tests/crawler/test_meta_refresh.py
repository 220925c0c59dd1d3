"""Meta refresh read as browsers read it, and followed like a redirect (issue 28 item 14).

:func:`parse_refresh` follows the HTML standard's declarative refresh steps; on the
``N; url=U`` form Scrapy relies on, it is checked against w3lib's ``get_meta_refresh``
(what Scrapy's ``MetaRefreshMiddleware`` calls) on random values. The outcome rule is
asked alone: a refresh sooner than the maximum delay is a redirect hop, counted against
the same limit; a slow one, a refresh of the page itself or one inside ``<noscript>`` is
an ordinary page.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from urllib.parse import urljoin

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from w3lib.html import get_meta_refresh

from lookup.crawler.config import CrawlConfig
from lookup.crawler.dedup import DuplicateDetector
from lookup.crawler.fetcher import FetchResult
from lookup.crawler.frontier import FrontierEntry
from lookup.crawler.outcomes import FetchContext, RuleKit, decide, meta_refresh
from lookup.crawler.output import WarcStore, read_record
from lookup.crawler.parse import parse_html, parse_refresh
from lookup.crawler.state import UrlRecord
from lookup.crawler.traps import TrapGuard, TrapPolicy
from lookup.kit.urlnorm import url_hash

BASE = "http://a.test/dir/page.html"
TEXT = " ".join(f"word{i} topic{i % 11}" for i in range(80))

Make = Callable[..., FetchContext]


def _page(head: str = "", body: str = "") -> str:
    return f"<html><head><title>T</title>{head}</head><body><main>{TEXT}{body}</main></body></html>"


def _refresh(content: str) -> str:
    return f'<meta http-equiv="refresh" content="{content}">'


# -- parsing -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("0; url=/a", (0.0, "/a")),
        ("5;URL='/b'", (5.0, "/b")),
        ('0;url="/c" trailing', (0.0, "/c")),
        ("0, /d", (0.0, "/d")),  # the standard allows a comma and no "url="
        ("0 ; url = /e", (0.0, "/e")),
        ("1.5; url=/f", (1.5, "/f")),
        (".5;url=/g", (0.5, "/g")),
        ("3", (3.0, "")),  # a reload of the page itself
        ("0; url=", (0.0, "")),
        ("0; ufoo", (0.0, "foo")),  # a partial "url" is consumed, as browsers do
        ("x; url=/h", None),
        ("5x; url=/i", None),
        ("", None),
    ],
)
def test_the_standards_refresh_steps(content: str, expected: tuple[float, str] | None) -> None:
    assert parse_refresh(content) == expected


_path = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-_./", min_size=1, max_size=20)


@settings(max_examples=300, deadline=None)
@given(
    delay=st.one_of(
        st.integers(0, 10_000).map(str),
        st.tuples(st.integers(0, 999), st.integers(0, 999)).map(lambda t: f"{t[0]}.{t[1]}"),
    ),
    path=_path,
    quote=st.sampled_from(["", "'", '"']),
    url_word=st.sampled_from(["url", "URL", "Url"]),
    space=st.sampled_from(["", " ", "  "]),
)
def test_the_url_form_agrees_with_w3lib(
    delay: str, path: str, quote: str, url_word: str, space: str
) -> None:
    """Scrapy's reader (w3lib) as the oracle, on the form it understands."""
    content = f"{space}{delay}{space};{space}{url_word}={space}{quote}{path}{quote}"
    attr = "'" if quote == '"' else '"'
    html = f"<html><head><meta http-equiv={attr}refresh{attr} content={attr}{content}{attr}>"
    oracle = get_meta_refresh(html, BASE)
    ours = parse_html(html + "</head><body></body></html>").refresh
    assert ours is not None and oracle[0] is not None
    assert ours[0] == pytest.approx(oracle[0])
    assert urljoin(BASE, ours[1]) == oracle[1]


def test_a_refresh_inside_noscript_or_script_is_ignored() -> None:
    inside = _page(head=f"<noscript>{_refresh('0; url=/away')}</noscript>")
    assert parse_html(inside).refresh is None
    in_body = _page(body=f"<noscript><div>{_refresh('0; url=/away')}</div></noscript>")
    assert parse_html(in_body).refresh is None
    scripted = _page(body=f"<script>document.write('{_refresh('0; url=/away')}')</script>")
    assert parse_html(scripted).refresh is None
    both = _page(head=f"<noscript>{_refresh('0; url=/ns')}</noscript>{_refresh('2; url=/b')}")
    assert parse_html(both).refresh == (2.0, "/b")
    other = _page(head='<meta http-equiv="content-type" content="text/html; charset=utf-8">')
    assert parse_html(other).refresh is None


def test_feeds_are_read_from_alternate_links_only() -> None:
    head = (
        '<link rel="alternate" type="application/rss+xml" href="/r.xml">'
        '<link rel="Alternate" type="application/atom+xml; charset=utf-8" href="/a.xml">'
        '<link rel="alternate" type="text/html" hreflang="fr" href="/fr/">'
        '<link rel="stylesheet" type="application/rss+xml" href="/not-a-feed.xml">'
        '<link rel="alternate" type="application/rss+xml" href="">'
    )
    assert parse_html(_page(head=head)).feeds == ["/r.xml", "/a.xml"]


# -- the outcome rule ----------------------------------------------------------------------


@pytest.fixture
def make(tmp_path: Path) -> Make:
    config = CrawlConfig(tmp_path, max_redirects=2)
    warc, traps = WarcStore(tmp_path), TrapGuard(TrapPolicy())
    kit = RuleKit(config, DuplicateDetector(), warc, traps, {}, lambda _h: None)

    def make(
        html: str, *, redirects: int = 0, row: UrlRecord | None = None, url: str = BASE
    ) -> FetchContext:
        entry = FrontierEntry(url, url_hash(url), "a.test", depth=1, redirects=redirects)
        res = FetchResult(
            url, "127.0.0.2", 1000.0, 0.01, 200, {}, [("Content-Type", "text/html")],
            html.encode(), "text/html", "utf-8",
        )  # fmt: skip
        return FetchContext(entry, res, row, delay=0.5, retry_after=None, kit=kit)

    return make


def test_a_prompt_refresh_is_a_redirect_hop(make: Make, tmp_path: Path) -> None:
    out = decide(make(_page(head=_refresh("0; url=../moved.html"))))
    assert out.name == "meta-refresh" and out.event is None  # not indexed
    assert out.links == [("http://a.test/moved.html", 1, BASE, "page", 1)]
    assert out.facts.reason == "meta refresh after 0 s → http://a.test/moved.html"
    assert out.facts.storage_key is not None  # archived as served
    assert read_record(tmp_path, out.facts.storage_key)[2].startswith(b"<html>")


def test_meta_refresh_hops_share_the_redirect_limit(make: Make) -> None:
    last = meta_refresh(make(_page(head=_refresh("0; url=/next")), redirects=1))
    assert last is not None and last.links[0][3] == "page" and last.links[0][4] == 2
    over = meta_refresh(make(_page(head=_refresh("0; url=/next")), redirects=2))
    assert over is not None and over.name == "meta-refresh"
    assert over.links == [("http://a.test/next", 1, BASE, "redirect-limit", 3)]
    assert over.facts.reason is not None and over.facts.reason.startswith("redirect limit 2")


@pytest.mark.parametrize(
    "head",
    [
        _refresh("100; url=/later"),  # Scrapy's METAREFRESH_MAXDELAY: not sooner than 100 s
        _refresh("3600; url=/later"),
        _refresh("30"),  # the page reloads itself
        _refresh(f"0; url={BASE}"),
        _refresh("0; url=javascript:alert(1)"),
        f"<noscript>{_refresh('0; url=/away')}</noscript>",
    ],
)
def test_what_is_no_redirect_leaves_an_ordinary_page(make: Make, head: str) -> None:
    ctx = make(_page(head=head))
    assert meta_refresh(ctx) is None
    assert decide(ctx).name == "ok"


def test_an_indexed_page_that_now_refreshes_away_leaves_the_index(make: Make) -> None:
    row = UrlRecord(url_hash(BASE), BASE, "a.test", "done", fetches=1, outcome="ok")
    out = decide(make(_page(head=_refresh("0; url=/new")), row=row))
    assert out.name == "meta-refresh" and out.event is not None
    assert out.event["type"] == "PageRemoved" and out.event["reason"] == "moved"
    assert out.event["location"] == "http://a.test/new"
