"""Click analytics for the shortener — never on the redirect path.

The pipeline, as the seed draws it::

    redirect --offer--> ClickBuffer --ClickShipper--> ClickLog --ClickAggregator--> counts
    (a tuple; no I/O,   (bounded; drops  (thread: ids, IP  (append-   (own process: enrich,
     no lock)            when full)       hash, batch)      only)      dedup, minute/hour, HLL)

* :class:`ClickBuffer` — what ``service.on_click`` calls; a ``deque.append`` or a counted drop;
* :class:`ClickShipper` — a thread in the redirect server: drains batches, writes them to
  the log as :class:`RawClick` s (headers unparsed, the IP replaced by its keyed hash) —
  the only per-click work the redirect server's process does besides the append;
* :class:`ClickLog` — the stream interface; :class:`SqliteClickLog` (``clicklog.sqlite3``)
  is the embedded default, :class:`MemoryClickLog` the in-memory one; Kafka or Redis
  Streams fit the same four methods;
* :class:`ClickAggregator` — parses user agents (LRU on the strings), tells people from
  bots and link-preview fetchers, and keeps per-key per-minute and per-hour counts by
  country, device, OS, browser and referrer, and a HyperLogLog per key for unique
  visitors in a :class:`ClickCounts` store (:class:`SqliteClickCounts`,
  ``clickstats.sqlite3``; :func:`open_click_counts`);
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
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import os
import signal
import socket
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lookup import settings
from lookup.errors import Unavailable
from lookup.kit.background import BackgroundTask
from lookup.shortener.analytics.aggregate import (
    GRAINS,
    MAX_RANGE_S,
    ClickAggregator,
    event_dims,
)
from lookup.shortener.analytics.buffer import ClickBuffer
from lookup.shortener.analytics.counts import ClickCounts, SqliteClickCounts, open_click_counts
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
from lookup.shortener.analytics.log import (
    ClickLog,
    LogRecord,
    MemoryClickLog,
    SqliteClickLog,
    open_click_log,
)
from lookup.shortener.analytics.shipper import ClickShipper

log = logging.getLogger("lookup.shortener.analytics")

#: Where the aggregator runs (see the module docstring).
AGGREGATOR_MODES = ("thread", "process", "external")


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
    ) -> None:
        if aggregator not in AGGREGATOR_MODES:
            raise ValueError(f"aggregator must be one of {AGGREGATOR_MODES}, not {aggregator!r}")
        self.dir = Path(directory)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.buffer = ClickBuffer(capacity)
        self.log: ClickLog = click_log or SqliteClickLog(self.dir / "clicklog.sqlite3")
        self.enricher = ClickEnricher(secret)
        self._secret = secret
        self.shipper = ClickShipper(self.buffer, self.log, self.enricher, batch_size=batch_size)
        counts = click_counts or SqliteClickCounts(self.dir / "clickstats.sqlite3")
        grouped = hasattr(self.log, "take")  # a stream with a consumer group (Redis)
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
        self._process_stop: Any = None
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
                "click-shipper", self._ship_round, self.ship_interval_s, logger=log, drain=True
            )
        )
        if self.mode == "thread":
            self._tasks.append(
                BackgroundTask(
                    "click-aggregator",
                    self.aggregator.step,
                    self.aggregate_interval_s,
                    logger=log,
                    drain=True,
                )
            )
        for task in self._tasks:
            task.start()

    def _ship_round(self) -> int:
        n = self.shipper.ship_once()
        if n and self.aggregator_process and self._process is None and self._running:
            self._start_process()  # lazily: a server nobody clicks needs no second process
        return n if n >= self.shipper.batch_size else 0  # a full batch: go again at once

    def _start_process(self) -> None:
        locator = getattr(self.log, "locator", None)
        log_ref = locator() if locator is not None else self.log.path  # type: ignore[attr-defined]
        context = multiprocessing.get_context("spawn")  # never fork a threaded server
        self._process_stop = context.Event()
        self._process = context.Process(
            target=run_aggregator,
            args=(
                str(self.aggregator.path),
                log_ref,
                self._secret,
                self.aggregate_interval_s,
                os.getpid(),
                self._process_stop,
                self.aggregator_nice,
            ),
            name="click-aggregator",
            daemon=True,
        )
        # The child inherits this thread's signal mask: SIGINT and SIGTERM stay blocked
        # until run_aggregator has its handlers, so an early Ctrl-C prints no traceback.
        mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
        try:
            self._process.start()
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)

    def stop(self, *, flush: bool = True) -> None:
        """Stop the background work; with ``flush``, ship what is left and — unless the
        aggregator is external, whose job that stays — fold it."""
        self._running = False
        for task in self._tasks:
            task.stop(timeout=10)
            self._failures_before += task.failures
        self._tasks.clear()
        if self._process is not None and self._process_stop is not None:
            self._process_stop.set()
            self._process.join(timeout=10)
            if self._process.is_alive():
                self._process.terminate()
                self._process.join(timeout=5)
            self._process = None
        if flush:
            try:
                if self.mode == "external":
                    self.shipper.flush()
                else:
                    self.flush()
            except Exception:
                log.exception("could not flush the click buffer on shutdown")

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
        self.flush()
        return self.aggregator.stats(key, start, end, granularity)

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
        except Unavailable as exc:
            return {**figures, "log": {"endOffset": None, "unavailable": str(exc)},
                    "aggregator": {"mode": self.mode, "unavailable": str(exc)}}  # fmt: skip
        return {
            **figures,
            "log": log_figures,
            "aggregator": {
                "mode": self.mode,
                "nice": self.aggregator_nice if self.mode == "process" else None,
                "offset": consumer["offset"],
                "lagEvents": lag,
                "counted": consumer["counted"],
                "duplicatesSkipped": consumer["duplicates"],
            },
        }


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
) -> None:
    """The aggregator as its own process: fold the log until told to stop or orphaned.

    ``stats_path`` is the SQLite counts' path or a counts URL (``postgresql://…``: the
    fleet's counts). ``log_path`` is the SQLite click log's path or a click log URL; a stream with a
    consumer group (``redis://``) is consumed as ``consumer`` (default: host and pid).
    ``nice`` lowers this process's CPU priority first (``os.nice``); ``parent_pid``
    None means no parent to outlive (the stand-alone ``python -m`` form)."""
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
    while (
        not stop.is_set()
        and not terminated
        and (parent_pid is None or os.getppid() == parent_pid)
    ):
        try:
            busy = aggregator.step()
        except Exception:
            log.exception("the aggregator process failed a round; it will run again")
            busy = 0
        if not busy:
            stop.wait(interval_s)
    aggregator.close()
    close_log = getattr(click_log, "close", None)
    if close_log is not None:
        close_log()


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
