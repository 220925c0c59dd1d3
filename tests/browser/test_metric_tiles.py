"""No metric tile cuts its label, value or note at a normal 1280-pixel-wide window.

Streamlit ends an overflowing tile text with "…" ("Candidates r…", "25.31 …"); the check
is the browser's own: an element whose content is wider than its box. Pages with tiles
that need data (Places) get a small data set first; each Capacity planner tab is opened.
"""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import pytest
from browser_harness import Service, settled

pytestmark = pytest.mark.browser

VIEWPORT = {"width": 1280, "height": 900}
#: Every tile text whose content is wider than its box, with both widths.
_CUT_TILE_TEXT = """() => {
  const cut = [];
  const parts = '[data-testid="stMetricLabel"], [data-testid="stMetricValue"],'
              + ' [data-testid="stMetricDelta"]';
  for (const part of document.querySelectorAll(parts)) {
    if (!part.offsetParent) continue;  // in a tab that is not open
    for (const el of [part, ...part.querySelectorAll("*")]) {
      if (el.scrollWidth > el.clientWidth + 1) {
        cut.push(`${part.dataset.testid} "${part.innerText}" ${el.scrollWidth}>${el.clientWidth}`);
        break;
      }
    }
  }
  return cut;
}"""


def _data_dir(api: Service) -> Path:
    argv = [str(a) for a in api.process.args]  # type: ignore[union-attr]
    return Path(argv[argv.index("--data-dir") + 1])


@pytest.fixture(scope="module")
def places_built(api: Service) -> Service:
    """The running API with a small places data set (as in test_places_flow.py)."""
    from lookup.datasets import places

    data_dir = _data_dir(api)
    if not places.is_built(data_dir):
        places.build(data_dir, count=3_000, progress=False)
    deadline = time.monotonic() + 60
    while httpx.get(f"{api.url}/v1/places/index", timeout=30).status_code != 200:
        assert time.monotonic() < deadline, "the API did not load the places index"
        time.sleep(0.5)
    return api


def test_places_tiles_are_not_cut(
    page,
    dashboard: Service,
    places_built: Service,  # type: ignore[no-untyped-def]
) -> None:
    from playwright.sync_api import expect

    page.set_viewport_size(VIEWPORT)
    page.goto(f"{dashboard.url}/places")
    expect(page.get_by_role("heading", name="Ranked results")).to_be_visible(timeout=60_000)
    settled(page)
    tiles = page.locator('[data-testid="stMetric"]')
    expect(tiles.filter(has_text="Time taken")).to_have_count(1)
    assert tiles.count() >= 5
    assert page.evaluate(_CUT_TILE_TEXT) == []


def test_capacity_tiles_are_not_cut_on_any_tab(page, dashboard: Service) -> None:  # type: ignore[no-untyped-def]
    from playwright.sync_api import expect

    page.set_viewport_size(VIEWPORT)
    page.goto(f"{dashboard.url}/capacity")
    expect(page.get_by_role("heading", name="Capacity planner")).to_be_visible()
    settled(page)
    tabs = page.get_by_role("tab")
    names = [tabs.nth(i).inner_text() for i in range(tabs.count())]
    assert "Shortener" in names and "IDs" in names
    cut: dict[str, list[str]] = {}
    for name in names:
        page.get_by_role("tab", name=name).click()
        expect(page.get_by_role("tab", name=name)).to_have_attribute("aria-selected", "true")
        visible = page.locator('[data-testid="stMetric"]:visible')
        expect(visible.first).to_be_visible()
        if texts := page.evaluate(_CUT_TILE_TEXT):
            cut[name] = texts
    assert cut == {}
