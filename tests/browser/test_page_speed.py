"""How long a page visit and an action take in a real browser (issue 24, item 17).

The slow ones were Places (5–7 s a visit, 2–6 s an action), the Crawler after a crawl
(13 s) and the Capacity planner. Each figure here is the time from navigation (or a
click) to the page's main content being on screen, measured in Debian's Chromium against
the real API and dashboard, after one untimed visit (the browser then has Streamlit's
scripts cached and the server has imported the page, as for anyone's second visit).

The target on a quiet two-core machine is under 1.5 s; the test asserts a generous
:data:`BOUND_S`, or :data:`RELATIVE` times the Home page's visit measured the same way in
the same test when the machine is so busy that even Home is slow, and prints what it
measured (``pytest -s`` shows the lines starting ``speed:``).
"""

from __future__ import annotations

import shutil
import statistics
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from browser_harness import Service

pytestmark = pytest.mark.browser

#: The bound every visit and action must stay under (the target is 1.5 s).
BOUND_S = 4.0
#: ...or this many Home page visits, measured side by side, when that is longer (a page
#: that draws charts slows more than Home when other processes take the CPU).
RELATIVE = 6.0
#: Timed repetitions of each visit (the median is the figure).
REPEATS = 3
EXCEPTION = '[data-testid="stException"]'
#: The Places map, drawn in the page (app/placesleaflet.py): Playwright's CSS pierces its
#: shadow root.
MAP = '[data-testid="places-map"]'


def _data_dir(api: Service) -> Path:
    argv = [str(a) for a in api.process.args]  # type: ignore[union-attr]
    return Path(argv[argv.index("--data-dir") + 1])


@pytest.fixture(scope="module")
def places_built(api: Service) -> Service:
    """The running API with a small places data set in its data directory."""
    from lookup.datasets import places

    data_dir = _data_dir(api)
    if not places.is_built(data_dir):
        places.build(data_dir, count=3_000, progress=False)
    deadline = time.monotonic() + 60
    while httpx.get(f"{api.url}/v1/places/index", timeout=30).status_code != 200:
        assert time.monotonic() < deadline, "the API did not load the places index"
        time.sleep(0.5)
    return api


@pytest.fixture
def a_finished_crawl(api: Service) -> Iterator[Path]:
    """A small finished crawl of the sandbox web in the dashboard's data directory
    (removed afterwards: the session's other flows expect none)."""
    from lookup.crawler import Sandbox, SandboxConfig, crawl
    from tests.crawler.conftest import test_config

    out = _data_dir(api) / "crawls" / "crawl-20260101-000000"
    web = Sandbox(SandboxConfig.small(crawl_delay=0.01)).start()
    try:  # in a thread of its own: Playwright's event loop runs in this one
        with ThreadPoolExecutor(1) as pool:
            pool.submit(crawl, test_config(out, web, max_pages=120)).result(timeout=300)
    finally:
        web.stop()
    try:
        yield out
    finally:
        shutil.rmtree(out, ignore_errors=True)


def _settled(page) -> None:  # type: ignore[no-untyped-def]
    """No script run in progress (the status widget shows one) for a moment."""
    from playwright.sync_api import expect

    for _ in range(2):
        time.sleep(0.3)
        expect(page.locator('[data-testid="stStatusWidget"]')).to_have_count(0)


def _timed(what: str, act: Callable[[], None], shown: Callable[[], None]) -> float:
    """Seconds from ``act()`` until ``shown()`` returns (it waits for the content)."""
    started = time.perf_counter()
    act()
    shown()
    seconds = time.perf_counter() - started
    print(f"speed: {what}: {seconds:.2f} s")
    return seconds


def _visits(page, url: str, what: str, shown: Callable[[], None]) -> float:  # type: ignore[no-untyped-def]
    """The median of :data:`REPEATS` timed visits of ``url``, after one untimed one."""
    page.goto(url)
    shown()
    _settled(page)
    figures = []
    for _ in range(REPEATS):
        figures.append(_timed(f"{what} visit", lambda: page.goto(url), shown))
        _settled(page)
    median = statistics.median(figures)
    print(f"speed: {what} visit, median of {REPEATS}: {median:.2f} s")
    return median


