"""Quorum KV benchmark: get/put per second and p99 at N=3, R=W=2 against Redis, and ring lookups.

    .venv/bin/python benchmarks/bench_kv.py             # 8 s per phase, 32 in flight
    .venv/bin/python benchmarks/bench_kv.py --quick     # 2 s per phase, one run
    .venv/bin/python benchmarks/bench_kv.py --json kv.json

1. **KV get/put**: three storage-node processes (:class:`lookup.blocks.kv.cluster.KvCluster`,
   N=3, R=W=2) driven by one asyncio client (aiohttp, ``--concurrency`` requests in
   flight, each sent to the key's first home replica, which coordinates), against the
   anchor in the same run: a Redis Cluster of 3 masters + 3 replicas (``lookup.kit.
   rediscluster``, redis-py's asyncio cluster client) — or, where that module or
   ``redis-server`` is missing, a standalone redis-server (the table says which).
   Reported: operations/s and p50/p99 latency per operation, and the ratio.
2. **Where the time goes**: the same single request at each layer, one at a time — the
   node store's SQLite get/put in-process; one HTTP hop to a replica endpoint; a
   coordinated R=2 get and W=2 put (client → coordinator → two replicas).
3. **Ring lookups/s**: ``HashRing.node_for`` and ``preference_list(key, 3)`` against
   ``uhashring`` (``get_node`` and ``range(size=3)``) on 10 nodes × 160 vnodes.

On 2 shared cores the nodes, the client and Redis compete for the same CPUs: the ratio
says what a request costs here, not what a fleet of machines would do.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.common import fmt_ms, fmt_rate, machine_summary, median, print_table  # noqa: E402
from lookup.blocks.kv.cluster import KvCluster  # noqa: E402
from lookup.blocks.kv.store import SqliteNodeStore  # noqa: E402
from lookup.kit.redisserver import RedisServer, redis_available  # noqa: E402
from lookup.kit.ring import HashRing  # noqa: E402

Op = Callable[[str, str], Awaitable[None]]


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else 0.0


async def _drive(put: Op, get: Op, keys: int, seconds: float, concurrency: int) -> dict[str, Any]:
    """``concurrency`` workers alternating put and get on random keys for ``seconds``."""
    lat: dict[str, list[float]] = {"put": [], "get": []}
    deadline = time.perf_counter() + seconds
    errors = 0

    async def worker(seed: int) -> None:
        nonlocal errors
        rng = random.Random(seed)
        i = 0
        while time.perf_counter() < deadline:
            key = f"bench:{rng.randrange(keys)}"
            kind = "put" if i % 2 == 0 else "get"
            t0 = time.perf_counter()
            try:
                await (put(key, f"v{i}") if kind == "put" else get(key, ""))
            except Exception:  # noqa: BLE001 - counted, the run goes on
                errors += 1
            lat[kind].append((time.perf_counter() - t0) * 1000)
            i += 1

    start = time.perf_counter()
    await asyncio.gather(*(worker(s) for s in range(concurrency)))
    wall = time.perf_counter() - start
    total = len(lat["put"]) + len(lat["get"])
    return {
        "ops/s": total / wall,
        "errors": errors,
        **{f"{k} p50 ms": _pct(v, 0.5) for k, v in lat.items()},
        **{f"{k} p99 ms": _pct(v, 0.99) for k, v in lat.items()},
    }


async def _kv_run(
    cluster: KvCluster, keys: int, seconds: float, concurrency: int
) -> dict[str, Any]:
    import aiohttp

    ring = HashRing(cluster.names, vnodes=cluster.vnodes)
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=concurrency)) as http:

        async def put(key: str, value: str) -> None:
            url = cluster.urls[ring.node_for(key)]
            async with http.put(f"{url}/kv/{key}", json={"value": value, "w": 2}) as resp:
                if resp.status != 200:
                    raise RuntimeError(resp.status)
                await resp.read()

        async def get(key: str, _: str) -> None:
            url = cluster.urls[ring.node_for(key)]
            async with http.get(f"{url}/kv/{key}", params={"r": "2"}) as resp:
                if resp.status not in (200, 404):
                    raise RuntimeError(resp.status)
                await resp.read()

        return await _drive(put, get, keys, seconds, concurrency)


async def _redis_run(client: Any, keys: int, seconds: float, concurrency: int) -> dict[str, Any]:
    async def put(key: str, value: str) -> None:
        await client.set(key, value)

    async def get(key: str, _: str) -> None:
        await client.get(key)

    try:
        return await _drive(put, get, keys, seconds, concurrency)
    finally:
        await client.aclose()


def _redis_anchor(keys: int, seconds: float, concurrency: int) -> tuple[str, dict[str, Any]]:
    """Redis Cluster (3+3) when ``lookup.kit.rediscluster`` is there, else one redis-server."""
    try:
        from lookup.kit.rediscluster import RedisCluster, cluster_available
    except ImportError:
        RedisCluster, cluster_available = None, lambda: False  # noqa: N806
    if RedisCluster is not None and cluster_available():
        from redis.asyncio.cluster import ClusterNode as AsyncNode
        from redis.asyncio.cluster import RedisCluster as AsyncCluster

        with RedisCluster(masters=3, replicas=1) as rc:
            client = AsyncCluster(startup_nodes=[AsyncNode(h, p) for h, p in rc.startup_nodes])
            return (
                "Redis Cluster 3 masters + 3 replicas",
                asyncio.run(_redis_run(client, keys, seconds, concurrency)),
            )
    if not redis_available():
        raise SystemExit("redis-server is missing: no anchor to measure against")
    import redis.asyncio as aioredis

    with RedisServer() as server:
        client = aioredis.Redis.from_url(server.url)
        return (
            "standalone redis-server (no rediscluster module)",
            asyncio.run(_redis_run(client, keys, seconds, concurrency)),
        )


def _layers(cluster: KvCluster, samples: int) -> list[tuple[str, float]]:
    """Median ms of one request at each layer, sent one at a time."""
    import httpx

    out = []
    with tempfile.TemporaryDirectory() as tmp:
        store = SqliteNodeStore(Path(tmp) / "s.sqlite3")
        version = {"clock": {"a": 1}, "value": "v", "ts": 0.0, "lww": False}
        t = []
        for i in range(samples):
            t0 = time.perf_counter()
            store.put(f"k{i}", [version])
            t.append(time.perf_counter() - t0)
        out.append(("node store put (SQLite, in-process)", median(t) * 1000))
        t = []
        for i in range(samples):
            t0 = time.perf_counter()
            store.get(f"k{i}")
            t.append(time.perf_counter() - t0)
        out.append(("node store get (SQLite, in-process)", median(t) * 1000))
        store.close()
    ring = HashRing(cluster.names, vnodes=cluster.vnodes)
    with httpx.Client() as http:

        def timed(fn: Callable[[int], Any]) -> float:
            t = []
            for i in range(samples):
                t0 = time.perf_counter()
                fn(i)
                t.append(time.perf_counter() - t0)
            return median(t) * 1000

        def home(i: int) -> str:
            return cluster.urls[ring.node_for(f"layer:{i}")]

        out.append(("one HTTP hop: /ping", timed(lambda i: http.get(home(i) + "/ping"))))
        out.append(
            (
                "one HTTP hop: /replica/get",
                timed(lambda i: http.get(home(i) + "/replica/get", params={"key": f"layer:{i}"})),
            )
        )
        out.append(
            (
                "coordinated put, W=2 of N=3",
                timed(lambda i: http.put(f"{home(i)}/kv/layer:{i}", json={"value": "v", "w": 2})),
            )
        )
        out.append(
            (
                "coordinated get, R=2 of N=3",
                timed(lambda i: http.get(f"{home(i)}/kv/layer:{i}", params={"r": "2"})),
            )
        )
    return out


def ring_rates(lookups: int) -> dict[str, float]:
    """Lookups/s: ours against uhashring, same nodes, vnodes and keys."""
    from uhashring import HashRing as UHashRing

    nodes = [f"node-{i}" for i in range(10)]
    ours, theirs = HashRing(nodes, vnodes=160), UHashRing(nodes=nodes, vnodes=160)
    keys = [f"key:{i}" for i in range(lookups)]

    def rate(fn: Callable[[str], Any]) -> float:
        t0 = time.perf_counter()
        for k in keys:
            fn(k)
        return lookups / (time.perf_counter() - t0)

    return {
        "ours node_for": rate(ours.node_for),
        "uhashring get_node (anchor)": rate(theirs.get_node),
        "ours preference_list(3)": rate(lambda k: ours.preference_list(k, 3)),
        "uhashring range(size=3) (anchor)": rate(lambda k: list(theirs.range(k, size=3))),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--keys", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--samples", type=int, default=300)
    parser.add_argument("--lookups", type=int, default=200_000)
    parser.add_argument("--quick", action="store_true", help="2 s per phase, one run")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    if args.quick:
        args.seconds, args.runs, args.samples, args.lookups = 2.0, 1, 50, 20_000
    print(machine_summary())
    kv_runs, redis_runs, anchor = [], [], ""
    with KvCluster(size=3, n=3) as cluster:
        for _ in range(args.runs):  # interleaved, so drift hits both alike
            kv_runs.append(asyncio.run(_kv_run(cluster, args.keys, args.seconds, args.concurrency)))
            anchor, result = _redis_anchor(args.keys, args.seconds, args.concurrency)
            redis_runs.append(result)
        layers = _layers(cluster, args.samples)

    def med(runs: list[dict[str, Any]]) -> dict[str, float]:
        return {k: median(r[k] for r in runs) for k in runs[0]}

    kv, rd = med(kv_runs), med(redis_runs)
    print_table(
        f"KV at N=3, R=W=2 vs {anchor} ({args.concurrency} in flight, median of {args.runs})",
        ["", "ops/s", "put p50", "put p99", "get p50", "get p99", "errors"],
        [
            [
                name,
                fmt_rate(r["ops/s"]),
                fmt_ms(r["put p50 ms"]),
                fmt_ms(r["put p99 ms"]),
                fmt_ms(r["get p50 ms"]),
                fmt_ms(r["get p99 ms"]),
                f"{r['errors']:.0f}",
            ]
            for name, r in (("quorum KV (ours)", kv), (anchor, rd))
        ],
    )

    def times(a: float, b: float, digits: int = 1) -> str:  # n/a: the anchor did none
        return f"{a / b:.{digits}f}×" if b > 0 else "n/a"

    print(
        f"throughput ratio KV / anchor: {times(kv['ops/s'], rd['ops/s'], 3)}; p99 ratio "
        f"put {times(kv['put p99 ms'], rd['put p99 ms'])}, "
        f"get {times(kv['get p99 ms'], rd['get p99 ms'])}"
    )
    print_table(
        "Where the time goes (one request at a time, median)",
        ["layer", "ms"],
        [[name, fmt_ms(ms)] for name, ms in layers],
    )
    rates = ring_rates(args.lookups)
    pairs = [
        ("ours node_for", "uhashring get_node (anchor)"),
        ("ours preference_list(3)", "uhashring range(size=3) (anchor)"),
    ]
    print_table(
        f"Ring lookups ({args.lookups:,} keys, 10 nodes × 160 vnodes)",
        ["", "lookups/s", "× uhashring"],
        [
            row
            for ours, theirs in pairs
            for row in (
                [ours, fmt_rate(rates[ours]), f"{rates[ours] / rates[theirs]:.2f}×"],
                [theirs, fmt_rate(rates[theirs]), "1.00×"],
            )
        ],
    )
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "anchor": anchor,
                    "kv": kv,
                    "redis": rd,
                    "ratio": kv["ops/s"] / rd["ops/s"] if rd["ops/s"] > 0 else None,
                    "layers": dict(layers),
                    "ring": rates,
                },
                indent=1,
            )
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
