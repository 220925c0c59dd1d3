"""What the learned ranker costs per query: hand-set blend vs the rescore window, same run.

    .venv/bin/python benchmarks/bench_learned_rank.py            # 700 pages, 600 queries
    .venv/bin/python benchmarks/bench_learned_rank.py --quick    # 300 pages, 150 queries

The corpus is the search tests' stdlib-docstring web (``tests/search/corpus.py``), built
into a 2-shard index; a model is trained on it (``lookup.search.learned.train``). Three
ways to answer the same queries, interleaved query by query so load bursts hit them alike,
one thread, in process (no HTTP):

- **hand**: today's path (top 10 of the BM25F × links × freshness blend) — the anchor;
- **hand@50**: the same blend asked for the rescore window's 50 hits (the extra retrieval);
- **learned**: the window's 50 hits, their features, the linear model, the reorder.

Ratios against *hand* say what the learned ranking adds; the difference between
*hand@50* and *learned* is the feature and scoring work alone.
"""

from __future__ import annotations

import argparse
import random
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.common import machine_summary, median, print_table  # noqa: E402


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="300 pages, 150 queries")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    from lookup.kit.models import ActiveModel
    from lookup.search import SearchService, build_index
    from lookup.search.features import RERANK_DEPTH
    from lookup.search.learned import train
    from tests.search.corpus import BASE_TIME, CrawlWriter, stdlib_pages

    n_pages, n_queries = (300, 150) if args.quick else (700, 600)
    work = Path(tempfile.mkdtemp(prefix="bench-ltr-"))
    try:
        pages = stdlib_pages(n_pages)
        CrawlWriter(work / "crawl").fetch(pages)
        build_index(work / "crawl", work / "idx", shards=2)
        svc = SearchService(work / "idx", realtime=False)
        now = BASE_TIME + 40 * 86400
        report = train(svc, seed=args.seed, seeds=1, sessions=10, now=now)
        model = ActiveModel(report.ranker, "bench")
        rng = random.Random(args.seed)
        queries = [" ".join(rng.sample(p.title.replace(".", " ").split(), 1)) for p in pages]
        queries = [rng.choice(queries) for _ in range(n_queries)]
        snap = svc.snapshot()
        coord = svc.coordinator
        ways = {
            "hand": lambda q: coord.search(snap, q, 1, 10, now=now),
            f"hand@{RERANK_DEPTH}": lambda q: coord.search(snap, q, 1, RERANK_DEPTH, now=now),
            "learned": lambda q: coord.search(snap, q, 1, 10, now=now, model=model),
        }
        times: dict[str, list[float]] = {k: [] for k in ways}
        for q in queries[:20]:  # warm the caches alike
            for fn in ways.values():
                fn(q)
        for q in queries:
            for name, fn in ways.items():
                t0 = time.perf_counter()
                fn(q)
                times[name].append((time.perf_counter() - t0) * 1000.0)
        svc.close()
        base = median(times["hand"])
        rows = [
            [name, f"{median(t):.3f}", f"{sorted(t)[int(len(t) * 0.95)]:.3f}",
             f"{median(t) / base:.2f}×"]
            for name, t in times.items()
        ]  # fmt: skip
        print(machine_summary())
        print(f"{len(pages)} pages, {len(queries)} one-word title queries, 2 shards, in process")
        print_table("Query latency (ms)", ["way", "median", "p95", "vs hand"], rows)
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
