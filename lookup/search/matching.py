"""Which documents of one segment (or real-time shard) a query AST matches.

Every node becomes a boolean mask over the segment's documents: a term sets the
documents of its posting list, a phrase keeps the documents of its terms' intersection
whose positions line up (:func:`~lookup.search.bm25.phrase_mask`), ``after:``/``before:``
compare the crawl times, and AND, OR and NOT are ``&``, ``|`` and ``~``. A mask costs one
byte per document and node, which is cheap next to decoding the posting lists; the
classic fast path in :mod:`shard` still answers queries that are only terms and phrases.

Scoring is unchanged: every matched document scores the BM25 sum of the query's
positive terms (those not under a NOT) it holds — a function of the term's statistics,
its tf and the document's length, as in the fast path.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

import numpy as np

from lookup.search.analysis import Phrase
from lookup.search.query import (
    And,
    CrawledRange,
    FieldPrefix,
    FieldTerm,
    Node,
    Not,
    Or,
    PhraseNode,
    Prefix,
    Term,
    map_nodes,
)


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


def evaluate(node: Node, source: MatchSource) -> np.ndarray:
    """Boolean mask over ``source``'s documents: those the query matches (liveness not applied)."""
    n = source.n_docs
    masks: dict[str, np.ndarray] = {}

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
            if cand.size:
                out[cand[source.phrase_docs(x.phrase, cand)]] = True
            return out
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
        if isinstance(x, (Prefix, FieldPrefix)):
            raise ValueError("prefixes are expanded against the vocabulary before matching")
        raise TypeError(f"not a query node: {x!r}")

    return walk(node)


def expand_prefixes(node: Node, expand: Callable[[str], list[str]]) -> Node:
    """``node`` with every ``prefix*`` replaced by an OR of the index terms it expands to.

    ``expand(prefix)`` lists the matching index terms (already cut to the expansion
    limit); a prefix that expands to nothing becomes an empty OR, which matches nothing.
    """

    def leaf(x: Node) -> Node:
        if isinstance(x, Prefix):
            return Or(tuple(Term(t) for t in expand(x.prefix)))
        if isinstance(x, FieldPrefix):
            key = f"{x.field}:"
            return Or(tuple(FieldTerm(x.field, t[len(key) :]) for t in expand(key + x.prefix)))
        return x

    return map_nodes(node, leaf)
