"""A search area drawn as a polygon (GeoJSON) or a box: parsed, checked, and asked exactly.

Input is a GeoJSON ``Polygon`` (RFC 7946 §3.1.6: an exterior ring, then holes; each ring
closed, at least four positions of ``[lng, lat]``) or a box ``west,south,east,north``
(the GeoJSON ``bbox`` order, §5; ``west > east`` crosses ±180 as on the map-area route).
Edges are straight lines in degrees (GeoJSON's own rule, PostGIS ``geometry``,
Elasticsearch ``geo_shape``), not great circles.

**The antimeridian.** Two consecutive positions whose longitudes differ by more than 180°
are joined the short way, across ±180 (RFC 7946 §3.1.9 asks producers to cut such a
polygon there; we accept it uncut and cut it ourselves). A ring is *unwrapped* — each
longitude moved by a multiple of 360° so no step exceeds 180° — and the polygon is kept
in that continuous frame (longitudes past 180 allowed); a place at ``lng`` is inside when
``lng`` or ``lng + 360`` is. A ring whose unwrapped longitudes do not come back to where
they started circles a pole: refused (cut it into pieces, as the RFC says).

**The boundary belongs to the area** (a pin on the edge of a drawn shape is shown):
PostGIS ``ST_Intersects``/``ST_Covers`` and Elasticsearch's default ``intersects``
relation, not ``ST_Within``, which leaves the edge out. The test is exact on the
coordinates as floats: the crossing number (even–odd, so holes just work) with each
orientation decided by a float determinant and its error bound (Shewchuk's
``ccwerrboundA``), and by exact rational arithmetic where the float cannot tell.

Validity (a self-intersecting ring, a hole outside the shell) is ``shapely``'s
``is_valid``, the GEOS check PostGIS uses; not the subject, so a library.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

#: Shewchuk's ``ccwerrboundA``: a float orientation determinant whose magnitude exceeds
#: this times the sum of its two products' magnitudes has the exact determinant's sign.
_ERRBOUND = (3.0 + 16.0 * 2.0**-53) * 2.0**-53
#: Point-edge pairs per vectorised block (bounds the temporary arrays).
_BLOCK = 1 << 20


class PolygonError(ValueError):
    """A polygon or box that cannot be searched (→ 400 ``INVALID_POLYGON``)."""

    def __init__(self, message: str, code: str = "INVALID_POLYGON") -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True)
class Shape:
    """A checked polygon in its unwrapped frame: ``rings[0]`` the shell, the rest holes.

    Each ring is an ``(n, 2)`` float array of ``(x = lng, y = lat)`` closed positions,
    ``west`` in [-180, 180) and every ``x`` below ``west + 360``.
    """

    rings: tuple[np.ndarray, ...]
    kind: str  # "polygon" or "bbox"

    @property
    def south(self) -> float:
        return float(self.rings[0][:, 1].min())

    @property
    def north(self) -> float:
        return float(self.rings[0][:, 1].max())

    @property
    def west(self) -> float:
        return float(self.rings[0][:, 0].min())

    @property
    def east(self) -> float:
        """The shell's easternmost longitude, unwrapped (above 180 when crossing ±180)."""
        return float(self.rings[0][:, 0].max())

    @property
    def crosses_antimeridian(self) -> bool:
        return self.east > 180.0

    @property
    def vertices(self) -> int:
        return sum(len(r) - 1 for r in self.rings)

    def edges(self) -> np.ndarray:
        """Every edge of every ring as rows ``(ax, ay, bx, by)``."""
        return np.concatenate([np.hstack([r[:-1], r[1:]]) for r in self.rings])

    def digest(self) -> str:
        """A short hash of the shape (a cursor's query fingerprint)."""
        raw = json.dumps([r.tolist() for r in self.rings]).encode()
        return hashlib.sha256(raw).hexdigest()[:16]

    def contains(self, lat: np.ndarray, lng: np.ndarray) -> np.ndarray:
        """Which points (wrapped longitudes) lie inside or on the boundary."""
        lat = np.asarray(lat, dtype=np.float64)
        lng = np.asarray(lng, dtype=np.float64)
        out = covers(self.edges(), lng, lat)
        if self.crosses_antimeridian:
            near = np.flatnonzero(~out & (lng + 360.0 <= self.east))
            if len(near):
                out[near] = covers(self.edges(), lng[near] + 360.0, lat[near])
        return out

    def to_geojson(self) -> dict[str, Any]:
        """The shape as a GeoJSON Polygon (unwrapped longitudes, as searched)."""
        return {"type": "Polygon", "coordinates": [r.tolist() for r in self.rings]}


