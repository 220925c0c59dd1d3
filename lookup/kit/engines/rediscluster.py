"""A throw-away Redis Cluster on loopback: masters + replicas, for drills and tests.

Each node is a ``redis-server --cluster-enabled yes`` on a free loopback port (its cluster
bus on port + 10000 is checked free too) in its own directory under one temporary
directory, with persistence off; ``redis-cli --cluster create … --cluster-replicas 1``
assigns the 16,384 hash slots to the masters and a replica to each. Readiness is every
node reporting ``cluster_state:ok`` with all slots assigned. :meth:`RedisCluster.kill`
sends a signal to one node (``SIGKILL`` for the failover drill), :meth:`restart` brings
it back on its port (it rejoins as a replica of whoever took its slots). A node that lost
the race for its port or its bus port (``Address already in use`` in its ``redis.log``)
starts again on fresh ones (:mod:`lookup.kit.engines.launch`).

Redis Cluster is *not* a consistent-hashing ring: a key's slot is ``CRC16(key) mod 16384``
(of the ``{hash tag}`` if there is one), and a slot table says which master owns each slot.
"""

from __future__ import annotations

import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

from lookup import settings
from lookup.errors import Unavailable
from lookup.kit.engines.launch import log_since, log_size, start_failure, start_on_fresh_ports
from lookup.kit.engines.ports import free_port

__all__ = ["SLOTS", "ClusterNode", "RedisCluster", "cluster_available"]

SLOTS = 16_384


def _cli_binary() -> Path:
    return Path(settings.get("redis_bin")).with_name("redis-cli")


def cluster_available() -> bool:
    """True when both redis-server and redis-cli (next to it) are installed."""
    return Path(settings.get("redis_bin")).is_file() and _cli_binary().is_file()


def _cluster_port() -> int:
    """A free port whose cluster-bus port (+10000) is free too."""
    try:
        return free_port(with_bus=True)
    except OSError as exc:  # pragma: no cover
        raise Unavailable("no free port pair for a cluster node") from exc


