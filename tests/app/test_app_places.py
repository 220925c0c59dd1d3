"""The "Places near me" page through ``streamlit.testing``, against the real API.

A small places data set is built once for the module and served by the real app
(``lookup.server.create_app``) on a loopback port. What the page shows is checked
against a brute-force oracle written here: every row of the places table, its own
haversine, its own text match — not against the API's answers.
"""

from __future__ import annotations

import json
import math
import re
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from dashboard_testing import open_page
from streamlit.testing.v1 import AppTest

from tests.conftest import serve_in_thread

PLACES = "views/places.py"
SEED_POINT = (12.9352, 77.6245)  # Koramangala, the page's first preset
WIDEN_STEPS = (2_000, 5_000, 10_000, 20_000)
EARTH_RADIUS_M = 6_371_000.0


class Oracle:
    """Every place in the table, scanned in full for each question."""

    def __init__(self, db: Path) -> None:
        conn = sqlite3.connect(db)
        rows = conn.execute(
            "SELECT id, name, category, tags, lat, lng, price FROM places"
        ).fetchall()
        conn.close()
        self.ids = [r[0] for r in rows]
        self.words = [_words(f"{r[1]} {r[2]} {' '.join(json.loads(r[3] or '[]'))}") for r in rows]
        self.category = [r[2] for r in rows]
        self.lat = np.array([r[4] for r in rows])
        self.lng = np.array([r[5] for r in rows])
        self.price = [r[6] for r in rows]

    def distances(self, lat: float, lng: float) -> np.ndarray:
        p1, p2 = math.radians(lat), np.radians(self.lat)
        a = (
            np.sin((p2 - p1) / 2) ** 2
            + math.cos(p1) * np.cos(p2) * np.sin(np.radians(self.lng - lng) / 2) ** 2
        )
        return 2 * EARTH_RADIUS_M * np.arcsin(np.sqrt(np.minimum(a, 1.0)))

    def within(
        self,
        lat: float,
        lng: float,
        radius: float,
        *,
        word: str | None = None,
        categories: set[str] | None = None,
    ) -> dict[str, float]:
        """id → distance of every place within ``radius`` passing the filters."""
        dist = self.distances(lat, lng)
        out = {}
        for i in np.flatnonzero(dist <= radius):
            if word is not None and word not in self.words[i]:
                continue
            if categories is not None and self.category[i] not in categories:
                continue
            out[self.ids[i]] = float(dist[i])
        return out


def _words(text: str) -> set[str]:
    out = set()
    for w in re.findall(r"\w+", text.lower()):
        out.add(w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w)
    return out


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data directory with a small places data set (3,000 businesses plus the real
    cities and airports)."""
    from lookup.datasets import places

    data_dir = tmp_path_factory.mktemp("places-data")
    places.build(data_dir, count=3_000, progress=False)
    return data_dir


@pytest.fixture(scope="module")
def oracle(built: Path) -> Oracle:
    from lookup.datasets.places import db_path

    return Oracle(db_path(built))


@pytest.fixture(scope="module")
def places_api(built: Path) -> Iterator[str]:
    """The real API over the built data set, on a free loopback port."""
    from lookup.server import create_app

    with serve_in_thread(create_app(built), timeout_s=60) as url:
        yield url


def page_at(url: str) -> AppTest:
    """The page, reached through the dashboard's navigation, talking to ``url``."""
    mp = pytest.MonkeyPatch()
    mp.setenv("LOOKUP_API_URL", url)
    try:
        return open_page(PLACES)
    finally:
        mp.undo()


@pytest.fixture
def page(places_api: str, visit: Callable[[str, str], AppTest]) -> AppTest:
    return visit(PLACES, places_api)


def metric(at: AppTest, label: str) -> Any:
    found = [m for m in at.metric if m.label == label]
    assert len(found) == 1, (label, [m.label for m in at.metric])
    return found[0]


