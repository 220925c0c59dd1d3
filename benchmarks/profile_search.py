"""Where a shard query's time goes: cProfile over ``bench_search.py``'s queries, by stage.

    .venv/bin/python benchmarks/bench_search.py --runs 1 --skip-tail --workdir /tmp/bs
    .venv/bin/python benchmarks/profile_search.py --workdir /tmp/bs

Runs the bench's "ours: shard query" engines (OR and AND, top 10, pure BM25) over the same
600 queries three times under cProfile and splits the time into: query analysis, the plan
(corpus statistics, idf), the kernel table, the compiled kernel (decode, score, top k in
one call), and the rest of the shard's Python (dispatch, hits, merge) and the bench's own
id-to-URL step. Profiling inflates Python-heavy stages; read the shares, not the times.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.bench_search import make_queries, read_corpus  # noqa: E402
from benchmarks.search_engines import OursShard  # noqa: E402

#: Stage → the functions (file suffix, name) whose cumulative time it is.
STAGES = {
    "query analysis": [("analysis.py", "analyze_query")],
    "plan: df, idf": [("shard.py", "df"), ("bm25.py", "make_plan")],
    "kernel table": [("shard.py", "kernel_meta")],
    "compiled kernel (decode, score, top k)": [("kernels.py", "or_top"), ("kernels.py", "and_top")],
}


def profile(engine: OursShard, queries: list[str], rounds: int = 3) -> dict[str, float]:
    """Shares of the total time per stage (the remainder is the shard's other Python)."""
    for q in queries[:50]:
        engine.search(q)
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(rounds):
        for q in queries:
            engine.search(q)
    prof.disable()
    stats = pstats.Stats(prof).stats  # type: ignore[attr-defined]
    total = max(st[3] for st in stats.values())  # the outermost frame's cumulative time
    shares: dict[str, float] = {}
    for stage, names in STAGES.items():
        cum = sum(
            st[3]
            for (path, _, func), st in stats.items()
            if any(path.endswith(f) and func == n for f, n in names)
        )
        shares[stage] = cum / total
    shares["shard dispatch, hits, merge, URL map"] = 1.0 - sum(shares.values())
    shares["_per_query_us"] = total / (rounds * len(queries)) * 1e6
    return shares


def main(argv: list[str] | None = None) -> int:
    """Print the stage shares for OR and AND."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", type=Path, required=True, help="bench_search's workdir")
    parser.add_argument("--queries", type=int, default=600)
    args = parser.parse_args(argv)
    docs = read_corpus(args.workdir / "crawl")
    queries = make_queries(docs, args.queries)
    for conjunctive in (False, True):
        engine = OursShard(args.workdir / "ours-1", conjunctive)
        try:
            shares = profile(engine, queries)
        finally:
            engine.close()
        per_query = shares.pop("_per_query_us")
        print(f"\n{engine.name} ({per_query:.0f} µs per query under cProfile)")
        for stage, share in shares.items():
            print(f"  {stage:42s} {share:6.1%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
