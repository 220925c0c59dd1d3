"""A person crawls the sandbox web from the dashboard, watches it, inspects a duplicate
pair and builds the search index that ``/search`` then answers from.

Runs its own API and dashboard (the dashboard told where a small sandbox web is, via
``LOOKUP_SANDBOX_URL``, as ``make run`` does) in Debian's Chromium.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from browser_harness import Service, running_stack, settled

from lookup.crawler import Sandbox, SandboxConfig

pytestmark = pytest.mark.browser

EXCEPTION = '[data-testid="stException"]'


@pytest.fixture(scope="module")
def crawler_stack(
    chromium_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Service, Service, Sandbox]]:
    web = Sandbox(SandboxConfig.small(crawl_delay=0.01)).start()
    try:
        workdir = tmp_path_factory.mktemp("crawler-stack")
        env = {"LOOKUP_SANDBOX_URL": web.control_url}
        with running_stack(workdir, dashboard_env=env) as (api, dashboard):
            yield api, dashboard, web
    finally:
        web.stop()


def _metric_value(page, label: str):  # type: ignore[no-untyped-def]
    # the current run's tiles only: while the page reruns, the last run's stay on screen
    # (marked stale) beside the new ones
    card = page.locator(
        '[data-testid="stElementContainer"]:not([data-stale="true"]) [data-testid="stMetric"]'
    ).filter(has=page.locator('[data-testid="stMetricLabel"]', has_text=label))
    return card.locator('[data-testid="stMetricValue"]')


def test_crawl_the_sandbox_inspect_duplicates_and_search(
    page,  # type: ignore[no-untyped-def]
    crawler_stack: tuple[Service, Service, Sandbox],
    tmp_path: Path,
) -> None:
    from playwright.sync_api import expect

    api, dashboard, web = crawler_stack
    page.goto(dashboard.url)
    page.get_by_role("link", name="Web crawler").first.click()
    expect(page.get_by_role("heading", name="Web crawler")).to_be_visible()
    status = page.locator(".st-key-sandbox-status")
    expect(status).to_contain_text("Sandbox web up")
    expect(status).to_contain_text(web.control_url)
    expect(page.get_by_text("No crawl yet")).to_be_visible()

    # 10 seconds, no pause beyond robots.txt's Crawl-delay: a quick crawl, one request
    # per host at a time all the same.
    seconds = page.locator(".st-key-crawl-seconds").get_by_role("slider")
    seconds.focus()
    for _ in range(4):
        seconds.press("ArrowLeft")
    expect(seconds).to_have_value("10")
    pause = page.locator(".st-key-crawl-min-delay").get_by_role("slider")
    pause.focus()
    pause.press("Home")
    factor = page.locator(".st-key-crawl-factor").get_by_role("slider")
    factor.focus()
    factor.press("Home")
    page.get_by_role("button", name="Start crawl").click()

    expect(page.get_by_text("Crawling").first).to_be_visible(timeout=30_000)
    expect(page.get_by_role("button", name="Start crawl")).to_be_disabled()
    expect(page.get_by_text("Finished").first).to_be_visible(timeout=90_000)
    settled(page)
    expect(_metric_value(page, "Pages fetched")).not_to_have_text("0")
    expect(page.get_by_text("Politeness checked from the server's side")).to_be_visible()
    expect(page.locator(".js-plotly-plot").first).to_be_visible()

    page.get_by_role("tab", name="Duplicates").click()
    expect(_metric_value(page, "SimHash distance")).to_contain_text("of 64 bits")
    expect(page.get_by_text("The crawler's verdict").first).to_be_visible()
    # a page of the pair opens as the crawler stored it, with its fetch date
    with page.expect_popup() as opened:
        page.get_by_role("link", name="open the stored copy ↗").first.click()
    copy = opened.value
    copy.wait_for_load_state()
    assert copy.url.startswith(f"{api.url}/search/cached?url=")
    expect(copy.locator("#cached-banner")).to_contain_text("exists only inside the sandbox")
    expect(copy.locator("#fetched-at")).to_have_text(
        re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$")
    )
    copy.close()

    # Soft 404s: what each host answered for a URL that cannot exist, and what matched it.
    page.get_by_role("tab", name="Soft 404s").click()
    expect(page.get_by_text("Each host's answer to a URL that cannot exist")).to_be_visible()
    expect(page.get_by_text("Pages that said “not found” with 200 OK")).to_be_visible()
    expect(_metric_value(page, "Caught by the probe")).not_to_have_text("0")

    page.get_by_role("tab", name="Search index").click()
    page.get_by_role("button", name="Build search index from this crawl").click()
    expect(page.get_by_text("Search index built")).to_be_visible(timeout=60_000)
    expect(page.get_by_text("now finds about")).to_be_visible()
    answer = httpx.get(f"{api.url}/search", params={"q": "module"}, timeout=10.0).json()
    assert answer["results"], answer
    assert all(".sandbox.test" in r["url"] for r in answer["results"])
    shot = tmp_path / "crawler.png"
    page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 10_000

    # search the new index and click a result: its stored copy opens, with its fetch date
    page.get_by_role("link", name="Open the Search page").click()
    expect(page.get_by_role("heading", name="Web search")).to_be_visible()
    box = page.get_by_label("Search the crawled pages")
    expect(box).to_be_visible(timeout=30_000)  # the API picks the new index up by itself
    box.fill("module")
    box.press("Enter")
    settled(page)
    card = page.locator('[data-testid="stElementContainer"]:not([data-stale="true"]) .lw-result')
    expect(card.first).to_contain_text("only inside the sandbox web")
    top = httpx.get(f"{api.url}/search", params={"q": "module"}, timeout=10.0).json()
    top = top["results"][0]
    with page.expect_popup() as opened:
        card.first.locator(".lw-title").click()
    copy = opened.value
    copy.wait_for_load_state()
    expect(copy.locator("#cached-banner")).to_contain_text(top["url"])
    expect(copy.locator("#fetched-at")).to_have_text(
        top["crawledAt"].replace("T", " ").replace("Z", " UTC")
    )
    copy.screenshot(path=str(tmp_path / "stored-copy.png"), full_page=True)
    # a link inside it leads to another stored copy, never to a *.sandbox.test name
    inner = copy.locator("a.cached").first
    expect(inner).to_be_visible()
    inner.click()
    copy.wait_for_load_state()
    assert copy.url.startswith(f"{api.url}/search/cached?url=")
    expect(copy.locator("#fetched-at")).to_be_visible()
    copy.close()

    settled(page)
    expect(page.locator(EXCEPTION)).to_have_count(0)
