"""The shortener's Redis cache tier: what it costs on hot keys, what each layer of the miss
path takes, and how fast an invalidation reaches another process.

1. **Hot keys over HTTP** — ``wrk -t1 -c32`` on pre-created keys (all L1 hits after the
   warm-up) against a server with the Redis tier (``LOOKUP_CACHE_URL``) and, in the same
   run, the embedded setup (no tier). Target: ≥ 0.9× the embedded req/s.
2. **The miss path, layer by layer** — p50/p99 of one ``Resolver.resolve`` over the
   PostgreSQL link store that stops at the L1, at Redis (L1 dropped), at PostgreSQL
   through the tier (L1 and Redis dropped: a Redis miss, the PostgreSQL read and the
   compare-and-set fill), at PostgreSQL without a tier (L1 dropped), against the embedded
   SQLite miss (no tier: L1 dropped, the SQLite read). Anchors: a bare ``GET`` of
   redis-py, a bare primary-key ``SELECT`` over one psycopg connection and on the SQLite
   file. Every measure takes its samples in turn with the others, in one run.
3. **Invalidation latency across two processes** — two API processes over one data
   directory and one Redis; each retarget through A, then B is polled until it redirects
   to the new target; p50/p99 over the retargets. Anchor: a bare ``PUBLISH`` reaching a
   subscriber (redis-py), measured the same way. Without the tier, B would keep the old
   target for up to its L1 TTL (60 s).

    .venv/bin/python benchmarks/bench_scaleout_cache.py            # 10 s wrk runs, 3 runs
    .venv/bin/python benchmarks/bench_scaleout_cache.py --quick    # 2 s, one run, fewer samples
    .venv/bin/python benchmarks/bench_scaleout_cache.py --only miss --store postgresql://…

Without ``--redis URL`` a throw-away redis-server is started on a free loopback port;
without ``--store URL`` the miss path starts a throw-away PostgreSQL (``kit/pgserver.py``,
as the ``postgres`` user when root).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import sqlite3
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import httpx

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import (  # noqa: E402
    ServerProcess,
    create_links,
    environment,
    lua_get_script,
    machine_summary,
    median,
    print_table,
    run_wrk,
    wrk_path,
)

OWNER = {"Authorization": "Bearer bench-scaleout-owner-token-01"}
CONFIGS = ("embedded", "redis tier")


#: The admin token of the servers started here (``/v1/shortener/metrics`` needs it).
ADMIN_TOKEN = f"bench-{uuid.uuid4().hex}"
ADMIN = {"Authorization": f"Bearer {ADMIN_TOKEN}"}


@contextlib.contextmanager
def redis_url(given: str | None) -> Iterator[str]:
    """``given``, or a throw-away redis-server's URL for the duration."""
    if given:
        yield given
        return
    from lookup.kit.redisserver import RedisServer

    with RedisServer() as server:
        yield server.url


