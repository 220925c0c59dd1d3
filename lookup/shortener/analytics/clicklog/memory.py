"""The click log in memory (``memory:``): the same contract as the others, one offset per
event, for notebooks and tests; it lives and dies with its process.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from lookup.kit.engines.storeurl import StoreUrl
from lookup.shortener.analytics.batches import LogRecord
from lookup.shortener.analytics.events import record_from_row

__all__ = ["MemoryClickLog"]


class MemoryClickLog:
    """The same contract in memory (one offset per event, counting from 1)."""

    def __init__(self) -> None:
        self._entries: list[tuple[int, LogRecord]] = []
        self._next = 1
        self._lock = threading.Lock()

    @classmethod
    def from_url(cls, url: StoreUrl, **options: Any) -> MemoryClickLog:
        """A new, empty log for ``memory:`` (it takes no options; any are ignored)."""
        return cls()

    def append(self, events: Sequence[LogRecord] | Sequence[tuple[Any, ...]]) -> None:
        records = [record_from_row(event) for event in events]
        with self._lock:
            for record in records:
                self._entries.append((self._next, record))
                self._next += 1

    def read(self, after: int, limit: int) -> list[tuple[int, LogRecord]]:
        with self._lock:
            return [entry for entry in self._entries if entry[0] > after][:limit]

    def trim(self, upto: int, before_ts: float) -> int:
        with self._lock:
            kept = [e for e in self._entries if not (e[0] <= upto and e[1][2] < before_ts)]
            dropped = len(self._entries) - len(kept)
            self._entries = kept
            return dropped

    def end_offset(self) -> int:
        with self._lock:
            return self._next - 1

    def backlog(self, after: int) -> int:
        with self._lock:
            return sum(1 for offset, _ in self._entries if offset > after)

    def events(self) -> list[LogRecord]:
        """Every record kept, in order (for tests and notebooks)."""
        with self._lock:
            return [e for _, e in self._entries]
