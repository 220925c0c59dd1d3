"""Two-tier rendering without a browser (issue 28 item 15): the detector, the records, the
report, the settings and the planner — and a crawl whose browser is missing.

The detector is judged on the sandbox app host's pages both ways (script-built shells
flagged, server-built pages not), its text measure against an independent one written
with the standard library's HTML parser (hypothesis), and its invariants: no script, no
render; more visible text never turns a page into a candidate.
"""

from __future__ import annotations

import html
import json
from html.parser import HTMLParser
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from warcio.archiveiterator import ArchiveIterator

from lookup import capacity as cap
from lookup.crawler import CrawlConfig, Sandbox, SandboxConfig, TrapPolicy, crawl
from lookup.crawler.fetcher import FetchResult
from lookup.crawler.output import WarcStore, read_events, read_record
from lookup.crawler.render import RenderedResult, RenderThreshold, render_reason, script_signals
from lookup.crawler.sandbox.sites import World
from lookup.crawler.sandbox.sites.spa import SpaSite
from lookup.crawler.sandbox.web import Request
from lookup.crawler.session import CrawlSettings
from lookup.kit.crawlevents import event_errors
from lookup.search.events import PageStore, page_from_payload, parse_event

THRESHOLD = RenderThreshold()


def _app_pages() -> tuple[SpaSite, dict[str, str]]:
    world = World(SandboxConfig.small(port=8600))
    site = SpaSite(world)
    truth = site.manifest()
    urls = [*truth["script_built"], *truth["server_built"]]  # type: ignore[misc]
    pages = {}
    for url in urls:
        path = url.split(":8600", 1)[1]
        res = site.handle(Request("app.sandbox.test", "127.0.0.19", "GET", path, "", {}))
        body = res.body if isinstance(res.body, str) else res.body.decode()
        pages[url] = body
    return site, pages


def test_the_detector_flags_the_script_built_pages_and_only_them() -> None:
    site, pages = _app_pages()
    truth = site.manifest()
    for url in truth["script_built"]:  # type: ignore[union-attr]
        assert render_reason(script_signals(pages[url]), THRESHOLD) is not None, url
    for url in truth["server_built"]:  # type: ignore[union-attr]
        assert render_reason(script_signals(pages[url]), THRESHOLD) is None, url


def test_each_signal_on_its_own_page() -> None:
    _, pages = _app_pages()
    by_path = {u.split(":8600", 1)[1]: body for u, body in pages.items()}
    shell = script_signals(by_path["/guide/oolong"])
    assert shell.app_root == "div#root" and shell.external_scripts == 1
    assert "empty app root" in (render_reason(shell, THRESHOLD) or "")
    news = script_signals(by_path["/news.html"])  # data inline, no app-root id
    assert news.app_root is None and news.script_share > 0.5
    assert "inline script" in (render_reason(news, THRESHOLD) or "")
    thin = script_signals(by_path["/status.html"])  # little text, but nothing to run
    assert thin.scripts == 0 and thin.text_chars < THRESHOLD.text_chars
    # The threshold is the knob: a stricter one keeps even a shell as fetched.
    assert render_reason(shell, RenderThreshold(text_chars=10)) is None


@pytest.mark.parametrize(
    ("snippet", "root"),
    [
        ('<div id="__next"></div>', "div#__next"),
        ("<app-root></app-root>", "app-root"),
        ('<div data-reactroot=""></div>', "div[data-reactroot]"),
        ('<div id="app"><script>boot()</script></div>', "div#app"),
    ],
)
def test_framework_mount_points(snippet: str, root: str) -> None:
    doc = f"<html><body>{snippet}<script src='/a.js'></script></body></html>"
    assert script_signals(doc).app_root == root


def test_a_server_rendered_app_root_is_not_empty() -> None:
    words = "tea " * 20
    doc = f"<html><body><div id='root'><p>{words}</p></div><script src=a.js></script></body>"
    assert script_signals(doc).app_root is None


def test_json_ld_is_data_not_script() -> None:
    blob = json.dumps({"@type": "Article", "text": "x" * 5000})
    doc = f"<html><head><script type='application/ld+json'>{blob}</script></head><body>Hi</body>"
    s = script_signals(doc)
    assert s.scripts == 0 and render_reason(s, THRESHOLD) is None


# ---------------------------------------------------------------- hypothesis: invariants


