"""The crawler fleet against the single-process crawl and Scrapy, in the same run.

1. **Throughput.** One sandbox web (``lookup sandbox --crawl-delay 0`` in its own
   process, the 8 content hosts on 6 loopback addresses, politeness delays at zero) is
   crawled to the end by the embedded crawl (one process, SQLite), by a fleet of 1, 2
   and 3 ``lookup crawl-worker`` processes (a throw-away PostgreSQL store and etcd), and
   by Scrapy (one request per host) capped at the embedded crawl's page count. Pages per
   second come from the sandbox's own request log (first request's start to last
   answer's end), the yardstick of ``bench_crawler.py``. **This machine has 2 cores**:
   the workers, PostgreSQL, etcd and the sandbox share them, so a fleet here proves
   correctness and failover at about equal throughput, not a speed-up.
2. **Overhead per fetch** of the fleet machinery: the writes one page's commit makes
   (its URL, host counters and pause, the fetch record, ten links admitted), timed on
   the embedded SQLite store, on the PostgreSQL store without a fence, and with the
   fence check a fleet worker's transaction carries; plus the lease check asked before
   every request. Microseconds per page, same run.

    .venv/bin/python benchmarks/bench_crawl_fleet.py              # default sandbox, 1 run
    .venv/bin/python benchmarks/bench_crawl_fleet.py --size large --runs 3
    .venv/bin/python benchmarks/bench_crawl_fleet.py --only overhead
    .venv/bin/python benchmarks/bench_crawl_fleet.py --only throughput --diff   # which pages differ
"""

from __future__ import annotations

import argparse
import datetime as dt
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make `benchmarks.common` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.bench_crawler import OURS_AGENT, _content_sandbox, measure, run_worker
from benchmarks.common import machine_summary, median, print_table
from lookup.crawler.config import DEFAULT_USER_AGENT
from lookup.crawler.session import SandboxProcess, read_request_log

TTL = 3
PARTITIONS = 256
#: Names a crawl draws at random (a host's soft-404 probe; the shop's session-like
#: ``?visit=`` token): two crawls never ask for the same ones, so a diff folds them.
_RANDOM = re.compile(r"lookupbot-probe-[0-9a-f]+\.html$|(?<=[?&]visit=)[0-9a-f]+")


def fetched_pages(sandbox: str, since: int, agent: str) -> set[str]:
    """The pages (not robots.txt) one crawl asked the sandbox for, random names folded."""
    return {
        _RANDOM.sub("*", f"{e.host}{e.target}")
        for e in read_request_log(sandbox, since=since)
        if e.user_agent == agent and e.path != "/robots.txt"
    }


def print_diff(name: str, base: set[str], other: set[str], examples: int = 4) -> None:
    """Which pages only the embedded crawl or only ``name`` fetched, by host."""
    for label, only in (("only embedded", base - other), (f"only {name}", other - base)):
        by_host: dict[str, list[str]] = {}
        for page in sorted(only):
            by_host.setdefault(page.split("/", 1)[0], []).append(page)
        print(f"    {label}: {len(only)}", flush=True)
        for host, pages in sorted(by_host.items()):
            some = ", ".join(p.split("/", 1)[1] for p in pages[:examples])
            print(f"      {host:<24} {len(pages):4d}  e.g. {some}")


def run_fleet(sandbox: str, workers: int, workdir: Path, pg_url: str, etcd_url: str) -> Any:
    """N worker processes crawl the content hosts to the end; measured from the log."""
    seeds, hosts = _content_sandbox(sandbox)
    out = workdir / f"fleet-{workers}"
    out.mkdir(parents=True)
    table = out / "hosts.txt"
    table.write_text("".join(f"{a} {n}\n" for n, a in sorted(hosts.items())))
    since = len(read_request_log(sandbox))
    argv = [
        sys.executable, "-m", "lookup.cli", "crawl", *seeds, "--out", str(out), "--quiet",
        "--hosts", str(table), "--allow-range", "127.0.0.0/8", "--min-delay", "0",
        "--delay-factor", "0", "--timeout", "15", "--store", pg_url,
        "--coordinator", etcd_url.replace("http://", "etcd://"), "--workers", str(workers),
        "--lease-ttl", str(TTL), "--partitions", str(PARTITIONS), "--fleet-name",
        f"bench{workers}",
    ]  # fmt: skip
    t0 = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, timeout=1800)
    wall = time.perf_counter() - t0
    if done.returncode != 0:
        raise RuntimeError(f"the {workers}-worker fleet failed:\n{done.stdout}\n{done.stderr}")
    time.sleep(0.3)  # let the sandbox log the last answers
    entries = [
        e for e in read_request_log(sandbox, since=since) if e.user_agent == DEFAULT_USER_AGENT
    ]
    return measure(f"fleet, {workers} worker{'s' if workers > 1 else ''}", entries, wall)


