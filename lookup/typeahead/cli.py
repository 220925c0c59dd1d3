"""``lookup typeahead ...``: run the offline pipeline and look at its snapshots."""

from __future__ import annotations

import argparse
import json
import signal
import sys
from collections.abc import Callable
from pathlib import Path

from lookup.typeahead import querylog
from lookup.typeahead.aggregate import LogError
from lookup.typeahead.clusterfold import ClusterFoldError
from lookup.typeahead.pipeline import BuildConfig, run, snapshot_store_url, stderr_progress
from lookup.typeahead.shardbuild import precut_hook
from lookup.typeahead.snapshot import SnapshotError, ValidationPolicy, open_snapshot_store


def _data_dir(args: argparse.Namespace) -> Path:
    from lookup.kit.mounts import resolve_data_dir

    return resolve_data_dir(args.data_dir)


def _positive_int(value: str) -> int:
    try:
        n = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {value!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {n}")
    return n


def _limit(value: str) -> int:
    n = _positive_int(value)
    if n > 10:
        raise argparse.ArgumentTypeError(f"must be between 1 and 10, got {n}")
    return n


def _number_between(lo: float, hi: float, unit: str = "") -> Callable[[str], float]:
    """An argparse type: a number from ``lo`` to ``hi`` inclusive."""

    def parse(value: str) -> float:
        try:
            x = float(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a number: {value!r}") from None
        if not lo <= x <= hi:
            raise argparse.ArgumentTypeError(f"must be between {lo:g} and {hi:g}{unit}, got {x}")
        return x

    return parse


def _dask_scheduler(value: str) -> str:
    """An argparse type: a Dask scheduler address, ``local`` or ``off``."""
    from lookup.settings.typeahead import as_dask_scheduler

    try:
        return as_dask_scheduler(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


_fraction = _number_between(0.0, 1.0)
_timeout = _number_between(0.01, 60.0, " seconds")


def _cmd_build(args: argparse.Namespace) -> int:
    data_dir = _data_dir(args)
    if args.missing:
        store = open_snapshot_store(snapshot_store_url(data_dir))
        if all(store.current(m) for m in querylog.MARKETS):
            print("typeahead: every market already has a published snapshot (skipped)")
            return 0
    log = Path(args.log) if args.log else querylog.log_path(data_dir)
    if not args.log and not querylog.is_built(data_dir):
        print(
            f"error: no query log at {log}; build it with `lookup datasets build typeahead` "
            "or pass --log PATH (CSV or Parquet with ts, market, query, user_id[, is_bot])",
            file=sys.stderr,
        )
        return 2
    config = BuildConfig(
        min_users=args.min_users,
        bot_weight=args.bot_weight,
        period=args.period,
        min_typo_users=args.min_typo_users,
    )
    policy = ValidationPolicy(size_tolerance=args.size_tolerance)
    try:
        result = run(
            data_dir,
            log,
            config=config,
            policy=policy,
            fresh=args.fresh,
            force=args.force,
            progress=None if args.quiet else stderr_progress,
            dask="local" if args.dask and not args.scheduler else args.scheduler,
            on_published=precut_hook(data_dir, args.shards) if args.shards else None,
        )
    except (LogError, SnapshotError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except ClusterFoldError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 3
    if args.json:
        print(json.dumps(result.to_dict(), ensure_ascii=False, indent=2))
    else:
        for m in result.markets:
            state = "published" if m.published else "REFUSED (the previous snapshot keeps serving)"
            print(
                f"{m.market}: {m.version} {state}; {m.suggestions:,} suggestions, "
                f"{m.nodes:,} nodes, {m.snapshot_bytes / max(1, m.suggestions):.0f} B/query"
            )
    return 0 if result.ok else 1


def _cmd_suggest(args: argparse.Namespace) -> int:
    from lookup.errors import NotBuilt
    from lookup.typeahead.serving import SuggestService, UnknownMarket

    service = SuggestService.from_data_dir(_data_dir(args))
    try:
        result = service.lookup(args.prefix, args.market, args.limit)
    except (NotBuilt, UnknownMarket) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(result.body(), ensure_ascii=False, indent=2))
    return 0


def _cmd_snapshots(args: argparse.Namespace) -> int:
    store = open_snapshot_store(snapshot_store_url(_data_dir(args)))
    markets = store.names()
    if not markets:
        print("no snapshots yet; run `lookup typeahead build`", file=sys.stderr)
        return 1
    for market in markets:
        current = store.current(market)
        for v in store.versions(market):
            print(f"{market}  {v}{'  (current)' if v == current else ''}")
    return 0


def _cmd_serve_shard(args: argparse.Namespace) -> int:
    from lookup.typeahead.shard_server import run_shard_server

    if args.store and args.shards is None:
        print("error: --store needs --shards (how many shards a new snapshot is cut into)",
              file=sys.stderr)  # fmt: skip
        return 2
    try:
        run_shard_server(
            args.dir,
            args.shard,
            fd=args.fd,
            host=args.host,
            port=args.port,
            parent_pid=args.parent_pid,
            log_level=args.log_level,
            store_url=args.store,
            n_shards=args.shards,
            size_weight=args.size_weight,
        )
    except (FileNotFoundError, SnapshotError, KeyError) as exc:
        print(f"error: shard {args.shard}: {exc}", file=sys.stderr)
        return 2
    return 0


def _exit_quietly(signum: int, frame: object) -> None:
    raise SystemExit(0)


def _cmd_serve_shards(args: argparse.Namespace) -> int:
    import uvicorn

    from lookup import settings
    from lookup.kit.asgi import build_app as create_app
    from lookup.kit.serving import uvicorn_options
    from lookup.typeahead.router import ShardRouter, install_router
    from lookup.typeahead.sharding import ensure_shard_sets
    from lookup.typeahead.supervisor import ShardCluster

    data_dir = _data_dir(args)
    if args.shards > 64:
        print("error: --shards must be at most 64", file=sys.stderr)
        return 2
    try:
        root = ensure_shard_sets(
            data_dir, args.shards, size_weight=args.size_weight, progress=stderr_progress
        )
    except (LookupError, SnapshotError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    ports = None
    if args.shard_port is not None:
        ports = [args.shard_port + i for i in range(args.shards)]
        if ports[-1] > 65535:
            print("error: --shard-port + --shards runs past port 65535", file=sys.stderr)
            return 2
    store_url = snapshot_store_url(data_dir)  # every shard server and the router follow it
    cluster = ShardCluster(root, args.shards, ports=ports, log_level=args.log_level,
                           store=store_url, size_weight=args.size_weight)  # fmt: skip
    try:
        with cluster:
            router = ShardRouter.from_root(root, cluster.addresses, timeout=args.timeout)
            router.follow(open_snapshot_store(store_url), size_weight=args.size_weight,
                          poll_s=settings.get("typeahead_reload_poll"))  # fmt: skip
            app = create_app(data_dir, subsystems=[lambda m: install_router(m, router)])
            for market, layout in router.layouts.items():
                print(f"{market} ({layout.source_version}):", flush=True)
                for i, (lo, hi) in enumerate(layout.plan.ranges()):
                    print(
                        f"  shard {i} at {cluster.addresses[i]}: buckets {lo or '(start)'!r} "
                        f"to {hi or '(end)'!r}, {layout.plan.keys[i]:,} keys, "
                        f"{layout.plan.cost[i]:.0%} of the cost",
                        flush=True,
                    )
            print(
                f"typeahead router on http://{args.host}:{args.port}/v1/suggest "
                f"({args.shards} shard servers; status at /v1/typeahead/shards)",
                flush=True,
            )
            # uvicorn shuts down gracefully on SIGTERM, then raises the signal again: make
            # that a normal exit so the cluster stops its shard servers on the way out.
            signal.signal(signal.SIGTERM, _exit_quietly)
            uvicorn.run(
                app,
                host=args.host,
                port=args.port,
                log_level=args.log_level,
                access_log=False,
                **uvicorn_options(),
            )
    except (RuntimeError, TimeoutError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add ``lookup typeahead build|suggest|snapshots|serve-shards|serve-shard``."""
    from lookup.kit.cliargs import add_data_dir as _add_data_dir

    p = sub.add_parser(
        "typeahead",
        help="build typeahead snapshots from a query log, query them",
        description="The typeahead offline pipeline and its snapshots.",
    )
    tsub = p.add_subparsers(dest="typeahead_command", metavar="SUBCOMMAND")
    p.set_defaults(func=lambda _a: (p.print_help(), 2)[1])

    b = tsub.add_parser(
        "build",
        help="fold a query log into decayed scores and publish validated snapshots",
        description=(
            "Fold the events of a query log into the running decayed scores (events already "
            "folded are skipped, old logs are never re-read), then per market filter, build "
            "the radix trie with its top 10 per node, validate against the current snapshot "
            "and publish. With --scheduler or --dask the fold runs on Dask workers. Exit 0 "
            "when every market was published, 1 if one was refused, 3 if the Dask cluster "
            "failed (nothing was saved or published)."
        ),
    )
    b.add_argument(
        "--log",
        help="CSV or Parquet with ts, market, query, user_id[, is_bot] "
        "(default: the built query log)",
    )
    b.add_argument(
        "--min-users",
        type=_positive_int,
        default=5,
        help="drop queries searched by fewer distinct users (default 5)",
    )
    b.add_argument(
        "--bot-weight",
        type=_fraction,
        default=0.0,
        help="how much a bot's search counts, 0-1 (default 0)",
    )
    b.add_argument(
        "--period",
        choices=["day", "hour"],
        default="day",
        help="decay step: daily factor 0.5^(1/7) or hourly 0.5^(1/168)",
    )
    b.add_argument(
        "--min-typo-users",
        type=_positive_int,
        default=2,
        help="distinct users who must retype a misspelling before it is learned",
    )
    b.add_argument(
        "--size-tolerance",
        type=_fraction,
        default=0.25,
        help="allowed change in suggestion count vs the current snapshot (default 0.25)",
    )
    b.add_argument("--fresh", action="store_true", help="start the scores from zero")
    b.add_argument(
        "--missing",
        action="store_true",
        help="do nothing if every market already has a published snapshot (what make run does)",
    )
    b.add_argument(
        "--force",
        action="store_true",
        help="skip the comparison with the current snapshot (integrity and blocklist "
        "checks still apply)",
    )
    b.add_argument(
        "--scheduler",
        type=_dask_scheduler,
        default=None,
        metavar="tcp://HOST:PORT",
        help="fold the log on this Dask scheduler's workers (default: setting "
        "typeahead_dask_scheduler; unset: in this process)",
    )
    b.add_argument(
        "--dask",
        action="store_true",
        help="fold the log on a local Dask cluster (two worker processes) started for the build",
    )
    b.add_argument(
        "--shards",
        type=int,
        choices=range(0, 65),
        default=0,
        metavar="N",
        help="also build each published snapshot's N prefix-range shards side by side (on the "
        "Dask workers with --dask/--scheduler), ready for `lookup typeahead serve-shards "
        "--shards N`; 0 (default): serve-shards cuts them when it starts",
    )
    b.add_argument("--json", action="store_true", help="print the full build report as JSON")
    b.add_argument("--quiet", action="store_true", help="no progress on stderr")
    _add_data_dir(b)
    b.set_defaults(func=_cmd_build)

    s = tsub.add_parser("suggest", help="ask the current snapshot for a prefix")
    s.add_argument("prefix")
    s.add_argument("--market", default="en-IN")
    s.add_argument("--limit", type=_limit, default=10)
    _add_data_dir(s)
    s.set_defaults(func=_cmd_suggest)

    v = tsub.add_parser("snapshots", help="list stored snapshot versions per market")
    _add_data_dir(v)
    v.set_defaults(func=_cmd_snapshots)

    from lookup.kit.cliargs import port as _port

    levels = ["critical", "error", "warning", "info", "debug"]
    ss = tsub.add_parser(
        "serve-shards",
        help="cut the current snapshots into N prefix-range shards and serve them behind a router",
        description=(
            "Cut every market's current snapshot into N shards (boundaries drawn from measured "
            "keys and traffic per two-character prefix; kept under DATA_DIR/typeahead/shards and "
            "re-cut only when the snapshot changes), start one shard server process per shard "
            "on loopback, and serve GET /v1/suggest through a router: one-character prefixes "
            "from the replicated head table, longer ones from the shard owning them. A shard "
            "that is down fails only its own range, with 503 SHARD_UNAVAILABLE."
        ),
    )
    ss.add_argument("--shards", type=_positive_int, default=3, help="shard servers (default 3)")
    ss.add_argument("--host", default="127.0.0.1", help="router address (default 127.0.0.1)")
    ss.add_argument("--port", type=_port, default=8100, help="router port (default 8100)")
    ss.add_argument(
        "--shard-port",
        type=_port,
        default=None,
        help="first shard server port, then consecutive (default: free ports on 127.0.0.1)",
    )
    ss.add_argument(
        "--size-weight",
        type=_fraction,
        default=0.5,
        help="how much key count (vs traffic) weighs in drawing boundaries, 0-1 (default 0.5)",
    )
    ss.add_argument(
        "--timeout", type=_timeout, default=2.0, help="seconds the router waits for a shard (2)"
    )
    ss.add_argument("--log-level", default="warning", choices=levels)
    _add_data_dir(ss)
    ss.set_defaults(func=_cmd_serve_shards)

    one = tsub.add_parser(
        "serve-shard",
        help="serve one shard of a shard set (serve-shards starts these)",
        description="Serve GET /v1/shard/suggest for shard I of every market under --dir.",
    )
    one.add_argument("--dir", required=True, help="the shard set (DATA_DIR/typeahead/shards/nN)")
    one.add_argument("--shard", type=int, required=True, help="which shard (0-based)")
    one.add_argument("--host", default="127.0.0.1")
    one.add_argument("--port", type=_port, default=0, help="port (default: a free one)")
    one.add_argument("--fd", type=int, default=None, help="serve on this inherited socket")
    one.add_argument("--parent-pid", type=int, default=None, help="stop when this process exits")
    one.add_argument(
        "--store",
        default=None,
        metavar="URL",
        help="follow this snapshot store (file:///dir or postgresql://…) and switch to each "
        "new current snapshot without a restart (needs --shards)",
    )
    one.add_argument(
        "--shards", type=_positive_int, default=None, help="shards a new snapshot is cut into"
    )
    one.add_argument(
        "--size-weight", type=_fraction, default=0.5, help="as serve-shards (default 0.5)"
    )
    one.add_argument("--log-level", default="warning", choices=levels)
    one.set_defaults(func=_cmd_serve_shard)


__all__ = ["register"]
