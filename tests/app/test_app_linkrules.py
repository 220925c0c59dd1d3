"""The shortener page's redirect-rules editor, through ``streamlit.testing``, on the real API.

Make a link, add a rule in the editor (an iPhone goes elsewhere), save it, click as an
iPhone and as a desktop over HTTP, and see the clicks per rule; a rule the API refuses
(a private address) shows the refusal naming the rule and the field.
"""

from __future__ import annotations

from collections.abc import Callable

import httpx
from dashboard_testing import ok, page_text
from streamlit.testing.v1 import AppTest

PAGE = "views/shortener.py"
IPHONE = (
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 "
    "(KHTML, like Gecko) Version/17.4 Mobile/15E148 Safari/604.1"
)


def _edit(at: AppTest, key: str, rows: list[dict[str, str]]) -> None:
    """Type ``rows`` into the (empty) rules editor of ``key``, as a person adding rows."""
    at.session_state[f"rules-editor-{key}"] = {
        "edited_rows": {},
        "added_rows": rows,
        "deleted_rows": [],
    }


def test_edit_rules_and_see_clicks_per_rule(
    threaded_api: str, visit: Callable[[str, str], AppTest]
) -> None:
    at = visit(PAGE, threaded_api)
    at.text_input(key="create-url").input("https://example.com/launch")
    at.text_input(key="create-alias").input("launch-rules")
    ok(at.button(key="create-submit").click().run())
    assert "Redirect rules" in page_text(at)
    assert "to the first rule whose conditions all hold" in page_text(at)

    _edit(at, "launch-rules", [{"Destination": "http://10.0.0.1/", "Device": "ios"}])
    ok(at.button(key="rules-save").click().run())
    text = page_text(at)
    assert "Not saved" in text and "rule 1" in text and "PRIVATE_ADDRESS" in text

    _edit(at, "launch-rules", [{"Destination": "https://apps.example/ios", "Device": "ios"}])
    ok(at.button(key="rules-save").click().run())
    assert "Saved 1 rule(s) for launch-rules" in page_text(at)

    with httpx.Client(base_url=threaded_api) as client:
        iphone = client.get("/launch-rules", headers={"User-Agent": IPHONE})
        assert iphone.headers["location"] == "https://apps.example/ios"
        for _ in range(2):
            other = client.get(
                "/launch-rules",
                headers={"User-Agent": "Mozilla/5.0 (X11; Linux x86_64) Firefox/121.0"},
            )
            assert other.headers["location"] == "https://example.com/launch"
    ok(at.run())
    (table,) = [d.value for d in at.dataframe if "Clicks (24 h)" in d.value.columns]
    assert list(table["Rule"]) == ["1", "default"]
    assert list(table["Clicks (24 h)"]) == [1, 2]
