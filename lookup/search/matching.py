"""Which documents of one segment (or real-time shard) a query AST matches, and their scores.

Every node becomes a boolean mask over the segment's documents: a term sets the
documents of its posting list, a phrase keeps the documents of its terms' intersection
whose positions line up (:func:`~lookup.search.bm25.phrase_mask`; with slop,
:func:`~lookup.search.bm25.sloppy_freq`), ``after:``/``before:`` compare the crawl
times, an expanded prefix (:class:`~lookup.search.query.AnyOf`) is the OR of its
terms, and AND, OR and NOT are ``&``, ``|`` and ``~``. A mask costs one byte per
document and node, which is cheap next to decoding the posting lists; the classic fast
path in :mod:`shard` still answers queries that are only terms and exact phrases.

Scoring (:class:`Scoring`, :func:`expr_scores`): a matched document scores, for the
query's positive clauses (those not under a NOT), each distinct one once:

* a term: its BM25 (the term's statistics, its tf, the document's length, as in the
  fast path) times its boost — a term written several times counts once, at its largest
  boost; a fuzzy or typo expansion is a term whose boost carries its similarity;
* an exact phrase: its terms, as terms (as the fast path scores them);
* a sloppy phrase ``"a b"~N``: Lucene's phrase score, one BM25 term whose frequency is
  the sloppy frequency and whose idf is the sum of the phrase's terms' idfs, times
  its boost;
* an expanded prefix ``pre*``: a constant (:data:`CONSTANT_SCORE` times its boost),
  Lucene's constant-score rewrite — however many terms it expands to.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from lookup.search.analysis import Phrase
from lookup.search.query import (
    And,
    AnyOf,
    Boost,
    CrawledRange,
    FieldPrefix,
    FieldTerm,
    Fuzzy,
    Node,
    Not,
    Or,
    PhraseNode,
    Prefix,
    Term,
    highlighted,
    map_nodes,
)

#: What a document matching an expanded prefix scores (Lucene's ConstantScoreQuery: its boost).
CONSTANT_SCORE = 1.0


class MatchSource(Protocol):
    """What the evaluator needs of a segment: its size, crawl times, postings, phrases."""

    n_docs: int
    crawled: np.ndarray

    def docs_with(self, term: str) -> np.ndarray:
        """Ids of the documents holding the index term (dead ones may be included)."""
        ...

    def phrase_docs(self, phrase: Phrase, candidates: np.ndarray) -> np.ndarray:
        """Mask over sorted ``candidates`` (which hold every phrase term): those with the phrase."""
        ...

    def phrase_freqs(self, phrase: Phrase, slop: int, candidates: np.ndarray) -> np.ndarray:
        """Sloppy frequency per sorted candidate (:func:`~lookup.search.bm25.sloppy_freq`)."""
        ...

    def tfs(self, term: str, docs: np.ndarray) -> np.ndarray:
        """The term's frequency in each of the sorted ``docs`` (0 where absent)."""
        ...


def evaluate(
    node: Node, source: MatchSource, memo: dict[Any, np.ndarray] | None = None
) -> np.ndarray:
    """Boolean mask over ``source``'s documents: those the query matches (liveness not applied).

    ``memo`` (optional) receives, per sloppy phrase, its frequency in every document and,
    per expanded prefix, its mask: what :func:`expr_scores` scores them by.
    """
    n = source.n_docs
    masks: dict[str, np.ndarray] = {}
    kept: dict[Any, np.ndarray] = {} if memo is None else memo

    def term_mask(term: str) -> np.ndarray:
        m = masks.get(term)
        if m is None:
            m = np.zeros(n, dtype=bool)
            m[source.docs_with(term)] = True
            masks[term] = m
        return m

    def walk(x: Node) -> np.ndarray:
        if isinstance(x, Term):
            return term_mask(x.term)
        if isinstance(x, FieldTerm):
            return term_mask(x.key)
        if isinstance(x, PhraseNode):
            m = np.ones(n, dtype=bool)
            for t in x.phrase.terms:
                m = m & term_mask(t)
            cand = np.flatnonzero(m)
            out = np.zeros(n, dtype=bool)
            if x.slop:
                freq = np.zeros(n)
                if cand.size:
                    freq[cand] = source.phrase_freqs(x.phrase, x.slop, cand)
                kept[x] = freq
                return freq > 0
            if cand.size:
                out[cand[source.phrase_docs(x.phrase, cand)]] = True
            return out
        if isinstance(x, AnyOf):
            m = np.zeros(n, dtype=bool)
            for key in x.keys:
                m = m | term_mask(key)
            kept[x] = m
            return m
        if isinstance(x, CrawledRange):
            m = np.ones(n, dtype=bool)
            crawled = np.asarray(source.crawled[:n], dtype=np.float64)
            if x.after is not None:
                m &= crawled >= x.after
            if x.before is not None:
                m &= crawled < x.before
            return m
        if isinstance(x, And):
            m = np.ones(n, dtype=bool)
            for c in x.children:
                m = m & walk(c)
            return m
        if isinstance(x, Or):
            m = np.zeros(n, dtype=bool)
            for c in x.children:
                m = m | walk(c)
            return m
        if isinstance(x, Not):
            return ~walk(x.child)
        if isinstance(x, Boost):
            return walk(x.child)
        if isinstance(x, (Prefix, FieldPrefix, Fuzzy)):
            raise ValueError("prefixes and fuzzy terms are expanded against the vocabulary first")
        raise TypeError(f"not a query node: {x!r}")

    return walk(node)


