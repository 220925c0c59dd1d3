"""Geohash, written by hand: a point becomes a short string whose prefixes are cells.

The world is bisected alternately by longitude (west half = bit 0, east = 1) and by
latitude (south = 0, north = 1); five bits make one character of the alphabet
:data:`BASE32`. A longer geohash always starts with the geohash of every cell that
contains it, so "all places in this cell" is a prefix range — the typeahead idea in
two dimensions.

Two forms are used:

* the **string** (``"tdr1w"``) for people, URLs and the database column;
* the **code**: the first 60 bits (precision 12) as one integer, used by the
  in-memory index. A cell of precision ``p`` is the code range
  ``[cell << (60 - 5p), (cell + 1) << (60 - 5p))``.

A bit is 1 when the value is at or above the midpoint of its interval (so the
equator and the prime meridian belong to the north and east halves), exactly as in
the reference implementations. Latitude ±90 and longitude 180 fall in the last cell.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, overload

import numpy as np

#: The geohash alphabet: digits and letters without a, i, l, o.
BASE32 = "0123456789bcdefghjkmnpqrstuvwxyz"
_DECODE = {c: i for i, c in enumerate(BASE32)}

MAX_PRECISION = 12
#: Bits in a full code: 12 characters × 5 bits, 30 per axis.
CODE_BITS = 5 * MAX_PRECISION
AXIS_BITS = CODE_BITS // 2

#: Earth's mean radius in metres (the seed's haversine uses the same figure).
EARTH_RADIUS_M = 6_371_000.0
#: Metres in one degree of latitude (and of longitude at the equator) on that sphere.
METRES_PER_DEGREE = math.pi * EARTH_RADIUS_M / 180.0

_MASKS = (
    (16, 0x0000FFFF0000FFFF),
    (8, 0x00FF00FF00FF00FF),
    (4, 0x0F0F0F0F0F0F0F0F),
    (2, 0x3333333333333333),
    (1, 0x5555555555555555),
)


@dataclass(frozen=True)
class Cell:
    """A geohash cell: its string and its bounds in degrees."""

    geohash: str
    south: float
    west: float
    north: float
    east: float

    @property
    def center(self) -> tuple[float, float]:
        """(lat, lng) of the cell's centre."""
        return (self.south + self.north) / 2.0, (self.west + self.east) / 2.0

    @property
    def height_deg(self) -> float:
        return self.north - self.south

    @property
    def width_deg(self) -> float:
        return self.east - self.west


def axis_bits(precision: int) -> tuple[int, int]:
    """(latitude bits, longitude bits) in a geohash of ``precision`` characters.

    Longitude takes the first bit, so it gets the extra one when ``5 × precision`` is odd.
    """
    n = 5 * precision
    return n // 2, n - n // 2


def cell_size_deg(precision: int) -> tuple[float, float]:
    """(height, width) in degrees of every cell of ``precision`` characters."""
    lat_bits, lng_bits = axis_bits(precision)
    return 180.0 / (1 << lat_bits), 360.0 / (1 << lng_bits)


def cell_size_m(precision: int, lat: float = 0.0) -> tuple[float, float]:
    """(height, width) in metres of a cell at latitude ``lat`` (width narrows by cos(lat))."""
    h, w = cell_size_deg(precision)
    return h * METRES_PER_DEGREE, w * METRES_PER_DEGREE * math.cos(math.radians(lat))


def precision_for_radius(radius_m: float, lat: float = 0.0) -> int:
    """The longest precision whose cell's shorter side, at ``lat``, is still ≥ ``radius_m``.

    With such cells a circle centred anywhere in the middle cell reaches at most one
    cell further in each direction, so the 3×3 block covers it (away from the poles,
    where even precision 1 can be too narrow; the search then covers the circle's
    bounding box instead). Returns 1 when no precision is wide enough.
    """
    for p in range(MAX_PRECISION, 0, -1):
        h, w = cell_size_m(p, lat)
        if min(h, w) >= radius_m:
            return p
    return 1


# --------------------------------------------------------------------------- bits


def _spread(x: Any) -> Any:
    """Put bit i of a 32-bit value at bit 2i (works on ints and uint64 arrays)."""
    for shift, mask in _MASKS:
        x = (x | (x << shift)) & mask
    return x


def _compact(x: Any) -> Any:
    """Inverse of :func:`_spread`: gather the even bits of a 64-bit value."""
    x = x & 0x5555555555555555
    x = (x | (x >> 1)) & 0x3333333333333333
    x = (x | (x >> 2)) & 0x0F0F0F0F0F0F0F0F
    x = (x | (x >> 4)) & 0x00FF00FF00FF00FF
    x = (x | (x >> 8)) & 0x0000FFFF0000FFFF
    x = (x | (x >> 16)) & 0x00000000FFFFFFFF
    return x