@pytest.fixture
def bound(page, dashboard: Service) -> float:  # type: ignore[no-untyped-def]
    """:data:`BOUND_S`, or :data:`RELATIVE` Home visits if the machine makes that longer."""
    from playwright.sync_api import expect

    def shown() -> None:
        expect(page.get_by_role("heading", name="Lookup Workbench")).to_be_visible(timeout=60_000)
        expect(page.get_by_role("heading", name="Explore", exact=True)).to_be_visible(
            timeout=60_000
        )

    home = _visits(page, f"{dashboard.url}/", "Home (the baseline)", shown)
    return max(BOUND_S, RELATIVE * home)


def _metric_value(page, label: str):  # type: ignore[no-untyped-def]
    card = page.locator('[data-testid="stMetric"]').filter(
        has=page.locator('[data-testid="stMetricLabel"]', has_text=label)
    )
    return card.locator('[data-testid="stMetricValue"]')


def test_places_visit_and_search_are_quick(
    page,
    dashboard: Service,
    places_built: Service,
    bound: float,  # type: ignore[no-untyped-def]
) -> None:
    from playwright.sync_api import expect

    page.set_viewport_size({"width": 1400, "height": 1400})
    leaflet = page.locator(f"{MAP}.leaflet-container")

    def shown() -> None:  # the ranked list, and the map with its numbered pins
        expect(page.get_by_role("heading", name="Ranked results")).to_be_visible(timeout=60_000)
        expect(page.locator('[data-testid="stDataFrame"]').first).to_be_visible()
        expect(page.locator(f"{MAP} .pin").first).to_be_visible(timeout=60_000)

    assert _visits(page, f"{dashboard.url}/places", "Places", shown) < bound

    # An action: what you look for narrows the results (and the map is not reloaded).
    leaflet.evaluate("el => { el.__sameMap = true; }")
    truth = httpx.get(f"{places_built.url}/v1/search", params={
        "lat": "12.935200", "lng": "77.624500", "radius": "2000", "q": "pharmacy",
    }, timeout=30).json()  # fmt: skip
    query = page.get_by_role("textbox", name="Looking for")

    def search() -> None:
        query.fill("pharmacy")
        query.press("Enter")

    def answered() -> None:
        expect(_metric_value(page, "Results survived")).to_have_text(f"{truth['total']:,}")

    assert _timed("Places search for a word", search, answered) < bound
    _settled(page)
    same = leaflet.evaluate("el => el.__sameMap === true")
    assert same, "the map was reloaded by a search: every action would pay for it"
    expect(page.locator(EXCEPTION)).to_have_count(0)


class Reruns:
    """The script runs the browser asks the server for, read off the page's websocket:
    ``"page"`` for a whole run, else the fragment's id."""

    def __init__(self, page) -> None:  # type: ignore[no-untyped-def]
        self.asked: list[str] = []
        page.on("websocket", lambda ws: ws.on("framesent", self._sent))

    def _sent(self, payload: str | bytes) -> None:
        from streamlit.proto.BackMsg_pb2 import BackMsg

        if isinstance(payload, str):
            return
        message = BackMsg.FromString(bytes(payload))
        if message.WhichOneof("type") == "rerun_script":
            self.asked.append(message.rerun_script.fragment_id or "page")


def _map_searched(page, fits: str | None = None) -> None:  # type: ignore[no-untyped-def]
    """Wait until the map shows what the page searched (``fits``: after the page set its
    view that many times) and no script run is going on."""
    from browser_harness import settled
    from playwright.sync_api import expect

    the_map = page.locator(MAP)
    if fits is not None:
        expect(the_map).to_have_attribute("data-fits", fits, timeout=60_000)
    expect(the_map).to_have_attribute("data-view", "searched", timeout=60_000)
    settled(page)
    expect(the_map).to_have_attribute("data-view", "searched")


