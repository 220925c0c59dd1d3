"""Search shard servers: one process is one replica of one shard, over HTTP on loopback.

``lookup search serve-shard --shard S --replica R`` opens the current index version
through its :class:`~lookup.search.location.IndexLocation` (reloading each newly
published one, as ``lookup serve`` does), follows the real-time tier, and answers
``POST /v1/search/shard/query`` for shard ``S`` only: the body is a query plan
(:mod:`.wire`), the answer is what the in-process shard returns —
:meth:`~lookup.search.shard.ShardIndex.search` over the shard's segments plus its slice
of the real-time tier (the events whose ``shard_of(urlHash)`` is ``S``) — and the index
version it was computed on, so a coordinator never merges answers of two versions.
``/healthz`` reports ``{shard, replica, version, status}`` under ``systems.search-shard``.

With ``--register`` (or ``--etcd URL``) the process puts itself into the shard membership
(:class:`~lookup.search.shardmember.ShardMember`: a ShardRegistration under an etcd
lease of ``search_member_ttl`` seconds) once it has a version open, rewrites its record
whenever it opens a newer one, and deletes it on a clean stop (SIGTERM/SIGINT), so
coordinators following etcd add and drop it without being told.

The process maps every shard's files of the version (memory-mapped, so the pages of the
other shards are never read) because the real-time tier and the hidden-document set are
kept per version; it only ever runs its own shard's postings.
:class:`ShardFleet` starts N × R of these as child processes (tests, demos, the drills).
"""

from __future__ import annotations

import functools
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

import httpx
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from lookup.errors import Damaged, NotBuilt
from lookup.kit.admin import admin_token_of, is_admin
from lookup.kit.http import error_response
from lookup.search.analysis import ANALYSIS_VERSION
from lookup.search.manifest import outdated
from lookup.search.shard import IndexVersion
from lookup.search.wire import WireError, decode_plan, encode_answer

if TYPE_CHECKING:
    from lookup.kit.mounts import Mounts
    from lookup.search.location import IndexLocation
    from lookup.search.service import SearchService
    from lookup.search.shardmember import ShardMember

#: The shard servers' query endpoint (internal: coordinators call it).
QUERY_PATH = "/v1/search/shard/query"
#: The largest plan body accepted (a plan is a few kilobytes at most).
MAX_PLAN_BYTES = 256 * 1024
#: Where a rollout tells a replica which version to serve (admin token; ``{"version": V}``
#: to serve V, ``{"follow": true}`` to serve the location's current version again).
ACTIVATE_PATH = "/v1/search/shard/activate"
#: Versions a replica holds: the one it serves and the one before it.
HELD_VERSIONS = 2


class VersionNotHeld(LookupError):
    """A request pinned to an index version this replica does not hold (409)."""


