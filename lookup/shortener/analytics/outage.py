"""One outage of the click stream, logged once: its start, its end, and what it skipped.

A loop that polls a dependency (the shipper appending, the aggregator taking, a stats
read folding the tail) would otherwise log a traceback every round while the server is
down — hundreds in a few minutes. :class:`OutageLog` turns a run of failures into two
lines: ``<what> is unavailable: <reason>; retrying quietly`` at the first failure, and
``<what> is back after N s (K rounds failed)`` at the first success after it. ``quiet``
says when another process reports the same outage (the server's aggregator child polls
the stream all the time, so while it runs the server logs its own view at INFO): one
outage, one pair of lines in the terminal.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

__all__ = ["OutageLog"]


class OutageLog:
    """Counts failed rounds against one dependency and logs each outage once."""

    def __init__(
        self,
        what: str,
        logger: logging.Logger,
        *,
        clock: Callable[[], float] = time.monotonic,
        quiet: Callable[[], bool] | None = None,
    ) -> None:
        self.what = what
        self.log = logger
        self.clock = clock
        self.quiet = quiet
        self._lock = threading.Lock()
        self._since: float | None = None
        self._rounds = 0
        self.outages = 0
        self.failed_rounds = 0
        self.last_error: str | None = None

    @property
    def down(self) -> bool:
        """Whether the last round failed."""
        return self._since is not None

    def failed(self, exc: BaseException) -> None:
        """A round failed because the dependency is unavailable (logged only the first time)."""
        reason = str(exc) or type(exc).__name__
        with self._lock:
            first = self._since is None
            if first:
                self._since = self.clock()
                self._rounds = 0
                self.outages += 1
            self._rounds += 1
            self.failed_rounds += 1
            self.last_error = reason
        if first:
            said = (
                reason if reason.startswith(self.what) else f"{self.what} is unavailable: {reason}"
            )
            self.log.log(self._level(), "%s; retrying quietly", said)

    def ok(self) -> None:
        """A round succeeded: the end of an outage is logged once, with its length and count."""
        with self._lock:
            if self._since is None:
                return
            took, rounds = self.clock() - self._since, self._rounds
            self._since = None
        self.log.log(
            self._level(),
            "%s is back after %.1f s (%d round(s) failed and were retried)",
            self.what,
            took,
            rounds,
        )

    def _level(self) -> int:
        return logging.INFO if self.quiet is not None and self.quiet() else logging.WARNING

    def stats(self) -> dict[str, Any]:
        """Down now or not, outages seen, rounds failed in all, the last reason."""
        return {
            "down": self.down,
            "outages": self.outages,
            "failedRounds": self.failed_rounds,
            "lastError": self.last_error,
        }
