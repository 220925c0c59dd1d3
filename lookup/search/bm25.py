"""Ranking: BM25 (Lucene's variant) plus query-independent signals.

For a query term t and document d::

    idf(t)      = ln(1 + (N - n_t + 0.5) / (n_t + 0.5))
    norm(d)     = k1 * (1 - b + b * |d| / avgdl)
    score(t, d) = idf(t) * tf(t, d) / (tf(t, d) + norm(d))

(Lucene dropped the constant ``(k1 + 1)`` factor in version 8; it changes no ranking,
and ``bm25s``'s "lucene" method does the same.) N, n_t and avgdl are **corpus-wide**
— over every shard and both tiers — so scores from different shards can be merged.

The blended score multiplies BM25 by two bounded, query-independent signals (Elasticsearch's
``function_score`` with ``boost_mode: multiply``), so relevance leads and the signals only
break near-ties — together they lift a score by at most ``w_link + w_fresh`` (15 %), never
enough to pass a page that is clearly more relevant, whatever its BM25 scale:

    final = bm25 × (1 + w_link × links / (links + k_link) + w_fresh × 0.5 ** (age / half_life))

Titles count through the analysis (:func:`~lookup.search.analysis.analyze_document`): a
title's terms weigh ``TITLE_WEIGHT`` (3) times a body's, the simple form of BM25F.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import MISSING, dataclass, fields
from typing import Any

import numpy as np

from lookup.search.analysis import Phrase

K1 = 1.2
B = 0.75

#: Phrase keys ``candidate * span + position`` stay unique while positions are below this.
_POSITION_SPAN = 1 << 32

#: Reference time for the factored freshness boost (any fixed instant works).
FRESH_REF = 1_700_000_000.0
_MAX_HALVINGS = 900.0


def idf(df: int, n_docs: int) -> float:
    """Lucene's BM25 inverse document frequency (always positive)."""
    return math.log(1.0 + (n_docs - df + 0.5) / (df + 0.5))


def length_norm(doclen: np.ndarray, avgdl: float, k1: float = K1, b: float = B) -> np.ndarray:
    """``k1 * (1 - b + b * |d| / avgdl)`` for each document length."""
    return k1 * (1.0 - b + b * np.asarray(doclen, dtype=np.float64) / avgdl)


def term_scores(tf: np.ndarray, norm: np.ndarray, term_idf: float) -> np.ndarray:
    """BM25 contribution of one term given its tfs and the documents' length norms."""
    tf = np.asarray(tf, dtype=np.float64)
    return term_idf * tf / (tf + norm)


@dataclass(frozen=True)
class Signals:
    """Weights of the query-independent signals blended into the BM25 score."""

    link_weight: float = 0.1
    link_saturation: float = 5.0
    fresh_weight: float = 0.05
    half_life_days: float = 30.0

    @classmethod
    def off(cls) -> Signals:
        """Pure BM25 (what the oracle tests compare)."""
        return cls(link_weight=0.0, fresh_weight=0.0)

    @staticmethod
    def blend(bm25: np.ndarray, link: np.ndarray, fresh: np.ndarray) -> np.ndarray:
        """The final score: BM25 lifted by the boosts (fractions of itself)."""
        return bm25 * (1.0 + link + fresh)

    def link_boost(self, inlinks: np.ndarray) -> np.ndarray:
        """Saturating boost for pages many other pages link to."""
        links = np.asarray(inlinks, dtype=np.float64)
        if self.link_weight == 0.0:
            return np.zeros(links.shape)
        return self.link_weight * links / (links + self.link_saturation)

    def fresh_base(self, crawled_at: np.ndarray) -> np.ndarray:
        """Query-independent half of the freshness boost: ``0.5 ** ((REF - crawled) / half-life)``.

        ``0.5 ** (age / h) = 0.5 ** ((now - REF) / h) * 0.5 ** ((REF - crawled) / h)``, so a
        segment computes this once and a query multiplies by :meth:`fresh_factor`.
        """
        crawled = np.asarray(crawled_at, dtype=np.float64)
        halvings = (FRESH_REF - crawled) / (self.half_life_days * 86400.0)
        return np.power(0.5, np.clip(halvings, -_MAX_HALVINGS, _MAX_HALVINGS))

    def fresh_factor(self, now: float) -> float:
        """Query-time half of the freshness boost, weight included."""
        halvings = (now - FRESH_REF) / (self.half_life_days * 86400.0)
        return self.fresh_weight * 0.5 ** min(max(halvings, -_MAX_HALVINGS), _MAX_HALVINGS)

    def fresh_from_base(self, base: np.ndarray, now: float) -> np.ndarray:
        """Freshness boost from precomputed bases (capped at the weight: no clock-skew bonus)."""
        if self.fresh_weight == 0.0:
            return np.zeros(np.shape(base))
        return np.minimum(self.fresh_factor(now) * base, self.fresh_weight)

    def fresh_boost(self, crawled_at: np.ndarray, now: float) -> np.ndarray:
        """Boost halving every ``half_life_days`` since the page was fetched."""
        return self.fresh_from_base(self.fresh_base(crawled_at), now)


