"""One server per embedded data directory: ``<data-dir>/server.lock``.

Why: over an embedded data directory a server keeps the links in SQLite files there and
caches them in its own memory (the resolver's in-process cache, up to a minute), and
nothing tells another process of a change. Two servers over one directory — two
``lookup serve``, or ``uvicorn --workers 2`` — therefore go on serving a redirect that was
changed or deleted through the other, and each runs the jobs only one may run (the safety
scanner's sweeps: ``SoloLeadership``). So every serving process takes an exclusive
``flock`` on ``server.lock`` for its lifetime, and a second one stops at once with one line
naming the first and what to do instead.

A fleet is different: when the links live in a database server or a Redis cache tier tells
every process of every change (:func:`shares_state`), any number of servers may serve one
directory, and each takes a *shared* lock — which an embedded server's exclusive lock
excludes, both ways round.

The kernel lets go of a ``flock`` when its holder dies, even by ``kill -9``, so a crashed
server never blocks the next; the descriptor is not inheritable, so no child process keeps
it. The file is never deleted (two processes could then lock two different files). Each
holder writes a JSON line into it (pid, parent pid, address, start time) for the refusal
message; only the lock decides. Readers — the dashboard, read-only commands — never take it.
"""

from __future__ import annotations

import fcntl
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

__all__ = ["LOCK_FILE", "Holder", "ServerLock", "ServerLockRefused", "holders", "shares_state"]

#: The lock's file name inside the data directory.
LOCK_FILE = "server.lock"


def shares_state(store_url: str, cache_url: str) -> bool:
    """Whether servers configured with these URLs may share one data directory: the links
    live in a database server (``postgresql://``), or a Redis cache tier (``redis://``)
    tells every process of every change. Otherwise the state is embedded: one server only."""
    store = urlsplit(store_url.strip()).scheme.lower()
    cache = urlsplit(cache_url.strip()).scheme.lower()
    return store in ("postgresql", "postgres") or cache in ("redis", "rediss")


class ServerLockRefused(RuntimeError):
    """Another server holds the data directory; ``str()`` is the one line to print."""


@dataclass(frozen=True)
class Holder:
    """A process that holds (or held) the lock, as it described itself."""

    pid: int
    ppid: int
    url: str
    shared: bool
    started_at: float

    def describe(self) -> str:
        """``pid 1234, http://127.0.0.1:8000, since 14:02:07``."""
        since = time.strftime("%H:%M:%S", time.localtime(self.started_at))
        where = f", {self.url}" if self.url else ""
        return f"pid {self.pid}{where}, since {since}"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def holders(data_dir: str | os.PathLike[str]) -> list[Holder]:
    """The processes that wrote themselves into ``data_dir``'s lock file and are still alive
    (a dead one's line stays until the next exclusive holder rewrites the file)."""
    try:
        text = (Path(data_dir) / LOCK_FILE).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    found: list[Holder] = []
    for line in text.splitlines():
        try:
            raw = json.loads(line)
            holder = Holder(
                int(raw["pid"]), int(raw.get("ppid", 0)), str(raw.get("url", "")),
                bool(raw.get("shared", False)), float(raw.get("startedAt", 0)),
            )  # fmt: skip
        except (ValueError, TypeError, KeyError, AttributeError):
            continue
        if holder.pid != os.getpid() and _alive(holder.pid):
            found.append(holder)
    return found


