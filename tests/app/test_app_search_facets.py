"""The search page's refinements (issue 28 items 8-10), through ``streamlit.testing`` against the
real API: facet lists with counts that filter when clicked (and a button that removes the
filter), results collapsed to two per site with "more from this site", and the newest first."""

from __future__ import annotations

import html
import re
import shutil
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest
from dashboard_testing import ok
from starlette.types import ASGIApp
from streamlit.testing.v1 import AppTest

from lookup.search import build_index
from lookup.server import create_app
from tests.search.corpus import BASE_TIME, CrawlWriter, Page

PAGE = "views/search.py"
SEARCH = ["lookup.search.http:mount"]
ENGLISH = (
    "Python is a programming language that lets you work quickly and integrate systems "
    "more effectively; this page is about {topic}."
)
JAPANESE = (
    "東京は日本の首都であり、多くの人々が住んでいます。電車はとても便利で、毎日たくさんの人が"
    "利用しています。python の本もたくさんあります。"
)


SMALL = [f"http://site{i}.test/tutorial.html" for i in range(8)]
JA = "http://ja.test/tokyo.html"


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One crowded site (six tutorial pages, in March), eight small English ones and a
    Japanese one (in April)."""
    from lookup.search import manifest

    manifest.DURABLE = False
    root = tmp_path_factory.mktemp("search-facets-page")
    crawl = CrawlWriter(root / "crawl")
    crawl.fetch(
        [
            Page(
                f"http://big.test/tutorial/part{i}.html",
                f"Python tutorial part {i}",
                ENGLISH.format(topic=f"tutorial lesson {i}"),
            )
            for i in range(6)
        ],  # fmt: skip
        at=BASE_TIME,
    )
    small = [
        Page(url, f"A tutorial {i}", ENGLISH.format(topic=f"tutorial notes {i}"))
        for i, url in enumerate(SMALL)
    ]
    crawl.fetch([*small, Page(JA, "東京", JAPANESE)], at=BASE_TIME + 40 * 86400)
    build_index(crawl.root, root / "index", shards=2)
    manifest.DURABLE = True
    return root / "index"


@pytest.fixture
def page(
    index_dir: Path,
    tmp_path: Path,
    serve_asgi: Callable[[ASGIApp], str],
    visit: Callable[[str, str], AppTest],
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[AppTest]:
    shutil.copytree(index_dir, tmp_path / "data" / "search")
    monkeypatch.setenv("LOOKUP_DATA_DIR", str(tmp_path / "data"))
    api = serve_asgi(create_app(tmp_path / "data", subsystems=SEARCH))
    at = visit(PAGE, api)
    at.api = api  # type: ignore[attr-defined]
    yield at


def _search(at: AppTest, query: str) -> AppTest:
    at.text_input(key="search-q").input(query)
    return ok(at.button(key="search-submit").click().run())


def _urls(at: AppTest) -> list[str]:
    cards = [h.value for h in at.html if 'class="lw-result"' in h.value]
    return [html.unescape(re.search(r'class="lw-orig" href="([^"]+)"', c).group(1)) for c in cards]


def _facet_buttons(at: AppTest, facet: str) -> list:  # type: ignore[type-arg]
    return [b for b in at.button if str(b.key or "").startswith(f"search-facet-{facet}-")]


def test_facets_show_counts_and_filter_when_clicked(page: AppTest) -> None:
    at = _search(page, "python")
    api = httpx.get(f"{page.api}/search", params={"q": "python", "facets": "true"}).json()
    langs = {b["value"]: b["count"] for b in api["facets"]["lang"]["buckets"]}
    assert langs == {"en": 14, "ja": 1}
    labels = [b.label for b in _facet_buttons(at, "lang")]
    assert labels == ["English (en) · 14", "Japanese (ja) · 1"]
    months = [b.label for b in _facet_buttons(at, "month")]
    assert months == ["2026-04 · 9", "2026-03 · 6"]
    assert [b.label for b in _facet_buttons(at, "site")][0] == "big.test · 6"

    ja = next(b for b in _facet_buttons(at, "lang") if b.label.startswith("Japanese"))
    at = ok(ja.click().run())
    assert _urls(at) == [JA]
    chip = at.button(key="search-unfilter-lang")
    assert "Japanese (ja)" in chip.label
    at = ok(chip.click().run())
    assert len(_urls(at)) == 10  # the filter is gone: a full page again

    march = next(b for b in _facet_buttons(at, "month") if b.label.startswith("2026-03"))
    at = ok(march.click().run())
    assert {urlsplit(u).hostname for u in _urls(at)} == {"big.test"}


def test_a_crowded_site_shows_two_results_and_more_from_this_site(page: AppTest) -> None:
    at = _search(page, "tutorial")
    urls = _urls(at)
    assert len(urls) == 10 and Counter(urlsplit(u).hostname for u in urls)["big.test"] == 2
    more = [b for b in at.button if str(b.key or "").startswith("search-more-")]
    assert len(more) == 1 and more[0].label == "More from big.test (4+ not shown)"
    at = ok(more[0].click().run())
    urls = _urls(at)
    assert len(urls) == 6 and {urlsplit(u).hostname for u in urls} == {"big.test"}
    assert "big.test" in at.button(key="search-unfilter-site").label


def test_sorting_by_date_puts_the_newest_first(page: AppTest) -> None:
    at = _search(page, "python")
    at = ok(at.segmented_control(key="search.sort").set_value("date").run())
    assert _urls(at)[:3] == [JA, SMALL[7], SMALL[6]]