def results(at: AppTest) -> Any:
    return table_with(at, "Distance (m)")


def table_with(at: AppTest, column: str) -> Any:
    """The one dataframe on the page that has ``column`` (AppTest does not expose keys)."""
    tables = [d.value for d in at.dataframe if column in d.value.columns]
    assert len(tables) == 1, [list(d.value.columns) for d in at.dataframe]
    return tables[0]


def widget(at: AppTest, key: str) -> Any:
    for kind in (
        at.number_input,
        at.text_input,
        at.select_slider,
        at.toggle,
        at.multiselect,
        at.selectbox,
    ):
        for w in kind:
            if w.key == key:
                return w
    raise AssertionError(f"no widget with key {key!r}")


def parse_m(text: str) -> float:
    value, unit = text.split()
    return float(value.replace(",", "")) * (1000.0 if unit == "km" else 1.0)


def check_page_against_oracle(
    at: AppTest,
    oracle: Oracle,
    lat: float,
    lng: float,
    asked: float,
    *,
    widen: bool,
    word: str | None = None,
) -> float:
    """The radius used, the count and every listed place agree with a full scan."""
    if widen:
        radii = [asked] + [r for r in WIDEN_STEPS if r > asked]
        used = next(
            (r for r in radii if len(oracle.within(lat, lng, r, word=word)) >= 20), radii[-1]
        )
    else:
        used = asked
    truth = oracle.within(lat, lng, used, word=word)
    assert parse_m(metric(at, "Radius used").value) == used
    assert metric(at, "Results survived").value == f"{len(truth):,}"
    assert int(metric(at, "Candidates read").value.replace(",", "")) >= len(truth)
    table = results(at) if truth else None
    if table is not None:
        assert len(table) == min(len(truth), 20)
        for pid, shown in zip(table["Id"], table["Distance (m)"], strict=True):
            assert pid in truth
            assert abs(shown - truth[pid]) <= 1.0
        assert list(table["Score"]) == sorted(table["Score"], reverse=True)
    return used


def _preset_point(at: AppTest, name: str) -> tuple[float, float]:
    """Where the page stands after jumping to preset ``name``."""
    widget(at, "places.preset").set_value(name).run()
    return widget(at, "places.lat").value, widget(at, "places.lng").value


# ------------------------------------------------------------------------- states


def test_api_down_says_how_to_start_it(nothing_listening: str) -> None:
    at = page_at(nothing_listening)
    assert not at.exception
    text = " ".join(w.value for w in at.warning)
    assert "lookup serve" in text and nothing_listening in text
    assert not at.metric  # nothing pretends to have searched


def test_not_built_names_the_command(threaded_api: str) -> None:
    at = page_at(threaded_api)
    assert not at.exception
    text = " ".join(i.value for i in at.info)
    assert "lookup datasets build places" in text
    assert not at.metric


# ------------------------------------------------------------------------- search


def test_default_search_agrees_with_brute_force(page: AppTest, oracle: Oracle) -> None:
    assert widget(page, "places.lat").value == pytest.approx(SEED_POINT[0])
    assert widget(page, "places.lng").value == pytest.approx(SEED_POINT[1])
    check_page_against_oracle(page, oracle, *SEED_POINT, 2_000, widen=True)
    cells = metric(page, "Cells searched")
    assert cells.value == "9 cells" and cells.delta.startswith("precision ")


def test_without_widening_the_radius_is_kept(page: AppTest, oracle: Oracle) -> None:
    widget(page, "places.widen").set_value(False).run()
    widget(page, "places.radius").set_value(5_000).run()
    assert not page.exception
    used = check_page_against_oracle(page, oracle, *SEED_POINT, 5_000, widen=False)
    assert used == 5_000


def test_text_query_keeps_only_matching_places(page: AppTest, oracle: Oracle) -> None:
    widget(page, "places.radius").set_value(20_000).run()
    widget(page, "places.q").set_value("pharmacy").run()
    assert not page.exception
    check_page_against_oracle(page, oracle, *SEED_POINT, 20_000, widen=True, word="pharmacy")


