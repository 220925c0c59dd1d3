"""Web-map view geometry for the Places page: the zoom that fits a radius or a set of
points, the bounds a map of the page's size shows, and bounds as the area endpoint takes
them (web Mercator, 256-pixel tiles)."""

from __future__ import annotations

import math
from typing import Any

from placesmap import wrap_lng

Bounds = tuple[float, float, float, float]

#: The map's height on the page, in pixels.
MAP_HEIGHT = 560
#: Pixel width assumed for the map before it has reported its own bounds.
MAP_WIDTH_GUESS = 760
#: How close (in pixels) the map's view must be to the one the page searched to count as
#: the same: Leaflet rounds its pixel origin, so the two differ by up to one pixel.
SAME_VIEW_PX = 3


def zoom_for_radius(radius_m: float, lat: float) -> int:
    """The web-map zoom at which a circle of ``radius_m`` spans about 60% of the map height."""
    metres_per_px = 2.0 * radius_m / (0.6 * MAP_HEIGHT)
    z = math.log2(156_543.03 * max(math.cos(math.radians(lat)), 0.05) / metres_per_px)
    return int(min(max(math.floor(z), 2), 18))


def _mercator_y(lat: float) -> float:
    lat = min(max(lat, -85.0), 85.0)
    return math.degrees(math.log(math.tan(math.pi / 4 + math.radians(lat) / 2)))


def zoom_to_fit(lat: float, lng: float, points: list[tuple[float, float]]) -> int:
    """The largest zoom at which every point is on a map of the usual size centred on
    (lat, lng), with a small margin."""
    y0 = _mercator_y(lat)
    half_x = max([abs(p[1] - lng) for p in points] + [1e-6])
    half_y = max([abs(_mercator_y(p[0]) - y0) for p in points] + [1e-6])
    px_per_deg_at_zero = 256.0 / 360.0
    z_x = math.log2((MAP_WIDTH_GUESS / 2 - 20) / (half_x * px_per_deg_at_zero))
    z_y = math.log2((MAP_HEIGHT / 2 - 20) / (half_y * px_per_deg_at_zero))
    return int(min(max(math.floor(min(z_x, z_y)), 2), 18))


def view_bounds(
    center: tuple[float, float],
    zoom: float,
    size: tuple[float, float] = (MAP_WIDTH_GUESS, MAP_HEIGHT),
) -> tuple[float, float, float, float]:
    """(south, west, north, east) a map of ``size`` pixels (width, height; by default the
    usual size) shows at ``center`` and ``zoom`` — as Leaflet computes its bounds."""
    lat, lng = center
    deg_per_px = 360.0 / (256.0 * 2.0**zoom)
    half_w = deg_per_px * size[0] / 2.0
    # web Mercator: y in "degrees" of the equator, back to latitude at the edges
    y = _mercator_y(lat)
    half_h = deg_per_px * size[1] / 2.0

    def unproject(v: float) -> float:
        return math.degrees(2 * math.atan(math.exp(math.radians(v))) - math.pi / 2)

    return unproject(y - half_h), lng - half_w, unproject(y + half_h), lng + half_w


def api_bounds(
    south: float, west: float, north: float, east: float
) -> tuple[float, float, float, float]:
    """Map bounds as the area endpoint takes them: latitudes clamped, longitudes wrapped
    (``west > east`` when the view crosses ±180; the whole world when it is wider)."""
    south, north = max(south, -90.0), min(north, 90.0)
    if east - west >= 360.0:
        return south, -180.0, north, 180.0
    return south, wrap_lng(west), north, (wrap_lng(east) if wrap_lng(east) != -180.0 else 180.0)


def reported_view(state: Any) -> tuple[Bounds, tuple[float, float] | None] | None:
    """The bounds (south, west, north, east) the map last reported in ``state`` and its
    size in pixels (``None`` when the report has none); ``None`` before any report."""
    b = state.get("bounds") if isinstance(state, dict) else None
    if not isinstance(b, dict):
        return None
    try:
        sw, ne = b["_southWest"], b["_northEast"]
        box = (float(sw["lat"]), float(sw["lng"]), float(ne["lat"]), float(ne["lng"]))
    except (KeyError, TypeError, ValueError):
        return None
    if not all(math.isfinite(v) for v in box) or box[0] >= box[2] or box[1] >= box[3]:
        return None
    try:
        size = (float(b["width"]), float(b["height"]))
    except (KeyError, TypeError, ValueError):
        return box, None
    usable = all(math.isfinite(v) and v > 0 for v in size)
    return box, (size if usable else None)
