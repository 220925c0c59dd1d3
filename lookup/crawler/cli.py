"""``lookup sandbox`` and ``lookup crawl``: serve the local test web, crawl a web politely.

    lookup sandbox --port 8600
    lookup crawl --sandbox 8600 --out crawl1 --max-seconds 60
    lookup crawl http://docs.sandbox.test:8600/ --hosts http://127.0.0.1:8600/_sandbox/hosts \\
        --out crawl1 --max-pages 500
    lookup crawl --out crawl1 --resume
    lookup crawl https://example.test/ --ca-bundle my-ca.pem --out crawl2
"""

from __future__ import annotations

import argparse
import asyncio
import ipaddress
import signal
import sys
from pathlib import Path
from typing import Any

__all__ = ["register"]


def register(sub: Any) -> None:
    """Add ``sandbox`` and ``crawl`` to the ``lookup`` command's subparsers."""
    sb = sub.add_parser(
        "sandbox",
        help="serve the local multi-host test web for the crawler",
        description=(
            "Serve the sandbox web: hosts under .sandbox.test, each on its own loopback "
            "address (127.0.0.2, ...) and one port, with real text (pydoc), duplicates, "
            "traps, robots.txt cases and hostile hosts. The name table is at "
            "http://127.0.0.1:PORT/_sandbox/hosts, the request log at /_sandbox/log and "
            "the ground truth at /_sandbox/manifest."
        ),
    )
    sb.add_argument("--port", type=_port, default=8600, help="port on every address (default 8600)")
    sb.add_argument(
        "--size",
        choices=["small", "default", "large"],
        default="default",
        help="how many pages (small ≈ 100, default ≈ 500, large ≈ 1,500 before traps)",
    )
    sb.add_argument(
        "--crawl-delay", type=_nonneg, default=None, help="robots.txt Crawl-delay (default 1 s)"
    )
    sb.add_argument(
        "--base-address", default="127.0.0.2", help="first host address (default 127.0.0.2)"
    )
    sb.add_argument(
        "--tls-port",
        type=_port,
        default=0,
        help="https port of the hosts served over TLS (default: any free port)",
    )
    sb.add_argument(
        "--no-tls", action="store_true", help="serve no host over https (no certificate made)"
    )
    sb.add_argument("--data-dir", default=None, help=argparse.SUPPRESS)
    sb.set_defaults(func=_cmd_sandbox)

    cr = sub.add_parser(
        "crawl",
        help="crawl from seed URLs politely; write events.jsonl, WARC and state",
        description=(
            "Crawl from SEED URLs: robots.txt first on every host, one request per host "
            "and per address at a time, each after max(Crawl-delay, FACTOR × fetch time, "
            "MIN-DELAY). Writes events.jsonl, warc/*.warc.gz and crawl.sqlite into --out. "
            "Exits 0 when it stops at a limit; --resume continues a stopped or killed crawl."
        ),
    )
    cr.add_argument("seeds", nargs="*", metavar="SEED", help="start URLs (http or https)")
    cr.add_argument("--out", required=True, type=Path, help="crawl directory")
    cr.add_argument("--max-pages", type=_positive_int, default=None, help="stop after N pages")
    cr.add_argument("--max-seconds", type=_positive, default=None, help="stop after S seconds")
    cr.add_argument("--resume", action="store_true", help="continue the crawl in --out")
    cr.add_argument(
        "--hosts",
        default=None,
        metavar="FILE|URL",
        help="name table in /etc/hosts format (a file, or a loopback http URL); only these "
        "names are resolved",
    )
    cr.add_argument(
        "--sandbox",
        type=_port,
        default=None,
        metavar="PORT",
        help="crawl the sandbox web on PORT (its name table; its seeds if none are given)",
    )
    cr.add_argument("--concurrency", type=_positive_int, default=64, help="requests in flight")
    cr.add_argument("--min-delay", type=_nonneg, default=1.0, help="minimum pause per host (s)")
    cr.add_argument(
        "--delay-factor", type=_nonneg, default=10.0, help="pause = FACTOR × fetch time"
    )
    cr.add_argument("--timeout", type=_positive, default=15.0, help="overall fetch timeout (s)")
    cr.add_argument(
        "--max-bytes", type=_positive_int, default=10 * 1024 * 1024, help="page size cap"
    )
    cr.add_argument(
        "--host-budget", type=_positive_int, default=5000, help="URLs per host per cycle"
    )
    cr.add_argument(
        "--cycle-seconds",
        type=_positive,
        default=86400.0,
        help="length of a crawl cycle: each host's page budget is per cycle (default 1 day)",
    )
    cr.add_argument(
        "--new-cycle",
        action="store_true",
        help="with --resume: start a new crawl cycle now (every host's budget afresh)",
    )
    cr.add_argument(
        "--ca-bundle",
        type=Path,
        default=None,
        metavar="PEM",
        help="extra CA certificates to trust for https, besides the public ones "
        "(--sandbox fetches the sandbox web's own CA)",
    )
    cr.add_argument("--max-depth", type=_positive_int, default=20, help="links from a seed")
    cr.add_argument(
        "--recrawl", action="store_true", help="keep going: recrawl pages as they fall due"
    )
    cr.add_argument(
        "--allow-any-address",
        action="store_true",
        help="allow public addresses outside loopback (off by default: nothing leaves the "
        "machine); private, link-local and metadata addresses stay refused",
    )
    cr.add_argument(
        "--allow-range",
        action="append",
        default=[],
        metavar="CIDR",
        help="also allow this address range, e.g. 10.0.0.0/8 (repeatable; --sandbox allows "
        "127.0.0.0/8)",
    )
    cr.add_argument(
        "--allow-domain",
        action="append",
        default=[],
        metavar="D",
        help="crawl only hosts under this domain (repeatable; a domain admits its subdomains)",
    )
    cr.add_argument(
        "--include",
        action="append",
        default=[],
        metavar="REGEX",
        help="crawl only URLs matching one of these patterns (repeatable)",
    )
    cr.add_argument(
        "--exclude",
        action="append",
        default=[],
        metavar="REGEX",
        help="never crawl URLs matching this pattern (repeatable)",
    )
    cr.add_argument("--quiet", action="store_true", help="no live progress line")
    cr.add_argument(
        "--render-budget", type=_count, default=None, metavar="N",
        help="render up to N script-built pages in headless Chromium (default: "
        "LOOKUP_CRAWL_RENDER_BUDGET; 0: never)",
    )  # fmt: skip
    _fleet_arguments(cr)
    cr.set_defaults(func=_cmd_crawl)

    cw = sub.add_parser(
        "crawl-worker",
        help="one worker of a crawler fleet (shared PostgreSQL store, etcd leases)",
        description=(
            "Run one fleet worker: it leases partitions of the hosts from the etcd at "
            "--coordinator, crawls them politely into the shared --store and writes its "
            "WARC files and events into OUT/WORKER-ID. Start one per machine (or let "
            "`lookup crawl --workers N` start N here). Takes the crawl options of "
            "`lookup crawl`."
        ),
    )
    for action in cr._actions:  # the same options as `lookup crawl`
        if action.dest in ("help", "workers"):
            continue
        cw._add_action(action)
    cw.add_argument("--worker-id", required=True, help="this worker's name in the fleet")
    cw.set_defaults(func=_cmd_crawl)


