"""Creates per second on the shared PostgreSQL store through two API processes, against the
embedded SQLite store through one — side by side in one run.

Three configurations of the real ``lookup serve`` command, each in its own process(es) on
free loopback ports with fresh data directories:

* **embedded × 1** — the anchor: one API process over its SQLite files (WAL,
  ``synchronous=NORMAL``), what ``make run`` starts;
* **PostgreSQL × 1** — one API process with ``LOOKUP_SHORTENER_STORE=postgresql://…``
  (what one member of a fleet pays for a store across a socket);
* **PostgreSQL × 2** — two API processes (different data directories) sharing one
  database: the fleet. Each gets its own ``wrk`` with half the connections, run at the
  same time; the creates of both are added up.

The PostgreSQL server is a throw-away cluster with durability on (``fsync``, synchronous
commit: an acknowledged create survives a crash, as the outage drill checks). A create's
figure counts 201 answers only (wrk's "status" errors are anything else). This machine
has two cores shared by wrk, the API processes and PostgreSQL: the figures show what the
shared store costs, not a speed-up — on two cores a second API process has no core of its
own.

    .venv/bin/python benchmarks/bench_scaleout_store.py            # 10 s per run, 3 runs
    .venv/bin/python benchmarks/bench_scaleout_store.py --quick    # 2 s per run, one run
    .venv/bin/python benchmarks/bench_scaleout_store.py --seconds 5 --runs 5 --json out.json
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import os
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import (
    UNLIMITED_ENV,
    WrkResult,
    fmt_ms,
    fmt_rate,
    free_port,
    lua_post_script,
    machine_summary,
    median,
    print_table,
    run_wrk,
    spawned,
    wrk_path,
)
from lookup.kit.pgserver import PostgresServer, postgres_available

#: name -> (API processes, backend)
CONFIGS: dict[str, tuple[int, str]] = {
    "embedded × 1": (1, "embedded"),
    "PostgreSQL × 1": (1, "postgresql"),
    "PostgreSQL × 2": (2, "postgresql"),
}
ANCHOR = "embedded × 1"


@contextlib.contextmanager
def api_processes(n: int, root: Path, store_url: str | None) -> Iterator[list[str]]:
    """``n`` real ``lookup serve`` processes, each over its own data directory; their URLs."""
    env = {**os.environ, **UNLIMITED_ENV}
    env.pop("LOOKUP_PUBLIC_URL", None)
    env.pop("LOOKUP_SHORTENER_STORE", None)
    if store_url:
        env["LOOKUP_SHORTENER_STORE"] = store_url
    with contextlib.ExitStack() as stack:
        urls = []
        for i in range(n):
            port = free_port()
            argv = [sys.executable, "-m", "lookup.cli", "serve", "--port", str(port),
                    "--data-dir", str(root / f"api-{i}")]  # fmt: skip
            urls.append(stack.enter_context(spawned(argv, f"http://127.0.0.1:{port}", env=env)))
        yield urls


def _database(server: PostgresServer) -> str:
    """A new empty database on ``server``; its URL."""
    import psycopg

    name = f"bench_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(server.url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return server.url.rsplit("/", 1)[0] + f"/{name}"


def _load(urls: Sequence[str], *, seconds: int, connections: int, run_id: str) -> dict[str, Any]:
    """One ``wrk`` per API process at the same time (connections split between them)."""
    share = max(1, connections // len(urls))
    results: list[WrkResult | None] = [None] * len(urls)
    failures: list[BaseException] = []

    def one(i: int) -> None:
        try:
            script = lua_post_script("/v1/links", f"{run_id}-{i}")
            results[i] = run_wrk(urls[i], script, seconds=seconds, connections=share)
        except BaseException as exc:  # re-raised in the caller's thread
            failures.append(exc)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(len(urls))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if failures:
        raise failures[0]
    done = [r for r in results if r is not None]
    created = sum(r.requests - r.errors["status"] for r in done)
    duration = max(r.duration_s for r in done)
    return {
        "creates_per_s": created / duration if duration > 0 else 0.0,
        "created": created,
        "errors": sum(r.error_count for r in done),
        "p50_ms": max(r.p50_ms for r in done),
        "p99_ms": max(r.p99_ms for r in done),
    }


def bench(*, seconds: int, runs: int, connections: int) -> dict[str, Any]:
    """Every configuration ``runs`` times, interleaved run by run; medians and runs."""
    per: dict[str, list[dict[str, Any]]] = {name: [] for name in CONFIGS}
    # The cluster makes its own directory (one the postgres user may enter, when root).
    with (
        tempfile.TemporaryDirectory(prefix="bench-scaleout-") as tmp,
        PostgresServer(durable=True) as pg,
    ):
        for run in range(runs):
            for name, (n, backend) in CONFIGS.items():
                root = Path(tmp) / f"run{run}-{backend}-{n}"
                store_url = _database(pg) if backend == "postgresql" else None
                with api_processes(n, root, store_url) as urls:
                    figures = _load(
                        urls, seconds=seconds, connections=connections,
                        run_id=f"{backend}{n}-{run}-{time.time_ns()}",
                    )  # fmt: skip
                per[name].append(figures)
                print(
                    f"  run {run + 1}/{runs} {name:>15}: {fmt_rate(figures['creates_per_s'])}"
                    f"  p50 {fmt_ms(figures['p50_ms'])}  p99 {fmt_ms(figures['p99_ms'])}"
                    f"  errors {figures['errors']}",
                    flush=True,
                )
    out: dict[str, Any] = {}
    for name, figures in per.items():
        anchor_runs = [f["creates_per_s"] for f in per[ANCHOR]]
        ratios = [
            f["creates_per_s"] / a if a > 0 else 0.0
            for f, a in zip(figures, anchor_runs, strict=True)
        ]
        out[name] = {
            "processes": CONFIGS[name][0],
            "backend": CONFIGS[name][1],
            "creates_per_s": median(f["creates_per_s"] for f in figures),
            "p50_ms": median(f["p50_ms"] for f in figures),
            "p99_ms": median(f["p99_ms"] for f in figures),
            "created": sum(f["created"] for f in figures),
            "errors": sum(f["errors"] for f in figures),
            "ratio": median(ratios),
            "runs": [f["creates_per_s"] for f in figures],
        }
    return out


def report(results: dict[str, Any]) -> str:
    """Print the side-by-side table (ratios against the embedded store through one process)."""
    rows = [
        [
            name,
            fmt_rate(r["creates_per_s"]),
            fmt_ms(r["p50_ms"]),
            fmt_ms(r["p99_ms"]),
            f"{r['ratio']:.2f}×",
            " / ".join(f"{x:,.0f}" for x in r["runs"]),
            str(r["errors"]),
        ]
        for name, r in results.items()
    ]
    header = ["API processes × store", "creates/s", "p50", "p99", "× embedded", "per run",
              "non-201"]  # fmt: skip
    text = print_table("Creates over HTTP (medians over runs; ratio: median of per-run ratios):",
                       header, rows)  # fmt: skip
    note = (
        "- 2 cores shared by wrk, the API processes and PostgreSQL: read the figures as a "
        "report of this machine, not as scaling (a second API process has no core of its own)."
    )
    print(note)
    return text + "\n" + note


def main(argv: Sequence[str] | None = None) -> int:
    """Run the comparison and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=int, default=10, help="seconds per wrk run (10)")
    parser.add_argument("--runs", type=int, default=3, help="runs per configuration (3)")
    parser.add_argument("--quick", action="store_true", help="2 s per run, one run")
    parser.add_argument("--connections", type=int, default=32,
                        help="wrk connections in total, split between processes (32)")  # fmt: skip
    parser.add_argument("--json", type=Path, help="also write the raw results here")
    args = parser.parse_args(argv)
    if args.quick:
        args.seconds, args.runs = 2, 1
    if args.seconds < 1 or args.runs < 1 or args.connections < 2:
        parser.error("--seconds and --runs must be at least 1, --connections at least 2")
    if wrk_path() is None:
        print("error: wrk is not installed (apt-get install -y wrk)", file=sys.stderr)
        return 2
    if not postgres_available():
        print("error: PostgreSQL is not installed (apt-get install postgresql)", file=sys.stderr)
        return 2
    print(f"{dt.datetime.now():%Y-%m-%d %H:%M} on {machine_summary()}")
    print(f"wrk -t1, {args.connections} connections in total, -d{args.seconds}s, "
          f"median of {args.runs} run(s)\n")  # fmt: skip
    results = bench(seconds=args.seconds, runs=args.runs, connections=args.connections)
    print()
    report(results)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
