"""The speed layer: trending queries within minutes, blended in at query time.

The batch pipeline cannot be fresh (it runs every few hours) and decay works against
a newcomer: 50,000 searches today score 50,000, below an old favourite at 106,000.
So submitted searches also feed this small real-time path:

1. counts per query in one-minute buckets, summed over a sliding ten-minute window;
2. compared with what is normal for that query at that hour (from the snapshot's
   score and the market's hourly traffic share — near zero for a brand-new query);
3. trending when the window count is many times normal, above an absolute floor, and
   from enough distinct users *and* distinct networks — stricter than the batch, because
   a sudden spike is exactly how a brigade looks — and never blocked or private-looking.
   Who a user is and which network they are on is the server's call (the owner token,
   else a hash of the client address; its /24 or /48), never the request body's;
4. the boost is the excess over normal projected to a day, so it is comparable to
   the snapshot's scores; as the window moves past the spike the count falls and the
   boost fades by itself.

The clock is injected, so tests (and the dashboard's replay button) can simulate
minutes passing.
"""

from __future__ import annotations

import csv
import hashlib
import os
import threading
import time
from bisect import bisect_left
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from lookup.typeahead.filters import DEFAULT_BLOCKLIST, TermBlocklist, looks_private
from lookup.typeahead.normalize import MAX_QUERY_CHARS, has_control_chars, normalize_query

Clock = Callable[[], float]
#: expected searches of ``query`` in ``market`` during a window ending at ``now``
Baseline = Callable[[str, str, float], float]


@dataclass(frozen=True)
class TrendingPolicy:
    """Thresholds of the trending job."""

    window_s: int = 600
    bucket_s: int = 60
    floor: int = 500  # searches in the window, whatever the baseline
    ratio: float = 5.0  # times the normal count for this hour
    min_users: int = 20  # distinct users in the window (the batch asks for 5 overall)
    min_networks: int = 10  # distinct client networks (/24, /48) in the window
    min_chars: int = 3
    max_terms: int = 2000  # per market
    refresh_s: float = 1.0  # how often suggest-time readers see a recomputed set


@dataclass(frozen=True)
class TrendingTerm:
    """A query currently trending, with the evidence."""

    query: str
    count: int
    users: int
    baseline: float
    boost: float
    networks: int = 0

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able form."""
        return {
            "q": self.query,
            "count": self.count,
            "users": self.users,
            "networks": self.networks,
            "baseline": round(self.baseline, 3),
            "boost": round(self.boost, 1),
        }


class _Counts:
    """One query's per-bucket counts, users and networks inside the window."""

    __slots__ = ("buckets",)

    def __init__(self) -> None:
        self.buckets: dict[int, tuple[int, set[int], set[int]]] = {}

    def add(self, bucket: int, user: int, network: int, cap: int) -> None:
        n, users, networks = self.buckets.get(bucket, (0, set(), set()))
        if len(users) < cap:
            users.add(user)
        if len(networks) < cap:
            networks.add(network)
        self.buckets[bucket] = (n + 1, users, networks)

    def window(self, first: int) -> tuple[int, int, int]:
        """``(searches, distinct users, distinct networks)`` from bucket ``first`` on."""
        for b in [b for b in self.buckets if b < first]:
            del self.buckets[b]
        count = sum(n for n, _, _ in self.buckets.values())
        users: set[int] = set()
        networks: set[int] = set()
        for _, u, w in self.buckets.values():
            users |= u
            networks |= w
        return count, len(users), len(networks)


