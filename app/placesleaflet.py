"""The Places page's map, drawn in the page itself: Leaflet in a Components-v2 element.

The map used to be a ``streamlit-folium`` frame: every visit loaded a document of its own,
a 225 KB React bundle and a 197 KB stylesheet that the component server sends without
letting the browser keep them, then Leaflet, and only then drew the pins; and each time it
was moved by the page it reported its view back, which ran the page's map again. Here the
map lives in the page (no frame, nothing to bootstrap): Leaflet and the background come
once per visit from ``app/static/`` (:func:`placesmap.ensure_map_assets`), and a run sends
only the view and the layers' data (:func:`placesmap.search_layer`).

What the browser reports is kept under the element's key in ``st.session_state``, in the
shape ``streamlit-folium`` used, so the page reads it the same way:

- ``last_clicked`` — ``{"lat", "lng"}`` of the last click on the map (the page moves you);
- ``bounds`` — ``{"_southWest", "_northEast", "zoom", "width", "height", "n"}`` after the
  person dragged or zoomed, or the map's size differs from the one the page assumed. The
  page sends the view it searched (``expect``); a view within 3 pixels of it is not
  reported, so a view the page set itself never costs a second run. The map keeps its
  size in a cookie, so a later visit's first run assumes the right one.

The map says on its element whether the page has searched what it shows
(``data-view="searched"``, else ``"moving"``) and how many times the page set its view
(``data-fits``): what the browser tests wait for.
"""

from __future__ import annotations

import re
from typing import Any

import streamlit as st
from mapview import MAP_HEIGHT, MAP_WIDTH_GUESS, SAME_VIEW_PX, Bounds, reported_view, view_bounds
from placesmap import BASEMAP_FILE, LAND, LEAFLET_DIR, MAP_CSS_RULES, WATER

#: Where Leaflet comes from when ``xstatic-leaflet`` is not installed (online only).
LEAFLET_CDN = "https://cdn.jsdelivr.net/npm/leaflet@1.9.3/dist"
#: Milliseconds the map waits after a move before it reports (a wheel zoom is several).
REPORT_DELAY_MS = 250
#: The cookie in which the map keeps its size in pixels (``880x560``): the next visit's
#: first run works out the very view the map will show, so the map need not report it.
SIZE_COOKIE = "lookup_places_map"

_HTML = '<div class="lw-map" data-testid="places-map"></div>'

_CSS = (
    f"""
:host {{ display: block; width: 100%; }}
.lw-map {{ width: 100%; background: {WATER}; border-radius: 6px; }}
.lw-failed {{ padding: 1rem; color: #6e7781; font: 14px sans-serif; }}
"""
    + MAP_CSS_RULES
)

