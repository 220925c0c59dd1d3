"""``lookup datasets build [NAME|all] [--missing]`` and ``lookup datasets list``."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from lookup.datasets import DATASETS


def _data_dir(args: argparse.Namespace) -> Any:
    from lookup.kit.mounts import resolve_data_dir

    return resolve_data_dir(args.data_dir)


def _positive_count(value: str) -> int:
    from lookup.datasets.places import MAX_COUNT

    try:
        n = int(value.replace("_", "").replace(",", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {value!r}") from None
    if not 0 <= n <= MAX_COUNT:
        raise argparse.ArgumentTypeError(f"must be between 0 and {MAX_COUNT:,}, got {n:,}")
    return n


def _positive_events(value: str) -> int:
    try:
        n = int(float(value.replace("_", "").replace(",", "")))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {value!r}") from None
    if not 2_000 <= n <= 50_000_000:
        raise argparse.ArgumentTypeError(f"must be between 2,000 and 50,000,000, got {n:,}")
    return n


def _cmd_build(args: argparse.Namespace) -> int:
    data_dir = _data_dir(args)
    names = sorted(DATASETS) if args.name == "all" else [args.name]
    if args.name != "all" and args.name not in DATASETS:
        print(
            f"lookup datasets build: unknown data set {args.name!r}; "
            f"choose from: {', '.join(sorted(DATASETS))}, all",
            file=sys.stderr,
        )
        return 2
    opts = {
        k: getattr(args, k) for k in ("count", "events", "seed") if getattr(args, k) is not None
    }
    for name in names:
        ds = DATASETS[name]
        if args.missing and ds.is_built(data_dir):
            print(f"{name}: already built at {ds.path(data_dir)} (skipped)")
            continue
        if args.missing and ds.takes_writes and ds.path(data_dir).exists():
            print(
                f"{name}: {ds.path(data_dir)} exists but cannot be read as a complete data set; "
                "not replaced, since it may hold changes made through the API. Restore it from "
                f"a backup, or replace it with `lookup datasets build {name}` (without "
                "--missing), which discards those changes.",
                file=sys.stderr,
            )
            continue
        mine = {k: v for k, v in opts.items() if k in ds.options}
        ignored = sorted(set(opts) - set(mine))
        if ignored and args.name != "all":
            print(f"lookup datasets build: {name} does not take --{ignored[0]}", file=sys.stderr)
            return 2
        try:
            path = ds.build(data_dir, **mine)
        except (ValueError, OSError) as exc:
            print(f"lookup datasets build: {name} failed: {exc}", file=sys.stderr)
            return 1
        print(f"{name}: built {path}")
    return 0


def _cmd_list(args: argparse.Namespace) -> int:
    data_dir = _data_dir(args)
    for name in sorted(DATASETS):
        ds = DATASETS[name]
        state = "built" if ds.is_built(data_dir) else "not built"
        print(f"{name:<12} {state:<10} {ds.path(data_dir)}")
        print(f"{'':<12} {ds.description}")
    return 0


def register(sub: Any) -> None:
    """Add ``datasets`` (with ``build`` and ``list``) to the ``lookup`` subcommands."""
    from lookup.kit.cliargs import add_data_dir as _add_data_dir

    p = sub.add_parser(
        "datasets",
        help="build and list the data sets (places, ...)",
        description="Build the data sets locally from packaged sources; nothing is downloaded.",
    )
    inner = p.add_subparsers(dest="datasets_command", metavar="ACTION")

    build = inner.add_parser("build", help="build one data set, or all of them")
    build.add_argument(
        "name", nargs="?", default="all", help=f"{' | '.join(sorted(DATASETS))} | all (default)"
    )
    build.add_argument("--missing", action="store_true", help="only those not built yet")
    build.add_argument(
        "--count",
        type=_positive_count,
        default=None,
        help="places: how many businesses to generate (default 200,000; up to 5,000,000)",
    )
    build.add_argument(
        "--events",
        type=_positive_events,
        default=None,
        help="typeahead: how many query-log events to generate (default 2,000,000; up to 50M)",
    )
    build.add_argument("--seed", type=int, default=None, help="random seed (default per data set)")
    _add_data_dir(build)
    build.set_defaults(func=_cmd_build)

    lst = inner.add_parser("list", help="what each data set is, and whether it is built")
    _add_data_dir(lst)
    lst.set_defaults(func=_cmd_list)

    def _help(args: argparse.Namespace) -> int:
        p.print_help()
        return 2

    p.set_defaults(func=_help)
