"""A fleet of KV storage-node processes on loopback, and a client for it.

:class:`KvCluster` starts ``size`` node processes (``python -m lookup.blocks.kv.node``) in
a temporary directory on free loopback ports, and breaks them for real: :meth:`kill`
(SIGKILL), :meth:`freeze`/:meth:`thaw` (SIGSTOP/SIGCONT), :meth:`partition` (both nodes
drop each other's traffic in their transports), :meth:`skew` (offset a node's wall clock).
It only ever signals the processes it started. :class:`KvClient` sends each operation to
a coordinator — the key's first home replica that answers, or one named — and returns
what it said, never raising for an unavailable quorum.

Every node's port is bound *here*, before the cluster file names it, and each node
process inherits its listening socket (``--fd``): no other process can take a port
between the choice and the bind, so the cluster never has to start again elsewhere
(every node reads every member's URL when it starts; a node that moved would be
unreachable to the rest). Only a race this process loses itself — a port that passed the
allocator's check and is gone by the bind a moment later — draws again, by the
launchers' rule (:func:`~lookup.kit.engines.launch.start_on_fresh_ports`). Once a node
holds its socket this process closes its copy, so a killed node's port refuses
connections at once; :meth:`KvCluster.restart` binds the same port again (a taken one is
:class:`~lookup.kit.engines.launch.PortTaken`, never a move: the ring names the URL).
"""

from __future__ import annotations

import errno
import json
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from lookup import settings
from lookup.kit.engines.launch import PortTaken, start_on_fresh_ports
from lookup.kit.engines.ports import free_port
from lookup.kit.ring import HashRing
from lookup.kit.secrets.file import read_or_create_secret

__all__ = ["KvCluster", "KvClient", "OpResult"]

#: Where the nodes listen.
HOST = "127.0.0.1"
#: The listen backlog of a node's socket (uvicorn's default, which bound it before).
BACKLOG = 2048


