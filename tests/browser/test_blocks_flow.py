"""A person opens Building blocks, makes ids, starts lease-holding generators, kills one
and — without touching anything — watches its lease expire while the others keep theirs.

Runs the real API and dashboard (see ``conftest.py``) in Debian's Chromium; the lease
part needs etcd (skipped without it, failed under ``LOOKUP_REQUIRE_SERVERS``).
"""

from __future__ import annotations

import pytest
from browser_harness import Service

from lookup import settings
from lookup.blocks.ids.etcd import etcd_available

pytestmark = pytest.mark.browser

EXCEPTION = '[data-testid="stException"]'


def test_make_ids_then_kill_a_generator_and_watch_its_lease_expire(
    page,
    dashboard: Service,  # type: ignore[no-untyped-def]
) -> None:
    from playwright.sync_api import expect

    page.goto(f"{dashboard.url}/blocks")
    expect(page.get_by_role("heading", name="Building blocks")).to_be_visible()
    page.get_by_role("button", name="Generate").click()
    expect(page.get_by_text("Sorting the ids gives the order they were made in")).to_be_visible()
    sorting = page.locator('[data-testid="stMarkdownContainer"]').filter(
        has_text="Sorting the ids gives the order they were made in"
    )
    expect(sorting).to_contain_text("Snowflake in order")  # a badge, drawn without emoji
    expect(sorting).to_contain_text("UUIDv4 out of order")
    if not etcd_available():
        if settings.get("require_servers"):
            pytest.fail("etcd is missing and LOOKUP_REQUIRE_SERVERS is set (.ci/run)")
        expect(page.get_by_text("etcd is not installed")).to_be_visible()
        return
    page.get_by_role("button", name="Start etcd and 3 generators").click()
    kill = page.get_by_role("button", name="Kill it (SIGKILL)")
    expect(kill).to_be_visible(timeout=60_000)
    table = page.locator('[data-testid="stDataFrame"]').last
    expect(table).to_contain_text("held")
    kill.click()
    expect(table).to_contain_text("killed")
    # The table refreshes itself: the killed generator's lease runs out within its TTL (3 s).
    expect(table).to_contain_text("expired", timeout=30_000)
    expect(page.locator(EXCEPTION)).to_have_count(0)
    page.get_by_role("button", name="Stop the generators and etcd").click()
    expect(page.get_by_role("button", name="Start etcd and 3 generators")).to_be_visible()


def test_fire_a_boundary_attack_and_compare_every_algorithm(
    page,
    dashboard: Service,  # type: ignore[no-untyped-def]
) -> None:
    from playwright.sync_api import expect

    page.goto(f"{dashboard.url}/blocks")
    page.get_by_role("tab", name="Rate limiters").click()
    page.get_by_role("button", name="Fire").click()
    expect(page.get_by_text("Response headers")).to_be_visible(timeout=30_000)
    expect(page.locator('[data-testid="stPlotlyChart"]').first).to_be_visible()
    expect(page.get_by_text("Worst window ÷ limit")).to_be_visible()
    page.get_by_role("button", name="Compare all algorithms on this stream").click()
    expect(page.get_by_text("Side by side: every algorithm on the same stream")).to_be_visible(
        timeout=30_000
    )
    expect(page.locator('[data-testid="stPlotlyChart"]')).to_have_count(2)
    expect(page.locator(EXCEPTION)).to_have_count(0)
