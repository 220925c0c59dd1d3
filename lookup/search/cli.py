"""``lookup index CRAWL_DIR`` — build or update the search index from a crawl.

``lookup index versions`` lists the kept and rejected versions, ``lookup index rollback``
makes the version live before the last swap live again (a running ``lookup serve`` picks
it up within a second, as it does a new version).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict

from lookup.search.crawlstore import CRAWL_LINE

if TYPE_CHECKING:
    from lookup.search.location import IndexLocation


class _Shown(TypedDict):
    stage: str
    t: float


def _progress() -> Callable[[str, int, int], None]:
    last: _Shown = {"stage": "", "t": 0.0}

    def show(stage: str, done: int, total: int) -> None:
        now = time.monotonic()
        if stage == last["stage"] and done < total and now - last["t"] < 0.5:
            return
        last.update({"stage": stage, "t": now})
        pct = f"{100.0 * done / total:5.1f}%" if total else "  ..."
        print(f"  {stage:<18} {pct}  {done:,}/{total:,}", file=sys.stderr, flush=True)

    return show


def _cmd_index(args: argparse.Namespace) -> int:
    from lookup import settings
    from lookup.errors import Damaged, Unavailable
    from lookup.kit.mounts import resolve_data_dir
    from lookup.search.crawlstore import crawl_copy, is_store_url
    from lookup.search.indexer import build_index

    crawl = Path(args.crawl_dir)
    if args.crawl_dir in VERBS and not (crawl / "events.jsonl").is_file():
        out = Path(args.out) if args.out else resolve_data_dir(args.data_dir) / "search"
        return VERBS[args.crawl_dir](out)
    if is_store_url(args.crawl_dir):
        try:
            crawl = crawl_copy(args.crawl_dir, resolve_data_dir(args.data_dir), args.crawl_line)
        except (LookupError, ValueError, Unavailable) as exc:
            print(f"lookup index: {exc}", file=sys.stderr)
            return 1
        print(f"copied the crawl published on {args.crawl_line} to {crawl}", file=sys.stderr)
    if not (crawl / "events.jsonl").is_file():
        print(
            f"lookup index: {crawl} has no events.jsonl — point it at a crawl directory "
            "written by `lookup crawl SEED --out DIR`",
            file=sys.stderr,
        )
        return 2
    if args.shards is not None and not 1 <= args.shards <= 64:
        print("lookup index: --shards must be between 1 and 64", file=sys.stderr)
        return 2
    out = Path(args.out) if args.out else resolve_data_dir(args.data_dir) / "search"
    store = str(settings.get("search_index_store") or "").strip() or None
    target = f"{out} (published to the shared index store)" if store else str(out)
    print(f"indexing {crawl} → {target}", file=sys.stderr, flush=True)
    try:
        report = build_index(
            crawl,
            out,
            args.shards,
            rebuild=args.rebuild,
            optimize=args.optimize,
            progress=_progress(),
            force=args.force,
            index_store=store,
        )
    except Damaged as exc:
        print(f"lookup index: {exc.message}. What to do: {exc.remedy}", file=sys.stderr)
        return 1
    except (RuntimeError, ValueError, OSError) as exc:
        print(f"lookup index: {exc}", file=sys.stderr)
        return 1
    kind = "incremental update" if report.incremental else "full build"
    if not report.published:
        print(
            f"lookup index: version {report.version} ({kind}) was rejected — "
            f"{report.validation.get('reason')}. Version {report.live_version} keeps serving; "
            f"the reasons are kept in {'the index store' if store else out / 'rejected'} "
            "(`lookup index versions`). Pass --force to publish a "
            "deliberate change of data set anyway.",
            file=sys.stderr,
        )
        return 1
    print(
        f"index version {report.version} ({kind}, {report.shards} shard(s)) in {out}\n"
        f"  events read {report.events_read:,}; added {report.added:,}, updated "
        f"{report.updated:,}, deleted {report.deleted:,}, unchanged {report.unchanged:,}, "
        f"skipped {report.skipped:,}, failed {report.failed:,}\n"
        f"  live documents {report.live_docs:,}; segments written {report.segments_written}, "
        f"merges {report.merges}; {report.bytes_on_disk / 1e6:.1f} MB on disk; "
        f"watermark seq {report.watermark:,}; {report.seconds:.1f} s"
    )
    checks = report.validation.get("checks") or []
    against = f"against version {report.live_version}" if report.live_version else "first version"
    print(
        f"  validated ({against}): "
        + "; ".join(f"{c['name']} ok ({c['detail']})" for c in checks)
        + f"; {report.canaries} canary queries stored; {report.validation_seconds:.1f} s"
    )
    for err in report.errors[:5]:
        print(f"  failed: {err}", file=sys.stderr)
    return 0


def _location(out: Path) -> IndexLocation:
    """The index ``out`` names, or the shared index store (``search_index_store``) when
    one is set (``out`` then being this machine's copy)."""
    from lookup import settings
    from lookup.search.location import index_location

    return index_location(out, settings.get("search_index_store"))


def _cmd_rollback(out: Path) -> int:
    """``lookup index rollback``: the version live before the last swap, live again."""
    from lookup.errors import Conflict, NotBuilt

    try:
        now, was = _location(out).rollback()
    except (Conflict, NotBuilt) as exc:
        print(f"lookup index rollback: {exc.message}", file=sys.stderr)
        return 1
    print(
        f"index version {now} is live again in {out} (was {was}; `lookup index rollback` "
        f"once more returns to {was}). A running `lookup serve` switches within a second."
    )
    return 0


def _cmd_versions(out: Path) -> int:
    """``lookup index versions``: what is live, the rollback target, kept and rejected."""
    from lookup.search.location import describe_versions

    info = describe_versions(_location(out))
    if not info["versions"] and not info["rejected"]:
        print(f"lookup index versions: no index in {out}", file=sys.stderr)
        return 1
    names = {"live": "live", "previous": "previous (rollback target)"}
    for v in info["versions"]:
        if v["state"] == "damaged":
            print(f"  {v['version']:>6}  damaged: {v['problem']}")
            continue
        built = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(v["createdAt"]))
        print(
            f"  {v['version']:>6}  {names.get(v['state'], 'kept'):<27} "
            f"{v['liveDocs']:>9,} documents  {v['shards']} shard(s)  "
            f"{len(v['canaries'])} canary queries  built {built}"
        )
    for r in info["rejected"]:
        print(f"  {r['version']:>6}  rejected: {r['reason']}")
    return 0


