"""A long management task run off the request path, one at a time, with its progress.

Building a typeahead snapshot or training a ranking model takes seconds to minutes: far
too long for one HTTP request. The management endpoint starts a :class:`Job` (``202``
with its state), the work runs in a thread and reports progress (a sentence and, when it
knows, the fraction done), and ``GET`` on the same path shows the state until the next
run: ``idle`` → ``running`` → ``succeeded`` (with the work's ``result``) or ``failed``
(with the domain error's code and message). A second start while one runs is refused
(:class:`~lookup.errors.Conflict`, ``JOB_RUNNING``): two builds of one data set at once
would race for the same files.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from lookup import errors

log = logging.getLogger(__name__)

#: Progress sentences a job keeps (the latest ones).
MESSAGES_KEPT = 40


class Progress:
    """What a job's work calls to report progress: ``progress("searched 200/1,200", 0.15)``.

    It raises :class:`~lookup.errors.Unavailable` (``JOB_STOPPED``) once the server is
    stopping (:meth:`Job.stop`): the work ends at its next report instead of outliving the
    server."""

    def __init__(self, job: Job) -> None:
        self._job = job

    def __call__(self, message: str, fraction: float | None = None) -> None:
        if self._job._stopping.is_set():
            raise errors.Unavailable("the server stopped during the run", code="JOB_STOPPED")
        self._job._report(message, fraction)


class Job:
    """One kind of long task (``name``) of a server; at most one run at a time."""

    def __init__(self, name: str, clock: Callable[[], float] = time.time) -> None:
        self.name = name
        self._clock = clock
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._state = "idle"
        self._run = 0
        self._started: float | None = None
        self._finished: float | None = None
        self._fraction: float | None = None
        self._messages: deque[str] = deque(maxlen=MESSAGES_KEPT)
        self._result: dict[str, Any] | None = None
        self._error: dict[str, str] | None = None
        self._stopping = threading.Event()

    @property
    def running(self) -> bool:
        """Whether a run is in progress."""
        with self._lock:
            return self._state == "running"

    def start(
        self, work: Callable[[Progress], dict[str, Any]], *, about: str = ""
    ) -> dict[str, Any]:
        """Run ``work(progress)`` in a thread; its dict becomes the ``result``.

        A :class:`~lookup.errors.WorkbenchError` it raises is the run's ``error`` (code and
        message); anything else is logged and reported as ``INTERNAL``. Raises ``Conflict``
        (``JOB_RUNNING``) while a run is in progress. Returns the state at the start.
        """
        with self._lock:
            if self._stopping.is_set():
                raise errors.Unavailable("the server is stopping", code="JOB_STOPPED")
            if self._state == "running":
                raise errors.Conflict(
                    f"a {self.name} is already running (started "
                    f"{self._clock() - (self._started or self._clock()):.0f} s ago); wait "
                    "for it to finish",
                    code="JOB_RUNNING",
                )
            self._run += 1
            self._state = "running"
            self._started, self._finished = self._clock(), None
            self._fraction = 0.0
            self._messages.clear()
            self._result = self._error = None
            if about:
                self._messages.append(about)
            run = self._run
            started = self._status()  # "running", however fast the work is done
            self._thread = threading.Thread(
                target=self._main, args=(run, work), name=f"job-{self.name}", daemon=True
            )
            self._thread.start()
        return started

    def _main(self, run: int, work: Callable[[Progress], dict[str, Any]]) -> None:
        result: dict[str, Any] | None = None
        error: dict[str, str] | None = None
        try:
            result = work(Progress(self))
        except errors.WorkbenchError as exc:
            error = {"error": exc.code, "message": exc.message}
        except Exception as exc:  # a bug: logged with its traceback, reported in one line
            log.exception("%s failed", self.name)
            error = {"error": "INTERNAL", "message": f"{type(exc).__name__}: {exc}"}
        with self._lock:
            if run != self._run:
                return
            self._state = "failed" if error else "succeeded"
            self._finished = self._clock()
            self._result, self._error = result, error
            if not error:
                self._fraction = 1.0

    def _report(self, message: str, fraction: float | None) -> None:
        with self._lock:
            if message:
                self._messages.append(message)
            if fraction is not None:
                self._fraction = min(max(float(fraction), 0.0), 1.0)

    def stop(self, timeout: float = 10.0) -> None:
        """Ask a run in progress to end at its next progress report and wait for it (at
        most ``timeout`` seconds); no new run starts afterwards."""
        self._stopping.set()
        self.wait(timeout)

    def stop_with(self, mounts: Any) -> None:
        """Stop this job when ``mounts``' app shuts down, before the systems close: the
        hook is added once every system has mounted (shut-down hooks run in reverse)."""

        def add_hook() -> None:
            mounts.on_shutdown.append(lambda: self.stop())

        mounts.on_startup.append(add_hook)

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for the current run to end (tests, the command line); whether it ended."""
        thread = self._thread
        if thread is not None:
            thread.join(timeout)
        return not self.running

    def status(self) -> dict[str, Any]:
        """The job's state as the management endpoints answer it."""
        with self._lock:
            return self._status()

    def _status(self) -> dict[str, Any]:
        now = self._clock()
        started, finished = self._started, self._finished
        return {
            "job": self.name,
            "state": self._state,
            "run": self._run,
            "startedAt": started,
            "finishedAt": finished,
            "seconds": None if started is None else round((finished or now) - started, 2),
            "progress": self._fraction,
            "messages": list(self._messages),
            "result": self._result,
            "error": self._error,
        }


__all__ = ["MESSAGES_KEPT", "Job", "Progress"]
