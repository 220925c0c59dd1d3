"""One document shard: a complete index over its own documents, queried locally.

A shard scores and ranks on its own and returns only its top k — the network (here,
a thread hop) carries a handful of hits, never posting lists. Query execution:

1. fetch one posting list per term;
2. **AND**: walk the rarest list and probe the others through their skip tables, so
   only blocks that can hold a candidate are decoded; if the shard has no AND match
   it also computes the **OR** result, which the coordinator uses only when no
   shard matched every term;
3. score with BM25 using the corpus-wide statistics in the plan, blend in-links and
   freshness, and keep the top k (ties broken by URL key, so any sharding ranks alike).

:class:`IndexVersion` is one loaded manifest version: all shards, the in-link counts
from the crawl graph, and the corpus statistics.
"""

from __future__ import annotations

import bisect
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, NamedTuple, Protocol

import numpy as np

from lookup.search import kernels
from lookup.search.analysis import ANALYSIS_VERSION, Phrase
from lookup.search.bm25 import (
    QueryPlan,
    Signals,
    length_norm,
    phrase_mask,
    sloppy_freq,
    term_scores,
)
from lookup.search.docfields import DocFields, analyze_page
from lookup.search.facets import FacetCounts
from lookup.search.manifest import (
    Manifest,
    SegmentEntry,
    current_manifest,
    damaged,
    outdated,
    read_tombstones,
    shard_dir,
)
from lookup.search.matching import evaluate, expr_scores
from lookup.search.pruning import (
    AND_SEED,
    PROBE_RATIO,
    dense_or_sparse_sum,
    has_bounds,
    prune_top_k,
    top_k,
)
from lookup.search.segment import SegmentFileError, SegmentReader

#: Queries with fewer postings than this are scored exhaustively (see ``prunable``).
PRUNE_MIN_POSTINGS = 32_768
#: With the compiled kernels, OR is pruned only when the lists MaxScore probes hold this
#: many times the postings it scores whole (else the kernel is faster: issue 24's
#: measurements, benchmarks/bench_pruning.py).
KERNEL_PROBE_RATIO = 32.0

#: Source tag of a hit that came from the real-time tier instead of a batch segment.
REALTIME = -1

_NO_FLOATS = np.zeros(0, dtype=np.float64)
#: Terms whose summed segment df an index version keeps (then it starts over).
_RAW_DF_TERMS = 65_536
_ABSENT = kernels.TERM_ROW.pack(0, 0, 0, 0, 0)  # a kernel table row: no postings here


class Hit(NamedTuple):
    """One scored document; ``segment`` is :data:`REALTIME` for real-time-tier documents."""

    score: float
    urlkey: int
    bm25: float
    shard: int
    segment: int
    doc: int


#: ``Hit`` from a 6-tuple, in C (``Hit._make`` is a Python function checking the length).
_new_hit = partial(tuple.__new__, Hit)


@dataclass
class ShardAnswer:
    """What a shard sends back for one query."""

    shard: int
    hits: list[Hit]
    matched: int  # documents matching under ``mode`` in this shard (a lower bound if not exact)
    mode: str  # "and" or "or"
    docs: int  # live documents in this shard
    took_ms: float = 0.0
    replica: int = 0
    done_at: float = 0.0  # perf_counter() when the answer was ready
    exact: bool = True  # ``matched`` counts every match (False: only a lower bound)
    facets: FacetCounts | None = None  # the matches' facet counts, when the plan asks


class RealtimePart(Protocol):
    """The slice of the real-time tier a shard queries alongside its batch segments."""

    def search(self, plan: QueryPlan, conj: bool, counts: Any = None) -> tuple[list[Hit], int]: ...
    def crawled_at(self, doc: int) -> float: ...


def _plain(values: np.ndarray, dtype: type) -> np.ndarray:
    """``values`` as a writable, contiguous array of ``dtype`` (a copy only when needed)."""
    out: np.ndarray = np.ascontiguousarray(values, dtype=dtype)
    return out if out.flags.writeable else out.copy()


