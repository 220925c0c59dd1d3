"""``lookup up``: what ``make run`` calls — build missing data, start API, dashboard, sandbox.

All run as child processes, each in its own session: Ctrl-C (or SIGTERM) reaches only
this supervisor, which stops every child with one SIGTERM, so none is interrupted twice
or half-way; if one dies the others are stopped too, so nothing is left listening.

Before anything starts, every port is checked free (one line says which is busy and
how to choose others); a service counts as up only when its health check answers *and*
the process this run started is the one listening on the port.
"""

from __future__ import annotations

import argparse
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import psutil

from lookup import settings

REPO_ROOT = Path(__file__).resolve().parents[1]
DASHBOARD = REPO_ROOT / "app" / "Home.py"
#: Why a service is not up, by :func:`_wait_for`'s outcome.
WHY = {
    "exited": "it exited with {code} (see its output above)",
    "other": "another process answers on port {port}, not the one this run started",
    "timeout": "no answer within 90 s",
}


def lookup_command() -> str:
    """How to run ``lookup`` from a fresh shell at the repository: ``lookup`` when that is
    on the PATH, else this environment's script (``.venv/bin/lookup`` after ``make run``)."""
    script = Path(sys.executable).parent / "lookup"
    if not script.exists():
        return f"{sys.executable} -m lookup.cli"
    on_path = shutil.which("lookup")
    if on_path and Path(on_path).resolve() == script.resolve():
        return "lookup"
    try:
        return str(script.relative_to(REPO_ROOT))
    except ValueError:
        return str(script)


def port_free(host: str, port: int) -> bool:
    """Whether ``port`` can be bound on ``host`` right now (nothing else listens there)."""
    with socket.socket() as sock:
        try:
            sock.bind((host, port))
        except OSError:
            return False
        return True


def _next_free(host: str, port: int, taken: set[int]) -> int:
    """The first port above ``port`` that is free and not ``taken``."""
    candidate = port + 1
    while candidate in taken or not port_free(host, candidate):
        candidate += 1
    return candidate


def busy_port_message(host: str, ports: dict[str, tuple[str, int]]) -> str | None:
    """One line naming the first busy port and free ones to choose instead; None if all
    are free. ``ports`` maps a service name to ``(make variable, port)``."""
    busy = [(name, var, port) for name, (var, port) in ports.items() if not port_free(host, port)]
    if not busy:
        return None
    taken = {port for _, port in ports.values()}
    choice = {}
    for _, var, port in busy:
        choice[var] = _next_free(host, port, taken)
        taken.add(choice[var])
    names = ", ".join(f"{port} ({name})" for name, _, port in busy)
    make = " ".join(f"{var}={p}" for var, p in choice.items())
    flags = " ".join(f"--{var.split('_')[0].lower()}-port {p}" for var, p in choice.items())
    return (
        f"error: port {names} on {host} is already in use (another `make run`?); nothing "
        f"was started. Choose free ports: make run {make}   (or: {lookup_command()} up {flags})"
    )


