"""Shared helpers for the benchmarks: servers on free ports, ``wrk`` runs, medians, tables.

Every benchmark measures its anchors in the same run as the thing it judges and prints
the ratio, because absolute figures drift with the machine and with whatever else is
running on it (see ``benchmarks/README.md``).

This file is also the entry point of the servers the benchmarks start, each in its own
process so the load generator and the server never share an interpreter::

    python benchmarks/common.py serve bare --port 8123
    python benchmarks/common.py serve shortener --port 8124 --data-dir /tmp/d --info /tmp/i.json
    python benchmarks/common.py serve insert-anchor --port 8125 --data-dir /tmp/d
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from fastapi import FastAPI
from fastapi.responses import JSONResponse
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

ROOT = Path(__file__).resolve().parents[1]
THIS_FILE = Path(__file__).resolve()

#: Rate limits no benchmark reaches (the limiters still run on every create).
UNLIMITED_ENV = {
    "LOOKUP_SHORTENER_RATE_ANON": "100000000/1",
    "LOOKUP_SHORTENER_RATE_OWNER": "100000000/1",
    "LOOKUP_SHORTENER_RATE_IP": "100000000/1",
}
#: What the bare anchor answers: the same headers our redirect sends.
BARE_LOCATION = "https://example.com/articles/2024/benchmark-destination"
CACHE_302 = "max-age=0, s-maxage=60"


# ----------------------------------------------------------------------------- basics


def free_port() -> int:
    """A TCP port on 127.0.0.1 that is free right now, from below the ephemeral range
    (:func:`lookup.kit.ports.free_port`: a benchmark's own connections cannot take it)."""
    from lookup.kit.ports import free_port as pick

    return pick()


def median(values: Iterable[float]) -> float:
    """The median of ``values`` (what every benchmark reports over its repeated runs)."""
    return float(statistics.median(list(values)))


def fmt_rate(value: float) -> str:
    """``12345.6`` → ``"12,346/s"``."""
    return f"{value:,.0f}/s"


def fmt_ms(value: float) -> str:
    """Milliseconds with a sensible number of decimals."""
    return f"{value:.2f} ms" if value < 10 else f"{value:.1f} ms"


def print_table(title: str, header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Print (and return) a plain-text table with right-aligned numeric columns."""
    widths = [max(len(str(h)), *(len(str(r[i])) for r in rows)) for i, h in enumerate(header)]
    lines = [title, ""]
    lines.append(
        "  ".join(
            str(h).ljust(w) if i == 0 else str(h).rjust(w)
            for i, (h, w) in enumerate(zip(header, widths, strict=True))
        )
    )
    lines.append("  ".join("-" * w for w in widths))
    for row in rows:
        lines.append(
            "  ".join(
                str(c).ljust(w) if i == 0 else str(c).rjust(w)
                for i, (c, w) in enumerate(zip(row, widths, strict=True))
            )
        )
    text = "\n".join(lines)
    print(text, flush=True)
    return text


def machine_summary() -> str:
    """CPU model, core count and load average, for labelling recorded figures."""
    model = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    return f"{model}, {os.cpu_count()} cores, Python {sys.version.split()[0]}, load average {load}"


# ------------------------------------------------------------------------------- wrk

_WRK_REPORT = r"""
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'WRK_JSON {"requests":%.0f,"duration_us":%.0f,"p50_us":%.0f,"p90_us":%.0f,' ..
    '"p99_us":%.0f,"max_us":%.0f,"connect":%.0f,"read":%.0f,"write":%.0f,' ..
    '"status":%.0f,"timeout":%.0f}\n',
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(90),
    latency:percentile(99), latency.max, e.connect, e.read, e.write, e.status, e.timeout))