def _pcts(samples: Sequence[float]) -> dict[str, float]:
    ordered = sorted(samples)
    n = len(ordered)
    return {
        "p50_ms": ordered[n // 2] * 1e3,
        "p99_ms": ordered[min(n - 1, int(n * 0.99))] * 1e3,
        "n": n,
    }


# ------------------------------------------------------------------------ 1. hot keys


def bench_hot(
    redis: str, *, seconds: int, runs: int, keys: int, connections: int
) -> dict[str, Any]:
    """Redirect req/s on hot keys: the Redis tier against the embedded setup, paired runs."""
    out: dict[str, Any] = {name: {"runs": [], "p99_ms": []} for name in CONFIGS}
    with tempfile.TemporaryDirectory(prefix="bench-scaleout-hot-") as tmp:
        for run in range(runs):
            for name in CONFIGS:
                env = {
                    "LOOKUP_SHORTENER_AGGREGATOR": "external",
                    "LOOKUP_SHORTENER_SCANNER": "0",
                    "LOOKUP_ADMIN_TOKEN": ADMIN_TOKEN,
                }
                if name == "redis tier":
                    env["LOOKUP_CACHE_URL"] = f"{redis}?prefix=hot-{uuid.uuid4().hex[:8]}:"
                data_dir = Path(tmp) / f"{run}-{name.replace(' ', '-')}"
                with environment(**env), ServerProcess("shortener", data_dir=data_dir) as srv:
                    created = create_links(srv.url, keys)
                    script = lua_get_script([f"/{k}" for k in created])
                    run_wrk(srv.url, script, seconds=2, connections=connections)  # fill L1
                    result = run_wrk(srv.url, script, seconds=seconds, connections=connections)
                    metrics = httpx.get(f"{srv.url}/v1/shortener/metrics", headers=ADMIN)
                    layers = metrics.json()["cache"]
                out[name]["runs"].append(result.rate)
                out[name]["p99_ms"].append(result.p99_ms)
                out[name]["errors"] = out[name].get("errors", 0) + result.error_count
                out[name]["layers"] = layers["layers"]
                print(
                    f"  hot run {run + 1}/{runs} {name:>10}: {result.rate:,.0f}/s "
                    f"p99 {result.p99_ms:.2f} ms, layers {layers['layers']}",
                    flush=True,
                )
    for name in CONFIGS:
        out[name]["rate"] = median(out[name]["runs"])
    pairs = zip(out["redis tier"]["runs"], out["embedded"]["runs"], strict=True)
    out["ratio"] = median(a / b for a, b in pairs if b > 0)
    return out


# ---------------------------------------------------------------------- 2. miss path


def _interleaved(
    measures: dict[str, tuple[Callable[[], None], Callable[[], Any]]], samples: int
) -> dict[str, dict[str, float]]:
    """p50/p99 of each ``(prepare, timed)`` pair, taken in turn sample by sample, so the
    machine's load falls on every layer alike."""
    times: dict[str, list[float]] = {name: [] for name in measures}
    for _ in range(samples):
        for name, (prepare, fn) in measures.items():
            prepare()
            t0 = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t0)
    return {name: _pcts(values) for name, values in times.items()}


