"""A first-time visitor on Home: every system card shows its live status and next step,
draws its read and write paths, and its link opens the system's page.

Runs the real API and dashboard (see ``conftest.py``) in Debian's Chromium.
"""

from __future__ import annotations

import re
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
