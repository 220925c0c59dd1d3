"""Dynamic pruning: a segment's top k without scoring every matching document.

Block-max MaxScore over doc-id intervals, evaluated a batch of blocks at a time with
numpy (a posting-at-a-time WAND loop would spend its savings on Python overhead):

1. **Bounds.** Block ``b`` of term ``t`` holds postings none of which can score more
   than ``U_t(b) = score_t(max tf of b, shortest document of b)`` — both stored in the
   skip table (segment format 3). BM25 grows with tf and shrinks with length, so the
   bound holds for any ``k1``, ``b`` and corpus-wide average length.
2. **Intervals.** The block boundaries of all the query's terms cut the doc-id space
   into intervals inside which every term has at most one block, so
   ``U(interval) = Σ_t U_t(its block)`` (times the largest signal boost) bounds every
   document in it. Under AND an interval where some term has no block cannot match.
3. **Rounds.** Intervals are visited best bound first, in batches that grow fourfold
   a round. A batch decodes only its blocks, scores their documents exactly, merges
   them into the running top k and raises the threshold θ to the k-th best final
   score; every interval whose bound is below θ is then dropped unvisited. Intervals
   whose bound *equals* θ are still visited: a tie is broken by URL key, so a document
   scoring exactly θ may still enter.

Results are identical to exhaustive scoring, not merely close: each document is
scored once, with the same float operations in the same order (terms summed in plan
order from 0.0, see :func:`accumulate`), and ties are ordered by (URL key, doc id)
as :func:`top_k` orders them. Bounds carry a relative slack of :data:`SLACK` so that
float rounding can never push a real score above its bound.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from lookup.search.bm25 import length_norm, term_scores
from lookup.search.postings import PostingList

#: Relative slack on every bound (float rounding of a score stays far below it).
SLACK = 1e-9
#: Intervals in the first round; each later round takes GROWTH times more.
FIRST_ROUND = 8
GROWTH = 4
#: Blocks of the rarest term scored first, to start with a useful threshold.
SEED_BLOCKS = 4

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
    docs, inv = np.unique(all_d, return_inverse=True)
    sums = np.bincount(inv, weights=np.concatenate(parts_s), minlength=docs.size)
    counts = np.bincount(inv, minlength=docs.size)
    return docs, sums, counts


@dataclass
class PrunedTop:
    """A segment's top k (best first) and how much work pruning left to do."""

    docs: np.ndarray
    bm25: np.ndarray
    final: np.ndarray
    intervals: int  # doc-id intervals the query's blocks cut the segment into
    visited: int  # intervals whose documents were scored
    scored: int  # documents scored exactly


def has_bounds(lists: Sequence[PostingList | None]) -> bool:
    """Whether every present list carries block bounds (segment format 3 and later)."""
    return all(pl is None or pl.block_maxtf is not None for pl in lists)


