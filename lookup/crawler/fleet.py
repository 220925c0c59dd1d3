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
the store's epochs (:mod:`lookup.crawler.worker`). When the workers have exited,
:func:`judge_fleet` says how it went: a worker lost (killed, crashed) whose partitions the
others took over is reported, and the crawl counts as completed when the store has nothing
queued or in flight — the command's exit status is 0 then, non-zero only when it is not.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lookup.errors import Unavailable

if TYPE_CHECKING:
    from lookup.crawler.state.postgres import PgCrawlStore

__all__ = ["CrawlFleet", "FleetOutcome", "export_events", "judge_fleet", "worker_name"]

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


def _exit_text(code: int | None) -> str:
    if code is None:
        return "still running"
    if code < 0:
        with contextlib.suppress(ValueError):
            return f"killed by {signal.Signals(-code).name}"
        return f"killed by signal {-code}"
    return f"exit {code}"


@dataclass
class FleetOutcome:
    """How a fleet's crawl ended, from its workers' exit codes and the store."""

    codes: dict[str, int | None]
    #: Workers that did not exit 0, each with the partitions taken from it, by new owner.
    takeovers: dict[str, dict[str, int]] = field(default_factory=dict)
    #: Partitions a lost worker still owns at the end (nobody took them over).
    kept: dict[str, int] = field(default_factory=dict)
    #: URLs queued or in flight fleet-wide at the end; None when the store could not say.
    open_work: int | None = None
    error: str | None = None

    @property
    def lost(self) -> list[str]:
        return [n for n, c in self.codes.items() if c != 0]

    @property
    def completed(self) -> bool:
        """Every worker exited 0, or some did and the store has no work left."""
        if not self.lost:
            return True
        return self.open_work == 0 and any(c == 0 for c in self.codes.values())

    @property
    def exit_code(self) -> int:
        return 0 if self.completed else 1

    def lines(self) -> list[str]:
        out = []
        for name in self.lost:
            taken = self.takeovers.get(name, {})
            line = f"fleet: worker {name} lost ({_exit_text(self.codes[name])})"
            if taken:
                by = ", ".join(f"{w} ({n})" for w, n in sorted(taken.items()))
                line += f"; its {sum(taken.values())} partitions were taken over by {by}"
            if self.kept.get(name):
                line += f"; {self.kept[name]} partitions still its own"
            out.append(line)
        if not self.lost:
            return out
        if self.open_work is None:
            out.append(f"fleet: crawl not completed: cannot tell, the store did not answer "
                       f"({self.error})")  # fmt: skip
        elif self.completed:
            out.append("fleet: crawl completed: nothing queued or in flight; the other workers "
                       "finished the lost worker's share")  # fmt: skip
        elif self.open_work:
            out.append(f"fleet: crawl not completed: {self.open_work} URLs queued or in flight")
        else:
            out.append("fleet: crawl not completed: no worker finished")
        return out


def judge_fleet(codes: dict[str, int | None], store: Any) -> FleetOutcome:
    """Judge a fleet's end: ``store`` answers ``grants()``, ``partition_epochs()``,
    ``last_fetch_by_worker()`` and ``open_work()`` (a :class:`PgCrawlStore`), or is None."""
    outcome = FleetOutcome(dict(codes))
    lost = set(outcome.lost)
    if not lost:
        return outcome
    if store is None:
        outcome.error = "no store"
        return outcome
    try:
        grants = store.grants()
        owners = store.partition_epochs()
        outcome.open_work = int(store.open_work())
    except Exception as exc:  # the store is away: the crawl's end cannot be told
        outcome.error = str(exc) or type(exc).__name__
        outcome.open_work = None
        return outcome
    # A partition moved from a lost worker after its last request was taken over (one
    # that moved before, it handed over alive when the fleet balanced).
    seen = store.last_fetch_by_worker()
    last: dict[int, str] = {}  # partition -> its previous owner, grant by grant
    for part, _epoch, owner, at in grants:
        before = last.get(part)
        if before in lost and owner != before and at >= seen.get(before, 0.0):
            taken = outcome.takeovers.setdefault(before, {})
            taken[owner] = taken.get(owner, 0) + 1
        last[part] = owner
    for _part, (_epoch, owner) in owners.items():
        if owner in lost:
            outcome.kept[owner] = outcome.kept.get(owner, 0) + 1
    return outcome


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

    def open_store(self) -> PgCrawlStore | None:
        """The exporter's store connection (opened on first use; None without a URL)."""
        if not self.store_url:
            return None
        if self._store is None:
            from lookup.crawler.state.postgres import PgCrawlStore

            self._store = PgCrawlStore(self.store_url)
        return self._store

    def export(self) -> int:
        """Export the outbox's new events to ``OUT/events.jsonl`` (with a store URL)."""
        store = self.open_store()
        return 0 if store is None else export_events(store, self.out)

    def outcome(self, codes: dict[str, int | None]) -> FleetOutcome:
        """How the crawl ended (:func:`judge_fleet`), asked of the fleet's store."""
        try:
            store = self.open_store()
        except Exception as exc:  # cannot even connect: judged as a store that is away
            return FleetOutcome(dict(codes), error=str(exc))
        return judge_fleet(codes, store)

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