def _command(port: int, *args: str, timeout: float = 1.0) -> str | None:
    """One command over a raw socket (inline RESP); the bulk reply as text, None if down."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
            s.sendall((" ".join(args) + "\r\n").encode())
            data = b""
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
                if data.startswith((b"+", b"-", b":")) and data.endswith(b"\r\n"):
                    break
                if data.startswith(b"$"):
                    head, _, rest = data.partition(b"\r\n")
                    if len(rest) >= int(head[1:]) + 2:
                        return rest[: int(head[1:])].decode()
            return data.decode()
    except (OSError, ValueError):
        return None


@dataclass
class ClusterNode:
    """One node: its port, directory and process (and where its log's lines of the last
    start begin)."""

    port: int
    directory: Path
    proc: subprocess.Popen[bytes] | None = None
    log_from: int = 0

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None


class RedisCluster:
    """``masters`` masters with ``replicas`` replicas each on 127.0.0.1.

    ``node_timeout_ms`` is ``cluster-node-timeout``: how long a master may be unreachable
    before its replicas start an election — the floor of the failover time.
    ``full_coverage`` is ``cluster-require-full-coverage``: Redis's default (yes) stops the
    *whole* cluster answering while any slot is unserved — between a master being marked
    failed and its replica's promotion; a cache wants the other masters to keep serving
    (no, the default here).
    """

    def __init__(self, masters: int = 3, replicas: int = 1, *, node_timeout_ms: int = 1000,
                 full_coverage: bool = False, binary: str | None = None) -> None:  # fmt: skip
        if masters < 3:
            raise ValueError("a Redis Cluster needs at least 3 masters")
        if replicas < 0:
            raise ValueError("replicas must be non-negative")
        self.masters_wanted = masters
        self.replicas = replicas
        self.node_timeout_ms = node_timeout_ms
        self.full_coverage = full_coverage
        self.binary = binary or settings.get("redis_bin")
        self.nodes: list[ClusterNode] = []
        self._dir: str | None = None

    @property
    def startup_nodes(self) -> list[tuple[str, int]]:
        return [("127.0.0.1", n.port) for n in self.nodes]

    @property
    def url(self) -> str:
        """A ``redis://`` URL of one node (a cluster client discovers the rest)."""
        return f"redis://127.0.0.1:{self.nodes[0].port}/0"

    def node(self, port: int) -> ClusterNode:
        for n in self.nodes:
            if n.port == port:
                return n
        raise KeyError(f"no node on port {port}")

    def _spawn(self, node: ClusterNode) -> None:
        node.directory.mkdir(parents=True, exist_ok=True)
        node.log_from = log_size(node.directory / "redis.log")
        node.proc = subprocess.Popen(
            [self.binary, "--port", str(node.port), "--bind", "127.0.0.1",
             "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
             "--cluster-node-timeout", str(self.node_timeout_ms),
             "--cluster-require-full-coverage", "yes" if self.full_coverage else "no",
             "--save", "", "--appendonly", "no", "--dir", str(node.directory),
             "--logfile", "redis.log"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip

    def _wait_pong(self, node: ClusterNode, deadline: float) -> None:
        while time.monotonic() < deadline:
            if node.proc is not None and (code := node.proc.poll()) is not None:
                tail = log_since(node.directory / "redis.log", node.log_from)
                raise start_failure(f"cluster node {node.port} exited with {code}", tail)
            if (_command(node.port, "PING") or "").startswith("+PONG"):
                return
            time.sleep(0.02)
        raise Unavailable(f"cluster node {node.port} did not answer")

    def _answering(self, i: int, deadline: float) -> None:
        """Wait until node ``i`` answers PING; when it lost the race for its port or its bus
        port (another process bound one between the check and the bind), start it on fresh
        ports."""

        def attempt(n: int) -> None:
            if n:  # the spawned node exited with its address in use: fresh ports
                assert self._dir is not None
                port = _cluster_port()
                self.nodes[i] = ClusterNode(port, Path(self._dir) / str(port))
                self._spawn(self.nodes[i])
            self._wait_pong(self.nodes[i], deadline)

        start_on_fresh_ports(attempt, "a Redis Cluster node")

    def start(self, timeout: float = 60.0) -> RedisCluster:
        """Start every node, create the cluster, wait until it is ``ok`` everywhere."""
        deadline = time.monotonic() + timeout
        self._dir = tempfile.mkdtemp(prefix="lookup-redis-cluster-")
        try:
            count = self.masters_wanted * (1 + self.replicas)
            for _ in range(count):
                port = _cluster_port()
                node = ClusterNode(port, Path(self._dir) / str(port))
                self.nodes.append(node)
                self._spawn(node)
            for i in range(len(self.nodes)):
                self._answering(i, deadline)
            made = subprocess.run(
                [str(_cli_binary()), "--cluster", "create", *(n.address for n in self.nodes),
                 "--cluster-replicas", str(self.replicas), "--cluster-yes"],
                capture_output=True, text=True, timeout=max(5.0, deadline - time.monotonic()),
            )  # fmt: skip
            if made.returncode != 0:
                raise Unavailable(f"redis-cli --cluster create failed: {made.stdout[-400:]}")
            self.wait_ok(max(1.0, deadline - time.monotonic()))
        except BaseException:
            self.close()
            raise
        return self

    def info(self, port: int) -> dict[str, str]:
        """``CLUSTER INFO`` of one node as a dict (empty when it does not answer)."""
        text = _command(port, "CLUSTER", "INFO") or ""
        return dict(line.split(":", 1) for line in text.splitlines() if ":" in line)

    def replication(self, port: int) -> dict[str, str]:
        """``INFO replication`` of one node as a dict (empty when it does not answer)."""
        text = _command(port, "INFO", "replication") or ""
        return dict(line.split(":", 1) for line in text.splitlines() if ":" in line)

    def wait_ok(self, timeout: float = 30.0) -> float:
        """Wait until every live node says ``cluster_state:ok`` with every slot served and
        every live replica is in sync with its master (a replica that never synced will
        not fail over); the seconds it took."""
        start = time.monotonic()
        while time.monotonic() - start < timeout:
            live = [n for n in self.nodes if n.alive()]
            infos = [self.info(n.port) for n in live]
            if infos and all(
                i.get("cluster_state") == "ok" and i.get("cluster_slots_ok") == str(SLOTS)
                for i in infos
            ):
                repl = [self.replication(n.port) for n in live]
                if all(
                    r.get("role") == "master" or r.get("master_link_status") == "up" for r in repl
                ):
                    return time.monotonic() - start
            time.sleep(0.05)
        raise Unavailable(f"the cluster was not ok within {timeout} s")

    def topology(self) -> list[dict[str, Any]]:
        """``CLUSTER NODES`` as seen by a live node: port, role, master's port, slots, flags."""
        for n in self.nodes:
            if not n.alive():
                continue
            text = _command(n.port, "CLUSTER", "NODES")
            if text:
                return _parse_nodes(text)
        return []

    def masters(self) -> list[int]:
        """Ports of the nodes that are masters serving slots now (failed ones excluded)."""
        return sorted(
            r["port"]
            for r in self.topology()
            if r["role"] == "master" and r["slots"] and "fail" not in r["flags"]
        )

    def master_of_slot(self, slot: int) -> int | None:
        """The port of the live master serving ``slot`` now, if any."""
        for r in self.topology():
            if (
                r["role"] == "master"
                and "fail" not in r["flags"]
                and any(lo <= slot <= hi for lo, hi in r["slots"])
            ):
                return int(r["port"])
        return None

    def kill(self, port: int, sig: int = signal.SIGKILL) -> None:
        """Send ``sig`` to the node on ``port`` (and reap it when it dies)."""
        node = self.node(port)
        if node.proc is None:
            return
        node.proc.send_signal(sig)
        if sig in (signal.SIGKILL, signal.SIGTERM):
            node.proc.wait(timeout=10)
            node.proc = None

    def restart(self, port: int, timeout: float = 20.0) -> None:
        """Start the node on ``port`` again with its nodes.conf: it rejoins the cluster."""
        node = self.node(port)
        if node.alive():
            return
        self._spawn(node)
        self._wait_pong(node, time.monotonic() + timeout)

    def close(self) -> None:
        """Stop every node and remove the directory."""
        for node in self.nodes:
            if node.proc is not None and node.proc.poll() is None:
                node.proc.kill()
                node.proc.wait(timeout=10)
            node.proc = None
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None

    def __enter__(self) -> RedisCluster:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:  # fmt: skip
        self.close()


def _parse_nodes(text: str) -> list[dict[str, Any]]:
    rows = []
    for line in text.strip().splitlines():
        parts = line.split()
        if len(parts) < 8:
            continue
        flags = parts[2].split(",")
        slots = []
        for s in parts[8:]:
            if s.startswith("["):
                continue  # a slot being migrated
            lo, _, hi = s.partition("-")
            slots.append((int(lo), int(hi or lo)))
        rows.append({"id": parts[0], "port": int(parts[1].split("@")[0].rsplit(":", 1)[1]),
                     "role": "master" if "master" in flags else "replica",
                     "master_id": None if parts[3] == "-" else parts[3],
                     "flags": flags, "slots": slots})  # fmt: skip
    return rows
