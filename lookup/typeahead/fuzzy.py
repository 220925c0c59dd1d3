"""Typo tolerance: an edit-distance walk of the trie for prefixes that find too little.

The learned misspellings (:mod:`~lookup.typeahead.spelling`) cover the typos many people
make; this covers the rest at serve time. When a prefix of four characters or more finds
too little (nothing, by default: :class:`TypoPolicy`), the trie is walked once more with a
row of the *optimal string alignment* distance (Damerau–Levenshtein restricted to adjacent
swaps, so ``ipohne`` is one typo from ``iphone``) per code point of every path, and a path
is dropped as soon as the smallest cell of its row exceeds the typo budget. A node where the
last cell is within the budget matches as a whole: every key below it starts with a
string that close to what was typed (typeahead is prefix matching), and its stored top
10 are the best of them.

Costs are counted in half typos so that a slip onto the neighbouring key of a QWERTY
keyboard (``iphomw``: m for n, w for e) costs half a typo; every other insertion,
deletion, substitution or swap costs one, and one touching the first character counts
twice (Meilisearch's rule, which also keeps the walk in one subtree of the root). The
budget follows Meilisearch's lengths scaled as issue 27 asks: no typo below four
characters, one from four, two from eight. For a
market that shows Devanagari, a prefix typed in Latin letters is also walked as its
ITRANS transliteration (``dilli`` → दिल्लि, one vowel sign from दिल्ली).

The work is bounded: a walk stops after ``budget`` rows (one row per trie code point
visited) and answers with what it found.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

from lookup.typeahead.trie import TrieReader

if TYPE_CHECKING:
    from lookup.typeahead.snapshot import Snapshot

#: The cost of one typo, in the walk's units (half typos).
TYPO = 2
_INF = 1 << 20

_ROWS = ("qwertyuiop", "asdfghjkl", "zxcvbnm")


def _neighbours() -> frozenset[tuple[str, str]]:
    """Pairs of keys that touch on a QWERTY keyboard (same row, or the staggered row below)."""
    pairs: set[tuple[str, str]] = set()
    for r, row in enumerate(_ROWS):
        for c, key in enumerate(row):
            near = [row[c + 1]] if c + 1 < len(row) else []
            if r + 1 < len(_ROWS):
                below = _ROWS[r + 1]
                near += [below[j] for j in (c - 1, c) if 0 <= j < len(below)]
            for other in near:
                pairs.add((key, other))
                pairs.add((other, key))
    return frozenset(pairs)


#: Key pairs a finger slips between: their substitution costs half a typo.
NEIGHBOURS = _neighbours()


def substitution_cost(a: str, b: str, neighbours: frozenset[tuple[str, str]] = NEIGHBOURS) -> int:
    """0 for the same character, 1 for QWERTY neighbours, else :data:`TYPO`."""
    if a == b:
        return 0
    return 1 if (a, b) in neighbours else TYPO


@dataclass(frozen=True)
class TypoPolicy:
    """When the fallback runs and how much work it may do (settings ``typeahead_typo_*``).

    By default it runs only for a prefix that finds nothing (Typesense's
    ``typo_tokens_threshold`` of 1): a prefix that leads somewhere in the trie was most
    likely typed right, and walking for every short page costs milliseconds on a path
    that answers in microseconds. ``below=10`` also fills pages the prefix left short.
    """

    one_typo_from: int = 4
    two_typos_from: int = 8
    #: Rows (trie code points) one lookup may compute before it answers with what it has.
    budget: int = 3000
    enabled: bool = True
    #: Corrected answers kept per service (the cache is emptied when full).
    cache_entries: int = 4096
    #: Run only when the exact prefix finds fewer suggestions than this (and the page).
    below: int = 1

    @classmethod
    def from_settings(cls) -> TypoPolicy:
        """The policy the settings ``typeahead_typo_tolerance``, ``_below`` and ``_budget`` say."""
        from lookup import settings

        return cls(
            budget=settings.get("typeahead_typo_budget"),
            enabled=settings.get("typeahead_typo_tolerance"),
            below=settings.get("typeahead_typo_below"),
        )

    def wanted(self, found: int, limit: int, length: int) -> bool:
        """Whether a prefix of ``length`` code points whose exact walk found ``found`` of
        ``limit`` suggestions gets the fallback (two comparisons on the hot path)."""
        return found < limit and found < self.below and length >= self.one_typo_from

    def typos(self, length: int) -> int:
        """Typos allowed for a prefix of ``length`` code points."""
        if not self.enabled or length < self.one_typo_from:
            return 0
        return 2 if length >= self.two_typos_from else 1


class FuzzyHit(NamedTuple):
    """A trie node whose every key starts within ``cost`` of the query."""

    node: int
    cost: int  # half typos
    matched: int  # code points of the key prefix that matched


class Walk(NamedTuple):
    """What one walk found, and whether it ran out of budget."""

    hits: list[FuzzyHit]
    rows: int
    exhausted: bool


def fuzzy_walk(
    reader: TrieReader,
    query: str,
    max_cost: int,
    budget: int,
    neighbours: frozenset[tuple[str, str]] = NEIGHBOURS,
    first_double: bool = True,
) -> Walk:
    """Every node whose keys start within ``max_cost`` (half typos) of ``query``.

    Best first over the trie, one OSA row per code point of each path; a path is cut
    when its row's minimum exceeds ``max_cost`` or cannot beat a match already recorded
    above it (a row's minimum never falls as the path grows). Only cells within
    ``max_cost // TYPO`` of the diagonal can stay in budget, so only those are computed.
    ``first_double``: an edit touching the first character costs twice (Meilisearch's
    rule: people rarely get the first letter wrong, and the walk then stays in one
    subtree of the root); with it off and no ``neighbours`` the cost is plain OSA × TYPO.
    """
    n = len(query)
    band = max_cost // TYPO
    dbl = 2 if first_double else 1
    first = [(i + dbl - 1) * TYPO if 0 < i <= band else _INF for i in range(n + 1)]
    first[0] = 0
    hits: list[FuzzyHit] = []
    rows = 0
    labels, lo_, fc = reader.labels_of()
    # best first by the row minimum (it never falls along a path), so a walk cut by the
    # budget has looked at the closest paths; entries: (row min, order, node, row before
    # the label, the row before that, previous key char, depth, best match above)
    heap: list[tuple[int, int, int, list[int], list[int] | None, str, int, int]] = []
    seq = 0
    for child in range(fc[0], fc[1]):
        heap.append((0, seq, child, first, None, "", 0, _INF))
        seq += 1
    heapq.heapify(heap)
    infs = [_INF] * (n + 1)
    # per query position, the keys a finger slips to from it (no tuple built per cell)
    near = [frozenset(b for a, b in neighbours if a == qc) for qc in query]
    while heap:
        _, _, node, prev, prev2, last, depth, best = heapq.heappop(heap)
        alive = True
        low = 0
        for c in labels[lo_[node] : lo_[node + 1]]:
            if rows >= budget:
                return Walk(hits, rows, True)
            rows += 1
            j = depth + 1
            row = infs[:]
            low = _INF
            if j <= band:
                low = row[0] = (j + dbl - 1) * TYPO
            i0 = j - band if j > band else 1
            i1 = j + band if j + band < n else n
            for i in range(i0, i1 + 1):
                qc = query[i - 1]
                v = prev[i - 1]
                if qc != c:
                    v += 1 if c in near[i - 1] else TYPO
                    if i == 1 and j == 1 and dbl == 2:  # the first character counts twice
                        v += v - prev[0]
                x = prev[i] + TYPO
                if x < v:
                    v = x
                x = row[i - 1] + TYPO
                if x < v:
                    v = x
                if qc == last and i > 1 and qc != c and query[i - 2] == c and prev2 is not None:
                    x = prev2[i - 2] + (TYPO * dbl if i == j == 2 else TYPO)
                    if x < v:
                        v = x
                row[i] = v
                if v < low:
                    low = v
            prev2, prev, last, depth = prev, row, c, j
            if low > max_cost or low >= best:
                alive = False
                break
            end = row[n]
            if end <= max_cost and end < best:
                best = end
                hits.append(FuzzyHit(node, end, j))
        if alive:
            for child in range(fc[node], fc[node + 1]):
                heapq.heappush(heap, (low, seq, child, prev, prev2, last, depth, best))
                seq += 1
    return Walk(hits, rows, False)


class Correction(NamedTuple):
    """A suggestion found by the fallback: its id and the typos it needed."""

    target: int
    cost: int  # half typos


def best_corrections(
    reader: TrieReader,
    hits: Iterable[FuzzyHit],
    limit: int,
    excluded: set[int] | frozenset[int],
) -> list[Correction]:
    """The best ``limit`` targets under the hit nodes, by (cost, rank), none excluded.

    A target's cost is the smallest of the hits above it. Level by level of cost, the
    best remaining targets of every hit node at that level are merged (each node's
    stored list is its subtree's best, refilled past excluded ids by
    :meth:`TrieReader.top_excluding`), so the order is exact.
    """
    by_cost: dict[int, list[int]] = {}
    for hit in hits:
        by_cost.setdefault(hit.cost, []).append(hit.node)
    taken: set[int] = set(excluded)
    out: list[Correction] = []
    for cost in sorted(by_cost):
        need = limit - len(out)
        if need <= 0:
            break
        cand: set[int] = set()
        for node in by_cost[cost]:
            cand.update(reader.top_excluding(node, need, taken))
        for t in heapq.nsmallest(need, cand):
            out.append(Correction(t, cost))
            taken.add(t)
    return out


def corrections(
    snap: Snapshot, prefix: str, limit: int, excluded: frozenset[int], policy: TypoPolicy
) -> tuple[list[Correction], tuple[str, ...]]:
    """The best ``limit`` typo-tolerant matches of a normalised prefix in a snapshot, and
    the other spellings walked (a Latin prefix in a market that shows Devanagari is also
    walked as Devanagari); the exact matches are among ``excluded`` or found at cost 0 and
    dropped. One budget of rows for all the walks."""
    typos = policy.typos(len(prefix))
    if not typos:
        return [], ()
    variants = tuple(transliterations(prefix)) if _shows_devanagari(snap) else ()
    hits: list[FuzzyHit] = []
    left = policy.budget
    for q in (prefix, *variants):
        allowed = policy.typos(len(q)) * TYPO
        if not allowed or left <= 0:
            continue
        walk = fuzzy_walk(snap.reader, q, allowed, left)
        left -= walk.rows
        hits += [h for h in walk.hits if h.cost > 0]
    return best_corrections(snap.reader, hits, limit, excluded), variants


def _shows_devanagari(snap: Snapshot) -> bool:
    """Whether any of the snapshot's most popular suggestions is written in Devanagari."""
    cached = getattr(snap, "_shows_deva", None)
    if cached is None:
        head = snap.texts(list(range(min(snap.n_strings, 2000))))
        cached = any("\u0900" <= ch <= "\u097f" for text in head for ch in text)
        snap._shows_deva = cached  # type: ignore[attr-defined]
    return bool(cached)


def prefix_distance(
    query: str,
    text: str,
    neighbours: frozenset[tuple[str, str]] = NEIGHBOURS,
    first_double: bool = True,
) -> tuple[int, int]:
    """``(cost, end)``: the cheapest OSA cost (half typos) of ``query`` against a prefix of
    ``text``, and where that prefix ends (ties: the end nearest ``len(query)``).

    The plain dynamic programme, written apart from the walk: the brute-force oracle of
    the tests, and how the highlight of a corrected suggestion is found.
    """
    n, m = len(query), len(text)
    first = 2 if first_double else 1  # how much an edit of the first character counts
    d = [[0] * (m + 1) for _ in range(n + 1)]
    for i in range(1, n + 1):
        d[i][0] = (i - 1 + first) * TYPO
    for j in range(1, m + 1):
        d[0][j] = (j - 1 + first) * TYPO
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            sub = substitution_cost(query[i - 1], text[j - 1], neighbours)
            v = min(
                d[i - 1][j] + TYPO,
                d[i][j - 1] + TYPO,
                d[i - 1][j - 1] + (sub * first if i == j == 1 else sub),
            )
            if i > 1 and j > 1 and query[i - 1] == text[j - 2] and query[i - 2] == text[j - 1]:
                if query[i - 1] != text[j - 1]:
                    v = min(v, d[i - 2][j - 2] + (TYPO * first if i == j == 2 else TYPO))
            d[i][j] = v
    best = min(range(m + 1), key=lambda j: (d[n][j], abs(j - n)))
    return d[n][best], best


def transliterations(prefix: str) -> list[str]:
    """Other spellings of a Latin-typed prefix to walk in a Devanagari market (ITRANS)."""
    if not prefix.isascii() or not any(ch.isalpha() for ch in prefix):
        return []
    from indic_transliteration import sanscript

    deva = sanscript.transliterate(prefix, sanscript.ITRANS, sanscript.DEVANAGARI)
    deva = deva.removesuffix("\u094d")  # ITRANS ends a final consonant with a virama
    return [deva] if deva and deva != prefix else []


def highlight(prefix: str, text: str, variants: Sequence[str] = ()) -> list[list[int]]:
    """The ranges ``[start, end)`` of ``text`` (code points) a client may bold: the typed
    prefix, else the span a typo-tolerant match covered; none when nothing lines up."""
    if not prefix:
        return []
    if text.startswith(prefix):
        return [[0, len(prefix)]]
    best: tuple[int, int] | None = None
    for q in (prefix, *variants):
        cost, end = prefix_distance(q, text[: len(q) + 4])
        if end and cost <= TYPO * 2 and (best is None or cost < best[0]):
            best = (cost, end)
    return [[0, best[1]]] if best else []


__all__ = [
    "NEIGHBOURS",
    "TYPO",
    "Correction",
    "FuzzyHit",
    "TypoPolicy",
    "Walk",
    "best_corrections",
    "corrections",
    "fuzzy_walk",
    "highlight",
    "prefix_distance",
    "substitution_cost",
    "transliterations",
]
