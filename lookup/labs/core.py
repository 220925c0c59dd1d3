"""The dashboard's labs under one supervisor: start, find again, stop — and nothing left behind.

A *lab* is a set of processes a page runs for a drill or a demo: a throw-away redis-server,
a Redis Cluster, the KV store's nodes, id-lease generators, a crawler fleet, an index build.
Pages render and call; they never own a process. :class:`LabSupervisor` (one per dashboard
process and data directory: :func:`supervisor`) starts a lab once per ``(kind, key)`` — a
second ``start`` returns the running one — and stops every lab at exit (``atexit``, and on
SIGTERM when it is created on the main thread; Streamlit's own SIGTERM handler ends the
process normally, so ``atexit`` runs there too).

Every running lab is recorded in ``<data-dir>/labs.json`` (its kind, key, the pids it owns
with their start times, its addresses, its directories), so a page reloaded in a new browser
session finds its lab again, and a dashboard restarted after a crash finds the labs the dead
one left running: :meth:`LabSupervisor.get` adopts them as :class:`RecordedLab` (status,
addresses, stop), and stops them at its own exit. A recorded pid is matched by its start
time, so a pid the kernel handed to another process is never signalled; entries whose
processes are all gone are dropped when the file is read.
"""

from __future__ import annotations

import abc
import atexit
import contextlib
import fcntl
import importlib
import json
import os
import shutil
import signal
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any, ClassVar

__all__ = [
    "KINDS",
    "STATE_FILE",
    "TITLES",
    "Lab",
    "LabRecord",
    "LabSupervisor",
    "RecordedLab",
    "pid_alive",
    "process_start",
    "stop_every_lab",
    "supervisor",
    "terminate",
]

#: The state file, in the data directory.
STATE_FILE = "labs.json"
#: Each lab kind, ``kind → "module:Class"``, imported when a page first starts one.
KINDS: dict[str, str] = {
    "redis": "lookup.labs.servers:RedisLab",
    "redis-cluster": "lookup.labs.servers:RedisClusterLab",
    "kv-cluster": "lookup.labs.servers:KvClusterLab",
    "id-leases": "lookup.labs.servers:IdLeaseLab",
    "crawl": "lookup.labs.crawl:CrawlLab",
    "crawl-fleet": "lookup.labs.crawlfleet:CrawlFleetLab",
    "index-build": "lookup.labs.indexbuild:IndexBuildLab",
    "search-cluster": "lookup.labs.searchcluster:SearchClusterLab",
    "sandbox-web": "lookup.labs.sandbox:SandboxLab",
    "process": "lookup.labs.process:ProcessLab",
}
#: Each kind in the words a page uses for it.
TITLES: dict[str, str] = {
    "redis": "throw-away redis-server",
    "redis-cluster": "throw-away Redis Cluster",
    "kv-cluster": "set of KV storage nodes",
    "id-leases": "set of id generators and their etcd",
    "crawl": "crawl",
    "crawl-fleet": "crawler fleet with its PostgreSQL and etcd",
    "index-build": "search index build",
    "search-cluster": "search cluster of shard server processes",
    "sandbox-web": "sandbox web",
    "process": "process",
}
#: How long a recorded process has, after SIGTERM, before it is sent SIGKILL.
STOP_GRACE_S = 10.0


# ----------------------------------------------------------------------- processes


