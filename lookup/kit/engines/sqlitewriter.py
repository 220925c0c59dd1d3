"""The SQLite writer's path: one writer at a time per process, checkpoints in the background.

**Writer lock.** SQLite allows one writer per database file. When several threads of
one process start write transactions at once, all but one get ``SQLITE_BUSY`` and
SQLite's busy handler makes them *sleep* and retry — 1, 2, 5, 10, 15, 20, 25, 25, 25,
50, 50, 100 ms and so on. Under a burst of 32 concurrent creates that backing-off is
what turned a 15 ms median into a one-second p99: a thread that just missed the lock
sleeps for tens of milliseconds while the lock is free again within one. Queueing the
writers of one process on :func:`writer_lock` *before* ``BEGIN IMMEDIATE`` replaces
those sleeps with a wake-up the moment the previous writer commits. SQLite's own lock
and ``busy_timeout`` still arbitrate between processes, so correctness never depends on
this lock — only latency does.

**Checkpoints off the commit path.** In WAL mode a commit appends to the ``-wal`` file;
every ``wal_autocheckpoint`` pages (1,000 by default) the committing connection copies
the WAL back into the database and fsyncs both — 5 to 120 ms on this machine's disk,
paid by whichever request happened to commit, *while it still holds the writer lock*,
so every writer queued behind it waits too. :class:`WalCheckpointer` switches automatic
checkpoints off on the writers' connections and runs ``PRAGMA wal_checkpoint(PASSIVE)``
from one background thread instead: passive checkpoints never block writers or readers,
and the fsync's time is spent where no request waits for it.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import threading

from lookup.kit.engines.sqlite import connect

__all__ = ["WalCheckpointer", "writer_lock"]

log = logging.getLogger(__name__)

_locks: dict[str, threading.RLock] = {}
_guard = threading.Lock()


def _canonical(path: str | os.PathLike[str]) -> str:
    text = os.fspath(path)
    if text == ":memory:" or text.startswith("file:"):
        return text  # not a file path; each spelling gets its own lock
    return os.path.realpath(text)


def writer_lock(path: str | os.PathLike[str]) -> threading.RLock:
    """The process-wide writer lock of the SQLite database at ``path``.

    Every caller naming the same file (however it spells the path) gets the same lock,
    so two stores, or an allocator and a store, on one file queue behind each other.
    Re-entrant, so a helper that writes may be called by one that already holds it.
    """
    key = _canonical(path)
    with _guard:
        lock = _locks.get(key)
        if lock is None:
            lock = _locks[key] = threading.RLock()
        return lock


class WalCheckpointer:
    """Checkpoints one WAL database from a background thread (see the module docstring).

    Writers call :meth:`prepare` on each connection they write with (switches the
    automatic checkpoint off) and :meth:`committed` after each commit, outside any lock.
    The thread starts with the first commit, checkpoints once ``every_commits`` commits
    have piled up or ``interval_s`` after the last commit, and stops with :meth:`stop`
    (which checkpoints what is left). If the thread cannot checkpoint (a long reader
    holds the WAL, say) it tries again later; the WAL grows meanwhile, as it would with
    automatic checkpoints.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        every_commits: int = 256,
        interval_s: float = 1.0,
        busy_timeout_ms: int = 10_000,
    ) -> None:
        if every_commits < 1 or interval_s <= 0:
            raise ValueError("every_commits must be >= 1 and interval_s > 0")
        self.path = os.fspath(path)
        self.every_commits = every_commits
        self.interval_s = interval_s
        self.busy_timeout_ms = busy_timeout_ms
        self._pending = 0
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._start_lock = threading.Lock()
        self.checkpoints = 0
        self.pages_checkpointed = 0
        self.failures = 0

    @staticmethod
    def prepare(conn: sqlite3.Connection) -> None:
        """Switch the automatic checkpoint off on a writer's connection."""
        conn.execute("PRAGMA wal_autocheckpoint = 0")

    def committed(self) -> None:
        """Count one commit; wakes the thread when enough have piled up. Never blocks."""
        self._pending += 1  # a lost increment under a race only delays a checkpoint
        if self._thread is None:
            self._start()
        if self._pending >= self.every_commits:
            self._wake.set()

    def _start(self) -> None:
        with self._start_lock:
            if self._thread is not None or self._stop.is_set():
                return
            self._thread = threading.Thread(
                target=self._run, name=f"wal-checkpoint:{os.path.basename(self.path)}", daemon=True
            )
            self._thread.start()

    def _connect(self) -> sqlite3.Connection:
        # The checkpointer's own connection: the file's journal mode is its owner's to set.
        return connect(self.path, wal=False, synchronous=None, busy_timeout_ms=self.busy_timeout_ms)

    def _run(self) -> None:
        conn = self._connect()
        try:
            while not self._stop.is_set():
                self._wake.wait(self.interval_s)
                self._wake.clear()
                if self._pending:
                    self._checkpoint(conn)
        finally:
            conn.close()

    def _checkpoint(self, conn: sqlite3.Connection) -> None:
        self._pending = 0
        try:
            busy, _log_pages, done = conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        except sqlite3.Error:
            self.failures += 1
            self._pending = max(self._pending, 1)  # try again next round
            log.warning("WAL checkpoint of %s failed; will retry", self.path, exc_info=True)
            return
        self.checkpoints += 1
        self.pages_checkpointed += max(0, int(done))
        if busy:
            self._pending = max(self._pending, 1)

    def checkpoint_now(self) -> None:
        """Run one passive checkpoint in the calling thread (tests, shutdown)."""
        conn = self._connect()
        try:
            self._checkpoint(conn)
        finally:
            conn.close()

    def stop(self) -> None:
        """Stop the thread and checkpoint what is left; a later commit starts it again."""
        with self._start_lock:
            thread, self._thread = self._thread, None
            if thread is None:
                return
            self._stop.set()
            self._wake.set()
        thread.join(timeout=30)
        if self._pending and os.path.exists(self.path):
            self.checkpoint_now()
        self._stop.clear()
        self._wake.clear()

    def stats(self) -> dict[str, int]:
        """Checkpoints run, pages copied back, failures, commits since the last one."""
        return {
            "checkpoints": self.checkpoints,
            "pages": self.pages_checkpointed,
            "failures": self.failures,
            "pendingCommits": self._pending,
        }
