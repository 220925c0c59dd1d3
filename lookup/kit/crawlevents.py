"""The crawl event log's schema, declared once: the crawler writes it, search reads it.

``events.jsonl`` is the one contract between the crawler and the search engine (search
reads the crawler's files, never its code), so both sides check every event against
:data:`EVENT_FIELDS`: the crawler before it writes a line (a bad event is a crawler bug),
the indexer and the real-time tier as they read one (a bad line is skipped and counted).

* ``PageFetched`` — a new or changed page: where its raw answer is (``storageKey``, a
  WARC record), its text's hash (``contentHash``, ``sha256:`` of the whitespace-normalised
  main text, so an identical re-fetch is recognised), ``simhash``, how many links it had
  (``outLinks``, a count: search takes the links themselves from the stored page);
  ``rendered`` when its scripts built it and the stored copy is the DOM a browser made.
* ``PageRemoved`` — a page that was indexed and must leave the index, with its
  ``reason``: ``gone`` (404/410/451), ``noindex``, ``soft-404``, ``duplicate`` (of
  ``duplicateOf``) or ``moved`` (a permanent redirect to ``location``).

:func:`json_schema` renders the same declaration as a JSON Schema document for tools.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

__all__ = [
    "EVENT_FIELDS",
    "REMOVAL_REASONS",
    "SERVER_NOT_MODIFIED",
    "InvalidEvent",
    "check_event",
    "event_errors",
    "json_schema",
]

#: The WARC revisit profile of a 304 to a conditional recrawl (WARC 1.0 §6.7.2): the
#: crawler writes it, the cached view skips it (the URL's last stored copy still stands).
SERVER_NOT_MODIFIED = "http://netpreserve.org/warc/1.0/revisit/server-not-modified"

#: Why a page leaves the index (``PageRemoved.reason``).
REMOVAL_REASONS = ("gone", "noindex", "soft-404", "duplicate", "moved")

_SHA256 = re.compile(r"^sha256:[0-9a-f]{64}$")
_HEX64 = re.compile(r"^0x[0-9a-f]{1,16}$")
_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$")

#: Per event type: field → (kind, required). Kinds: ``str`` (non-empty), ``time`` (ISO
#: 8601 UTC), ``sha256``, ``simhash``, ``count`` (int ≥ 0), ``status`` (an HTTP status),
#: ``status?`` (or null), ``bool``, ``text`` (any string), ``reason``, ``200``.
EVENT_FIELDS: dict[str, dict[str, tuple[str, bool]]] = {
    "PageFetched": {
        "url": ("str", True),
        "urlHash": ("str", True),
        "fetchedAt": ("time", True),
        "httpStatus": ("200", True),
        "contentHash": ("sha256", True),
        "simhash": ("simhash", True),
        "storageKey": ("str", True),
        "outLinks": ("count", True),
        "changed": ("bool", True),
        "title": ("text", True),
        "rendered": ("bool", False),  # the page was rendered in a browser (its DOM stored)
    },
    "PageRemoved": {
        "url": ("str", True),
        "urlHash": ("str", True),
        "fetchedAt": ("time", True),
        "httpStatus": ("status?", True),
        "reason": ("reason", True),
        "duplicateOf": ("str", False),
        "location": ("str", False),
    },
}


class InvalidEvent(ValueError):
    """An event that does not follow the schema."""


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _valid_time(value: Any) -> bool:
    if not isinstance(value, str) or not _TIME.match(value):
        return False
    try:
        datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return False
    return True


_CHECKS = {
    "str": lambda v: isinstance(v, str) and bool(v),
    "text": lambda v: isinstance(v, str),
    "time": _valid_time,
    "sha256": lambda v: isinstance(v, str) and bool(_SHA256.match(v)),
    "simhash": lambda v: isinstance(v, str) and bool(_HEX64.match(v)),
    "count": lambda v: _is_int(v) and v >= 0,
    "status": lambda v: _is_int(v) and 100 <= v <= 599,
    "status?": lambda v: v is None or (_is_int(v) and 100 <= v <= 599),
    "bool": lambda v: isinstance(v, bool),
    "reason": lambda v: v in REMOVAL_REASONS,
    "200": lambda v: v == 200 and _is_int(v),
}


def event_errors(event: Any) -> list[str]:
    """What is wrong with ``event`` (empty: it follows the schema)."""
    if not isinstance(event, dict):
        return ["an event is a JSON object"]
    kind = event.get("type")
    fields = EVENT_FIELDS.get(kind) if isinstance(kind, str) else None
    if fields is None:
        return [f"type must be one of {sorted(EVENT_FIELDS)}, not {kind!r}"]
    errors = []
    for name, (check, required) in fields.items():
        if name not in event:
            if required:
                errors.append(f"{kind}: {name} is missing")
            continue
        if not _CHECKS[check](event[name]):
            errors.append(f"{kind}: {name}={event[name]!r} is not a valid {check}")
    extra = set(event) - set(fields) - {"type"}
    if extra:
        errors.append(f"{kind}: unknown field(s) {sorted(extra)}")
    return errors


def check_event(event: Any) -> None:
    """Raise :class:`InvalidEvent` unless ``event`` follows the schema."""
    errors = event_errors(event)
    if errors:
        raise InvalidEvent("; ".join(errors))


_JSON_TYPES: dict[str, dict[str, Any]] = {
    "str": {"type": "string", "minLength": 1},
    "text": {"type": "string"},
    "time": {"type": "string", "pattern": _TIME.pattern},
    "sha256": {"type": "string", "pattern": _SHA256.pattern},
    "simhash": {"type": "string", "pattern": _HEX64.pattern},
    "count": {"type": "integer", "minimum": 0},
    "status": {"type": "integer", "minimum": 100, "maximum": 599},
    "status?": {"type": ["integer", "null"], "minimum": 100, "maximum": 599},
    "bool": {"type": "boolean"},
    "reason": {"enum": list(REMOVAL_REASONS)},
    "200": {"const": 200},
}


def json_schema() -> dict[str, Any]:
    """The schema as a JSON Schema (draft 2020-12) document."""
    variants = []
    for kind, fields in EVENT_FIELDS.items():
        variants.append(
            {
                "type": "object",
                "properties": {
                    "type": {"const": kind},
                    **{name: _JSON_TYPES[check] for name, (check, _) in fields.items()},
                },
                "required": ["type", *[n for n, (_, req) in fields.items() if req]],
                "additionalProperties": False,
            }
        )
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "Lookup Workbench crawl event",
        "oneOf": variants,
    }
