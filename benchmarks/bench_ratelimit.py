"""Rate-limiter benchmark: decisions per second, each algorithm against a bare anchor.

    .venv/bin/python benchmarks/bench_ratelimit.py            # 200,000 decisions, 3 runs
    .venv/bin/python benchmarks/bench_ratelimit.py --quick    # 5,000 decisions, one run
    .venv/bin/python benchmarks/bench_ratelimit.py --json ratelimit.json
    .venv/bin/python benchmarks/bench_ratelimit.py --memory 1000000   # + bytes per identity

Seed 004 requires the limiter to "add almost nothing to request latency". Two tables,
one thread, the anchors measured in the same run:

1. **In-process**: ``check()`` of every algorithm (``memory:?algorithm=NAME``) over 1,000
   identities, against a bare ``dict`` increment (``counts[k] = counts.get(k, 0) + 1``) —
   the least any per-identity counter can cost.
2. **On Redis** (when Debian's ``redis-server`` is installed; a throw-away server on a
   free loopback port): each algorithm's Lua script, one round trip per decision, against
   a bare ``INCR`` round trip on the same connection.

Both tables carry the hybrid (``local_budget=0.1``: a process takes a tenth of the limit at
a time from the shared limiter and decides locally until it runs out) — on Redis most of
its decisions need no round trip at all. ``--memory N`` adds bytes per identity at ``N``
identities, each algorithm in-process (tracemalloc) and on Redis (``INFO memory``).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.common import fmt_rate, machine_summary, median, print_table  # noqa: E402
from lookup.kit.ratelimit import ALGORITHM_NAMES, RatePolicy, open_rate_limiter  # noqa: E402
from lookup.kit.redisserver import RedisServer, redis_available  # noqa: E402

IDENTITIES = [f"user-{i}" for i in range(1_000)]
#: A policy no stream here exhausts much: every decision does the algorithm's full work.
POLICY = RatePolicy(1_000, 100.0)
DICT_ANCHOR = "bare dict increment (anchor)"
INCR_ANCHOR = "bare INCR round trip (anchor)"
HYBRID = "hybrid token_bucket, local_budget=0.1"


def rate(step: Callable[[str], Any], n: int) -> float:
    """Decisions per second of ``step`` over ``n`` calls cycling through the identities."""
    ids = IDENTITIES
    m = len(ids)
    started = time.perf_counter()
    for i in range(n):
        step(ids[i % m])
    return n / (time.perf_counter() - started)


def in_process_steps() -> dict[str, Callable[[str], Any]]:
    """The anchor and every in-process algorithm's ``check``, by the name the table shows."""
    counts: dict[str, int] = {}

    def bump(key: str) -> None:
        counts[key] = counts.get(key, 0) + 1

    steps: dict[str, Callable[[str], Any]] = {DICT_ANCHOR: bump}
    for name in ALGORITHM_NAMES:
        url = "memory:" if name == "token_bucket" else f"memory:?algorithm={name}"
        steps[name] = open_rate_limiter(url, POLICY, name="bench").check
    steps[HYBRID] = open_rate_limiter("memory:?local_budget=0.1", POLICY, name="bench").check
    return steps


def redis_steps(server: RedisServer) -> dict[str, Callable[[str], Any]]:
    """The ``INCR`` anchor and every algorithm's script on ``server``."""
    import redis

    client = redis.Redis.from_url(server.url)
    steps: dict[str, Callable[[str], Any]] = {INCR_ANCHOR: lambda k: client.incr("bench:" + k)}
    for name in ALGORITHM_NAMES:
        limiter = open_rate_limiter(f"{server.url}?algorithm={name}", POLICY, name="bench")
        steps[name] = limiter.check
    hybrid = open_rate_limiter(f"{server.url}?algorithm=token_bucket&local_budget=0.1", POLICY,
                               name="bench-hybrid")  # fmt: skip
    steps[HYBRID] = hybrid.check
    return steps


def bench(steps: dict[str, Callable[[str], Any]], n: int, runs: int) -> dict[str, float]:
    """Median decisions/s per step; the steps interleaved run by run."""
    seen: dict[str, list[float]] = {name: [] for name in steps}
    for _ in range(runs):
        for name, step in steps.items():
            seen[name].append(rate(step, n))
    return {name: median(v) for name, v in seen.items()}


def table(title: str, rates: dict[str, float], anchor: str) -> str:
    rows = [
        [name, fmt_rate(r), f"{rates[anchor] / r:.3g}", f"{1e6 / r:.2f}"]
        for name, r in rates.items()
    ]
    return print_table(title, ["", "decisions/s", "time × the anchor's", "µs each"], rows)


def memory(identities: int, redis_url: str | None) -> dict[str, Any]:
    """Bytes per identity of every algorithm at ``identities`` identities (one request each)."""
    from lookup.blocks.limits.experiments import memory_in_process, memory_on_redis

    out: dict[str, Any] = {"in_process": memory_in_process(identities, 1)}
    title = f"Memory per identity at {identities:,} identities (one request each)"
    rows = [[r["algorithm"], f"{r['bytes per identity']:,}"] for r in out["in_process"]]
    print_table(f"{title}, in-process (tracemalloc)", ["", "bytes per identity"], rows)
    if redis_url:
        out["redis"] = memory_on_redis(redis_url, identities, 1, chunk=2_000)
        rows = [[r["algorithm"], f"{r['bytes per identity (used_memory)']:,}",
                 f"{r['MEMORY USAGE of one']:,}"] for r in out["redis"]]  # fmt: skip
        print_table(f"{title}, on Redis", ["", "used_memory growth ÷ identities",
                                          "MEMORY USAGE of one identity"], rows)  # fmt: skip
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """Run both tables; ``--json`` writes the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--decisions", type=int, default=200_000)
    parser.add_argument("--redis-decisions", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="5,000 decisions, one run")
    parser.add_argument("--json", type=Path)
    parser.add_argument(
        "--memory",
        type=int,
        default=0,
        metavar="IDENTITIES",
        help="also measure bytes per identity at this many identities",
    )
    parser.add_argument(
        "--memory-only", action="store_true", help="with --memory: skip the decisions/s tables"
    )
    args = parser.parse_args(argv)
    if args.quick:
        args.decisions, args.redis_decisions, args.runs = 5_000, 1_000, 1
    print(machine_summary(), flush=True)
    figures: dict[str, Any] = {"machine": machine_summary()}
    decisions = not (args.memory and args.memory_only)
    if decisions:
        figures["in_process"] = bench(in_process_steps(), args.decisions, args.runs)
        table("In-process check() vs a bare dict increment", figures["in_process"], DICT_ANCHOR)
    if redis_available():
        with RedisServer() as server:
            if decisions:
                figures["redis"] = bench(redis_steps(server), args.redis_decisions, args.runs)
                table("On Redis: each Lua script vs a bare INCR", figures["redis"], INCR_ANCHOR)
            if args.memory:
                figures["memory"] = memory(args.memory, server.url)
    else:
        print("redis-server is not installed: the Redis table is skipped", flush=True)
        if args.memory:
            figures["memory"] = memory(args.memory, None)
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
