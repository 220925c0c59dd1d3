"""A query rewritten against the index's vocabulary: prefixes, fuzzy words, typo tolerance.

* ``pre*`` becomes an :class:`~lookup.search.query.AnyOf` of its commonest index terms,
  at most :data:`MAX_PREFIX_TERMS` (Elasticsearch's ``max_expansions``), scored as a
  constant (Lucene's constant-score rewrite). The answer's ``expansions`` says how many
  terms the prefix has, how many were used and whether the limit cut it.
* ``word~N`` (Lucene's FuzzyQuery) becomes an OR of the index terms within N edits
  (optimal string alignment), at most :data:`MAX_FUZZY_TERMS` (Lucene's
  ``defaultMaxExpansions``), the most similar first (then the commonest): each scores
  its own BM25 times Lucene's similarity ``1 - edits / min(len)``
  (:func:`~lookup.search.spelling.similarity`); its document frequencies are its own
  (no blending of df across the expansions, as Lucene's blended rewrite would).
* **Typo tolerance**: a written word in fewer than ``below`` documents (the
  ``search_typo_below`` setting; by default :data:`TYPO_BELOW`, 1: a word no page has —
  a rare word spelt right keeps its exact answer) becomes
  ``(word OR correction …)``: the terms within Meilisearch's bounds (one typo from 5
  typed characters, two from 9; a change to the first letter counts two), at most
  :data:`MAX_TYPO_TERMS`, each scored as a fuzzy expansion — below the word itself,
  whose similarity is 1. Only words in few documents pay for it (a dictionary scan);
  a query whose words are all common never comes here. A quoted word, a word under a
  NOT, a field value and a phrase's words are left as typed. The answer's
  ``corrections`` says, per corrected word, the best correction.

Distances are measured between index terms (stems: ``pikle`` is ``pikl``, ``pickle``
is ``pickl``), the typo bound on the word as typed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from lookup.search import spelling
from lookup.search.matching import expand_prefixes
from lookup.search.query import And, Boost, Fuzzy, Node, Or, PhraseNode, Term, parse

#: A ``prefix*`` becomes at most this many index terms, its commonest (Elasticsearch's
#: ``max_expansions``); they match and score a constant, whatever their number.
MAX_PREFIX_TERMS = 50
#: A ``word~N`` becomes at most this many index terms (Lucene's FuzzyQuery default).
MAX_FUZZY_TERMS = 50
#: A written word in fewer documents than this is expanded to its likely corrections.
TYPO_BELOW = 1
#: Corrections one word may take at most.
MAX_TYPO_TERMS = 16


class Vocabulary:
    """The index terms of one version and its real-time tier, as expansions ask for them."""

    def __init__(self, snapshot: Any) -> None:
        self.snapshot = snapshot
        rt = snapshot.realtime
        self.rt_df: dict[str, int] = rt.state.df if rt is not None else {}

    def df(self, term: str) -> int:
        """Visible documents holding ``term`` (batch and real-time tiers)."""
        return int(self.snapshot.df(term)) + self.rt_df.get(term, 0)

    def with_prefix(self, prefix: str, limit: int) -> tuple[list[str], int]:
        """The commonest ``limit`` terms starting with ``prefix``, and how many there are.

        A word's prefix never expands to field terms (``title:…``); a field's does.
        """
        found = dict(self.snapshot.terms_with_prefix(prefix))
        for t, n in self.rt_df.items():
            if n > 0 and t.startswith(prefix):
                found[t] = found.get(t, 0) + n
        if ":" not in prefix:
            found = {t: n for t, n in found.items() if ":" not in t}
        ranked = sorted(found.items(), key=lambda kv: (-kv[1], kv[0]))
        return [t for t, _ in ranked[:limit]], len(ranked)

    def near(self, term: str, k: int) -> list[tuple[str, int, int]]:
        """``(term, distance, df)`` of every live term within ``k`` edits (itself included)."""
        found = dict(spelling.speller_for(self.snapshot).near(term, k))
        for t, n in self.rt_df.items():
            if n > 0 and t not in found and ":" not in t:
                d = spelling.edit_distance(term, t, k)
                if d <= k:
                    found[t] = d
        out = []
        for t, d in found.items():
            n = self.df(t)
            if n > 0:
                out.append((t, d, n))
        return out


def fuzzy_terms(vocab: Vocabulary, term: str, edits: int) -> tuple[list[tuple[str, float]], int]:
    """``word~N``'s expansions as ``(term, similarity)``, best first, and how many there were."""
    scored = []
    for t, d, n in vocab.near(term, edits):
        s = spelling.similarity(term, t, d)
        if s > 0.0:
            scored.append((-s, -n, t))
    scored.sort()
    return [(t, -s) for s, _, t in scored[:MAX_FUZZY_TERMS]], len(scored)


