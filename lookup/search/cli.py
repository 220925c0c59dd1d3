"""``lookup index CRAWL_DIR`` — build or update the search index from a crawl."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path


def _progress() -> object:
    last = {"stage": "", "t": 0.0}

    def show(stage: str, done: int, total: int) -> None:
        now = time.monotonic()
        if stage == last["stage"] and done < total and now - last["t"] < 0.5:
            return
        last.update(stage=stage, t=now)
        pct = f"{100.0 * done / total:5.1f}%" if total else "  ..."
        print(f"  {stage:<18} {pct}  {done:,}/{total:,}", file=sys.stderr, flush=True)

    return show


def _cmd_index(args: argparse.Namespace) -> int:
    from lookup.kit.mounts import resolve_data_dir
    from lookup.search.indexer import build_index

    crawl = Path(args.crawl_dir)
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
    print(f"indexing {crawl} → {out}", file=sys.stderr, flush=True)
    try:
        report = build_index(
            crawl,
            out,
            args.shards,
            rebuild=args.rebuild,
            optimize=args.optimize,
            progress=_progress(),  # type: ignore[arg-type]
        )
    except (RuntimeError, ValueError, OSError) as exc:
        print(f"lookup index: {exc}", file=sys.stderr)
        return 1
    kind = "incremental update" if report.incremental else "full build"
    print(
        f"index version {report.version} ({kind}, {report.shards} shard(s)) in {out}\n"
        f"  events read {report.events_read:,}; added {report.added:,}, updated "
        f"{report.updated:,}, deleted {report.deleted:,}, unchanged {report.unchanged:,}, "
        f"skipped {report.skipped:,}, failed {report.failed:,}\n"
        f"  live documents {report.live_docs:,}; segments written {report.segments_written}, "
        f"merges {report.merges}; {report.bytes_on_disk / 1e6:.1f} MB on disk; "
        f"watermark seq {report.watermark:,}; {report.seconds:.1f} s"
    )
    for err in report.errors[:5]:
        print(f"  failed: {err}", file=sys.stderr)
    return 0


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add ``lookup index`` to the ``lookup`` command."""
    p = sub.add_parser(
        "index",
        help="build or update the search index from a crawl directory",
        description=(
            "Read a crawl's events.jsonl and WARC files and build the sharded search index "
            "(immutable segments, published atomically). Re-running it on a grown crawl "
            "indexes only what changed. `lookup serve` picks the new version up by itself."
        ),
    )
    p.add_argument("crawl_dir", metavar="CRAWL_DIR", help="directory written by `lookup crawl`")
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
        "--data-dir",
        default=None,
        help="where all state lives (default: $LOOKUP_DATA_DIR or ./data)",
    )
    p.set_defaults(func=_cmd_index)
