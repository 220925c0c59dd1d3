"""Old import path of what the link stores share, kept for one release: the records and
refusals are in :mod:`lookup.shortener.links`, the row mapping in
:mod:`lookup.shortener.links.sql`.
"""

from __future__ import annotations

from lookup.shortener.links import (
    UPDATABLE,
    CreateResult,
    Gone,
    IdempotencyClaim,
    IdempotencyMismatch,
    KeyTaken,
    LinkMissing,
    NotOwner,
    StoreError,
)
from lookup.shortener.links.sql import COLUMNS, row_to_link, to_db

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