def test_places_runs_the_script_once_per_visit_and_action(
    page,
    dashboard: Service,
    places_built: Service,  # type: ignore[no-untyped-def]
) -> None:
    """The map takes the view the page searched without reporting it back: a visit (once
    the browser knows the map's size) and an action that moves the map each run the
    script once. Before, the map's frame reported every view it was given, and each
    report ran the map's fragment again."""
    from playwright.sync_api import expect

    reruns = Reruns(page)
    page.set_viewport_size({"width": 1400, "height": 1400})
    page.goto(f"{dashboard.url}/places")
    _map_searched(page)
    first = list(reruns.asked)
    assert first.count("page") == 1 and len(first) <= 2, first  # the map's size, once

    reruns.asked.clear()
    page.goto(f"{dashboard.url}/places")
    _map_searched(page)
    assert reruns.asked == ["page"], reruns.asked

    fits = page.locator(MAP).get_attribute("data-fits")
    assert fits is not None
    reruns.asked.clear()
    page.get_by_role("combobox", name="Jump to").click()
    page.get_by_role("option", name="Central London").click()
    expect(page.get_by_role("spinbutton", name="Latitude")).to_have_value("51.50740")
    _map_searched(page, str(int(fits) + 1))
    assert reruns.asked == ["page"], reruns.asked

    # a person drags the map: it reports the new view, the map's fragment (only) searches it
    reruns.asked.clear()
    box = page.locator(f"{MAP}.leaflet-container").bounding_box()
    assert box is not None
    x, y = box["x"] + box["width"] * 0.5, box["y"] + box["height"] * 0.6
    page.mouse.move(x, y)
    page.mouse.down()
    page.mouse.move(x - 180, y - 60, steps=12)
    page.mouse.up()
    deadline = time.monotonic() + 60
    while not reruns.asked:  # the report is what this waits for; nothing on screen says
        assert time.monotonic() < deadline, "the dragged map did not report its view"
        page.wait_for_timeout(100)
    _map_searched(page)  # the page searched exactly the view the map shows
    assert len(reruns.asked) == 1 and reruns.asked[0] != "page", reruns.asked
    expect(page.locator(EXCEPTION)).to_have_count(0)


def test_capacity_visit_and_input_are_quick(page, dashboard: Service, bound: float) -> None:  # type: ignore[no-untyped-def]
    from playwright.sync_api import expect

    def shown() -> None:
        expect(page.get_by_text("How each figure is worked out")).to_be_visible(timeout=60_000)
        expect(page.locator(".js-plotly-plot").first).to_be_visible(timeout=60_000)

    assert _visits(page, f"{dashboard.url}/capacity", "Capacity planner", shown) < bound

    tab = page.get_by_role("tab", name="Crawler")

    def opened() -> None:
        expect(_metric_value(page, "Seen-URL set in bytes")).to_be_visible(timeout=60_000)

    assert _timed("Capacity planner, another tab", tab.click, opened) < bound
    _settled(page)
    expect(page.locator(EXCEPTION)).to_have_count(0)


def test_crawler_visit_after_a_crawl_is_quick(
    page,
    dashboard: Service,
    a_finished_crawl: Path,
    bound: float,  # type: ignore[no-untyped-def]
) -> None:
    from playwright.sync_api import expect

    def shown() -> None:  # the finished crawl's figures and its politeness timeline
        expect(page.get_by_text("Finished").first).to_be_visible(timeout=60_000)
        expect(_metric_value(page, "Pages fetched")).not_to_have_text("0")
        expect(page.locator(".js-plotly-plot").first).to_be_visible(timeout=60_000)

    assert _visits(page, f"{dashboard.url}/crawler", "Crawler after a crawl", shown) < bound

    def duplicates() -> None:
        expect(_metric_value(page, "SimHash distance")).to_contain_text(
            "of 64 bits", timeout=60_000
        )

    tab = page.get_by_role("tab", name="Duplicates")
    assert _timed("Crawler, the duplicates tab", tab.click, duplicates) < bound
    _settled(page)
    expect(page.locator(EXCEPTION)).to_have_count(0)