class ShardServer:
    """Answers plans for one shard of an index version of a search service.

    It holds the version it serves and the one before it (:data:`HELD_VERSIONS`), so a
    coordinator still on the older one during a switch pins its requests to it
    (``?version=V``) and gets only that version's answers, or ``409 VERSION_NOT_HELD``.
    By default it serves the location's current version; once :meth:`activate` names a
    version (a rolling activation), it serves that one until told otherwise, whatever
    is published meanwhile (:meth:`follow` returns to the current version).
    """

    def __init__(self, service: SearchService, shard: int, replica: int) -> None:
        if shard < 0 or replica < 0:
            raise ValueError("shard and replica are numbers from 0")
        self.service = service
        self.shard = shard
        self.replica = replica
        self.queries = 0
        self.refused = 0
        self.held: OrderedDict[str, IndexVersion] = OrderedDict()  # oldest first
        self.pinned: IndexVersion | None = None
        self._lock = threading.Lock()

    def _hold(self, snap: IndexVersion) -> None:
        with self._lock:
            key = str(snap.version)
            if self.held.get(key) is not snap:
                self.held.pop(key, None)
                self.held[key] = snap
                while len(self.held) > HELD_VERSIONS:
                    self.held.popitem(last=False)

    def held_versions(self) -> list[str]:
        """The versions held now, oldest first."""
        with self._lock:
            return list(self.held)

    def current(self) -> IndexVersion:
        """The version served to unpinned requests (NotBuilt before there is one)."""
        snap = self.pinned if self.pinned is not None else self.service.snapshot()
        self._hold(snap)
        return snap

    def version_for(self, wanted: str | None) -> IndexVersion:
        """The version a request asks for (None: the current one), or VersionNotHeld."""
        snap = self.current()
        if wanted is None or wanted == str(snap.version):
            return snap
        with self._lock:
            found = self.held.get(wanted)
        if found is None:
            self.refused += 1
            raise VersionNotHeld(
                f"shard {self.shard} replica {self.replica} does not hold version {wanted!r} "
                f"(holds {self.held_versions()})"
            )
        return found

    def activate(self, version: int) -> IndexVersion:
        """Serve ``version`` from now on (opened from the location, its files checked:
        a damaged one raises Damaged and the served version stays); the one served
        before stays held for pinned requests."""
        served = self.current()
        snap = served if served.version == version else open_version(self.service.location, version)
        self._hold(snap)
        self.pinned = snap
        return snap

    def follow(self) -> IndexVersion:
        """Serve the location's current version again (and each newly published one)."""
        self.pinned = None
        return self.current()

    def answer(self, body: bytes, version: str | None = None) -> bytes:
        """The encoded shard answer for an encoded plan on the version asked for
        (WireError, NotBuilt, VersionNotHeld, LookupError)."""
        plan = decode_plan(body)
        snap = self.version_for(version)
        if self.shard >= len(snap.shards):
            raise LookupError(
                f"index version {snap.version} has {len(snap.shards)} shards; no shard {self.shard}"
            )
        answer = snap.shards[self.shard].search(plan)
        self.queries += 1
        return encode_answer(answer, str(snap.version))

    def served(self) -> IndexVersion | None:
        """The version unpinned requests get now (None before one is open): no reload, no
        error — what a membership record should announce."""
        return self.pinned if self.pinned is not None else self.service.live_version()

    def status(self) -> dict[str, Any]:
        """``{shard, replica, version, status}`` and counters, for ``/healthz``."""
        snap = self.served()
        out: dict[str, Any] = {
            "status": "ok" if snap is not None else "NOT_BUILT",
            "shard": self.shard,
            "replica": self.replica,
            "version": None if snap is None else str(snap.version),
            "held": self.held_versions(),
            "pinned": self.pinned is not None,
            "pid": os.getpid(),
            "queries": self.queries,
            "refused": self.refused,
        }
        tier = self.service.tier
        if tier is not None:
            rt = tier.status()
            out["realtime"] = {
                "docs": rt["docs"],
                "logSeq": rt["logSeq"],
                "pendingDeletions": rt["pendingDeletions"],
            }
        if snap is not None:
            out["shards"] = len(snap.shards)
            if self.shard < len(snap.shards):
                out["liveDocs"] = snap.shards[self.shard].live_docs
            else:
                out["status"] = "NO_SUCH_SHARD"
        return out


def open_version(location: IndexLocation, version: int) -> IndexVersion:
    """Open one published version of a location (not necessarily the current one):
    KeyError when the location has no such version, Damaged when a file fails its
    checksum, ``INDEX_OUTDATED`` for another text analysis."""
    manifest = location.manifest(version)
    if manifest.analysis != ANALYSIS_VERSION:
        raise outdated(manifest, location.path)
    fetch = getattr(location, "materialize", None)  # a shared store copies the files first
    if callable(fetch):
        fetch(manifest)
    return IndexVersion(location.path, manifest)


def query_route(server: ShardServer) -> Route:
    """``POST /v1/search/shard/query``: a plan in, the shard's answer out."""

    async def endpoint(request: Request) -> Response:
        body = await request.body()
        if len(body) > MAX_PLAN_BYTES:
            return error_response(
                413, "PLAN_TOO_LARGE", f"a plan is at most {MAX_PLAN_BYTES} bytes"
            )
        wanted = request.query_params.get("version")
        try:
            encoded = await run_in_threadpool(server.answer, body, wanted)
        except WireError as exc:
            return error_response(400, "INVALID_PLAN", str(exc))
        except VersionNotHeld as exc:
            return error_response(409, "VERSION_NOT_HELD", str(exc))
        except NotBuilt as exc:
            return error_response(503, "NOT_BUILT", str(exc))
        except LookupError as exc:
            return error_response(404, "NO_SUCH_SHARD", str(exc))
        return Response(
            encoded,
            media_type="application/json",
            headers={"x-lookup-shard": str(server.shard), "x-lookup-replica": str(server.replica)},
        )

    return Route(QUERY_PATH, endpoint, methods=["POST"])