def process_start(pid: int) -> int | None:
    """The start time of ``pid`` (clock ticks since boot, ``/proc/PID/stat`` field 22), or
    ``None`` when no such process runs; a zombie counts as gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    fields = stat.rsplit(")", 1)[1].split()
    if fields[0] in ("Z", "X"):
        return None
    return int(fields[19])


def pid_alive(pid: int, started: int | None = None) -> bool:
    """True while ``pid`` runs (and, given ``started``, is the process that started then)."""
    now = process_start(pid)
    return now is not None and (started is None or now == started)


def terminate(pids: Iterable[tuple[int, int | None]], grace_s: float = STOP_GRACE_S) -> None:
    """SIGTERM each ``(pid, start time)`` still running, SIGKILL those left after
    ``grace_s``. For processes that are not this process's children (no ``wait`` is
    possible): their exit is polled in ``/proc``."""
    left = [(p, s) for p, s in pids if pid_alive(p, s)]
    for pid, _ in left:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGCONT)  # a frozen (SIGSTOP) process cannot exit
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while left and time.monotonic() < deadline:
        left = [(p, s) for p, s in left if pid_alive(p, s)]
        if left:
            time.sleep(0.05)
    for pid, _ in left:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)


# ----------------------------------------------------------------------------- labs


@dataclass
class LabRecord:
    """One lab as the state file keeps it."""

    kind: str
    key: str
    owner: int  # the dashboard process that runs it
    owner_start: int | None
    pids: list[tuple[int, int | None]]  # (pid, start time)
    addresses: dict[str, str] = field(default_factory=dict)
    paths: list[str] = field(default_factory=list)  # directories to remove with it
    started_at: float = 0.0

    @classmethod
    def of(cls, raw: Mapping[str, Any]) -> LabRecord:
        return cls(
            kind=str(raw["kind"]),
            key=str(raw.get("key", "")),
            owner=int(raw["owner"]),
            owner_start=None if raw.get("owner_start") is None else int(raw["owner_start"]),
            pids=[(int(p), None if s is None else int(s)) for p, s in raw.get("pids", [])],
            addresses={str(k): str(v) for k, v in dict(raw.get("addresses", {})).items()},
            paths=[str(p) for p in raw.get("paths", [])],
            started_at=float(raw.get("started_at", 0.0)),
        )

    def live_pids(self) -> list[tuple[int, int | None]]:
        return [(p, s) for p, s in self.pids if pid_alive(p, s)]

    def owner_alive(self) -> bool:
        return pid_alive(self.owner, self.owner_start)


class Lab(abc.ABC):
    """A lab's processes, as the supervisor drives them; a kind adapts one of the systems'
    own launchers (``RedisServer``, ``KvCluster``, ``CrawlFleet`` …) to this interface."""

    kind: ClassVar[str] = ""

    def __init__(self, key: str = "") -> None:
        self.key = key
        self.started_at = time.time()
        self.stopped = False

    @abc.abstractmethod
    def start(self) -> None:
        """Start the processes; return once they answer (raise, having stopped them, if not)."""

    @abc.abstractmethod
    def close(self) -> None:
        """Stop every process of the lab and remove what it made."""

    @abc.abstractmethod
    def pids(self) -> list[int]:
        """The processes of the lab that run now (recorded in the state file)."""

    @abc.abstractmethod
    def alive(self) -> bool:
        """True while the lab's processes serve (a killed one is reported dead)."""

    def addresses(self) -> dict[str, str]:
        """What a page connects to: ``name → URL``."""
        return {}

    def paths(self) -> list[str]:
        """Directories the lab made (removed by whoever stops it)."""
        return []

    def stop(self) -> None:
        """Stop the lab (idempotent)."""
        if not self.stopped:
            self.stopped = True
            self.close()

    def status(self) -> str:
        """``running``, ``dead`` (its processes exited or were killed) or ``stopped``."""
        if self.stopped:
            return "stopped"
        return "running" if self.alive() else "dead"

    def record(self, owner: int, owner_start: int | None) -> LabRecord:
        return LabRecord(
            kind=self.kind,
            key=self.key,
            owner=owner,
            owner_start=owner_start,
            pids=[(p, process_start(p)) for p in self.pids()],
            addresses=self.addresses(),
            paths=self.paths(),
            started_at=self.started_at,
        )


class RecordedLab(Lab):
    """A lab found in the state file, started by another dashboard process that is gone
    (or by an earlier supervisor of this one): its status and addresses, and a stop that
    signals the recorded processes. It cannot be driven — a page offers to stop it."""

    def __init__(self, record: LabRecord) -> None:
        super().__init__(record.key)
        self.kind = record.kind  # type: ignore[misc]  # the recorded lab's own kind
        self.recorded = record
        self.started_at = record.started_at

    def start(self) -> None:
        raise RuntimeError("a recorded lab is only stopped, never started again")

    def close(self) -> None:
        terminate(self.recorded.pids)
        for path in self.recorded.paths:
            shutil.rmtree(path, ignore_errors=True)

    def pids(self) -> list[int]:
        return [p for p, _ in self.recorded.live_pids()]

    def alive(self) -> bool:
        return bool(self.recorded.live_pids())

    def addresses(self) -> dict[str, str]:
        return dict(self.recorded.addresses)

    def paths(self) -> list[str]:
        return list(self.recorded.paths)

    def record(self, owner: int, owner_start: int | None) -> LabRecord:
        return LabRecord(
            kind=self.kind,
            key=self.key,
            owner=owner,
            owner_start=owner_start,
            pids=self.recorded.live_pids(),
            addresses=self.addresses(),
            paths=self.paths(),
            started_at=self.started_at,
        )


