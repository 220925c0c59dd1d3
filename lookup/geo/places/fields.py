"""Owner-supplied place fields, checked and normalised before any engine sees them.

Every backend of :mod:`lookup.geo.places` validates an add or an edit here, so a field the
SQLite store refuses is refused by PostgreSQL with the same code and words.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

from lookup.geo.hours import canonical_json, parse_hours, zone
from lookup.geo.places import EDITABLE, PlaceError

__all__ = ["check_review_totals", "set_zone", "validate"]


def set_zone(name: str) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """The edit that sets a row's time zone to ``name``."""
    return lambda _before: {"timezone": name}


def validate(fields: dict[str, Any], *, partial: bool) -> dict[str, Any]:
    """Check owner-supplied fields (all required ones unless ``partial``); returns them
    normalised for the table, or raises :class:`PlaceError` ``INVALID_PARAMETER``."""
    if not isinstance(fields, dict):
        raise PlaceError("INVALID_PARAMETER", "place fields must be an object")
    unknown = set(fields) - set(EDITABLE)
    if unknown:
        raise PlaceError(
            "INVALID_PARAMETER",
            f"unknown or read-only field(s): {sorted(unknown)}; editable: {', '.join(EDITABLE)}",
        )
    if not partial:
        missing = [f for f in ("name", "lat", "lng", "category") if f not in fields]
        if missing:
            raise PlaceError("INVALID_PARAMETER", f"missing required field(s): {missing}")
    out: dict[str, Any] = {}
    for key, value in fields.items():
        if key == "name":
            if not isinstance(value, str) or not value.strip() or len(value) > 200:
                raise PlaceError("INVALID_PARAMETER", "name must be 1 to 200 characters")
            out[key] = value.strip()
        elif key in ("lat", "lng"):
            limit = 90.0 if key == "lat" else 180.0
            if (
                isinstance(value, bool)
                or not isinstance(value, (int, float))
                or not math.isfinite(value)
                or not -limit <= value <= limit
            ):
                raise PlaceError("INVALID_PARAMETER", f"{key} must be a number within ±{limit:g}")
            out[key] = float(value) + 0.0  # -0.0 is 0.0: SQLite keeps no sign of zero
        elif key == "category":
            if not isinstance(value, str) or not value.strip() or len(value) > 40:
                raise PlaceError("INVALID_PARAMETER", "category must be a short non-empty string")
            out[key] = value.strip().lower()
        elif key == "country":
            if value is not None and (not isinstance(value, str) or len(value) > 3):
                raise PlaceError("INVALID_PARAMETER", "country must be an ISO country code")
            out[key] = value
        elif key == "timezone":
            if not isinstance(value, str):
                raise PlaceError("INVALID_PARAMETER", "timezone must be an IANA name")
            try:
                zone(value)
            except ValueError as exc:
                raise PlaceError("INVALID_PARAMETER", str(exc)) from None
            out[key] = value
        elif key == "tags":
            if (
                not isinstance(value, list)
                or not all(isinstance(t, str) and 0 < len(t) <= 40 for t in value)
                or len(value) > 30
            ):
                raise PlaceError("INVALID_PARAMETER", "tags must be a list of short strings")
            out[key] = json.dumps([t.strip().lower() for t in value])
        elif key == "hours":
            try:
                out[key] = canonical_json(parse_hours(value))
            except ValueError as exc:
                raise PlaceError("INVALID_PARAMETER", str(exc)) from None
        elif key == "price":
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 4
            ):
                raise PlaceError("INVALID_PARAMETER", "price must be an integer 1-4, or null")
            out[key] = value
        elif key in ("review_count", "review_stars"):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise PlaceError("INVALID_PARAMETER", f"{key} must be a non-negative integer")
            out[key] = value
    if not partial:
        check_review_totals({"review_count": 0, "review_stars": 0, **out})
    return out


def check_review_totals(row: dict[str, Any]) -> None:
    """Refuse review totals that no set of 1–5 star reviews adds up to."""
    n, stars = row.get("review_count", 0), row.get("review_stars", 0)
    if not n <= stars <= 5 * n:
        raise PlaceError(
            "INVALID_PARAMETER",
            "review_stars must lie between review_count and 5 × review_count (each review is 1–5)",
        )