#: Words ``lookup index`` reads as a command rather than a crawl directory (unless a crawl
#: directory of that name is there).
VERBS: dict[str, Callable[[Path], int]] = {"rollback": _cmd_rollback, "versions": _cmd_versions}


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add ``lookup index`` to the ``lookup`` command."""
    p = sub.add_parser(
        "index",
        help="build or update the search index from a crawl directory",
        description=(
            "Read a crawl's events.jsonl and WARC files and build the sharded search index "
            "(immutable segments, published atomically). Re-running it on a grown crawl "
            "indexes only what changed. A new version goes live only if it passes validation "
            "(no empty shard, the document count within bounds of the live version's, the "
            "live version's canary queries still answered); otherwise it is rejected with "
            "the reason and the live one keeps serving. `lookup serve` picks a new version "
            "up by itself. `lookup index rollback` returns to the previous version."
        ),
    )
    p.add_argument(
        "crawl_dir",
        metavar="CRAWL_DIR",
        help="directory written by `lookup crawl`, or the postgresql://… store a crawl was "
        "published to with `lookup crawl-publish` (copied to DATA_DIR/crawls/from-store "
        "first); or `rollback` (make the version live before the last swap live again) or "
        "`versions` (list live, kept and rejected ones)",
    )
    p.add_argument(
        "--crawl-line",
        default=CRAWL_LINE,
        help=f"the store's line the crawl is published on (default {CRAWL_LINE})",
    )
    p.add_argument("--out", default=None, help="index directory (default: DATA_DIR/search)")
    p.add_argument(
        "--shards",
        type=int,
        default=None,
        help="document shards (default: the existing index's, else 4)",
    )
    p.add_argument("--rebuild", action="store_true", help="build from scratch, not incrementally")
    p.add_argument("--optimize", action="store_true", help="merge each shard into one segment")
    p.add_argument(
        "--force",
        action="store_true",
        help="publish even if the document count or the canary queries differ from the live "
        "version's (a deliberate change of data set); an empty shard is still refused",
    )
    p.add_argument(
        "--data-dir",
        default=None,
        help="where all state lives (default: $LOOKUP_DATA_DIR or ./data)",
    )
    p.set_defaults(func=_cmd_index)
    cp = sub.add_parser(
        "crawl-publish",
        help="publish a crawl directory to a shared store for an indexer elsewhere",
        description=(
            "Store a crawl directory's events.jsonl and WARC files as the next version of a "
            "line of a shared version store (chunks with checksums; files published before "
            "cost nothing) and make it current, so `lookup index postgresql://…` on another "
            "machine indexes it with no shared disk."
        ),
    )
    cp.add_argument("crawl_dir", metavar="CRAWL_DIR", help="directory written by `lookup crawl`")
    cp.add_argument(
        "--to", default=None, help="the store (default: the search_crawl_store setting)"
    )
    cp.add_argument("--line", default=CRAWL_LINE, help=f"the line (default {CRAWL_LINE})")
    cp.set_defaults(func=_cmd_crawl_publish)
    register_search(sub)


def _cmd_crawl_publish(args: argparse.Namespace) -> int:
    """``lookup crawl-publish DIR``: the crawl as the current version of a store's line."""
    from lookup import settings
    from lookup.errors import Unavailable
    from lookup.search.crawlstore import publish_crawl

    url = (args.to or str(settings.get("search_crawl_store") or "")).strip()
    if not url:
        print(
            "lookup crawl-publish: name the store with --to postgresql://… (or set "
            "LOOKUP_SEARCH_CRAWL_STORE)",
            file=sys.stderr,
        )
        return 2
    try:
        info = publish_crawl(args.crawl_dir, url, args.line)
    except (FileNotFoundError, ValueError, LookupError, Unavailable) as exc:
        print(f"lookup crawl-publish: {exc}", file=sys.stderr)
        return 2 if isinstance(exc, FileNotFoundError | ValueError) else 1
    if info is None:
        print(f"the crawl in {args.crawl_dir} is published on {args.line} already (unchanged)")
        return 0
    print(
        f"published {len(info.files)} file(s), {info.size:,} bytes, of {args.crawl_dir} as "
        f"{args.line} {info.version} (current)"
    )
    return 0