# ----------------------------------------------------------------------- supervisor


class LabSupervisor:
    """The labs of one dashboard process over one data directory (see the module doc)."""

    def __init__(self, state_dir: Path | str, kinds: Mapping[str, str] | None = None) -> None:
        self.state_dir = Path(state_dir)
        self.path = self.state_dir / STATE_FILE
        self.kinds = dict(KINDS if kinds is None else kinds)
        self._labs: dict[tuple[str, str], Lab] = {}
        self._lock = threading.RLock()  # the labs and the state file
        self._names: dict[tuple[str, str], threading.RLock] = {}  # one start/stop at a time
        self._written: list[dict[str, Any]] | None = None
        self.owner = os.getpid()
        self.owner_start = process_start(self.owner)

    # -- the API the pages call --------------------------------------------------------
    def start(self, kind: str, key: str | None = None, **params: Any) -> Lab:
        """The running lab ``(kind, key)``, else a new one started with ``params``.

        A lab of that name that died, or one a gone dashboard left running (which this
        process cannot drive), is stopped first. A lab that fails to start is stopped and
        the error raised. Only calls on the same ``(kind, key)`` wait for a start: a slow
        one (a Redis Cluster, a fleet) holds up no other page."""
        name = (kind, key or "")
        with self._name_lock(name):
            lab = self.get(kind, key)
            if lab is not None and lab.alive() and not isinstance(lab, RecordedLab):
                return lab
            if lab is not None:
                self.stop(kind, key)
            lab = self._kind(kind)(name[1], **params)
            try:
                lab.start()
                if _EXITING.is_set():  # the dashboard began to exit meanwhile
                    raise RuntimeError("the dashboard is stopping")
            except BaseException:
                with contextlib.suppress(Exception):
                    lab.stop()
                raise
            with self._lock:
                self._labs[name] = lab
                self._save()
            return lab

    def get(self, kind: str, key: str | None = None) -> Lab | None:
        """The lab ``(kind, key)`` — this process's own (running or dead), else one found in
        the state file (a :class:`RecordedLab`, adopted: stopped at this process's exit) —
        or ``None``."""
        name = (kind, key or "")
        with self._name_lock(name), self._lock:
            lab = self._labs.get(name)
            if lab is None:
                lab = self._adopt(name)
            self._save()
            return lab

    def stop(self, kind: str, key: str | None = None) -> bool:
        """Stop the lab ``(kind, key)`` and forget it; False when there was none."""
        name = (kind, key or "")
        with self._name_lock(name):
            with self._lock:
                lab = self._labs.pop(name, None) or self._adopt(name, keep=False)
            if lab is None:
                return False
            try:
                lab.stop()
            finally:
                with self._lock:
                    self._save()
            return True

    def stop_all(self) -> None:
        """Stop every lab of this process (at exit and on SIGTERM)."""
        with self._lock:
            for name in list(self._labs):
                lab = self._labs.pop(name)
                with contextlib.suppress(Exception):
                    lab.stop()
            self._save()

    def labs(self) -> list[Lab]:
        """This process's labs (running or dead), in the order they were started."""
        with self._lock:
            return list(self._labs.values())

    def recorded(self) -> list[LabRecord]:
        """Every lab in the state file with a process still running, whoever runs it."""
        return [r for r in self._read() if r.live_pids()]

    # -- internals ---------------------------------------------------------------------
    def _name_lock(self, name: tuple[str, str]) -> threading.RLock:
        with self._lock:
            return self._names.setdefault(name, threading.RLock())

    def _kind(self, kind: str) -> type[Lab]:
        try:
            target = self.kinds[kind]
        except KeyError:
            known = ", ".join(sorted(self.kinds))
            raise ValueError(f"no lab kind {kind!r}; known: {known}") from None
        module, _, name = target.partition(":")
        cls = getattr(importlib.import_module(module), name)
        if not (isinstance(cls, type) and issubclass(cls, Lab)):
            raise TypeError(f"{target} is not a Lab")
        return cls

    def _mine(self, record: LabRecord) -> bool:
        return record.owner == self.owner and record.owner_start == self.owner_start

    def _adopt(self, name: tuple[str, str], keep: bool = True) -> Lab | None:
        """The recorded lab ``name`` whose dashboard is gone (or is this process, without it
        in memory), as a :class:`RecordedLab`; kept as this process's own with ``keep``."""
        for record in self._read():  # the file is replaced whole: a read needs no lock
            if (record.kind, record.key) != name or not record.live_pids():
                continue
            if record.owner_alive() and not self._mine(record):
                continue  # another dashboard's lab, running
            lab = RecordedLab(record)
            if keep:
                self._labs[name] = lab
            return lab
        return None

    @contextlib.contextmanager
    def _file_lock(self) -> Any:
        self.state_dir.mkdir(parents=True, exist_ok=True)
        with (self.state_dir / (STATE_FILE + ".lock")).open("a") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def _read(self) -> list[LabRecord]:
        try:
            raw = json.loads(self.path.read_text(encoding="utf-8"))
            return [LabRecord.of(r) for r in raw.get("labs", [])]
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return []  # no file yet, or a damaged one: it is rewritten whole

    def _save(self) -> None:
        """Rewrite the state file: this process's labs with a process running, and every
        other entry that still has one (an entry whose processes are gone is dropped).
        Written only when this process's part changed."""
        own = [
            asdict(lab.record(self.owner, self.owner_start))
            for lab in self._labs.values()
            if not lab.stopped
        ]
        own = [r for r in own if r["pids"]]
        if own == self._written or (not own and not self.path.exists()):
            return
        try:
            self._write(own)
        except OSError:  # a read-only data directory: the labs run, unrecorded
            return
        self._written = own

    def _write(self, own: list[dict[str, Any]]) -> None:
        with self._file_lock():
            taken = {(r["kind"], r["key"]) for r in own}
            others = [
                asdict(r)
                for r in self._read()
                if r.live_pids()
                # this process's, or a gone dashboard's it adopted: in ``own`` now
                and not ((r.kind, r.key) in taken and (self._mine(r) or not r.owner_alive()))
            ]
            body = json.dumps({"labs": own + others}, indent=1)
            tmp = self.path.with_suffix(f".{self.owner}.tmp")
            tmp.write_text(body, encoding="utf-8")
            os.replace(tmp, self.path)


