"""Dynamic pruning: a segment's top k without scoring every matching document.

MaxScore with block bounds, vectorised with numpy: a posting-at-a-time WAND loop would
spend in Python overhead far more than it saves, so every step below is a handful of
whole-array operations.

* **Bounds.** Block ``b`` of term ``t`` holds no posting scoring more than
  ``score_t(max tf of b, shortest document of b)`` — both stored in the skip table
  (segment format 3). BM25 grows with tf and shrinks with length, so the bound holds
  for any ``k1``, ``b`` and corpus-wide average length. A term's list bound is the
  same with the list's largest tf and shortest document.
* **OR (MaxScore).** The rarest term's list is scored on its own first: its k-th best
  partial score is a threshold θ no top-k document can be below (a document's score
  only grows with its other terms, and the signal boosts never lower it). Terms are
  then taken weakest bound first while their bounds sum below θ: a document holding
  only those cannot reach the top k, so they are *non-essential* — never decoded
  whole, only probed through their skip tables for the candidates the essential
  terms produce. Candidates whose essential score plus the non-essential terms'
  **block** bounds at their position stays below θ are dropped before the probe.
* **AND.** The rarest list gives the candidates. Each candidate's bound is its exact
  score there plus the other terms' block bounds at its position (a candidate past
  the end of another list cannot match at all). When there are many, the best-bound
  ones are probed first to set θ, and the rest only if their bound reaches θ.

Results are identical to exhaustive scoring, not merely close: each document is
scored with the same float operations in the same order (terms summed in plan order
from 0.0, see :func:`accumulate`), ties are ordered by (URL key, doc id) as
:func:`top_k` orders them, and bounds carry a relative slack of :data:`SLACK` so that
float rounding can never push a real score above its bound. Bounds are compared
with ``<`` only: a document scoring exactly θ may still win its tie on the URL key.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from lookup.search.bm25 import length_norm, term_scores
from lookup.search.postings import PostingList

#: Relative slack on every bound (float rounding of a score stays far below it).
SLACK = 1e-9
#: OR terms are only probed when their lists are this many times the essential ones.
PROBE_RATIO = 8
#: AND candidates above this many are probed in two rounds: the best bounds first.
AND_SEED = 1024

_NO_DOCS = np.zeros(0, dtype=np.int64)
_NO_SCORES = np.zeros(0, dtype=np.float64)


def top_k(scores: np.ndarray, keys: np.ndarray, k: int) -> np.ndarray:
    """Indices of the k best scores, best first; equal scores by key, then by index."""
    if scores.size == 0 or k <= 0:
        return np.zeros(0, dtype=np.int64)
    if scores.size > k:
        threshold = np.partition(scores, scores.size - k)[scores.size - k]
        cand = np.flatnonzero(scores >= threshold)
    else:
        cand = np.arange(scores.size)
    order = np.lexsort((keys[cand], -scores[cand]))[:k]  # stable: equal keys by index
    return cand[order]


def accumulate(
    parts_d: Sequence[np.ndarray], parts_s: Sequence[np.ndarray]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per distinct document (ascending): its summed score and how many parts had it.

    Each part holds distinct documents; a document's contributions are added in part
    order starting from 0.0 (``bincount`` adds sequentially), the one summation order
    exhaustive and pruned scoring share so that their floats agree bit for bit.
    """
    if not parts_d:
        return _NO_DOCS, _NO_SCORES, _NO_DOCS
    all_d = np.concatenate(parts_d)
    if all_d.size == 0:
        return _NO_DOCS, _NO_SCORES, _NO_DOCS
    docs, inv = _distinct(all_d)
    sums = np.bincount(inv, weights=np.concatenate(parts_s), minlength=docs.size)
    counts = np.bincount(inv, minlength=docs.size)
    return docs, sums, counts


