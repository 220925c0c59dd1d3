"""A person shortens a link on the dashboard, clicks it, disables it, and runs the simulator.

Runs the real API and the real dashboard (see ``conftest.py``) in Debian's Chromium.
The link's destination is the dashboard itself (another loopback port), so following
the short link is a real redirect through the API server with no outside network.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from browser_harness import Service, settled

pytestmark = pytest.mark.browser

EXCEPTION = '[data-testid="stException"]'
#: What a person's desktop Chrome sends. Headless Chromium announces itself as
#: "HeadlessChrome", which analytics rightly counts as a bot, not a person.
DESKTOP_CHROME = (
    "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/124.0.0.0 Safari/537.36"
)


def _metric_value(page, label: str):  # type: ignore[no-untyped-def]
    card = page.locator('[data-testid="stMetric"]').filter(
        has=page.locator('[data-testid="stMetricLabel"]', has_text=label)
    )
    return card.locator('[data-testid="stMetricValue"]')


@pytest.fixture
def person(browser):  # type: ignore[no-untyped-def]
    """A page in a browser context that looks like a person's desktop Chrome."""
    context = browser.new_context(
        viewport={"width": 1400, "height": 900}, user_agent=DESKTOP_CHROME
    )
    context.set_default_timeout(20_000)
    try:
        yield context.new_page()
    finally:
        context.close()


def test_shorten_click_disable_and_simulate(  # type: ignore[no-untyped-def]
    person, dashboard: Service, api: Service, tmp_path: Path
) -> None:
    from playwright.sync_api import expect

    page = person
    page.goto(dashboard.url)
    page.get_by_role("link", name="URL shortener").first.click()
    expect(page.get_by_role("heading", name="URL shortener")).to_be_visible()
    expect(page).to_have_url(re.compile(r"/shortener$"))
    settled(page)

    # Shorten a link to the dashboard's capacity page, with an alias.
    destination = f"{dashboard.url}/capacity"
    page.get_by_role("textbox", name="Long URL").fill(destination)
    page.get_by_role("textbox", name="Custom alias (optional)").fill("to-the-planner")
    page.get_by_role("button", name="Shorten").click()
    card = page.locator(".st-key-created-card")
    short_url = f"{api.url}/to-the-planner"
    link = card.get_by_role("link", name=short_url)
    expect(link).to_be_visible()
    expect(card.get_by_role("img")).to_be_visible()  # the QR code from the API
    settled(page)

    # Following the short link goes through the API's 302 to the destination.
    with page.context.expect_page() as opened:
        link.click()
    target = opened.value
    target.wait_for_url(re.compile(r"/capacity$"))
    assert target.url.startswith(dashboard.url)
    expect(target.get_by_role("heading", name="Capacity planner")).to_be_visible()
    target.close()

    # The click shows up in the link's counts.
    page.get_by_role("button", name="Refresh").click()
    expect(_metric_value(page, "People")).to_have_text("1")
    settled(page)

    # Disable it: the next click gets the warning page, never a Location.
    page.get_by_role("button", name="Disable link").click()
    expect(page.get_by_role("button", name="Enable link")).to_be_visible()
    # The "Enable link" button is drawn before the script run ends (the page's Backends
    # section comes later); a click during a run can be lost, so wait for the run's end.
    settled(page)
    page.get_by_role("button", name="Try the next click").click()
    expect(page.get_by_text("no Location header").first).to_be_visible()
    expect(page.get_by_text("HTTP 403").first).to_be_visible()
    with page.context.expect_page() as opened:
        page.get_by_role("link", name="Open it").click()
    warning = opened.value
    expect(
        warning.get_by_role("heading", name="Warning: this link has been disabled")
    ).to_be_visible()
    assert warning.url == short_url  # no redirect happened
    warning.close()
    settled(page)

    # The traffic simulator, through the real redirect path.
    page.get_by_role("tab", name="Traffic simulator").click()
    page.get_by_role("button", name="Run the simulation").click()
    expect(page.get_by_text("What each layer absorbed").first).to_be_visible(timeout=90_000)
    settled(page)
    expect(_metric_value(page, "Requests")).to_have_text("2,000")
    expect(page.get_by_text("In-process LRU cache").first).to_be_visible()
    expect(page.locator(EXCEPTION)).to_have_count(0)
    shot = tmp_path / "shortener.png"
    page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 10_000


def test_my_links_survive_a_reload(  # type: ignore[no-untyped-def]
    person, browser, dashboard: Service, api: Service, tmp_path: Path
) -> None:
    """The owner token lives in a cookie of this browser: after a reload (a new Streamlit
    session) "My links" still lists the link — from ``GET /v1/links`` — while another
    browser (no cookie) sees none of it. The long-URL box is empty after "Shorten"."""
    from playwright.sync_api import expect

    page = person
    page.goto(f"{dashboard.url}/shortener")
    expect(page.get_by_role("heading", name="URL shortener")).to_be_visible()
    settled(page)
    box = page.get_by_role("textbox", name="Long URL")
    box.fill(f"{dashboard.url}/typeahead?kept=1")
    page.get_by_role("textbox", name="Custom alias (optional)").fill("kept-after-reload")
    page.get_by_role("button", name="Shorten").click()
    short_url = f"{api.url}/kept-after-reload"
    expect(page.locator(".st-key-created-card").get_by_role("link", name=short_url)).to_be_visible()
    expect(box).to_have_value("")
    # "My links" is the first table with a Destination column (the rules editor has one too)
    table = page.locator('[data-testid="stDataFrame"]').filter(has_text="Destination").first
    expect(table).to_be_visible()
    settled(page)
    cookies = {c["name"]: c for c in page.context.cookies()}
    assert "lookup_owner_token" in cookies

    page.reload()
    expect(page.get_by_role("heading", name="URL shortener")).to_be_visible()
    settled(page)
    expect(page.get_by_text("No links yet")).to_have_count(0)
    # Its stats and safety panel are drawn (they link its preview page), and the link
    # picker has it chosen.
    expect(page.locator(f'a[href="{short_url}+"]').first).to_be_attached()
    picker = page.get_by_role("combobox", name="Link")
    expect(picker).to_have_value(re.compile(r"^kept-after-reload → "))
    shot = tmp_path / "shortener-reloaded.png"
    page.screenshot(path=str(shot), full_page=True)
    expect(page.locator(EXCEPTION)).to_have_count(0)

    other = browser.new_context(viewport={"width": 1400, "height": 900}).new_page()
    try:
        other.goto(f"{dashboard.url}/shortener")
        expect(other.get_by_text("No links yet")).to_be_visible()
    finally:
        other.context.close()