@dataclass(frozen=True)
class QueryPlan:
    """A normalised query with the corpus statistics every shard scores it with."""

    terms: tuple[str, ...]  # distinct terms in canonical (sorted) order
    idfs: tuple[float, ...]
    dfs: tuple[int, ...]
    n_docs: int
    avgdl: float
    k: int  # how many hits each shard returns
    now: float
    signals: Signals = Signals()
    k1: float = K1
    b: float = B
    conjunctive: bool = True  # AND; the coordinator falls back to OR when AND finds nothing
    or_fallback: bool = True  # a shard with no AND match also computes its OR top-k
    max_candidates: int = 200_000  # OR postings a segment admits as candidates per query
    phrases: tuple[Phrase, ...] = ()  # quoted phrases every result must contain
    expr: Any = None  # a query-language AST (lookup.search.query); None: terms and phrases
    scoring: Any = None  # with expr: how its matches score (lookup.search.matching.Scoring)
    prune: bool = True  # top k by dynamic pruning where it applies (same results, less work)
    exact_count: bool = True  # count every match: no pruning (False: see track_total)
    # with exact_count False: a segment that may hold at most this many matches (by its
    # document frequencies) is still counted exactly; others may report a lower bound
    track_total: int = 0
    facets: bool = False  # count the matches' sites, languages, months, types (search.facets)
    sort: str = "score"  # "date": each shard's k newest matches (crawl time), not its best


