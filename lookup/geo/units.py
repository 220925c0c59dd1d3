"""Distances in the units people use: ``2km``, ``1.5mi``, ``500m``, ``3000ft`` on input,
and any of them on output beside the metres.

The spellings are Elasticsearch's distance units (``m``, ``km``, ``mi``, ``yd``, ``ft``,
``nmi``; a bare number is metres, as ``radius`` has always been). The factors are the
international definitions (a mile is 1,609.344 m exactly, a nautical mile 1,852 m).
"""

from __future__ import annotations

import math
import re

#: Metres per unit.
UNITS: dict[str, float] = {
    "m": 1.0,
    "km": 1000.0,
    "mi": 1609.344,
    "yd": 0.9144,
    "ft": 0.3048,
    "nmi": 1852.0,
}

_DISTANCE = re.compile(r"\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([a-zA-Z]*)\s*")


class UnitError(ValueError):
    """A distance or unit this module cannot read (the message says what is accepted)."""


def parse_distance(raw: str) -> float:
    """Metres in ``raw``: a number, optionally followed by a unit of :data:`UNITS`."""
    match = _DISTANCE.fullmatch(raw)
    if match is None:
        raise UnitError(f"expected a distance such as 2000, 2km or 1.5mi, not {raw[:40]!r}")
    number, unit = float(match.group(1)), match.group(2).lower() or "m"
    if unit not in UNITS:
        raise UnitError(f"unknown unit {unit!r}: use one of {', '.join(UNITS)}")
    metres = number * UNITS[unit]
    if not math.isfinite(metres):
        raise UnitError(f"the distance {raw[:40]!r} is out of range")
    return metres


def check_unit(raw: str) -> str:
    """``raw`` as one of :data:`UNITS` (case-insensitive), else :class:`UnitError`."""
    unit = raw.strip().lower()
    if unit not in UNITS:
        raise UnitError(f"unknown unit {raw[:20]!r}: use one of {', '.join(UNITS)}")
    return unit


def in_unit(metres: float, unit: str) -> float:
    """``metres`` expressed in ``unit``, to three decimals (a metre in miles shows)."""
    return round(metres / UNITS[unit], 3)
