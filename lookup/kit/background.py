"""One way to run periodic work in a background thread, and to stop it.

Every background loop of the workbench (index tailers, pollers, shippers, sweepers)
is a :class:`BackgroundTask`: it calls ``work()`` every ``interval`` seconds, and a
failing call is logged with its traceback and counted — never swallowed silently,
never allowed to kill the loop. :meth:`stop` wakes the loop at once and joins it.
``work`` may return a number: a positive one (it did something) runs the next call
without waiting, so a backlog drains at full speed.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

__all__ = ["BackgroundTask"]


class BackgroundTask:
    """Call ``work()`` every ``interval`` seconds in a daemon thread until stopped."""

    def __init__(
        self,
        name: str,
        work: Callable[[], Any],
        interval: float,
        *,
        logger: logging.Logger | None = None,
        drain: bool = False,
    ) -> None:
        if interval <= 0:
            raise ValueError("interval must be above 0 seconds")
        self.name = name
        self.work = work
        self.interval = interval
        self.drain = drain
        self.log = logger or logging.getLogger("lookup.background")
        self.runs = 0
        self.failures = 0
        self.last_error: str | None = None
        self.last_error_at: float | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def running(self) -> bool:
        """Whether the loop's thread is alive."""
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> BackgroundTask:
        """Start the loop (once; a second call while running does nothing)."""
        if self.running:
            return self
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
        self._thread.start()
        return self

    def run_once(self) -> Any:
        """One call of ``work`` with the loop's error policy; returns its result or None."""
        try:
            result = self.work()
        except Exception as exc:
            self.failures += 1
            self.last_error = f"{type(exc).__name__}: {exc}"
            self.last_error_at = time.time()
            self.log.exception("background task %s failed", self.name)
            return None
        self.runs += 1
        return result

    def _run(self) -> None:
        while not self._stop.is_set():
            result = self.run_once()
            busy = self.drain and isinstance(result, (int, float)) and result > 0
            if not busy:
                self._stop.wait(self.interval)

    def stop(self, timeout: float | None = 5.0) -> None:
        """Ask the loop to stop, wake it, and wait up to ``timeout`` seconds for it."""
        self._stop.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)
        self._thread = None

    def status(self) -> dict[str, Any]:
        """Runs, failures and the last error, for health probes."""
        return {
            "name": self.name,
            "running": self.running,
            "runs": self.runs,
            "failures": self.failures,
            "lastError": self.last_error,
        }
