"""Click analytics for the shortener — never on the redirect path.

The pipeline, as the seed draws it::

    redirect --offer--> ClickBuffer --ClickShipper--> ClickLog --ClickAggregator--> counts
    (a tuple; no I/O,   (bounded; drops  (thread: ids, IP  (append-   (own process: enrich,
     no lock)            when full)       hash, batch)      only)      dedup, minute/hour, HLL)

* :class:`ClickBuffer` — what ``service.on_click`` calls; a ``deque.append`` or a counted drop;
* :class:`ClickShipper` — a thread in the redirect server: drains batches, writes them to
  the log as :class:`RawClick` s (headers unparsed, the IP replaced by its keyed hash) —
  the only per-click work the redirect server's process does besides the append;
* :class:`ClickLog` — the stream interface (the seam :mod:`.clicklog`);
  :class:`SqliteClickLog` (``clicklog.sqlite3``) is the embedded default,
  :class:`MemoryClickLog` the in-memory one, Redis Streams the fleet's
  (:func:`open_click_log`); Kafka would fit the same methods;
* :class:`ClickAggregator` — parses user agents (LRU on the strings), tells people from
  bots and link-preview fetchers, and keeps per-key per-minute and per-hour counts by
  country, device, OS, browser and referrer, and a HyperLogLog per key for unique
  visitors in a :class:`ClickCounts` store (the seam :mod:`.clickcounts`:
  :class:`SqliteClickCounts`, ``clickstats.sqlite3``; :func:`open_click_counts`);
* :class:`ClickAnalytics` — owns them for one data directory: its buffer's ``offer`` is the
  service's click hook (:mod:`lookup.shortener.app` passes it in), and it answers a
  link's click stats (:meth:`ClickAnalytics.click_stats`).

Where the aggregator runs (``aggregator=``): ``"process"`` — what ``lookup serve`` does —
a second process, started with the first shipped batch (a server nobody clicks needs
none) at a low CPU priority (``aggregator_nice``, 19 by default: on a shared machine the
redirects come first and analytics trails; on a machine of its own it gets every cycle);
``"thread"`` — a thread in this process (tests, notebooks); ``"external"`` — not here
at all: ``python -m lookup.shortener.analytics --data-dir DIR`` runs it elsewhere, as the
seed's separate stream job.

The aggregator process is supervised: a child that dies (``kill -9``, a crash) is started
again with back-off (1 s, doubling to 30 s; back to 1 s once a child has lived a minute),
counted in ``restarts``, and reported by :meth:`ClickAnalytics.aggregator_health` —
the shortener's ``/healthz`` says ``degraded`` while it is down. The child is told to
stop by closing a pipe (``poll`` sees the end of file), never by a multiprocessing
``Event``: setting one whose waiter was killed mid-wait blocks for ever, which kept
``lookup serve`` from exiting on SIGTERM.
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import os
import signal
import socket
import threading
import time
from collections.abc import Callable
from multiprocessing import resource_tracker
from pathlib import Path
from typing import Any

from lookup import settings
from lookup.errors import Unavailable
from lookup.kit.background import BackgroundTask
from lookup.kit.lazy import lazy_exports
from lookup.shortener.analytics.aggregate import (
    GRAINS,
    MAX_RANGE_S,
    ClickAggregator,
    event_dims,
)
from lookup.shortener.analytics.buffer import ClickBuffer
from lookup.shortener.analytics.clickcounts import ClickCounts, open_click_counts
from lookup.shortener.analytics.clicklog import ClickLog, LogRecord, open_click_log
from lookup.shortener.analytics.events import (
    AGENT_KINDS,
    BOT,
    HUMAN,
    LINK_PREVIEW_AGENTS,
    PREVIEW,
    ClickEnricher,
    ClickEvent,
    RawClick,
    classify_agent,
    country_code,
    referrer_host,
)
from lookup.shortener.analytics.outage import OutageLog, SharedOutage
from lookup.shortener.analytics.shipper import ClickShipper

_logger = logging.getLogger("lookup.shortener.analytics")

#: Where the aggregator runs (see the module docstring).
AGGREGATOR_MODES = ("thread", "process", "external")

#: Restart back-off of a dead aggregator process: first, ceiling, and how long a child
#: must live for the back-off to start again from the first.
RESTART_BACKOFF_S = (1.0, 30.0, 60.0)


class ClickAnalytics:
    """Buffer, shipper, click log and aggregator for one shortener data directory.

    ``start()`` runs the shipper in a daemon thread and the aggregator where ``aggregator``
    says (a thread, a niced process started by the first shipped batch, or nowhere here);
    ``stop()`` ends them and ships what is left. ``flush()`` ships and aggregates everything now
    (the stats endpoint calls it, so an owner sees their clicks at once; otherwise the
    pipeline trails the redirects by about ``ship_interval_s + aggregate_interval_s``).
    """

    def __init__(
        self,
        directory: str | Path,
        secret: bytes,
        *,
        capacity: int = 65_536,
        batch_size: int = 1_000,
        ship_interval_s: float = 0.25,
        aggregate_interval_s: float = 1.0,
        click_log: ClickLog | None = None,
        click_counts: ClickCounts | None = None,
        aggregator: str = "thread",
        aggregator_nice: int = 19,
        clock: Callable[[], float] = time.time,
        on_shipped: Callable[[Any], None] | None = None,
    ) -> None:
        # the embedded defaults, imported here: the package names its backends lazily
        from lookup.shortener.analytics.clickcounts.sqlite import SqliteClickCounts
        from lookup.shortener.analytics.clicklog.sqlite import SqliteClickLog

        if aggregator not in AGGREGATOR_MODES:
            raise ValueError(f"aggregator must be one of {AGGREGATOR_MODES}, not {aggregator!r}")
        self.dir = Path(directory)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.buffer = ClickBuffer(capacity)
        self.log: ClickLog = click_log or SqliteClickLog(self.dir / "clicklog.sqlite3")
        self.enricher = ClickEnricher(secret)
        self._secret = secret
        grouped = hasattr(self.log, "take")  # a stream with a consumer group (Redis)
        what = "the click stream" if grouped else "the click log"
        # with an aggregator child, one outage record for both processes (see outage.py)
        self._shared_outage = SharedOutage() if aggregator == "process" else None
        self.outage = OutageLog(what, _logger, shared=self._shared_outage)
        self.shipper = ClickShipper(
            self.buffer,
            self.log,
            self.enricher,
            batch_size=batch_size,
            outage=self.outage,
            on_shipped=on_shipped,  # each shipped batch, after the log took it (webhooks)
        )
        counts = click_counts or SqliteClickCounts(self.dir / "clickstats.sqlite3")
        self.aggregator = ClickAggregator(
            counts,
            self.log,
            enricher=self.enricher,
            clock=clock,
            consumer=consumer_name() if grouped else None,
            claim_idle_s=settings.get("clicks_claim_idle"),
        )
        self.ship_interval_s = ship_interval_s
        self.aggregate_interval_s = aggregate_interval_s
        if aggregator != "thread" and not (
            (grouped or isinstance(self.log, SqliteClickLog))
            and isinstance(counts, SqliteClickCounts)
        ):
            aggregator = "thread"  # another process cannot reach in-memory state
        self.mode = aggregator
        self.aggregator_nice = aggregator_nice
        self._running = False
        self._tasks: list[BackgroundTask] = []
        self._process: Any = None
        self._process_stop: Any = None  # the write end of the child's stop pipe
        self._process_lock = threading.Lock()
        self._process_started_at = 0.0
        self._process_down_since: float | None = None
        self._restart_at = 0.0
        self._backoff_s = RESTART_BACKOFF_S[0]
        self.restarts = 0
        self.last_exit: int | None = None
        self._failures_before = 0  # loop failures of tasks already stopped

    @property
    def on_click(self) -> Callable[[Any], bool]:
        """The click hook for the redirect: the buffer's ``offer`` (an append, or a drop)."""
        return self.buffer.offer

    @property
    def loop_errors(self) -> int:
        """Failed rounds of the background loops (each logged with its traceback)."""
        return self._failures_before + sum(task.failures for task in self._tasks)

    # -- background --------------------------------------------------------------------

    @property
    def aggregator_process(self) -> bool:
        """Whether the aggregator runs as a second process of this server."""
        return self.mode == "process"

    def start(self) -> None:
        """Start the shipper thread and the aggregator thread or process (idempotent).

        Each loop drains a backlog at full speed (a full batch shipped, or any entries
        folded, runs the next round at once) and otherwise waits its interval."""
        if self._tasks:
            return
        self._running = True
        self._tasks.append(
            BackgroundTask(
                "click-shipper", self._ship_round, self.ship_interval_s, logger=_logger, drain=True
            )
        )
        if self.mode == "thread":
            self._tasks.append(
                BackgroundTask(
                    "click-aggregator",
                    self._aggregate_round,
                    self.aggregate_interval_s,
                    logger=_logger,
                    drain=True,
                )
            )
        if self.mode == "process":
            self._tasks.append(
                BackgroundTask("click-aggregator-supervisor", self._supervise, 0.25, logger=_logger)
            )
        for task in self._tasks:
            task.start()

    def _aggregate_round(self) -> int:
        """One fold in the aggregator thread; an unavailable stream is an outage, logged once."""
        try:
            n = self.aggregator.step()
        except Unavailable as exc:
            self.outage.failed(exc)
            return 0
        self.outage.ok()
        return n

    def _ship_round(self) -> int:
        n = self.shipper.ship_once()
        if n and self.aggregator_process and self._process is None and self._running:
            with self._process_lock:
                if self._process is None and self._running:
                    self._start_process()  # lazily: a server nobody clicks needs no second one
        return n if n >= self.shipper.batch_size else 0  # a full batch: go again at once

    def _start_process(self) -> None:
        """Start the aggregator child (the caller holds ``_process_lock``)."""
        locator = getattr(self.log, "locator", None)
        log_ref = locator() if locator is not None else self.log.path  # type: ignore[attr-defined]
        context = multiprocessing.get_context("spawn")  # never fork a threaded server
        reader, writer = context.Pipe(duplex=False)
        process = context.Process(
            target=run_aggregator,
            args=(
                str(self.aggregator.path),
                log_ref,
                self._secret,
                self.aggregate_interval_s,
                os.getpid(),
                reader,
                self.aggregator_nice,
                None,
                self._shared_outage,
            ),
            name="click-aggregator",
            daemon=True,
        )
        # The child inherits this thread's signal mask: SIGINT and SIGTERM stay blocked
        # until run_aggregator has its handlers, so an early Ctrl-C prints no traceback.
        # The resource tracker first: starting it unblocks them in this thread on its way out.
        resource_tracker.ensure_running()
        mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
        try:
            process.start()
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
            reader.close()  # the child has its copy; ours would hide the parent's death
        self._process, self._process_stop = process, writer
        self._process_started_at = time.monotonic()
        self._process_down_since = None

    def _supervise(self) -> None:
        """Restart a dead aggregator child with back-off (the supervisor task's round)."""
        with self._process_lock:
            process = self._process
            if process is None or not self._running:
                return
            now = time.monotonic()
            if process.is_alive():
                if now - self._process_started_at >= RESTART_BACKOFF_S[2]:
                    self._backoff_s = RESTART_BACKOFF_S[0]
                return
            if self._process_down_since is None:
                process.join(0)  # reap it
                self.last_exit = process.exitcode
                self._process_down_since = now
                self._restart_at = now + self._backoff_s
                _logger.warning(
                    "the click aggregator process (pid %s) exited with %s; restarting it in %.0f s",
                    process.pid,
                    process.exitcode,
                    self._backoff_s,
                )
            if now < self._restart_at:
                return
            with contextlib.suppress(OSError):
                self._process_stop.close()
            self._backoff_s = min(RESTART_BACKOFF_S[1], self._backoff_s * 2)
            self.restarts += 1
            self._start_process()
            _logger.warning(
                "the click aggregator process was restarted (pid %s, restart %d)",
                self._process.pid,
                self.restarts,
            )

    def aggregator_health(self) -> dict[str, Any]:
        """Where the aggregator runs and, for a child process, whether it is alive, its pid,
        restarts and last exit code; ``state``: ``idle`` (not started: nobody clicked yet),
        ``running``, or ``down`` (dead, a restart due in ``restartInS``)."""
        out: dict[str, Any] = {"mode": self.mode}
        if self.mode == "thread":
            alive = any(task.running for task in self._tasks)
            return {**out, "state": "running" if alive else "idle", "alive": alive}
        if self.mode != "process":
            return out
        with self._process_lock:
            process = self._process
            alive = process is not None and process.is_alive()
            if process is None:
                state = "idle"
            else:
                state = "running" if alive else "down"
            out.update(
                state=state,
                alive=alive,
                pid=process.pid if alive else None,
                restarts=self.restarts,
                lastExit=self.last_exit,
            )
            if state == "down":
                due = self._restart_at if self._process_down_since is not None else 0.0
                out["restartInS"] = round(max(0.0, due - time.monotonic()), 1)
        return out

    def stop(self, *, flush: bool = True) -> None:
        """Stop the background work; with ``flush``, ship what is left and — unless the
        aggregator is external, whose job that stays — fold it."""
        self._running = False
        for task in self._tasks:
            task.stop(timeout=10)
            self._failures_before += task.failures
        self._tasks.clear()
        with self._process_lock:
            process, stop, self._process, self._process_stop = (
                self._process, self._process_stop, None, None,
            )  # fmt: skip
        if process is not None and stop is not None:
            with contextlib.suppress(OSError):
                stop.close()  # end of file on the child's pipe: it stops after its round
            process.join(timeout=10)
            if process.is_alive():
                process.terminate()
                process.join(timeout=5)
        if flush:
            try:
                if self.mode == "external":
                    self.shipper.flush()
                else:
                    self.flush()
            except Exception:
                _logger.exception("could not flush the click buffer on shutdown")

    def close(self) -> None:
        """Close the databases (they reopen on next use)."""
        self.aggregator.close()
        close = getattr(self.log, "close", None)
        if close is not None:
            close()

    def flush(self) -> int:
        """Ship everything buffered and fold everything logged; returns events folded.

        The folding happens in the calling thread whatever the mode (the stats endpoint
        wants its counts now); several aggregators may fold one log safely."""
        self.shipper.flush()
        return self.aggregator.catch_up()

    def click_stats(self, key: str, start: float, end: float, granularity: str) -> dict[str, Any]:
        """Counts of ``key`` in ``[start, end)`` (see :meth:`ClickAggregator.stats`), after
        folding every click made so far (:meth:`flush`), so an owner sees their clicks at
        once; blocking."""
        tail = "included"
        try:
            self.flush()
        except Unavailable as exc:  # the counts stored are served; the tail is not in them
            self.outage.failed(exc)
            tail = "unavailable"
        else:
            self.outage.ok()
        return {**self.aggregator.stats(key, start, end, granularity), "liveTail": tail}

    def link_totals(self, keys: list[str]) -> dict[str, tuple[int, int, int]]:
        """All-time ``(clicks, human clicks, newest bucket)`` of each clicked key of
        ``keys``, from the counters the stats read, after folding every click made so far
        (as :meth:`click_stats` does); the stored counts if the log is unreachable."""
        try:
            self.flush()
        except Unavailable as exc:
            self.outage.failed(exc)
        else:
            self.outage.ok()
        return self.aggregator.counts.link_totals(keys)

    # -- observability -----------------------------------------------------------------

    def stats(self) -> dict[str, Any]:
        """Buffer, shipper and aggregator counters, and how far the aggregator trails (None,
        with the reason, while the click log's or the counts' server is down)."""
        figures: dict[str, Any] = {
            "buffer": self.buffer.stats(),
            "shipper": self.shipper.stats(),
            "loopErrors": self.loop_errors,
        }
        try:
            consumer = self.aggregator.consumer_state()
            end, lag = self.log.end_offset(), self.log.backlog(consumer["offset"])
            log_figures: dict[str, Any] = {"endOffset": end}
            dead = getattr(self.log, "dead_letter_count", None)
            if dead is not None:
                log_figures["deadLettered"] = dead()
            retention = getattr(self.log, "retention", None)
            if retention is not None:  # a bounded stream: clicks it trimmed unread, its lag
                log_figures.update(retention())
            marks = getattr(self.log, "reset_marks", None)
            if marks is not None:  # a stream Redis can lose: the resets seen, what they took
                log_figures["resets"] = self.log.resets  # type: ignore[attr-defined]
                log_figures["lostToReset"] = self._lost_to_reset(marks())
        except Unavailable as exc:
            return {**figures, "log": {"endOffset": None, "unavailable": str(exc)},
                    "aggregator": {"mode": self.mode, "unavailable": str(exc)}}  # fmt: skip
        return {
            **figures,
            "log": log_figures,
            "outage": self.outage.stats(),
            "aggregator": {
                **self.aggregator_health(),
                "nice": self.aggregator_nice if self.mode == "process" else None,
                "offset": consumer["offset"],
                "lagEvents": lag,
                "counted": consumer["counted"],
                "duplicatesSkipped": consumer["duplicates"],
            },
        }

    def _lost_to_reset(self, marks: dict[str, int]) -> int:
        """Clicks this process shipped into a stream that was then lost (Redis restarted
        empty) and that were never counted: for each producer, the sequence numbers below
        its reset mark less those in its counted ranges."""
        lost = 0
        for producer, mark in marks.items():
            with self.aggregator.counts.fold(self.aggregator.name) as batch:
                ranges = batch.seen_ranges(producer)
            last = mark - 1  # sequence numbers start at 1
            counted = sum(min(hi, last) - lo + 1 for lo, hi in ranges if lo <= last)
            lost += max(0, last - counted)
        return lost


