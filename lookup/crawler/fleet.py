"""A crawler fleet on one machine: N ``lookup crawl-worker`` processes over one store.

``lookup crawl --store postgresql://… --coordinator etcd://… --workers N`` runs
:class:`CrawlFleet`: it starts N worker processes (each its own ``lookup crawl-worker``,
as one would start them on N machines), each logging to ``OUT/<worker>.log``, and waits
for them. The drills use the same class to kill one worker (``SIGKILL``), freeze it
(``SIGSTOP`` / ``SIGCONT``), or add one, while the others carry on.

The workers put their pages' events into the store's outbox (``crawl_events``, written in
each page's fenced commit); :func:`export_events` appends them, once each and in commit
order, to the fleet's one ``OUT/events.jsonl`` — the parent does it every second while it
waits and once more at the end — so search reads a fleet crawl like an embedded one. The
WARC files stay per worker (``OUT/<worker>/warc``; the storage keys say which).

Nothing here decides who crawls what: the workers agree through their etcd leases and
the store's epochs (:mod:`lookup.crawler.worker`).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from lookup.errors import Unavailable

if TYPE_CHECKING:
    from lookup.crawler.store_pg import PgCrawlStore

__all__ = ["CrawlFleet", "export_events", "worker_name"]

_EXPORT_KEY = "events_export"


def export_events(store: PgCrawlStore, out: Path | str) -> int:
    """Append the outbox rows not yet exported to ``OUT/events.jsonl``; how many.

    Exactly once per row, even across a crash of the exporter: the store keeps the cursor
    and the file's size after the last export; bytes past it (appended but not
    acknowledged) are cut before the batch is written again. One exporter at a time.
    """
    path = Path(out) / "events.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    state = store.get_meta(_EXPORT_KEY) or {"cursor": 0, "size": 0}
    lines, nxt = store.outbox_since(int(state["cursor"]))
    with open(path, "a+b") as f:
        f.truncate(int(state["size"]))  # lines past it were never acknowledged
        f.write(b"".join(line.encode("utf-8") + b"\n" for line in lines))
        f.flush()
        os.fsync(f.fileno())
        size = f.tell()
    store.set_meta(_EXPORT_KEY, {"cursor": nxt, "size": size})
    return len(lines)


def worker_name(i: int) -> str:
    """The name of the ``i``-th worker of a fleet started here (w1, w2, ...)."""
    return f"w{i}"


class CrawlFleet:
    """Worker processes started from one argv (``lookup crawl-worker …`` minus the id)."""

    def __init__(self, worker_argv: list[str], out: Path, store_url: str | None = None) -> None:
        self.worker_argv = list(worker_argv)
        self.out = Path(out)
        self.store_url = store_url
        self._store: PgCrawlStore | None = None
        self.procs: dict[str, subprocess.Popen[bytes]] = {}

    def start(self, name: str) -> subprocess.Popen[bytes]:
        """Start worker ``name`` (its output goes to ``OUT/<name>.log``)."""
        if name in self.procs and self.procs[name].poll() is None:
            raise ValueError(f"worker {name} is already running")
        self.out.mkdir(parents=True, exist_ok=True)
        argv = [sys.executable, "-m", "lookup.cli", "crawl-worker", *self.worker_argv]
        argv += ["--worker-id", name]
        with (self.out / f"{name}.log").open("ab") as log:
            proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL)  # fmt: skip
        self.procs[name] = proc
        return proc

    def start_all(self, n: int) -> list[str]:
        names = [worker_name(i) for i in range(1, n + 1)]
        for name in names:
            self.start(name)
        return names

    def signal(self, name: str, sig: int) -> None:
        """Send ``sig`` to worker ``name`` (SIGKILL, SIGSTOP, SIGCONT, SIGTERM)."""
        proc = self.procs[name]
        if proc.poll() is None:
            proc.send_signal(sig)

    def running(self) -> list[str]:
        return [n for n, p in self.procs.items() if p.poll() is None]

    def log_text(self, name: str) -> str:
        try:
            return (self.out / f"{name}.log").read_text("utf-8", errors="replace")
        except OSError:
            return ""

    def wait(self, timeout: float | None = None) -> dict[str, int | None]:
        """Wait for every worker to exit (or ``timeout``); their exit codes."""
        deadline = None if timeout is None else time.monotonic() + timeout
        for proc in self.procs.values():
            while proc.poll() is None:
                left = 1.0 if deadline is None else min(1.0, deadline - time.monotonic())
                if left <= 0:
                    break
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout=left)
                with contextlib.suppress(Unavailable):  # the store is away: next second
                    self.export()
        self.export()
        return {n: p.poll() for n, p in self.procs.items()}

    def export(self) -> int:
        """Export the outbox's new events to ``OUT/events.jsonl`` (with a store URL)."""
        if not self.store_url:
            return 0
        if self._store is None:
            from lookup.crawler.store_pg import PgCrawlStore

            self._store = PgCrawlStore(self.store_url)
        return export_events(self._store, self.out)

    def close(self) -> None:
        """Close the exporter's store connection (the next export opens it again)."""
        if self._store is not None:
            self._store.close()
            self._store = None

    def stop(self, grace: float = 15.0) -> None:
        """SIGTERM every worker (a graceful stop: fetches in flight finish), then SIGKILL."""
        for proc in self.procs.values():
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    proc.send_signal(signal.SIGCONT)
                    proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + grace
        for proc in self.procs.values():
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
        self.close()
