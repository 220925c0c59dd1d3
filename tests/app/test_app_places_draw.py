"""The places page's drawn-area search (issue 27 item 15): a GeoJSON polygon given to the
panel lists the places inside it from ``GET /v1/places/within``, a bad one is refused in
words; and the place-name box says what a suggestion matched (item 17)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

from tests.conftest import serve_in_thread

PLACES = "views/places.py"
#: Round Shinjuku, Tokyo (lng, lat), closed.
TOKYO = {
    "type": "Polygon",
    "coordinates": [[[139.5, 35.5], [139.9, 35.5], [139.9, 35.9], [139.5, 35.9], [139.5, 35.5]]],
}


@pytest.fixture(scope="module")
def places_api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    from lookup.datasets import places
    from lookup.server import create_app

    data_dir: Path = tmp_path_factory.mktemp("places-draw")
    places.build(data_dir, count=2_000, progress=False)
    with serve_in_thread(create_app(data_dir), timeout_s=60) as url:
        yield url


def _area(at: AppTest) -> Any:
    return next(t for t in at.text_area if t.key == "places.draw-geojson")


def test_a_pasted_polygon_lists_the_places_inside(
    places_api: str, visit: Callable[[str, str], AppTest]
) -> None:
    at = visit(PLACES, places_api)
    assert any(s.value == "Places inside an area you draw" for s in at.subheader)
    assert not [t for t in at.text_area if t.key == "places.draw-geojson"]  # off by default
    at = at.toggle(key="places.draw-on").set_value(True).run()
    at = _area(at).set_value(json.dumps(TOKYO)).run()
    assert not at.exception
    said = [c.value for c in at.caption if "Geohash cover" in c.value]
    assert said and "places inside" in said[0]
    tables = [d.value for d in at.dataframe if {"Name", "Lat", "Lng"} <= set(d.value.columns)]
    assert tables and len(tables[0]) > 0
    at = (
        _area(at)
        .set_value('{"type": "Polygon", "coordinates": [[[0, 0], [1, 1], [1, 0], [0, 1], [0, 0]]]}')
        .run()
    )
    assert any("refused" in w.value and "INVALID_POLYGON" in w.value for w in at.warning)


def test_a_suggestion_says_what_it_matched() -> None:
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "app"))
    from placesdraw import place_label

    base = {"name": "Bengaluru", "kind": "city", "country": "IN", "population": 8495492}
    alt = {**base, "matched": {"name": "Bangalore", "field": "alternateName", "typos": 0}}
    assert place_label(alt) == "Bengaluru · city in IN · 8,495,492 people · also called Bangalore"
    code = {**base, "matched": {"name": "BLR", "field": "iata", "typos": 0}}
    assert place_label(code).endswith("airport code BLR")
    typo = {**base, "matched": {"name": "Bengaluru", "field": "name", "typos": 2}}
    assert place_label(typo).endswith("people (2 typos)")
    assert place_label(base) == "Bengaluru · city in IN · 8,495,492 people"


def test_the_nearest_places_however_far(
    places_api: str, visit: Callable[[str, str], AppTest]
) -> None:
    """Issue 27 item 13 on the page: nearest-k with no radius, ordered by distance."""
    at = visit(PLACES, places_api)
    assert any(s.value == "The nearest places, however far" for s in at.subheader)
    at = at.toggle(key="places.nearest-on").set_value(True).run()
    assert not at.exception
    at = at.number_input(key="places.nearest-k").set_value(7).run()
    tables = [d.value for d in at.dataframe if {"Name", "Distance"} <= set(d.value.columns)]
    assert tables and len(tables[0]) == 7
    km = [float(v.split()[0].replace(",", "")) for v in tables[0]["Distance"]]
    assert km == sorted(km)
    assert any("7 nearest" in c.value for c in at.caption)
