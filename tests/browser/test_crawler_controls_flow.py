"""A person starts a crawl from the dashboard and blocks a host while it runs (seed 003).

Its own API and dashboard, a small sandbox web in this process (its request log is the
judge), Debian's Chromium. The block goes from the page's form through the API to the
running ``lookup crawl`` process; from the next second on the host gets no request.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from browser_harness import Service, running_stack, settled

from lookup.crawler import Sandbox, SandboxConfig

pytestmark = pytest.mark.browser

EXCEPTION = '[data-testid="stException"]'
TARGET = "news.sandbox.test"


@pytest.fixture(scope="module")
def crawler_stack(
    chromium_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Service, Service, Sandbox]]:
    web = Sandbox(SandboxConfig.small(crawl_delay=0.01)).start()
    try:
        workdir = tmp_path_factory.mktemp("crawler-controls-stack")
        env = {"LOOKUP_SANDBOX_URL": web.control_url}
        with running_stack(workdir, dashboard_env=env) as (api, dashboard):
            yield api, dashboard, web
    finally:
        web.stop()


def test_block_a_host_from_the_page_while_the_crawl_runs(
    page,  # type: ignore[no-untyped-def]
    crawler_stack: tuple[Service, Service, Sandbox],
    tmp_path: Path,
) -> None:
    from playwright.sync_api import expect

    _api, dashboard, web = crawler_stack
    page.goto(dashboard.url)
    page.get_by_role("link", name="Web crawler").first.click()
    expect(page.get_by_role("heading", name="Web crawler")).to_be_visible()
    expect(page.locator(".st-key-sandbox-status")).to_contain_text("Sandbox web up")
    settled(page)
    # the longest crawl the form allows: on a loaded machine the form's 30 s can run out
    # before the block is issued; the test stops the crawl itself at the end
    seconds = page.get_by_role("slider", name="Stop after (seconds)")
    seconds.focus()
    page.keyboard.press("End")
    expect(seconds).to_have_value("120")
    page.get_by_role("button", name="Start crawl").click()
    expect(page.get_by_text("Crawling").first).to_be_visible(timeout=30_000)
    deadline = time.monotonic() + 60
    while not any(e.host == TARGET for e in web.log.entries()):
        assert time.monotonic() < deadline, "the crawl never reached the host"
        time.sleep(0.2)

    # the page draws its tabs once the crawl has state: a fresh run of the page shows them
    page.reload()
    expect(page.get_by_text("Crawling").first).to_be_visible(timeout=30_000)
    page.get_by_role("tab", name="Controls & host health").click()
    expect(page.get_by_text("Per-host health")).to_be_visible(timeout=30_000)
    settled(page)
    page.locator(".st-key-control-target input").fill(TARGET)
    page.locator(".st-key-control-note input").fill("the site asked us to stop")
    page.get_by_role("button", name="Issue").click()
    expect(page.get_by_text(f"Control v1 issued: block-host {TARGET}")).to_be_visible(
        timeout=30_000
    )
    blocked_at = time.time()
    expect(page.get_by_text("crawl up to v1").first).to_be_visible(timeout=30_000)
    before = len(web.log.entries())
    deadline = time.monotonic() + 60
    while len([e for e in web.log.entries() if e.host != TARGET]) < before + 20:
        assert time.monotonic() < deadline, "the crawl stopped going on elsewhere"
        time.sleep(0.2)
    late = [e for e in web.log.entries() if e.host == TARGET and e.wall > blocked_at + 1.0]
    assert late == []
    page.get_by_text("Per-host health").scroll_into_view_if_needed()
    page.screenshot(path=str(tmp_path / "crawler-controls.png"))
    page.get_by_role("button", name="Stop the crawl").click()
    expect(page.get_by_text("Finished").first).to_be_visible(timeout=60_000)
    settled(page)
    expect(page.locator(EXCEPTION)).to_have_count(0)