def _fleet_arguments(cr: argparse.ArgumentParser) -> None:
    fl = cr.add_argument_group("fleet (a shared PostgreSQL store, partitions leased from etcd)")
    fl.add_argument("--store", default=None, metavar="postgresql://…",
                    help="crawl into this shared PostgreSQL store as a fleet")  # fmt: skip
    fl.add_argument("--coordinator", default=None, metavar="etcd://HOST:PORT",
                    help="the etcd that leases partitions to workers")  # fmt: skip
    fl.add_argument("--workers", type=_positive_int, default=1,
                    help="worker processes to start here (default 1)")  # fmt: skip
    fl.add_argument("--fleet-name", default="crawl",
                    help="the fleet's name in etcd (one fleet per name and store)")  # fmt: skip
    fl.add_argument("--lease-ttl", type=_positive, default=None,
                    help="partition lease TTL, s (default: LOOKUP_CRAWL_LEASE_TTL)")  # fmt: skip
    fl.add_argument(
        "--partitions",
        type=_positive_int,
        default=None,
        help="partitions of the hosts (default: LOOKUP_CRAWL_PARTITIONS)",
    )


# -- argument types ------------------------------------------------------------------
def _port(value: str) -> int:
    try:
        port = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {value!r}") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"port must be between 0 and 65535, got {port}")
    return port


