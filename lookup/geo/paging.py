"""What a places search may ask, and how its pages continue: limits, checks, signed cursors.

Every request is checked here before any work (a bad point, radius, page size or sort
order is a :class:`SearchError`, a 400). A page's ``nextCursor`` is the sort key of its
last place and the query's fingerprint, HMAC-SHA256-signed with the service's key
(``places/cursor.key``), so a forged radius, position or clock is refused. There are
four kinds, each with its sort key:

* ``radius`` — a radius search: ``(score, distance, place number)`` (or, with
  ``sort=distance``, ``(distance, place number)``), the radius used and the clock pinned;
* ``nearest`` — nearest-k without a radius: ``(distance, place number)`` and how many
  places the earlier pages held (the lower bound ``total`` reports);
* ``area`` — a map area's pins: ``(score, distance, place number)``.
* ``within`` — a polygon's or a box's places: the same key as ``area``.

Cursors made before the kinds existed carry none and are ``radius`` ones.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import math
import secrets
from functools import lru_cache
from typing import Any

MAX_RADIUS_M = 20_000.0
DEFAULT_RADIUS_M = 2_000.0
MIN_RADIUS_M = 1.0
DEFAULT_LIMIT = 20
MAX_LIMIT = 100
#: Orders of a search: the hand-set or learned score (the default), or distance alone.
SORTS = ("score", "distance")
#: The kinds of cursor, and the integer fields each carries besides d, n and t.
CURSOR_KINDS: dict[str, tuple[str, ...]] = {
    "radius": ("s",),
    "nearest": ("c",),
    "area": ("s",),
    "within": ("s",),  # a polygon's or a box's places (lookup/geo/within.py)
}


class SearchError(ValueError):
    """A search request that cannot be answered as asked (→ HTTP 400)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


# ------------------------------------------------------------------ validation


def check_point(lat: Any, lng: Any) -> tuple[float, float]:
    """Validated (lat, lng) as floats; ``SearchError`` for nonsense."""
    out = []
    for name, value, limit in (("lat", lat, 90.0), ("lng", lng, 180.0)):
        try:
            v = float(value)
        except (TypeError, ValueError):
            raise SearchError("INVALID_PARAMETER", f"{name} must be a number") from None
        if not math.isfinite(v) or not -limit <= v <= limit:
            raise SearchError("INVALID_PARAMETER", f"{name} must be within ±{limit:g}, got {value}")
        out.append(v)
    return out[0], out[1]


def check_radius(radius: Any) -> float:
    """A radius in metres, capped at 20 km; ``SearchError`` for nonsense or ≤ 0."""
    try:
        r = float(radius)
    except (TypeError, ValueError):
        raise SearchError("INVALID_PARAMETER", "radius must be a number of metres") from None
    if not math.isfinite(r) or r < MIN_RADIUS_M:
        raise SearchError("INVALID_PARAMETER", f"radius must be at least {MIN_RADIUS_M:g} m")
    return min(r, MAX_RADIUS_M)


def check_limit(limit: Any) -> int:
    """A page size from 1 to 100."""
    if isinstance(limit, bool):
        limit = None
    if isinstance(limit, str) and limit.strip().isdigit():
        limit = int(limit.strip())
    if not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise SearchError("INVALID_PARAMETER", f"limit must be an integer from 1 to {MAX_LIMIT}")
    return limit


def check_sort(sort: Any) -> str:
    """One of :data:`SORTS`."""
    if sort not in SORTS:
        raise SearchError("INVALID_PARAMETER", f"sort must be one of {', '.join(SORTS)}")
    return str(sort)


# ----------------------------------------------------------------- fingerprints


@lru_cache(maxsize=8)
def _kept_digest(model: Any) -> str:
    return str(model.digest())


def model_digest(model: Any) -> str:
    """A learned ranker's content hash (in the cursor's fingerprint), made once per model
    rather than on every request: a ranker is frozen, equal rankers hash alike."""
    try:
        return _kept_digest(model)
    except TypeError:  # not hashable: hash its content each time
        return str(model.digest())


def fingerprint(*fields: Any) -> str:
    """A short hash of what a cursor's query was (a cursor of another query is refused).

    A radius search's is ``(lat, lng, radius, filters, widen, planner)`` rounded as it
    always was — its cursors stay valid — with ``"distance"`` appended for that order.
    """
    rounded = [round(f, 9) if isinstance(f, float) else f for f in fields[:2]]
    raw = json.dumps([*rounded, *fields[2:]])
    return hashlib.sha256(raw.encode()).hexdigest()[:16]


# ----------------------------------------------------------------------- cursor

#: Signs cursors when no key is given (one process's searchers agree; a restart does not).
PROCESS_CURSOR_KEY = secrets.token_bytes(32)
_SIG_BYTES = 16


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _sign(key: bytes, payload: str) -> str:
    return _b64(hmac.digest(key, payload.encode("ascii"), "sha256")[:_SIG_BYTES])


def encode_cursor(payload: dict[str, Any], key: bytes = PROCESS_CURSOR_KEY) -> str:
    """``payload.signature``: the page position, HMAC-SHA256-signed so it cannot be forged
    (a client could otherwise widen the radius or jump the clock it pins)."""
    body = _b64(json.dumps(payload, separators=(",", ":")).encode())
    return f"{body}.{_sign(key, body)}"


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def decode_cursor(
    cursor: str, key: bytes = PROCESS_CURSOR_KEY, kind: str = "radius"
) -> dict[str, Any]:
    """The payload of a cursor of ``kind`` (:data:`CURSOR_KINDS`); ``SearchError`` if it is
    not one of ours, was altered, or belongs to another kind of search."""
    try:
        body, _, signature = cursor.partition(".")
        if not hmac.compare_digest(signature.encode("ascii"), _sign(key, body).encode("ascii")):
            raise ValueError("bad signature")
        data = json.loads(_unb64(body))
        ok = (
            isinstance(data, dict)
            and data.get("v") == 1
            and data.get("k", "radius") == kind
            and isinstance(data.get("f"), str)
            and all(_is_int(data.get(k)) for k in ("d", "n", "t", *CURSOR_KINDS[kind]))
        )
        if ok and kind == "radius":
            r = data.get("r")
            ok = (
                isinstance(r, (int, float))
                and not isinstance(r, bool)
                and MIN_RADIUS_M <= float(r) <= MAX_RADIUS_M
            )
        if ok and kind == "nearest":
            ok = data["c"] >= 0
    except (ValueError, UnicodeDecodeError, TypeError):
        ok = False
    if not ok:
        raise SearchError("INVALID_PARAMETER", "cursor is not a valid nextCursor from this API")
    return data
