"""The Web search page shows when a synonym widened the query, and why a query of one stop
word found nothing (``streamlit.testing`` against the real API on a port)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from dashboard_testing import ok, page_text
from starlette.types import ASGIApp
from streamlit.testing.v1 import AppTest

from lookup.search import build_index
from lookup.server import create_app
from tests.search.corpus import CrawlWriter, Page

PAGE = "views/search.py"
SEARCH = ["lookup.search.http:mount"]
PAGES = [
    Page("http://a.test/js.html", "JS bundlers", "Bundlers pack js modules for browsers."),
    Page("http://a.test/long.html", "JavaScript closures", "Closures in javascript keep scope."),
    Page("http://a.test/band.html", "Rock history", "The Who are an English rock band."),
]


@pytest.fixture
def api(
    tmp_path: Path, serve_asgi: Callable[[ASGIApp], str], monkeypatch: pytest.MonkeyPatch
) -> str:
    from lookup.search import manifest

    manifest.DURABLE = False
    CrawlWriter(tmp_path / "crawl").fetch(PAGES)
    build_index(tmp_path / "crawl", tmp_path / "data" / "search", shards=1)
    manifest.DURABLE = True
    monkeypatch.setenv("LOOKUP_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("LOOKUP_SEARCH_SYNONYMS", raising=False)
    return serve_asgi(create_app(tmp_path / "data", subsystems=SEARCH))  # seeds js, javascript


def _search(at: AppTest, query: str) -> AppTest:
    at.text_input(key="search-q").input(query)
    return ok(at.button(key="search-submit").click().run())


def test_the_page_says_which_synonyms_were_applied(
    api: str, visit: Callable[[str, str], AppTest]
) -> None:
    at = _search(visit(PAGE, api), "js")
    captions = [c.value for c in at.caption if c.value.startswith("Synonyms applied")]
    assert captions == [
        "Synonyms applied: **js** also as *javascript* (weighted below the words as typed, "
        "so exact matches rank first)."
    ]
    cards = [h.value for h in at.html if 'class="lw-result"' in h.value]
    assert len(cards) == 2 and "js.html" in cards[0]  # the word as typed first
    at = _search(at, "closures")
    assert not [c for c in at.caption if c.value.startswith("Synonyms applied")]


def test_one_stop_word_is_explained_and_two_are_a_phrase(
    api: str, visit: Callable[[str, str], AppTest]
) -> None:
    at = _search(visit(PAGE, api), "the")
    assert "Nothing searched: a stop word alone" in page_text(at)
    at = _search(at, "the who")
    cards = [h.value for h in at.html if 'class="lw-result"' in h.value]
    assert len(cards) == 1 and "band.html" in cards[0]
