"""A first-time visitor on Home: every system card shows its live status and next step,
draws its read and write paths, and its link opens the system's page.

Runs the real API and dashboard (see ``conftest.py``) in Debian's Chromium.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import httpx
import pytest
from browser_harness import Service

pytestmark = pytest.mark.browser

EXCEPTION = '[data-testid="stException"]'


def test_home_is_a_hub(  # type: ignore[no-untyped-def]
    page, dashboard: Service, api: Service, tmp_path: Path
) -> None:
    from playwright.sync_api import expect

    page.goto(dashboard.url)
    expect(page.get_by_role("heading", name="Lookup Workbench")).to_be_visible()
    search = page.locator(".st-key-hub-search")
    systems = httpx.get(f"{api.url}/healthz").json()["systems"]
    if systems["search"]["status"] == "NOT_BUILT":
        expect(search).to_contain_text("Web search needs a crawl first")
    else:
        expect(search).to_contain_text("ready")
    for card in ("shortener", "typeahead", "places", "search"):
        # each picture is drawn (an SVG with its read and write clusters)
        picture = page.locator(f'.st-key-hub-{card} [data-testid="stGraphVizChart"] svg')
        expect(picture).to_be_visible(timeout=30_000)
        expect(picture).to_contain_text("read")
        expect(picture).to_contain_text("write")
    expect(page.locator(EXCEPTION)).to_have_count(0)
    page.screenshot(path=str(tmp_path / "home.png"), full_page=True)

    page.locator(".st-key-hub-places").get_by_role("link", name="Open places near me").click()
    expect(page).to_have_url(re.compile(r"/places$"))
    expect(page.get_by_role("heading", name="Places near me")).to_be_visible()


def test_the_readme_screenshot_is_todays_home_page(  # type: ignore[no-untyped-def]
    browser, dashboard: Service
) -> None:
    """The README shows ``docs/screenshot-home.png``: this test draws it again from the
    running dashboard, so the picture shows the menu and the hub as they are today (every
    page of the menu, the four diagrams). A changed PNG is committed with the change."""
    from browser_harness import REPO_ROOT, take_screenshot
    from playwright.sync_api import expect

    sys.path.insert(0, str(REPO_ROOT / "app"))
    from navigation import PAGES

    page = browser.new_page(viewport={"width": 1400, "height": 900})
    try:
        out = REPO_ROOT / "docs" / "screenshot-home.png"
        take_screenshot(page, dashboard.url, "", out)
        for spec in PAGES:  # the menu across the top names every page
            expect(page.get_by_role("link", name=spec.title, exact=True).first).to_be_visible()
        assert out.stat().st_size > 20_000  # a drawn page, not a blank one
    finally:
        page.close()