# --- lookup search train: the learned ranker -------------------------------------------------
def _cmd_train(args: argparse.Namespace) -> int:
    from lookup import settings
    from lookup.errors import NotBuilt
    from lookup.kit.modelstore.file import FileModelStore
    from lookup.kit.mounts import resolve_data_dir
    from lookup.search.learned import publish, train
    from lookup.search.location import index_location
    from lookup.search.service import SearchService

    data = resolve_data_dir(args.data_dir)
    index = Path(args.index) if args.index else data / "search"
    if args.seeds < 1 or args.sessions < 1:
        print("lookup search train: --seeds and --sessions must be at least 1", file=sys.stderr)
        return 2
    svc = SearchService(index_location(index, settings.get("search_index_store")), realtime=False)
    try:
        svc.snapshot()
    except NotBuilt as exc:
        print(f"lookup search train: {exc}", file=sys.stderr)
        svc.close()
        return 1
    store = FileModelStore(Path(args.models) if args.models else data / "models")
    print(f"training a search model on {index} (seed {args.seed})", file=sys.stderr, flush=True)
    try:
        report = train(
            svc, seed=args.seed, seeds=args.seeds, sessions=args.sessions,
            progress=lambda m: print(f"  {m}", file=sys.stderr, flush=True),
        )  # fmt: skip
    except ValueError as exc:
        print(f"lookup search train: {exc}", file=sys.stderr)
        return 1
    finally:
        svc.close()
    f = report.figures
    print(
        f"held-out queries {f['heldOutQueries']} (trained on {f['trainQueries']}, "
        f"{f['sessionsWithClicks']:,} simulated sessions with clicks)"
    )
    print(f"  position bias measured by a swap experiment: eta {f['etaMeasured']:.3f} "
          f"(the simulated people's: {f['eta']:g}); IPW weights clicks by it")  # fmt: skip
    for m, label in (("Mrr", "MRR"), ("Ndcg", "NDCG@10")):
        hand, learned, gain = f[f"hand{m}"], f[f"learned{m}"], f[f"gain{m}"]
        print(
            f"  {label:<8} hand {hand[0]:.4f} [{hand[1]:.4f}, {hand[2]:.4f}]  learned "
            f"{learned[0]:.4f} [{learned[1]:.4f}, {learned[2]:.4f}]  gain {gain[0]:+.4f} "
            f"[{gain[1]:+.4f}, {gain[2]:+.4f}]  seed noise ±{f[f'noise{m}']:.4f}  "
            f"(no IPW: {f[f'naive{m}']:.4f})"
        )
    print("  weights: " + ", ".join(
        f"{n}={w:+.3f}" for n, w in zip(report.ranker.features, report.ranker.weights, strict=True)
    ))  # fmt: skip
    if args.dry_run:
        print("dry run: no model stored")
        return 0
    version, live = publish(store, report, require_gain=not args.force)
    if live:
        print(f"model {version} is now current in {store.root / 'search'}")
        return 0
    print(
        f"model {version} did not beat the hand weights held out; kept aside in "
        f"{store.root / 'search' / 'rejected'} (the hand weights stay)",
        file=sys.stderr,
    )
    return 1


