"""Personal recent searches (issue 27 item 9, seed 000's personalisation curveball).

Kept out of the shared ``/v1/suggest`` answer, which stays one cacheable body per prefix
and market for everyone: a device asks ``GET /v1/suggest/recent`` separately, with its
own signed token (:mod:`.tokens`), and the client puts what matches at the top of the
list. ``POST /v1/searches`` carrying that token adds the search to the device's list.

This package is the seam. Its ``__init__`` is the port and imports no backend:
:class:`RecentStore`, :data:`BACKENDS` (``scheme → "module:Class"``) and
:func:`open_recent_store` (setting ``typeahead_recent``). The backends:

* :mod:`.sqlite` — ``sqlite:///…/recent.db``, the embedded default
  ``<data-dir>/typeahead/recent.db``;
* :mod:`.postgres` — ``postgresql://…``: every API process of a fleet reads one list.

There is no Redis backend: typeahead keeps no state in Redis today (its shared state,
the hot blocklist, is in PostgreSQL), so a fleet uses PostgreSQL here too.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import NamedTuple, Protocol, runtime_checkable

from lookup.kit.engines.storeurl import sqlite_url
from lookup.kit.registry import load_backend, open_backend

__all__ = [
    "BACKENDS",
    "RecentSearch",
    "RecentStore",
    "backend",
    "default_path",
    "open_recent_store",
]

#: Each URL scheme and the class that serves it, imported when a URL names the scheme.
BACKENDS: dict[str, str] = {
    "sqlite": "lookup.typeahead.recent.sqlite:SqliteRecentStore",
    "postgresql": "lookup.typeahead.recent.postgres:PostgresRecentStore",
}


class RecentSearch(NamedTuple):
    """One of a device's recent searches: the normalised query, when it was last made."""

    query: str
    at: float


@runtime_checkable
class RecentStore(Protocol):
    """Per device and market, the latest searches, newest first, at most ``keep`` each."""

    def describe(self) -> str:
        """Where the lists live (a file's URL, a server without its credentials)."""
        ...

    def add(self, user: str, market: str, query: str, at: float, keep: int) -> None:
        """Record ``query`` as ``user``'s latest in ``market`` (again: moved to the top),
        then drop that list's oldest beyond ``keep``."""
        ...

    def recent(self, user: str, market: str, limit: int) -> list[RecentSearch]:
        """``user``'s latest ``limit`` searches in ``market``, newest first."""
        ...

    def clear(self, user: str) -> int:
        """Forget every search of ``user`` (all markets); how many were removed."""
        ...

    def close(self) -> None:
        """Let go of connections (the next call reopens)."""
        ...


def backend(scheme: str) -> type:
    """The class registered for ``scheme``, imported now (ValueError naming the others)."""
    found: type = load_backend(BACKENDS, scheme)
    return found


def default_path(data_dir: str | os.PathLike[str]) -> Path:
    """The embedded store's file: ``<data-dir>/typeahead/recent.db``."""
    return Path(data_dir) / "typeahead" / "recent.db"


def open_recent_store(url: str, data_dir: str | os.PathLike[str] | None = None) -> RecentStore:
    """The store ``url`` names (``sqlite:///…`` or ``postgresql://…``); an empty ``url``
    is the embedded file under ``data_dir``. ValueError for anything else."""
    text = str(url).strip()
    if not text:
        if data_dir is None:
            raise ValueError("no recent-search store: give a URL or a data directory")
        text = sqlite_url(default_path(data_dir))
    store: RecentStore = open_backend(BACKENDS, text)
    return store
