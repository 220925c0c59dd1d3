"""A person opens "Places near me", sees the map and the ranked places, clicks the map to
stand elsewhere, types what they look for and compares the three indexes.

Runs the real API and dashboard (see ``conftest.py``) in Debian's Chromium. The harness
starts the API over an empty data directory; this module builds a small places data set
into it first (the API picks it up on the next search). The map must work offline:
the page it is drawn in may fetch nothing from outside the machine.
"""

from __future__ import annotations

import time
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest
from browser_harness import Service, settled

pytestmark = pytest.mark.browser

EXCEPTION = '[data-testid="stException"]'
#: The map, drawn in the page (app/placesleaflet.py); Playwright's CSS pierces its shadow root.
MAP = '[data-testid="places-map"]'


def _data_dir(api: Service) -> Path:
    """The data directory the harness gave ``lookup serve`` (its ``--data-dir``)."""
    argv = [str(a) for a in api.process.args]  # type: ignore[union-attr]
    return Path(argv[argv.index("--data-dir") + 1])


@pytest.fixture(scope="module")
def places_built(api: Service) -> Service:
    """The running API, with a small places data set built into its data directory."""
    from lookup.datasets import places

    data_dir = _data_dir(api)
    if not places.is_built(data_dir):
        places.build(data_dir, count=3_000, progress=False)
    # the API loads the index on the first request that needs it
    deadline = time.monotonic() + 60
    while True:
        response = httpx.get(f"{api.url}/v1/places/index", timeout=30)
        if response.status_code == 200 or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert response.status_code == 200, response.text
    return api


def _metric_value(page, label: str):  # type: ignore[no-untyped-def]
    card = page.locator('[data-testid="stMetric"]').filter(
        has=page.locator('[data-testid="stMetricLabel"]', has_text=label)
    )
    return card.locator('[data-testid="stMetricValue"]')


def test_places_near_me_on_an_offline_map(
    page,
    dashboard: Service,
    places_built: Service,  # type: ignore[no-untyped-def]
) -> None:
    from playwright.sync_api import expect

    outside: list[str] = []

    def note(request) -> None:  # type: ignore[no-untyped-def]
        """Remember what the page (the map is drawn in it) fetched from anywhere but here."""
        parts = urlsplit(request.url)
        if parts.scheme in ("http", "https", "ws", "wss") and parts.hostname not in (
            "127.0.0.1",
            "localhost",
        ):
            outside.append(request.url)

    page.on("request", note)
    # tall enough that the whole map is on screen: a click never scrolls it under the mouse
    page.set_viewport_size({"width": 1400, "height": 1400})
    page.goto(dashboard.url)
    page.get_by_role("link", name="Places near me").first.click()
    expect(page.get_by_role("heading", name="Places near me")).to_be_visible()
    expect(page.get_by_role("heading", name="Ranked results")).to_be_visible(timeout=60_000)
    settled(page)

    # the map drew with Leaflet from the package: land, the cells read, numbered pins, you
    the_map = page.locator(MAP)
    expect(page.locator(f"{MAP}.leaflet-container")).to_be_visible()
    expect(the_map.locator(".you")).to_have_count(1)
    expect(the_map.locator(".gh-label")).to_have_count(9)  # the 3×3 block, labelled
    assert the_map.locator(".pin").count() >= 1
    expect(_metric_value(page, "Cells searched")).to_have_text("9 cells")

    # what the page shows is what the API answers for the same question
    used = _metric_value(page, "Radius used").inner_text()
    radius_m = float(used.split()[0]) * (1000 if used.endswith("km") else 1)
    truth = httpx.get(
        f"{places_built.url}/v1/search",
        params={
            "lat": "12.935200",
            "lng": "77.624500",
            "radius": "2000",
            "explain": "true",
        },
        timeout=30,
    ).json()
    assert truth["radiusUsedM"] == radius_m
    expect(_metric_value(page, "Results survived")).to_have_text(f"{truth['total']:,}")

    # click the map: you now stand somewhere else, and the search follows
    lat_input = page.get_by_role("spinbutton", name="Latitude")
    before = lat_input.input_value()
    leaflet = page.locator(f"{MAP}.leaflet-container")
    box = leaflet.bounding_box()
    assert box is not None
    leaflet.click(position={"x": box["width"] * 0.3, "y": box["height"] * 0.25})
    expect(lat_input).not_to_have_value(before)
    settled(page)
    lat = float(lat_input.input_value())
    lng = float(page.get_by_role("spinbutton", name="Longitude").input_value())
    assert lat > float(before)  # clicked above the middle: further north

    # what you look for narrows the results
    query = page.get_by_role("textbox", name="Looking for")
    query.fill("pharmacy")
    query.press("Enter")
    settled(page)
    answer = httpx.get(
        f"{places_built.url}/v1/search",
        params={
            "lat": f"{lat:.6f}",
            "lng": f"{lng:.6f}",
            "radius": "2000",
            "q": "pharmacy",
        },
        timeout=30,
    ).json()
    expect(_metric_value(page, "Results survived")).to_have_text(f"{answer['total']:,}")

    # the switch compares the three indexes on the same query
    page.get_by_text("Compare geohash, quadtree, brute force and PostGIS").click()
    expect(page.get_by_role("heading", name="Geohash vs quadtree vs brute force")).to_be_visible()
    expect(page.get_by_text("All three return the same")).to_be_visible(timeout=60_000)
    settled(page)
    expect(page.locator(EXCEPTION)).to_have_count(0)
    assert not outside, f"the map fetched from outside the machine: {outside[:5]}"


def test_a_city_searched_by_name(  # type: ignore[no-untyped-def]
    page, dashboard: Service, places_built: Service, tmp_path: Path
) -> None:
    """Typing "Pun" suggests Pune from the data set's cities; a click stands you there,
    "Jump to" names it, and the comparison (switched on) charts the three timings of the
    very query the page shows."""
    from playwright.sync_api import expect

    page.set_viewport_size({"width": 1400, "height": 1400})
    page.goto(f"{dashboard.url}/places")
    expect(page.get_by_role("heading", name="Ranked results")).to_be_visible(timeout=60_000)
    settled(page)
    box = page.locator("input.ta-box")
    box.click()
    page.keyboard.type("Pun", delay=30)
    first = page.locator(".ta-list .ta-item").first
    expect(first).to_have_attribute("title", "Pune · city in IN · 3,124,458 people")
    first.click()
    expect(box).to_have_value("Pune · city in IN · 3,124,458 people")
    lat = page.get_by_role("spinbutton", name="Latitude")
    expect(lat).to_have_value("18.51957")
    expect(page.get_by_role("combobox", name="Jump to")).to_have_value("Pune")
    settled(page)
    answer = httpx.get(
        f"{places_built.url}/v1/search",
        params={
            "lat": "18.519570",
            "lng": "73.855350",
            "radius": "2000",
        },
        timeout=30,
    ).json()
    expect(_metric_value(page, "Results survived")).to_have_text(f"{answer['total']:,}")

    page.get_by_text("Compare geohash, quadtree, brute force and PostGIS").click()
    expect(page.get_by_text("All three return the same")).to_be_visible(timeout=60_000)
    expect(page.get_by_text(f"{answer['total']:,} places within")).to_have_count(2)
    expect(page.locator(".st-key-places-compare-chart .js-plotly-plot")).to_be_visible()
    settled(page)
    expect(page.locator(EXCEPTION)).to_have_count(0)
    page.screenshot(path=str(tmp_path / "places-pune.png"), full_page=True)