def register_search(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add ``lookup search train`` and ``lookup search serve-shard`` to ``lookup``."""
    p = sub.add_parser("search", help="web search: train a ranking model, serve a shard")
    inner = p.add_subparsers(dest="search_command", required=True)
    t = inner.add_parser(
        "train",
        help="learn ranking weights from simulated clicks and publish the model",
        description=(
            "Simulate searchers (known-item queries from the index's titles, position-biased "
            "clicks on today's ranking), fit an inverse-propensity-weighted pairwise model, "
            "compare it with the hand-set weights on held-out queries and, if it wins, make "
            "it the served model (DATA_DIR/models/search). Deterministic for a given seed."
        ),
    )
    t.add_argument("--seed", type=int, default=0, help="query split and click-log seed")
    t.add_argument("--seeds", type=int, default=3, help="click logs to train on (the noise)")
    t.add_argument("--sessions", type=int, default=20, help="simulated sessions per query")
    t.add_argument("--index", default=None, help="index directory (default: DATA_DIR/search)")
    t.add_argument("--models", default=None, help="model store (default: DATA_DIR/models)")
    t.add_argument("--dry-run", action="store_true", help="report only; store no model")
    t.add_argument("--force", action="store_true", help="publish even without a held-out gain")
    t.add_argument("--data-dir", default=None, help="where all state lives")
    t.set_defaults(func=_cmd_train)
    one = inner.add_parser(
        "serve-shard",
        help="serve one replica of one shard of the search index over HTTP (a shard server)",
        description=(
            "One process = one replica of one shard: answers query plans for that shard of "
            "the current index version (and its slice of the real-time tier) on "
            "POST /v1/search/shard/query; /healthz reports its shard, replica and version."
        ),
    )
    one.add_argument("--shard", type=int, required=True, help="which shard (0-based)")
    one.add_argument("--replica", type=int, default=0, help="which replica (0-based)")
    one.add_argument("--index", default=None, help="index directory (default: DATA_DIR/search)")
    one.add_argument("--data-dir", default=None, help="where all state lives")
    one.add_argument("--host", default="127.0.0.1", help="address (default 127.0.0.1)")
    one.add_argument("--port", type=int, default=0, help="port (default: a free one)")
    one.add_argument("--fd", type=int, default=None, help="serve on this inherited socket")
    one.add_argument("--address-file", default=None, help="write the server's URL here")
    one.add_argument("--parent-pid", type=int, default=None, help="stop when this process exits")
    one.add_argument(
        "--no-realtime", action="store_true", help="serve the batch index only (no crawl log)"
    )
    one.add_argument(
        "--log-level", default="warning", choices=["critical", "error", "warning", "info", "debug"]
    )
    one.add_argument(
        "--register",
        action="store_true",
        help="register in the shard membership in etcd (--etcd, default LOOKUP_ETCD_URL)",
    )
    one.add_argument("--etcd", default=None, help="etcd gateway URL to register in (implies it)")
    one.add_argument(
        "--member-ttl", type=float, default=None, help="lease TTL, s (default: search_member_ttl)"
    )
    one.add_argument(
        "--advertise",
        default=None,
        help="the URL coordinators reach this server at (default: the bound address)",
    )
    one.set_defaults(func=_cmd_serve_shard)
    m = inner.add_parser(
        "members",
        help="print the live shard membership from etcd (JSON)",
        description="Every shard replica registered under its etcd lease: address, shard, "
        "replica, index version, pid, start time.",
    )
    m.add_argument("--etcd", default=None, help="etcd gateway URL (default: LOOKUP_ETCD_URL)")
    m.add_argument("--timeout", type=float, default=5.0, help="seconds to wait for etcd")
    m.set_defaults(func=_cmd_members)


def _cmd_serve_shard(args: argparse.Namespace) -> int:
    from lookup.kit.mounts import resolve_data_dir
    from lookup.search.shard_server import run_shard_server

    if args.shard < 0 or args.replica < 0:
        print("error: --shard and --replica are numbers from 0", file=sys.stderr)
        return 2
    if not 0 <= args.port <= 65535:
        print("error: --port must be 0 to 65535", file=sys.stderr)
        return 2
    etcd_url = args.etcd
    if args.register and not etcd_url:
        from lookup import settings

        etcd_url = str(settings.get("etcd_url") or "")
        if not etcd_url:
            print("error: --register needs --etcd URL or LOOKUP_ETCD_URL", file=sys.stderr)
            return 2
    if args.member_ttl is not None and not args.member_ttl > 0:
        print("error: --member-ttl must be a positive number of seconds", file=sys.stderr)
        return 2
    if args.advertise is not None and not args.advertise.startswith(("http://", "https://")):
        print("error: --advertise is a URL (http://host:port)", file=sys.stderr)
        return 2
    index = args.index or resolve_data_dir(args.data_dir) / "search"
    run_shard_server(
        index,
        args.shard,
        args.replica,
        fd=args.fd,
        host=args.host,
        port=args.port,
        realtime=not args.no_realtime,
        parent_pid=args.parent_pid,
        address_file=args.address_file,
        log_level=args.log_level,
        etcd_url=etcd_url or None,
        member_ttl=args.member_ttl,
        advertise=args.advertise,
    )
    return 0


def _cmd_members(args: argparse.Namespace) -> int:
    from lookup.search.membership import cmd_members

    return cmd_members(args)
