"""The shortener page's link list (issue 27 item 4), through ``streamlit.testing`` against
the real API: paste several URLs at once, click one over HTTP, sort by clicks, search,
and narrow by creation date."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import httpx
from dashboard_testing import ok, page_text
from streamlit.testing.v1 import AppTest

PAGE = "views/shortener.py"


def _links(at: AppTest):  # type: ignore[no-untyped-def]
    """The "My links" table (the one with a Short URL column)."""
    found = [d.value for d in at.dataframe if "Short URL" in d.value.columns]
    assert len(found) == 1, [list(d.value.columns) for d in at.dataframe]
    return found[0]


def test_paste_sort_by_clicks_search_and_dates(
    threaded_api: str, visit: Callable[[str, str], AppTest]
) -> None:
    at = visit(PAGE, threaded_api)
    at.text_area(key="bulk-urls").input(
        "https://example.com/alpha\n\nhttps://example.com/bravo\nhttps://example.com/charlie\n"
    )
    ok(at.button(key="bulk-submit").click().run())
    assert "3 of 3 shortened" in page_text(at)
    table = _links(at)
    assert len(table) == 3 and list(table["Clicks"]) == [0, 0, 0]
    bravo = next(url for url, dest in zip(table["Short URL"], table["Destination"], strict=True)
                 if dest.endswith("/bravo"))  # fmt: skip

    with httpx.Client(base_url=threaded_api) as client:  # the short URL's key, on this API
        for _ in range(2):
            key = bravo.rsplit("/", 1)[1]
            assert client.get(f"/{key}", follow_redirects=False).status_code == 302
    at.selectbox(key="links-sort").select("Most clicked")
    ok(at.run())
    table = _links(at)
    assert table["Short URL"][0] == bravo and table["Clicks"][0] == 2
    assert table["Last click"][0] is not None

    at.text_input(key="links-search").input("CHARLIE")
    ok(at.run())
    assert list(_links(at)["Destination"]) == ["https://example.com/charlie"]

    at.text_input(key="links-search").input("")
    long_ago = datetime.now(UTC).date() - timedelta(days=400)
    at.date_input(key="links-dates").set_value((long_ago, long_ago + timedelta(days=2)))
    ok(at.run())
    assert "No link matches" in page_text(at)

    # all or nothing: one refused line, nothing made
    at.date_input(key="links-dates").set_value(())
    at.text_area(key="bulk-urls").input("https://example.com/delta\nhttp://10.1.2.3/")
    at.toggle(key="bulk-atomic").set_value(True)
    ok(at.button(key="bulk-submit").click().run())
    assert "Nothing was shortened" in page_text(at)
    assert len(_links(at)) == 3