def _quantize(value: Any, low: float, span: float, bits: int) -> Any:
    """Index of the ``2**bits`` equal slice of ``[low, low + span]`` holding ``value``.

    Exactly the bisection's answer (bit = value ≥ midpoint): the float estimate is
    corrected against the slice's exact dyadic boundaries.
    """
    n = 1 << bits
    step = span / n
    top = n - 1
    if isinstance(value, np.ndarray):
        cells = np.clip(np.floor((value - low) / step), 0, top).astype(np.int64)
        cells -= (value < low + cells * step) & (cells > 0)
        cells += (value >= low + (cells + 1) * step) & (cells < top)
        return cells
    i = min(max(int(math.floor((value - low) / step)), 0), top)
    if i > 0 and value < low + i * step:
        i -= 1
    if i < top and value >= low + (i + 1) * step:
        i += 1
    return i


def _check(lat: float, lng: float) -> None:
    if not (-90.0 <= lat <= 90.0):
        raise ValueError(f"latitude must be within [-90, 90], got {lat!r}")
    if not (-180.0 <= lng <= 180.0):
        raise ValueError(f"longitude must be within [-180, 180], got {lng!r}")


def _check_precision(precision: int) -> None:
    if not isinstance(precision, int) or isinstance(precision, bool):
        raise ValueError(f"precision must be an integer, got {precision!r}")
    if not 1 <= precision <= MAX_PRECISION:
        raise ValueError(f"precision must be within 1..{MAX_PRECISION}, got {precision}")


def encode_code(lat: float, lng: float) -> int:
    """The 60-bit interleaved code of a point (its precision-12 geohash as an integer)."""
    _check(lat, lng)
    ilat = _quantize(lat, -90.0, 180.0, AXIS_BITS)
    ilng = _quantize(lng, -180.0, 360.0, AXIS_BITS)
    return (_spread(ilng) << 1) | _spread(ilat)


def encode_codes(lats: np.ndarray, lngs: np.ndarray) -> np.ndarray:
    """Vectorised :func:`encode_code` for valid coordinates; returns int64 codes."""
    lats = np.asarray(lats, dtype=np.float64)
    lngs = np.asarray(lngs, dtype=np.float64)
    lat_ok = np.all((lats >= -90.0) & (lats <= 90.0))
    lng_ok = np.all((lngs >= -180.0) & (lngs <= 180.0))
    if lats.size and not (lat_ok and lng_ok):
        raise ValueError("coordinates out of range (lat within [-90, 90], lng within [-180, 180])")
    ilat = _quantize(lats, -90.0, 180.0, AXIS_BITS).astype(np.uint64)
    ilng = _quantize(lngs, -180.0, 360.0, AXIS_BITS).astype(np.uint64)
    return ((_spread(ilng) << np.uint64(1)) | _spread(ilat)).astype(np.int64)


def decode_code(code: int) -> tuple[float, float]:
    """Centre (lat, lng) of the precision-12 cell of a 60-bit code."""
    ilat = _compact(code)
    ilng = _compact(code >> 1)
    step_lat = 180.0 / (1 << AXIS_BITS)
    step_lng = 360.0 / (1 << AXIS_BITS)
    return -90.0 + (ilat + 0.5) * step_lat, -180.0 + (ilng + 0.5) * step_lng


def cell_value(code: int, precision: int) -> int:
    """The cell (an integer of ``5 × precision`` bits) at ``precision`` holding ``code``."""
    return code >> (CODE_BITS - 5 * precision)


def cell_range(cell: int, precision: int) -> tuple[int, int]:
    """The half-open range of 60-bit codes inside ``cell`` of ``precision``."""
    shift = CODE_BITS - 5 * precision
    return cell << shift, (cell + 1) << shift


def to_string(cell: int, precision: int) -> str:
    """The geohash string of an integer cell."""
    chars = []
    for i in range(precision - 1, -1, -1):
        chars.append(BASE32[(cell >> (5 * i)) & 31])
    return "".join(chars)


def to_cell(geohash: str) -> tuple[int, int]:
    """(integer cell, precision) of a geohash string; ``ValueError`` if it is not one."""
    if not isinstance(geohash, str) or not 1 <= len(geohash) <= MAX_PRECISION:
        raise ValueError(f"a geohash has 1 to {MAX_PRECISION} characters, got {geohash!r}")
    value = 0
    for ch in geohash.lower():
        try:
            value = (value << 5) | _DECODE[ch]
        except KeyError:
            raise ValueError(f"{ch!r} is not a geohash character (alphabet {BASE32})") from None
    return value, len(geohash)