class TrendingTracker:
    """Sliding-window counts per market and query, and the trending set they imply."""

    def __init__(
        self,
        policy: TrendingPolicy = TrendingPolicy(),
        *,
        clock: Clock = time.time,
        baseline: Baseline | None = None,
        blocklist: Callable[[], TermBlocklist] | None = None,
    ) -> None:
        self.policy = policy
        self.clock = clock
        self.baseline = baseline or (lambda market, query, now: 0.0)
        builtin = TermBlocklist(DEFAULT_BLOCKLIST)
        self._blocklist = blocklist or (lambda: builtin)
        self._counts: dict[str, dict[str, _Counts]] = {}
        self._lock = threading.Lock()
        self._sets: dict[str, tuple[list[str], dict[str, TrendingTerm]]] = {}
        self._computed_at: float | None = None
        #: Counts recomputations of the sets: what an answer kept with the sets it was
        #: blended with is checked against (:meth:`sets_version`).
        self._sets_version = 0
        self.recorded = 0

    def record(
        self, query: str, market: str, user: str | None = None, network: str | None = None
    ) -> str | None:
        """Count one submitted search; returns the normalised query, or None if unusable.

        ``user`` and ``network`` are the server's identity of the searcher (the HTTP edge
        derives them); a caller that knows no network (an offline replay) leaves it None
        and each user counts as a network of its own."""
        q = usable_query(query)
        if q is None:
            return None
        now = self.clock()
        bucket = int(now // self.policy.bucket_s)
        who = _user_key(user or "")  # anonymous searches all count as one user
        where = _user_key("net:" + (network if network is not None else user or ""))
        cap = 2 * max(self.policy.min_users, self.policy.min_networks)
        with self._lock:
            self._counts.setdefault(market, {}).setdefault(q, _Counts()).add(
                bucket, who, where, cap
            )
            self.recorded += 1
            self._computed_at = None  # the next reader recomputes
        return q

    def compute(self) -> dict[str, list[TrendingTerm]]:
        """Recompute every market's trending set now (also drops expired buckets)."""
        now = self.clock()
        blocklist = self._blocklist()
        with self._lock:
            out = {
                market: self.decide(market, rows, now, blocklist)
                for market, rows in self._windows(self.first_bucket(now)).items()
            }
            self._install(out, now)
            self._sets_version += 1
        return out

    def first_bucket(self, now: float) -> int:
        """The oldest bucket inside the window ending at ``now``."""
        p = self.policy
        return int(now // p.bucket_s) - p.window_s // p.bucket_s + 1

    def _windows(self, first: int) -> dict[str, list[tuple[str, int, int, int]]]:
        """Per market, ``(query, searches, users, networks)`` in the window from bucket
        ``first`` (caller holds the lock); queries with nothing left are forgotten."""
        out: dict[str, list[tuple[str, int, int, int]]] = {}
        for market, per_query in self._counts.items():
            rows = out[market] = []
            for q in list(per_query):
                count, users, networks = per_query[q].window(first)
                if count == 0:
                    del per_query[q]
                    continue
                rows.append((q, count, users, networks))
        return out

    def decide(
        self,
        market: str,
        rows: list[tuple[str, int, int, int]],
        now: float,
        blocklist: TermBlocklist,
    ) -> list[TrendingTerm]:
        """The trending terms of one market's window rows: the gates (floor, distinct
        users and networks, ratio over the baseline, blocklist, private-looking), the
        boost, strongest first and at most ``max_terms``."""
        p = self.policy
        terms = []
        for q, count, users, networks in rows:
            if count < p.floor or users < p.min_users or len(q) < p.min_chars:
                continue
            if networks < p.min_networks:
                continue
            base = max(0.0, float(self.baseline(market, q, now)))
            if count < p.ratio * base:
                continue
            if blocklist.blocks(q) or looks_private(q):
                continue
            boost = (count - base) * (86400.0 / p.window_s)
            terms.append(TrendingTerm(q, count, users, base, boost, networks))
        terms.sort(key=lambda t: (-t.boost, t.query))
        return terms[: p.max_terms]

    def _install(self, out: dict[str, list[TrendingTerm]], now: float) -> None:
        """Make ``out`` the current sets (caller holds the lock)."""
        for market, terms in out.items():
            by_q = {t.query: t for t in terms}
            self._sets[market] = (sorted(by_q), by_q)
        for market in list(self._sets):
            if market not in out:
                del self._sets[market]
        self._computed_at = now

    def _fresh(self) -> None:
        at = self._computed_at
        if at is None or self.clock() - at >= self.policy.refresh_s or self.clock() < at:
            self.compute()

    def sets_version(self) -> int:
        """Which computation of the trending sets is current (refreshed first if due): an
        answer blended with other sets than the current ones is out of date."""
        self._fresh()
        return self._sets_version

    def trending(self, market: str) -> list[TrendingTerm]:
        """The market's trending terms, strongest first."""
        self._fresh()
        entry = self._sets.get(market)
        if entry is None:
            return []
        return sorted(entry[1].values(), key=lambda t: (-t.boost, t.query))

    def matching(self, market: str, prefix: str) -> list[TrendingTerm]:
        """Trending terms of the market starting with ``prefix`` (a bisect on a sorted list)."""
        self._fresh()
        entry = self._sets.get(market)
        if not entry or not entry[0]:
            return []
        names, by_q = entry
        out = []
        i = bisect_left(names, prefix)
        while i < len(names) and names[i].startswith(prefix):
            out.append(by_q[names[i]])
            i += 1
        return out

    def window_count(self, market: str, query: str) -> int:
        """Searches of a query in the current window (for displays and tests)."""
        first = self.first_bucket(self.clock())
        with self._lock:
            c = self._counts.get(market, {}).get(normalize_query(query))
            return c.window(first)[0] if c else 0

    def start(self) -> None:
        """Start background work (none here: the sets are recomputed when read)."""

    def close(self) -> None:
        """Stop background work (none here)."""

    def backend(self) -> str:
        """Where the windows live, for status pages."""
        return "memory"

    def status(self) -> dict[str, Any]:
        """Where the windows live, searches counted here, recomputations of the sets."""
        return {
            "backend": self.backend(),
            "recorded": self.recorded,
            "refreshes": self._sets_version,
        }


def usable_query(query: str) -> str | None:
    """A submitted query in normal form, or None when nothing usable is left."""
    if has_control_chars(query):
        return None
    q = normalize_query(query)
    return q if q and len(q) <= MAX_QUERY_CHARS else None


def _user_key(user: str) -> int:
    return int.from_bytes(hashlib.blake2b(user.encode(), digest_size=8).digest(), "little")


class Pick(NamedTuple):
    """A search picked from the suggestions: its 1-based rank in the list and the prefix
    typed when it was picked (either may be unknown)."""

    rank: int | None = None
    prefix: str | None = None


class SearchLog:
    """Submitted searches appended to a CSV the next ``lookup typeahead build`` folds in.

    The columns are the pipeline's (``ts, market, query, user_id, is_bot``) plus, for a
    search picked from the suggestions, ``picked, rank, prefix`` (empty otherwise); user
    ids are hashed before they are written. A file written before those three columns
    existed gets them (empty on its old rows) on the first append.
    """

    COLUMNS = ("ts", "market", "query", "user_id", "is_bot", "picked", "rank", "prefix")
    OLD_COLUMNS = ("ts", "market", "query", "user_id", "is_bot")

    def __init__(self, path: str | os.PathLike[str], clock: Clock = time.time) -> None:
        self.path = Path(path)
        self.clock = clock
        self._lock = threading.Lock()
        self._checked = False
        #: Empty cells a row gets for columns the file has beyond :attr:`COLUMNS` (the
        #: stream copy's ``event``, when a fleet wrote this file before).
        self._pad = 0

    def _widen_old_file(self) -> None:
        """Give a file of the old five columns the new ones (caller holds the lock)."""
        self._checked = True
        if not self.path.exists():
            return
        with open(self.path, newline="", encoding="utf-8") as f:
            rows = list(csv.reader(f))
        if rows and tuple(rows[0][: len(self.COLUMNS)]) == self.COLUMNS:
            self._pad = len(rows[0]) - len(self.COLUMNS)
        if not rows or tuple(rows[0]) != self.OLD_COLUMNS:
            return
        tmp = self.path.with_name(self.path.name + ".widen")
        with open(tmp, "w", newline="", encoding="utf-8") as f:
            w = csv.writer(f)
            w.writerow(self.COLUMNS)
            w.writerows(r + ["", "", ""] for r in rows[1:])
        os.replace(tmp, self.path)

    def append(
        self,
        query: str,
        market: str,
        user: str | None,
        is_bot: bool = False,
        pick: Pick | None = None,
    ) -> None:
        """Append one search (creating the file with its header)."""
        uid = hashlib.blake2b((user or "anonymous").encode(), digest_size=8).hexdigest()
        row: list[object] = [int(self.clock()), market, query, uid, int(is_bot)]
        if pick is None:
            row += ["", "", ""]
        else:
            row += [1, "" if pick.rank is None else pick.rank, pick.prefix or ""]
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            if not self._checked:
                self._widen_old_file()
            row += [""] * self._pad
            new = not self.path.exists()
            with open(self.path, "a", newline="", encoding="utf-8") as f:
                w = csv.writer(f)
                if new:
                    w.writerow(self.COLUMNS)
                w.writerow(row)


__all__ = ["Pick", "SearchLog", "TrendingPolicy", "TrendingTerm", "TrendingTracker", "usable_query"]
