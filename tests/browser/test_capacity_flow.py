"""A person opens the dashboard, reads Home, goes to the Capacity planner and moves an input.

Runs the real API and the real dashboard (see ``conftest.py``) in Debian's Chromium.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from browser_harness import Service, settled

pytestmark = pytest.mark.browser

EXCEPTION = '[data-testid="stException"]'


def _metric_value(page, label: str):  # type: ignore[no-untyped-def]
    """The value element of the metric whose label is ``label``."""
    card = page.locator('[data-testid="stMetric"]').filter(
        has=page.locator('[data-testid="stMetricLabel"]', has_text=label)
    )
    return card.locator('[data-testid="stMetricValue"]')


def test_home_introduces_the_systems_and_sees_the_api(
    page,
    dashboard: Service,
    api: Service,  # type: ignore[no-untyped-def]
) -> None:
    from playwright.sync_api import expect

    page.goto(dashboard.url)
    expect(page.get_by_role("heading", name="Lookup Workbench")).to_be_visible()
    expect(page.get_by_text("decide the answer in advance").first).to_be_visible()
    for system in ("URL shortener", "Typeahead", "Proximity search", "Web crawler and search"):
        expect(page.get_by_role("heading", name=system)).to_be_visible()
    status = page.locator(".st-key-api-status")
    expect(status).to_contain_text("API up")
    expect(status).to_contain_text(api.url)
    settled(page)
    expect(page.locator(EXCEPTION)).to_have_count(0)


def test_capacity_planner_figures_follow_the_inputs(
    page,
    dashboard: Service,
    tmp_path: Path,  # type: ignore[no-untyped-def]
) -> None:
    from playwright.sync_api import expect

    page.goto(dashboard.url)
    expect(page.get_by_role("heading", name="Lookup Workbench")).to_be_visible()
    page.get_by_role("link", name="Capacity planner").first.click()
    expect(page.get_by_role("heading", name="Capacity planner")).to_be_visible()
    expect(page).to_have_url(re.compile(r"/capacity$"))

    writes = _metric_value(page, "Writes (new links)")
    expect(writes).to_have_text("38.6/s")  # the seed: 100M links a month
    before = writes.inner_text()

    # Drag the "new links a month" slider to its maximum with the keyboard.
    thumb = page.locator(".st-key-shortener-links_per_month").get_by_role("slider")
    thumb.focus()
    thumb.press("End")
    expect(thumb).to_have_value("2000")
    expect(writes).not_to_have_text(before)
    expect(writes).to_have_text("772/s")  # 2,000M / (30 × 86,400 s)
    expect(page.get_by_text("design notes: 38.6/s")).to_be_visible()

    # A number box behind a tab and an expander: the Bloom filter's false-positive rate.
    page.get_by_role("tab", name="Crawler").click()
    bloom = _metric_value(page, "Seen-URL set in bytes")
    expect(bloom).to_have_text("24 GB")
    crawler = page.get_by_role("tabpanel", name="Crawler")
    crawler.get_by_text(re.compile(r"^All other assumptions")).click()
    box = page.locator(".st-key-crawler-bloom_fp_rate input")
    box.fill("0.1")
    box.press("Enter")
    expect(bloom).to_have_text("35.9 GB")  # 20B × 14.4 bits / 8

    settled(page)
    expect(page.locator(EXCEPTION)).to_have_count(0)
    shot = tmp_path / "capacity.png"
    page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 10_000