_JS = r"""
const LOADING = "__lookupLeaflet";

function loadLeaflet(js, css, root) {
  if (!root.querySelector("link[data-leaflet]")) {
    const link = document.createElement("link");
    link.rel = "stylesheet";
    link.href = css;
    link.dataset.leaflet = "1";
    root.appendChild(link);
    root.__css = new Promise((ok) => {
      link.onload = ok;
      link.onerror = ok; // unstyled beats no map at all
    });
  }
  if (!(window.L && window.L.map) && !window[LOADING]) {
    window[LOADING] = new Promise((ok, fail) => {
      const s = document.createElement("script");
      s.src = js;
      s.onload = () => ok(window.L);
      s.onerror = () => {
        window[LOADING] = null;
        fail(new Error("Leaflet did not load from " + js));
      };
      document.head.appendChild(s);
    });
  }
  const script = window.L && window.L.map ? Promise.resolve(window.L) : window[LOADING];
  return Promise.all([script, root.__css]).then((r) => r[0]);
}

function icon(L, html, w, h) {
  return L.divIcon({html: html, className: "", iconSize: [w, h], iconAnchor: [w / 2, h / 2]});
}

function drawLayers(L, g, d) {
  g.clearLayers();
  d.dots.forEach((p) => {
    L.circleMarker([p[0], p[1]], {radius: 3.5, color: "#57606a", weight: 1,
      fillColor: "#8c959f", fillOpacity: 0.8, bubblingMouseEvents: true})
      .bindTooltip(p[2]).addTo(g);
  });
  d.clusters.forEach((c) => {
    L.circleMarker([c[0], c[1]], {radius: c[2], color: d.orange, weight: 1,
      fillColor: d.orange, fillOpacity: 0.35, bubblingMouseEvents: true})
      .bindTooltip(c[3]).addTo(g);
    L.marker([c[0], c[1]], {interactive: false,
      icon: icon(L, '<div class="cluster">' + c[4] + "</div>", 60, 14)}).addTo(g);
  });
  d.cells.forEach((c) => {
    L.rectangle([[c[0], c[1]], [c[2], c[3]]], {color: d.blue, weight: 1.5,
      fillColor: d.blue, fillOpacity: 0.07}).bindTooltip(c[4]).addTo(g);
    if (c[5]) {
      L.marker([(c[0] + c[2]) / 2, (c[1] + c[3]) / 2], {interactive: false,
        icon: icon(L, '<div class="gh-label">' + c[5] + "</div>", 90, 14)}).addTo(g);
    }
  });
  d.circles.forEach((c) => {
    L.circle([c[0], c[1]], {radius: c[2], color: d.red, weight: c[3], opacity: c[4],
      fill: c[5], fillColor: d.red, fillOpacity: 0.04, dashArray: c[6],
      interactive: false}).addTo(g);
  });
  d.pins.forEach((p) => {
    L.marker([p[0], p[1]], {icon: icon(L, '<div class="pin">' + p[2] + "</div>", 22, 22)})
      .bindTooltip(p[3]).addTo(g);
  });
  if (d.you) {
    L.marker(d.you, {zIndexOffset: 10000, icon: icon(L, '<div class="you"></div>', 18, 18)})
      .bindTooltip("You are here").addTo(g);
  }
}

function background(L, map, group, url, style) {
  const pane = map.createPane("basemap");
  pane.style.zIndex = 350;
  pane.style.pointerEvents = "none";
  if (!url) {
    for (let lat = -80; lat <= 80; lat += 10) {
      L.polyline([[lat, -180], [lat, 180]], {pane: "basemap", color: "#9fb7c4", weight: 0.6,
        interactive: false}).addTo(group);
    }
    for (let lng = -180; lng <= 180; lng += 10) {
      L.polyline([[-85, lng], [85, lng]], {pane: "basemap", color: "#9fb7c4", weight: 0.6,
        interactive: false}).addTo(group);
    }
    return;
  }
  fetch(url).then((r) => r.json()).then((d) => {
    const land = {fillColor: style.land, fillOpacity: 1, color: "#9fb7c4", weight: 0.8};
    const lake = {fillColor: style.water, fillOpacity: 1, color: "#9fb7c4", weight: 0.8};
    const line = {color: "#b9aea0", weight: 0.8, dashArray: "3 3"};
    [[d.land, land], [d.lakes, lake], [d.borders, line]].forEach((s) => {
      L.geoJSON(s[0], {pane: "basemap", interactive: false, smoothFactor: 1.5,
        style: s[1]}).addTo(group);
    });
  }).catch(() => {});
}

function sameView(expect, b, size, tolPx) {
  if (!expect) return false;
  const dLng = ((b[3] - b[1]) / Math.max(size.x, 1)) * tolPx;
  const dLat = ((b[2] - b[0]) / Math.max(size.y, 1)) * tolPx;
  return Math.abs(b[0] - expect[0]) <= dLat && Math.abs(b[2] - expect[2]) <= dLat &&
    Math.abs(b[1] - expect[1]) <= dLng && Math.abs(b[3] - expect[3]) <= dLng;
}

function shown(map) {
  const b = map.getBounds();
  return [b.getSouth(), b.getWest(), b.getNorth(), b.getEast()];
}

// data-view on the map: "searched" when the page searched what it shows, else "moving".
function mark(root, searched) {
  root.querySelector(".lw-map").dataset.view = searched ? "searched" : "moving";
}

function report(root) {
  const map = root.__map;
  const d = root.__data;
  const box = shown(map);
  const size = map.getSize();
  const pixels = size.x + "x" + size.y;
  if (window.__lookupMapSize !== pixels) { // written, never read: reading costs an IPC
    window.__lookupMapSize = pixels;
    document.cookie = d.sizeCookie + "=" + pixels + "; path=/; max-age=31536000; SameSite=Strict";
  }
  const same = sameView(d.expect, box, size, d.samePx);
  mark(root, same);
  if (same) return;
  const key = JSON.stringify([box, size.x, size.y]);
  if (key === root.__reported) return;
  root.__reported = key;
  root.__n = (root.__n || 0) + 1;
  root.__setState("bounds", {
    _southWest: {lat: box[0], lng: box[1]},
    _northEast: {lat: box[2], lng: box[3]},
    zoom: map.getZoom(), width: size.x, height: size.y, n: root.__n,
  });
}

function start(root, L) {
  const d = root.__data;
  const box = root.querySelector(".lw-map");
  const map = L.map(box, {preferCanvas: true, minZoom: 2, maxZoom: 19,
    worldCopyJump: false, zoomControl: true, trackResize: false});
  root.__map = map;
  L.control.scale().addTo(map);
  const ground = L.featureGroup().addTo(map);
  background(L, map, ground, d.basemap, {land: d.land, water: d.water});
  const tiles = L.tileLayer("https://tile.openstreetmap.org/{z}/{x}/{y}.png", {maxZoom: 19,
    attribution: "&copy; OpenStreetMap contributors"});
  const overlays = {};
  overlays[d.basemap ? "Land and borders (offline)" : "Graticule (offline)"] = ground;
  overlays["OpenStreetMap tiles (needs the internet)"] = tiles;
  L.control.layers(null, overlays, {collapsed: true, position: "topright"}).addTo(map);
  root.__group = L.featureGroup().addTo(map);
  map.on("click", (e) => {
    root.__setState("last_clicked", {lat: e.latlng.lat, lng: e.latlng.lng});
  });
  map.on("moveend", () => {
    mark(root, false);
    clearTimeout(root.__timer);
    root.__pending = true;
    root.__timer = setTimeout(() => {
      root.__pending = false;
      report(root);
    }, d.delayMs);
  });
  if (window.ResizeObserver) {
    root.__resize = new ResizeObserver(() => map.invalidateSize({pan: false}));
    root.__resize.observe(box);
  }
}

function update(root) {
  const d = root.__data;
  const map = root.__map;
  const view = JSON.stringify([d.center, d.zoom, d.fits]);
  if (view !== root.__view) {
    root.__view = view;
    map.setView(d.center, d.zoom, {animate: false});
  }
  const layers = JSON.stringify(d.layers);
  if (layers !== root.__layers) {
    root.__layers = layers;
    drawLayers(window.L, root.__group, d.layers);
  }
  root.querySelector(".lw-map").dataset.fits = String(d.fits);
  if (!root.__pending) report(root); // else the move's own report decides
}

export default function ({ parentElement, data, setStateValue }) {
  const root = parentElement;
  root.__data = data;
  root.__setState = setStateValue;
  root.querySelector(".lw-map").style.height = data.height + "px";
  if (root.__map) {
    update(root);
  } else if (!root.__ready) {
    root.__ready = loadLeaflet(data.leaflet, data.leafletCss, root).then((L) => {
      if (!root.__map) start(root, L);
      update(root);
    }, (err) => {
      root.__ready = null;
      const box = root.querySelector(".lw-map");
      box.classList.add("lw-failed");
      box.textContent = "The map could not be drawn: " + err.message;
    });
  }
}
"""

