"""Eviction benchmark: decisions per second of the hand-written policies against cachetools.

    .venv/bin/python benchmarks/bench_cache.py            # 200,000 accesses, 3 runs
    .venv/bin/python benchmarks/bench_cache.py --quick    # 20,000 accesses, 1 run
    .venv/bin/python benchmarks/bench_cache.py --json cache.json

One decision is one access: a hit (the policy updates its order or counts) or a miss (it
admits the key and evicts one if full). Each policy replays the same trace — the
shortener simulator's Zipf clicks (:func:`lookup.datasets.cache_traces.shortener_clicks`)
— at the same capacity, in the same run as its anchor:

- LRU, LFU and FIFO against ``cachetools.LRUCache`` / ``LFUCache`` / ``FIFOCache`` driven
  the way a cache is used (``key in c`` then ``c[key]`` or ``c[key] = value``); the hit
  ratios must be equal (the tests check every decision);
- sampled LRU and W-TinyLFU, which cachetools does not have, against ``cachetools.LRUCache``
  (the price of their extra bookkeeping per decision).

The ratio is ours ÷ anchor (above 1: faster). Medians over ``--runs``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.common import fmt_rate, machine_summary, median, print_table  # noqa: E402
from lookup.blocks.cache.eviction import POLICIES  # noqa: E402
from lookup.datasets.cache_traces import shortener_clicks  # noqa: E402

#: Each of our policies and the cachetools class it is measured against.
ANCHORS = {"LRU": "LRUCache", "LFU": "LFUCache", "FIFO": "FIFOCache",
           "sampled LRU": "LRUCache", "W-TinyLFU": "LRUCache"}  # fmt: skip


def replay_ours(name: str, capacity: int, trace: Sequence[int]) -> tuple[float, float]:
    """(seconds, hit ratio) of one replay through our policy."""
    policy = POLICIES[name](capacity)
    access = policy.access
    start = time.perf_counter()
    hits = 0
    for key in trace:
        hits += access(key)
    return time.perf_counter() - start, hits / len(trace)


def replay_cachetools(cls_name: str, capacity: int, trace: Sequence[int]) -> tuple[float, float]:
    """(seconds, hit ratio) of one replay through a cachetools cache used as a cache."""
    import cachetools

    cache = getattr(cachetools, cls_name)(capacity)
    start = time.perf_counter()
    hits = 0
    for key in trace:
        if key in cache:
            cache[key]
            hits += 1
        else:
            cache[key] = True
    return time.perf_counter() - start, hits / len(trace)


def bench(trace: Sequence[int], capacity: int, runs: int) -> list[dict[str, Any]]:
    """One row per policy: ours and its anchor's decisions/s, the ratio, both hit ratios.
    Ours and the anchor alternate run by run, so load on the machine hits both alike."""
    rows = []
    for name, anchor in ANCHORS.items():
        ours, theirs = [], []
        for _ in range(runs):
            ours.append(replay_ours(name, capacity, trace))
            theirs.append(replay_cachetools(anchor, capacity, trace))
        ours_s, theirs_s = median(t for t, _ in ours), median(t for t, _ in theirs)
        rows.append({"policy": name, "anchor": f"cachetools.{anchor}",
                     "ours_per_s": len(trace) / ours_s, "anchor_per_s": len(trace) / theirs_s,
                     "ratio": theirs_s / ours_s, "ours_hit_ratio": round(ours[-1][1], 4),
                     "anchor_hit_ratio": round(theirs[-1][1], 4)})  # fmt: skip
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark; returns 0."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--accesses", type=int, default=200_000, help="trace length (200k, the simulator's most)"
    )
    parser.add_argument("--capacity", type=int, default=200, help="cache size in keys (200)")
    parser.add_argument("--runs", type=int, default=3, help="runs per policy; medians (3)")
    parser.add_argument("--quick", action="store_true", help="20,000 accesses, 1 run")
    parser.add_argument("--json", type=Path, help="also write the figures as JSON")
    args = parser.parse_args(argv)
    if args.quick:
        args.accesses, args.runs = min(args.accesses, 20_000), 1
    if not 1_000 <= args.accesses <= 200_000 or args.capacity < 1 or args.runs < 1:
        parser.error("need 1000 <= --accesses <= 200000, --capacity >= 1, --runs >= 1")
    trace = shortener_clicks(args.accesses, 1_000)
    rows = bench(trace, args.capacity, args.runs)
    results = {"machine": machine_summary(), "accesses": len(trace),
               "capacity": args.capacity, "runs": args.runs, "rows": rows}  # fmt: skip
    print(f"# bench_cache — {results['machine']}")
    print_table(
        f"Eviction decisions per second ({len(trace):,} accesses, {args.capacity} keys)",
        ["policy", "ours", "anchor", "anchor's", "ours ÷ anchor", "hit ratio (ours / anchor)"],
        [[r["policy"], fmt_rate(r["ours_per_s"]), r["anchor"], fmt_rate(r["anchor_per_s"]),
          f"{r['ratio']:.2f}×", f"{r['ours_hit_ratio']:.4f} / {r['anchor_hit_ratio']:.4f}"]
         for r in rows],
    )  # fmt: skip
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
