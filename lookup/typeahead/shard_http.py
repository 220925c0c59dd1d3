"""Prefix-range shards served over HTTP: shard servers, the router in front, the supervisor.

:mod:`~lookup.typeahead.sharding` plans the shards and writes one snapshot per shard
plus ``plan.json`` (boundaries and the head table). This module serves them the way a
deployment would once the trie outgrows one machine:

* a **shard server** (:class:`ShardServer`, ``lookup typeahead serve-shard``) is its own
  process that maps only its own shard files — shard ``i`` of every market — and answers
  ``GET /v1/shard/suggest`` for prefixes in its range; a prefix outside its range is
  refused with ``421 WRONG_SHARD`` rather than answered with a misleading empty list;
* the **router** (:class:`ShardRouter`) is the one public endpoint, ``GET /v1/suggest``
  with the same contract as the unsharded server: the empty and one-character prefixes
  come from the replicated head table without a network hop, every longer prefix goes
  to the one shard owning its first two code points, over one pooled ``aiohttp``
  session (keep-alive connections, a timeout per call; ``aiohttp`` because on this
  machine it makes the hop several times faster than ``httpx.AsyncClient``, see
  ``benchmarks/README.md``). A shard that is down or too slow fails only its own
  range, with ``503 SHARD_UNAVAILABLE``;
* the **supervisor** (:class:`ShardCluster`, ``lookup typeahead serve-shards``) binds a
  loopback socket per shard, starts each shard server as a child process on it, waits
  until all answer, and stops them all on exit.

The hot blocklist and the trending blend stay with the single-node ``/v1/suggest``;
the sharded path serves the snapshots as built, which is what makes its answers
comparable, byte for byte, with the unsharded trie.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import aiohttp
import httpx
from starlette.routing import Route
from starlette.types import Receive, Scope, Send
from yarl import URL

from lookup.kit.http import ApiError
from lookup.typeahead.http import error_body, send_json, suggest_params
from lookup.typeahead.normalize import normalize_prefix
from lookup.typeahead.sharding import ShardLayout, in_range, shard_file
from lookup.typeahead.snapshot import Snapshot

if TYPE_CHECKING:
    from lookup.server import Mounts

log = logging.getLogger("lookup.typeahead.shards")

#: The shard servers' endpoint (internal: the router calls it, clients call the router).
SHARD_PATH = "/v1/shard/suggest"
#: Response headers naming who answered: a shard number or ``head``, and the cut's version.
SHARD_HEADER = b"x-lookup-shard"
VERSION_HEADER = b"x-lookup-version"


def _encode(body: dict[str, Any]) -> bytes:
    """The same JSON bytes ``/v1/suggest`` sends (compact, UTF-8 kept)."""
    return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()


def _describe(lo: str, hi: str | None) -> str:
    """A bucket range for messages: ``'ka' to 'pa'`` or ``'ka' onwards``."""
    first = repr(lo) if lo else "the start"
    return f"{first} to {hi!r}" if hi is not None else f"{first} onwards"


async def _respond(
    scope: Scope, send: Send, body: bytes, headers: list[tuple[bytes, bytes]]
) -> None:
    await send_json(send, 200, body, scope.get("method", "GET"), cache=True, extra=headers)


async def _refuse(scope: Scope, send: Send, exc: ApiError) -> None:
    extra = [(k.lower().encode(), v.encode()) for k, v in exc.headers.items()]
    await send_json(
        send, exc.status, error_body(exc.code, exc.message), scope.get("method", "GET"),
        extra=extra,
    )  # fmt: skip


def _method_ok(scope: Scope) -> bool:
    return scope.get("method", "GET") in ("GET", "HEAD")


_NOT_GET = ApiError(405, "METHOD_NOT_ALLOWED", "use GET", headers={"Allow": "GET, HEAD"})


# --------------------------------------------------------------------------- shard server


@dataclass
class ShardSlice:
    """One market's shard as a shard server holds it."""

    snapshot: Snapshot
    lo: str
    hi: str | None
    source_version: str