_component = st.components.v2.component(
    "lookup_places_map", html=_HTML, css=_CSS, js=_JS, isolate_styles=True
)


def static_base() -> str:
    """The path ``app/static/`` is served at, under the server's base path if any."""
    base = str(st.get_option("server.baseUrlPath") or "").strip("/")
    return f"/{base}/app/static" if base else "/app/static"


def map_data(
    assets: dict[str, bool],
    center: tuple[float, float],
    zoom: int,
    expect: tuple[Bounds, int],
    layers: dict[str, Any],
    height: int,
) -> dict[str, Any]:
    """What one run sends the map: where Leaflet and the background are, the view the page
    wants (``center``, ``zoom``), the bounds it searched and how often it set the view
    (``expect``, from :func:`view_to_search`) and the layers."""
    static = static_base()
    leaflet = f"{static}/{LEAFLET_DIR}" if assets.get("leaflet") else LEAFLET_CDN
    return {
        "leaflet": f"{leaflet}/leaflet.js",
        "leafletCss": f"{leaflet}/leaflet.css",
        "basemap": f"{static}/{BASEMAP_FILE}" if assets.get("basemap") else None,
        "land": LAND,
        "water": WATER,
        "height": int(height),
        "center": [float(center[0]), float(center[1])],
        "zoom": int(zoom),
        "expect": [float(v) for v in expect[0]],
        "fits": int(expect[1]),
        "layers": layers,
        "delayMs": REPORT_DELAY_MS,
        "samePx": SAME_VIEW_PX,
        "sizeCookie": SIZE_COOKIE,
    }


