"""The places page's place card: a result's rating and reviews, and posting one from the form
(twice: the second replaces the first, and the card says so)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

from tests.conftest import serve_in_thread

PLACES = "views/places.py"


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from lookup.datasets import places

    data_dir = tmp_path_factory.mktemp("places-reviews")
    places.build(data_dir, count=2_000, progress=False)
    return data_dir


@pytest.fixture(scope="module")
def places_api(built: Path) -> Iterator[str]:
    from lookup.server import create_app

    with serve_in_thread(create_app(built), timeout_s=60) as url:
        yield url


def _widget(at: AppTest, key: str) -> Any:
    for kind in (at.selectbox, at.select_slider, at.text_input, at.text_area):
        for w in kind:
            if w.key == key:
                return w
    raise AssertionError(key)


def _post(at: AppTest, user: str, stars: int, text: str) -> AppTest:
    _widget(at, "places.review-user").set_value(user)
    _widget(at, "places.review-stars").set_value(stars)
    _widget(at, "places.review-text").set_value(text)
    return at.button[[b.label for b in at.button].index("Post review")].click().run()


def test_a_review_posted_on_the_card_shows_on_it(
    built: Path,
    places_api: str,
    visit: Callable[[str, str], AppTest],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("LOOKUP_DATA_DIR", str(built))  # where the API keeps its admin token
    at = visit(PLACES, places_api)
    _widget(at, "places.preset").set_value("Shinjuku, Tokyo").run()
    _widget(at, "places.radius").set_value(20_000).run()
    card = _widget(at, "places.card")
    assert card.options, "the card lists the results"
    at = _post(at, "meera", 4, "Good coffee, slow service")
    assert not at.exception
    assert any("Posted a review by meera" in s.value for s in at.success)
    assert "Good coffee, slow service" in [t.value for t in at.text]
    reviews = [m.value for m in at.metric if m.label == "Reviews"]
    assert reviews
    at = _post(at, "meera", 2, "Went back: cold coffee")
    assert any("Replaced the earlier review by meera" in s.value for s in at.success)
    texts = [t.value for t in at.text]
    assert "Went back: cold coffee" in texts and "Good coffee, slow service" not in texts
    assert [m.value for m in at.metric if m.label == "Reviews"] == reviews  # still one
    at = _post(at, "", 3, "")
    assert any("refused" in w.value for w in at.warning)