def encode(lat: float, lng: float, precision: int = MAX_PRECISION) -> str:
    """The geohash of a point with ``precision`` characters (1–12)."""
    _check_precision(precision)
    return to_string(cell_value(encode_code(lat, lng), precision), precision)


def bisection_steps(lat: float, lng: float, precision: int) -> list[dict[str, Any]]:
    """The encoding spelled out: one row per bit (axis, interval, midpoint, bit).

    The textbook algorithm, kept for explanation (notebook, dashboard); :func:`encode`
    gives the same bits from the integer form.
    """
    _check(lat, lng)
    _check_precision(precision)
    lat_lo, lat_hi, lng_lo, lng_hi = -90.0, 90.0, -180.0, 180.0
    steps: list[dict[str, Any]] = []
    for i in range(5 * precision):
        if i % 2 == 0:
            mid = (lng_lo + lng_hi) / 2.0
            bit = int(lng >= mid)
            steps.append({"axis": "lng", "low": lng_lo, "high": lng_hi, "mid": mid, "bit": bit})
            lng_lo, lng_hi = (mid, lng_hi) if bit else (lng_lo, mid)
        else:
            mid = (lat_lo + lat_hi) / 2.0
            bit = int(lat >= mid)
            steps.append({"axis": "lat", "low": lat_lo, "high": lat_hi, "mid": mid, "bit": bit})
            lat_lo, lat_hi = (mid, lat_hi) if bit else (lat_lo, mid)
    return steps


def cell_bounds(cell: int, precision: int) -> tuple[float, float, float, float]:
    """(south, west, north, east) of an integer cell."""
    lat_bits, lng_bits = axis_bits(precision)
    n = 5 * precision
    if n % 2:  # longitude holds bit 0
        ilng, ilat = _compact(cell), _compact(cell >> 1)
    else:
        ilat, ilng = _compact(cell), _compact(cell >> 1)
    h, w = 180.0 / (1 << lat_bits), 360.0 / (1 << lng_bits)
    south, west = -90.0 + ilat * h, -180.0 + ilng * w
    return south, west, south + h, west + w


def decode(geohash: str) -> Cell:
    """The cell of a geohash string, with its bounds."""
    cell, precision = to_cell(geohash)
    return Cell(geohash.lower(), *cell_bounds(cell, precision))


@overload
def cell_of(ilat: int, ilng: int, precision: int) -> int: ...
@overload
def cell_of(ilat: np.ndarray, ilng: np.ndarray, precision: int) -> np.ndarray: ...
def cell_of(ilat: int | np.ndarray, ilng: int | np.ndarray, precision: int) -> int | np.ndarray:
    """The integer cell in row ``ilat`` and column ``ilng`` of the ``precision`` grid."""
    if (5 * precision) % 2:
        return _spread(ilng) | (_spread(ilat) << 1)
    return (_spread(ilng) << 1) | _spread(ilat)


def _wrap_lng(lng: float) -> float:
    wrapped = (lng + 180.0) % 360.0 - 180.0
    return wrapped


#: The eight directions as (rows north, columns east), in the order of :func:`neighbours`.
DIRECTIONS: dict[str, tuple[int, int]] = {
    "n": (1, 0),
    "ne": (1, 1),
    "e": (0, 1),
    "se": (-1, 1),
    "s": (-1, 0),
    "sw": (-1, -1),
    "w": (0, -1),
    "nw": (1, -1),
}


def neighbours(geohash: str) -> dict[str, str]:
    """The (up to) eight cells around ``geohash``, computed from its bounds.

    Each neighbour is the cell holding the centre shifted by one cell height/width.
    Longitude wraps across the antimeridian; there is nothing beyond a pole, so the
    top and bottom rows of the grid have five neighbours.
    """
    cell = decode(geohash)
    precision = len(geohash)
    lat, lng = cell.center
    h, w = cell.height_deg, cell.width_deg
    out: dict[str, str] = {}
    for name, (dr, dc) in DIRECTIONS.items():
        nlat = lat + dr * h
        if not -90.0 < nlat < 90.0:
            continue
        out[name] = encode(nlat, _wrap_lng(lng + dc * w), precision)
    return out


def block(geohash: str) -> list[str]:
    """The cell and its neighbours: the 3×3 block a radius search scans."""
    return [geohash.lower(), *neighbours(geohash).values()]


def common_prefix(a: str, b: str) -> str:
    """The longest common prefix of two geohashes (the cell holding both)."""
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return a[:n]