def cookie_size() -> tuple[float, float] | None:
    """The map's size in pixels as this browser last drew it (:data:`SIZE_COOKIE`)."""
    raw = st.context.cookies.get(SIZE_COOKIE)
    found = re.fullmatch(r"(\d{2,5})x(\d{2,5})", raw) if isinstance(raw, str) else None
    return (float(found[1]), float(found[2])) if found else None


def view_to_search(
    key: str, center: tuple[float, float], zoom: int, refit: bool
) -> tuple[Bounds, int]:
    """The view the page searches this run, remembered beside the map's state, and how
    many times the page has set the view (the map takes ``center`` and ``zoom`` whenever
    that count moves, even if they are what it was given last time).

    A report the map has not made before is the view (the person moved the map) — unless
    the page has just refitted the view, which the map is about to show; otherwise the
    view stays the one last searched, or is worked out from ``center`` and ``zoom`` at the
    map's last reported size, the way the map computes it, so the map finds its view
    equal to ``expect`` and reports nothing.
    """
    state = st.session_state.get(key)
    seen, kept, size_key, fits = (f"{key}.{part}" for part in ("seen", "view", "size", "fits"))
    report = reported_view(state)
    if report is not None and isinstance(state, dict):
        if state.get("bounds") != st.session_state.get(seen):  # a move not seen before
            st.session_state[seen] = state.get("bounds")
            if report[1] is not None:
                st.session_state[size_key] = report[1]
            if not refit:
                st.session_state[kept] = report[0]
    if refit or kept not in st.session_state:
        size = st.session_state.get(size_key) or cookie_size() or (MAP_WIDTH_GUESS, MAP_HEIGHT)
        st.session_state[kept] = view_bounds(center, zoom, size)
        st.session_state[fits] = st.session_state.get(fits, 0) + 1
    return tuple(st.session_state[kept]), int(st.session_state[fits])  # type: ignore[return-value]


def leaflet_map(key: str, data: dict[str, Any]) -> None:
    """Draw the map with ``data`` (:func:`map_data`); what it reports lands in
    ``st.session_state[key]`` and reruns the enclosing fragment."""
    _component(data=data, key=key, default={}, on_bounds_change=_noop, on_last_clicked_change=_noop)


def _noop() -> None:
    """A state callback: its presence makes the element report, the page reads the state."""
