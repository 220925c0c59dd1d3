"""The search page's query language: the help line, "did you mean", and syntax errors shown
with a caret — through the real API (streamlit.testing)."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
from dashboard_testing import metric_value, ok, page_text
from starlette.types import ASGIApp
from streamlit.testing.v1 import AppTest

from lookup.search import build_index
from lookup.server import create_app
from tests.search.corpus import CrawlWriter, stdlib_pages

PAGE = "views/search.py"
SEARCH = ["lookup.search.http:mount"]


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from lookup.search import manifest

    manifest.DURABLE = False
    root = tmp_path_factory.mktemp("search-query-page")
    CrawlWriter(root / "crawl").fetch(stdlib_pages(120))
    build_index(root / "crawl", root / "index", shards=2)
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


def test_the_help_line_names_the_operators(page: AppTest) -> None:
    text = page_text(page, with_code=True)
    for op in ("OR", "-decoder", "jso*", "title:", "site:", "after:", "before:"):
        assert op in text, op


def test_did_you_mean_offers_the_correction_and_runs_it(page: AppTest) -> None:
    at = _search(page, "itertols")
    button = at.button(key="search-did-you-mean")
    assert "itertools" in button.label
    at = ok(button.click().run())
    assert at.text_input(key="search-q").value == "itertools"
    api = httpx.get(f"{page.api}/search", params={"q": "itertools"}).json()  # type: ignore[attr-defined]
    assert metric_value(at, "Results") == f"about {api['estimatedTotal']:,}"
    assert not [b for b in at.button if b.key == "search-did-you-mean"]


def test_operators_run_from_the_box(page: AppTest) -> None:
    api = page.api  # type: ignore[attr-defined]
    for q in ("itertools OR functools", "itertools -chain", "iter*", "title:itertools"):
        at = _search(page, q)
        expected = httpx.get(f"{api}/search", params={"q": q}).json()["estimatedTotal"]
        assert expected > 0 and metric_value(at, "Results") == f"about {expected:,}", q
        assert metric_value(at, "Words matched with") == "operators"


def test_a_syntax_error_points_at_its_character(page: AppTest) -> None:
    at = _search(page, "chain (itertools")
    text = page_text(at, with_code=True)
    assert "That query cannot be run" in text and "never closed" in text
    code = [c.value for c in at.code]
    assert any(c.splitlines()[1].startswith(" " * 6 + "^") for c in code if "\n" in c), code


def test_typo_tolerance_says_what_it_searched(page: AppTest) -> None:
    """``itertols chain`` finds the itertools pages and the page says so, the correction in
    bold; a prefix says what it expanded to (issue 28 items 1 and 7)."""
    api = page.api  # type: ignore[attr-defined]
    at = _search(page, "itertols chain")
    assert "Showing results for **itertools** chain" in page_text(at)
    body = httpx.get(f"{api}/search", params={"q": "itertols chain"}).json()
    assert body["corrections"][0]["to"] == "itertools"
    assert body["estimatedTotal"] > 0
    assert metric_value(at, "Results") == f"about {body['estimatedTotal']:,}"
    assert "Expanded: `iter*` →" in page_text(_search(page, "iter*"))
    assert "Showing results for" not in page_text(_search(page, "itertools chain"))
