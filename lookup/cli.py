"""The ``lookup`` command: one entry point, one subcommand per job.

Every subcommand takes ``--data-dir`` (default ``$LOOKUP_DATA_DIR`` or ``./data``).
"""

from __future__ import annotations

import argparse
import importlib
import json
import signal
import sys
from collections.abc import Sequence

from lookup import __version__, settings
from lookup.kit.cliargs import add_data_dir, port

#: Modules whose ``register(sub)`` adds subcommands, in the order ``--help`` lists them.
COMMANDS: list[str] = [
    "lookup.capacity.cli",
    "lookup.study.cli",
    "lookup.datasets.cli",
    "lookup.typeahead.cli",
    "lookup.search.cli",
    "lookup.geo.cli",
    "lookup.crawler.cli",
    "lookup.launcher",
]


def http_origin(host: str, port: int) -> str:
    """``http://HOST:PORT``, an IPv6 literal in brackets (``http://[::1]:8000``)."""
    name = host.strip().strip("[]")
    return f"http://[{name}]:{port}" if ":" in name else f"http://{name}:{port}"


def _cmd_serve(args: argparse.Namespace) -> int:
    import uvicorn

    from lookup.kit.admin import public_bind_refusal
    from lookup.kit.hostguard import AllowedHosts, HostGuard
    from lookup.kit.integrity import data_dir_problem
    from lookup.kit.mounts import resolve_data_dir
    from lookup.kit.serverlock import ServerLock, ServerLockRefused, shares_state
    from lookup.kit.serving import uvicorn_options
    from lookup.server import create_app

    data_dir = resolve_data_dir(args.data_dir)
    host = args.host.strip().strip("[]")  # uvicorn binds ::1, not [::1]
    refusal = public_bind_refusal(host, data_dir, "lookup serve")
    if refusal:
        print(refusal, file=sys.stderr)
        return 2
    options = uvicorn_options()  # reads the settings now: a bad value stops us here
    allowed = AllowedHosts.from_settings(host, args.public_url)
    unwritable = data_dir_problem(data_dir)  # creates it if missing
    if unwritable:
        print(f"lookup serve: {unwritable}", file=sys.stderr)
        return 2
    origin = http_origin(host, args.port)
    # One server per embedded data directory (a fleet's servers share theirs): taken before
    # any store is opened, held until this process ends (kit/serverlock.py).
    shared = shares_state(settings.get("shortener_store"), settings.get("cache_url"))
    lock = ServerLock(data_dir, shared=shared, url=origin)
    try:
        lock.acquire()
    except ServerLockRefused as exc:
        print(exc, file=sys.stderr)
        return 2
    with lock:
        app = HostGuard(create_app(data_dir, base_url=args.public_url or origin), allowed)
        print(f"lookup API on {origin}  (data: {data_dir})", flush=True)
        # uvicorn shuts down gracefully, then re-raises the signal it caught; SIGTERM then
        # ends the process as an ordinary exit (143), so exit handlers run — multiprocessing's
        # semaphores are released instead of a resource_tracker warning.
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))
        uvicorn.run(
            app,
            host=host,
            port=args.port,
            log_level=args.log_level,
            access_log=args.access_log,
            **options,
        )
    return 0


def _cmd_settings(args: argparse.Namespace) -> int:
    rows = settings.describe()
    if args.json:
        print(json.dumps(rows, indent=2, default=str))
        return 0
    for row in rows:
        value = "(unset)" if row["value"] in ("", None) else row["value"]
        unit = f" [{row['unit']}]" if row["unit"] else ""
        print(f"{row['env']}={value}{unit}")
        print(f"    {row['help']}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The argument parser for ``lookup`` and all of its subcommands."""
    parser = argparse.ArgumentParser(
        prog="lookup",
        description=(
            "Lookup Workbench: a URL shortener, typeahead, proximity search and a polite "
            "crawler with search, built for real. Run a subcommand with --help for details."
        ),
    )
    parser.add_argument("--version", action="version", version=f"lookup {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    serve = sub.add_parser(
        "serve",
        help="run the HTTP API (every system's endpoints, /healthz, /docs)",
        description=(
            "Serve the HTTP API over the state in the data directory. A system whose data "
            "is not built yet answers 503 NOT_BUILT and names the command that builds it. "
            "One server per data directory, unless LOOKUP_SHORTENER_STORE (PostgreSQL) or "
            "LOOKUP_CACHE_URL (Redis) makes several share it (lookup up --backend ...)."
        ),
    )
    serve.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    serve.add_argument("--port", type=port, default=8000, help="port to bind (default 8000)")
    serve.add_argument(
        "--public-url",
        default=settings.get("public_url") or None,
        help="the address clients use to reach this server (default http://HOST:PORT)",
    )
    serve.add_argument(
        "--log-level", default="warning", choices=["critical", "error", "warning", "info", "debug"]
    )
    serve.add_argument("--access-log", action="store_true", help="log every request")
    add_data_dir(serve)
    serve.set_defaults(func=_cmd_serve)

    show = sub.add_parser(
        "settings",
        help="every knob (environment variable) with its current value and what it does",
        description="Print every LOOKUP_* setting: its current value, unit and purpose.",
    )
    show.add_argument("--json", action="store_true", help="print the table as JSON")
    show.set_defaults(func=_cmd_settings)

    for module in COMMANDS:
        importlib.import_module(module).register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``lookup``; returns the process exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except settings.SettingError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
