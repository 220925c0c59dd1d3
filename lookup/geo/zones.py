"""The time zone a point lies in, from the zone polygons the ``timezonefinder`` package
ships (timezone-boundary-builder's data, installed with it; nothing is downloaded).

``openNow`` compares the local time with a place's hours, so a place stored with the wrong
zone is open at the wrong hours: a Bengaluru café open 09:00–12:00 stored as UTC read as
open 14:30–17:30 IST. A place added or moved without a zone gets the zone of its point;
over the sea that is the nautical zone of its longitude (``Etc/GMT+11`` at 160° W).
"""

from __future__ import annotations

import threading
from functools import cache
from typing import Any

__all__ = ["UNSET_ZONES", "nautical_zone", "zone_at"]

#: What a row's zone was before zones were derived: the old default, or none at all.
UNSET_ZONES = ("UTC", None)

_lock = threading.Lock()  # the finder reads its data files through shared buffers


@cache
def _finder() -> Any:
    from timezonefinder import TimezoneFinder  # about a second to import: on first use

    return TimezoneFinder()


def nautical_zone(lng: float) -> str:
    """The nautical zone of longitude ``lng``: 15° wide, ``Etc/GMT-12`` to ``Etc/GMT+12``
    (the sign is POSIX's: ``Etc/GMT+11`` is eleven hours behind UTC)."""
    hours = max(-12, min(12, round(lng / 15.0)))
    return f"Etc/GMT{-hours:+d}" if hours else "Etc/GMT"


def zone_at(lat: float, lng: float) -> str:
    """The IANA time zone at (``lat``, ``lng``)."""
    with _lock:
        name = _finder().timezone_at(lat=lat, lng=lng)
    return str(name) if name else nautical_zone(lng)
