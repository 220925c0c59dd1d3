"""The Web search page's index versions panel, through ``streamlit.testing``, against the
real API: the kept versions with the live one and the rollback target, the canary queries,
a rejected version with its reason, and the rollback button that swaps at once."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from dashboard_testing import ok, page_text
from starlette.types import ASGIApp
from streamlit.testing.v1 import AppTest

from lookup.search import build_index
from lookup.server import create_app
from tests.search.corpus import CrawlWriter, Page, stdlib_pages

PAGE = "views/search.py"
SEARCH = ["lookup.search.http:mount"]


@pytest.fixture
def api(
    tmp_path: Path, serve_asgi: Callable[[ASGIApp], str], monkeypatch: pytest.MonkeyPatch
) -> str:
    """Versions 1 (40 pages) and 2 (60), and a rejected 3 (6 pages), behind the API."""
    data = tmp_path / "data"
    pages = stdlib_pages(60)
    for name, chosen in (("a", pages[:40]), ("b", pages)):
        crawl = CrawlWriter(tmp_path / name)
        crawl.fetch(chosen)
        assert build_index(crawl.root, data / "search", shards=2).published
    tiny = CrawlWriter(tmp_path / "tiny")
    tiny.fetch([*pages[:5], Page("http://w.test/1", "wombat", "wombat")])
    assert not build_index(tiny.root, data / "search").published
    monkeypatch.setenv("LOOKUP_DATA_DIR", str(data))  # where the dashboard finds the token
    return serve_asgi(create_app(data, subsystems=SEARCH))


def _caption(at: AppTest, start: str) -> str:
    return next(c.value for c in at.caption if start in c.value)


def test_the_panel_shows_versions_and_rolls_back(
    api: str, visit: Callable[[str, str], AppTest]
) -> None:
    at = visit(PAGE, api)
    assert "Index version 2 ·" in _caption(at, "Index version")
    table = next(d.value for d in at.dataframe if "canary queries" in d.value.columns)
    assert list(table["version"]) == [2, 1]
    assert list(table["state"]) == ["live", "previous (rollback target)"]
    assert list(table["pages"]) == [60, 40]
    assert "Canary queries of version 2" in page_text(at)
    text = page_text(at)
    assert "Version 3 was rejected" in text and "docs:" in text
    checks = next(d.value for d in at.dataframe if "check" in d.value.columns)
    assert not checks.loc[checks["check"] == "docs", "passed"].iloc[0]

    button = at.button(key="search-rollback")
    assert button.label == "Roll back to version 1" and not button.disabled
    at = ok(button.click().run())
    assert "Rolled back: index version 1 is live again" in page_text(at)
    assert "Index version 1 ·" in _caption(at, "Index version")  # drawn after the swap
    assert httpx.get(f"{api}/search/status").json()["version"] == 1
    table = next(d.value for d in at.dataframe if "canary queries" in d.value.columns)
    assert list(table["state"]) == ["previous (rollback target)", "live"]
    assert at.button(key="search-rollback").label == "Roll back to version 2"


def test_with_one_version_the_button_is_disabled(
    tmp_path: Path, serve_asgi: Callable[[ASGIApp], str], visit: Callable[[str, str], AppTest],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    data = tmp_path / "data"
    crawl = CrawlWriter(tmp_path / "a")
    crawl.fetch(stdlib_pages(20))
    build_index(crawl.root, data / "search", shards=1)
    monkeypatch.setenv("LOOKUP_DATA_DIR", str(data))
    at = visit(PAGE, serve_asgi(create_app(data, subsystems=SEARCH)))
    assert at.button(key="search-rollback").disabled
    assert "no previous version to roll back to" in page_text(at)
    assert "No version has been rejected" in page_text(at)