class ShardServer:
    """Shard ``shard`` of every market under a shard-set root, each from its own file only."""

    def __init__(self, root: str | os.PathLike[str], shard: int) -> None:
        self.root = Path(root)
        self.shard = shard
        self.slices: dict[str, ShardSlice] = {}
        if not self.root.is_dir():
            raise FileNotFoundError(f"no shard set at {self.root}")
        for market_dir in sorted(self.root.iterdir()):
            path = shard_file(market_dir, shard)
            if market_dir.name.startswith(".") or not path.is_file():
                continue  # a set being written, or a market with fewer shards
            snap = Snapshot(path)
            lo, hi = snap.meta["range"]
            self.slices[snap.market] = ShardSlice(
                snap, lo, hi, str(snap.meta.get("source_version") or snap.version)
            )

    def answer(self, raw: bytes) -> tuple[bytes, str]:
        """``(body, source version)`` for a raw query string, or ``ApiError``."""
        q, market, limit = suggest_params(raw)
        part = self.slices.get(market)
        if part is None:
            known = ", ".join(sorted(self.slices)) or "none"
            raise ApiError(
                400, "UNKNOWN_MARKET", f"shard {self.shard} holds no {market!r}; it holds: {known}"
            )
        p = normalize_prefix(q)
        if len(p) < 2:
            raise ApiError(
                400, "NOT_SHARDED",
                "prefixes shorter than two characters are answered from the router's head table",
            )  # fmt: skip
        if not in_range(p, part.lo, part.hi):
            raise ApiError(
                421, "WRONG_SHARD",
                f"{p[:2]!r} is outside shard {self.shard} of {market} "
                f"({_describe(part.lo, part.hi)})",
            )  # fmt: skip
        snap = part.snapshot
        found = snap.find(p, limit)
        body = {"q": p, "version": part.source_version, "complete": found.complete,
                "suggestions": snap.texts(found.ids)}  # fmt: skip
        return _encode(body), part.source_version

    def status(self) -> dict[str, Any]:
        """What this server holds (for ``/healthz``)."""
        return {
            "status": "ok",
            "shard": self.shard,
            "pid": os.getpid(),
            "markets": {
                m: {
                    "range": [s.lo, s.hi],
                    "version": s.source_version,
                    "suggestions": s.snapshot.n_strings,
                    "file": s.snapshot.path.name,
                }
                for m, s in self.slices.items()
            },  # fmt: skip
        }


class ShardEndpoint:
    """``GET /v1/shard/suggest?q=&market=&limit=`` as a plain ASGI app."""

    def __init__(self, server: ShardServer) -> None:
        self.server = server
        self._shard = str(server.shard).encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not _method_ok(scope):
            await _refuse(scope, send, _NOT_GET)
            return
        try:
            body, version = self.server.answer(scope.get("query_string", b""))
        except ApiError as exc:
            await _refuse(scope, send, exc)
            return
        await _respond(scope, send, body, [(SHARD_HEADER, self._shard),
                                            (VERSION_HEADER, version.encode())])  # fmt: skip


def install_shard(mounts: Mounts, server: ShardServer) -> ShardServer:
    """Mount a shard server's endpoint and health probe (a ``mount`` for ``create_app``)."""
    mounts.fast_routes.append(Route(SHARD_PATH, ShardEndpoint(server)))
    mounts.health["typeahead-shard"] = server.status
    return server


# --------------------------------------------------------------------------- router