class _TextOracle(HTMLParser):
    """Visible body text by the standard library's parser (the oracle)."""

    HIDDEN = {"script", "style", "noscript", "template"}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.hidden = 0
        self.in_body = False
        self.parts: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.in_body = self.in_body or tag == "body"
        self.hidden += tag in self.HIDDEN

    def handle_endtag(self, tag: str) -> None:
        self.hidden -= tag in self.HIDDEN and self.hidden > 0

    def handle_data(self, data: str) -> None:
        if self.in_body and not self.hidden:
            self.parts.append(data)

    def text(self) -> str:
        return " ".join(" ".join(self.parts).split())


WORDS = st.text(alphabet="abcdefghij klmno", min_size=0, max_size=40).map(html.escape)
BLOCK = st.one_of(
    WORDS.map(lambda w: f"<p>{w}</p>"),
    WORDS.map(lambda w: f"<span>{w}</span>"),
    WORDS.map(lambda w: f"<script>var x = '{w}';</script>"),
    WORDS.map(lambda w: f"<style>p {{ color: red }} /* {w} */</style>"),
    WORDS.map(lambda w: f"<noscript>{w}</noscript>"),
    st.just('<script src="/app.js"></script>'),
    st.just('<div id="root"></div>'),
)


def _doc(blocks: list[str]) -> str:
    return (
        "<!DOCTYPE html><html><head><title>t</title></head><body>"
        + "".join(blocks)
        + ("</body></html>")
    )


@settings(max_examples=150, deadline=None)
@given(st.lists(BLOCK, max_size=12))
def test_visible_text_agrees_with_the_stdlib_parser(blocks: list[str]) -> None:
    doc = _doc(blocks)
    oracle = _TextOracle()
    oracle.feed(doc)
    assert script_signals(doc).text_chars == len(oracle.text())


@settings(max_examples=150, deadline=None)
@given(st.lists(BLOCK, max_size=12))
def test_a_page_without_scripts_is_never_rendered(blocks: list[str]) -> None:
    doc = _doc([b for b in blocks if "<script" not in b])
    assert render_reason(script_signals(doc), THRESHOLD) is None


@settings(max_examples=150, deadline=None)
@given(st.lists(BLOCK, max_size=12), st.integers(min_value=0, max_value=400))
def test_more_visible_text_never_makes_a_candidate(blocks: list[str], extra: int) -> None:
    doc = _doc(blocks)
    more = _doc([*blocks, f"<p>{'w' * (THRESHOLD.text_chars + 1 + extra)}</p>"])
    assert render_reason(script_signals(more), THRESHOLD) is None
    # ... and a page with an empty app root stays a candidate while text is added up to
    # the threshold (a page flagged for its script share alone may not: text dilutes it).
    if script_signals(doc).app_root is not None and render_reason(script_signals(doc), THRESHOLD):
        room = THRESHOLD.text_chars - script_signals(doc).text_chars - 1
        if room > 0:
            grown = _doc([*blocks, f"<span>{'w' * room}</span>"])
            assert render_reason(script_signals(grown), THRESHOLD) is not None


# ------------------------------------------------------------------------- records


def _answer(body: bytes) -> FetchResult:
    return FetchResult(
        "http://app.sandbox.test/", "127.0.0.19", 1_700_000_000.0, 0.01, status=200,
        headers={"content-type": "text/html; charset=utf-8"},
        raw_headers=[("Content-Type", "text/html; charset=utf-8"), ("Content-Length", "9")],
        body=body, content_type="text/html", charset="utf-8",
    )  # fmt: skip


def test_a_rendered_page_is_archived_as_received_and_as_rendered(tmp_path: Path) -> None:
    shell = b'<html><body><div id="root"></div><script src="/a.js"></script></body></html>'
    dom = "<html><body><div id='root'><main><p>Rolled oolong pearls</p></main></div></body></html>"
    rendered = RenderedResult.of(_answer(shell), dom, 0.5, 3, 2)
    assert rendered.text() == dom and rendered.original is not None
    warc = WarcStore(tmp_path)
    key = rendered.archive(warc, "http://app.sandbox.test/")
    warc.close()
    kind, _, body = read_record(tmp_path, key)
    assert kind == "resource" and body.decode() == dom
    # The response as the server sent it is there too (the record before the DOM).
    with open(next((tmp_path / "warc").glob("*.warc.gz")), "rb") as f:
        records = [(r.rec_type, r.content_stream().read()) for r in ArchiveIterator(f)]
    assert ("response", shell) in records
    # Search reads the DOM (a resource record) through the event's storage key.
    event = parse_event(
        {"type": "PageFetched", "url": "http://app.sandbox.test/", "urlHash": "h",
         "fetchedAt": "2026-01-01T00:00:00Z", "httpStatus": 200,
         "contentHash": "sha256:" + "0" * 64, "simhash": "0x1", "storageKey": key,
         "outLinks": 0, "changed": True, "title": "", "rendered": True},
        1,
    )  # fmt: skip
    assert event is not None
    payload, ctype = PageStore(tmp_path).load(event)
    page = page_from_payload(payload, ctype, "http://app.sandbox.test/")
    assert page is not None and "Rolled oolong pearls" in page.text


