"""The places database behind one seam: the source of truth, and the write path's change stream.

The index is a derived copy shaped for one question; this store is the business database
it is derived from. Owners' adds, edits, moves, reviews and deletes land here, and each
one appends a row to ``changes`` in the same transaction (a transactional outbox). Every
serving process tails that stream into its in-memory index; a rebuild reads the whole
table. Nothing here is on the read path of a search.

This package is the seam. Its ``__init__`` is the port and imports no backend:

* :class:`PlaceStore` names what the places service, its HTTP routes and the tailer do to
  the database, in plain dicts keyed by :data:`COLUMNS`; :class:`Change` is one entry of
  the stream and :class:`PlaceError` a write that cannot be applied;
* :class:`PlaceWriter` is the bulk loader a data set is written through;
* :data:`BACKENDS`, the registry ``scheme → "module:Class"``, and the factories
  :func:`open_place_store` and :func:`open_place_writer`, which import the backend a URL
  names when they are called.

The backends: :mod:`.sqlite` (``sqlite:///DIR/places.sqlite``, the embedded default) and
:mod:`.postgres` (``postgresql://…``, one database a fleet's API processes share, with a
PostGIS ``geography`` column beside ``lat``/``lng``), both over :mod:`.sql`, which holds
the statements and operations the two engines share, written once. Owner fields are
checked by :mod:`.fields` before either engine sees them.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from lookup.geo.reviews import ReviewStore
from lookup.kit.registry import backend_for, load_backend

__all__ = [
    "BACKENDS",
    "COLUMNS",
    "EDITABLE",
    "SCHEMA_VERSION",
    "Change",
    "PlaceError",
    "PlaceStore",
    "PlaceWriter",
    "backend",
    "open_place_store",
    "open_place_writer",
    "row_dict",
]

#: Each URL scheme and the store class that serves it (its ``open_writer`` opens the bulk
#: loader), imported when a URL names the scheme.
BACKENDS: dict[str, str] = {
    "sqlite": "lookup.geo.places.sqlite:SqlitePlaceStore",
    "postgresql": "lookup.geo.places.postgres:PostgresPlaceStore",
}

#: Bumped when the table layout changes; stored in ``meta``.
SCHEMA_VERSION = "1"

#: The columns of a place row, in table order.
COLUMNS = (
    "id",
    "num",
    "name",
    "lat",
    "lng",
    "category",
    "kind",
    "geohash",
    "country",
    "timezone",
    "population",
    "tags",
    "hours",
    "price",
    "review_count",
    "review_stars",
    "generated",
    "near_city",
    "updated_at",
)

#: What owners may set on add or edit (the rest is derived or owned by other services).
EDITABLE = (
    "name",
    "lat",
    "lng",
    "category",
    "timezone",
    "tags",
    "hours",
    "price",
    "review_count",
    "review_stars",
    "country",
)


class PlaceError(ValueError):
    """A place edit that cannot be applied; ``code`` is the API error code."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True)
class Change:
    """One entry of the change stream: the full row after (upsert) or before (delete)."""

    seq: int
    place_id: str
    op: str
    before: dict[str, Any] | None
    after: dict[str, Any] | None
    at: float


def row_dict(row: Sequence[Any]) -> dict[str, Any]:
    """A place row (a tuple in :data:`COLUMNS` order, or a driver's row) as a plain dict."""
    return dict(zip(COLUMNS, tuple(row), strict=True))


