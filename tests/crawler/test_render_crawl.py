"""Two-tier rendering with Debian's Chromium (issue 28 item 15), judged from the sandbox's side.

The sandbox's app host serves shells whose text and links appear only once their script
has run. A crawl with a render budget must render exactly the script-built pages, find
the guides only their rendered links lead to, store and index the rendered text, ask
for nothing robots.txt disallows or that lives on another host, and keep the host's
politeness across the render's own requests (the server's request log is the proof).
The detector is checked against the browser itself: the pages it flags are the pages a
render adds text to.

Skips without Chromium, fails instead when ``LOOKUP_REQUIRE_BROWSER`` is set (as CI does).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from lookup.crawler import CrawlConfig, CrawlReport, Sandbox, SandboxConfig, TrapPolicy, crawl
from lookup.crawler.browser import BrowserRenderer
from lookup.crawler.fetcher import DnsResolver, Fetcher, FetchResult
from lookup.crawler.inspector import page_text
from lookup.crawler.output import read_events
from lookup.crawler.parse import parse_html
from lookup.crawler.render import RenderThreshold, render_reason, script_signals
from lookup.crawler.sandbox import LoggedRequest
from lookup.crawler.scope import CrawlScope
from lookup.crawler.state import crawl_state_url, open_crawl_reader
from lookup.search import SearchService, build_index

CHROMIUM = Path("/usr/bin/chromium")
MIN_DELAY = 0.05
DELAY_FACTOR = 2.0


@pytest.fixture(scope="module")
def chromium() -> Path:
    """Debian's Chromium: skip without it, unless the run requires a browser."""
    if not CHROMIUM.exists():
        if os.environ.get("LOOKUP_REQUIRE_BROWSER"):
            pytest.fail(f"{CHROMIUM} is missing and LOOKUP_REQUIRE_BROWSER is set")
        pytest.skip(f"{CHROMIUM} is missing; install it with `apt-get install -y chromium`")
    return CHROMIUM


@dataclass
class RenderRun:
    web: Sandbox
    truth: dict  # type: ignore[type-arg]
    out: Path
    report: CrawlReport
    log: list[LoggedRequest]


def _crawl(web: Sandbox, out: Path, browser: Path, budget: int) -> CrawlReport:
    return crawl(
        CrawlConfig(
            out, seeds=[web.url("app", "/")], hosts=web.hosts(), strict_hosts=True,
            min_delay=MIN_DELAY, delay_factor=DELAY_FACTOR, timeout=3.0, connect_timeout=1.0,
            max_seconds=120, concurrency=4, traps=TrapPolicy(host_budget=30, max_depth=4),
            scope=CrawlScope(allow_domains=(web.world.names["app"],)),
            render_budget=budget, render_browser=browser, render_timeout=20.0,
        )
    )  # fmt: skip


@pytest.fixture(scope="module")
def run(chromium: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RenderRun]:
    web = Sandbox(SandboxConfig.small()).start()
    try:
        out = tmp_path_factory.mktemp("render")
        web.log.clear()
        report = _crawl(web, out, chromium, budget=20)
        yield RenderRun(web, web.manifest()["rendering"], out, report, web.log.entries())
    finally:
        web.stop()


def _events(run: RenderRun) -> dict[str, dict]:  # type: ignore[type-arg]
    return {
        e["url"]: e for e in read_events(run.out / "events.jsonl") if e["type"] == "PageFetched"
    }


def test_exactly_the_script_built_pages_are_rendered(run: RenderRun) -> None:
    events = _events(run)
    assert run.report.render.get("unavailable", 0) == 0, run.report.render
    for url in run.truth["script_built"]:
        assert events[url].get("rendered") is True, url
    for url in run.truth["server_built"]:
        assert url in events and "rendered" not in events[url], url
    assert run.report.rendered == len(run.truth["script_built"])
    assert run.report.rendered_share == pytest.approx(run.report.rendered / run.report.pages)
    assert any(line.startswith(f"rendered {run.report.rendered} of") for line in run.report.lines())


def test_the_rendered_text_and_links_are_what_is_kept_and_indexed(run: RenderRun) -> None:
    # The guides are linked only from rendered content: the crawl found every one.
    for url, words in run.truth["rendered_text"].items():
        text = page_text(run.out, url).text
        assert words in text, url
    index = run.out / "index"
    build_index(run.out, index, shards=1)
    svc = SearchService(index, realtime=False)
    try:
        svc.reload()
        hits = svc.search("rolled pearls unfurl infusions")["results"]
        assert hits and hits[0]["url"] == run.web.url("app", "/guide/oolong")
    finally:
        svc.close()