def test_the_event_schema_takes_rendered_as_a_flag() -> None:
    event = {
        "type": "PageFetched", "url": "http://a/", "urlHash": "h",
        "fetchedAt": "2026-01-01T00:00:00Z", "httpStatus": 200,
        "contentHash": "sha256:" + "0" * 64, "simhash": "0x1", "storageKey": "warc/x#0",
        "outLinks": 0, "changed": True, "title": "",
    }  # fmt: skip
    assert event_errors(event) == []
    assert event_errors({**event, "rendered": True}) == []
    assert event_errors({**event, "rendered": "yes"})


# ----------------------------------------------------------------- planner and settings


def test_the_planner_prices_a_render_at_ten_fetches() -> None:
    p = cap.crawler()
    a = p.assumptions  # type: ignore[attr-defined]
    assert a.render_cost_factor == 10.0
    assert p.render_everything_cores == pytest.approx(10 * p.fetch_cores)
    assert p.render_cores == pytest.approx(a.render_share * 10 * p.fetch_cores)
    # Rendering a tenth of the pages at ten times the cost doubles the processor time.
    assert p.render_cost_share == pytest.approx(0.5)
    none = cap.crawler(cap.CrawlerAssumptions(render_share=0.0))
    assert none.render_cores == 0 and none.render_cost_share == 0


@settings(max_examples=60, deadline=None)
@given(
    st.floats(min_value=0.0, max_value=1.0),
    st.floats(min_value=1.0, max_value=100.0),
)
def test_rendering_everything_is_the_ceiling(share: float, factor: float) -> None:
    p = cap.crawler(cap.CrawlerAssumptions(render_share=share, render_cost_factor=factor))
    assert p.render_cores <= p.render_everything_cores * (1 + 1e-9)
    assert 0.0 <= p.render_cost_share <= 1.0


def test_dashboard_crawls_pass_their_render_budget() -> None:
    argv = CrawlSettings(render_budget=7).argv()
    assert argv[argv.index("--render-budget") + 1] == "7"
    with pytest.raises(ValueError, match="render_budget"):
        CrawlSettings(render_budget=10_000)


# --------------------------------------------------------- a crawl without a browser


def test_without_a_browser_pages_are_kept_as_fetched(tmp_path: Path) -> None:
    web = Sandbox(SandboxConfig.small()).start()
    try:
        report = crawl(
            CrawlConfig(
                tmp_path / "c", seeds=[web.url("app", "/")], hosts=web.hosts(),
                strict_hosts=True, min_delay=0.01, delay_factor=1.0, timeout=2.0,
                connect_timeout=1.0, max_seconds=60, concurrency=4,
                traps=TrapPolicy(host_budget=20, max_depth=3), render_budget=5,
                render_browser=tmp_path / "no-such-chromium",
            )
        )  # fmt: skip
        log = web.log.entries()
    finally:
        web.stop()
    assert report.stop_reason == "done"
    assert report.rendered == 0 and report.render["unavailable"] >= 1
    assert "no browser at" in report.render["unavailable_reason"]
    assert any("rendered 0 of" in line and "no browser" in line for line in report.lines())
    events = read_events(tmp_path / "c" / "events.jsonl")
    fetched = {e["url"] for e in events if e["type"] == "PageFetched"}
    assert web.url("app", "/") in fetched and not any(e.get("rendered") for e in events)
    # The shell's links (its footer) were followed; the script's were never seen.
    assert web.url("app", "/about.html") in fetched
    assert not any("/guide/" in u for u in fetched)
    assert not any(e.path.startswith("/api/") for e in log)