@dataclass
class ShardStats:
    """What the router has seen of one shard."""

    shard: int
    address: str
    calls: int = 0
    failures: int = 0
    last_error: str | None = None
    last_error_at: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able form."""
        return {"shard": self.shard, "address": self.address, "calls": self.calls,
                "failures": self.failures, "lastError": self.last_error,
                "lastErrorAt": self.last_error_at}  # fmt: skip


class ShardRouter:
    """The one endpoint in front of the shards: head table for short prefixes, one shard else.

    ``addresses[i]`` is the base URL of the server holding shard ``i`` of every market.
    The router loads only the plans and head tables, never a shard's trie.
    """

    def __init__(
        self,
        layouts: dict[str, ShardLayout],
        addresses: Sequence[str],
        *,
        timeout: float = 2.0,
        max_connections: int = 64,
    ) -> None:
        if not layouts:
            raise ValueError("a router needs at least one market's shard layout")
        need = max(layout.plan.n for layout in layouts.values())
        if len(addresses) < need:
            raise ValueError(f"the plans have {need} shards but only {len(addresses)} addresses")
        self.layouts = layouts
        self.addresses = [a.rstrip("/") for a in addresses]
        self.timeout = timeout
        self.max_connections = max_connections
        self.stats = [ShardStats(i, a) for i, a in enumerate(self.addresses)]
        self._session: aiohttp.ClientSession | None = None

    @classmethod
    def from_root(cls, root: str | os.PathLike[str], addresses: Sequence[str],
                  **kwargs: Any) -> ShardRouter:  # fmt: skip
        """A router over every market's shard directory under ``root``."""
        layouts = {}
        for d in sorted(Path(root).iterdir()):
            if d.is_dir() and not d.name.startswith(".") and (d / "plan.json").exists():
                layout = ShardLayout.load(d)
                layouts[layout.market] = layout
        return cls(layouts, addresses, **kwargs)

    def session(self) -> aiohttp.ClientSession:
        """The pooled session (created on first use, inside the serving event loop)."""
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=self.max_connections),
                timeout=aiohttp.ClientTimeout(total=self.timeout),
                trust_env=False,  # shards are internal: never through a proxy from the env
                auto_decompress=False,
            )
        return self._session

    async def aclose(self) -> None:
        """Close the pooled connections."""
        if self._session is not None:
            await self._session.close()
            self._session = None

    def markets(self) -> list[str]:
        """The markets this router serves."""
        return sorted(self.layouts)

    async def answer(self, raw: bytes) -> tuple[bytes, list[tuple[bytes, bytes]]]:
        """``(body, extra headers)`` for a raw ``/v1/suggest`` query string, or ``ApiError``."""
        q, market, limit = suggest_params(raw)
        layout = self.layouts.get(market)
        if layout is None:
            known = ", ".join(self.markets())
            raise ApiError(400, "UNKNOWN_MARKET", f"unknown market {market!r}; known: {known}")
        p = normalize_prefix(q)
        version = layout.source_version or ""
        if len(p) <= 1:
            top, complete = layout.head_answer(p, limit)
            body = {"q": p, "version": version, "complete": complete, "suggestions": top}
            return _encode(body), [(SHARD_HEADER, b"head")]
        shard = layout.plan.shard_of(p)
        return await self._ask(shard, layout, p, limit), [(SHARD_HEADER, str(shard).encode())]

    async def _ask(self, shard: int, layout: ShardLayout, p: str, limit: int) -> bytes:
        stats = self.stats[shard]
        stats.calls += 1
        url = URL(f"{self.addresses[shard]}{SHARD_PATH}?market={quote(layout.market, safe='')}"
                  f"&q={quote(p, safe='')}&limit={limit}", encoded=True)  # fmt: skip
        try:
            async with self.session().get(url) as r:
                status, body = r.status, await r.read()
                got = r.headers.get("x-lookup-version", "")
        except TimeoutError:
            raise self._down(stats, layout, f"did not answer within {self.timeout:g} s") from None
        except aiohttp.ClientError as exc:
            reason = str(exc) or type(exc).__name__
            raise self._down(stats, layout, f"is unreachable ({reason})") from None
        if status == 200:
            if layout.source_version and got != layout.source_version:
                raise self._down(
                    stats, layout,
                    f"serves a different cut ({got or 'unknown'}, the router has "
                    f"{layout.source_version})",
                    code="SHARD_MISMATCH",
                )  # fmt: skip
            return body
        if status == 421:
            raise self._down(stats, layout, "does not own this range", code="SHARD_MISMATCH")
        if status >= 500:
            raise self._down(stats, layout, f"answered {status}")
        try:  # a 4xx from the shard is the client's error: pass it on as it is
            err = json.loads(body)
            code, message = str(err["error"]), str(err["message"])
        except (ValueError, KeyError, TypeError):
            code, message = "BAD_REQUEST", body[:200].decode("utf-8", "replace")
        raise ApiError(status, code, message)

    def _down(
        self, stats: ShardStats, layout: ShardLayout, what: str, *, code: str = "SHARD_UNAVAILABLE"
    ) -> ApiError:
        lo, hi = layout.plan.ranges()[stats.shard]
        message = (
            f"shard {stats.shard} of {layout.market} (prefixes {_describe(lo, hi)}, at "
            f"{stats.address}) {what}; prefixes in other ranges are unaffected"
        )
        stats.failures += 1
        stats.last_error, stats.last_error_at = message, time.time()
        return ApiError(503, code, message, headers={"Retry-After": "1"})

    async def probe(self, timeout: float = 1.0) -> list[dict[str, Any]]:
        """Every shard's own ``/healthz`` (concurrently), beside what the router has seen."""

        async def one(stats: ShardStats) -> dict[str, Any]:
            out = stats.to_dict()
            t0 = time.perf_counter()
            try:
                async with self.session().get(
                    f"{stats.address}/healthz", timeout=aiohttp.ClientTimeout(total=timeout)
                ) as r:
                    out["up"] = r.status == 200
                    held = json.loads(await r.read()).get("systems", {}).get("typeahead-shard", {})
                out["pid"] = held.get("pid")
                out["holds"] = held.get("markets", {})
            except (aiohttp.ClientError, TimeoutError, ValueError, AttributeError) as exc:
                out["up"], out["error"] = False, str(exc) or type(exc).__name__
            out["probeMs"] = round((time.perf_counter() - t0) * 1000, 2)
            return out

        return list(await asyncio.gather(*(one(s) for s in self.stats)))

    def describe(self) -> dict[str, Any]:
        """The plans, ranges and head-table sizes per market (for the status endpoint)."""
        return {
            m: {
                "version": layout.source_version,
                "shards": layout.plan.n,
                "ranges": [list(r) for r in layout.plan.ranges()],
                "cost": [round(c, 4) for c in layout.plan.cost],
                "keys": layout.plan.keys,
                "traffic": [round(t, 4) for t in layout.plan.traffic],
                "headPrefixes": len(layout.head),
            }
            for m, layout in self.layouts.items()
        }