def test_category_filter(page: AppTest, oracle: Oracle) -> None:
    widget(page, "places.radius").set_value(20_000).run()
    widget(page, "places.categories").set_value(["city", "airport"]).run()
    assert not page.exception
    truth = oracle.within(*SEED_POINT, 20_000, categories={"city", "airport"})
    assert metric(page, "Results survived").value == f"{len(truth):,}"
    table = results(page)
    assert set(table["Category"]) <= {"city", "airport"}
    assert set(table["Id"]) <= set(truth)


def test_a_click_on_the_map_moves_you_there(page: AppTest, oracle: Oracle) -> None:
    london = (51.5074, -0.1278)
    page.session_state["places.map"] = {
        "last_clicked": {"lat": london[0], "lng": london[1]},
        "bounds": {
            "_southWest": {"lat": 51.45, "lng": -0.25},
            "_northEast": {"lat": 51.56, "lng": 0.0},
        },
        "zoom": 12,
    }
    page.run()
    assert not page.exception
    assert widget(page, "places.lat").value == pytest.approx(london[0])
    assert widget(page, "places.lng").value == pytest.approx(london[1])
    check_page_against_oracle(page, oracle, *london, 2_000, widen=True)
    view = [c.value for c in page.caption if "Map view" in c.value]
    assert len(view) == 1 and "places in view" in view[0]
    # the same click reported again (the map re-sends its state) does not move you back
    widget(page, "places.lat").set_value(48.8566).run()
    page.run()
    assert widget(page, "places.lat").value == pytest.approx(48.8566)


def test_zoomed_out_map_view_shows_clusters(page: AppTest) -> None:
    page.session_state["places.map"] = {
        "last_clicked": None,
        "bounds": {
            "_southWest": {"lat": -60.0, "lng": -170.0},
            "_northEast": {"lat": 75.0, "lng": 170.0},
        },
        "zoom": 2,
    }
    page.run()
    assert not page.exception
    view = [c.value for c in page.caption if "Map view" in c.value]
    assert len(view) == 1 and "clusters" in view[0], view


def test_compare_switch_runs_three_indexes_with_identical_results(
    page: AppTest, oracle: Oracle
) -> None:
    widget(page, "places.compare").set_value(True).run()
    assert not page.exception
    table = table_with(page, "Same results as brute force")
    assert list(table["Index"]) == ["Geohash", "Quadtree", "Brute force"]
    assert list(table["Same results as brute force"]) == ["yes", "yes", "yes"]
    used = parse_m(metric(page, "Radius used").value)
    truth = oracle.within(*SEED_POINT, used)
    assert set(table["Results"]) == {len(truth)}
    reads = dict(zip(table["Index"], table["Candidates read"], strict=True))
    assert reads["Brute force"] == len(oracle.ids)
    assert reads["Geohash"] < reads["Brute force"] and reads["Quadtree"] < reads["Brute force"]


def test_next_page_continues_the_ranking(page: AppTest, oracle: Oracle) -> None:
    tokyo = _preset_point(page, "Shinjuku, Tokyo")
    assert tokyo == pytest.approx((35.6938, 139.7034))
    widget(page, "places.radius").set_value(20_000).run()
    truth = oracle.within(*tokyo, 20_000)
    assert len(truth) > 20, "the fixture needs more than a page here"
    check_page_against_oracle(page, oracle, *tokyo, 20_000, widen=True)
    first = list(results(page)["Id"])
    page.button(key="places.more").click().run()
    assert not page.exception
    both = list(results(page)["Id"])
    assert both[:20] == first
    assert len(both) == min(len(truth), 40)
    assert len(set(both)) == len(both) and set(both) <= set(truth)


# ------------------------------------------------------------- by name, and what it says