class ServerLock:
    """The lock one serving process holds on ``data_dir`` (see the module docstring).

    ``shared=False`` (embedded state): this process must be the only server. ``shared=True``
    (a fleet member): any number of shared holders, but no embedded server. ``url`` is the
    address written for the refusal message of whoever comes next. ``worker=True`` says
    this process is one of several workers a supervisor started (``uvicorn --workers``):
    refused by a sibling, the message says so. Use as a context manager, or
    :meth:`acquire` / :meth:`release`; :meth:`acquire` raises :class:`ServerLockRefused`
    at once (it never waits).
    """

    def __init__(
        self,
        data_dir: str | os.PathLike[str],
        *,
        shared: bool = False,
        url: str = "",
        worker: bool = False,
    ) -> None:
        self.data_dir = Path(data_dir)
        self.path = self.data_dir / LOCK_FILE
        self.shared = shared
        self.url = url
        self.worker = worker
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        """Whether this object holds the lock now."""
        return self._fd is not None

    def acquire(self) -> ServerLock:
        """Take the lock without waiting; :class:`ServerLockRefused` when another holds it."""
        if self._fd is not None:
            return self
        self.data_dir.mkdir(parents=True, exist_ok=True)
        flags = os.O_RDWR | os.O_CREAT | (os.O_APPEND if self.shared else 0)
        writable = True
        try:
            fd = os.open(self.path, flags, 0o644)  # not inheritable (PEP 446)
        except PermissionError:  # another user's lock file: lock it all the same (no line)
            if not self.path.exists():
                raise
            fd, writable = os.open(self.path, os.O_RDONLY), False
        try:
            fcntl.flock(fd, (fcntl.LOCK_SH if self.shared else fcntl.LOCK_EX) | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise ServerLockRefused(self._refusal()) from None
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd
        if writable:
            self._describe(fd)
        return self

    def _describe(self, fd: int) -> None:
        """Write this holder's line (the exclusive holder's replaces the file's content)."""
        line = json.dumps({"pid": os.getpid(), "ppid": os.getppid(), "url": self.url,
                           "shared": self.shared, "startedAt": time.time()})  # fmt: skip
        if not self.shared:
            os.ftruncate(fd, 0)  # the only holder: the file describes this process alone
            os.lseek(fd, 0, os.SEEK_SET)
        os.write(fd, (line + "\n").encode("utf-8"))  # O_APPEND: shared holders' lines add up

    def refusal(self) -> str | None:
        """The refusal :meth:`acquire` would meet right now, or None; takes nothing (the
        lock is tried and let go at once, the file left as it is) — for a supervisor that
        wants to stop before starting anything."""
        if self._fd is not None:
            return None
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except OSError:  # no lock file yet (or none this user may read): nothing to say
            return None
        try:
            fcntl.flock(fd, (fcntl.LOCK_SH if self.shared else fcntl.LOCK_EX) | fcntl.LOCK_NB)
        except BlockingIOError:
            return self._refusal()
        finally:
            os.close(fd)
        return None

    def release(self) -> None:
        """Let go (closing the descriptor drops the lock); safe to call twice."""
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)

    def __enter__(self) -> ServerLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()

    def _refusal(self) -> str:
        """The one line saying who holds the directory and what to do instead."""
        where = str(self.data_dir)
        others = holders(self.data_dir)
        named = "; ".join(h.describe() for h in others[:3]) or "its details are not written yet"
        if self.shared:
            return (
                f"error: an embedded lookup server ({named}) is already serving {where}, and "
                "a fleet's server cannot share its data directory with it. Stop it, or give "
                "the fleet another --data-dir."
            )
        parent = os.getppid()
        if self.worker and parent > 1 and any(h.ppid == parent for h in others):
            return (
                f"error: several worker processes of one server (uvicorn --workers) over the "
                f"embedded data directory {where}: each would cache links the others change "
                "and serve stale redirects. Run one worker, or share the state through "
                "LOOKUP_CACHE_URL=redis://… (and LOOKUP_SHORTENER_STORE=postgresql://…)."
            )
        what = "a fleet's server" if others and all(h.shared for h in others) else "a lookup server"
        return (
            f"error: {what} is already serving {where} ({named}); a second server over one "
            "embedded data directory would serve stale redirects after a change through the "
            "other. Stop it, choose another --data-dir, or run several servers as a fleet on "
            "PostgreSQL/Redis (lookup up --backend postgres,redis)."
        )
