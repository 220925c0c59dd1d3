"""``lookup up``: what ``make run`` calls — build missing data, start API, dashboard, sandbox.

All run as child processes; Ctrl-C (or SIGTERM) stops them all cleanly, and if one
dies the others are stopped too, so nothing is left listening.
"""

from __future__ import annotations

import argparse
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx

from lookup import settings

REPO_ROOT = Path(__file__).resolve().parents[1]
DASHBOARD = REPO_ROOT / "app" / "Home.py"


def _wait_for(url: str, proc: subprocess.Popen[bytes], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return False
        try:
            if httpx.get(url, timeout=1.0).status_code == 200:
                return True
        except httpx.HTTPError:
            pass
        time.sleep(0.25)
    return False


def _stop(procs: list[subprocess.Popen[bytes]]) -> None:
    for proc in procs:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + 10
    for proc in procs:
        try:
            proc.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def run_up(args: argparse.Namespace) -> int:
    """Start the API and the dashboard and supervise them until interrupted."""
    if args.backend:  # a fleet on PostgreSQL/Redis: lookup/fleet.py
        from lookup.fleet import run_fleet

        return run_fleet(args)
    from lookup.kit.mounts import resolve_data_dir

    data_dir = resolve_data_dir(args.data_dir)
    data_dir.mkdir(parents=True, exist_ok=True)
    env = settings.child_environ(LOOKUP_DATA_DIR=str(data_dir))
    api_url = f"http://{args.host}:{args.api_port}"
    env["LOOKUP_API_URL"] = api_url
    env.setdefault("LOOKUP_PUBLIC_URL", api_url)

    if not args.skip_datasets:
        build = subprocess.run(
            [sys.executable, "-m", "lookup.cli", "datasets", "build", "all", "--missing",
             "--data-dir", str(data_dir)],
            env=env,
        )  # fmt: skip
        if build.returncode != 0:
            print("error: building the data sets failed (see above)", file=sys.stderr)
            return build.returncode
        snapshots = subprocess.run(
            [sys.executable, "-m", "lookup.cli", "typeahead", "build", "--missing",
             "--data-dir", str(data_dir)],
            env=env,
        )  # fmt: skip
        if snapshots.returncode != 0:
            print("error: building the typeahead snapshots failed (see above)", file=sys.stderr)
            return snapshots.returncode

    lookup_cmd = [sys.executable, "-m", "lookup.cli"]
    app_url = f"http://{args.host}:{args.app_port}"
    sandbox_url = f"http://127.0.0.1:{args.sandbox_port}"
    env["LOOKUP_SANDBOX_URL"] = sandbox_url
    services = [
        ("API", [*lookup_cmd, "serve", "--host", args.host, "--port", str(args.api_port),
                 "--data-dir", str(data_dir)], f"{api_url}/healthz"),
        ("sandbox web", [*lookup_cmd, "sandbox", "--port", str(args.sandbox_port)],
         f"{sandbox_url}/_sandbox/hosts"),
        ("dashboard", [sys.executable, "-m", "streamlit", "run", str(DASHBOARD),
                       "--server.address", args.host, "--server.port", str(args.app_port),
                       "--server.headless", "true", "--browser.gatherUsageStats", "false"],
         f"{app_url}/_stcore/health"),
    ]  # fmt: skip
    if args.no_sandbox:
        services = [s for s in services if s[0] != "sandbox web"]
    procs: list[subprocess.Popen[bytes]] = []
    names: dict[int, str] = {}
    stopping = False

    def _on_signal(signum: int, _frame: object) -> None:
        nonlocal stopping
        stopping = True

    old_int = signal.signal(signal.SIGINT, _on_signal)
    old_term = signal.signal(signal.SIGTERM, _on_signal)
    try:
        for name, argv, health in services:
            proc = subprocess.Popen(argv, env=env, cwd=REPO_ROOT)
            procs.append(proc)
            names[proc.pid] = name
            if not _wait_for(health, proc, timeout=90):
                where = health.rsplit("/", 2)[0] if name != "API" else api_url
                print(f"error: the {name} did not start on {where} (is the port free?)",
                      file=sys.stderr)  # fmt: skip
                return 1
        print("\n  Lookup Workbench is up", flush=True)
        print(f"    API          {api_url}   (docs: {api_url}/docs)", flush=True)
        print(f"    Dashboard    {app_url}", flush=True)
        if not args.no_sandbox:
            print(f"    Sandbox web  {sandbox_url}   (what the crawler crawls)", flush=True)
        print(f"    Data         {data_dir}", flush=True)
        print("  Press Ctrl-C to stop everything.\n", flush=True)
        while not stopping:
            for proc in procs:
                if proc.poll() is not None:
                    print(f"error: the {names[proc.pid]} exited with {proc.returncode}; stopping",
                          file=sys.stderr)  # fmt: skip
                    return 1
            time.sleep(0.5)
        print("\nstopping ...", flush=True)
        return 0
    finally:
        _stop(procs)
        signal.signal(signal.SIGINT, old_int)
        signal.signal(signal.SIGTERM, old_term)


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``lookup up`` to the CLI."""
    p = sub.add_parser(
        "up",
        help="build missing data sets, then run the API and the dashboard together (make run)",
        description="Start the HTTP API and the Streamlit dashboard; Ctrl-C stops both.",
    )
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--api-port", type=int, default=8000)
    p.add_argument("--app-port", type=int, default=8501)
    p.add_argument("--sandbox-port", type=int, default=8600,
                   help="port of the local sandbox web the crawler crawls (default 8600)")
    p.add_argument("--no-sandbox", action="store_true", help="do not start the sandbox web")
    p.add_argument("--skip-datasets", action="store_true", help="do not build missing data sets")
    p.add_argument(
        "--data-dir",
        default=None,
        help="where all state lives (default: $LOOKUP_DATA_DIR or ./data)",
    )
    from lookup.fleet import add_arguments

    add_arguments(p)
    p.set_defaults(func=run_up)
