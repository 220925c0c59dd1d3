"""Weekly opening hours, in the place's own time zone, and the "open now" test.

A schedule is a JSON object from day (``mon`` … ``sun``) to a list of ``"HH:MM-HH:MM"``
intervals; a closing time at or before the opening time runs past midnight into the
next day (``"18:00-02:00"``), and ``"00:00-24:00"`` is the whole day. For the index a
schedule becomes a bitmap of the 10,080 minutes of a week, so "open now" for
thousands of candidates is one array lookup each.
"""

from __future__ import annotations

import json
import re
from datetime import datetime
from functools import lru_cache
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import numpy as np

DAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
MINUTES_PER_DAY = 24 * 60
MINUTES_PER_WEEK = 7 * MINUTES_PER_DAY
_INTERVAL = re.compile(r"^(\d{2}):(\d{2})-(\d{2}):(\d{2})$")


def parse_hours(value: str | dict[str, Any] | None) -> dict[str, list[str]] | None:
    """Validate a schedule (JSON text or dict) and return it normalised; ``None`` stays ``None``.

    Raises ``ValueError`` with a readable message for anything malformed.
    """
    if value is None:
        return None
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as exc:
            raise ValueError(f"hours must be a JSON object: {exc}") from None
    if not isinstance(value, dict):
        raise ValueError("hours must be an object from day (mon..sun) to a list of 'HH:MM-HH:MM'")
    unknown = set(value) - set(DAYS)
    if unknown:
        raise ValueError(f"unknown day(s) in hours: {sorted(unknown)}; use {', '.join(DAYS)}")
    out: dict[str, list[str]] = {}
    for day in DAYS:
        intervals = value.get(day, [])
        if not isinstance(intervals, list):
            raise ValueError(f"hours.{day} must be a list of 'HH:MM-HH:MM' intervals")
        for text in intervals:
            _interval_minutes(text, day)
        out[day] = list(intervals)
    return out


def _interval_minutes(text: Any, day: str = "") -> tuple[int, int]:
    m = _INTERVAL.match(text) if isinstance(text, str) else None
    if not m:
        raise ValueError(f"hours.{day}: {text!r} is not an 'HH:MM-HH:MM' interval")
    h1, m1, h2, m2 = (int(g) for g in m.groups())
    if h1 > 23 or m1 > 59 or h2 > 24 or m2 > 59 or (h2 == 24 and m2 != 0):
        raise ValueError(f"hours.{day}: {text!r} is not a valid time range")
    start, end = h1 * 60 + m1, h2 * 60 + m2
    if end <= start:
        end += MINUTES_PER_DAY  # runs past midnight
    return start, end


def week_bitmap(schedule: dict[str, list[str]] | None) -> np.ndarray:
    """A bool array over the minutes of a week (Monday 00:00 = 0): True while open."""
    bits = np.zeros(MINUTES_PER_WEEK, dtype=bool)
    if not schedule:
        return bits
    for d, day in enumerate(DAYS):
        for text in schedule.get(day, []):
            start, end = _interval_minutes(text, day)
            lo, hi = d * MINUTES_PER_DAY + start, d * MINUTES_PER_DAY + end
            if hi <= MINUTES_PER_WEEK:
                bits[lo:hi] = True
            else:  # Sunday night into Monday morning
                bits[lo:] = True
                bits[: hi - MINUTES_PER_WEEK] = True
    return bits


@lru_cache(maxsize=1024)
def zone(name: str) -> ZoneInfo:
    """The ``ZoneInfo`` for an IANA name (cached); ``ValueError`` if unknown."""
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(f"unknown time zone {name!r}") from None


def minute_of_week(ts: float, tz: str) -> int:
    """Minutes since Monday 00:00 local time in ``tz`` at the Unix time ``ts``."""
    local = datetime.fromtimestamp(ts, zone(tz))
    return local.weekday() * MINUTES_PER_DAY + local.hour * 60 + local.minute


def is_open(schedule: dict[str, list[str]] | None, ts: float, tz: str) -> bool:
    """Whether a place with ``schedule`` in time zone ``tz`` is open at Unix time ``ts``."""
    if not schedule:
        return False
    return bool(week_bitmap(schedule)[minute_of_week(ts, tz)])


def canonical_json(schedule: dict[str, list[str]] | None) -> str | None:
    """The schedule as compact JSON with days in order (one text per distinct schedule)."""
    if schedule is None:
        return None
    return json.dumps({d: schedule.get(d, []) for d in DAYS}, separators=(",", ":"))
