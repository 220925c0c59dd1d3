"""A damaged system on the dashboard (issue 24, item 11): Home and the system's page say
which file is damaged and what to do, through ``streamlit.testing`` over the real API."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from dashboard_testing import HOME, RUN_TIMEOUT, ok, open_page, page_text
from starlette.types import ASGIApp
from streamlit.testing.v1 import AppTest

from lookup.server import create_app

SEARCH = ["lookup.search.http:mount"]


@pytest.fixture
def damaged_api(
    tmp_path: Path, serve_asgi: Callable[[ASGIApp], str], api_at: Callable[[str], None]
) -> Path:
    """The real API (web search mounted) over an index whose manifest is not JSON."""
    index = tmp_path / "data" / "search"
    index.mkdir(parents=True)
    (index / "CURRENT").write_text("manifest-000001.json\n")
    manifest = index / "manifest-000001.json"
    manifest.write_text('{"version": 1, "shards"')  # cut short, as by a full disk
    api_at(serve_asgi(create_app(tmp_path / "data", subsystems=SEARCH)))
    return manifest


def test_home_shows_the_damaged_system_its_file_and_the_remedy(damaged_api: Path) -> None:
    at = ok(AppTest.from_file(HOME, default_timeout=RUN_TIMEOUT).run())
    text = page_text(at)
    assert "API up" in text
    assert "Search damaged" in text and str(damaged_api) in text, text
    assert "lookup index" in text and "--rebuild" in text, text
    cards = [m.value for m in at.markdown if "red-badge[damaged]" in m.value]
    assert cards and "Rebuild the index" in cards[0], cards
    assert not any(
        "green-badge[ready]" in m.value and "Search the crawled" in m.value for m in at.markdown
    )


def test_the_search_page_says_damaged_not_unbuilt(damaged_api: Path) -> None:
    at = open_page("views/search.py")
    text = page_text(at)
    assert str(damaged_api) in text and "--rebuild" in text, text
    assert "No search index yet" not in text