@dataclass(frozen=True)
class Scoring:
    """How an operator query's matches score (see the module docstring).

    ``weights``: each positive index term's boost (0.0: a term only highlighted in
    snippets, such as a prefix's expansions); ``phrases``: sloppy phrases and their
    boosts; ``constants``: expanded prefixes and their boosts.
    """

    weights: dict[str, float]
    phrases: tuple[tuple[PhraseNode, float], ...] = ()
    constants: tuple[tuple[AnyOf, float], ...] = ()


def scoring_of(node: Node | None) -> Scoring:
    """The scoring clauses of an expanded AST: its positive terms, sloppy phrases, prefixes."""
    weights: dict[str, float] = {}
    phrases: dict[PhraseNode, float] = {}
    constants: dict[AnyOf, float] = {}

    def term(t: str, w: float) -> None:
        weights[t] = max(weights.get(t, 0.0), w)

    def walk(n: Node, neg: bool, w: float) -> None:
        if isinstance(n, Not):
            walk(n.child, not neg, w)
        elif isinstance(n, (And, Or)):
            for c in n.children:
                walk(c, neg, w)
        elif isinstance(n, Boost):
            walk(n.child, neg, w * n.factor)
        elif neg:
            return
        elif isinstance(n, Term):
            term(n.term, w)
        elif isinstance(n, FieldTerm) and n.field == "title":
            term(n.term, w)
        elif isinstance(n, PhraseNode):
            for t in n.phrase.terms:
                term(t, 0.0 if n.slop else w)
            if n.slop:
                phrases[n] = max(phrases.get(n, 0.0), w)
        elif isinstance(n, AnyOf):
            constants[n] = max(constants.get(n, 0.0), w)
            for t in highlighted(n):  # in the snippet, not in the score
                term(t, 0.0)

    if node is not None:
        walk(node, False, 1.0)
    return Scoring(weights, tuple(phrases.items()), tuple(constants.items()))


def expr_scores(
    plan: Any,
    source: MatchSource,
    docs: np.ndarray,
    norm: np.ndarray,
    memo: dict[Any, np.ndarray],
) -> np.ndarray:
    """The score of each matched document (sorted ``docs``, their length ``norm``s): the
    clauses of ``plan.scoring`` under ``plan``'s corpus statistics; ``memo`` is what
    :func:`evaluate` filled for the same documents."""
    scoring: Scoring = plan.scoring if plan.scoring is not None else scoring_of(plan.expr)
    bm = np.zeros(docs.size)
    if docs.size == 0:
        return bm
    idf_of = dict(zip(plan.terms, plan.idfs, strict=True))
    for term, term_idf in zip(plan.terms, plan.idfs, strict=True):
        w = scoring.weights.get(term, 1.0)
        if w == 0.0:
            continue
        tf = source.tfs(term, docs)
        has = tf > 0
        if has.any():
            part = term_idf * tf[has] / (tf[has] + norm[has])
            bm[has] += part if w == 1.0 else w * part
    for node, w in scoring.phrases:
        freq = memo[node][docs]
        has = freq > 0
        phrase_idf = sum(idf_of.get(t, 0.0) for t in node.phrase.terms)
        bm[has] += w * phrase_idf * freq[has] / (freq[has] + norm[has])
    for prefix, w in scoring.constants:
        bm[memo[prefix][docs]] += w * CONSTANT_SCORE
    return bm


def expand_prefixes(
    node: Node,
    expand: Callable[[str], list[str]],
    fuzzy: Callable[[Fuzzy], list[tuple[str, float]]] | None = None,
) -> Node:
    """``node`` with every ``prefix*`` replaced by an :class:`AnyOf` of the index terms it
    expands to, and every ``word~N`` by an OR of its expansions, each boosted by its
    similarity.

    ``expand(prefix)`` lists the matching index keys (already cut to the expansion limit;
    a field's prefix is asked as ``title:pre``); ``fuzzy(node)`` the ``(term, similarity)``
    pairs. A prefix or fuzzy word that expands to nothing matches nothing.
    """

    def leaf(x: Node) -> Node:
        if isinstance(x, Prefix):
            return AnyOf(tuple(expand(x.prefix)), x.prefix)
        if isinstance(x, FieldPrefix):
            name = f"{x.field}:{x.prefix}"
            return AnyOf(tuple(expand(name)), name)
        if isinstance(x, Fuzzy):
            found = fuzzy(x) if fuzzy is not None else []
            return Or(tuple(Term(t) if s == 1.0 else Boost(Term(t), s) for t, s in found))
        return x

    return map_nodes(node, leaf)
