"""The Places map drawn in the page (issue 24 item 17): what a run hands it, and the view
it searches, so that a view the page set is never reported back for a second run.

The map used to be a ``streamlit-folium`` frame (a document, a React bundle and a
stylesheet the browser could not keep, on every visit) that reported every move, the
page's own included. The page now sends the in-page map (``app/placesleaflet.py``) the
view it searched (``expect``); the map reports only a view that differs from it. So the
bounds the page works out must be the ones Leaflet shows: checked here against Leaflet's
own arithmetic, written out (EPSG:3857, 256-pixel tiles, the pixel origin rounded).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from streamlit.testing.v1 import AppTest

from tests.conftest import serve_in_thread

PLACES = "views/places.py"
KORAMANGALA = (12.9352, 77.6245)
EARTH_R = 6_378_137.0  # Leaflet's L.Projection.SphericalMercator.R
MAX_LAT = 85.0511287798


# --------------------------------------------------------------- Leaflet, written out


def _project(lat: float, lng: float, zoom: int) -> tuple[float, float]:
    """Leaflet's ``map.project``: web Mercator metres, then the EPSG:3857 transformation."""
    lat = max(min(lat, MAX_LAT), -MAX_LAT)
    x = EARTH_R * math.radians(lng)
    y = EARTH_R * math.log(math.tan(math.pi / 4 + math.radians(lat) / 2))
    scale = 256 * 2**zoom
    k = 0.5 / (math.pi * EARTH_R)
    return scale * (k * x + 0.5), scale * (-k * y + 0.5)


def _unproject(px: float, py: float, zoom: int) -> tuple[float, float]:
    scale = 256 * 2**zoom
    k = 0.5 / (math.pi * EARTH_R)
    x, y = (px / scale - 0.5) / k, (py / scale - 0.5) / -k
    lat = math.degrees(2 * math.atan(math.exp(y / EARTH_R)) - math.pi / 2)
    return lat, math.degrees(x / EARTH_R)


def leaflet_bounds(
    center: tuple[float, float], zoom: int, size: tuple[int, int]
) -> tuple[float, float, float, float]:
    """``map.setView(center, zoom); map.getBounds()`` on a map of ``size`` pixels."""
    cx, cy = _project(*center, zoom)
    left, top = round(cx - size[0] / 2), round(cy - size[1] / 2)  # _getNewPixelOrigin
    south, west = _unproject(left, top + size[1], zoom)
    north, east = _unproject(left + size[0], top, zoom)
    return south, west, north, east


def _px_apart(a: tuple[float, ...], b: tuple[float, ...], zoom: int) -> float:
    """The largest distance, in screen pixels at ``zoom``, between the edges of two views."""
    (ax0, ay0), (ax1, ay1) = _project(a[0], a[1], zoom), _project(a[2], a[3], zoom)
    (bx0, by0), (bx1, by1) = _project(b[0], b[1], zoom), _project(b[2], b[3], zoom)
    return max(abs(ax0 - bx0), abs(ay0 - by0), abs(ax1 - bx1), abs(ay1 - by1))


@settings(max_examples=300, deadline=None)
@given(
    lat=st.floats(-80, 80),
    lng=st.floats(-180, 180),
    zoom=st.integers(2, 18),
    width=st.integers(200, 2_000),
    height=st.integers(200, 1_200),
)
def test_the_page_works_out_the_view_leaflet_shows(
    lat: float, lng: float, zoom: int, width: int, height: int
) -> None:
    """Within one pixel (Leaflet rounds its pixel origin): the map's 3-pixel tolerance
    then never mistakes the page's own view for a move."""
    from mapview import SAME_VIEW_PX, view_bounds

    ours = view_bounds((lat, lng), zoom, (width, height))
    theirs = leaflet_bounds((lat, lng), zoom, (width, height))
    assert _px_apart(ours, theirs, zoom) <= 1.0 < SAME_VIEW_PX


