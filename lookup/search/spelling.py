""" "Did you mean": spelling suggestions from the index's own term dictionary.

A query word is corrected to the index term nearest to it in edit distance (optimal
string alignment: insertions, deletions, substitutions and swaps of two neighbours each
cost 1; rapidfuzz's ``OSA``, the one edit distance web search uses), at most one edit
for words of up to four characters and two beyond; among
equally near terms the one in most documents wins (the noisy-channel idea with a flat
error model: the prior is the term's document frequency). A term is only proposed when
it is in many more documents than the word itself, so a rare real word is left alone.

Scanning the whole vocabulary with the dynamic programme would be slow in Python, so
a necessary condition filters first, vectorised over every term at once: each edit
changes a word's letter counts by at most 2 in L1 distance, so a term whose counts are
further than ``2 × edits`` from the word's cannot be within ``edits``.

The same scan lists every term within a distance (:meth:`Speller.near`) for fuzzy
words and typo tolerance (:mod:`.expansion`): Meilisearch's word-length bounds
(:func:`typos_allowed`) and Lucene's similarity factor (:func:`similarity`).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
from rapidfuzz.distance import OSA

from lookup.search.analysis import analyze
from lookup.search.query import FIELDS, QuerySyntaxError, tokenize

#: A query is offered a correction when it finds fewer results than this; a word in at
#: least this many documents is never corrected.
SUGGEST_BELOW = 3
#: A suggested term must be in this many times more documents than the word typed.
MIN_GAIN = 10
#: Counted letters: a–z, 0–9, and one slot for everything else.
_ALPHABET = {c: i for i, c in enumerate("abcdefghijklmnopqrstuvwxyz0123456789")}
_SLOTS = len(_ALPHABET) + 1


def max_edits(word: str) -> int:
    """Edits allowed for a word: 1 up to four characters, 2 beyond (as Lucene's fuzzy AUTO)."""
    return 1 if len(word) <= 4 else 2


def edit_distance(a: str, b: str, limit: int | None = None) -> int:
    """Optimal-string-alignment distance of ``a`` and ``b`` (rapidfuzz's ``OSA``).

    With ``limit``, returns ``limit + 1`` when the distance exceeds it (and stops early).
    """
    if limit is None:
        return int(OSA.distance(a, b))
    return int(OSA.distance(a, b, score_cutoff=limit))


#: Meilisearch's ``minWordSizeForTypos`` defaults: a typed word of 5 characters or more
#: may hold one typo, of 9 or more two.
ONE_TYPO_CHARS = 5
TWO_TYPOS_CHARS = 9


def typos_allowed(word: str) -> int:
    """Typos tolerated in a typed word, by its length (Meilisearch's default bounds)."""
    n = len(word)
    return 2 if n >= TWO_TYPOS_CHARS else 1 if n >= ONE_TYPO_CHARS else 0


def similarity(term: str, other: str, distance: int) -> float:
    """Lucene's fuzzy similarity, ``1 - distance / min(len(term), len(other))``: the factor an
    expanded term's score is multiplied by (1.0 for the term itself; 0 or below: too far)."""
    shortest = min(len(term), len(other))
    return 1.0 - distance / shortest if shortest else 0.0


def _counts(word: str) -> np.ndarray:
    v = np.zeros(_SLOTS, dtype=np.int16)
    for c in word:
        v[_ALPHABET.get(c, _SLOTS - 1)] += 1
    return v


@dataclass(frozen=True)
class Suggestion:
    """A corrected term, how far it is from the word, and its document frequency."""

    term: str
    distance: int
    df: int


class Speller:
    """Nearest-term lookups over one index version's vocabulary (built once, read-only)."""

    def __init__(self, vocabulary: Iterable[tuple[str, int]]) -> None:
        pairs = [(t, n) for t, n in vocabulary if n > 0 and ":" not in t]
        self.terms = [t for t, _ in pairs]
        self.df = {t: n for t, n in pairs}
        self.dfs = np.array([n for _, n in pairs], dtype=np.int64)
        self.lengths = np.array([len(t) for t in self.terms], dtype=np.int64)
        counts = np.zeros((len(self.terms), _SLOTS), dtype=np.int16)
        for i, t in enumerate(self.terms):
            for c in t:
                counts[i, _ALPHABET.get(c, _SLOTS - 1)] += 1
        self.counts = counts

    def near(self, term: str, k: int) -> list[tuple[str, int]]:
        """Every term of the vocabulary within ``k`` edits of ``term`` (itself included),
        with its distance."""
        if not term or not self.terms or k < 0:
            return []
        rows = np.flatnonzero(np.abs(self.lengths - len(term)) <= k)
        rows = rows[np.abs(self.counts[rows] - _counts(term)).sum(axis=1) <= 2 * k]
        out = []
        for i in rows.tolist():
            cand = self.terms[i]
            d = edit_distance(term, cand, k)
            if d <= k:
                out.append((cand, d))
        return out

    def suggest(self, term: str) -> Suggestion | None:
        """The best correction of an index term, or None if it needs none or has none."""
        if not term or not self.terms:
            return None
        own = self.df.get(term, 0)
        if own >= SUGGEST_BELOW:  # a word this many pages use is no misspelling to fix here
            return None
        k = max_edits(term)
        ok = np.abs(self.lengths - len(term)) <= k
        ok &= self.dfs >= max(own, 1) * MIN_GAIN if own else self.dfs > 0
        ok &= np.abs(self.counts - _counts(term)).sum(axis=1) <= 2 * k
        best: Suggestion | None = None
        for i in np.flatnonzero(ok).tolist():
            cand = self.terms[i]
            if cand == term:
                continue
            d = edit_distance(term, cand, k)
            if d > k:
                continue
            s = Suggestion(cand, d, int(self.dfs[i]))
            if best is None or (s.distance, -s.df, s.term) < (best.distance, -best.df, best.term):
                best = s
        return best


_lock = threading.Lock()


def speller_for(snapshot: object) -> Speller:
    """The speller of an index version, built on first use and kept on the version."""
    speller = getattr(snapshot, "_speller", None)
    if speller is None:
        with _lock:
            speller = getattr(snapshot, "_speller", None)
            if speller is None:
                speller = Speller(snapshot.vocabulary())  # type: ignore[attr-defined]
                snapshot._speller = speller  # type: ignore[attr-defined]
    return speller


def surface(typed: str, typed_term: str, term: str) -> str:
    """A word for the corrected stem, with the ending the typed word lost to stemming.

    ``itertols`` stems to ``itertol``, corrected to ``itertool``; the typed ``s`` goes
    back on: ``itertools`` — kept only if it stems to the correction again.
    """
    word = typed.lower()
    if word.startswith(typed_term) and word != typed_term:
        candidate = term + word[len(typed_term) :]
        if analyze(candidate).terms == [term]:
            return candidate
    return term


def correct_query(text: str, speller: Speller) -> str | None:
    """The query with each misspelt plain word replaced by its correction, or None.

    Operators, fields, prefixes and phrases are kept as typed; only a word that is one
    index term is corrected.
    """
    try:
        tokens = tokenize(text)
    except QuerySyntaxError:
        return None
    out: list[str] = []
    at = 0
    changed = False
    for tok in tokens:
        if tok.kind != "word" or tok.text.endswith("*"):
            continue
        if tok.text.partition(":")[0].lower() in FIELDS and ":" in tok.text:
            continue
        terms = analyze(tok.text).terms
        if len(terms) != 1:
            continue
        s = speller.suggest(terms[0])
        if s is None:
            continue
        out.append(text[at : tok.pos])
        out.append(surface(tok.text, terms[0], s.term))
        at = tok.pos + len(tok.text)
        changed = True
    if not changed:
        return None
    out.append(text[at:])
    return "".join(out)
