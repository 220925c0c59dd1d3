"""The places page's "nearest, however far" panel (issue 27 item 13).

``GET /v1/search`` with ``sort=distance`` and no ``radius`` answers the nearest ``limit``
places to the point with no distance cap — PostGIS's ``ORDER BY geom <-> point LIMIT k``,
Redis's ``GEOSEARCH … BYRADIUS`` without a bound — so a point in the middle of the Pacific
still gets its ten nearest places, thousands of kilometres away.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st
from common import Answer, call
from placesmap import fmt_m

NEAREST_ON = "places.nearest-on"
NEAREST_K = "places.nearest-k"


def nearest(lat: float, lng: float, k: int, filters: dict[str, str]) -> Answer:
    """The ``k`` places nearest to (lat, lng) passing the page's filters, however far."""
    params = {**filters, "lat": f"{lat:.6f}", "lng": f"{lng:.6f}", "sort": "distance"}
    return call("GET", "/v1/search", params={**params, "limit": str(k)}, timeout=30.0)


def _km(metres: Any) -> str:
    """A nearest place's distance, in miles when the Places page is set to miles."""
    if st.session_state.get("places.unit") == "mi":
        return fmt_m(float(metres), "mi")
    value = float(metres) / 1000.0
    return f"{value:,.1f} km" if value < 100 else f"{value:,.0f} km"


def nearest_panel(lat: float, lng: float, filters: dict[str, str]) -> None:
    """A toggle, a count, and the nearest places to the chosen point in a table."""
    st.subheader("The nearest places, however far")
    if not st.toggle("Find the nearest places with no radius", key=NEAREST_ON):
        st.caption(
            "A radius search stops widening at 20 km; this one has no cap: it walks the "
            "geohash cells outward from the point until it has the places you asked for."
        )
        return
    k = int(st.number_input("How many", 1, 100, 10, key=NEAREST_K))
    answer = nearest(lat, lng, k, filters)
    if not answer.ok:
        st.warning(f"The nearest search was refused: {answer.message()}")
        return
    rows = [
        {
            "Name": r.get("name", ""),
            "Category": r.get("category", ""),
            "Distance": _km(r.get("distanceM", 0)),
            "Rating": r.get("rating"),
        }
        for r in answer.body.get("results", [])
    ]
    if not rows:
        st.info("No place passes these filters anywhere.")
        return
    st.caption(
        f"The {len(rows)} nearest to {lat:.4f}, {lng:.4f}, ordered by distance; "
        f"the farthest is {rows[-1]['Distance']} away."
    )
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")
