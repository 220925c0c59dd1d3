"""Write path, step 3, and the serve-time safety check: what may never be suggested.

Safety is enforced in three places (build, serve, trending) with the same two tools:

* :class:`TermBlocklist` — phrases matched at word boundaries (``"fake aadhaar"`` blocks
  ``"buy fake aadhaar card"`` but not ``"fake aadhaarx"``); a set lookup per word
  n-gram for one query, one regex pass over the whole string table for a snapshot;
* :func:`looks_private` — personal data (phone numbers, e-mail addresses, Aadhaar
  numbers) that must never spread from one person's searches to everyone's box.

Plus the distinct-user threshold, which removes typos and one person's private query.
"""

from __future__ import annotations

import logging
import os
import re
import threading
from bisect import bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from lookup.typeahead.blocklist import HotTermSource, clean_term
from lookup.typeahead.blocklist.file import FileHotTermSource
from lookup.typeahead.normalize import normalize_query

if TYPE_CHECKING:
    import numpy as np

log = logging.getLogger("lookup.typeahead")

#: Phrases blocked by policy in every build and at serve time (the hot list adds to these).
DEFAULT_BLOCKLIST: tuple[str, ...] = (
    "make a bomb",
    "fake aadhaar",
    "fake currency",
    "hack whatsapp",
    "pirated movies",
    "नकली नोट",
    "nakli note",
)

# Normalised queries hold single spaces only, so separators are "[ -]" (never a newline:
# the same pattern scans a whole newline-joined string table in one pass).
_PRIVATE = re.compile(
    r"(?<!\d)(?:\+?91[ -]?)?[6-9]\d{4}[ -]?\d{5}(?!\d)"  # Indian mobile number
    r"|(?<!\d)\d{4}[ -]?\d{4}[ -]?\d{4}(?!\d)"  # Aadhaar-like 12 digits
    r"|[\w.+-]+@[\w-]+\.[\w.]+"  # e-mail address
)


def looks_private(query: str) -> bool:
    """True if the query holds a phone number, an Aadhaar-like number or an e-mail address."""
    return _PRIVATE.search(" ".join(query.split())) is not None


def private_ids(joined: str, offsets: Sequence[int]) -> set[int]:
    """Ids of private-looking strings, given ``"\\n".join(strings)`` and each string's start."""
    return {bisect_right(offsets, m.start()) - 1 for m in _PRIVATE.finditer(joined)}


class TermBlocklist:
    """A set of normalised phrases that block any query containing them as whole words."""

    def __init__(self, terms: Iterable[str] = ()) -> None:
        self._terms: set[str] = set()
        self._max_words = 0
        for t in terms:
            self.add(t)

    @staticmethod
    def clean(term: str) -> str:
        """The normalised form of a term, or ``ValueError`` if it cannot be a term."""
        return clean_term(term)

    def add(self, term: str) -> str:
        """Add a term (normalised); returns the stored form."""
        t = self.clean(term)
        self._terms.add(t)
        self._max_words = max(self._max_words, t.count(" ") + 1)
        return t

    def discard(self, term: str) -> bool:
        """Remove a term; True if it was there."""
        t = normalize_query(term)
        if t not in self._terms:
            return False
        self._terms.discard(t)
        self._max_words = max((x.count(" ") + 1 for x in self._terms), default=0)
        return True

    @property
    def terms(self) -> list[str]:
        """The phrases, sorted."""
        return sorted(self._terms)

    def __len__(self) -> int:
        return len(self._terms)

    def __contains__(self, term: object) -> bool:
        return isinstance(term, str) and normalize_query(term) in self._terms

    def __or__(self, other: TermBlocklist) -> TermBlocklist:
        return TermBlocklist(self._terms | other._terms)

    def blocks(self, query: str) -> bool:
        """True if a phrase occurs in the (normalised) query at word boundaries."""
        if not self._terms:
            return False
        words = query.split(" ")
        terms = self._terms
        for n in range(1, min(self._max_words, len(words)) + 1):
            for i in range(len(words) - n + 1):
                if " ".join(words[i : i + n]) in terms:
                    return True
        return False

    def pattern(self) -> re.Pattern[str] | None:
        """One regex finding any phrase at word boundaries in newline-joined strings."""
        if not self._terms:
            return None
        alternatives = "|".join(re.escape(t) for t in sorted(self._terms, key=len, reverse=True))
        return re.compile(rf"(?<![^ \n])(?:{alternatives})(?![^ \n])")

    def blocked_ids(self, joined: str, offsets: Sequence[int]) -> set[int]:
        """Ids of the strings blocked, given ``"\\n".join(strings)`` and each string's start.

        ``offsets[i]`` is where string ``i`` starts in ``joined``; one regex pass finds
        every hit, so checking a whole snapshot costs milliseconds, not a loop per string.
        """
        pat = self.pattern()
        if pat is None:
            return set()
        return {bisect_right(offsets, m.start()) - 1 for m in pat.finditer(joined)}