def owns_port(proc: subprocess.Popen[bytes], port: int) -> bool:
    """Whether ``proc`` (or a process it started) is the one listening on ``port``."""
    try:
        root = psutil.Process(proc.pid)
        family = [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return False
    for p in family:
        try:
            conns = p.net_connections(kind="tcp")
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
        if any(c.status == psutil.CONN_LISTEN and c.laddr.port == port for c in conns):
            return True
    return False


def _wait_for(
    url: str,
    port: int,
    proc: subprocess.Popen[bytes],
    timeout: float,
    cancelled: Callable[[], bool],
) -> str:
    """``"up"`` once ``url`` answers 200 from ``proc`` itself; ``"exited"`` if ``proc``
    ends first; ``"other"`` if the answer comes from another process; ``"timeout"``;
    ``"cancelled"`` as soon as ``cancelled()`` (Ctrl-C while starting)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cancelled():
            return "cancelled"
        if proc.poll() is not None:
            return "exited"
        try:
            answered = httpx.get(url, timeout=1.0).status_code == 200
        except httpx.HTTPError:
            answered = False
        if answered:
            if owns_port(proc, port):
                return "up"
            if proc.poll() is not None:
                return "exited"
            return "other"
        time.sleep(0.25)
    return "timeout"


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


def _data_dir_taken(data_dir: Path) -> str | None:
    """Why the API could not serve ``data_dir`` now (another server holds its
    ``server.lock``: :mod:`lookup.kit.serverlock`), or None — asked before anything starts."""
    from lookup.kit.serverlock import ServerLock, shares_state

    shared = shares_state(settings.get("shortener_store"), settings.get("cache_url"))
    return ServerLock(data_dir, shared=shared).refusal()


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

    ports = {"API": ("API_PORT", args.api_port), "dashboard": ("APP_PORT", args.app_port)}
    if not args.no_sandbox:
        ports["sandbox web"] = ("SANDBOX_PORT", args.sandbox_port)
    if len({port for _, port in ports.values()}) < len(ports):
        given = ", ".join(f"{name} {port}" for name, (_, port) in ports.items())
        print(f"error: every service needs its own port (given: {given})", file=sys.stderr)
        return 2
    busy = busy_port_message(args.host, ports)
    if busy:
        print(busy, file=sys.stderr)
        return 2
    taken = _data_dir_taken(data_dir)
    if taken:
        print(taken, file=sys.stderr)
        return 2

    if not args.skip_datasets:
        started = time.monotonic()
        print(
            "Checking the data sets; building those that are missing "
            "(the first time about 95 s on a 2-core machine, then none) ...",
            flush=True,
        )
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
        print(f"Data sets ready ({time.monotonic() - started:.0f} s).", flush=True)

    lookup_cmd = [sys.executable, "-m", "lookup.cli"]
    app_url = f"http://{args.host}:{args.app_port}"
    sandbox_url = f"http://127.0.0.1:{args.sandbox_port}"
    env["LOOKUP_SANDBOX_URL"] = sandbox_url
    services = [
        ("API", [*lookup_cmd, "serve", "--host", args.host, "--port", str(args.api_port),
                 "--data-dir", str(data_dir)], f"{api_url}/healthz", args.api_port),
        ("sandbox web", [*lookup_cmd, "sandbox", "--port", str(args.sandbox_port)],
         f"{sandbox_url}/_sandbox/hosts", args.sandbox_port),
        ("dashboard", [sys.executable, "-m", "streamlit", "run", str(DASHBOARD),
                       "--server.address", args.host, "--server.port", str(args.app_port),
                       "--server.headless", "true", "--browser.gatherUsageStats", "false"],
         f"{app_url}/_stcore/health", args.app_port),
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
        for name, argv, health, port in services:
            # Its own session: the terminal's Ctrl-C reaches only this supervisor.
            proc = subprocess.Popen(argv, env=env, cwd=REPO_ROOT, start_new_session=True)
            procs.append(proc)
            names[proc.pid] = name
            outcome = _wait_for(health, port, proc, 90, lambda: stopping)
            if outcome == "cancelled":
                print("\nstopping ...", flush=True)
                return 0
            if outcome != "up":
                where = health.rsplit("/", 2)[0] if name != "API" else api_url
                print(f"error: the {name} did not start on {where}: "
                      f"{WHY[outcome].format(port=port, code=proc.returncode)}",
                      file=sys.stderr)  # fmt: skip
                return 1
        print("\n  Lookup Workbench is up", flush=True)
        print(f"    API          {api_url}   (docs: {api_url}/docs)", flush=True)
        print(f"    Dashboard    {app_url}", flush=True)
        if not args.no_sandbox:
            print(f"    Sandbox web  {sandbox_url}   (what the crawler crawls)", flush=True)
        print(f"    Data         {data_dir}", flush=True)
        print(f"    Commands     {lookup_command()} --help", flush=True)
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
    p.add_argument(
        "--sandbox-port",
        type=int,
        default=8600,
        help="port of the local sandbox web the crawler crawls (default 8600)",
    )
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
