"""A person switches the places ranking from hand-set to learned and sees which places moved.

Real API and dashboard in Debian's Chromium (see ``conftest.py``). A places model is trained
into the API's data directory for this test and removed afterwards (the API falls back to
the hand-set constants within a second), so the session's other flows see no model.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from browser_harness import Service, settled

pytestmark = pytest.mark.browser


def _data_dir(api: Service) -> Path:
    argv = [str(a) for a in api.process.args]  # type: ignore[union-attr]
    return Path(argv[argv.index("--data-dir") + 1])


@pytest.fixture
def learned_api(api: Service) -> Iterator[Service]:
    """The running API with a small places data set and a trained places model."""
    from lookup.datasets import places
    from lookup.geo.learned import publish, train
    from lookup.geo.service import PlacesService
    from lookup.kit.models import ModelStore

    data_dir = _data_dir(api)
    if not places.is_built(data_dir):
        places.build(data_dir, count=3_000, progress=False)
    svc = PlacesService(data_dir, cache_ttl=0.0)
    try:
        assert svc.ready()
        report = train(svc.searcher(), n_sessions=600, seed=0, seeds=1, per_session=8)
    finally:
        svc.close()
    store = ModelStore(data_dir / "models")
    assert publish(store, report)[1]
    deadline = time.monotonic() + 60
    while True:  # the API loads the index and then the model on the next requests
        r = httpx.get(
            f"{api.url}/v1/search",
            params={"lat": 12.93, "lng": 77.62, "ranking": "learned"},
            timeout=30,
        )
        if r.status_code == 200 or time.monotonic() > deadline:
            break
        time.sleep(0.3)
    assert r.status_code == 200, r.text
    try:
        yield api
    finally:
        shutil.rmtree(store.root / "places", ignore_errors=True)


def test_the_ranking_switch_shows_where_the_order_changes(
    page,
    dashboard: Service,
    learned_api: Service,
    tmp_path: Path,  # type: ignore[no-untyped-def]
) -> None:
    from playwright.sync_api import expect

    page.set_viewport_size({"width": 1400, "height": 1400})
    page.goto(dashboard.url)
    page.get_by_role("link", name="Places near me").first.click()
    expect(page.get_by_role("heading", name="Ranked results")).to_be_visible(timeout=60_000)
    expect(page.get_by_text("sit elsewhere in the hand-set order")).to_have_count(0)
    # CI lost this click now and then: the radio showed Learned, the page had run with the
    # hand-set ranking (no caption of either kind) — it came while the map's first report
    # of its view was starting a run. A person clicks once the map is drawn; so does this.
    settled(page)
    page.get_by_text("Learned", exact=True).click()
    caption = page.get_by_text("sit elsewhere in the hand-set order")
    # two searches (learned, then the hand-set order to compare with) on a busy machine
    expect(caption.or_(page.get_by_text("did not come"))).to_be_visible(timeout=120_000)
    expect(page.get_by_text("did not come")).to_have_count(0)
    expect(caption).to_be_visible()
    assert page.locator('[data-testid="stException"]').count() == 0
    moved = int(caption.inner_text().split("Learned ranking: ")[1].split(" of ")[0])
    assert moved >= 1  # the model reorders the design notes' point
    page.get_by_text("Hand-set", exact=True).click()
    expect(caption).to_have_count(0)
    page.screenshot(path=str(tmp_path / "places-ranking.png"), full_page=True)