def activate_route(server: ShardServer, token: Callable[[], str]) -> Route:
    """``POST /v1/search/shard/activate`` (admin token): serve one version, or follow."""
    usage = 'expected {"version": N} or {"follow": true}'

    async def endpoint(request: Request) -> Response:
        auth = request.headers.get("authorization")
        if not auth:
            return error_response(401, "UNAUTHORIZED", "activating a version needs the admin token")
        if not is_admin(auth, token()):
            return error_response(403, "FORBIDDEN", "activating a version needs the admin token")
        try:
            body = json.loads(await request.body() or b"null")
        except ValueError:
            body = None
        if not isinstance(body, dict):
            return error_response(400, "INVALID_BODY", usage)
        version = body.get("version")
        call: Callable[[], IndexVersion]
        if body.get("follow") is True and version is None:
            call = server.follow
        elif isinstance(version, int) and not isinstance(version, bool) and version >= 0:
            call = functools.partial(server.activate, version)
        else:
            return error_response(400, "INVALID_BODY", usage)
        try:
            snap = await run_in_threadpool(call)
        except Damaged as exc:
            return error_response(409, "VERSION_DAMAGED", str(exc))
        except NotBuilt as exc:
            return error_response(503, "NOT_BUILT", str(exc))
        except KeyError:
            return error_response(404, "NO_SUCH_VERSION", f"no published version {version}")
        return Response(
            json.dumps({"version": str(snap.version), "held": server.held_versions()}),
            media_type="application/json",
        )

    return Route(ACTIVATE_PATH, endpoint, methods=["POST"])


def install_shard(mounts: Mounts, server: ShardServer) -> ShardServer:
    """Mount a shard server's endpoint, health probe and lifecycle (for ``build_app``)."""
    mounts.fast_routes.append(query_route(server))
    mounts.fast_routes.append(activate_route(server, admin_token_of(mounts)))
    mounts.health["search-shard"] = server.status
    mounts.on_startup.append(server.service.start)
    mounts.on_shutdown.append(server.service.close)
    return server


def run_shard_server(
    index: str | Path,
    shard: int,
    replica: int,
    *,
    fd: int | None = None,
    host: str = "127.0.0.1",
    port: int = 0,
    realtime: bool = True,
    parent_pid: int | None = None,
    address_file: str | os.PathLike[str] | None = None,
    log_level: str = "warning",
    etcd_url: str | None = None,
    member_ttl: float | None = None,
    advertise: str | None = None,
) -> None:
    """Serve one replica of one shard until stopped: on an inherited socket ``fd``, else
    on ``host:port`` (port 0: a free one). The address is printed (and written to
    ``address_file``); with ``parent_pid`` the server stops when that process is gone.
    With ``etcd_url`` it registers in the shard membership (:mod:`.shardmember`) with a
    lease of ``member_ttl`` seconds (default: the ``search_member_ttl`` setting), under
    the address ``advertise`` (default: the bound one; give it when bound to 0.0.0.0)."""
    import uvicorn

    from lookup.kit.asgi import build_app
    from lookup.kit.serving import uvicorn_options
    from lookup.search.service import SearchService

    service = SearchService(index, realtime=realtime)  # a directory, or a location's URL
    server = ShardServer(service, shard, replica)
    if fd is not None:
        sock = socket.socket(fileno=fd)
    else:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(1024)
    bound = sock.getsockname()
    address = f"http://{bound[0]}:{bound[1]}"
    member: ShardMember | None = None
    if etcd_url:
        from lookup import settings
        from lookup.search.shardmember import ShardMember

        ttl = float(settings.get("search_member_ttl")) if member_ttl is None else member_ttl
        member = ShardMember(server, advertise or address, etcd_url, ttl)

    def install(mounts: Mounts) -> None:
        install_shard(mounts, server)
        if member is not None:
            mounts.on_startup.append(member.start)  # after the service opened its version
            mounts.on_shutdown.insert(0, member.stop)  # leave before the service closes
            shard_health = mounts.health["search-shard"]
            mounts.health["search-shard"] = lambda: {
                **shard_health(),
                "membership": member.status(),
            }

    app = build_app(service.index_dir.parent, subsystems=[install])
    config = uvicorn.Config(app, log_level=log_level, access_log=False, **uvicorn_options())
    uv = uvicorn.Server(config)
    if parent_pid is not None:

        def watch() -> None:
            while not uv.should_exit:
                if os.getppid() != parent_pid:
                    uv.should_exit = True
                    return
                time.sleep(0.5)

        threading.Thread(target=watch, name="parent-watch", daemon=True).start()
    if address_file is not None:
        tmp = Path(f"{address_file}.tmp")
        tmp.write_text(address + "\n")
        tmp.replace(address_file)
    print(f"search shard {shard} replica {replica} on {address}{QUERY_PATH}", flush=True)
    uv.run(sockets=[sock])