def bench_throughput(size: str, runs: int, workdir: Path, diff: bool = False) -> dict[str, Any]:
    from lookup.kit.etcd import EtcdServer
    from lookup.kit.pgserver import PostgresServer

    sandbox = SandboxProcess(workdir / "sandbox.log", size=size, crawl_delay=0.0).start()
    results: dict[str, list[Any]] = {}
    try:
        with PostgresServer() as pg, EtcdServer() as etcd:
            # An unmeasured visit renders every page once (the sandbox caches); Scrapy
            # follows traps for ever, so it is capped.
            run_worker("scrapy", sandbox.url, 3000, 8, workdir / "warm-up")
            for r in range(runs):
                since = len(read_request_log(sandbox.url))
                ours = run_worker("ours", sandbox.url, 10**6, 1, workdir / f"ours-{r}")
                base = fetched_pages(sandbox.url, since, OURS_AGENT) if diff else set()
                rows = [ours, run_worker("scrapy", sandbox.url, ours.pages, 1, workdir / "s")]
                for n in (1, 2, 3):
                    db = f"fleet_{r}_{n}"
                    with _admin(pg.url) as conn:
                        conn.execute(f'CREATE DATABASE "{db}"')
                    url = pg.url.rsplit("/", 1)[0] + f"/{db}"
                    since = len(read_request_log(sandbox.url))
                    rows.append(run_fleet(sandbox.url, n, workdir / f"r{r}", url, etcd.url))
                    if diff:
                        pages = fetched_pages(sandbox.url, since, DEFAULT_USER_AGENT)
                        print(f"  run {r + 1}: the pages of the embedded crawl and of "
                              f"{rows[-1].crawler}:")  # fmt: skip
                        print_diff(rows[-1].crawler, base, pages)
                for run in rows:
                    results.setdefault(run.crawler, []).append(run)
                    print(
                        f"  run {r + 1}: {run.crawler:<36} {run.pages:5d} pages in "
                        f"{run.seconds:6.1f} s = {run.pages_per_second:6.1f}/s",
                        flush=True,
                    )
    finally:
        sandbox.stop()
    return {
        name: {
            "pages_per_second": median(x.pages_per_second for x in rs),
            "pages": median(x.pages for x in rs),
            "seconds": median(x.seconds for x in rs),
        }
        for name, rs in results.items()
    }


def _admin(url: str) -> Any:
    import psycopg

    return psycopg.connect(url, autocommit=True)


# ------------------------------------------------------------------------ overhead


def _page_writes(store: Any, n: int, links: int = 10) -> None:
    """The writes one page's commit makes, as the crawl loop issues them."""
    from lookup.crawler.store import FetchedUrl, FetchRecord, HostPause, UrlRecord

    host = f"h{n % 8}.test"
    with store.transaction():
        store.record_fetched(FetchedUrl(f"p{n}", "done", "ok", 0, 200, "t", 1.0, fetches=1))
        store.count_host(host, "fetched")
        store.set_host_pause(host, HostPause(0.1, 2.0))
        store.add_fetch(FetchRecord(f"http://{host}/{n}", host, "127.0.0.2", "page",
                                    1.0, 0.01, 200, "ok", 0.1))  # fmt: skip
        for k in range(links):
            h = f"h{(n + k) % 8}.test"
            row = UrlRecord(f"l{n}-{k}", f"http://{h}/{n}/{k}", h, "queued", seq=n)
            store.insert_url(row, if_absent=True)
            store.ensure_host(h, "127.0.0.2", "http")
            store.count_host(h, "admitted")
            store.bump_budget(h, 1)