def _number(value: str, *, positive: bool, integer: bool) -> float:
    try:
        x = int(value) if integer else float(value)
    except ValueError:
        kind = "an integer" if integer else "a number"
        raise argparse.ArgumentTypeError(f"not {kind}: {value!r}") from None
    if x != x or x in (float("inf"), float("-inf")):
        raise argparse.ArgumentTypeError(f"not a finite number: {value!r}")
    if (positive and x <= 0) or x < 0:
        raise argparse.ArgumentTypeError(f"must be {'> 0' if positive else '>= 0'}: {value!r}")
    return x


def _positive(value: str) -> float:
    return float(_number(value, positive=True, integer=False))


def _nonneg(value: str) -> float:
    return float(_number(value, positive=False, integer=False))


def _positive_int(value: str) -> int:
    return int(_number(value, positive=True, integer=True))


def _count(value: str) -> int:
    return int(_number(value, positive=False, integer=True))


# -- lookup sandbox ------------------------------------------------------------------
SIZES = {
    "small": dict(doc_modules=12, stories=6, products=12, blog_posts=6, wiki_pages=4),
    "default": {},
    "large": dict(doc_modules=78, stories=26, products=49, blog_posts=14, wiki_pages=9),
}


def _cmd_sandbox(args: argparse.Namespace) -> int:
    from lookup.crawler.sandbox import Sandbox, SandboxConfig

    try:
        ipaddress.IPv4Address(args.base_address)
    except ValueError:
        print(f"error: not an IPv4 address: {args.base_address!r}", file=sys.stderr)
        return 2
    if not args.base_address.startswith("127."):
        print("error: the sandbox serves loopback addresses only (127.x.x.x)", file=sys.stderr)
        return 2
    overrides: dict[str, Any] = dict(SIZES[args.size])
    if args.crawl_delay is not None:
        overrides["crawl_delay"] = args.crawl_delay
    if args.no_tls:
        overrides["tls_hosts"] = ()
    config = SandboxConfig(
        port=args.port, base_address=args.base_address, tls_port=args.tls_port, **overrides
    )
    web = Sandbox(config)
    try:
        port = web.bind()
    except OSError as exc:
        print(f"error: cannot bind port {args.port} on every address: {exc}", file=sys.stderr)
        return 2
    print(f"sandbox web on port {port}:")
    tls = set(web.manifest()["tls"]["hosts"])
    for name, addr in sorted(web.hosts().items(), key=lambda kv: kv[0]):
        also = f"  (and https://{name}:{web.tls_port}/)" if name in tls else ""
        print(f"  http://{name}:{port}/  ->  {addr}{also}")
    print(f"name table  {web.control_url}/_sandbox/hosts")
    print(f"manifest    {web.control_url}/_sandbox/manifest")
    print(f"request log {web.control_url}/_sandbox/log")
    if tls:
        print(f"CA (https)  {web.control_url}/_sandbox/ca.pem  (a throwaway CA made at startup)")
    print(f"crawl it:   lookup crawl --sandbox {port} --out crawl-out --max-seconds 60", flush=True)
    web.serve_forever()
    return 0


# -- lookup crawl ----------------------------------------------------------------------
def _read_hosts(source: str) -> str:
    """The text of a hosts table from a file or a loopback URL."""
    if source.startswith(("http://", "https://")):
        from lookup.crawler.session import loopback_get

        return str(loopback_get(source, "--hosts").text)
    return Path(source).read_text("utf-8")