end
"""


def _lua_string(text: str) -> str:
    if any(c in text for c in '"\\\n\r'):
        raise ValueError(f"refusing to embed {text!r} in a Lua string")
    return f'"{text}"'


def lua_get_script(paths: Sequence[str], seed: int = 12345) -> str:
    """A wrk script that GETs a uniformly random path of ``paths`` on every request."""
    if not paths:
        raise ValueError("need at least one path")
    items = ",\n  ".join(_lua_string(p) for p in paths)
    return (
        f"local paths = {{\n  {items}\n}}\n"
        "local n = #paths\n"
        f"math.randomseed({int(seed)})\n"
        "request = function()\n"
        '  return wrk.format("GET", paths[math.random(n)])\n'
        "end\n" + _WRK_REPORT
    )


def lua_post_script(path: str, run_id: str) -> str:
    """A wrk script that POSTs a create with a URL never used before on every request."""
    return (
        "local counter = 0\n"
        f"local run_id = {_lua_string(run_id)}\n"
        'wrk.headers["Content-Type"] = "application/json"\n'
        "request = function()\n"
        "  counter = counter + 1\n"
        '  local body = \'{"longUrl":"https://example.com/bench/\' .. run_id .. '
        "'/' .. counter .. '\"}'\n"
        f'  return wrk.format("POST", {_lua_string(path)}, nil, body)\n'
        "end\n" + _WRK_REPORT
    )


@dataclass(frozen=True)
class WrkResult:
    """One wrk run: throughput, latency percentiles and error counts."""

    requests: int
    duration_s: float
    p50_ms: float
    p90_ms: float
    p99_ms: float
    max_ms: float
    errors: dict[str, int]

    @property
    def rate(self) -> float:
        """Completed requests per second."""
        return self.requests / self.duration_s if self.duration_s > 0 else 0.0

    @property
    def error_count(self) -> int:
        """Socket errors, timeouts and responses outside 2xx/3xx."""
        return sum(self.errors.values())


def wrk_path() -> str | None:
    """Where ``wrk`` is installed (``apt-get install wrk``), or None."""
    return shutil.which("wrk")


def parse_wrk_output(stdout: str) -> WrkResult:
    """The :class:`WrkResult` from the ``WRK_JSON`` line our scripts' ``done()`` prints."""
    for line in stdout.splitlines():
        if line.startswith("WRK_JSON "):
            data = json.loads(line[len("WRK_JSON ") :])
            return WrkResult(
                requests=int(data["requests"]),
                duration_s=data["duration_us"] / 1e6,
                p50_ms=data["p50_us"] / 1e3,
                p90_ms=data["p90_us"] / 1e3,
                p99_ms=data["p99_us"] / 1e3,
                max_ms=data["max_us"] / 1e3,
                errors={k: int(data[k]) for k in ("connect", "read", "write", "status", "timeout")},
            )
    raise RuntimeError(f"wrk printed no WRK_JSON line:\n{stdout[-2000:]}")


def run_wrk(
    url: str,
    script: str,
    *,
    seconds: float,
    connections: int = 32,
    threads: int = 1,
    timeout_s: float = 5.0,
) -> WrkResult:
    """Run ``wrk -t{threads} -c{connections} -d{seconds}s`` with a Lua ``script``."""
    exe = wrk_path()
    if exe is None:
        raise RuntimeError("wrk is not installed: apt-get install -y wrk")
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as fh:
        fh.write(script)
        script_path = fh.name
    try:
        cmd = [
            exe,
            f"-t{threads}",
            f"-c{connections}",
            f"-d{max(1, round(seconds))}s",
            f"--timeout={timeout_s:g}s",
            "-s",
            script_path,
            url,
        ]
        proc = subprocess.run(
            cmd, capture_output=True, text=True, timeout=seconds + 60, check=False
        )
    finally:
        os.unlink(script_path)
    if proc.returncode != 0:
        raise RuntimeError(f"wrk failed ({proc.returncode}): {proc.stderr or proc.stdout}")
    return parse_wrk_output(proc.stdout)