def prune_top_k(
    lists: Sequence[PostingList | None],
    idfs: Sequence[float],
    doclen: np.ndarray,
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
) -> PrunedTop:
    """The top ``k`` documents of one segment by final score, ties by (key, doc id).

    ``lists`` are the query terms' posting lists in plan order (None: not in this
    segment) and ``idfs`` their weights; ``live`` masks out deleted documents (None:
    all live). ``blend(docs, bm25)`` turns BM25 into the final score and must not
    raise it by more than the factor ``max_boost``. Only documents scoring at least
    ``floor`` are needed (a threshold another segment already reached); the result
    holds every such document of the exact top k and possibly some below it.
    """
    empty = PrunedTop(_NO_DOCS, _NO_SCORES, _NO_SCORES, 0, 0, 0)
    if k <= 0 or (conjunctive and any(pl is None for pl in lists)):
        return empty
    terms = [(j, pl) for j, pl in enumerate(lists) if pl is not None and pl.df > 0]
    if not terms or (conjunctive and len(terms) < len(lists)):
        return empty
    if not has_bounds([pl for _, pl in terms]):
        raise ValueError("pruning needs block bounds (segment format 3)")
    ends = np.unique(np.concatenate([pl.block_last for _, pl in terms]))
    n_iv = int(ends.size)
    bound = np.zeros(n_iv)
    valid = np.ones(n_iv, dtype=bool)
    blocks: list[np.ndarray] = []  # per term: its block covering each interval
    covers: list[np.ndarray] = []  # per term: whether it has a block there
    ubs: list[np.ndarray] = []  # per term: its blocks' bounds
    for j, pl in terms:
        nb = pl.blocks
        blk = np.searchsorted(pl.block_last, ends)
        ok = blk < nb
        blk = np.minimum(blk, nb - 1)
        norm = length_norm(pl.block_mindl, avgdl, k1, b)  # type: ignore[arg-type]
        ub = term_scores(pl.block_maxtf, norm, idfs[j])  # type: ignore[arg-type]
        ubs.append(ub)
        bound += np.where(ok, ub[blk], 0.0)
        valid &= ok
        blocks.append(blk)
        covers.append(ok)
    bound *= (1.0 + SLACK) * max_boost
    top_ub = [float(u.max()) * (1.0 + SLACK) * max_boost for u in ubs]
    cand = np.flatnonzero(valid) if conjunctive else np.arange(n_iv)
    order = cand[np.argsort(-bound[cand], kind="stable")]

    dfs = [pl.df for _, pl in terms]
    seen = np.zeros(doclen.size, dtype=bool)  # documents already scored
    best_d, best_bm, best_f = _NO_DOCS, _NO_SCORES, _NO_SCORES
    theta = floor
    scored = 0

    def probe(parts_d: list[np.ndarray], parts_tf: list[np.ndarray], ess: list[int]) -> None:
        """Fill the non-essential terms' parts by probing them for the essential docs."""
        if len(ess) == len(terms):
            return
        cand = _union([parts_d[i] for i in ess])[0]
        for i in range(len(terms)):
            if i not in ess and cand.size:
                found, tf, _ = terms[i][1].lookup(cand)
                parts_d[i], parts_tf[i] = cand[found], tf

    def merge(parts_d: list[np.ndarray], parts_tf: list[np.ndarray]) -> None:
        """Score the parts' documents exactly and keep the k best so far; raise θ."""
        nonlocal best_d, best_bm, best_f, theta, scored
        docs, inv = _union(parts_d)
        if docs.size == 0:
            return
        seen[docs] = True
        norm = length_norm(doclen[docs], avgdl, k1, b)
        parts_s = []
        at = 0
        for (j, _), d, tf in zip(terms, parts_d, parts_tf, strict=True):
            parts_s.append(term_scores(tf, norm[inv[at : at + d.size]], idfs[j]))
            at += d.size
        bm = np.bincount(inv, weights=np.concatenate(parts_s), minlength=docs.size)
        if conjunctive:
            full = np.bincount(inv, minlength=docs.size) == len(terms)
            docs, bm = docs[full], bm[full]
            if docs.size == 0:
                return
        scored += int(docs.size)
        final = blend(docs, bm) if blend is not None else bm
        best_d = np.concatenate([best_d, docs])
        best_bm = np.concatenate([best_bm, bm])
        best_f = np.concatenate([best_f, final])
        top = _best(best_f, keys[best_d], best_d, k)
        best_d, best_bm, best_f = best_d[top], best_bm[top], best_f[top]
        if best_d.size >= k:
            theta = max(theta, float(best_f[k - 1]))

    def empty_parts() -> tuple[list[np.ndarray], list[np.ndarray]]:
        return [_NO_DOCS] * len(terms), [_NO_DOCS] * len(terms)

    # round 0 seeds θ: the rarest term's most promising blocks, every term probed there
    seed = int(np.argmin(dfs))
    pl0 = terms[seed][1]
    seed_blocks = np.sort(np.argsort(-ubs[seed], kind="stable")[: SEED_BLOCKS])
    d, tf = pl0.decode_blocks(seed_blocks)
    if live is not None:
        keep = live[d]
        d, tf = d[keep], tf[keep]
    parts_d, parts_tf = empty_parts()
    parts_d[seed], parts_tf[seed] = d, tf
    probe(parts_d, parts_tf, [seed])
    merge(parts_d, parts_tf)
    done = np.zeros(pl0.blocks, dtype=bool)  # the seed term's blocks already scored
    done[seed_blocks] = True
    if conjunctive:  # every match holds the seed term: its scored blocks are finished
        order = order[~done[blocks[seed][order]]]

    take = FIRST_ROUND
    in_batch = np.zeros(n_iv, dtype=bool)
    visited = 0
    while order.size:
        if theta > -np.inf:
            order = order[bound[order] >= theta]
            if order.size == 0:
                break
        batch, order = order[:take], order[take:]
        take *= GROWTH
        visited += int(batch.size)
        in_batch[:] = False
        in_batch[batch] = True
        ess = _essential(top_ub, theta, conjunctive, dfs)
        parts_d, parts_tf = empty_parts()
        for i in ess:
            blk, ok = blocks[i], covers[i]
            need = blk[batch] if conjunctive else blk[batch][ok[batch]]
            if i == seed:
                need = need[~done[need]]
            if need.size == 0:
                continue
            d, tf = terms[i][1].decode_blocks(np.unique(need))
            # a block may reach into other intervals; documents are scored only once
            keep = in_batch[np.searchsorted(ends, d)] & ~seen[d]
            if live is not None:
                keep &= live[d]
            parts_d[i], parts_tf[i] = d[keep], tf[keep]
        probe(parts_d, parts_tf, ess)
        merge(parts_d, parts_tf)
    return PrunedTop(best_d, best_bm, best_f, n_iv, visited, scored)


def _essential(top_ub: list[float], theta: float, conjunctive: bool, dfs: list[int]) -> list[int]:
    """The terms whose blocks are decoded; the others are only probed for their documents.

    AND: the rarest term (every match has it). OR (MaxScore): all but the weakest terms
    whose bounds together stay below θ — a document holding only those cannot enter.
    """
    if conjunctive:
        return [int(np.argmin(dfs))]
    order = sorted(range(len(top_ub)), key=lambda i: top_ub[i])
    total = 0.0
    skip = 0
    for i in order[:-1]:  # the strongest term is always essential
        total += top_ub[i]
        if total >= theta:
            break
        skip += 1
    return sorted(order[skip:])


def _union(parts: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Distinct documents of all parts, and each part entry's index among them."""
    all_d = np.concatenate(parts) if parts else _NO_DOCS
    if all_d.size == 0:
        return _NO_DOCS, _NO_DOCS
    return np.unique(all_d, return_inverse=True)


def _best(final: np.ndarray, keys: np.ndarray, docs: np.ndarray, k: int) -> np.ndarray:
    """Indices of the k best by (-final, key, doc): :func:`top_k` over doc-ordered arrays."""
    if final.size > k:
        threshold = np.partition(final, final.size - k)[final.size - k]
        cand = np.flatnonzero(final >= threshold)
    else:
        cand = np.arange(final.size)
    order = np.lexsort((docs[cand], keys[cand], -final[cand]))[:k]
    return cand[order]
