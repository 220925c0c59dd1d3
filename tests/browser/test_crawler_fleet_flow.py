"""A person starts a 3-worker crawl from the dashboard, blocks a host from the panel's
control form, kills a worker and watches its partitions move to the others while the
politeness timeline stays clean.

Its own API and dashboard, a small sandbox web in this process, Debian's Chromium; the
panel starts its own PostgreSQL, etcd and worker processes (and stops them).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from browser_harness import Service, running_stack

from lookup.crawler import Sandbox, SandboxConfig
from lookup.kit.etcd import etcd_available
from lookup.kit.pgserver import postgres_available

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def fleet_stack(
    chromium_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Service, Service, Sandbox]]:
    if not (etcd_available() and postgres_available()):
        pytest.skip("needs etcd and PostgreSQL")
    # The hung host and the stall page wait well past the panel's 2 s fetch timeout:
    # with a tie (small()'s 2 s) the sandbox sometimes finished the answer just as
    # the worker gave up on it, logged it as answered, and judged the worker's next
    # request by a pause counted from a moment the worker never saw (CI: 1 in 369).
    web = Sandbox(SandboxConfig.small(crawl_delay=0.3, hang_seconds=8.0)).start()
    try:
        workdir = tmp_path_factory.mktemp("crawler-fleet-stack")
        env = {"LOOKUP_SANDBOX_URL": web.control_url}
        with running_stack(workdir, dashboard_env=env) as (api, dashboard):
            yield api, dashboard, web
    finally:
        web.stop()


def test_kill_a_worker_from_the_page_and_watch_its_partitions_move(
    page,  # type: ignore[no-untyped-def]
    fleet_stack: tuple[Service, Service, Sandbox],
    tmp_path: Path,
) -> None:
    from playwright.sync_api import expect

    _api, dashboard, _web = fleet_stack
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(dashboard.url)
    page.get_by_role("link", name="Web crawler").first.click()
    expect(page.get_by_role("heading", name="Web crawler")).to_be_visible()
    expect(page.locator('[data-testid="stStatusWidget"]')).to_have_count(0, timeout=30_000)
    page.get_by_text("Crawler fleet: 3 workers").click()
    page.get_by_role("button", name="Start a 3-worker crawl").click()
    balanced = re.compile(
        r"3 of 3 workers running · 64 of 64 partitions held · fewest on one "
        r"running worker: [1-9]"
    )
    expect(page.get_by_text(balanced)).to_be_visible(timeout=90_000)
    page.locator(".st-key-fleet-control-target input").fill("docs.sandbox.test")
    page.get_by_role("button", name="Issue").click()
    expect(
        page.get_by_text("Control v1 issued to the fleet: block-host docs.sandbox.test")
    ).to_be_visible(timeout=30_000)
    expect(page.get_by_text(re.compile(r"w3 up to v1 "))).to_be_visible(timeout=30_000)
    page.get_by_role("button", name="Kill w1").click()
    expect(page.get_by_text("2 of 3 workers running · 64 of 64 partitions held")).to_be_visible(
        timeout=60_000
    )
    expect(page.get_by_text("all held again").first).to_be_visible(timeout=30_000)
    expect(page.get_by_text("0 too close to the one before on the same host")).to_be_visible()
    for shot, anchor in [("map", "Partitions by owner"), ("timeline", "Politeness timeline"),
                         ("health", "Per-host health")]:  # fmt: skip
        page.get_by_text(anchor).first.scroll_into_view_if_needed()
        page.screenshot(path=str(tmp_path / f"crawler-fleet-{shot}.png"))
    page.get_by_role("button", name="Stop the fleet").click()
    expect(page.get_by_text(re.compile(r"Fleet stopped after \d+ s"))).to_be_visible(timeout=60_000)
    # disabled only once the fleet is stopped (Start is enabled all along)
    expect(page.get_by_role("button", name="Stop the fleet")).to_be_disabled(timeout=60_000)
    expect(page.locator('[data-testid="stException"]')).to_have_count(0)
