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

import os
import re
import threading
from bisect import bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from lookup.typeahead.normalize import MAX_QUERY_CHARS, has_control_chars, normalize_query

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
        if not isinstance(term, str):
            raise ValueError("a blocklist term must be a string")
        if has_control_chars(term):
            raise ValueError("a blocklist term may not contain control characters")
        t = normalize_query(term)
        if not t:
            raise ValueError("a blocklist term may not be empty")
        if len(t) > MAX_QUERY_CHARS:
            raise ValueError(f"a blocklist term is at most {MAX_QUERY_CHARS} characters")
        return t

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
    """The serve-time blocklist: updatable through the API or a file, effective at once.

    The file holds one phrase per line (``#`` starts a comment). :meth:`refresh`
    reloads it when its modification time changes; :attr:`version` increases on every
    change so that holders of derived data (a snapshot's blocked ids) recompute.
    """

    def __init__(
        self, path: str | os.PathLike[str] | None, builtin: Iterable[str] = DEFAULT_BLOCKLIST
    ):
        self.path = Path(path) if path is not None else None
        self.builtin = TermBlocklist(builtin)
        self._hot = TermBlocklist()
        self._lock = threading.Lock()
        self._mtime: float | None = None
        self.version = 0
        self._effective = self.builtin
        self.refresh()

    @property
    def effective(self) -> TermBlocklist:
        """Built-in plus hot phrases (an immutable snapshot; replaced on change)."""
        return self._effective

    @property
    def hot_terms(self) -> list[str]:
        """The phrases added at run time."""
        return self._hot.terms

    def blocks(self, query: str) -> bool:
        """True if the effective blocklist blocks ``query``."""
        return self._effective.blocks(query)

    def add(self, terms: Iterable[str]) -> list[str]:
        """Add phrases (normalised), persist the file, and return what was stored."""
        cleaned = [TermBlocklist.clean(t) for t in terms]
        with self._lock:
            for t in cleaned:
                self._hot.add(t)
            self._changed()
        return cleaned

    def remove(self, term: str) -> bool:
        """Remove a hot phrase; ``ValueError`` for a built-in one. True if it was there."""
        t = normalize_query(term)
        if t in self.builtin and t not in self._hot:
            raise ValueError(
                f"{t!r} is on the built-in blocklist and cannot be removed at run time"
            )
        with self._lock:
            found = self._hot.discard(t)
            if found:
                self._changed()
        return found

    def _changed(self) -> None:
        self._effective = self.builtin | self._hot
        self.version += 1
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_name(self.path.name + ".tmp")
            body = "# hot blocklist: one phrase per line; edits take effect within seconds\n"
            tmp.write_text(body + "".join(t + "\n" for t in self._hot.terms), encoding="utf-8")
            os.replace(tmp, self.path)
            self._mtime = self.path.stat().st_mtime

    def refresh(self) -> bool:
        """Reload the file if it changed on disk; True if the list changed."""
        if self.path is None:
            return False
        try:
            mtime = self.path.stat().st_mtime
        except FileNotFoundError:
            mtime = None
        if mtime == self._mtime:
            return False
        terms: list[str] = []
        if mtime is not None:
            for line in self.path.read_text(encoding="utf-8").splitlines():
                if not line.strip() or line.lstrip().startswith("#"):
                    continue
                try:
                    terms.append(TermBlocklist.clean(line))
                except ValueError:
                    continue  # blank or unusable lines are skipped, not fatal
        with self._lock:
            self._mtime = mtime
            new = TermBlocklist(terms)
            if new.terms == self._hot.terms:
                return False
            self._hot = new
            self._effective = self.builtin | self._hot
            self.version += 1
        return True


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
    scores: Sequence[float],
    users: Sequence[int],
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
