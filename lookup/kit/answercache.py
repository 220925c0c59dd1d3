"""Finished answers of a hot read route, kept by raw query string while they stay true.

A public read answer (``/v1/suggest``, ``/v1/search`` of places) is a function of the
request's query string and of a little serving state: which snapshot or index version is
live, the blocklist's version, the trending set, the model, the minute. Such an answer is
already cacheable by browsers and CDNs (``Cache-Control: public``); this is the same copy
kept inside the server, so that a repeated question — a popular prefix, a map that asks
again for the same view — costs a dictionary lookup instead of a walk and an encoding.

Each entry carries the *token* of the state it was computed from. A read passes the
current token: an entry whose token differs is a miss, so a snapshot swap, a blocklist
edit or a place added is seen by the very next request, with no invalidation message to
lose. The size is bounded; when full the whole map is dropped (entries are cheap to
compute again, and a clear costs no per-request bookkeeping as an LRU's would).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any


class AnswerCache:
    """Answers by key, each valid while its token is the caller's current one."""

    __slots__ = ("entries", "_map", "hits", "misses")

    def __init__(self, entries: int) -> None:
        #: The bound (0: the cache is off: every read misses and nothing is kept).
        self.entries = entries
        self._map: dict[Hashable, tuple[Hashable, Any]] = {}
        self.hits = 0
        self.misses = 0

    def get_with(self, key: Hashable, token_of: Callable[[Any], Hashable | None]) -> Any:
        """As :meth:`get` where the current token depends on the answer (its market):
        ``token_of(value)`` is asked for it; None from it means nothing is cacheable now."""
        entry = self._map.get(key)
        if entry is not None:
            current = token_of(entry[1])
            if current is not None and current == entry[0]:
                self.hits += 1
                return entry[1]
        self.misses += 1
        return None

    def get(self, key: Hashable, token: Hashable) -> Any:
        """The value kept under ``key`` if it was computed under ``token``, else None."""
        entry = self._map.get(key)
        if entry is not None and entry[0] == token:
            self.hits += 1
            return entry[1]
        self.misses += 1
        return None

    def put(self, key: Hashable, token: Hashable, value: Any) -> None:
        """Keep ``value`` (not None) for ``key`` as computed under ``token``."""
        if not self.entries:
            return
        if len(self._map) >= self.entries:
            self._map.clear()
        self._map[key] = (token, value)

    def stats(self) -> dict[str, int]:
        """Entries held, hits and misses (for health and benchmarks)."""
        return {"entries": len(self._map), "hits": self.hits, "misses": self.misses}
