"""The crawler page's fleet as a lab: PostgreSQL, etcd and three ``lookup crawl-worker``.

:class:`CrawlFleetLab` starts a throw-away PostgreSQL (the shared crawl store), a
throw-away etcd (the partition leases) and the workers (:class:`CrawlFleet`) over the
page's sandbox web, and keeps what the page shows across its runs: which workers it
killed and when, the partition balance over time, the sandbox's request log read so far.
"""

from __future__ import annotations

import signal
import tempfile
import threading
import time
from pathlib import Path

from lookup.crawler.fleet import CrawlFleet
from lookup.crawler.fleetview import FleetView, fleet_view
from lookup.crawler.sandbox import LoggedRequest
from lookup.crawler.session import SandboxProbe, read_request_log
from lookup.kit.engines.etcd import etcd_client
from lookup.kit.engines.etcdserver import EtcdServer
from lookup.kit.engines.pgserver import PostgresServer
from lookup.labs.core import Lab, pid_alive

__all__ = [
    "DELAY_FACTOR",
    "FLEET",
    "LEASE_TTL",
    "MIN_DELAY",
    "PARTITIONS",
    "WORKERS",
    "CrawlFleetLab",
]

WORKERS = 3
PARTITIONS = 64
LEASE_TTL = 3
MIN_DELAY = 0.25
FLEET = "dashboard"
DELAY_FACTOR = 2.0


def worker_argv(
    probe: SandboxProbe, out: Path, store: str, coordinator: str, seconds: float
) -> list[str]:
    """``lookup crawl-worker`` options (minus ``--worker-id``) for the page's fleet."""
    return [
        *probe.seeds, "--out", str(out), "--quiet", "--hosts", probe.hosts_url,
        "--allow-range", "127.0.0.0/8", "--min-delay", f"{MIN_DELAY:g}",
        "--delay-factor", f"{DELAY_FACTOR:g}",
        "--timeout", "2", "--store", store, "--coordinator", coordinator, "--fleet-name", FLEET,
        "--lease-ttl", str(LEASE_TTL), "--partitions", str(PARTITIONS),
        "--max-seconds", f"{seconds:g}",
    ]  # fmt: skip


class CrawlFleetLab(Lab):
    """A fleet of ``WORKERS`` crawl workers with its own PostgreSQL and etcd."""

    kind = "crawl-fleet"

    def __init__(self, key: str = "", *, probe: SandboxProbe, seconds: float = 90.0) -> None:
        super().__init__(key)
        self.probe = probe
        self.seconds = seconds
        self.sandbox_url = probe.url
        self.out = Path(tempfile.mkdtemp(prefix="lookup-fleet-"))
        self.pg: PostgresServer | None = None
        self.etcd: EtcdServer | None = None
        self.fleet: CrawlFleet | None = None
        self.store_url = ""
        self.log_since = 0
        self.killed: dict[str, tuple[float, int]] = {}  # when, partitions held
        self.last_view: FleetView | None = None
        self.history: list[tuple[float, dict[str, int]]] = []
        self.log: list[LoggedRequest] = []
        self.log_lock = threading.Lock()

    def start(self) -> None:
        self.pg = PostgresServer().start()
        self.etcd = EtcdServer().start()
        self.store_url = self.pg.url
        self.log_since = len(read_request_log(self.probe.url))
        coordinator = self.etcd.url.replace("http://", "etcd://")
        argv = worker_argv(self.probe, self.out / "fleet", self.store_url, coordinator,
                           self.seconds)  # fmt: skip
        self.fleet = CrawlFleet(argv, self.out / "fleet")
        self.fleet.start_all(WORKERS)
        self.started_at = time.time()

    def close(self) -> None:
        # pg_ctl daemonises PostgreSQL: only this stop (or the supervisor's, at exit) ends it
        if self.fleet is not None:
            self.fleet.stop()
        if self.etcd is not None:
            self.etcd.stop()
        if self.pg is not None:
            self.pg.close()

    def postmaster_pid(self) -> int | None:
        """PostgreSQL's postmaster (``pg_ctl`` daemonises it: it is no child of ours)."""
        if self.pg is None:
            return None
        try:
            pid = int((self.pg.data / "postmaster.pid").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return None
        return pid if pid_alive(pid) else None  # a crashed server leaves its file

    def pids(self) -> list[int]:
        found: list[int] = []
        pg = self.postmaster_pid()
        if pg is not None:
            found.append(pg)
        if self.etcd is not None and self.etcd.proc is not None and self.etcd.proc.poll() is None:
            found.append(self.etcd.proc.pid)
        if self.fleet is not None:
            found += [p.pid for p in self.fleet.procs.values() if p.poll() is None]
        return found

    def alive(self) -> bool:
        # the workers end by themselves (--max-seconds) or are killed from the page; the
        # lab is alive while its store and its coordinator are
        etcd = self.etcd.proc if self.etcd is not None else None
        return etcd is not None and etcd.poll() is None and self.postmaster_pid() is not None

    def addresses(self) -> dict[str, str]:
        found = {"sandbox": self.sandbox_url}
        if self.pg is not None:
            found["store"] = self.pg.url
        if self.etcd is not None:
            found["etcd"] = self.etcd.url
        return found

    def paths(self) -> list[str]:
        return [str(self.out)] + ([str(self.pg.root)] if self.pg is not None else [])

    # -- what the page asks ------------------------------------------------------------
    def workers(self) -> dict[str, int | None]:
        """Each worker's exit code (``None`` while it runs), by name."""
        return {} if self.fleet is None else {n: p.poll() for n, p in self.fleet.procs.items()}

    def running(self) -> list[str]:
        return [] if self.fleet is None else self.fleet.running()

    def view(self) -> FleetView:
        """The partitions and the workers' leases, read from etcd now (raises when etcd
        does not answer); remembered with the balance over time."""
        assert self.etcd is not None
        view = fleet_view(etcd_client(self.etcd.url), FLEET)
        self.history.append((time.time() - self.started_at, view.balance()))
        self.last_view = view
        return view

    def kill(self, name: str) -> None:
        """SIGKILL worker ``name`` (only this lab's own workers), noting what it held."""
        if self.fleet is None or name not in self.fleet.running():
            return
        view = self.last_view
        held = len(view.workers[name].partitions) if view and name in view.workers else 0
        self.fleet.signal(name, signal.SIGKILL)
        self.killed[name] = (time.time(), held)

    def requests(self) -> list[LoggedRequest]:
        """The sandbox's log of this run's requests to the sandbox hosts, read incrementally."""
        with self.log_lock:
            fresh = read_request_log(self.sandbox_url, since=self.log_since)
            if fresh:
                self.log_since = max(e.seq for e in fresh) + 1
                self.log += [e for e in fresh if e.host.endswith(".sandbox.test")]
            return list(self.log)