def dense_or_sparse_sum(
    parts_d: Sequence[np.ndarray], parts_s: Sequence[np.ndarray], n: int
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`accumulate` for ``n`` documents, by a dense count when the parts are large.

    Both ways add a document's contributions in part order from 0.0.
    """
    all_d = np.concatenate(parts_d) if parts_d else _NO_DOCS
    if all_d.size * 4 > n:
        acc = np.bincount(all_d, weights=np.concatenate(parts_s), minlength=n)
        out_d = np.flatnonzero(np.bincount(all_d, minlength=n))
        return out_d, acc[out_d]
    docs, sums, _ = accumulate(parts_d, parts_s)
    return docs, sums


@dataclass
class PrunedTop:
    """A segment's top k (best first) and how much work pruning left to do."""

    docs: np.ndarray
    bm25: np.ndarray
    final: np.ndarray
    scored: int  # documents scored exactly (every term's contribution summed)
    skipped_terms: int  # OR: terms never decoded whole, only probed
    dropped: int  # candidates a block bound ruled out before probing


def has_bounds(lists: Sequence[PostingList | None]) -> bool:
    """Whether every present list carries block bounds (segment format 3 and later)."""
    return all(pl is None or pl.block_maxtf is not None for pl in lists)


def list_bound(pl: PostingList, term_idf: float, avgdl: float, k1: float, b: float) -> float:
    """The most any posting of the list can score (slack included)."""
    assert pl.block_maxtf is not None and pl.block_mindl is not None
    tf = float(pl.block_maxtf.max())
    norm = k1 * (1.0 - b + b * float(pl.block_mindl.min()) / avgdl)
    return term_idf * tf / (tf + norm) * (1.0 + SLACK)


def block_bounds(pl: PostingList, term_idf: float, avgdl: float, k1: float, b: float) -> np.ndarray:
    """Per block, the most any of its postings can score (slack included)."""
    norm = length_norm(pl.block_mindl, avgdl, k1, b)  # type: ignore[arg-type]
    return term_scores(pl.block_maxtf, norm, term_idf) * (1.0 + SLACK)  # type: ignore[arg-type]


def prune_top_k(
    lists: Sequence[PostingList | None],
    idfs: Sequence[float],
    norm: np.ndarray,
    keys: np.ndarray,
    k: int,
    avgdl: float,
    k1: float,
    b: float,
    conjunctive: bool,
    live: np.ndarray | None = None,
    blend: Callable[[np.ndarray, np.ndarray], np.ndarray] | None = None,
    max_boost: float = 1.0,
    floor: float = -np.inf,
    decline_below: float = 0.0,
) -> PrunedTop | None:
    """The top ``k`` documents of one segment by final score, ties by (key, doc id).

    ``lists`` are the query terms' posting lists in plan order (None: not in this
    segment), ``idfs`` their weights and ``norm`` every document's BM25 length norm
    (:func:`~lookup.search.bm25.length_norm` with ``avgdl``, ``k1``, ``b``); ``live``
    masks out deleted documents (None: all live). ``blend(docs, bm25)`` turns BM25
    into the final score and may raise it by at most the factor ``max_boost`` and never
    lower it. Only documents scoring at least ``floor`` are needed (a threshold another
    segment already reached): the result holds every such document of the exact top k.

    ``decline_below`` (OR only) makes it a planner: None — nothing scored beyond the
    rarest list — when the lists MaxScore would only probe hold fewer than that many times
    the postings of those it must score whole, so that a faster exhaustive scorer (the
    compiled kernels) should take the query instead.
    """
    empty = PrunedTop(_NO_DOCS, _NO_SCORES, _NO_SCORES, 0, 0, 0)
    if k <= 0 or (conjunctive and any(pl is None for pl in lists)):
        return empty
    terms = [(j, pl) for j, pl in enumerate(lists) if pl is not None and pl.df > 0]
    if not terms or (conjunctive and len(terms) < len(lists)):
        return empty
    if not has_bounds([pl for _, pl in terms]):
        raise ValueError("pruning needs block bounds (segment format 3)")
    rare = min(range(len(terms)), key=lambda i: terms[i][1].df)
    d_r, tf_r = terms[rare][1].decode()
    if live is not None:
        keep = live[d_r]
        d_r, tf_r = d_r[keep], tf_r[keep]
    s_r = (
        None
        if conjunctive and len(terms) > 1
        else term_scores(tf_r, norm[d_r], idfs[terms[rare][0]])
    )
    if conjunctive and len(terms) == 1:
        assert s_r is not None  # a lone term is scored whole above
        docs, bm, dropped, skipped = d_r, s_r, 0, 0
    elif conjunctive:
        docs, bm, dropped = _and(terms, rare, d_r, tf_r, s_r, idfs, norm, keys, k, avgdl, k1, b,
                                 blend, max_boost, floor)  # fmt: skip
        skipped = 0
    else:
        out = _or(terms, rare, d_r, tf_r, s_r, idfs, norm, k, avgdl, k1, b, live, max_boost,
                  floor, decline_below)  # fmt: skip
        if out is None:
            return None
        docs, bm, skipped, dropped = out
    if docs.size == 0:  # (what was dropped or only probed still says the count is a bound)
        return PrunedTop(_NO_DOCS, _NO_SCORES, _NO_SCORES, 0, skipped, dropped)
    final = blend(docs, bm) if blend is not None else bm
    top = _best(final, keys[docs], docs, k)
    return PrunedTop(docs[top], bm[top], final[top], int(docs.size), skipped, dropped)


def _or(terms, rare, d_r, tf_r, s_r, idfs, norm, k, avgdl, k1, b, live, max_boost, floor,  # type: ignore[no-untyped-def]
        decline_below=0.0):  # fmt: skip
    """OR candidates with their exact BM25: MaxScore over list and block bounds (None:
    declined, the probed lists are under ``decline_below`` times the scored ones)."""
    if len(terms) == 1:
        return d_r, s_r, 0, 0
    theta = floor
    if d_r.size >= k:  # the k best partial scores are real documents' lower bounds
        theta = max(theta, float(np.partition(s_r, d_r.size - k)[d_r.size - k]))
    bounds = [list_bound(pl, idfs[j], avgdl, k1, b) * max_boost for j, pl in terms]
    weakest = sorted(range(len(terms)), key=lambda i: bounds[i])
    total = 0.0
    passive: list[int] = []
    for i in weakest[:-1]:  # the strongest term stays essential
        total += bounds[i]
        if total >= theta:
            break
        passive.append(i)
    essential_df = sum(terms[i][1].df for i in range(len(terms)) if i not in passive)
    if sum(terms[i][1].df for i in passive) < decline_below * essential_df:
        return None
    if sum(terms[i][1].df for i in passive) < PROBE_RATIO * essential_df:
        passive = []  # probing would decode most of those lists anyway: score them whole
    decoded: dict[int, tuple[np.ndarray, np.ndarray]] = {rare: (d_r, tf_r)}
    essential = [i for i in range(len(terms)) if i not in passive]
    for i in essential:
        if i not in decoded:
            d, tf = terms[i][1].decode()
            if live is not None:
                keep = live[d]
                d, tf = d[keep], tf[keep]
            decoded[i] = (d, tf)
    dropped = 0
    if passive:
        cand = _union([decoded[i][0] for i in essential])[0]
        passive_df = sum(terms[i][1].df for i in passive)
        if k < cand.size and 8 * cand.size < passive_df:  # block-max: drop what cannot reach θ
            ub = np.zeros(cand.size)
            for i in essential:
                d, tf = decoded[i]
                if d.size == 0:  # every posting of the list deleted
                    continue
                at = np.searchsorted(d, cand)
                at_c = np.minimum(at, d.size - 1)
                has = d[at_c] == cand
                j = terms[i][0]
                ub[has] += term_scores(tf[at_c[has]], norm[cand[has]], idfs[j])
            ub *= 1.0 + SLACK
            for i in passive:
                pl = terms[i][1]
                blk = np.searchsorted(pl.block_last, cand)
                inside = blk < pl.blocks
                bb = block_bounds(pl, idfs[terms[i][0]], avgdl, k1, b)
                ub[inside] += bb[blk[inside]]
            keep = ub * max_boost >= theta
            dropped = int(cand.size - np.count_nonzero(keep))
            cand = cand[keep]
        for i in passive:
            if i in decoded:  # the rare term itself: found by search, not by a probe
                d, tf = decoded[i]
                at = np.searchsorted(d, cand)
                at_c = np.minimum(at, max(d.size - 1, 0))
                has = (at < d.size) & (d[at_c] == cand) if d.size else np.zeros(cand.size, bool)
                decoded[i] = (cand[has], tf[at_c[has]])
            else:
                found, tf, _ = terms[i][1].lookup(cand)
                decoded[i] = (cand[found], tf)
        if cand.size and len(essential) < len(terms):
            # essential lists keep only candidates (those the block bounds let through)
            for i in essential:
                d, tf = decoded[i]
                if dropped:
                    at = np.searchsorted(cand, d)
                    at_c = np.minimum(at, cand.size - 1)
                    has = cand[at_c] == d
                    decoded[i] = (d[has], tf[has])
    parts_d, parts_s = [], []
    for i, (j, _) in enumerate(terms):
        d, tf = decoded[i]
        parts_d.append(d)
        parts_s.append(s_r if (i == rare and d is d_r) else term_scores(tf, norm[d], idfs[j]))
    docs, bm = dense_or_sparse_sum(parts_d, parts_s, norm.size)
    return docs, bm, len(passive), dropped


def _and(terms, rare, d_r, tf_r, s_r, idfs, norm, keys, k, avgdl, k1, b, blend, max_boost, floor):  # type: ignore[no-untyped-def]
    """AND matches with their exact BM25 (terms summed in plan order)."""
    others = sorted((i for i in range(len(terms)) if i != rare), key=lambda i: terms[i][1].df)
    dropped = 0
    cand, tf_c = d_r, tf_r
    if others and cand.size > AND_SEED:
        ub = term_scores(tf_r, norm[d_r], idfs[terms[rare][0]]) * (1.0 + SLACK)
        inside = np.ones(cand.size, dtype=bool)
        for i in others:
            pl = terms[i][1]
            blk = np.searchsorted(pl.block_last, cand)
            inside &= blk < pl.blocks  # past the end of a list: no match
            bb = block_bounds(pl, idfs[terms[i][0]], avgdl, k1, b)
            ub = ub + bb[np.minimum(blk, pl.blocks - 1)]
        ub *= max_boost
        order = np.flatnonzero(inside)
        order = order[np.argsort(-ub[order], kind="stable")]
        first = np.sort(order[:AND_SEED])
        docs, bm = _intersect(terms, rare, others, cand[first], tf_c[first], idfs, norm)
        theta = floor
        if docs.size >= k:
            final = blend(docs, bm) if blend is not None else bm
            theta = max(theta, float(np.partition(final, final.size - k)[final.size - k]))
        rest = order[AND_SEED:]
        rest = np.sort(rest[ub[rest] >= theta])
        dropped = int(cand.size - first.size - rest.size)
        d2, bm2 = _intersect(terms, rare, others, cand[rest], tf_c[rest], idfs, norm)
        return np.concatenate([docs, d2]), np.concatenate([bm, bm2]), dropped
    docs, bm = _intersect(terms, rare, others, cand, tf_c, idfs, norm)
    return docs, bm, dropped


def _intersect(terms, rare, others, cand, tf_c, idfs, norm):  # type: ignore[no-untyped-def]
    """Candidates (sorted) of the rare term that every other term has, and their BM25."""
    tfs = {rare: tf_c}
    for i in others:
        if cand.size == 0:
            break
        found, tf, _ = terms[i][1].lookup(cand)
        cand = cand[found]
        for key in tfs:
            tfs[key] = tfs[key][found]
        tfs[i] = tf
    if cand.size == 0 or len(tfs) < len(terms):
        return _NO_DOCS, _NO_SCORES
    nrm = norm[cand]
    bm = np.zeros(cand.size)
    for i, (j, _) in enumerate(terms):
        bm = bm + term_scores(tfs[i], nrm, idfs[j])
    return cand, bm


def _union(parts: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Distinct documents of all parts, and each part entry's index among them."""
    all_d = np.concatenate(parts) if parts else _NO_DOCS
    if all_d.size == 0:
        return _NO_DOCS, _NO_DOCS
    return _distinct(all_d)


def _distinct(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(values, return_inverse=True)`` by one sort (several times faster here)."""
    order = np.argsort(values, kind="stable")
    ordered = values[order]
    first = np.empty(ordered.size, dtype=bool)
    first[:1] = True
    np.not_equal(ordered[1:], ordered[:-1], out=first[1:])
    inv = np.empty(values.size, dtype=np.int64)
    inv[order] = np.cumsum(first) - 1
    return ordered[first], inv


def _best(final: np.ndarray, keys: np.ndarray, docs: np.ndarray, k: int) -> np.ndarray:
    """Indices of the k best by (-final, key, doc): :func:`top_k` over doc-ordered arrays."""
    if final.size > k:
        threshold = np.partition(final, final.size - k)[final.size - k]
        cand = np.flatnonzero(final >= threshold)
    else:
        cand = np.arange(final.size)
    order = np.lexsort((docs[cand], keys[cand], -final[cand]))[:k]
    return cand[order]