def phrase_mask(
    phrase: Phrase,
    n_docs: int,
    positions_of: Callable[[str], tuple[np.ndarray, np.ndarray]],
) -> np.ndarray:
    """Which of ``n_docs`` candidate documents contain ``phrase`` (word by word, in order).

    ``positions_of(term)`` gives ``(owner, positions)``: every position of ``term`` in
    every candidate that has it, ``owner`` being the candidate's index. A candidate
    matches when some start ``p`` has each phrase term at ``p + offset`` — one sorted
    set intersection over ``(candidate, p)`` keys per term, all candidates at once.
    """
    keys: np.ndarray | None = None
    for term, offset in zip(phrase.terms, phrase.offsets, strict=True):
        owner, pos = positions_of(term)
        start = pos - offset
        ok = start >= 0
        here = np.unique(owner[ok] * _POSITION_SPAN + start[ok])
        keys = here if keys is None else np.intersect1d(keys, here, assume_unique=True)
        if keys.size == 0:
            break
    mask = np.zeros(n_docs, dtype=bool)
    if keys is not None and keys.size:
        mask[keys // _POSITION_SPAN] = True
    return mask


def sloppy_freq(
    phrase: Phrase,
    slop: int,
    n_docs: int,
    positions_of: Callable[[str], tuple[np.ndarray, np.ndarray]],
) -> np.ndarray:
    """Each candidate's sloppy phrase frequency (0.0: the phrase is not there).

    Every position of the phrase's first word is an anchor; each later word ``i`` (at
    offset ``o_i``) is placed at its occurrence nearest to where the phrase wants it,
    and ``moves = Σ_i min |(p_i - o_i) - (p_0 - o_0)|`` (a word repeating the first never
    uses the anchor's own token). An anchor with ``moves <= slop`` adds ``1 / (1 + moves)``,
    Lucene's sloppy frequency; for two words ``moves`` is Lucene's match length (end -
    start, so a swap costs 2), and with ``slop`` 0 the frequency is the exact phrase count.
    """
    bias = 1 << 31  # keeps ``position - offset`` positive inside a key
    owner0, pos0 = positions_of(phrase.terms[0])
    owner0 = np.asarray(owner0, dtype=np.int64)
    first = phrase.offsets[0]
    anchors = owner0 * _POSITION_SPAN + (np.asarray(pos0, dtype=np.int64) - first + bias)
    moves = np.zeros(anchors.size, dtype=np.int64)
    far = slop + 1
    for term, offset in zip(phrase.terms[1:], phrase.offsets[1:], strict=True):
        owner, pos = positions_of(term)
        owner, pos = np.asarray(owner, np.int64), np.asarray(pos, np.int64)
        keys = np.sort(owner * _POSITION_SPAN + (pos - offset + bias))
        if keys.size == 0 or anchors.size == 0:
            return np.zeros(n_docs)
        own = anchors + first - offset if term == phrase.terms[0] else None
        at = np.searchsorted(keys, anchors)
        best = np.full(anchors.size, far, dtype=np.int64)
        for shift in (-2, -1, 0, 1):  # the nearest on each side, and the next past the own
            j = at + shift
            valid = (j >= 0) & (j < keys.size)
            k = keys[np.clip(j, 0, keys.size - 1)]
            valid &= k // _POSITION_SPAN == owner0
            if own is not None:
                valid &= k != own
            best = np.where(valid, np.minimum(best, np.abs(k - anchors)), best)
        moves += np.minimum(best, far)
    ok = moves <= slop
    return np.bincount(owner0[ok], weights=1.0 / (1.0 + moves[ok]), minlength=n_docs)[:n_docs]


def make_plan(
    terms: list[str],
    dfs: list[int],
    n_docs: int,
    total_length: int,
    k: int,
    now: float,
    signals: Signals | None = None,
    phrases: tuple[Phrase, ...] = (),
    expr: Any = None,
    weights: dict[str, float] | None = None,
    **options: Any,
) -> QueryPlan:
    """Attach global statistics to a query's terms (sorted, so every shard sums alike).

    A query with phrases is strictly conjunctive: no OR fallback would honour them; nor
    has a query with operators (``expr``), which says itself what must match.
    ``options`` set other :class:`QueryPlan` fields (cheaper than ``replace`` afterwards).
    ``weights`` scale some terms' idf (a synonym weighs less than the word as typed,
    :mod:`.synonyms`): every score and bound is idf-proportional, so this is a term boost.
    """
    if len(terms) != len(dfs):
        raise ValueError("make_plan: one df per term")
    if len(terms) > 1:
        sorted_terms, sorted_dfs = zip(*sorted(zip(terms, dfs, strict=True)), strict=True)
    else:
        sorted_terms, sorted_dfs = tuple(terms), tuple(dfs)
    if options and not _PLAN_FIELDS.issuperset(options):
        raise TypeError(f"make_plan: no QueryPlan field {sorted(options.keys() - _PLAN_FIELDS)}")
    avgdl = (total_length / n_docs) if n_docs else 1.0
    log = math.log  # idf() inlined: this runs once per query on every shard's behalf
    # What the frozen dataclass's __init__ does field by field (object.__setattr__ each,
    # 3.4 µs a plan — a tenth of a small query's own work, issue 24), as one dict; the
    # plan is the same (equal to ``QueryPlan(**values)``, tested), and as immutable after.
    plan = _new_object(QueryPlan)
    _set_attribute(
        plan,
        "__dict__",
        {
            **_PLAN_DEFAULTS,
            "terms": sorted_terms,
            "idfs": tuple([log(1.0 + (n_docs - d + 0.5) / (d + 0.5)) for d in sorted_dfs])
            if not weights
            else tuple(
                [
                    log(1.0 + (n_docs - d + 0.5) / (d + 0.5)) * weights.get(t, 1.0)
                    for t, d in zip(sorted_terms, sorted_dfs, strict=True)
                ]
            ),
            "dfs": sorted_dfs,
            "n_docs": n_docs,
            "avgdl": avgdl if avgdl > 0 else 1.0,
            "k": k,
            "now": now,
            "signals": signals or Signals(),
            "or_fallback": not phrases and expr is None,
            "phrases": tuple(phrases),
            "expr": expr,
            **options,
        },
    )
    return plan


_new_object = object.__new__
_set_attribute = object.__setattr__  # the frozen plan's dict, set once as it is made

#: QueryPlan's field names, and the defaults of those that have one (for make_plan).
_PLAN_FIELDS = frozenset(f.name for f in fields(QueryPlan))
_PLAN_DEFAULTS = {f.name: f.default for f in fields(QueryPlan) if f.default is not MISSING}