@runtime_checkable
class PlaceStore(ReviewStore, Protocol):
    """The places database as the places service, its routes and the tailer use it.

    Reads: one place, the count, profile columns for a page of place numbers, the whole
    table with the change sequence it is consistent with, and the change stream.
    Writes (each appends to the change stream atomically): add, edit, move, review,
    delete; a bad edit raises :class:`PlaceError`. A store whose server is unreachable
    raises :class:`~lookup.errors.Unavailable` (HTTP 503).
    """

    def get(self, place_id: str) -> dict[str, Any] | None:
        """The place row with ``place_id``, or ``None``."""
        ...

    def count(self) -> int:
        """How many places the database holds."""
        ...

    def profiles(self, nums: list[int], columns: tuple[str, ...]) -> list[dict[str, Any]]:
        """Rows (as dicts of ``columns``) for the given place numbers."""
        ...

    def last_seq(self) -> int:
        """The sequence number of the newest change (0 when there is none)."""
        ...

    def changes_since(self, seq: int, limit: int = 10_000) -> list[Change]:
        """Changes with a sequence number above ``seq``, oldest first."""
        ...

    def snapshot(self) -> tuple[int, list[tuple[Any, ...]]]:
        """Every row (tuples in :data:`COLUMNS` order, by ``num``) and its change sequence."""
        ...

    def iter_rows(self) -> Iterator[dict[str, Any]]:
        """Every place row as a dict."""
        ...

    def rows_of_kinds(
        self, kinds: tuple[str, ...], columns: tuple[str, ...]
    ) -> list[dict[str, Any]]:
        """The rows (as dicts of ``columns``) whose ``kind`` is one of ``kinds`` — e.g. the
        cities and airports a name lookup needs, without reading every business."""
        ...

    def add(self, fields: dict[str, Any], *, place_id: str | None = None) -> dict[str, Any]:
        """Create a business; returns the stored row."""
        ...

    def edit(self, place_id: str, fields: dict[str, Any]) -> dict[str, Any]:
        """Change some fields of a place; returns the new row."""
        ...

    def move(self, place_id: str, lat: float, lng: float) -> dict[str, Any]:
        """Move a place; returns the new row."""
        ...

    def add_review(self, place_id: str, stars: int) -> dict[str, Any]:
        """Record one 1–5 star review on the place's totals; returns the new row."""
        ...

    def assign_zones(self) -> int:
        """Give the places stored without a time zone the zone of their point; how many."""
        ...

    def delete(self, place_id: str) -> dict[str, Any]:
        """Remove a place; returns the row it had."""
        ...

    def meta(self) -> dict[str, str]:
        """The database's key-value facts (the build's seed and counts, ``next_num``, …)."""
        ...

    def loaded(self) -> bool:
        """True when a data set was written in completely (``meta.complete``)."""
        ...

    def close(self) -> None:
        """Let go of the database."""
        ...


class PlaceWriter(Protocol):
    """Writes a data set into an empty places database in bulk, visible only once finished."""

    def insert(self, rows: Iterable[Sequence[Any]]) -> None:
        """Add place rows, each a tuple in :data:`COLUMNS` order."""
        ...

    def insert_dicts(self, rows: Iterable[Mapping[str, Any]]) -> None:
        """Add place rows given as dicts keyed by :data:`COLUMNS` (a missing key is NULL)."""
        ...

    def finish(self, meta: Mapping[str, str]) -> None:
        """Store ``meta``, mark the database complete and make the rows visible."""
        ...

    def close(self) -> None:
        """Let go (an unfinished load leaves nothing visible)."""
        ...

    def __enter__(self) -> PlaceWriter: ...

    def __exit__(self, *exc: object) -> None: ...


def backend(scheme: str) -> Any:
    """The store class registered for ``scheme`` (imported now); ValueError if none."""
    return load_backend(BACKENDS, scheme)


def open_place_store(
    url: str | os.PathLike[str], *, clock: Callable[[], float] = time.time
) -> PlaceStore:
    """The places store ``url`` names: ``sqlite:///path`` (or a bare path) to an existing
    file, or ``postgresql://…`` (its tables are made on open).

    ``clock`` stamps ``updated_at`` and change times. An unknown scheme raises
    ValueError naming the accepted ones.
    """
    found, parsed = backend_for(BACKENDS, str(url))
    store: PlaceStore = found.from_url(parsed, clock=clock)
    return store


def open_place_writer(url: str | os.PathLike[str]) -> PlaceWriter:
    """The bulk loader of the places database ``url`` names (a new SQLite file, or an
    empty PostgreSQL database)."""
    found, parsed = backend_for(BACKENDS, str(url))
    writer: PlaceWriter = found.open_writer(parsed)
    return writer