def _listen(port: int) -> socket.socket:
    """A listening socket on ``HOST:port`` for a node to inherit; :class:`PortTaken` when
    another process holds the port."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        # as uvicorn's own bind: a restarted node binds over its old connections' TIME_WAIT
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((HOST, port))
        sock.listen(BACKLOG)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise PortTaken(f"port {port} on {HOST} is taken: {exc}") from exc
        raise
    return sock


def _listen_on_a_fresh_port(name: str) -> socket.socket:
    """:func:`_listen` on a port from the allocator, drawn again if it is gone by the bind."""
    return start_on_fresh_ports(lambda _n: _listen(free_port(HOST)), f"KV node {name}")


class KvCluster:
    """``size`` storage nodes named ``n1..n<size>``, replicating each key ``n`` times."""

    def __init__(
        self,
        size: int = 4,
        n: int = 3,
        *,
        vnodes: int = 64,
        anti_entropy_s: float | None = None,
        heartbeat_s: float | None = None,
        down_after_s: float | None = None,
        timeout_s: float | None = None,
    ) -> None:
        if size < 1 or not 1 <= n <= size:
            raise ValueError(f"need 1 <= n <= size, got n={n}, size={size}")
        self.size, self.n, self.vnodes = size, n, vnodes
        self.work = Path(tempfile.mkdtemp(prefix="lookup-kv-"))
        self.names = [f"n{i + 1}" for i in range(size)]
        #: Each node's listening socket until its process holds it (see the module doc).
        self._sockets: dict[str, socket.socket] = {}
        try:
            for name in self.names:
                self._sockets[name] = _listen_on_a_fresh_port(name)
        except BaseException:
            self._close_sockets()
            raise
        self.urls = {
            name: f"http://{HOST}:{sock.getsockname()[1]}" for name, sock in self._sockets.items()
        }
        self.token = read_or_create_secret(self.work / "admin.token")
        self.config: dict[str, Any] = {
            "nodes": self.urls,
            "n": n,
            "vnodes": vnodes,
            "data_dir": str(self.work),
            "token_file": str(self.work / "admin.token"),
        }
        for key, value in (
            ("anti_entropy_s", anti_entropy_s),
            ("heartbeat_s", heartbeat_s),
            ("down_after_s", down_after_s),
            ("timeout_s", timeout_s),
        ):
            if value is not None:
                self.config[key] = value
        (self.work / "cluster.json").write_text(json.dumps(self.config, indent=1))
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.frozen: set[str] = set()
        self.blocked: dict[str, set[str]] = {name: set() for name in self.names}
        self.events: list[tuple[float, str]] = []  # (monotonic time, what was done)
        self._http = httpx.Client(timeout=5.0)
        self.client_ring = HashRing(self.names, vnodes=vnodes)

    # -- lifecycle ---------------------------------------------------------------------
    def start(self, timeout_s: float = 60.0) -> KvCluster:
        """Start every node; return once each answers ``/ping``."""
        for name in self.names:
            self._spawn(name)
        for name in self.names:
            self._wait_up(name, timeout_s)
        return self

    def __enter__(self) -> KvCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _spawn(self, name: str) -> None:
        """Start node ``name`` on its socket (bound in ``__init__``, or again on its port for
        a restart); this process's copy is closed once the child holds it."""
        sock = self._sockets.pop(name, None) or _listen(int(self.urls[name].rsplit(":", 1)[1]))
        log = open(self.work / f"{name}.log", "ab")  # noqa: SIM115 - the child owns it
        try:
            self.procs[name] = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "lookup.blocks.kv.node",
                    "--name",
                    name,
                    "--cluster",
                    str(self.work / "cluster.json"),
                    "--fd",
                    str(sock.fileno()),
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
                env=settings.child_environ(),
                pass_fds=(sock.fileno(),),
            )
        finally:
            log.close()
            sock.close()

    def _close_sockets(self) -> None:
        """Close the sockets of nodes that were never started."""
        for sock in self._sockets.values():
            sock.close()
        self._sockets.clear()

    def _wait_up(self, name: str, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while True:
            proc = self.procs[name]
            if proc.poll() is not None:
                log = (self.work / f"{name}.log").read_text(errors="replace")[-2000:]
                raise RuntimeError(f"KV node {name} exited ({proc.returncode}): {log}")
            try:
                if self._http.get(self.urls[name] + "/ping", timeout=1.0).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"KV node {name} did not answer within {timeout_s} s")
            time.sleep(0.05)

    def stop(self) -> None:
        """Stop every node this cluster started and remove its directory."""
        for name, proc in self.procs.items():
            if proc.poll() is None:
                if name in self.frozen:
                    proc.send_signal(signal.SIGCONT)
                proc.terminate()
        for proc in self.procs.values():
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
        self.procs.clear()
        self._close_sockets()
        self._http.close()
        shutil.rmtree(self.work, ignore_errors=True)

    # -- failures ----------------------------------------------------------------------
    def _mark(self, what: str) -> None:
        self.events.append((time.monotonic(), what))

    def running(self, name: str) -> bool:
        proc = self.procs.get(name)
        return proc is not None and proc.poll() is None

    def kill(self, name: str) -> None:
        """SIGKILL node ``name`` (no goodbye; its SQLite file stays for a restart)."""
        proc = self.procs[name]
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=10)
        self.frozen.discard(name)
        self._mark(f"kill -9 {name}")

    def restart(self, name: str, timeout_s: float = 60.0) -> None:
        """Start a killed node again on its port and data file; wait until it answers
        (:class:`PortTaken` if another process took the port meanwhile)."""
        if self.running(name):
            raise RuntimeError(f"{name} is still running")
        self._spawn(name)
        self._wait_up(name, timeout_s)
        if self.blocked[name]:
            self._post_admin(name, "/admin/partition", {"block": sorted(self.blocked[name])})
        self._mark(f"restart {name}")

    def lose_disk(self, name: str) -> None:
        """SIGKILL ``name`` and delete its data file: it comes back empty on :meth:`restart`."""
        self.kill(name)
        for path in self.work.glob(f"{name}.sqlite3*"):
            path.unlink()
        self._mark(f"lose disk {name}")

    def freeze(self, name: str) -> None:
        """SIGSTOP node ``name``: it holds its sockets but answers nothing."""
        self.procs[name].send_signal(signal.SIGSTOP)
        self.frozen.add(name)
        self._mark(f"SIGSTOP {name}")

    def thaw(self, name: str) -> None:
        """SIGCONT a frozen node."""
        self.procs[name].send_signal(signal.SIGCONT)
        self.frozen.discard(name)
        self._mark(f"SIGCONT {name}")

    def _post_admin(self, name: str, path: str, body: dict[str, Any]) -> dict[str, Any]:
        resp = self._http.post(
            self.urls[name] + path, json=body, headers={"Authorization": f"Bearer {self.token}"}
        )
        resp.raise_for_status()
        return resp.json()

    def partition(self, a: str, b: str) -> None:
        """Drop all traffic between ``a`` and ``b`` (in both nodes' transports)."""
        self.blocked[a].add(b)
        self.blocked[b].add(a)
        for name in (a, b):
            if self.running(name):
                self._post_admin(name, "/admin/partition", {"block": sorted(self.blocked[name])})
        self._mark(f"partition {a} | {b}")

    def isolate(self, name: str) -> None:
        """Partition ``name`` from every other node (clients can still reach it)."""
        for other in self.names:
            if other != name:
                self.partition(name, other)

    def heal(self) -> None:
        """Remove every partition."""
        for name in self.names:
            self.blocked[name].clear()
            if self.running(name):
                self._post_admin(name, "/admin/partition", {"block": []})
        self._mark("heal")

    def skew(self, name: str, seconds: float) -> None:
        """Offset node ``name``'s wall clock by ``seconds`` (the LWW timestamps it stamps)."""
        self._post_admin(name, "/admin/skew", {"skew_s": seconds})
        self._mark(f"skew {name} {seconds:+g} s")

    def stats(self) -> dict[str, dict[str, Any]]:
        """Every reachable node's ``/stats`` (a down or frozen node: its state only)."""
        out: dict[str, dict[str, Any]] = {}
        for name in self.names:
            if not self.running(name):
                out[name] = {"name": name, "process": "killed"}
            elif name in self.frozen:
                out[name] = {"name": name, "process": "stopped (SIGSTOP)"}
            else:
                try:
                    out[name] = {
                        "process": "running",
                        **self._http.get(self.urls[name] + "/stats", timeout=2).json(),
                    }
                except httpx.HTTPError as exc:
                    out[name] = {"name": name, "process": f"unreachable ({exc})"}
        return out

    def replica_versions(self, name: str, key: str) -> list[dict[str, Any]]:
        """What node ``name`` holds for ``key`` (straight from its replica endpoint)."""
        resp = self._http.get(self.urls[name] + "/replica/get", params={"key": key}, timeout=2)
        resp.raise_for_status()
        return list(resp.json()["versions"])

    def dump(self, name: str) -> dict[str, dict[str, Any]]:
        """Every key node ``name`` holds: ``{key: {"digest", "values"}}``."""
        resp = self._http.get(self.urls[name] + "/replica/dump", timeout=10)
        resp.raise_for_status()
        return dict(resp.json())

    def home(self, key: str) -> list[str]:
        """The key's home replicas (the first N of its preference list)."""
        return self.client_ring.preference_list(key, self.n)

    def client(self, **defaults: Any) -> KvClient:
        return KvClient(self.urls, n=self.n, vnodes=self.vnodes, **defaults)


