"""The Typeahead page's word matches, recent searches and usage tab (issue 27 items 8-10).

Driven through ``streamlit.testing`` against the real API (the same built data and page
fixtures as ``test_app_typeahead.py``): a word-anywhere suggestion is tagged in the
dropdown as the API marks it, a search picked from the list is sent as a pick and comes
back at the top of the list as this device's recent search until it is cleared, and the
Usage tab shows the zero-hit prefixes the server counted.
"""

from __future__ import annotations

import csv
import os
from pathlib import Path

from streamlit.testing.v1 import AppTest

from tests.app import test_app_typeahead as page
from tests.app.test_app_typeahead import box_data, pick, suggest, type_into

#: The page's fixtures: its built data, its API server, the page itself.
built, api, at = page.built, page.api, page.at


def tags(at: AppTest) -> dict[str, str]:
    return {i["s"]: i.get("tag", "") for i in box_data(at)["items"]}


def test_word_matches_recent_searches_and_usage(at: AppTest, api: str) -> None:
    # item 8: a suggestion found by a word inside it is tagged as the API marks it
    body = suggest(api, "score")
    infix = [s for s, m in zip(body["suggestions"], body.get("match", []), strict=False)
             if m == "infix"]  # fmt: skip
    assert infix, body
    type_into(at, "score")
    shown = tags(at)
    assert all(shown[s] == "word match" for s in infix)

    # items 9 and 10: pick the second suggestion for "ip"
    type_into(at, "ip")
    items = box_data(at)["items"]
    assert len(items) > 1, (items, suggest(api, "ip"))
    second = items[1]["s"]
    pick(at, second)
    type_into(at, "i")
    items = box_data(at)["items"]
    assert items[0]["s"] == second and items[0]["tag"] == "recent"
    assert [i["s"] for i in items].count(second) == 1
    searches = Path(os.environ["LOOKUP_DATA_DIR"]) / "typeahead" / "searches.csv"
    rows = list(csv.DictReader(searches.open(encoding="utf-8")))
    assert rows[-1]["query"] == second
    assert (rows[-1]["picked"], rows[-1]["rank"], rows[-1]["prefix"]) == ("1", "2", "ip")

    at.button(key="ta-recent-clear").click().run()
    assert not at.exception
    assert any("Forgot 1 recent" in s.value for s in at.success)
    type_into(at, "ipk")
    type_into(at, "i")
    assert all(i.get("tag") != "recent" for i in box_data(at)["items"])

    # item 10: the usage tab shows what the server answered with nothing
    type_into(at, "qzxvq")
    at.run()
    assert not at.exception
    zero = [m.value for m in at.metric if m.label == "Zero-hit prefixes"]
    assert zero and int(zero[0]) >= 1
    frames = [d.value for d in at.dataframe if "times" in d.value.columns]
    assert frames and "qzxvq" in set(frames[0]["prefix"])