_SUPERVISORS: dict[Path, LabSupervisor] = {}
#: Set once this process begins to exit: a lab whose start ends after it is stopped at once.
_EXITING = threading.Event()
_SUPERVISORS_LOCK = threading.RLock()  # re-entered by the SIGTERM handler
_HOOKED = False  # atexit (and SIGTERM, from the main thread) hooked once per process


def stop_every_lab() -> None:
    """Stop the labs of every supervisor of this process (registered with ``atexit``)."""
    with _SUPERVISORS_LOCK:
        found = list(_SUPERVISORS.values())
    for sup in found:
        sup.stop_all()


def _at_exit() -> None:
    _EXITING.set()
    stop_every_lab()


def _on_sigterm(previous: Any) -> Any:
    def handler(signum: int, frame: FrameType | None) -> None:
        _at_exit()
        if callable(previous):
            previous(signum, frame)
        elif previous != signal.SIG_IGN:
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)

    return handler


def supervisor(state_dir: Path | str) -> LabSupervisor:
    """This process's supervisor for the labs recorded in ``state_dir`` (the data dir)."""
    path = Path(state_dir).expanduser().resolve()
    global _HOOKED
    with _SUPERVISORS_LOCK:
        if not _HOOKED:
            _HOOKED = True
            atexit.register(_at_exit)
            if threading.current_thread() is threading.main_thread():
                previous = signal.getsignal(signal.SIGTERM)
                signal.signal(signal.SIGTERM, _on_sigterm(previous))
        sup = _SUPERVISORS.get(path)
        if sup is None:
            sup = _SUPERVISORS[path] = LabSupervisor(path)
        return sup
