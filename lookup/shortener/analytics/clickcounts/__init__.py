"""The click counts store: what the aggregator folds the click log into, and reads back.

This package is the seam. Its ``__init__`` is the port — what
:class:`~lookup.shortener.analytics.aggregate.ClickAggregator` uses — and imports no
backend:

* :class:`ClickCounts`, the operations: a consumer's committed offset, and one **fold** —
  a unit of work (:class:`CountsBatch`) that checks and records the event ids already
  counted, adds to the counters, updates the visitor sketches and moves the offset, all
  committed together or not at all (so a crash replays a batch and the de-duplication
  makes it harmless); then the reads behind the stats endpoint and the scanner's hot
  keys, and housekeeping;
* :data:`CountRow`, one counter increment;
* :data:`BACKENDS`, the registry ``scheme → "module:Class"``, and
  :func:`open_click_counts`, which imports the backend a URL names when it is called.

The backends: :mod:`.sqlite` (:class:`~.sqlite.SqliteClickCounts`, the embedded default,
``clickstats.sqlite3``) and :mod:`.postgres` (:class:`~.postgres.PostgresClickCounts`,
shared by a fleet), both thin over :mod:`.sql`, which holds the statements of both
dialects, written once, and the operations in :class:`~.sql.SqlClickCounts`. Adding a
backend is one file plus one registry line, and in
``tests/contracts/test_click_counts_contract.py`` how to make an empty one.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol, TypeAlias, cast, runtime_checkable

from lookup.kit.registry import Backend as SeamBackend
from lookup.kit.registry import load_backend, open_backend

__all__ = [
    "BACKENDS",
    "Backend",
    "ClickCounts",
    "CountRow",
    "CountsBatch",
    "backend",
    "open_click_counts",
]

#: Each URL scheme and the class that serves it, imported when a URL names the scheme.
BACKENDS: dict[str, str] = {
    "sqlite": "lookup.shortener.analytics.clickcounts.sqlite:SqliteClickCounts",
    "postgresql": "lookup.shortener.analytics.clickcounts.postgres:PostgresClickCounts",
}

#: One counter increment: ``(key, grain, bucket, dim, value, n)``.
CountRow = tuple[str, str, int, str, str, int]


class CountsBatch(Protocol):
    """One fold's unit of work: everything it does commits together (see the module doc)."""

    def offset(self) -> int:
        """The consumer's committed offset, read inside the unit of work."""
        ...

    def seen_ranges(self, producer: str) -> list[tuple[int, int]]:
        """The ``(lo, hi)`` sequence ranges of ``producer`` already counted, by ``lo``."""
        ...

    def replace_ranges(self, producer: str, ranges: list[tuple[int, int]], ts: float) -> None:
        """Set ``producer``'s counted ranges (stamped ``ts`` for the dedup window)."""
        ...

    def seen_event_ids(self, ids: list[str]) -> set[str]:
        """Which of ``ids`` (foreign event ids) were counted before."""
        ...

    def add_seen_events(self, events: list[tuple[str, float]]) -> None:
        """Remember ``(event_id, ts)`` pairs as counted."""
        ...

    def add_counts(self, rows: Iterable[CountRow]) -> None:
        """Add each row's ``n`` to its counter."""
        ...

    def sketch(self, key: str, day: int) -> bytes | None:
        """The HyperLogLog registers of ``key`` on ``day`` (None before the first visitor)."""
        ...

    def put_sketch(self, key: str, day: int, registers: bytes) -> None:
        """Store the registers of ``key`` on ``day``."""
        ...

    def advance(self, offset: int, counted: int, duplicates: int, last_ts: float | None) -> None:
        """Move the consumer past ``offset``, adding to its counted/duplicate totals."""
        ...


@runtime_checkable
class ClickCounts(Protocol):
    """Where the aggregator keeps counters, sketches, seen ids and its offset."""

    def consumer_state(self, name: str) -> dict[str, Any]:
        """``offset``, ``counted``, ``duplicates``, ``lastClickTs`` of consumer ``name``."""
        ...

    def fold(self, name: str) -> Any:
        """A context manager yielding a :class:`CountsBatch` for consumer ``name``: it
        takes the write lock first (so several aggregators may share the store), commits
        on a clean exit and rolls back on an exception."""
        ...

    def counts(
        self, key: str, grain: str, first: int, last: int
    ) -> list[tuple[int, str, str, int]]:
        """``(bucket, dim, value, n)`` of ``key`` at ``grain`` with ``first <= bucket < last``."""
        ...

    def sketches(
        self, key: str, first_day: int | None = None, end: float | None = None
    ) -> list[bytes]:
        """The day sketches of ``key``: all of them, or those with ``first_day <= day < end``."""
        ...

    def clicks_since(self, keys: list[str], hour: int) -> dict[str, int]:
        """All clicks per key of ``keys`` in hour buckets from ``hour`` on (unclicked: absent)."""
        ...

    def link_totals(self, keys: list[str]) -> dict[str, tuple[int, int, int]]:
        """``(all clicks, human clicks, newest minute or hour bucket)`` of each clicked key
        of ``keys`` over all time (unclicked keys absent): the list's click counts."""
        ...

    def top_keys(self, hour: int, limit: int) -> list[tuple[str, int]]:
        """The most clicked keys in hour buckets from ``hour`` on, most first (ties by key)."""
        ...

    def forget(self, seen_before: float, minutes_before: float) -> None:
        """Drop seen ids stamped before ``seen_before``, minute rows before ``minutes_before``."""
        ...

    def close(self) -> None:
        """Release connections; a later call reopens them."""
        ...


#: What :data:`BACKENDS` names: a class whose ``from_url(url, **options)`` opens a
#: :class:`ClickCounts`.
Backend: TypeAlias = SeamBackend[ClickCounts]


def backend(scheme: str) -> Backend:
    """The class registered for ``scheme`` in :data:`BACKENDS`, imported now (ValueError
    naming the registered schemes for another)."""
    return cast(Backend, load_backend(BACKENDS, scheme))


def open_click_counts(url: str, **options: Any) -> ClickCounts:
    """The click counts store a URL names: ``sqlite:///path/clickstats.sqlite3``, or
    ``postgresql://…`` (:class:`~lookup.shortener.analytics.clickcounts.postgres.
    PostgresClickCounts`, shared by a fleet; ``options``: ``consumer_scope``,
    ``pool_size``, ``pool_timeout_s``). An unknown scheme raises ValueError naming the
    registered ones."""
    return cast(ClickCounts, open_backend(BACKENDS, url, **options))