# --------------------------------------------------------------------------- servers


def log_tail(log: Any, chars: int = 4000) -> str:
    """The last ``chars`` characters a server wrote to its ``log`` file (empty if none)."""
    if log is None:
        return ""
    log.seek(0)
    return str(log.read().decode(errors="replace")[-chars:])


def stop_process(proc: subprocess.Popen[bytes], timeout_s: float = 15.0) -> None:
    """Stop a server process: SIGTERM, then SIGKILL after ``timeout_s``."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def wait_ready(
    proc: subprocess.Popen[bytes],
    url: str,
    log: Any,
    *,
    what: str,
    timeout_s: float,
    any_answer: bool = False,
    request_timeout_s: float = 2.0,
    poll_s: float = 0.2,
) -> None:
    """Wait until ``url`` answers 200 (any HTTP answer with ``any_answer``).

    Raises RuntimeError with the tail of ``log`` if the process exits first, and
    TimeoutError after ``timeout_s``.
    """
    deadline = time.monotonic() + timeout_s
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with {proc.returncode}:\n{log_tail(log)}")
        try:
            status = httpx.get(url, timeout=request_timeout_s).status_code
            if any_answer or status == 200:
                return
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what} did not answer {url} within {timeout_s:g} s")
        time.sleep(poll_s)


@contextmanager
def spawned(
    argv: Sequence[str],
    url: str,
    *,
    ready_path: str = "/healthz",
    timeout_s: float = 120.0,
    env: dict[str, str] | None = None,
    stop_timeout_s: float = 15.0,
    request_timeout_s: float = 2.0,
    poll_s: float = 0.2,
) -> Iterator[str]:
    """A server process (``argv``) at ``url`` answering 200 on ``ready_path``; stopped after."""
    log = tempfile.TemporaryFile()
    proc = subprocess.Popen(list(argv), cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_ready(
            proc,
            url + ready_path,
            log,
            what=" ".join(map(str, argv[:4])),
            timeout_s=timeout_s,
            request_timeout_s=request_timeout_s,
            poll_s=poll_s,
        )
        yield url
    finally:
        stop_process(proc, stop_timeout_s)
        log.close()


@dataclass
class ServerProcess:
    """One benchmark server in its own process on a free loopback port.

    ``kind`` is ``bare`` (constant 302 on bare Starlette), ``shortener`` (the real app
    with the shortener mounted) or ``insert-anchor`` (bare FastAPI + one SQLite insert).
    Use as a context manager: it waits until the server answers and stops it with
    SIGTERM (SIGKILL after 15 s); for ``shortener`` the server's counters at shutdown
    are in :attr:`info` afterwards.
    """

    kind: str
    data_dir: Path | None = None
    click_hook: str = "default"
    startup_timeout_s: float = 90.0
    port: int = 0
    url: str = ""
    info: dict[str, Any] = field(default_factory=dict)
    _proc: subprocess.Popen[bytes] | None = None
    _log: Any = None
    _info_path: Path | None = None

    def __enter__(self) -> ServerProcess:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        """Start the server and wait until it answers HTTP."""
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        cmd = [sys.executable, str(THIS_FILE), "serve", self.kind, "--port", str(self.port)]
        if self.data_dir is not None:
            self._info_path = self.data_dir / f"bench-info-{self.port}.json"
            cmd += ["--data-dir", str(self.data_dir), "--info", str(self._info_path)]
        cmd += ["--click-hook", self.click_hook]
        env = {**os.environ, **UNLIMITED_ENV}
        env.pop("LOOKUP_PUBLIC_URL", None)
        self._log = tempfile.TemporaryFile()
        self._proc = subprocess.Popen(
            cmd, cwd=ROOT, env=env, stdout=self._log, stderr=subprocess.STDOUT
        )
        try:
            # any HTTP answer means the server (and its lifespan startup) is up
            wait_ready(
                self._proc,
                f"{self.url}/healthz",
                self._log,
                what=f"{self.kind} server",
                timeout_s=self.startup_timeout_s,
                any_answer=True,
                request_timeout_s=1.0,
                poll_s=0.1,
            )
        except (RuntimeError, TimeoutError):
            self.stop()
            raise

    def log(self) -> str:
        """What the server printed so far (the tail)."""
        return log_tail(self._log)

    def stop(self) -> None:
        """Stop the server (SIGTERM, then SIGKILL) and read its shutdown counters."""
        proc, self._proc = self._proc, None
        if proc is not None:
            stop_process(proc)
        if self._info_path is not None and self._info_path.exists():
            self.info = json.loads(self._info_path.read_text())
            self._info_path.unlink()
        if self._log is not None:
            self._log.close()
            self._log = None


def create_links(base_url: str, count: int, *, concurrency: int = 16) -> list[str]:
    """Create ``count`` links over HTTP (thread pool of clients); returns their keys."""
    from concurrent.futures import ThreadPoolExecutor

    def one(i: int, client: httpx.Client) -> str:
        resp = client.post(
            f"{base_url}/v1/links",
            json={"longUrl": f"https://example.com/articles/2024/hot-destination-{i:05d}"},
        )
        if resp.status_code != 201:
            raise RuntimeError(f"create {i} answered {resp.status_code}: {resp.text}")
        return str(resp.json()["key"])

    def batch(indices: range) -> list[str]:
        with httpx.Client(timeout=30) as client:
            return [one(i, client) for i in indices]

    step = max(1, -(-count // concurrency))
    chunks = [range(s, min(count, s + step)) for s in range(0, count, step)]
    with ThreadPoolExecutor(max_workers=len(chunks)) as pool:
        return [key for keys in pool.map(batch, chunks) for key in keys]


# ------------------------------------------------------------ server entry points


def serve_uvicorn(app: Any, port: int, *, lifespan: str = "auto") -> None:
    """Serve ``app`` on loopback with the stack `lookup serve` gets from uvicorn[standard]:
    uvloop + httptools, no access log."""
    import uvicorn

    uvicorn.run(
        app,
        host="127.0.0.1",
        port=port,
        loop="uvloop",
        http="httptools",
        access_log=False,
        log_level="warning",
        lifespan=lifespan,
    )


def constant_json_app(path: str, body: bytes, headers: dict[str, str] | None = None) -> Any:
    """An anchor: bare Starlette answering ``path`` with the same JSON bytes every time
    (and ``/healthz``)."""

    async def answer(request: Request) -> Response:
        return Response(body, media_type="application/json", headers=headers)

    async def healthz(request: Request) -> Response:
        return Response(b'{"status":"ok"}', media_type="application/json")

    return Starlette(routes=[Route(path, answer), Route("/healthz", healthz)])


def bare_redirect_app() -> Any:
    """The practical limit: bare Starlette answering every path with a constant 302."""
    headers = {"location": BARE_LOCATION, "cache-control": CACHE_302}

    async def redirect(request: Request) -> Response:
        return Response(status_code=302, headers=headers)

    return Starlette(routes=[Route("/{key}", redirect)])


def insert_anchor_app(data_dir: Path) -> Any:
    """The create anchor: a bare FastAPI route that parses the JSON body and inserts one
    row into SQLite (WAL, ``synchronous=NORMAL``, one connection per thread) — what any
    create costs before validation, rate limits, keys and idempotency."""
    path = str(data_dir / "insert-anchor.sqlite3")
    local = threading.local()
    counter = {"n": 0}
    lock = threading.Lock()

    def conn() -> sqlite3.Connection:
        c = getattr(local, "conn", None)
        if c is None:
            c = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
            c.execute("PRAGMA busy_timeout = 10000")
            c.execute("PRAGMA journal_mode = WAL")
            c.execute("PRAGMA synchronous = NORMAL")
            local.conn = c
        return c

    conn().execute(
        "CREATE TABLE IF NOT EXISTS links (key TEXT PRIMARY KEY, long_url TEXT NOT NULL,"
        " created_at REAL NOT NULL)"
    )

    def insert(long_url: str) -> str:
        with lock:
            counter["n"] += 1
            key = f"k{counter['n']:06d}"
        conn().execute(
            "INSERT INTO links(key, long_url, created_at) VALUES (?, ?, ?)",
            (key, long_url, time.time()),
        )
        return key

    api = FastAPI()

    @api.post("/v1/links", status_code=201)
    async def create(request: Request) -> JSONResponse:
        body = json.loads(await request.body())
        key = await run_in_threadpool(insert, body["longUrl"])
        return JSONResponse({"key": key, "longUrl": body["longUrl"]}, status_code=201)

    @api.get("/healthz")
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    return api


def shortener_app(data_dir: Path, base_url: str, click_hook: str, info_path: Path | None) -> Any:
    """The real server app with the shortener's subsystems mounted.

    ``click_hook="noop"`` replaces ``service.on_click`` with a no-op after every startup
    hook has run (so analytics wired at startup is switched off too); ``"default"``
    keeps whatever the app wired. At shutdown the service's metrics and a description
    of the hook go to ``info_path``.
    """
    from lookup.server import SUBSYSTEMS, create_app

    holder: dict[str, Any] = {}

    def bench_hooks(mounts: Any) -> None:
        def startup() -> None:
            shortener = mounts.api.state.shortener
            holder["shortener"] = shortener
            service = shortener.service
            if click_hook == "noop":
                service.on_click = lambda ctx: None
            hook = service.on_click
            holder["hook"] = {
                "mode": click_hook,
                "module": getattr(hook, "__module__", type(hook).__module__),
                "qualname": getattr(hook, "__qualname__", type(hook).__qualname__),
            }

        def shutdown() -> None:
            shortener = holder.get("shortener")
            if shortener is None or info_path is None:
                return
            try:
                metrics = shortener.metrics()
            except Exception as exc:  # the report must not hide a benchmark's result
                metrics = {"error": repr(exc)}
            info_path.write_text(
                json.dumps({"hook": holder["hook"], "metrics": metrics}, default=str)
            )

        mounts.on_startup.append(startup)
        mounts.on_shutdown.append(shutdown)

    mounts_list: list[str | Callable[[Any], None]] = [
        s for s in SUBSYSTEMS if s.startswith("lookup.shortener")
    ]
    mounts_list.append(bench_hooks)
    return create_app(data_dir, base_url=base_url, subsystems=mounts_list)


def _serve(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="common.py serve")
    parser.add_argument("kind", choices=["bare", "shortener", "insert-anchor"])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--data-dir", type=Path)
    parser.add_argument("--info", type=Path)
    parser.add_argument("--click-hook", choices=["default", "noop"], default="default")
    args = parser.parse_args(argv)
    if args.kind == "bare":
        app = bare_redirect_app()
    else:
        if args.data_dir is None:
            parser.error(f"{args.kind} needs --data-dir")
        args.data_dir.mkdir(parents=True, exist_ok=True)
        if args.kind == "insert-anchor":
            app = insert_anchor_app(args.data_dir)
        else:
            app = shortener_app(
                args.data_dir, f"http://127.0.0.1:{args.port}", args.click_hook, args.info
            )
    serve_uvicorn(app, args.port, lifespan="on" if args.kind == "shortener" else "auto")
    return 0


if __name__ == "__main__":
    if len(sys.argv) >= 2 and sys.argv[1] == "serve":
        sys.exit(_serve(sys.argv[2:]))
    print(__doc__)
    sys.exit(2)


@contextmanager
def environment(**values: str) -> Iterator[None]:
    """Set environment variables for servers started inside the block (then restore)."""
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