@contextlib.contextmanager
def postgres_store_url(given: str | None) -> Iterator[str]:
    """``given``, or a new database on a throw-away PostgreSQL (``kit/pgserver.py``: a free
    loopback port, fsync off, as the ``postgres`` user when root) for the duration."""
    if given:
        yield given
        return
    import psycopg

    from lookup.kit.pgserver import PostgresServer

    with PostgresServer() as server:
        name = f"bench_{uuid.uuid4().hex[:10]}"
        with psycopg.connect(server.url, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        yield server.url.rsplit("/", 1)[0] + f"/{name}"


def bench_miss(redis: str, *, samples: int, store_url: str) -> dict[str, Any]:
    """p50/p99 of one resolve stopping at the L1, at Redis, at PostgreSQL (through the
    tier, and without it), against the embedded SQLite miss; and the bare anchors, all
    interleaved in one run."""
    import psycopg
    import redis as redis_py

    from lookup.kit.cache_redis import RedisSharedCache
    from lookup.kit.storeurl import sqlite_url
    from lookup.shortener.model import Link
    from lookup.shortener.resolver import Resolver
    from lookup.shortener.store import open_link_store

    with tempfile.TemporaryDirectory(prefix="bench-scaleout-miss-") as tmp:
        path = Path(tmp) / "links.sqlite3"
        pg = open_link_store(store_url)
        lite = open_link_store(sqlite_url(path))
        keys = [f"miss{i:05d}{uuid.uuid4().hex[:4]}" for i in range(200)]
        now = time.time()
        for key in keys:
            for store in (pg, lite):
                link = Link(key=key, long_url=f"https://example.com/{key}", owner=None,
                            created_at=now, updated_at=now)  # fmt: skip
                store.create(link, render=lambda _link: {})
        tier = RedisSharedCache(redis, prefix=f"miss-{uuid.uuid4().hex[:8]}:")
        tiered = Resolver(pg, shared=tier)
        pg_alone = Resolver(pg)
        embedded = Resolver(lite)
        cycle = iter(range(10**9))
        current = {"k": keys[0]}

        def pick() -> None:
            current["k"] = keys[next(cycle) % len(keys)]

        def drop_l1(resolver: Resolver) -> Callable[[], None]:
            def prepare() -> None:
                pick()
                resolver.cache.delete(current["k"])

            return prepare

        def drop_both() -> None:
            pick()
            tiered.cache.delete(current["k"])
            tier.delete(current["k"])

        def resolve(resolver: Resolver) -> Callable[[], Any]:
            return lambda: resolver.resolve(current["k"])

        for k in keys:  # warm: every key in each L1 and in Redis, each connection open
            for resolver in (tiered, pg_alone, embedded):
                resolver.resolve(k)
        client = redis_py.Redis.from_url(redis)
        client.set("bench:anchor", b"x" * 300)
        pg_conn = psycopg.connect(store_url, autocommit=True)
        lite_conn = sqlite3.connect(path)
        by_key = "SELECT * FROM links WHERE key = "
        figures: dict[str, Any] = _interleaved(
            {
                "L1 hit": (pick, resolve(tiered)),
                "Redis hit (L1 dropped)": (drop_l1(tiered), resolve(tiered)),
                "PostgreSQL via the tier (L1 + Redis dropped)": (drop_both, resolve(tiered)),
                "PostgreSQL, no tier (L1 dropped)": (drop_l1(pg_alone), resolve(pg_alone)),
                "embedded SQLite miss (no tier, L1 dropped)": (
                    drop_l1(embedded), resolve(embedded),
                ),
                "anchor: bare redis-py GET": (pick, lambda: client.get("bench:anchor")),
                "anchor: bare psycopg SELECT by key": (
                    pick, lambda: pg_conn.execute(by_key + "%s", (current["k"],)).fetchone(),
                ),
                "anchor: bare SQLite SELECT by key": (
                    pick, lambda: lite_conn.execute(by_key + "?", (current["k"],)).fetchone(),
                ),
            },
            samples,
        )  # fmt: skip
        figures["stats"] = tiered.stats()["layers"]
        figures["store"] = pg.describe() if hasattr(pg, "describe") else store_url
        lite_conn.close()
        pg_conn.close()
        client.close()
        tier.close()
        pg.close()
        lite.close()
    return figures


# ----------------------------------------------------------------- 3. invalidation


def bench_invalidation(redis: str, *, retargets: int) -> dict[str, Any]:
    """Retarget through A, poll B until it redirects to the new target; and the anchor."""
    import redis as redis_py

    out: dict[str, Any] = {}
    env = {
        "LOOKUP_CACHE_URL": f"{redis}?prefix=inval-{uuid.uuid4().hex[:8]}:",
        "LOOKUP_SHORTENER_ANALYTICS": "0",
        "LOOKUP_SHORTENER_SCANNER": "0",
        "LOOKUP_ADMIN_TOKEN": ADMIN_TOKEN,
    }
    latencies: list[float] = []
    with tempfile.TemporaryDirectory(prefix="bench-scaleout-inval-") as tmp:
        data_dir = Path(tmp) / "data"
        with (
            environment(**env),
            ServerProcess("shortener", data_dir=data_dir) as a,
            ServerProcess("shortener", data_dir=data_dir) as b,
            httpx.Client(timeout=10) as client,
        ):
            made = client.post(
                f"{a.url}/v1/links", json={"longUrl": "https://example.com/v0"}, headers=OWNER
            )
            key = made.json()["key"]
            for i in range(1, retargets + 1):
                assert client.get(f"{b.url}/{key}").status_code == 302  # in B's L1
                target = f"https://example.com/v{i}"
                resp = client.patch(
                    f"{a.url}/v1/links/{key}", json={"longUrl": target}, headers=OWNER
                )
                if resp.status_code != 200:
                    raise RuntimeError(f"retarget answered {resp.status_code}: {resp.text}")
                t0 = time.perf_counter()
                while client.get(f"{b.url}/{key}").headers.get("location") != target:
                    if time.perf_counter() - t0 > 10:
                        raise RuntimeError("B never saw the retarget")
                latencies.append(time.perf_counter() - t0)
            heard = httpx.get(f"{b.url}/v1/shortener/metrics", headers=ADMIN).json()["cache"]
    out["retarget seen on B"] = _pcts(latencies)
    out["heard"] = heard["remoteInvalidations"]

    sub = redis_py.Redis.from_url(redis).pubsub(ignore_subscribe_messages=True)
    sub.subscribe("bench:anchor")
    pub = redis_py.Redis.from_url(redis)
    anchor: list[float] = []
    got = threading.Event()
    stamp: dict[str, float] = {}

    def listen() -> None:
        while len(anchor) < retargets:
            message = sub.get_message(timeout=1.0)
            if message is not None:
                anchor.append(time.perf_counter() - stamp["t"])
                got.set()

    listener = threading.Thread(target=listen, daemon=True)
    listener.start()
    time.sleep(0.2)
    for _ in range(retargets):
        got.clear()
        stamp["t"] = time.perf_counter()
        pub.publish("bench:anchor", "k")
        got.wait(5)
    listener.join(5)
    sub.close()
    pub.close()
    out["anchor: bare PUBLISH → subscriber"] = _pcts(anchor)
    return out


# ---------------------------------------------------------------------------- report


def report(results: dict[str, Any]) -> None:
    """Print the tables."""
    if "hot" in results:
        hot = results["hot"]
        ok = "✓" if hot["ratio"] >= 0.9 else "✗"
        print_table(
            "Hot keys over HTTP (wrk -t1 -c32, L1 hits)",
            ["setup", "req/s (median)", "p99 (median)", "errors", "vs embedded"],
            [
                [
                    name,
                    f"{hot[name]['rate']:,.0f}/s",
                    f"{median(hot[name]['p99_ms']):.2f} ms",
                    str(hot[name].get("errors", 0)),
                    "1.00×" if name == "embedded" else f"{hot['ratio']:.2f}× {ok} (≥ 0.9×)",
                ]
                for name in CONFIGS
            ],  # fmt: skip
        )
        print()
    if "miss" in results:
        miss = results["miss"]
        rows = [
            [name, f"{v['p50_ms'] * 1e3:.0f} µs", f"{v['p99_ms'] * 1e3:.0f} µs", str(v["n"])]
            for name, v in miss.items()
            if name not in ("stats", "store")
        ]
        print_table("One resolve, by the layer it stops at", ["layer", "p50", "p99", "n"], rows)
        print(f"  (PostgreSQL: {miss['store']}; samples interleaved layer by layer)")
        print()
    if "invalidation" in results:
        inv = results["invalidation"]
        rows = [
            [name, f"{v['p50_ms']:.2f} ms", f"{v['p99_ms']:.2f} ms", str(v["n"])]
            for name, v in inv.items()
            if name != "heard"
        ]
        print_table(
            "Invalidation across two processes (retarget through A → B redirects anew)",
            ["measure", "p50", "p99", "n"],
            rows,
        )
        print("  (without the tier: up to the L1 TTL, 60 s)")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the selected parts and print the tables."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=int, default=10, help="seconds per wrk run (10)")
    parser.add_argument("--runs", type=int, default=3, help="paired hot-key runs (3)")
    parser.add_argument("--keys", type=int, default=1000, help="hot keys (1000)")
    parser.add_argument("--connections", type=int, default=32, help="wrk connections (32)")
    parser.add_argument("--samples", type=int, default=2000, help="resolves per layer (2000)")
    parser.add_argument("--retargets", type=int, default=100, help="retargets timed (100)")
    parser.add_argument("--quick", action="store_true", help="2 s, one run, fewer samples")
    parser.add_argument("--only", default="hot,miss,invalidation", help="a subset of those")
    parser.add_argument("--redis", help="a Redis URL (default: a throw-away redis-server)")
    parser.add_argument(
        "--store",
        help="a PostgreSQL URL for the miss path (default: a throw-away PostgreSQL server)",
    )
    parser.add_argument("--json", type=Path, help="also write the raw results here")
    args = parser.parse_args(argv)
    if args.quick:
        args.seconds, args.runs = 2, 1
        args.samples, args.retargets = min(args.samples, 300), min(args.retargets, 20)
    chosen = {s.strip() for s in args.only.split(",") if s.strip()}
    unknown = chosen - {"hot", "miss", "invalidation"}
    if unknown:
        parser.error(f"unknown part(s): {', '.join(sorted(unknown))}")
    if min(args.seconds, args.runs, args.keys, args.connections, args.samples, args.retargets) < 1:
        parser.error("every count must be at least 1")
    if "hot" in chosen and wrk_path() is None:
        print("error: wrk is not installed (apt-get install -y wrk)", file=sys.stderr)
        return 2
    print(f"{dt.datetime.now():%Y-%m-%d %H:%M} on {machine_summary()}\n")
    results: dict[str, Any] = {}
    with redis_url(args.redis) as redis:
        if "hot" in chosen:
            print("Hot keys over HTTP, the Redis tier against the embedded setup:")
            results["hot"] = bench_hot(
                redis, seconds=args.seconds, runs=args.runs, keys=args.keys,
                connections=args.connections,
            )  # fmt: skip
        if "miss" in chosen:
            with postgres_store_url(args.store) as store_url:
                results["miss"] = bench_miss(redis, samples=args.samples, store_url=store_url)
        if "invalidation" in chosen:
            results["invalidation"] = bench_invalidation(redis, retargets=args.retargets)
    print()
    report(results)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