@dataclass
class OpResult:
    """What one client operation got back (``ok`` False: unavailable or refused)."""

    ok: bool
    status: int
    siblings: list[str] = field(default_factory=list)
    context: dict[str, int] = field(default_factory=dict)
    coordinator: str = ""
    error: str = ""
    body: dict[str, Any] = field(default_factory=dict)


class KvClient:
    """Sends each operation to a coordinator; retries the next home replica if one is gone."""

    def __init__(
        self,
        urls: dict[str, str],
        *,
        n: int = 3,
        vnodes: int = 64,
        timeout_s: float = 5.0,
        actor: str = "",
    ) -> None:
        self.urls = dict(urls)
        self.n = n
        self.ring = HashRing(self.urls, vnodes=vnodes)
        self.actor = actor or f"c-{uuid.uuid4().hex[:6]}"
        self.counter = 0  # this client's writes so far: each gets a fresh clock entry
        self._http = httpx.Client(timeout=timeout_s)

    def close(self) -> None:
        self._http.close()

    def _coordinators(self, key: str, via: str | None) -> list[str]:
        if via:
            return [via]
        return self.ring.preference_list(key, len(self.urls))

    def _send(self, method: str, key: str, via: str | None, **kwargs: Any) -> OpResult:
        last = OpResult(False, 0, error="no coordinator answered")
        for name in self._coordinators(key, via):
            try:
                resp = self._http.request(method, f"{self.urls[name]}/kv/{key}", **kwargs)
            except httpx.HTTPError as exc:
                last = OpResult(False, 0, coordinator=name, error=type(exc).__name__)
                continue
            body = resp.json()
            return OpResult(
                resp.status_code == 200,
                resp.status_code,
                list(body.get("siblings", [])),
                dict(body.get("context", {})),
                name,
                str(body.get("error", "")),
                body,
            )
        return last

    def get(
        self,
        key: str,
        *,
        r: int = 2,
        n: int | None = None,
        mode: str = "vclock",
        via: str | None = None,
    ) -> OpResult:
        """Read ``key`` with ``r`` replies out of ``n`` (siblings and the context to write with)."""
        params = {"r": str(r), "n": str(n or self.n), "mode": mode}
        return self._send("GET", key, via, params=params)

    def put(
        self,
        key: str,
        value: str,
        *,
        context: dict[str, int] | None = None,
        w: int = 2,
        n: int | None = None,
        mode: str = "vclock",
        via: str | None = None,
        actor: str | None = None,
    ) -> OpResult:
        """Write ``value``, descending from ``context`` (what a read returned)."""
        self.counter += 1
        body = {
            "value": value,
            "context": context or {},
            "w": w,
            "n": n or self.n,
            "mode": mode,
            "actor": actor or self.actor,
            "counter": self.counter,
        }
        return self._send("PUT", key, via, json=body)

    def delete(
        self,
        key: str,
        *,
        context: dict[str, int] | None = None,
        w: int = 2,
        n: int | None = None,
        via: str | None = None,
    ) -> OpResult:
        """Delete ``key`` (a tombstone descending from ``context``)."""
        self.counter += 1
        body = {
            "context": context or {},
            "w": w,
            "n": n or self.n,
            "actor": self.actor,
            "counter": self.counter,
        }
        return self._send("DELETE", key, via, json=body)