class RouterEndpoint:
    """``GET /v1/suggest`` answered by a :class:`ShardRouter` (plain ASGI, like the original)."""

    def __init__(self, router: ShardRouter) -> None:
        self.router = router

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not _method_ok(scope):
            await _refuse(scope, send, _NOT_GET)
            return
        try:
            body, headers = await self.router.answer(scope.get("query_string", b""))
        except ApiError as exc:
            await _refuse(scope, send, exc)
            return
        await _respond(scope, send, body, headers)


def install_router(mounts: Mounts, router: ShardRouter) -> ShardRouter:
    """Mount ``/v1/suggest`` through the router, its status page and health probe."""
    mounts.fast_routes.append(Route("/v1/suggest", RouterEndpoint(router)))
    api = mounts.api
    api.state.shard_router = router

    @api.get(
        "/v1/typeahead/shards",
        tags=["typeahead"],
        summary="The shard plan per market and every shard server's health",
    )
    async def shards() -> dict[str, Any]:
        return {"markets": router.describe(), "servers": await router.probe()}

    mounts.on_shutdown.append(router.aclose)

    def probe() -> dict[str, Any]:
        return {
            "status": "ok",
            "markets": {m: lay.source_version for m, lay in router.layouts.items()},
            "shards": [s.to_dict() for s in router.stats],
        }

    mounts.health["typeahead-router"] = probe
    return router


# --------------------------------------------------------------------------- supervisor