def _cmd_crawl(args: argparse.Namespace) -> int:
    import httpx

    from lookup.crawler.engine import CrawlConfig, Crawler, CrawlError
    from lookup.crawler.fetcher import parse_hosts_file
    from lookup.crawler.scope import LOOPBACK, CrawlScope, ScopeError, parse_range
    from lookup.crawler.session import fetch_sandbox_ca
    from lookup.crawler.traps import TrapPolicy
    from lookup.kit.urlnorm import normalize_url

    try:
        scope = CrawlScope(tuple(args.allow_domain), tuple(args.include), tuple(args.exclude))
        ranges = [parse_range(r) for r in args.allow_range]
    except ScopeError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.sandbox is not None:
        ranges.append(LOOPBACK[0])  # the sandbox web is on loopback: allowed explicitly
    seeds = list(args.seeds)
    hosts: dict[str, str] = {}
    source = args.hosts
    if args.sandbox is not None:
        source = source or f"http://127.0.0.1:{args.sandbox}/_sandbox/hosts"
        if not seeds and not args.resume:
            try:
                manifest = httpx.get(
                    f"http://127.0.0.1:{args.sandbox}/_sandbox/manifest", timeout=10.0,
                    trust_env=False,
                ).json()  # fmt: skip
                seeds = list(manifest["seeds"])
            except (httpx.HTTPError, ValueError, KeyError) as exc:
                print(f"error: no sandbox answers on port {args.sandbox}: {exc}", file=sys.stderr)
                return 2
    if source:
        try:
            hosts = parse_hosts_file(_read_hosts(source))
        except (OSError, ValueError, httpx.HTTPError) as exc:
            print(f"error: cannot read the name table {source}: {exc}", file=sys.stderr)
            return 2
    if not seeds and not args.resume:
        print("error: give at least one SEED URL (or --sandbox PORT, or --resume)", file=sys.stderr)
        return 2
    for seed in seeds:
        if normalize_url(seed) is None:
            print(f"error: not a crawlable http(s) URL: {seed!r}", file=sys.stderr)
            return 2
    if args.new_cycle and not args.resume:
        print("error: --new-cycle continues a crawl: pass --resume too", file=sys.stderr)
        return 2
    ca_bundle = args.ca_bundle
    if ca_bundle is not None and not ca_bundle.is_file():
        print(f"error: no CA bundle at {ca_bundle}", file=sys.stderr)
        return 2
    if ca_bundle is None and args.sandbox is not None and not args.resume:
        try:
            ca_bundle = fetch_sandbox_ca(f"http://127.0.0.1:{args.sandbox}", args.out)
        except (OSError, ValueError, httpx.HTTPError) as exc:
            print(f"error: cannot get the sandbox's CA certificate: {exc}", file=sys.stderr)
            return 2
    tty = sys.stderr.isatty()

    def show(p: Any) -> None:
        if tty:
            print("\r" + p.line() + "\x1b[K", end="", file=sys.stderr, flush=True)
        else:
            print(p.line(), file=sys.stderr, flush=True)

    config = CrawlConfig(
        out_dir=args.out,
        seeds=seeds,
        concurrency=args.concurrency,
        min_delay=args.min_delay,
        delay_factor=args.delay_factor,
        timeout=args.timeout,
        max_bytes=args.max_bytes,
        traps=TrapPolicy(host_budget=args.host_budget, max_depth=args.max_depth),
        cycle_seconds=args.cycle_seconds,
        new_cycle=args.new_cycle,
        ca_bundle=ca_bundle,
        hosts=hosts,
        strict_hosts=bool(hosts),
        allow_any_address=args.allow_any_address,
        allow_ranges=tuple(ranges),
        scope=scope,
        max_pages=args.max_pages,
        max_seconds=args.max_seconds,
        resume=args.resume,
        recrawl=args.recrawl,
        progress=None if args.quiet else show,
        **_render_options(args),
    )

    if args.store is not None or getattr(args, "worker_id", None) is not None:
        return _run_fleet(args, config)

    async def main() -> Any:
        crawler = Crawler(config)
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, crawler.stop)
        return await crawler.run()

    try:
        report = asyncio.run(main())
    except CrawlError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"error: cannot write the crawl into {args.out}: {exc}", file=sys.stderr)
        return 2
    if tty and not args.quiet:
        print(file=sys.stderr)
    for line in report.lines():
        print(line)
    print(f"output: {args.out / 'events.jsonl'}, {args.out / 'warc'}, {args.out / 'crawl.sqlite'}")
    return 0


# -- the fleet -------------------------------------------------------------------------
#: Options a fleet's worker processes are given as the parent was (dest -> flag).
_FORWARDED = {
    "concurrency": "--concurrency", "min_delay": "--min-delay",
    "delay_factor": "--delay-factor", "timeout": "--timeout", "max_bytes": "--max-bytes",
    "host_budget": "--host-budget", "max_depth": "--max-depth", "max_pages": "--max-pages",
    "max_seconds": "--max-seconds", "store": "--store", "coordinator": "--coordinator",
    "fleet_name": "--fleet-name", "lease_ttl": "--lease-ttl", "partitions": "--partitions",
    "render_budget": "--render-budget",
}  # fmt: skip


