"""The click log: an append-only stream of click records with offsets.

This package is the seam. Its ``__init__`` is the port — what the shipper writes to and
the aggregator reads from — and imports no backend:

* :class:`ClickLog`, the operations, and :data:`LogRecord`, what a record is;
* :data:`BACKENDS`, the registry ``scheme → "module:Class"``, and :func:`open_click_log`,
  which imports the backend a URL names when it is called.

A record is a :class:`~lookup.shortener.analytics.events.RawClick` — what our shipper
writes: headers as they came, the IP already hashed — or a
:class:`~lookup.shortener.analytics.events.ClickEvent`, an already enriched click
(what an edge that parses user agents itself would send); the aggregator enriches the
first kind and folds both.

The interface is the shape of a real stream (Kafka, Redis Streams): producers
``append`` batches; a consumer ``read`` s from an offset and remembers where it got
to; old entries are ``trim`` med. Delivery is at least once — a producer that
retries after a lost acknowledgement writes the same events again — so consumers
de-duplicate by event id. Offsets never decrease, and ``read`` returns whole offset
groups: every event at an offset it returns is returned (a batch shares one offset,
as a Kafka record batch does).

The backends: :mod:`.sqlite` (:class:`~.sqlite.SqliteClickLog`, the embedded default:
one row per appended batch in its own SQLite file), :mod:`.memory`
(:class:`~.memory.MemoryClickLog`, the same contract in memory, one offset per event, for
notebooks and tests) and :mod:`.redis` (:class:`~.redis.RedisClickLog`, Redis Streams
with a consumer group, shared by a fleet). Adding one is one file plus one registry line:
a class with ``from_url`` that implements :class:`ClickLog`, its scheme in
:data:`BACKENDS`, and in ``tests/contracts/test_click_log_contract.py`` how to make an
empty one; the contract then runs against it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, TypeAlias, cast, runtime_checkable

from lookup.kit.registry import Backend as SeamBackend
from lookup.kit.registry import load_backend, open_backend
from lookup.shortener.analytics.batches import LogRecord

__all__ = ["BACKENDS", "Backend", "ClickLog", "LogRecord", "backend", "open_click_log"]

#: Each URL scheme and the class that serves it, imported when a URL names the scheme.
BACKENDS: dict[str, str] = {
    "sqlite": "lookup.shortener.analytics.clicklog.sqlite:SqliteClickLog",
    "memory": "lookup.shortener.analytics.clicklog.memory:MemoryClickLog",
    "redis": "lookup.shortener.analytics.clicklog.redis:RedisClickLog",
}


@runtime_checkable
class ClickLog(Protocol):
    """What the shipper writes to and the aggregator reads from."""

    def append(self, events: Sequence[LogRecord] | Sequence[tuple[Any, ...]]) -> None:
        """Add a batch durably (all or nothing); may raise, and the caller retries.

        Records may come as plain tuples in :class:`RawClick` or :class:`ClickEvent`
        field order (the shipper's form); they are read back as those named tuples."""

    def read(self, after: int, limit: int) -> list[tuple[int, LogRecord]]:
        """Entries with offset > ``after`` in offset order: whole offset groups, stopping
        once at least ``limit`` events are collected."""

    def trim(self, upto: int, before_ts: float) -> int:
        """Drop entries with offset <= ``upto`` older than ``before_ts``; returns how many."""

    def end_offset(self) -> int:
        """The offset of the newest entry (0 when empty)."""

    def backlog(self, after: int) -> int:
        """How many events have an offset > ``after``."""


#: What :data:`BACKENDS` names: a class whose ``from_url(url, **options)`` opens a
#: :class:`ClickLog`.
Backend: TypeAlias = SeamBackend[ClickLog]


def backend(scheme: str) -> Backend:
    """The class registered for ``scheme`` in :data:`BACKENDS`, imported now (ValueError
    naming the registered schemes for another)."""
    return cast(Backend, load_backend(BACKENDS, scheme))


def open_click_log(url: str, **options: Any) -> ClickLog:
    """The click log a URL names: ``sqlite:///path/clicklog.sqlite3``, ``memory:`` or
    ``redis://host:port/db[?stream=S&group=G&maxlen=N]`` (Redis Streams with a consumer
    group: :class:`~lookup.shortener.analytics.clicklog.redis.RedisClickLog`).

    ``options`` go to the SQLite backend (``synchronous``); the others take none (and
    ignore them). An unknown scheme raises ValueError naming the registered ones.
    """
    return cast(ClickLog, open_backend(BACKENDS, url, **options))
