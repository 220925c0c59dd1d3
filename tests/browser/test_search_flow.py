"""A person searches the crawled pages, opens a score's breakdown, breaks a shard and heals it.

Runs its own API and dashboard over a data directory that already holds a small search
index (built from a real-format crawl of stdlib docstrings, one page of it hostile
markup), in Debian's Chromium.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
from browser_harness import Service, running_stack, settled

from lookup.search import build_index
from tests.search.corpus import CrawlWriter, Page, stdlib_pages

pytestmark = pytest.mark.browser

EXCEPTION = '[data-testid="stException"]'
#: Streamlit keeps a stale copy of an element that moved until the next render settles it.
LIVE = ':not([data-stale="true"])'
HOSTILE = Page(
    "http://evil.test/zebrafish.html",
    "Zebrafish <i>care</i>",
    'Zebrafish keepers beware <img src=x onerror="window.__owned=1"> and '
    "<script>window.__owned=2</script>: zebrafish text is only ever text.",
)


@pytest.fixture(scope="module")
def search_stack(
    chromium_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Service, Service]]:
    """API + dashboard whose data directory holds a four-shard index from the start."""
    workdir = tmp_path_factory.mktemp("search-stack")
    CrawlWriter(workdir / "crawl").fetch([*stdlib_pages(200), HOSTILE])
    build_index(workdir / "crawl", workdir / "data" / "search", shards=4)
    with running_stack(workdir) as services:
        yield services


def _metric_value(page, label: str):  # type: ignore[no-untyped-def]
    metrics = page.locator(f'[data-testid="stElementContainer"]{LIVE} [data-testid="stMetric"]')
    card = metrics.filter(has=page.locator('[data-testid="stMetricLabel"]', has_text=label))
    return card.locator('[data-testid="stMetricValue"]')


def _search(page, query: str) -> None:  # type: ignore[no-untyped-def]
    box = page.get_by_label("Search the crawled pages")
    box.fill(query)
    box.press("Enter")
    settled(page)


def _until(what: str, check: Callable[[], object], timeout: float = 30) -> None:
    """Wait for the API to show what a rerun did (a click can return before its rerun has
    begun, and the page may still show the previous rerun's identical figures)."""
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


def _shards(api: Service) -> dict:  # type: ignore[type-arg]
    return httpx.get(f"{api.url}/search/shards", timeout=10).json()  # type: ignore[no-any-return]


def _switch(page, shard: int, label: str) -> None:  # type: ignore[no-untyped-def]
    """Click one option of a shard's fault switch (a segmented control of radio buttons)."""
    switch = page.locator(f".st-key-search-fault-{shard}{LIVE}")
    switch.get_by_role("radio", name=label, exact=True).first.click()
    settled(page)


def test_search_explain_and_break_a_shard(
    page,  # type: ignore[no-untyped-def]
    search_stack: tuple[Service, Service],
    tmp_path: Path,
) -> None:
    from playwright.sync_api import expect

    api, dashboard = search_stack
    page.goto(dashboard.url)
    page.get_by_role("link", name="Web search").first.click()
    expect(page.get_by_role("heading", name="Web search")).to_be_visible()
    expect(page).to_have_url(re.compile(r"/search$"))
    expect(page.get_by_text("201 pages in 4 shards")).to_be_visible()

    _search(page, "regular expression")
    cards = page.locator(f'[data-testid="stElementContainer"]{LIVE} .lw-result')
    expect(cards.first).to_be_visible()
    expect(_metric_value(page, "Shards answered")).to_have_text("4 of 4")
    marks = cards.first.locator("mark")
    expect(marks.first).to_be_visible()
    assert {m.lower()[:7] for m in marks.all_inner_texts()} <= {"regular", "express"}
    expected = httpx.get(f"{api.url}/search", params={"q": "regular expression"}).json()
    titles = [r["title"] for r in expected["results"]]
    expect(cards.locator(".lw-title")).to_have_text(titles)

    # the score's breakdown: a row per query term with its idf and tf
    page.get_by_text(re.compile(r"^Why this rank — score")).first.click()
    table = page.locator('[data-testid="stDataFrame"]').first
    expect(table).to_be_visible()
    expect(page.get_by_text("BM25 (Lucene): idf = ln(1 + (N − df + 0.5)").first).to_be_visible()

    # markup inside a page is shown as text and never runs
    _search(page, "zebrafish")
    hostile = page.locator(f'[data-testid="stElementContainer"]{LIVE} .lw-result').first
    expect(hostile).to_contain_text("<img src=x onerror=")
    expect(hostile).to_contain_text("Zebrafish <i>care</i>")
    assert page.evaluate("() => window.__owned === undefined")

    # a shard goes down: the answer arrives at the deadline, partial, and says so
    _search(page, "return value")
    _switch(page, 2, "Down")
    settled(page)
    expect(_metric_value(page, "Shards answered")).to_have_text("3 of 4")
    expect(page.get_by_text("Partial results:")).to_be_visible()
    expect(page.get_by_text("shard 2 did not answer")).to_be_visible()
    faults = httpx.get(f"{api.url}/search/shards").json()["shards"][2]["replicas"]
    assert [r["fault"]["mode"] for r in faults] == ["dead", "dead"]

    # heal it, then slow one primary down: the hedge to its replica answers instead
    page.get_by_role("button", name="Heal every shard").click()
    settled(page)
    expect(_metric_value(page, "Shards answered")).to_have_text("4 of 4")
    _switch(page, 1, "Slow primary")
    _until("a search with shard 1's primary slow", lambda: (
        (recent := _shards(api)["recent"]) and recent[-1]["shards"][1]["hedged"]))  # fmt: skip
    settled(page)
    expect(_metric_value(page, "Shards answered")).to_have_text("4 of 4")
    expect(_metric_value(page, "Hedges fired")).not_to_have_text("0")
    fanout = page.locator(f".st-key-search-fanout{LIVE}")
    expect(fanout).to_be_visible()
    expect(fanout).to_contain_text("hedge (replica 1)")  # shard 1's bar in the fan-out chart
    recent = _shards(api)["recent"][-1]["shards"][1]
    assert recent["hedged"] and recent["replica"] == 1

    expect(page.locator(EXCEPTION)).to_have_count(0)
    shot = tmp_path / "search.png"
    page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 10_000
    page.get_by_role("button", name="Heal every shard").click()
    _until(
        "every shard healed",
        lambda: all(  # the module's next tests need them healthy
            r["fault"]["mode"] == "ok" for g in _shards(api)["shards"] for r in g["replicas"]
        ),
    )
    settled(page)


def warc_date(crawl_dir: Path, url: str) -> str:
    """The WARC-Date of ``url``'s newest record in the crawl (read with warcio itself)."""
    from warcio.archiveiterator import ArchiveIterator

    found = ""
    for path in sorted((crawl_dir / "warc").glob("*.warc.gz")):
        with path.open("rb") as f:
            for record in ArchiveIterator(f):
                if record.rec_headers.get_header("WARC-Target-URI") == url:
                    found = record.rec_headers.get_header("WARC-Date")
    assert found, url
    return found


def test_click_a_result_and_its_stored_copy_opens(
    page,  # type: ignore[no-untyped-def]
    search_stack: tuple[Service, Service],
    tmp_path: Path,
) -> None:
    """The result's title opens the page's stored copy from the API, with its fetch date."""
    from playwright.sync_api import expect

    api, dashboard = search_stack
    page.goto(f"{dashboard.url}/search")
    expect(page.get_by_role("heading", name="Web search")).to_be_visible()
    _search(page, "regular expression")
    cards = page.locator(f'[data-testid="stElementContainer"]{LIVE} .lw-result')
    first = httpx.get(f"{api.url}/search", params={"q": "regular expression"}).json()
    top = first["results"][0]
    # the rerun may not have begun when the search box's Enter returns: wait for its cards
    expect(cards.first.locator(".lw-title")).to_have_text(top["title"])
    with page.expect_popup() as opened:
        cards.first.locator(".lw-title").click()
    copy = opened.value
    copy.wait_for_load_state()
    assert copy.url.startswith(f"{api.url}/search/cached?url=")
    expect(copy.locator("#cached-banner")).to_contain_text(top["url"])
    crawl_dir = Path(httpx.get(f"{api.url}/search/status").json()["crawlDir"])
    stored_at = warc_date(crawl_dir, top["url"])
    expect(copy.locator("#fetched-at")).to_have_text(
        stored_at.replace("T", " ").replace("Z", " UTC")
    )
    expect(copy.locator(".page")).to_contain_text(top["title"])
    copy.screenshot(path=str(tmp_path / "stored-copy.png"), full_page=True)
    copy.close()

    # the hostile page's stored copy: its markup is text, its script never runs
    _search(page, "zebrafish")
    hostile = page.locator(f'[data-testid="stElementContainer"]{LIVE} .lw-result').first
    expect(hostile).to_contain_text("Zebrafish <i>care</i>")  # this query's card, not the last's
    with page.expect_popup() as opened:
        hostile.locator(".lw-title").click()
    evil = opened.value
    evil.wait_for_load_state()
    expect(evil.locator("#cached-banner")).to_contain_text("http://evil.test/zebrafish.html")
    expect(evil.locator(".page")).to_contain_text("Zebrafish keepers beware")
    assert evil.evaluate("() => window.__owned === undefined")
    assert evil.locator("script, img").count() == 0
    evil.close()
    expect(page.locator(EXCEPTION)).to_have_count(0)


def test_operators_and_did_you_mean(
    page,  # type: ignore[no-untyped-def]
    search_stack: tuple[Service, Service],
    tmp_path: Path,
) -> None:
    """A person reads the operator help, misspells a word, takes the suggestion, and writes
    a query the parser cannot read."""
    from playwright.sync_api import expect

    api, dashboard = search_stack
    page.goto(f"{dashboard.url}/search")
    expect(page.get_by_text("Operators:").first).to_be_visible()

    _search(page, "itertols")
    suggestion = page.get_by_role("button", name=re.compile(r"Did you mean: itertools"))
    expect(suggestion).to_be_visible()
    page.screenshot(path=str(tmp_path / "did-you-mean.png"), full_page=True)
    suggestion.click()
    settled(page)
    expect(page.get_by_label("Search the crawled pages")).to_have_value("itertools")
    total = httpx.get(f"{api.url}/search", params={"q": "itertools"}).json()["estimatedTotal"]
    expect(_metric_value(page, "Results")).to_have_text(f"about {total:,}")

    query = "itertools OR functools -chain"
    _search(page, query)
    total = httpx.get(f"{api.url}/search", params={"q": query}).json()["estimatedTotal"]
    expect(_metric_value(page, "Results")).to_have_text(f"about {total:,}")

    _search(page, "chain (itertools")
    expect(page.get_by_text("That query cannot be run").first).to_be_visible()
    expect(page.get_by_text(re.compile(r"\^ this '\(' is never closed")).first).to_be_visible()
    expect(page.locator(EXCEPTION)).to_have_count(0)
    page.screenshot(path=str(tmp_path / "search-query.png"), full_page=True)