class _PipeStop:
    """The child's stop signal: the parent closes its end of a pipe (or dies)."""

    def __init__(self, conn: Any) -> None:
        self._conn = conn

    def is_set(self) -> bool:
        return bool(self._conn.poll())

    def wait(self, timeout: float) -> bool:
        return bool(self._conn.poll(timeout))


def consumer_name() -> str:
    """This process's name in the click stream's consumer group: host and pid."""
    return f"{socket.gethostname()}-{os.getpid()}"


def run_aggregator(
    stats_path: str,
    log_path: str,
    secret: bytes,
    interval_s: float,
    parent_pid: int | None,
    stop: Any,
    nice: int = 0,
    consumer: str | None = None,
    shared_outage: SharedOutage | None = None,
) -> None:
    """The aggregator as its own process: fold the log until told to stop or orphaned.

    ``stats_path`` is the SQLite counts' path or a counts URL (``postgresql://…``: the
    fleet's counts). ``log_path`` is the SQLite click log's path or a click log URL; a stream with a
    consumer group (``redis://``) is consumed as ``consumer`` (default: host and pid).
    ``nice`` lowers this process's CPU priority first (``os.nice``); ``parent_pid``
    None means no parent to outlive (the stand-alone ``python -m`` form). ``stop`` is an
    event (``is_set``/``wait``) or the read end of the parent's stop pipe. An unavailable
    stream is an outage, logged once when it starts and once when it ends — once for this
    process and its parent when the parent passes its ``shared_outage``."""
    if hasattr(stop, "poll"):
        stop = _PipeStop(stop)
    terminated: list[bool] = []
    if parent_pid is not None:
        # A child stops when its parent says so (``stop``) or dies: a Ctrl-C in the
        # terminal reaches the parent too, which stops this process in order. SIGINT
        # was blocked while this process started (see ``_start_process``), so one
        # arriving before this line is dropped here instead of raising KeyboardInterrupt.
        # SIGTERM ends the loop after the current round (the handler only sets a flag:
        # taking ``stop``'s lock inside a handler could deadlock on the loop's own wait).
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, lambda *_: terminated.append(True))
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})
    if nice > 0:
        with contextlib.suppress(OSError, AttributeError):
            os.nice(nice)
    from lookup.shortener.analytics.clicklog.sqlite import SqliteClickLog

    click_log = open_click_log(log_path) if "://" in log_path else SqliteClickLog(log_path)
    grouped = hasattr(click_log, "take")
    aggregator = ClickAggregator(
        open_click_counts(stats_path) if "://" in stats_path else stats_path,
        click_log,
        enricher=ClickEnricher(secret),
        consumer=(consumer or consumer_name()) if grouped else None,
        claim_idle_s=settings.get("clicks_claim_idle"),
        fold_delay_s=settings.get("clicks_fold_delay"),
    )
    outage = OutageLog(
        "the click stream" if grouped else "the click log", _logger, shared=shared_outage
    )
    while (
        not stop.is_set() and not terminated and (parent_pid is None or os.getppid() == parent_pid)
    ):
        try:
            busy = aggregator.step()
        except Unavailable as exc:
            outage.failed(exc)
            busy = 0
        except Exception:
            _logger.exception("the aggregator process failed a round; it will run again")
            busy = 0
        else:
            outage.ok()
        if not busy:
            stop.wait(interval_s)
    aggregator.close()
    close_log = getattr(click_log, "close", None)
    if close_log is not None:
        close_log()


#: The seams' embedded backends, imported when first named here (their ports import none).
_BACKENDS = {
    "MemoryClickLog": "lookup.shortener.analytics.clicklog.memory",
    "SqliteClickLog": "lookup.shortener.analytics.clicklog.sqlite",
    "SqliteClickCounts": "lookup.shortener.analytics.clickcounts.sqlite",
}
__getattr__, __dir__ = lazy_exports(__name__, _BACKENDS)

__all__ = [
    "AGENT_KINDS",
    "AGGREGATOR_MODES",
    "BOT",
    "GRAINS",
    "HUMAN",
    "LINK_PREVIEW_AGENTS",
    "MAX_RANGE_S",
    "PREVIEW",
    "ClickAggregator",
    "ClickAnalytics",
    "ClickBuffer",
    "ClickCounts",
    "ClickEnricher",
    "ClickEvent",
    "ClickLog",
    "ClickShipper",
    "LogRecord",
    "MemoryClickLog",
    "RawClick",
    "SqliteClickCounts",
    "SqliteClickLog",
    "classify_agent",
    "consumer_name",
    "country_code",
    "event_dims",
    "open_click_counts",
    "open_click_log",
    "referrer_host",
    "run_aggregator",
]