def _render_options(args: argparse.Namespace) -> dict[str, Any]:
    """The render tier's options of a crawl: the flag, else the settings."""
    from lookup import settings

    budget = args.render_budget
    return dict(
        render_budget=int(settings.get("crawl_render_budget") if budget is None else budget),
        render_text_chars=int(settings.get("crawl_render_text_chars")),
        render_timeout=float(settings.get("crawl_render_timeout")),
        render_browser=Path(str(settings.get("crawl_render_browser"))),
    )


def _worker_argv(args: argparse.Namespace, config: Any) -> list[str]:
    """``lookup crawl-worker`` options for this crawl (the name table as a file)."""
    argv = [*config.seeds, "--out", str(args.out), "--quiet"]
    if config.hosts:
        table = Path(args.out) / "hosts.txt"
        table.parent.mkdir(parents=True, exist_ok=True)
        table.write_text("".join(f"{a} {n}\n" for n, a in sorted(config.hosts.items())))
        argv += ["--hosts", str(table)]
    if config.ca_bundle is not None:
        argv += ["--ca-bundle", str(config.ca_bundle)]
    for dest, flag in _FORWARDED.items():
        value = getattr(args, dest, None)
        if value is not None:
            argv += [flag, str(value)]
    for dest, flag in (("allow_domain", "--allow-domain"), ("include", "--include"),
                       ("exclude", "--exclude")):  # fmt: skip
        for value in getattr(args, dest):
            argv += [flag, value]
    for net in config.allow_ranges:
        argv += ["--allow-range", str(net)]
    if args.allow_any_address:
        argv.append("--allow-any-address")
    return argv


def _run_fleet(args: argparse.Namespace, config: Any) -> int:
    """``--store``: one worker here (``crawl-worker``), or N worker processes (``crawl``)."""
    from lookup.crawler.worker import FleetOptions, FleetWorker, coordinator_url

    if args.store is None or args.coordinator is None:
        print("error: a fleet needs --store postgresql://… and --coordinator etcd://…",
              file=sys.stderr)  # fmt: skip
        return 2
    if not args.store.startswith(("postgresql://", "postgres://")):
        print(f"error: --store must be a postgresql:// URL, not {args.store!r}", file=sys.stderr)
        return 2
    try:
        coordinator_url(args.coordinator)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.resume or args.recrawl or args.new_cycle:
        print("error: a fleet resumes by starting its workers again; --resume, --recrawl "
              "and --new-cycle are for the embedded crawl", file=sys.stderr)  # fmt: skip
        return 2
    worker_id = getattr(args, "worker_id", None)
    if worker_id is None:
        return _spawn_workers(args, config)
    fleet = FleetOptions(
        args.store, args.coordinator, worker_id, crawl=args.fleet_name,
        partitions=args.partitions, lease_ttl=args.lease_ttl,
    )  # fmt: skip

    import logging

    logging.basicConfig(level=logging.INFO, format=f"%(asctime)s {worker_id} %(message)s")
    logging.getLogger("httpx").setLevel(logging.WARNING)

    async def main() -> Any:
        worker = FleetWorker(config, fleet)
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, worker.stop)
        return await worker.run()

    from lookup.errors import Unavailable

    try:
        report = asyncio.run(main())
    except Unavailable as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"error: worker {worker_id}: {exc}", file=sys.stderr)
        return 2
    for line in report.lines():
        print(line)
    return 0


def _spawn_workers(args: argparse.Namespace, config: Any) -> int:
    from lookup.crawler.fleet import CrawlFleet

    fleet = CrawlFleet(_worker_argv(args, config), args.out, store_url=args.store)
    names = fleet.start_all(args.workers)
    print(f"fleet: {len(names)} workers ({', '.join(names)}); logs in {args.out}/<worker>.log",
          flush=True)  # fmt: skip

    def stop(_sig: int, _frame: Any) -> None:
        fleet.stop()

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    codes = fleet.wait()
    outcome = fleet.outcome(codes)  # a lost worker: did the others finish the crawl?
    fleet.close()
    for name, code in codes.items():
        print(f"worker {name}: exit {code}")
    for line in outcome.lines():
        print(line)
    return outcome.exit_code