@dataclass
class ShardFleet:
    """``shards`` × ``replicas`` shard servers as child processes on loopback sockets.

    Each socket is bound here (port 0) and inherited by its child, so the addresses are
    known before any child starts and no two servers race for a port. :meth:`members`
    is the member list a remote coordinator is built from; :meth:`signal` stops,
    continues or kills one replica (the drills).
    """

    index: Path
    shards: int
    replicas: int = 2
    realtime: bool = True
    host: str = "127.0.0.1"
    log_level: str = "warning"
    #: Register every server in the etcd at this URL (None: no membership).
    etcd_url: str | None = None
    #: Their lease TTL in seconds (None: the ``search_member_ttl`` setting).
    member_ttl: float | None = None
    procs: dict[tuple[int, int], subprocess.Popen[bytes]] = field(default_factory=dict)
    addresses: dict[tuple[int, int], str] = field(default_factory=dict)

    def start(self) -> list[dict[str, Any]]:
        """Start every shard server; returns the members (see :meth:`members`)."""
        if self.procs:
            raise RuntimeError("already started")
        try:
            for s in range(self.shards):
                for r in range(self.replicas):
                    self._spawn(s, r)
        except BaseException:
            self.stop()
            raise
        return self.members()

    def _spawn(self, s: int, r: int) -> None:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((self.host, 0))
            sock.listen(1024)
            port = sock.getsockname()[1]
            cmd = [sys.executable, "-m", "lookup.cli", "search", "serve-shard",
                   "--index", str(self.index), "--shard", str(s), "--replica", str(r),
                   "--fd", str(sock.fileno()), "--parent-pid", str(os.getpid()),
                   "--log-level", self.log_level]  # fmt: skip
            if not self.realtime:
                cmd.append("--no-realtime")
            if self.etcd_url:
                cmd += ["--register", "--etcd", self.etcd_url]
            if self.member_ttl is not None:
                cmd += ["--member-ttl", str(self.member_ttl)]
            self.procs[(s, r)] = subprocess.Popen(
                cmd, pass_fds=[sock.fileno()], stdout=subprocess.DEVNULL
            )
            self.addresses[(s, r)] = f"http://{self.host}:{port}"
        finally:
            sock.close()  # the child holds its own copy now

    def add(self, shard: int, replica: int) -> str:
        """Start one more replica (a slot not taken by a live one); its address."""
        proc = self.procs.get((shard, replica))
        if proc is not None and proc.poll() is None:
            raise RuntimeError(f"replica {replica} of shard {shard} is running")
        self._spawn(shard, replica)
        return self.addresses[(shard, replica)]

    def members(self) -> list[dict[str, Any]]:
        """``[{address, shard, replica, version}]`` (version None until asked)."""
        return [
            {"address": a, "shard": s, "replica": r, "version": None}
            for (s, r), a in sorted(self.addresses.items())
        ]

    def wait_ready(self, timeout: float = 120.0) -> list[dict[str, Any]]:
        """Wait until every server has a version open; returns each one's health report."""
        deadline = time.monotonic() + timeout
        reports = []
        with httpx.Client(trust_env=False, timeout=5.0) as client:
            for key, address in sorted(self.addresses.items()):
                while True:
                    code = self.procs[key].poll()
                    if code is not None:
                        raise RuntimeError(f"shard server {key} exited with {code} while starting")
                    try:
                        reply = client.get(f"{address}/healthz")
                        report = reply.json().get("systems", {}).get("search-shard", {})
                        if reply.status_code == 200 and report.get("version") is not None:
                            reports.append(report)
                            break
                    except (httpx.HTTPError, ValueError):
                        pass
                    if time.monotonic() > deadline:
                        raise TimeoutError(f"shard server {key} at {address} did not start")
                    time.sleep(0.1)
        return reports

    def signal(self, shard: int, replica: int, sig: int) -> None:
        """Send ``sig`` (SIGSTOP, SIGCONT, SIGKILL, …) to one replica's process."""
        proc = self.procs[(shard, replica)]
        if proc.poll() is None:
            proc.send_signal(sig)

    def pid(self, shard: int, replica: int) -> int:
        """The process id of one replica."""
        return self.procs[(shard, replica)].pid

    def stop(self) -> None:
        """Stop every shard server (a stopped one is continued first) and reap it."""
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGCONT)
                proc.terminate()
        for proc in self.procs.values():
            try:
                proc.wait(timeout=10.0)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    def __enter__(self) -> ShardFleet:
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


__all__ = [
    "ACTIVATE_PATH",
    "HELD_VERSIONS",
    "MAX_PLAN_BYTES",
    "QUERY_PATH",
    "ShardFleet",
    "ShardServer",
    "VersionNotHeld",
    "activate_route",
    "install_shard",
    "open_version",
    "query_route",
    "run_shard_server",
]