def expand(node: Node, vocab: Vocabulary) -> tuple[Node, list[dict[str, Any]]]:
    """``node`` with its prefixes and fuzzy words expanded, and what each became."""
    notes: list[dict[str, Any]] = []

    def note(operator: str, text: str, used: int, total: int, limit: int) -> None:
        entry = {
            "operator": operator,
            "text": text,
            "terms": used,
            "matching": total,
            "limit": limit,
            "truncated": total > used,
        }
        if entry not in notes:
            notes.append(entry)

    def prefix(p: str) -> list[str]:
        terms, total = vocab.with_prefix(p, MAX_PREFIX_TERMS)
        note("prefix", p + "*", len(terms), total, MAX_PREFIX_TERMS)
        return terms

    def fuzzy(x: Fuzzy) -> list[tuple[str, float]]:
        found, total = fuzzy_terms(vocab, x.term, x.edits)
        note("fuzzy", f"{x.word or x.term}~{x.edits}", len(found), total, MAX_FUZZY_TERMS)
        return found

    return expand_prefixes(node, prefix, fuzzy), notes


@dataclass
class Tolerated:
    """A query with typo tolerance applied (see the module docstring)."""

    expr: Node
    corrections: list[dict[str, Any]] = field(default_factory=list)
    #: The fewest documents a corrected word is in: what the query as typed finds at most.
    rare: int = 0
    #: A plain query's words ORed: what to search when no page has them all (its classic
    #: OR fallback); None for an operator query or one with a phrase.
    fallback: Node | None = None
    fell_back: bool = False

    def fall_back(self) -> bool:
        """Search the OR of the words instead (once; False when there is no fallback)."""
        if self.fallback is None or self.fell_back:
            return False
        self.expr, self.fell_back = self.fallback, True
        return True


def tolerate(
    snapshot: Any, text: str, terms: list[str], expr: Node | None, below: int = TYPO_BELOW
) -> Tolerated | None:
    """Typo tolerance for a query (``expr`` None: a plain one, read again from ``text``),
    or None — at once, from the terms' document frequencies, when no term is that rare."""
    vocab = Vocabulary(snapshot)
    if not terms or min(vocab.df(t) for t in terms) >= below:
        return None
    node = parse(text) if expr is None else expr
    return None if node is None else tolerate_typos(node, vocab, expr is None, below)


def tolerate_typos(
    node: Node, vocab: Vocabulary, plain: bool, below: int = TYPO_BELOW
) -> Tolerated | None:
    """``node`` with each rare written word ORed with its corrections; None if none is."""
    corrections: list[dict[str, Any]] = []
    rare: list[int] = []

    def word(x: Term) -> Node:
        df = vocab.df(x.term)
        k = spelling.typos_allowed(x.word)
        if df >= below or k == 0:
            return x
        ranked = []
        for t, d, n in vocab.near(x.term, k):
            cost = d + (t[:1] != x.term[:1])  # a wrong first letter counts two (Meilisearch)
            s = spelling.similarity(x.term, t, d)
            if t != x.term and cost <= k and s > 0.0:
                ranked.append((cost, -n, t, s))
        if not ranked:
            return x
        ranked.sort()
        best = ranked[0][2]
        to = spelling.surface(x.word, x.term, best)
        corrections.append({"from": x.word, "to": to, "position": x.pos, "typedFound": df})
        rare.append(df)
        alternatives = [Boost(Term(t), s) for _, _, t, s in ranked[:MAX_TYPO_TERMS]]
        return Or((x, *alternatives))

    def walk(n: Node) -> Node:
        if isinstance(n, Term) and n.word:
            return word(n)
        if isinstance(n, And):
            return And(tuple(walk(c) for c in n.children))
        if isinstance(n, Or):
            return Or(tuple(walk(c) for c in n.children))
        if isinstance(n, Boost):
            return Boost(walk(n.child), n.factor)
        return n  # a NOT, a phrase, a field: as typed

    expr = walk(node)
    if not corrections:
        return None
    fallback = None
    if (
        plain
        and isinstance(expr, And)
        and not any(isinstance(c, PhraseNode) for c in expr.children)
    ):
        fallback = Or(expr.children)
    return Tolerated(expr, corrections, min(rare), fallback)


def strict_found(tolerated: Tolerated | None, mode: str, found: int) -> int:
    """At most how many pages the query finds as typed (what "did you mean" improves on):
    none under an OR fallback, no more than its rarest corrected word's."""
    if mode == "or":
        return 0
    return found if tolerated is None else min(found, tolerated.rare)


def did_you_mean(
    snapshot: Any, text: str, found: int, search: Callable[[str], dict[str, Any]]
) -> dict[str, Any] | None:
    """``didYouMean``: the query with its misspelt words corrected (:mod:`.spelling`), when
    the query as typed finds fewer than ``SUGGEST_BELOW`` pages (``found``, from
    :func:`strict_found`) and ``search(corrected)`` finds more."""
    if found >= spelling.SUGGEST_BELOW:
        return None
    corrected = spelling.correct_query(text, spelling.speller_for(snapshot))
    if corrected is None or corrected == text:
        return None
    try:
        total = int(search(corrected)["estimatedTotal"])
    except ValueError:  # the coordinator's QueryError: the correction is no query
        return None
    return {"query": corrected, "estimatedTotal": total} if total > found else None
