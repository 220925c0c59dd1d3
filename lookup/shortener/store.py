"""Old import path of the link store, kept for one release: use :mod:`lookup.shortener.links`.

The port (:class:`LinkStore`, its records and refusals, :func:`open_link_store`) is now
:mod:`lookup.shortener.links`; the SQLite backend is
:class:`lookup.shortener.links.sqlite.SqliteLinkStore`.
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
    LinkStore,
    NotOwner,
    StoreError,
    open_link_store,
)
from lookup.shortener.links.sqlite import SqliteLinkStore

__all__ = [
    "UPDATABLE",
    "CreateResult",
    "Gone",
    "IdempotencyClaim",
    "IdempotencyMismatch",
    "KeyTaken",
    "LinkMissing",
    "LinkStore",
    "NotOwner",
    "SqliteLinkStore",
    "StoreError",
    "open_link_store",
]
