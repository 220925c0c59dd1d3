"""A small fleet of lease-holding generator processes to watch (the dashboard, the notebook).

:class:`GeneratorFleet` starts its own throw-away etcd (or uses ``LOOKUP_ETCD_URL``) and
``n`` generator processes that each lease a worker id and issue ids at a gentle rate;
:meth:`GeneratorFleet.kill` SIGKILLs one (no goodbye: its lease is left to expire), and
:meth:`GeneratorFleet.holders` shows every worker key with its lease's remaining TTL, so
the dead process's key is seen counting down and disappearing. It only ever stops the
processes and the server it started itself.
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from lookup import settings
from lookup.blocks.ids.drill import spawn_generator
from lookup.blocks.ids.etcd import EtcdServer, etcd_client
from lookup.blocks.ids.workers import worker_holders

__all__ = ["GeneratorFleet"]


class GeneratorFleet:
    """Generator processes holding worker-id leases; started and stopped as one."""

    def __init__(self, ttl_s: float = 3.0, rate: float = 20.0, etcd_url: str = "") -> None:
        self.ttl_s = ttl_s
        self.rate = rate
        self.etcd_url = etcd_url or settings.get("etcd_url")
        self.server: EtcdServer | None = None
        self.work = Path(tempfile.mkdtemp(prefix="lookup-fleet-"))
        self.procs: dict[int, subprocess.Popen[bytes]] = {}  # by generator number
        self.killed: dict[int, float] = {}  # generator number → wall time of the kill

    def start(self, n: int = 3) -> GeneratorFleet:
        """Start etcd (unless given one) and ``n`` generators; wait until each holds a lease."""
        if not self.etcd_url:
            self.server = EtcdServer().start()
            self.etcd_url = self.server.url
        for _ in range(n):
            self.add()
        return self

    def add(self) -> int:
        """One more generator; returns its number once it holds a worker id."""
        number = max(self.procs, default=-1) + 1
        out = self.work / f"gen{number}.ids"
        proc = spawn_generator(out, etcd=self.etcd_url, count=0, ttl=self.ttl_s, rate=self.rate)
        self.procs[number] = proc
        deadline = time.monotonic() + 60
        while not Path(f"{out}.ready").exists():
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"generator {number} did not take a lease")
            time.sleep(0.02)
        return number

    def info(self, number: int) -> dict[str, Any]:
        """What generator ``number`` said when it got its lease (worker id, lease id)."""
        return json.loads(Path(f"{self.work / f'gen{number}.ids'}.ready").read_text())

    def kill(self, number: int) -> None:
        """SIGKILL generator ``number``: it cannot revoke its lease, so the lease expires."""
        proc = self.procs[number]
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=10)
            self.killed[number] = time.time()

    def holders(self) -> list[dict[str, Any]]:
        """Every generator and worker key: worker id, pid, alive, lease TTL left."""
        client = etcd_client(self.etcd_url, timeout=2.0)
        keys = worker_holders(client)
        rows = []
        for number, proc in self.procs.items():
            info = self.info(number)
            worker = int(info["worker"])
            held = keys.get(worker)
            ttl_left = -1
            if held is not None and held["lease"] == int(info["lease"]):
                ttl_left = int(
                    client.post(
                        client.get_url("/kv/lease/timetolive"), json={"ID": held["lease"]}
                    ).get("TTL", -1)
                )
            rows.append(
                {
                    "generator": number,
                    "pid": proc.pid,
                    "worker id": worker,
                    "process": "running" if proc.poll() is None else "killed",
                    "lease": "held" if ttl_left >= 0 else "expired",
                    "TTL left s": max(ttl_left, 0),
                    "since kill s": round(time.time() - self.killed[number], 1)
                    if number in self.killed
                    else None,
                }
            )
        return rows

    def stop(self) -> None:
        """Stop every generator (SIGTERM, so each revokes its lease) and the server."""
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.terminate()
        for proc in self.procs.values():
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
        self.procs.clear()
        if self.server is not None:
            self.server.stop()
            self.server = None
        shutil.rmtree(self.work, ignore_errors=True)
