"""The Places page's drawn-area search, and what the place-name box matched.

Draw a polygon or a rectangle on the map (folium's ``Draw`` plugin; ``st_folium`` hands the
drawn shape back as GeoJSON) and the map shows the places inside it, from
``GET /v1/places/within`` with the page's filters. The plugin's script comes from a CDN,
so drawing needs a browser online; pasting a GeoJSON Polygon into the box below the map
works without it (and is how the tests drive the panel).

:func:`place_label` is one suggestion line of the place-name box, saying how the place
was found when it was not by its own name: another name, an airport code, typos.
"""

from __future__ import annotations

import json
from typing import Any

import folium
import pandas as pd
import streamlit as st
from common import Answer, call
from folium.plugins import Draw
from placesmap import RED, base_map
from streamlit_folium import st_folium

#: The draw map's component key, the pasted GeoJSON, and the answer's page size.
DRAW_MAP = "places.draw-map"
PASTED = "places.draw-geojson"
DRAW_ON = "places.draw-on"
DRAW_LIMIT = 200
#: How a name the place-name box matched is introduced.
FIELD_WORDS = {"alternateName": "also called", "iata": "airport code", "icao": "ICAO code"}


def place_label(p: dict[str, Any]) -> str:
    """``Bengaluru · city in IN · 8,495,492 people · also called Bangalore`` — one line."""
    where = f" in {p['country']}" if p.get("country") else ""
    people = f" · {int(p['population']):,} people" if p.get("population") else ""
    matched = p.get("matched") or {}
    field, typos = matched.get("field"), int(matched.get("typos") or 0)
    note = f" · {FIELD_WORDS[field]} {matched.get('name')}" if field in FIELD_WORDS else ""
    if typos:
        note += f" ({typos} typo{'s' if typos > 1 else ''})"
    return f"{p['name']} · {p['kind']}{where}{people}{note}"


def drawn_polygon(state: Any) -> dict[str, Any] | None:
    """The last polygon or rectangle drawn on the map, as a GeoJSON Polygon (None: none)."""
    if not isinstance(state, dict):
        return None
    drawings = state.get("all_drawings") or []
    last = state.get("last_active_drawing") or (drawings[-1] if drawings else None)
    geometry = last.get("geometry") if isinstance(last, dict) else None
    if isinstance(geometry, dict) and geometry.get("type") == "Polygon":
        return geometry
    return None


def within(polygon: dict[str, Any] | str, filters: dict[str, str]) -> Answer:
    """The places inside ``polygon`` passing the page's filters."""
    text = polygon if isinstance(polygon, str) else json.dumps(polygon)
    params = {**filters, "polygon": text, "limit": str(DRAW_LIMIT)}
    return call("GET", "/v1/places/within", params=params, timeout=30.0)


def _pins(results: list[dict[str, Any]]) -> folium.FeatureGroup:
    layer = folium.FeatureGroup(name="Places inside")
    for p in results:
        folium.CircleMarker(
            (float(p["lat"]), float(p["lng"])),
            radius=5,
            color="#fff",
            weight=1,
            fill=True,
            fill_color=RED,
            fill_opacity=0.9,
            tooltip=f"{p.get('name', '')} · {p.get('category', '')}",
        ).add_to(layer)
    return layer


def _caption(body: dict[str, Any]) -> str:
    shape, cells = body.get("shape", {}), body.get("cells", {})
    shown = len(body.get("results", []))
    cut = f", the best {shown} shown" if body.get("truncated") else ""
    across = " It crosses ±180." if shape.get("crossesAntimeridian") else ""
    return (
        f"{int(body.get('total', 0)):,} places inside{cut}. The {shape.get('kind')} has "
        f"{shape.get('vertices')} corners and {shape.get('holes', 0)} holes.{across} "
        f"Geohash cover: {cells.get('inside', 0)} cells wholly inside (taken as they are), "
        f"{cells.get('boundary', 0)} on the edge, whose {int(body.get('tested', 0)):,} "
        f"places were tested one by one; {float(body.get('tookMs', 0)):.1f} ms."
    )


def draw_panel(
    assets: dict[str, bool], center: tuple[float, float], zoom: int, filters: dict[str, str]
) -> None:
    """The drawn-area search: a map to draw on, the places inside, a box to paste GeoJSON.

    Off until asked for: a second map costs every visit of the page its load time, and
    the drawing tools (folium's ``Draw``) come from a CDN, so they need the internet —
    pasting a polygon works offline."""
    st.subheader("Places inside an area you draw")
    if not st.toggle("Search inside an area I draw", key=DRAW_ON):
        st.caption(
            "Turn this on to draw a polygon or a rectangle on a map (the drawing tools load "
            "from the internet) or to paste a GeoJSON Polygon; the places inside are listed."
        )
        return
    st.caption(
        "Draw a polygon or a rectangle with the tools at the map's left; the places inside "
        "it (and on its edge) appear as red dots, with the filters on the left applied."
    )
    pasted = str(st.session_state.get(PASTED) or "").strip()
    polygon: dict[str, Any] | str | None = drawn_polygon(st.session_state.get(DRAW_MAP))
    polygon = pasted or polygon
    answer = within(polygon, filters) if polygon else None
    found = answer.body.get("results", []) if answer is not None and answer.ok else []
    canvas = base_map(assets)
    Draw(
        export=False,
        draw_options={
            "polyline": False,
            "circle": False,
            "circlemarker": False,
            "marker": False,
        },
        edit_options={"edit": False},
    ).add_to(canvas)
    st_folium(
        canvas,
        key=DRAW_MAP,
        center=center,
        zoom=zoom,
        feature_group_to_add=_pins(found),
        returned_objects=["all_drawings", "last_active_drawing"],
        height=420,
        use_container_width=True,
    )
    st.text_area(
        "…or paste a GeoJSON Polygon (lng, lat; used instead of the drawing)",
        key=PASTED,
        placeholder='{"type": "Polygon", "coordinates": [[[77.55, 12.9], [77.65, 12.9], '
        "[77.65, 13.0], [77.55, 13.0], [77.55, 12.9]]]}",
        height=80,
    )
    if answer is None:
        return
    if not answer.ok:
        st.warning(f"The area search was refused: {answer.message()}", icon=":material/warning:")
        return
    st.caption(_caption(answer.body))
    if found:
        st.dataframe(
            pd.DataFrame(
                {
                    "Name": [p.get("name") for p in found],
                    "Category": [p.get("category") for p in found],
                    "Rating": [p.get("rating") for p in found],
                    "Lat": [p["lat"] for p in found],
                    "Lng": [p["lng"] for p in found],
                }
            ),
            hide_index=True,
            key="places.draw-results",
            height=38 + 35 * min(len(found), 10),
        )