# ----------------------------------------------------------------- exact tests


def orientation(ax: Any, ay: Any, bx: Any, by: Any, px: Any, py: Any) -> np.ndarray:
    """The sign (-1, 0, 1) of ``(b - a) × (p - a)`` per element, exactly: a float
    determinant where its error bound allows, rational arithmetic elsewhere."""
    ax, ay, bx, by, px, py = np.broadcast_arrays(
        *(np.atleast_1d(np.asarray(v, dtype=np.float64)) for v in (ax, ay, bx, by, px, py))
    )
    left = (bx - ax) * (py - ay)
    right = (by - ay) * (px - ax)
    det = left - right
    sign = np.sign(det).astype(np.int8)
    unsure = np.abs(det) <= _ERRBOUND * (np.abs(left) + np.abs(right))
    for i in zip(*np.nonzero(unsure), strict=True):
        fa, fb = Fraction(float(ax[i])), Fraction(float(ay[i]))
        exact = (Fraction(float(bx[i])) - fa) * (Fraction(float(py[i])) - fb) - (
            Fraction(float(by[i])) - fb
        ) * (Fraction(float(px[i])) - fa)
        sign[i] = (exact > 0) - (exact < 0)
    return sign


def covers(edges: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Whether each point ``(x, y)`` is inside the rings ``edges`` (even–odd) or on one.

    A horizontal ray to +x crosses an edge when the edge straddles ``y`` by the half-open
    rule (one end above ``y``, the other not) and the point lies left of the edge as it
    goes up (right as it goes down); a point on an edge (orientation 0 within the edge's
    box) is on the boundary, inside by this module's rule.
    """
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    out = np.zeros(len(x), dtype=bool)
    if not len(x) or not len(edges):
        return out
    ax, ay, bx, by = (edges[:, k] for k in range(4))
    step = max(1, _BLOCK // len(edges))
    for lo in range(0, len(x), step):
        px, py = x[lo : lo + step, None], y[lo : lo + step, None]
        straddle = (ay > py) != (by > py)
        in_box = (
            (py >= np.minimum(ay, by))
            & (py <= np.maximum(ay, by))
            & (px >= np.minimum(ax, bx))
            & (px <= np.maximum(ax, bx))
        )
        # only a pair the ray may cross (the edge reaches the point's right) or that may
        # hold the point needs its orientation
        need = in_box | (straddle & (px <= np.maximum(ax, bx)))
        rows, cols = np.nonzero(need)
        sign = orientation(ax[cols], ay[cols], bx[cols], by[cols], px[rows, 0], py[rows, 0])
        up = by[cols] > ay[cols]
        crossing = straddle[rows, cols] & np.where(up, sign > 0, sign < 0)
        on_edge = in_box[rows, cols] & (sign == 0)
        parity = np.bincount(rows[crossing], minlength=len(px)) % 2 == 1
        touch = np.bincount(rows[on_edge], minlength=len(px)) > 0
        out[lo : lo + step] = parity | touch
    return out


# ----------------------------------------------------------------------- input


def _number(value: Any, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise PolygonError(f"{what} must be a number")
    v = float(value)
    if not math.isfinite(v):
        raise PolygonError(f"{what} must be finite")
    return v


def _position(value: Any, where: str) -> tuple[float, float]:
    if not isinstance(value, list) or not 2 <= len(value) <= 3:
        raise PolygonError(f"{where} must be a position [lng, lat] (an altitude may follow)")
    lng, lat = _number(value[0], f"{where}'s longitude"), _number(value[1], f"{where}'s latitude")
    if not -180.0 <= lng <= 180.0:
        raise PolygonError(f"{where}'s longitude must be within ±180, got {lng:g}")
    if not -90.0 <= lat <= 90.0:
        raise PolygonError(f"{where}'s latitude must be within ±90, got {lat:g}")
    return lng, lat


def unwrap(lngs: list[float]) -> list[float]:
    """Longitudes moved by whole turns so no step between neighbours exceeds 180°
    (each is its input plus a multiple of 360, added once: one rounding at most)."""
    out, turns = [lngs[0]], 0
    for prev, lng in zip(lngs, lngs[1:], strict=False):
        step = lng - prev
        if step > 180.0:
            turns -= 1
        elif step < -180.0:
            turns += 1
        out.append(lng + 360.0 * turns if turns else lng)
    return out


def _ring(value: Any, where: str) -> np.ndarray:
    if not isinstance(value, list):
        raise PolygonError(f"{where} must be a list of positions")
    if len(value) < 4:
        raise PolygonError(f"{where} needs at least 4 positions (a closed triangle)")
    points = [_position(p, f"{where} position {i}") for i, p in enumerate(value)]
    if points[0] != points[-1]:
        raise PolygonError(f"{where} is not closed: its last position must repeat the first")
    xs = unwrap([p[0] for p in points])
    if xs[-1] != xs[0]:
        raise PolygonError(
            f"{where} goes all the way round a pole; cut it into pieces that do not "
            "(RFC 7946 §3.1.9)"
        )
    if max(xs) - min(xs) >= 360.0:
        raise PolygonError(f"{where} spans 360° of longitude or more")
    return np.array([[x, p[1]] for x, p in zip(xs, points, strict=True)], dtype=np.float64)


def _shifted(ring: np.ndarray, turns: int) -> np.ndarray:
    if not turns:
        return ring
    out = ring.copy()
    out[:, 0] = out[:, 0] + 360.0 * turns
    return out


def parse_polygon(value: Any, max_vertices: int) -> Shape:
    """A GeoJSON Polygon (a dict, or its JSON text) checked and unwrapped; PolygonError."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            raise PolygonError("polygon must be a GeoJSON Polygon (JSON)") from None
    if not isinstance(value, dict) or value.get("type") != "Polygon":
        raise PolygonError('polygon must be a GeoJSON object with "type": "Polygon"')
    unknown = set(value) - {"type", "coordinates", "bbox"}
    if unknown:
        raise PolygonError(f"polygon has unknown member(s): {', '.join(sorted(map(str, unknown)))}")
    coords = value.get("coordinates")
    if not isinstance(coords, list) or not coords:
        raise PolygonError("polygon's coordinates must be a list of rings (shell first)")
    total = sum(len(r) - 1 for r in coords if isinstance(r, list))
    if total > max_vertices:
        raise PolygonError(
            f"polygon has {total} vertices; at most {max_vertices} are accepted "
            "(LOOKUP_PLACES_POLYGON_MAX_VERTICES)"
        )
    rings = [_ring(r, "the shell" if i == 0 else f"hole {i}") for i, r in enumerate(coords)]
    shell = rings[0]
    west = float(shell[:, 0].min())
    turns = -math.floor((west + 180.0) / 360.0)  # bring the shell's west into [-180, 180)
    shell = _shifted(shell, turns)
    west = float(shell[:, 0].min())
    holes = []
    for hole in rings[1:]:  # moved once (one rounding): its first position east of west
        holes.append(_shifted(hole, -math.floor((float(hole[0, 0]) - west) / 360.0)))
    shape = Shape((shell, *holes), "polygon")
    _check_valid(shape)
    return shape


def _check_valid(shape: Shape) -> None:
    import shapely
    from shapely.validation import explain_validity

    geometry = shapely.Polygon(shape.rings[0], shape.rings[1:])
    if not geometry.is_valid:
        raise PolygonError(f"polygon is not valid: {explain_validity(geometry)}")
    if geometry.area <= 0.0:
        raise PolygonError("polygon encloses no area")


def parse_bbox(value: Any) -> Shape:
    """``west,south,east,north`` (text or a list) as a rectangle; ``west > east`` crosses
    ±180 (so a box 170 → -170 is 20° wide), ``west == east`` is a line of no width."""
    if isinstance(value, str):
        parts: list[Any] = []
        for part in value.split(","):
            try:
                parts.append(float(part))
            except ValueError:
                raise PolygonError("bbox must be four numbers: west,south,east,north") from None
        value = parts
    if not isinstance(value, list) or len(value) != 4:
        raise PolygonError("bbox must be four numbers: west,south,east,north")
    west, south, east, north = (_number(v, "a bbox edge") for v in value)
    for name, v, lim in (("west", west, 180), ("east", east, 180)):
        if not -lim <= v <= lim:
            raise PolygonError(f"bbox {name} must be within ±{lim}, got {v:g}")
    for name, v in (("south", south), ("north", north)):
        if not -90.0 <= v <= 90.0:
            raise PolygonError(f"bbox {name} must be within ±90, got {v:g}")
    if south > north:
        raise PolygonError("bbox south must not be greater than north")
    if west > east:
        east += 360.0
    west_turns = -math.floor((west + 180.0) / 360.0)
    west, east = west + 360.0 * west_turns, east + 360.0 * west_turns
    ring = np.array(
        [[west, south], [east, south], [east, north], [west, north], [west, south]],
        dtype=np.float64,
    )
    return Shape((ring,), "bbox")


__all__ = ["PolygonError", "Shape", "covers", "orientation", "parse_bbox", "parse_polygon"]