@settings(max_examples=300, deadline=None)
@given(
    st.recursive(
        st.none() | st.booleans() | st.floats(allow_nan=True) | st.text(max_size=5),
        lambda inner: (
            st.lists(inner, max_size=3)
            | st.dictionaries(
                st.sampled_from(["bounds", "_southWest", "_northEast", "lat", "lng", "width"]),
                inner,
                max_size=4,
            )
        ),
        max_leaves=12,
    )
)
def test_a_report_is_read_or_refused_never_raises(state: Any) -> None:
    from mapview import reported_view

    got = reported_view(state)
    if got is not None:
        (s, w, n, e), size = got
        assert s < n and w < e
        assert size is None or (size[0] > 0 and size[1] > 0)


# ------------------------------------------------------------------------ the page


@pytest.fixture(scope="module")
def places_api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    from lookup.datasets import places
    from lookup.server import create_app

    data_dir: Path = tmp_path_factory.mktemp("places-map")
    places.build(data_dir, count=1_500, progress=False)
    with serve_in_thread(create_app(data_dir), timeout_s=60) as url:
        yield url


def the_map(at: AppTest) -> dict[str, Any]:
    """What the last run handed the in-page map."""
    maps = [e for e in at.get("bidi_component") if e.proto.component_name == "lookup_places_map"]
    assert len(maps) == 1, [e.proto.component_name for e in at.get("bidi_component")]
    return dict(json.loads(maps[0].proto.json))


def results(at: AppTest) -> Any:
    tables = [d.value for d in at.dataframe if "Distance (m)" in d.value.columns]
    assert len(tables) == 1
    return tables[0]


def test_the_map_is_in_the_page_with_the_ranked_pins(
    places_api: str, visit: Callable[[str, str], AppTest]
) -> None:
    at = visit(PLACES, places_api)
    data = the_map(at)
    assert not at.get("component_instance")  # no component frame (the drawing map is off)
    table = results(at)
    pins = data["layers"]["pins"]
    assert sorted(p[2] for p in pins) == list(table["#"])
    assert data["layers"]["you"] == pytest.approx(list(KORAMANGALA))
    assert data["center"] == pytest.approx(list(KORAMANGALA))
    assert data["leaflet"].endswith("/app/static/leaflet/leaflet.js")
    # the first visit knows no size yet: the usual one, which the map will correct once
    from mapview import MAP_HEIGHT, MAP_WIDTH_GUESS, view_bounds

    guess = view_bounds(tuple(data["center"]), data["zoom"], (MAP_WIDTH_GUESS, MAP_HEIGHT))
    assert data["expect"] == pytest.approx(list(guess))


def test_a_reported_view_is_searched_and_a_refit_uses_the_maps_size(
    places_api: str, visit: Callable[[str, str], AppTest]
) -> None:
    at = visit(PLACES, places_api)
    first = the_map(at)
    size = (913, 560)
    moved = leaflet_bounds((12.95, 77.60), 13, size)
    at.session_state["places.map"] = {
        "bounds": {
            "_southWest": {"lat": moved[0], "lng": moved[1]},
            "_northEast": {"lat": moved[2], "lng": moved[3]},
            "zoom": 13,
            "width": size[0],
            "height": size[1],
            "n": 1,
        }
    }
    at.run()
    assert not at.exception
    data = the_map(at)
    assert data["expect"] == pytest.approx(list(moved))  # searched as shown: nothing to report
    assert (data["center"], data["zoom"]) == (first["center"], first["zoom"])  # not steered
    assert any("Map view" in c.value for c in at.caption)

    # the page moves the map: the view it searches is the one Leaflet will show at that size
    at.selectbox(key="places.preset").set_value("Central London").run()
    assert not at.exception
    data = the_map(at)
    assert data["center"] == pytest.approx([51.5074, -0.1278])
    shown = leaflet_bounds(tuple(data["center"]), data["zoom"], size)
    assert _px_apart(tuple(data["expect"]), shown, data["zoom"]) <= 1.0

    # a rerun with the old report still in the state keeps the page's view
    at.run()
    assert the_map(at)["expect"] == pytest.approx(data["expect"])