def bench_overhead(pages: int, workdir: Path) -> dict[str, float]:
    from lookup.crawler.leases import PartitionLeases
    from lookup.crawler.partitions import Fence, current_fence
    from lookup.crawler.store import UrlRecord
    from lookup.crawler.store_pg import PgCrawlStore
    from lookup.crawler.store_sqlite import SqliteCrawlStore
    from lookup.kit.etcd import EtcdServer, etcd_client
    from lookup.kit.pgserver import PostgresServer

    out: dict[str, float] = {}
    with PostgresServer() as pg, EtcdServer() as etcd:
        stores = {
            "embedded (SQLite)": SqliteCrawlStore(workdir / "crawl.sqlite"),
            "PostgreSQL, no fence": PgCrawlStore(pg.url),
        }
        for name, store in stores.items():
            for n in range(pages):
                store.insert_url(UrlRecord(f"p{n}", f"http://x/{n}", "x", "leased"),
                                 if_absent=False)  # fmt: skip
            samples = []
            for n in range(pages):
                t0 = time.perf_counter()
                _page_writes(store, n)
                samples.append(time.perf_counter() - t0)
            out[name] = statistics.median(samples) * 1e6
        pg_store = stores["PostgreSQL, no fence"]
        pg_store.grant_partition(0, 1, "bench", time.time())
        token = current_fence.set(Fence(0, 1))
        try:
            samples = []
            for n in range(pages):
                t0 = time.perf_counter()
                _page_writes(pg_store, pages + n)
                samples.append(time.perf_counter() - t0)
            out["PostgreSQL, fenced (the fleet)"] = statistics.median(samples) * 1e6
        finally:
            current_fence.reset(token)
        leases = PartitionLeases(etcd_client(etcd.url), "bench", "w1", 16, TTL).start()
        try:
            wait = time.monotonic() + 10
            while not leases.owned() and time.monotonic() < wait:
                time.sleep(0.05)
            part, epoch = next(iter(leases.owned().items()))
            t0 = time.perf_counter()
            for _ in range(100_000):
                leases.permits(part, epoch)
            out["lease check (permits)"] = (time.perf_counter() - t0) / 100_000 * 1e6
        finally:
            leases.stop()
        for store in stores.values():
            store.close()
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", choices=["small", "default", "large"], default="default")
    parser.add_argument("--runs", type=int, default=1, help="runs per crawler (1)")
    parser.add_argument("--pages", type=int, default=300, help="pages in the overhead test")
    parser.add_argument("--only", default="throughput,overhead")
    parser.add_argument(
        "--diff",
        action="store_true",
        help="print the pages only the embedded crawl or only a fleet fetched, by host",
    )
    args = parser.parse_args(argv)
    chosen = {s.strip() for s in args.only.split(",") if s.strip()}
    if chosen - {"throughput", "overhead"} or args.runs < 1 or args.pages < 1:
        parser.error("--only takes throughput,overhead; --runs and --pages at least 1")
    print(f"{dt.datetime.now():%Y-%m-%d %H:%M} on {machine_summary()}\n")
    with tempfile.TemporaryDirectory(prefix="bench-fleet-") as tmp:
        if "throughput" in chosen:
            print(f"Throughput on the {args.size} sandbox, median of {args.runs} run(s):")
            res = bench_throughput(args.size, args.runs, Path(tmp), args.diff)
            base = res["ours (1 per host, 1 per address)"]["pages_per_second"]
            print_table(
                "\nPages/s from the sandbox's log (2 cores shared by everything)",
                ["crawler", "pages", "seconds", "pages/s", "× embedded"],
                [
                    [k, f"{v['pages']:.0f}", f"{v['seconds']:.1f}",
                     f"{v['pages_per_second']:.1f}", f"{v['pages_per_second'] / base:.2f}"]
                    for k, v in res.items()
                ],
            )  # fmt: skip
        if "overhead" in chosen:
            res2 = bench_overhead(args.pages, Path(tmp))
            base = res2["embedded (SQLite)"]
            print_table(
                f"\nOne page's commit (10 links), median µs of {args.pages}",
                ["what", "µs", "× embedded"],
                [[k, f"{v:.1f}", f"{v / base:.2f}"] for k, v in res2.items()],
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
