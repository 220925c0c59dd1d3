"""``lookup places train`` — learn the places ranking from simulated sessions; ``lookup places
load`` — copy the built data set into the places database a URL names (PostgreSQL)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def _say(message: str) -> None:
    print(f"  {message}", file=sys.stderr, flush=True)


def _cmd_train(args: argparse.Namespace) -> int:
    from lookup.geo.learned import publish, train
    from lookup.geo.service import PlacesService
    from lookup.kit.modelstore.file import FileModelStore
    from lookup.kit.mounts import resolve_data_dir

    if args.seeds < 1 or args.sessions < 10 or args.clicks < 1:
        print("lookup places train: --seeds ≥ 1, --sessions ≥ 10, --clicks ≥ 1", file=sys.stderr)
        return 2
    data = resolve_data_dir(args.data_dir)
    svc = PlacesService(data)
    try:
        if not svc.ready():
            print(
                f"lookup places train: no places data set in {data}; build it with "
                "`lookup datasets build places`",
                file=sys.stderr,
            )
            return 1
        print(f"training a places model on {data} (seed {args.seed})", file=sys.stderr, flush=True)
        report = train(
            svc.searcher(), n_sessions=args.sessions, seed=args.seed, seeds=args.seeds,
            per_session=args.clicks, progress=_say,
        )  # fmt: skip
    except ValueError as exc:
        print(f"lookup places train: {exc}", file=sys.stderr)
        return 1
    finally:
        svc.close()
    f = report.figures
    print(
        f"held-out sessions {f['heldOutSessions']} with a relevant place (trained on "
        f"{f['trainSessions']}, {f['sessionsWithClicks']:,} simulated people clicked)"
    )
    print(f"  position bias measured by a swap experiment: eta {f['etaMeasured']:.3f} "
          f"(the simulated people's: {f['eta']:g}); IPW weights clicks by it")  # fmt: skip
    for m, label in (("Mrr", "MRR"), ("Ndcg", "NDCG@10")):
        hand, learned, gain = f[f"hand{m}"], f[f"learned{m}"], f[f"gain{m}"]
        print(
            f"  {label:<8} hand {hand[0]:.4f} [{hand[1]:.4f}, {hand[2]:.4f}]  learned "
            f"{learned[0]:.4f} [{learned[1]:.4f}, {learned[2]:.4f}]  gain {gain[0]:+.4f} "
            f"[{gain[1]:+.4f}, {gain[2]:+.4f}]  seed noise ±{f[f'noise{m}']:.4f}"
        )
    weights = zip(report.ranker.features, report.ranker.weights, strict=True)
    print("  weights: " + ", ".join(f"{n}={w:+.3f}" for n, w in weights))
    if args.dry_run:
        print("dry run: no model stored")
        return 0
    store = FileModelStore(Path(args.models) if args.models else data / "models")
    version, live = publish(store, report, require_gain=not args.force)
    if live:
        print(f"model {version} is now current in {store.root / 'places'}")
        return 0
    print(
        f"model {version} did not beat the hand-set constants held out; kept aside in "
        f"{store.root / 'places' / 'rejected'}",
        file=sys.stderr,
    )
    return 1


def _cmd_load(args: argparse.Namespace) -> int:
    from lookup import settings
    from lookup.datasets.places import db_path
    from lookup.errors import Unavailable
    from lookup.geo.places.copy import copy_data_set
    from lookup.geo.places.sqlite import check_database
    from lookup.kit.mounts import resolve_data_dir

    url = args.store or settings.get("places_store_url")
    if not url:
        print("lookup places load: name the target with --store postgresql://…", file=sys.stderr)
        return 2
    source = db_path(resolve_data_dir(args.data_dir))
    if not source.exists() or not check_database(source):
        print(
            f"lookup places load: no finished places data set at {source}; build it with "
            "`lookup datasets build places`",
            file=sys.stderr,
        )
        return 1
    try:
        count = copy_data_set(url, source, _say)
    except (ValueError, Unavailable) as exc:
        print(f"lookup places load: {exc}", file=sys.stderr)
        return 1
    print(f"loaded {count:,} places into {_redacted(url)}")
    return 0


def _redacted(url: str) -> str:
    """``url`` without a password (for the summary line)."""
    head, sep, rest = url.partition("://")
    if sep and "@" in rest:
        creds, _, where = rest.rpartition("@")
        return f"{head}://{creds.split(':', 1)[0]}@{where}"
    return url


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add ``lookup places train`` to the ``lookup`` command."""
    p = sub.add_parser(
        "places", help="proximity search: learn its ranking, load its database elsewhere"
    )
    inner = p.add_subparsers(dest="places_command", required=True)
    t = inner.add_parser(
        "train",
        help="learn places ranking weights from simulated sessions and publish the model",
        description=(
            "Simulate people near real places (a radius, sometimes a category, an hour of the "
            "week) clicking today's ranking with position bias; fit an inverse-propensity-"
            "weighted pairwise model; compare with the hand-set constants on held-out sessions "
            "and, if it wins, serve it (DATA_DIR/models/places). Deterministic for a seed."
        ),
    )
    t.add_argument("--seed", type=int, default=0, help="session and click seed")
    t.add_argument("--seeds", type=int, default=3, help="click logs to train on (the noise)")
    t.add_argument("--sessions", type=int, default=1200, help="simulated sessions")
    t.add_argument("--clicks", type=int, default=10, help="people per training session")
    t.add_argument("--models", default=None, help="model store (default: DATA_DIR/models)")
    t.add_argument("--dry-run", action="store_true", help="report only; store no model")
    t.add_argument("--force", action="store_true", help="publish even without a held-out gain")
    t.add_argument("--data-dir", default=None, help="where all state lives")
    t.set_defaults(func=_cmd_train)
    ld = inner.add_parser(
        "load",
        help="copy the built places data set into the places database a URL names",
        description=(
            "Copy every place of the data set built in DATA_DIR (lookup datasets build "
            "places) into an empty places database, e.g. PostgreSQL with PostGIS, in one "
            "transaction: API processes started with LOOKUP_PLACES_STORE_URL then load their "
            "index from it and tail its changes."
        ),
    )
    ld.add_argument("--store", default=None, help="target URL (default: LOOKUP_PLACES_STORE_URL)")
    ld.add_argument("--data-dir", default=None, help="where the data set was built")
    ld.set_defaults(func=_cmd_load)