class HotBlocklist:
    """The serve-time blocklist: the built-in phrases plus the hot ones, effective at once.

    The hot phrases live in a :class:`~lookup.typeahead.blocklist.HotTermSource` (a file
    by default — one phrase per line, ``#`` comments — or a table a fleet shares); this
    object is its cache. An edit goes to the source, which applies it to what is stored
    now, and this process re-reads at once; :meth:`refresh` (the poller's, every second)
    re-reads when the source's stamp moved, so edits through other processes and by hand
    take effect within the poll interval. :attr:`version` increases on every change so
    that holders of derived data (a snapshot's blocked ids) recompute. A source that
    cannot be read keeps the last list (logged, counted in ``read_errors``), never an
    empty one. Without a source (``path=None``) the hot phrases live in memory only.
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        builtin: Iterable[str] = DEFAULT_BLOCKLIST,
        *,
        source: HotTermSource | None = None,
    ) -> None:
        if source is None and path is not None:
            source = FileHotTermSource(path)
        self.source = source
        #: The file people may edit by hand (None when the list is not a file).
        self.path = source.path if isinstance(source, FileHotTermSource) else None
        self.builtin = TermBlocklist(builtin)
        self._hot = TermBlocklist()
        self._lock = threading.Lock()
        self._stamp: object = object()  # never equal to a real stamp: the first read loads
        self._failing = False
        self.read_errors = 0
        #: (version, effective list), replaced as one: a reader on another thread never
        #: pairs a new version with an old list (a snapshot caches blocked ids per version).
        self._current: tuple[int, TermBlocklist] = (0, self.builtin)
        self.refresh()

    @property
    def effective(self) -> TermBlocklist:
        """Built-in plus hot phrases (an immutable snapshot; replaced on change)."""
        return self._current[1]

    @property
    def version(self) -> int:
        """Increases on every change of the effective list."""
        return self._current[0]

    def current(self) -> tuple[int, TermBlocklist]:
        """``(version, effective)`` read together (see :attr:`version`)."""
        return self._current

    @property
    def hot_terms(self) -> list[str]:
        """The phrases added at run time."""
        return self._hot.terms

    def blocks(self, query: str) -> bool:
        """True if the effective blocklist blocks ``query``."""
        return self._current[1].blocks(query)

    def describe(self) -> str:
        """Where the hot phrases live (a file's URL, a server without credentials)."""
        return "memory" if self.source is None else self.source.describe()

    def add(self, terms: Iterable[str]) -> list[str]:
        """Add phrases (normalised) to the source, take them up here at once, and return
        what was stored; ``ValueError`` for a phrase that cannot be one."""
        cleaned = [TermBlocklist.clean(t) for t in terms]
        if self.source is None:
            with self._lock:
                self._set(self._hot | TermBlocklist(cleaned))
            return cleaned
        self.source.edit(cleaned, [])
        self.refresh(force=True)
        return cleaned

    def remove(self, term: str) -> bool:
        """Remove a hot phrase; ``ValueError`` for a built-in one. True if it was there."""
        t = normalize_query(term)
        if self.source is None:
            with self._lock:
                hot = TermBlocklist(self._hot.terms)
                found = hot.discard(t)
                if found:
                    self._set(hot)
        else:
            found = bool(self.source.edit([], [t])[1])
            if found:
                self.refresh(force=True)
        if not found and t in self.builtin:
            raise ValueError(
                f"{t!r} is on the built-in blocklist and cannot be removed at run time"
            )
        return found

    def _set(self, hot: TermBlocklist) -> bool:
        """Serve ``hot`` (the lock held); True if it differs from what was served."""
        if hot.terms == self._hot.terms:
            return False
        self._hot = hot
        self._current = (self._current[0] + 1, self.builtin | hot)
        return True

    def refresh(self, force: bool = False) -> bool:
        """Re-read the source if its stamp moved (always with ``force``); True if the list
        changed. A source that cannot be read keeps the last list (logged once per outage)."""
        if self.source is None:
            return False
        with self._lock:
            try:
                stamp = self.source.stamp()  # before the read: a later edit moves it again
                if stamp == self._stamp and not force:
                    return False
                terms = self.source.terms()
            except Exception as exc:
                self.read_errors += 1
                if not self._failing:
                    log.warning("the hot blocklist cannot be read (%s); keeping the last one", exc)
                self._failing = True
                return False
            if self._failing:
                log.warning("the hot blocklist can be read again (%s)", self.describe())
                self._failing = False
            self._stamp = stamp
            return self._set(TermBlocklist(terms))

    def close(self) -> None:
        """Let go of the source's connections (the next read reopens)."""
        if self.source is not None:
            self.source.close()


@dataclass(frozen=True)
class FilterConfig:
    """Thresholds of the build-time filter."""

    min_users: int = 5
    drop_private: bool = True
    min_typo_users: int = 2


@dataclass
class FilterReport:
    """How many queries each rule removed."""

    considered: int = 0
    kept: int = 0
    too_few_users: int = 0
    blocked: int = 0
    private: int = 0
    no_score: int = 0


def select_queries(
    queries: Sequence[str],
    scores: Sequence[float] | np.ndarray,
    users: Sequence[int] | np.ndarray,
    blocklist: TermBlocklist,
    config: FilterConfig = FilterConfig(),
) -> tuple[list[int], FilterReport]:
    """Indices of the queries worth suggesting, and what each rule removed."""
    report = FilterReport(considered=len(queries))
    kept: list[int] = []
    for i, q in enumerate(queries):
        if scores[i] <= 0:
            report.no_score += 1
        elif users[i] < config.min_users:
            report.too_few_users += 1
        elif blocklist.blocks(q):
            report.blocked += 1
        elif config.drop_private and looks_private(q):
            report.private += 1
        else:
            kept.append(i)
    report.kept = len(kept)
    return kept, report


__all__ = [
    "DEFAULT_BLOCKLIST",
    "TermBlocklist",
    "FilterConfig",
    "FilterReport",
    "HotBlocklist",
    "looks_private",
    "private_ids",
    "select_queries",
]