class SegmentView:
    """A segment as one snapshot sees it: the reader plus its live mask and in-link counts."""

    def __init__(self, reader: SegmentReader, live: np.ndarray, inlinks: np.ndarray) -> None:
        self.reader = reader
        self.inlinks = inlinks  # float per doc
        self.url_keys = reader.urlkey
        self.live = live
        self._boosts: tuple[Signals, np.ndarray, np.ndarray, float, float] | None = None
        self._norms: tuple[tuple[float, float, float], np.ndarray] | None = None
        # the compiled kernels read packed lists (format 2 and later) from a read-only view
        self._packed = reader.termtab.ndim == 2 and reader.termtab.shape[1] > 6
        self._kbuf = reader.postings_buf.view()
        self._kbuf.flags.writeable = False
        # one array type per kernel argument: a new one would compile a new kernel
        self._kkeys = _plain(self.url_keys, np.int64)
        self._kskip = _plain(reader.skip_last, np.int64)
        # the kernels read a document's length norm as ntab[klen[d]]: klen numbers the
        # distinct lengths (2 bytes a document while there are at most 65,536 of them),
        # ntab holds their norms — not 8 bytes a document (a query's postings are spread
        # over the whole segment: the fewer cache lines, the faster, issue 24)
        self._lengths, index = np.unique(reader.doclen, return_inverse=True)
        self._klen = index.astype(np.uint16 if self._lengths.size <= 1 << 16 else np.uint32)
        self._ntab: tuple[tuple[float, float, float], np.ndarray] | None = None
        # kernel_meta's rows, per term asked for (at most the segment's vocabulary)
        self._rows: dict[str, tuple[int, bytes | None]] = {}

    @property
    def live(self) -> np.ndarray:
        """Bool per doc: not tombstoned and not hidden by the real-time tier."""
        return self._live

    @live.setter
    def live(self, mask: np.ndarray) -> None:
        self._live = mask
        self.live_count = int(mask.sum())
        self.all_live = self.live_count == mask.size  # then nothing needs filtering

    def _decoded(
        self, lists: list[Any], j: int, memo: dict[int, tuple[np.ndarray, np.ndarray]] | None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Live ``(docs, tfs)`` of query term ``j``, decoded once per query (``memo``)."""
        if memo is not None and j in memo:
            return memo[j]
        d, tf = lists[j].decode()
        if not self.all_live:
            keep = self._live[d]
            d, tf = d[keep], tf[keep]
        if memo is not None:
            memo[j] = (d, tf)
        return d, tf

    def boosts(self, signals: Signals) -> tuple[np.ndarray, np.ndarray]:
        """Per-doc link boost and freshness base for these signal weights (cached)."""
        cached = self._cached_boosts(signals)
        return cached[1], cached[2]

    def _cached_boosts(
        self, signals: Signals
    ) -> tuple[Signals, np.ndarray, np.ndarray, float, float]:
        cached = self._boosts
        if cached is None or cached[0] != signals:
            link = signals.link_boost(self.inlinks)
            base = signals.fresh_base(self.reader.crawled)
            cached = (
                signals,
                link,
                base,
                float(link.max()) if link.size else 0.0,
                float(base.max()) if base.size else 0.0,
            )
            self._boosts = cached
        return cached

    def max_boost(self, signals: Signals, now: float) -> float:
        """The largest factor the signals lift any document's BM25 by here (a bound)."""
        _, _, _, link, base = self._cached_boosts(signals)
        fresh = float(signals.fresh_from_base(np.array([base]), now)[0])
        return float(signals.blend(np.ones(1), np.array([link]), np.array([fresh]))[0])

    def norm_table(self, avgdl: float, k1: float, b: float) -> np.ndarray:
        """The kernels' length norms, ``norms(...)[d] == norm_table(...)[self._klen[d]]``
        bit for bit (the same float operations on the same lengths; cached)."""
        cached = self._ntab
        if cached is None or cached[0] != (avgdl, k1, b):
            cached = self._ntab = ((avgdl, k1, b), length_norm(self._lengths, avgdl, k1, b))
        return cached[1]

    def norms(self, avgdl: float, k1: float, b: float) -> np.ndarray:
        """Every document's BM25 length norm under these statistics (cached)."""
        cached = self._norms
        if cached is None or cached[0] != (avgdl, k1, b):
            cached = ((avgdl, k1, b), length_norm(self.reader.doclen, avgdl, k1, b))
            self._norms = cached
        return cached[1]

    def prunable(
        self, plan: QueryPlan, conjunctive: bool, lists: list[Any], compiled: bool = False
    ) -> bool:
        """Whether :meth:`top` gives this query's exact top k here.

        Only when the plan does not need an exact match count (counting every match is
        the work pruning saves; exhaustive scoring counts as it goes) — nor when this
        segment cannot hold more matches than ``plan.track_total``, which are counted
        exactly as Lucene's total-hits threshold counts them — and not for
        phrases (positions decide the match), query-language expressions (``NOT``,
        ``OR`` groups, prefixes, fields: evaluated as document masks), segments without
        block bounds (formats 1 and 2), or an OR query over the candidate budget
        (exhaustive OR then scores its commonest terms only on the rarer terms'
        candidates: other results).

        With ``compiled`` (the compiled kernels can score this query exhaustively) only an
        OR over several lists is worth trying, and :meth:`top` may still decline it.
        """
        if not plan.prune or plan.exact_count or plan.phrases or plan.expr is not None:
            return False  # operators (NOT, prefixes, fields) are evaluated as masks
        if not has_bounds(lists):
            return False
        if plan.signals.link_weight < 0 or plan.signals.fresh_weight < 0:
            return False  # a boost below 1 would lower scores under the bounds' lower bound
        present = sorted(pl.df for pl in lists if pl is not None)
        at_most = (0 if len(present) < len(lists) else present[0]) if conjunctive else sum(present)
        if at_most <= plan.track_total:
            return False  # few enough to count: the total stays exact up to the threshold
        # Where pruning pays (measured: benchmarks/bench_pruning.py, bench_search.py):
        # long lists only — below PRUNE_MIN_POSTINGS numpy's per-call overhead, not the
        # postings, is the cost, and exhaustive scoring makes fewer calls; then one list
        # (its best blocks decide), OR with one list far longer than the rest (MaxScore
        # only probes it), AND with a long rarest list (block bounds drop candidates).
        # Either way the results are the same.
        if sum(present) < PRUNE_MIN_POSTINGS:
            return False
        if compiled:
            # Against the compiled kernels (benchmarks/bench_pruning.py, 1,000,000 documents:
            # issue 24) pruning AND lost at every size, 1.1-11× — the kernel probes the
            # others block by block already, and block bounds drop few candidates — and one
            # list came out even; OR pays when MaxScore only probes most of the postings,
            # which :meth:`top` decides once the rarest list has set θ (KERNEL_PROBE_RATIO).
            return not conjunctive and len(present) > 1 and sum(present) <= plan.max_candidates
        if len(present) <= 1:
            return True
        if not conjunctive and sum(present) > plan.max_candidates:
            return False
        if conjunctive:
            return present[0] > 4 * AND_SEED
        return present[-1] >= PROBE_RATIO * sum(present[:-1])

    def top(
        self,
        plan: QueryPlan,
        conjunctive: bool,
        lists: list[Any],
        floor: float,
        decline_below: float = 0.0,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, int, bool] | None:
        """The segment's top k by dynamic pruning, best first, and its match count.

        ``(docs, bm25, final, count, exact)``: ``count`` is exact when ``exact`` (pruning
        dropped no candidate and probed no list), else a lower bound: the matches it
        scored, and under OR the longest list's postings when nothing is deleted (each
        of those documents matches). None when ``decline_below`` says pruning would not
        pay (see :func:`~lookup.search.pruning.prune_top_k`).
        """
        sig = plan.signals
        blend = None
        boost = 1.0
        if sig.link_weight or sig.fresh_weight:
            link, fresh_base = self.boosts(sig)
            boost = self.max_boost(sig, plan.now)

            def blend(docs: np.ndarray, bm: np.ndarray) -> np.ndarray:
                return sig.blend(bm, link[docs], sig.fresh_from_base(fresh_base[docs], plan.now))

        res = prune_top_k(
            lists,
            plan.idfs,
            self.norms(plan.avgdl, plan.k1, plan.b),
            self.url_keys,
            plan.k,
            plan.avgdl,
            plan.k1,
            plan.b,
            conjunctive,
            live=None if self.all_live else self._live,
            blend=blend,
            max_boost=boost,
            floor=floor,
            decline_below=decline_below,
        )
        if res is None:
            return None
        # nothing ruled out unseen and no list only probed: every match was scored
        exact = res.dropped == 0 and res.skipped_terms == 0
        count = res.scored
        if not exact and not conjunctive and self.all_live:
            count = max([count] + [pl.df for pl in lists if pl is not None])
        return res.docs, res.bm25, res.final, count, exact

    def kernel_meta(self, plan: QueryPlan, conjunctive: bool) -> tuple[np.ndarray, int] | None:
        """The compiled kernels' table for a plain query here (:func:`.kernels.table`:
        rows ``(df, offset, gap width, tf width, first skip entry)`` in plan order, df 0
        for a term not in this segment, then the idfs), and its postings.

        None when the kernels do not apply: varint lists, an AND term missing here (no
        match: the caller's numpy path says so at once), or an OR over the candidate
        budget (the numpy path's bounded strategy).
        """
        idfs = plan.idfs
        if not self._packed or not idfs or min(idfs) <= 0.0:
            return None  # varints (format 1), nothing to look for, or a score that is not > 0
        rows = self._rows
        out = []
        total = 0
        for term in plan.terms:
            row = rows.get(term)
            if row is None:
                row = self._kernel_row(term)
                if row is None:  # not in this segment
                    if conjunctive:
                        return None
                    out.append(_ABSENT)
                    continue
            if row[1] is None:
                return None  # a varint list
            out.append(row[1])
            total += row[0]
        if not conjunctive and total > plan.max_candidates:
            return None
        return kernels.table(out, idfs), total

    def _kernel_row(self, term: str) -> tuple[int, bytes | None] | None:
        """A term's df and its row of the kernels' table (None: a varint list), kept per
        term; None when the segment does not have the term (not kept: any word)."""
        at = self.reader.term_index.get(term)
        if at is None:
            return None
        df, off, _, skip, _, _, widths = self.reader.termtab[at].tolist()[:7]
        gw, tw = widths & 0xF, widths >> 4
        row = (df, kernels.TERM_ROW.pack(df, off, gw, tw, skip) if gw else None)
        self._rows[term] = row
        return row

    def kernel_top(
        self, plan: QueryPlan, conjunctive: bool, meta: np.ndarray, shard: int = 0, segment: int = 0
    ) -> tuple[list[kernels.KernelHit], int]:
        """Exhaustive scoring by the compiled kernels (:mod:`.kernels`): the top k best
        first as the fields of :class:`Hit` (from ``shard`` and ``segment``, this one's
        place), and the match count."""
        sig = plan.signals
        blend = bool(sig.link_weight or sig.fresh_weight)
        if blend:
            link, base = self.boosts(sig)
            factor = float(sig.fresh_factor(plan.now) if sig.fresh_weight else 0.0)
        else:
            link = base = _NO_FLOATS
            factor = 0.0
        ntab = self.norm_table(plan.avgdl, plan.k1, plan.b)
        if conjunctive:
            return kernels.compiled("and")(
                self._kbuf, meta, self._kskip, self._klen, ntab, self._live, self.all_live,
                link, base, factor, float(sig.fresh_weight), blend, int(plan.k), self._kkeys,
                shard, segment,
            )  # fmt: skip
        return kernels.compiled("or")(
            self._kbuf, meta, self._klen, ntab, self._live, self.all_live, link, base, factor,
            float(sig.fresh_weight), blend, int(plan.k), self._kkeys, shard, segment,
        )  # fmt: skip

    def match(
        self,
        plan: QueryPlan,
        conjunctive: bool,
        memo: dict[int, tuple[np.ndarray, np.ndarray]] | None = None,
        lists: list[Any] | None = None,
    ) -> tuple[np.ndarray, np.ndarray, int, bool]:
        """Live matching docs, their BM25 scores (terms summed in plan order), match count,
        and whether that count is exact.

        Exhaustive: every match is scored. The count is exact unless the OR candidate
        budget cut the work short (then it is a lower bound). ``memo`` keeps lists
        decoded by an AND pass for the OR pass of the same query.
        """
        reader = self.reader
        if plan.expr is not None:
            return (*self._match_expr(plan), True)
        if lists is None:
            lists = [reader.postings(t) for t in plan.terms]
        norms = self.norms(plan.avgdl, plan.k1, plan.b)  # what length_norm gives, per doc
        if conjunctive:
            if any(pl is None for pl in lists):
                return np.zeros(0, np.int64), np.zeros(0), 0, True
            order = sorted(range(len(lists)), key=lambda j: lists[j].df)  # type: ignore[union-attr]
            docs, tf0 = self._decoded(lists, order[0], memo)
            tfs: dict[int, np.ndarray] = {order[0]: tf0}
            for j in order[1:]:
                if docs.size == 0:
                    break
                found, tf, _ = lists[j].lookup(docs)  # type: ignore[union-attr]
                docs = docs[found]
                for key in tfs:
                    tfs[key] = tfs[key][found]
                tfs[j] = tf
            if plan.phrases and docs.size:
                keep = self._phrases(plan, lists, docs)
                docs = docs[keep]
                for key in tfs:
                    tfs[key] = tfs[key][keep]
            if docs.size == 0:
                return docs, np.zeros(0), 0, True
            norm = norms[docs]
            bm = np.zeros(docs.size)
            for j, term_idf in enumerate(plan.idfs):
                bm = bm + term_scores(tfs[j], norm, term_idf)
            return docs, bm, int(docs.size), True
        # Bounded work ("continue" strategy): terms join from the rarest up while their
        # postings fit the candidate budget; the commoner rest only score documents that
        # are already candidates, probed through their skip tables.
        present = [j for j, pl in enumerate(lists) if pl is not None]
        if not present:
            return np.zeros(0, np.int64), np.zeros(0), 0, True
        open_terms: set[int] = set()
        budget = 0
        for j in sorted(present, key=lambda j: lists[j].df):  # type: ignore[union-attr]
            df = lists[j].df  # type: ignore[union-attr]
            if open_terms and budget + df > plan.max_candidates:
                break
            open_terms.add(j)
            budget += df
        parts_d: list[np.ndarray] = []
        parts_s: list[np.ndarray] = []
        for j in sorted(open_terms):
            d, tf = self._decoded(lists, j, memo)
            parts_d.append(d)
            parts_s.append(term_scores(tf, norms[d], plan.idfs[j]))
        docs, bm = dense_or_sparse_sum(parts_d, parts_s, reader.n_docs)
        closed = [j for j in present if j not in open_terms]
        if plan.phrases and docs.size:  # phrases are required even under OR semantics
            keep = self._phrases(plan, lists, docs)
            docs, bm = docs[keep], bm[keep]
        if not closed:
            return docs, bm, int(docs.size), True
        norm = norms[docs]
        widest = 0
        for j in closed:
            pl = lists[j]
            found, tf, _ = pl.lookup(docs)  # type: ignore[union-attr]
            bm[found] += term_scores(tf, norm[found], plan.idfs[j])
            widest = max(widest, pl.df)  # type: ignore[union-attr]
        # every document holding a closed term matches too: count at least the widest one
        if plan.phrases:
            return docs, bm, int(docs.size), True
        return docs, bm, max(int(docs.size), widest), False

    def _match_expr(self, plan: QueryPlan) -> tuple[np.ndarray, np.ndarray, int]:
        """Live documents an operator query matches, scored by its clauses
        (:func:`~lookup.search.matching.expr_scores`)."""
        reader = self.reader
        source = _SegmentSource(reader)
        memo: dict[Any, np.ndarray] = {}
        mask = evaluate(plan.expr, source, memo)
        if not self.all_live:
            mask &= self._live
        docs = np.flatnonzero(mask)
        if docs.size == 0:
            return docs, np.zeros(0), 0
        norm = length_norm(reader.doclen[docs], plan.avgdl, plan.k1, plan.b)
        return docs, expr_scores(plan, source, docs, norm, memo), int(docs.size)

    @staticmethod
    def _phrases(plan: QueryPlan, lists: list[Any], docs: np.ndarray) -> np.ndarray:
        """Mask over ``docs`` (sorted): those that contain every phrase of the plan."""
        by_term = dict(zip(plan.terms, lists, strict=True))
        cache: dict[str, tuple[np.ndarray, np.ndarray]] = {}

        def positions_of(term: str) -> tuple[np.ndarray, np.ndarray]:
            if term not in cache:
                pl = by_term.get(term)
                if pl is None:
                    cache[term] = (np.zeros(0, np.int64), np.zeros(0, np.int64))
                else:
                    _, owner, pos = pl.positions_for(docs)
                    cache[term] = (owner, pos)
            return cache[term]

        keep = np.ones(docs.size, dtype=bool)
        for phrase in plan.phrases:
            keep &= phrase_mask(phrase, int(docs.size), positions_of)
        return keep

    def term_tf(self, term: str, doc: int) -> int:
        """Frequency of ``term`` in ``doc`` (a skip-table probe, for explanations)."""
        pl = self.reader.postings(term)
        if pl is None:
            return 0
        found, tf, _ = pl.lookup(np.array([doc]))
        return int(tf[0]) if found[0] else 0


class _SegmentSource:
    """A segment as the query-language evaluator sees it (:class:`~matching.MatchSource`)."""

    def __init__(self, reader: SegmentReader) -> None:
        self.reader = reader
        self.n_docs = reader.n_docs
        self.crawled = reader.crawled

    def docs_with(self, term: str) -> np.ndarray:
        pl = self.reader.postings(term)
        return np.zeros(0, np.int64) if pl is None else pl.decode()[0]

    def phrase_docs(self, phrase: Phrase, candidates: np.ndarray) -> np.ndarray:
        lists = {t: self.reader.postings(t) for t in phrase.terms}

        def positions_of(term: str) -> tuple[np.ndarray, np.ndarray]:
            _, owner, pos = lists[term].positions_for(candidates)  # type: ignore[union-attr]
            return owner, pos

        return phrase_mask(phrase, int(candidates.size), positions_of)

    def phrase_freqs(self, phrase: Phrase, slop: int, candidates: np.ndarray) -> np.ndarray:
        lists = {t: self.reader.postings(t) for t in phrase.terms}

        def positions_of(term: str) -> tuple[np.ndarray, np.ndarray]:
            _, owner, pos = lists[term].positions_for(candidates)  # type: ignore[union-attr]
            return owner, pos

        return sloppy_freq(phrase, slop, int(candidates.size), positions_of)

    def tfs(self, term: str, docs: np.ndarray) -> np.ndarray:
        out = np.zeros(docs.size, dtype=np.int64)
        pl = self.reader.postings(term)
        if pl is not None:
            found, tf, _ = pl.lookup(docs)
            out[found] = tf
        return out


class ShardIndex:
    """All batch segments of one shard, plus its slice of the real-time tier."""

    def __init__(self, shard: int, segments: list[SegmentView]) -> None:
        self.shard = shard
        self.segments = segments
        self.realtime: RealtimePart | None = None

    @property
    def live_docs(self) -> int:
        """Documents this shard would return (batch live plus visible real-time)."""
        batch = 0
        for view in self.segments:
            batch += view.live_count
        if self.realtime is None:
            return batch
        return batch + int(getattr(self.realtime, "visible_count", 0))

    def _run(
        self,
        plan: QueryPlan,
        conjunctive: bool,
        memos: list[dict[int, tuple[np.ndarray, np.ndarray]]] | None = None,
    ) -> tuple[list[Hit], int, bool, FacetCounts | None]:
        hits: list[Hit] = []
        matched = 0
        exact = True
        sig = plan.signals
        counts = FacetCounts() if plan.facets else None  # the kernels give no match set
        plain = not (plan.expr or plan.phrases or counts or plan.sort != "score")
        plain = plain and kernels.ready()
        may_prune = plan.prune and not plan.exact_count
        for si, view in enumerate(self.segments):
            kmeta = view.kernel_meta(plan, conjunctive) if plain else None
            if kmeta is not None and not (may_prune and kmeta[1] >= PRUNE_MIN_POSTINGS):
                # short lists under the kernels: every match scored, the top k taken and
                # its hits made, in one call (no posting-list objects, no pruning plan)
                found, count = view.kernel_top(plan, conjunctive, kmeta[0], self.shard, si)
                matched += count
                hits += map(_new_hit, found)
                continue
            lists = [view.reader.postings(t) for t in plan.terms]
            compiled = kmeta is not None
            pruned = None
            if view.prunable(plan, conjunctive, lists, compiled):
                floor = -np.inf  # the k-th best final score the earlier segments reached
                if len(hits) >= plan.k:
                    floor = sorted((h.score for h in hits), reverse=True)[plan.k - 1]
                decline = KERNEL_PROBE_RATIO if compiled else 0.0
                pruned = view.top(plan, conjunctive, lists, floor, decline)
            if pruned is not None:  # MaxScore and block bounds left most postings unscored
                docs, bm, final, count, seg_exact = pruned
                matched += count
                exact = exact and seg_exact
                if counts is not None:  # only the results it scored: lower bounds
                    counts.add_segment(view.reader, docs, exact=docs.size == count)
                if docs.size == 0:
                    continue
                keys = view.url_keys[docs]
                top = np.arange(docs.size)  # already the best first
            elif kmeta is not None:  # pruning declined: the kernel scores it, as above
                found, count = view.kernel_top(plan, conjunctive, kmeta[0], self.shard, si)
                matched += count
                hits += map(_new_hit, found)
                continue
            else:
                memo = memos[si] if memos else None
                docs, bm, count, seg_exact = view.match(plan, conjunctive, memo, lists)
                exact = exact and seg_exact
                if counts is not None:
                    counts.add_segment(view.reader, docs, exact=seg_exact)
                if docs.size == 0:
                    continue
                matched += count
                final = bm
                if sig.link_weight or sig.fresh_weight:  # pure BM25 adds nothing: skip gathers
                    link, fresh_base = view.boosts(sig)
                    fresh = sig.fresh_from_base(fresh_base[docs], plan.now)
                    final = sig.blend(bm, link[docs], fresh)
                keys = view.url_keys[docs]
                by = final if plan.sort == "score" else view.reader.crawled[docs]  # date
                top = top_k(by, keys, plan.k)
            hits.extend(
                Hit(f, k, b, self.shard, si, d)
                for f, k, b, d in zip(
                    final[top].tolist(),
                    keys[top].tolist(),
                    bm[top].tolist(),
                    docs[top].tolist(),
                    strict=True,
                )
            )
        if self.realtime is not None:
            rt_hits, rt_matched = self.realtime.search(plan, conjunctive, counts)
            hits.extend(rt_hits)
            matched += rt_matched
        if plan.sort == "date":  # newest first
            hits.sort(key=lambda h: (-self.crawled_at(h), h.urlkey))
        elif len(self.segments) > 1 or self.realtime is not None:  # one source: in order
            hits.sort(key=lambda h: (-h.score, h.urlkey))
        return hits[: plan.k], matched, exact, counts

    def crawled_at(self, h: Hit) -> float:
        """When a hit's page was fetched (what ``sort=date`` orders by)."""
        if h.segment == REALTIME:
            return self.realtime.crawled_at(h.doc)  # type: ignore[union-attr]
        return float(self.segments[h.segment].reader.crawled[h.doc])

    def search(self, plan: QueryPlan) -> ShardAnswer:
        """This shard's top k for a plan: AND, or OR when AND is empty here and allowed."""
        started = time.perf_counter()
        conjunctive = plan.conjunctive
        # lists an AND pass decoded, kept for an OR fallback to reuse
        memos: list[dict[int, tuple[np.ndarray, np.ndarray]]] | None = None
        if conjunctive and plan.or_fallback:
            memos = [{} for _ in self.segments]
        hits, matched, exact, counts = self._run(plan, conjunctive, memos)
        mode = "and" if conjunctive else "or"
        if conjunctive and matched == 0 and plan.or_fallback and len(plan.terms) > 1:
            hits, matched, exact, counts = self._run(plan, False, memos)
            mode = "or"
        return ShardAnswer(
            shard=self.shard,
            hits=hits,
            matched=matched,
            mode=mode,
            docs=self.live_docs,
            took_ms=(time.perf_counter() - started) * 1000.0,
            exact=exact,
            facets=counts,
        )


class IndexVersion:
    """One published index version, opened: shards, in-links, corpus statistics."""

    def __init__(self, index_dir: Path, manifest: Manifest) -> None:
        self.index_dir = Path(index_dir)
        self.manifest = manifest
        self.version = manifest.version
        self.watermark = manifest.watermark
        self.shards: list[ShardIndex] = []
        self.locations: dict[str, tuple[int, int, int]] = {}
        self._tomb_masks: list[list[np.ndarray]] = []
        self.base_docs = 0
        self.base_length = 0
        self._base_adjust: Counter[str] = Counter()
        self._hidden: frozenset[str] = frozenset()
        # (docs, total length, per-term df) of hidden batch documents, swapped as one value
        self._hidden_stats: tuple[int, int, Counter[str]] = (0, 0, Counter())
        self._terms_cache: dict[str, frozenset[str]] = {}
        self._raw_df: dict[str, int] = {}  # per term asked for: its df summed over segments
        kernels.ready()  # start loading the kernels (in the background) before any query
        self.realtime: Any = None  # the real-time tier build attached to this version
        self._by_key: dict[int, str] | None = None
        readers: list[list[tuple[SegmentReader, np.ndarray]]] = []
        for s, entries in enumerate(manifest.segments):
            shard_readers = []
            for e in entries:
                reader = self._open_segment(s, e)
                live = np.ones(reader.n_docs, dtype=bool)
                dead = read_tombstones(self.index_dir, s, e)
                if dead.size:
                    live[dead] = False
                    self._base_adjust.update(reader.deleted_df(live))
                shard_readers.append((reader, live))
                self.base_docs += int(live.sum())
                self.base_length += int(reader.doclen[live].sum())
            readers.append(shard_readers)
        # in-links: how many live pages link to each URL, over the whole crawl graph
        sources = [r.live_links(live) for sr in readers for r, live in sr]
        targets = np.concatenate(sources) if sources else np.zeros(0, np.int64)
        self.link_keys, self.link_counts = np.unique(targets, return_counts=True)
        for s, shard_readers in enumerate(readers):
            views = []
            masks = []
            for si, (reader, live) in enumerate(shard_readers):
                views.append(SegmentView(reader, live, self.inlinks_for(reader.urlkey)))
                masks.append(live)
                for d in np.flatnonzero(live):
                    self.locations[reader.url_hashes[d]] = (s, si, int(d))
            self.shards.append(ShardIndex(s, views))
            self._tomb_masks.append(masks)

    def _open_segment(self, shard: int, entry: SegmentEntry) -> SegmentReader:
        """Open one segment of the manifest, checked against its checksums; a damaged or
        missing file raises :class:`~lookup.errors.Damaged` naming it and the rebuild."""
        path = shard_dir(self.index_dir, shard) / entry.name
        crawl = self.manifest.source.crawl_dir
        try:
            return SegmentReader(path, entry.meta_checksum)
        except SegmentFileError as exc:
            raise damaged(exc.path, exc.problem, self.index_dir, crawl) from None
        except (OSError, ValueError, KeyError, IndexError) as exc:
            raise damaged(path, str(exc), self.index_dir, crawl) from None

    @classmethod
    def open(cls, index_dir: str | Path) -> IndexVersion | None:
        """The live version of an index directory, or None if nothing is published
        (``INDEX_OUTDATED`` when it was built with another text analysis)."""
        manifest = current_manifest(index_dir)
        if manifest is None:
            return None
        if manifest.analysis != ANALYSIS_VERSION:
            raise outdated(manifest, index_dir)
        return cls(Path(index_dir), manifest)

    def inlinks_for(self, url_keys: np.ndarray) -> np.ndarray:
        """In-link counts for URL keys, from the snapshot's crawl graph."""
        keys = np.asarray(url_keys, dtype=np.int64)
        if self.link_keys.size == 0 or keys.size == 0:
            return np.zeros(keys.size)
        idx = np.searchsorted(self.link_keys, keys)
        idx_c = np.minimum(idx, self.link_keys.size - 1)
        hit = self.link_keys[idx_c] == keys
        return np.where(hit, self.link_counts[idx_c], 0).astype(np.float64)

    # --- corpus statistics -------------------------------------------------------------
    @property
    def live_docs(self) -> int:
        """Batch documents visible to queries."""
        return self.base_docs - self._hidden_stats[0]

    @property
    def live_length(self) -> int:
        """Total length (terms) of the visible batch documents."""
        return self.base_length - self._hidden_stats[1]

    def df(self, term: str) -> int:
        """Visible batch documents containing ``term``."""
        total = self._raw_df.get(term)
        if total is None:  # the segments' own counts never change: summed once per term
            total = 0
            for shard in self.shards:
                for view in shard.segments:
                    total += view.reader.df(term)
            if len(self._raw_df) >= _RAW_DF_TERMS:
                self._raw_df.clear()  # arbitrary query words: keep the memo bounded
            self._raw_df[term] = total
        return total - self._base_adjust.get(term, 0) - self._hidden_stats[2].get(term, 0)

    # --- real-time tier hooks ------------------------------------------------------------
    def set_hidden(self, url_hashes: Iterable[str]) -> None:
        """Hide batch documents superseded or deleted after the watermark.

        Masks are rebuilt copy-on-write and swapped whole, so a query in flight sees
        either the old set or the new one.
        """
        hidden = frozenset(h for h in url_hashes if h in self.locations)
        if hidden == self._hidden:
            return
        per_seg: dict[tuple[int, int], list[int]] = {}
        adjust: Counter[str] = Counter()
        length = 0
        for h in hidden:
            s, si, d = self.locations[h]
            per_seg.setdefault((s, si), []).append(d)
            reader = self.shards[s].segments[si].reader
            terms = self._terms_cache.get(h)
            if terms is None:
                stored = reader.stored(d)
                fields = DocFields.from_stored(stored) if "lang" in stored else None  # format 4
                a = analyze_page(stored["title"], stored["text"], stored["url"], fields)
                terms = a.all_terms()
                self._terms_cache[h] = terms
            adjust.update(terms)
            length += int(reader.doclen[d])
        for s, shard in enumerate(self.shards):
            for si, view in enumerate(shard.segments):
                base = self._tomb_masks[s][si]
                docs = per_seg.get((s, si))
                if docs:
                    mask = base.copy()
                    mask[docs] = False
                    view.live = mask
                else:
                    view.live = base
        self._hidden_stats = (len(hidden), length, adjust)
        self._hidden = hidden

    def vocabulary(self, fields: bool = False) -> list[tuple[str, int]]:
        """Every term with its document frequency over the visible batch, commonest first.

        Field terms (``title:…``, ``site:…``) only with ``fields``.
        """
        totals: Counter[str] = Counter()
        for shard in self.shards:
            for view in shard.segments:
                df = view.reader.termtab[:, 0] if len(view.reader.terms) else ()
                totals.update(dict(zip(view.reader.terms, (int(x) for x in df), strict=True)))
        totals.subtract(self._base_adjust)
        totals.subtract(self._hidden_stats[2])
        return [(t, n) for t, n in totals.most_common() if n > 0 and (fields or ":" not in t)]

    def terms_with_prefix(self, prefix: str) -> dict[str, int]:
        """Index terms starting with ``prefix`` and their visible df (a bisect per segment)."""
        found: Counter[str] = Counter()
        for shard in self.shards:
            for view in shard.segments:
                terms = view.reader.terms
                i = bisect.bisect_left(terms, prefix)
                while i < len(terms) and terms[i].startswith(prefix):
                    found[terms[i]] += int(view.reader.termtab[i, 0])
                    i += 1
        for t in list(found):
            found[t] -= self._base_adjust.get(t, 0) + self._hidden_stats[2].get(t, 0)
        return {t: n for t, n in found.items() if n > 0}

    def url_hash_for_key(self, key: int) -> str | None:
        """The ``urlHash`` of the live batch document with this URL key, if any."""
        if self._by_key is None:
            by_key: dict[int, str] = {}
            for shard in self.shards:
                for view in shard.segments:
                    for d in np.flatnonzero(view.live):
                        by_key[int(view.url_keys[d])] = view.reader.url_hashes[d]
            self._by_key = by_key
        return self._by_key.get(key)

    def stored(self, shard: int, segment: int, doc: int) -> dict[str, Any]:
        """Stored fields of a batch document."""
        return self.shards[shard].segments[segment].reader.stored(doc)

    def status(self) -> dict[str, Any]:
        """Summary for health checks and the dashboard."""
        return {
            "version": self.version,
            "shards": len(self.shards),
            "segments": [len(s.segments) for s in self.shards],
            "liveDocs": self.live_docs,
            "watermark": self.watermark,
            "builtAt": self.manifest.created_at,
            "crawlDir": self.manifest.source.crawl_dir,
        }
