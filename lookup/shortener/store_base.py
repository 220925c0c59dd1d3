"""What every link store shares: its refusals, the create's claim and result, and the
mapping between a :class:`~lookup.shortener.model.Link` and a row of the ``links`` table.

:mod:`lookup.shortener.store` (the protocol, SQLite and the factory) and
:mod:`lookup.shortener.store_pg` (PostgreSQL) both build on it; callers import these names
from :mod:`lookup.shortener.store`, which re-exports them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from lookup.shortener.model import Link, Status

__all__ = [
    "COLUMNS",
    "UPDATABLE",
    "CreateResult",
    "Gone",
    "IdempotencyClaim",
    "IdempotencyMismatch",
    "KeyTaken",
    "LinkMissing",
    "NotOwner",
    "StoreError",
    "row_to_link",
    "to_db",
]

#: The ``links`` columns in the order :func:`row_to_link` reads them.
COLUMNS = (
    "key, id, alias, long_url, owner, created_at, updated_at, expires_at, max_clicks, clicks, "
    "status, redirect_type, max_age, password_hash, tags, scan_verdict, status_reason, "
    "scan_reasons"
)
#: Columns a caller may change through :meth:`LinkStore.update`.
UPDATABLE = frozenset(
    {
        "long_url",
        "expires_at",
        "max_clicks",
        "redirect_type",
        "max_age",
        "password_hash",
        "tags",
        "status",
        "status_reason",
        "scan_verdict",
        "scan_reasons",
    }
)


class StoreError(Exception):
    """Base of the store's refusals."""


class KeyTaken(StoreError):
    """The key is already claimed (by a link or a tombstone)."""


class IdempotencyMismatch(StoreError):
    """The Idempotency-Key was already used with a different request body."""


class LinkMissing(StoreError):
    """No link has this key."""


class NotOwner(StoreError):
    """The caller does not own the link."""


class Gone(StoreError):
    """The link is a tombstone; it can no longer change."""


@dataclass(frozen=True)
class IdempotencyClaim:
    """A create's Idempotency-Key, scoped to its owner, with a digest of the request body."""

    scope: str
    key: str
    body_hash: str


@dataclass(frozen=True)
class CreateResult:
    """Either the new link and its response, or a replay of the original response."""

    response: dict[str, Any]
    link: Link | None
    replayed: bool


def row_to_link(row: tuple[Any, ...]) -> Link:
    """The link a row of :data:`COLUMNS` holds (tags and scan reasons as JSON text)."""
    return Link(
        key=row[0],
        id=row[1],
        alias=bool(row[2]),
        long_url=row[3],
        owner=row[4],
        created_at=row[5],
        updated_at=row[6],
        expires_at=row[7],
        max_clicks=row[8],
        clicks=row[9],
        status=Status(row[10]),
        redirect_type=row[11],
        max_age=row[12],
        password_hash=row[13],
        tags=tuple(json.loads(row[14] or "[]")),
        scan_verdict=row[15],
        status_reason=row[16],
        scan_reasons=tuple(json.loads(row[17] or "[]")),
    )


def to_db(column: str, value: Any) -> Any:
    """The value to store in ``column`` (JSON text for tuples, the name of a status)."""
    if column == "tags" or column == "scan_reasons":
        return json.dumps(list(value))
    if column == "status" and isinstance(value, Status):
        return value.value
    return value
