"""Dynamic pruning against exhaustive scoring on long posting lists, same lists, same run.

``bench_search.py`` measures the whole query path on a 50,000-page corpus, whose lists
are short (a few thousand postings): there numpy's per-call overhead, not the postings,
is the cost, and pruning barely pays. This benchmark isolates the top-k step on lists
of a larger index — up to hundreds of thousands of postings per term, Zipf-distributed
document frequencies, skewed tfs — where the work pruning skips is the work that counts.

Anchor: exhaustive scoring of the same :class:`~lookup.search.postings.PostingList` s
(decode every list, score every posting, sum per document, top k) — the algorithm of
``SegmentView.match``. Both answers are checked equal before anything is timed.

    python benchmarks/bench_pruning.py            # 1,000,000 documents, 300 queries
    python benchmarks/bench_pruning.py --quick    # 200,000 documents, 100 queries
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import machine_summary, median, print_table  # noqa: E402
from lookup.search.bm25 import length_norm, term_scores  # noqa: E402
from lookup.search.postings import BLOCK, PostingList, encode_postings  # noqa: E402
from lookup.search.pruning import dense_or_sparse_sum, prune_top_k, top_k  # noqa: E402


def make_lists(n_docs: int, n_terms: int, seed: int = 1) -> tuple[list[PostingList], np.ndarray]:
    """``n_terms`` posting lists over ``n_docs`` documents (df from 0.05 % to 60 %)."""
    rng = np.random.default_rng(seed)
    doclen = np.maximum(rng.lognormal(4.5, 0.6, n_docs).astype(np.int64), 5)
    shares = np.geomspace(0.6, 0.0005, n_terms)
    members, tfs = [], []
    for share in shares:
        m = np.flatnonzero(rng.random(n_docs) < share)
        members.append(m)
        heavy = rng.random(m.size) < 0.03
        tf = np.where(heavy, rng.integers(3, 30, m.size), 1 + rng.poisson(0.4, m.size))
        tfs.append(np.minimum(tf, doclen[m]))
    tids = np.concatenate([np.full(m.size, j) for j, m in enumerate(members)])
    enc = encode_postings(
        n_terms,
        tids,
        np.concatenate(members),
        np.concatenate(tfs),
        np.zeros(int(np.concatenate(tfs).sum()), dtype=np.int64),
        doclen=doclen,
    )
    assert enc.block_maxtf is not None and enc.block_mindl is not None
    lists = []
    for j in range(n_terms):
        s, nb = int(enc.skip_start[j]), (int(enc.df[j]) + BLOCK - 1) // BLOCK
        lists.append(
            PostingList(
                enc.postings,
                int(enc.df[j]),
                int(enc.post_off[j]),
                int(enc.post_len[j]),
                enc.block_last[s : s + nb],
                enc.block_off[s : s + nb],
                widths=int(enc.widths[j]),
                block_maxtf=enc.block_maxtf[s : s + nb],
                block_mindl=enc.block_mindl[s : s + nb].astype(np.float64),
            )
        )
    return lists, doclen


def exhaustive(lists, idfs, norm, keys, k, conjunctive):  # type: ignore[no-untyped-def]
    """Every posting scored (the anchor): ``(docs, bm25)`` of the top k."""
    parts_d, parts_s = [], []
    for pl, w in zip(lists, idfs, strict=True):
        d, tf = pl.decode()
        parts_d.append(d)
        parts_s.append(term_scores(tf, norm[d], w))
    if conjunctive:
        docs = parts_d[int(np.argmin([d.size for d in parts_d]))]
        for d in parts_d:
            docs = np.intersect1d(docs, d, assume_unique=True)
        bm = np.zeros(docs.size)
        for d, s in zip(parts_d, parts_s, strict=True):
            bm = bm + s[np.searchsorted(d, docs)]
    else:
        docs, bm = dense_or_sparse_sum(parts_d, parts_s, norm.size)
    top = top_k(bm, keys[docs], k)
    return docs[top], bm[top]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark; prints a table and the ratios."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=1_000_000)
    parser.add_argument("--terms", type=int, default=24)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    if args.quick:
        args.docs, args.queries = min(args.docs, 200_000), min(args.queries, 100)
    print(f"# bench_pruning — {machine_summary()}")
    lists, doclen = make_lists(args.docs, args.terms)
    n = args.docs
    idfs = [math.log(1.0 + (n - pl.df + 0.5) / (pl.df + 0.5)) for pl in lists]
    avgdl = float(doclen.mean())
    norm = length_norm(doclen, avgdl)
    keys = np.random.default_rng(2).integers(0, 2**62, n)
    rng = np.random.default_rng(3)
    queries = [
        sorted(rng.choice(args.terms, int(rng.integers(1, 4)), replace=False).tolist())
        for _ in range(args.queries)
    ]
    print(f"# {n:,} documents, {args.terms} terms, df {lists[-1].df:,} … {lists[0].df:,}")
    rows = []
    for conjunctive in (False, True):
        label = "AND" if conjunctive else "OR"
        t_ex, t_pr, scored, matched = [], [], 0, 0
        for q in queries:
            ql = [lists[j] for j in q]
            qi = [idfs[j] for j in q]
            t = time.process_time()
            want_d, want_bm = exhaustive(ql, qi, norm, keys, 10, conjunctive)
            t_ex.append(time.process_time() - t)
            t = time.process_time()
            res = prune_top_k(ql, qi, norm, keys, 10, avgdl, 1.2, 0.75, conjunctive)
            t_pr.append(time.process_time() - t)
            assert res.docs.tolist() == want_d.tolist() and res.bm25.tolist() == want_bm.tolist()
            scored += res.scored
            matched += sum(pl.df for pl in ql)
        ex, pr = median(t_ex) * 1e3, median(t_pr) * 1e3
        rows.append([label, f"{ex:.2f}", f"{pr:.2f}", f"{ex / pr:.2f}×",
                     f"{scored / matched:.1%}"])  # fmt: skip
    print_table(
        "\nTop 10, CPU ms per query (medians; every answer checked identical first)",
        ["query", "exhaustive", "pruned", "speed-up", "postings scored"],
        rows,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