def _find_box(at: AppTest) -> dict[str, Any]:
    """What the page handed the find-a-place box to draw."""
    boxes = [e for e in at.get("bidi_component") if "lookup_searchbox" in e.proto.component_name]
    assert len(boxes) == 1
    return json.loads(boxes[0].proto.json)


def test_a_city_found_by_name_is_where_you_stand(page: AppTest, oracle: Oracle) -> None:
    """Typing "Pun" suggests Pune (from the data set's own cities); choosing it moves you
    there, names it in "Jump to", and the search runs around it."""
    page.session_state["_searchbox_places-find"] = {
        "box": {"text": "Pun", "submitted": "", "seq": 0}
    }
    page.run()
    assert not page.exception
    labels = [i["s"] for i in _find_box(page)["items"]]
    assert labels and labels[0].startswith("Pune · city in IN")
    page.session_state["_searchbox_places-find"] = {
        "box": {"text": labels[0], "submitted": labels[0], "seq": 1}
    }
    page.run()
    assert not page.exception
    lat, lng = widget(page, "places.lat").value, widget(page, "places.lng").value
    assert (lat, lng) == pytest.approx((18.5196, 73.8553), abs=0.01)
    assert widget(page, "places.preset").value == "Pune"
    check_page_against_oracle(page, oracle, lat, lng, 2_000, widen=True)


def test_after_a_map_click_jump_to_names_the_new_place(page: AppTest) -> None:
    pune_ish = (18.53, 73.86)
    page.session_state["places.map"] = {
        "last_clicked": {"lat": pune_ish[0], "lng": pune_ish[1]},
        "bounds": {
            "_southWest": {"lat": 18.4, "lng": 73.7},
            "_northEast": {"lat": 18.6, "lng": 74.0},
        },
        "zoom": 12,
    }
    page.run()
    assert not page.exception
    label = widget(page, "places.preset").value
    # named by the nearest city of the data set (a GeoNames suburb of Pune here)
    assert re.fullmatch(r"Map click 18\.5300, 73\.8600, near [^(]+ \(\d+ m\)", label), label
    assert "Koramangala" not in label
    # and a preset still jumps back
    widget(page, "places.preset").set_value("Shinjuku, Tokyo").run()
    assert widget(page, "places.lat").value == pytest.approx(35.6938)


def test_the_comparison_runs_the_query_the_page_shows(page: AppTest) -> None:
    """No silent widening: the three indexes answer the page's own radius and total."""
    widget(page, "places.compare").set_value(True).run()
    assert not page.exception
    total = int(metric(page, "Results survived").value.replace(",", ""))
    used = metric(page, "Radius used").value
    table = table_with(page, "Same results as brute force")
    assert set(table["Results"]) == {total}
    assert any(
        f"{total:,} places within {used} of where you stand" in c.value for c in page.caption
    )
    assert page.get("plotly_chart")  # the three timings drawn, not only tabulated


def test_the_miles_switch_writes_every_distance_in_miles(page: AppTest, oracle: Oracle) -> None:
    """Issue 27 item 14 on the page: the radius, the radius used and each result's distance
    in miles, the same places as in kilometres."""
    in_km = results(page)
    used_m = parse_m(metric(page, "Radius used").value)
    radio = next(r for r in page.radio if r.key == "places.unit")
    radio.set_value("mi").run()
    assert not page.exception
    value, unit = metric(page, "Radius used").value.split()
    assert unit == "mi" and float(value) == pytest.approx(used_m / 1609.344, abs=0.05)
    in_mi = table_with(page, "Distance (mi)")
    assert list(in_mi["Name"]) == list(in_km["Name"])
    expected = [round(m / 1609.344, 2) for m in in_km["Distance (m)"]]
    assert list(in_mi["Distance (mi)"]) == pytest.approx(expected, abs=0.006)
    radio.set_value("km").run()
    assert list(results(page)["Name"]) == list(in_km["Name"])