def test_the_cached_view_shows_the_rendered_page(run: RenderRun) -> None:
    from lookup.search.cached import StoredPages

    pages = StoredPages(run.out)
    for url, words in run.truth["rendered_text"].items():
        copy = pages.find(url)
        assert copy is not None and copy.kind == "resource", url
        body, ctype, status, _ = pages.load(copy)
        assert words in body.decode("utf-8") and status == 200 and ctype, url


def test_the_render_asks_nothing_disallowed_and_no_other_host(run: RenderRun) -> None:
    paths = [(e.host, e.path) for e in run.log]
    assert ("app.sandbox.test", "/api/private/track.json") not in paths
    assert not any(path == "/pixel.gif" for _, path in paths)
    assert {e.host for e in run.log} == {"app.sandbox.test"}
    r = run.report.render
    assert r.get("refused-robots", 0) >= 1 and r.get("refused-other-host", 0) >= 1
    # Each shell was asked for once: the render reuses the cheap fetch's document.
    shells = [p for _, p in paths if p.startswith("/guide/") or p in ("/", "/news.html")]
    assert len(shells) == len(set(shells)) == len(run.truth["script_built"])


def test_the_renders_requests_keep_the_hosts_politeness(run: RenderRun) -> None:
    entries = sorted(run.log, key=lambda e: e.start)
    api = [e for e in entries if e.path.startswith("/api/pages/") or e.path == "/static/app.js"]
    assert len(api) >= len(run.truth["script_built"])  # the renders did ask the host
    for prev, nxt in zip(entries, entries[1:], strict=False):
        floor = max(MIN_DELAY, DELAY_FACTOR * (prev.end - prev.start))
        gap = nxt.start - prev.end
        assert gap >= floor, f"{gap:.4f}s before {nxt.target} after {prev.target}, need {floor}"
    with open_crawl_reader(crawl_state_url(run.out)) as reader:
        logged = [f for f in reader.fetch_log() if f.kind == "render"]
    assert {f.url for f in logged} >= {run.web.url("app", e.target) for e in api}
    assert all(f.delay is not None and f.delay >= MIN_DELAY for f in logged)
    assert run.report.render["requests"] == len(logged)
    # The app's bundle is asked for once; later renders reuse it, as a browser cache would.
    assert sum(1 for e in entries if e.path == "/static/app.js") == 1
    assert run.report.render["cached"] == len(run.truth["script_built"]) - 1


def test_the_budget_bounds_the_renders(chromium: Path, tmp_path: Path) -> None:
    web = Sandbox(SandboxConfig.small()).start()
    try:
        report = _crawl(web, tmp_path / "c", chromium, budget=1)
    finally:
        web.stop()
    assert report.rendered == 1
    assert report.render["over-budget"] >= 1
    assert report.render["candidates"] == report.rendered + report.render["over-budget"]


def test_the_detector_flags_the_pages_a_render_adds_text_to(chromium: Path) -> None:
    """The oracle is the browser: render every page of the host and compare the text."""
    web = Sandbox(SandboxConfig.small()).start()
    truth = web.manifest()["rendering"]
    urls = [*truth["script_built"], *truth["server_built"]]

    async def main() -> dict[str, tuple[bool, int, int]]:
        resolver = DnsResolver(table=web.hosts(), strict=True)
        out: dict[str, tuple[bool, int, int]] = {}
        async with Fetcher(resolver, timeout=3.0) as fetcher:
            renderer = BrowserRenderer(chromium, "LookupBot-test", timeout=20.0)
            await renderer.start()
            try:

                async def fetch(url: str, method: str) -> FetchResult | None:
                    same = url.startswith(web.url("app", "/")) and "/private/" not in url
                    return await fetcher.fetch(url, accept=None) if same else None

                async def judge(url: str) -> None:
                    doc = await fetcher.fetch(url)
                    flagged = render_reason(script_signals(doc.text()), RenderThreshold())
                    snap = await renderer.render(url, doc, fetch)
                    before = len(parse_html(doc.text()).text)
                    after = len(parse_html(snap.html).text)
                    out[url] = (flagged is not None, before, after)

                await asyncio.gather(*(judge(url) for url in urls))  # one context each
            finally:
                await renderer.close()
        return out

    try:
        seen = asyncio.run(main())
    finally:
        web.stop()
    for url, (flagged, before, after) in seen.items():
        gained = after - before > 100
        assert flagged == gained, (url, flagged, before, after)
