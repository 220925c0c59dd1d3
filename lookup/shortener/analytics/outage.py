"""One outage of the click stream, logged once: its start, its end, and what it skipped.

A loop that polls a dependency (the shipper appending, the aggregator taking, a stats
read folding the tail) would otherwise log a traceback every round while the server is
down — hundreds in a few minutes. :class:`OutageLog` turns a run of failures into two
lines: ``<what> is unavailable: <reason>; retrying quietly`` at the first failure, and
``<what> is back after N s (K rounds failed)`` at the first success after it.

A server and its aggregator child poll the same stream, and either may be the one that
sees an outage: the child polls all the time but may still be starting (or, niced, be
starved on a busy machine), the server touches the stream only when someone clicks or
reads stats. So they share one :class:`SharedOutage` in shared memory: whichever process
fails first logs the start, whichever succeeds first logs the end — one outage, one
pair of lines in the terminal, whoever noticed it.
"""

from __future__ import annotations

import logging
import multiprocessing
import threading
import time
from collections.abc import Callable
from typing import Any

__all__ = ["OutageLog", "SharedOutage"]

#: How long a process waits for the shared lock before it stops sharing (a process
#: killed while holding it would otherwise block every later round of the others).
_LOCK_WAIT_S = 2.0


class SharedOutage:
    """The start time and failed rounds of the current outage, in shared memory.

    Made by the server before it starts its aggregator child and passed to the child as
    a process argument. ``begin``/``end`` are atomic across the processes; if the lock
    cannot be had within ``_LOCK_WAIT_S`` (its holder was killed mid-update), this
    process stops sharing (``broken``) and its :class:`OutageLog` goes on alone."""

    def __init__(self) -> None:
        context = multiprocessing.get_context("spawn")
        self._lock = context.Lock()
        self._cells = context.RawArray("d", 2)  # since (monotonic; 0: up), failed rounds
        self.broken = False

    def begin(self, now: float) -> bool | None:
        """A failed round at ``now``; True when it starts the outage (None: not shared)."""
        if self.broken or not self._lock.acquire(timeout=_LOCK_WAIT_S):
            self.broken = True
            return None
        try:
            first = self._cells[0] == 0.0
            if first:
                self._cells[0], self._cells[1] = now, 0.0
            self._cells[1] += 1
            return first
        finally:
            self._lock.release()

    def end(self, now: float) -> tuple[float, int] | None:
        """A good round at ``now``: the outage's length and failed rounds if it ended one."""
        if self._cells[0] == 0.0:  # up: no lock on the common path
            return None
        if self.broken or not self._lock.acquire(timeout=_LOCK_WAIT_S):
            self.broken = True
            return None
        try:
            since, rounds = self._cells[0], int(self._cells[1])
            if since == 0.0:
                return None
            self._cells[0] = 0.0
            return now - since, rounds
        finally:
            self._lock.release()

    @property
    def down(self) -> bool:
        return self._cells[0] != 0.0


class OutageLog:
    """Counts failed rounds against one dependency and logs each outage once (with
    ``shared``, once across the processes sharing it)."""

    def __init__(
        self,
        what: str,
        logger: logging.Logger,
        *,
        clock: Callable[[], float] = time.monotonic,
        shared: SharedOutage | None = None,
    ) -> None:
        self.what = what
        self.log = logger
        self.clock = clock
        self.shared = shared
        self._lock = threading.Lock()
        self._since: float | None = None
        self._rounds = 0
        self.outages = 0
        self.failed_rounds = 0
        self.last_error: str | None = None

    @property
    def down(self) -> bool:
        """Whether the last round failed (in any process sharing the outage)."""
        if self.shared is not None and not self.shared.broken:
            return self.shared.down
        return self._since is not None

    def failed(self, exc: BaseException) -> None:
        """A round failed because the dependency is unavailable (logged only the first time)."""
        reason = str(exc) or type(exc).__name__
        with self._lock:
            now = self.clock()
            first = self._since is None
            if first:
                self._since = now
                self._rounds = 0
                self.outages += 1
            self._rounds += 1
            self.failed_rounds += 1
            self.last_error = reason
            if self.shared is not None:
                shared_first = self.shared.begin(now)
                if shared_first is not None:
                    first = shared_first
        if first:
            said = (
                reason if reason.startswith(self.what) else f"{self.what} is unavailable: {reason}"
            )
            self.log.warning("%s; retrying quietly", said)

    def ok(self) -> None:
        """A round succeeded: the end of an outage is logged once, with its length and count."""
        with self._lock:
            now = self.clock()
            ended = None if self._since is None else (now - self._since, self._rounds)
            self._since = None
            if self.shared is not None and not self.shared.broken:
                shared_end = self.shared.end(now)  # the outage may be another process's
                if not self.shared.broken:
                    ended = shared_end
        if ended is None:
            return
        took, rounds = ended
        self.log.warning(
            "%s is back after %.1f s (%d round(s) failed and were retried)",
            self.what,
            took,
            rounds,
        )

    def stats(self) -> dict[str, Any]:
        """Down now or not, outages seen, rounds failed in all, the last reason."""
        return {
            "down": self.down,
            "outages": self.outages,
            "failedRounds": self.failed_rounds,
            "lastError": self.last_error,
        }
