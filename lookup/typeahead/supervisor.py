"""The shard supervisor: N shard servers as child processes of this one.

:class:`ShardCluster` (what ``lookup typeahead serve-shards`` runs) binds a loopback
socket per shard, starts each shard server (:mod:`~lookup.typeahead.shard_server`) as
a child process on it, waits until all answer, and stops them all on exit; a test or
a demo can stop, kill and restart one shard to watch the router fail only its range.
Given a snapshot ``store``, every shard server follows it and loads each new version
without a restart.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

import httpx


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
    #: a snapshot store every shard server follows (new versions load without a restart)
    store: str | None = None
    size_weight: float = 0.5
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
            if self.store is not None:
                cmd += ["--store", self.store, "--shards", str(self.n),
                        "--size-weight", str(self.size_weight)]  # fmt: skip
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


__all__ = ["ShardCluster"]