@dataclass
class ShardCluster:
    """N shard servers as child processes, each on a loopback socket this process binds.

    Binding here (port 0 unless ``ports`` are given) means the addresses are known before
    any child starts and no two servers race for a port; each child inherits only its
    own socket. Once a child has it, this process closes its copy, so the port of a
    dead shard refuses connections at once instead of queueing them.
    """

    root: Path
    n: int
    host: str = "127.0.0.1"
    ports: Sequence[int] | None = None
    log_level: str = "warning"
    addresses: list[str] = field(default_factory=list)
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def start(self) -> list[str]:
        """Bind the sockets and start every shard server; returns their base URLs."""
        if self.procs:
            raise RuntimeError("already started")
        if self.ports is not None and len(self.ports) != self.n:
            raise ValueError(f"{self.n} shards need {self.n} ports")
        try:
            for i in range(self.n):
                proc, port = self._spawn(i, self.ports[i] if self.ports else 0)
                self.procs.append(proc)
                self.addresses.append(f"http://{self.host}:{port}")
        except BaseException:
            self.stop()
            raise
        return self.addresses

    def _spawn(self, i: int, port: int) -> tuple[subprocess.Popen[bytes], int]:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((self.host, port))
            sock.listen(1024)
            port = sock.getsockname()[1]
            cmd = [sys.executable, "-m", "lookup.cli", "typeahead", "serve-shard",
                   "--dir", str(self.root), "--shard", str(i), "--fd", str(sock.fileno()),
                   "--parent-pid", str(os.getpid()), "--log-level", self.log_level]  # fmt: skip
            return subprocess.Popen(cmd, pass_fds=[sock.fileno()]), port
        finally:
            sock.close()  # the child holds its own copy now

    def restart_shard(self, i: int, timeout: float = 60.0) -> None:
        """Start shard server ``i`` again on its old port (after it died or was stopped)."""
        if self.alive(i):
            raise RuntimeError(f"shard server {i} is still running")
        port = int(self.addresses[i].rsplit(":", 1)[1])
        self.procs[i], _ = self._spawn(i, port)
        self.wait_ready(timeout, only=[i])

    def wait_ready(self, timeout: float = 60.0, only: Sequence[int] | None = None) -> None:
        """Wait until every shard server answers ``/healthz`` (fails early if one exits)."""
        deadline = time.monotonic() + timeout
        with httpx.Client(trust_env=False, timeout=1.0) as client:
            for i in range(self.n) if only is None else only:
                url = self.addresses[i]
                while True:
                    code = self.procs[i].poll()
                    if code is not None:
                        raise RuntimeError(f"shard server {i} exited with {code} while starting")
                    try:
                        if client.get(f"{url}/healthz").status_code == 200:
                            break
                    except httpx.HTTPError:
                        pass
                    if time.monotonic() > deadline:
                        raise TimeoutError(f"shard server {i} at {url} did not start in time")
                    time.sleep(0.1)

    def alive(self, i: int) -> bool:
        """True while shard server ``i`` runs."""
        return self.procs[i].poll() is None

    def stop_shard(self, i: int, *, kill: bool = False, timeout: float = 10.0) -> None:
        """Stop one shard server (SIGTERM, or SIGKILL with ``kill``) and reap it."""
        proc = self.procs[i]
        if proc.poll() is None:
            if kill:
                proc.kill()
            else:
                proc.terminate()
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    def stop(self) -> None:
        """Stop every shard server."""
        for proc in self.procs:
            if proc.poll() is None:
                proc.terminate()
        for i in range(len(self.procs)):
            self.stop_shard(i)

    def __enter__(self) -> ShardCluster:
        self.start()
        try:
            self.wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def run_shard_server(
    root: str | os.PathLike[str],
    shard: int,
    *,
    fd: int | None = None,
    host: str = "127.0.0.1",
    port: int = 0,
    parent_pid: int | None = None,
    log_level: str = "warning",
) -> None:
    """Serve one shard until stopped: on an inherited socket ``fd``, else on ``host:port``
    (port 0: a free one, printed).

    With ``parent_pid`` the server also stops when that process is gone, so a
    supervisor that dies without cleaning up leaves no shard server behind.
    """
    import uvicorn

    from lookup.server import create_app

    server = ShardServer(root, shard)
    app = create_app(root, subsystems=[lambda m: install_shard(m, server)])
    config = uvicorn.Config(app, log_level=log_level, access_log=False)
    uv = uvicorn.Server(config)
    if parent_pid is not None:

        def watch() -> None:
            while not uv.should_exit:
                if os.getppid() != parent_pid:
                    uv.should_exit = True
                    return
                time.sleep(0.5)

        threading.Thread(target=watch, name="parent-watch", daemon=True).start()
    if fd is not None:
        sock = socket.socket(fileno=fd)
    else:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(1024)
        bound = sock.getsockname()
        print(f"typeahead shard {shard} on http://{bound[0]}:{bound[1]}{SHARD_PATH}", flush=True)
    uv.run(sockets=[sock])


__all__ = [
    "SHARD_PATH",
    "RouterEndpoint",
    "ShardCluster",
    "ShardEndpoint",
    "ShardRouter",
    "ShardServer",
    "ShardSlice",
    "ShardStats",
    "install_router",
    "install_shard",
    "run_shard_server",
]
