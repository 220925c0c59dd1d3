"""Click analytics for the shortener — never on the redirect path.

The pipeline, as the seed draws it::

    redirect --offer--> ClickBuffer --ClickShipper--> ClickLog --ClickAggregator--> counts
    (no I/O, no lock)   (bounded; drops   (thread: enrich,   (append-only,  (thread: dedup by id,
                         when full)        batch, retry)      offsets)       minute + hour, HLL)

* :class:`ClickBuffer` — what ``service.on_click`` calls; a ``deque.append`` or a counted drop;
* :class:`ClickShipper` — drains batches, parses user agents, hashes IPs, appends to the log;
* :class:`ClickLog` — the stream interface; :class:`SqliteClickLog` (``clicklog.sqlite3``)
  is the embedded default, :class:`MemoryClickLog` the in-memory one; Kafka or Redis
  Streams fit the same four methods;
* :class:`ClickAggregator` — per-key per-minute and per-hour counts by country, device,
  OS, browser and referrer, humans apart from bots and link-preview fetchers, and a
  HyperLogLog per key for unique visitors (``clickstats.sqlite3``);
* :class:`ClickAnalytics` — wires them to a :class:`~lookup.shortener.ShortenerService`
  and runs the shipper thread and the aggregator (a thread, or — what ``lookup serve``
  does — a separate process, started with the first shipped batch, so that the
  aggregation's CPU is spent on another core and not under the redirect process's GIL;
  the seed's "stream job" is a separate service too).
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lookup.kit.ids import load_or_create_secret
from lookup.shortener.analytics.aggregate import (
    GRAINS,
    MAX_RANGE_S,
    ClickAggregator,
    event_dims,
)
from lookup.shortener.analytics.buffer import ClickBuffer
from lookup.shortener.analytics.events import (
    AGENT_KINDS,
    BOT,
    HUMAN,
    LINK_PREVIEW_AGENTS,
    PREVIEW,
    ClickEnricher,
    ClickEvent,
    classify_agent,
    country_code,
    referrer_host,
)
from lookup.shortener.analytics.log import ClickLog, MemoryClickLog, SqliteClickLog
from lookup.shortener.analytics.shipper import ClickShipper

if TYPE_CHECKING:
    from lookup.shortener.service import ShortenerService

log = logging.getLogger("lookup.shortener.analytics")


class ClickAnalytics:
    """Buffer, shipper, click log and aggregator for one shortener data directory.

    ``start()`` runs the shipper and the aggregator in two daemon threads; ``stop()``
    ends them and ships what is left. ``flush()`` ships and aggregates everything now
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
        aggregator_process: bool = False,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.dir = Path(directory)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.buffer = ClickBuffer(capacity)
        self.log: ClickLog = click_log or SqliteClickLog(self.dir / "clicklog.sqlite3")
        self.enricher = ClickEnricher(secret)
        self.shipper = ClickShipper(self.buffer, self.log, self.enricher, batch_size=batch_size)
        self.aggregator = ClickAggregator(self.dir / "clickstats.sqlite3", self.log, clock=clock)
        self.ship_interval_s = ship_interval_s
        self.aggregate_interval_s = aggregate_interval_s
        self.aggregator_process = aggregator_process and isinstance(self.log, SqliteClickLog)
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._process: Any = None
        self._process_stop: Any = None
        self.loop_errors = 0

    @classmethod
    def for_service(cls, service: ShortenerService, **options: Any) -> ClickAnalytics:
        """Analytics in the service's directory, keyed by the service's secret."""
        secret = load_or_create_secret(service.dir / "secret.key")
        options.setdefault("clock", service.clock)
        return cls(service.dir, secret, **options)

    def attach(self, service: ShortenerService) -> ClickAnalytics:
        """Make the buffer the service's click hook and publish this as ``service.analytics``."""
        service.on_click = self.buffer.offer
        service.analytics = self
        return self

    # -- background --------------------------------------------------------------------

    def start(self) -> None:
        """Start the shipper thread and the aggregator thread or process (idempotent)."""
        if self._threads:
            return
        self._stop.clear()
        loops: list[tuple[str, Callable[[], int], float]] = [
            ("click-shipper", self._ship_round, self.ship_interval_s)
        ]
        if not self.aggregator_process:
            loops.append(("click-aggregator", self.aggregator.step, self.aggregate_interval_s))
        for name, work, interval in loops:
            thread = threading.Thread(
                target=self._loop, args=(work, interval), name=name, daemon=True
            )
            thread.start()
            self._threads.append(thread)

    def _ship_round(self) -> int:
        n = self.shipper.ship_once()
        if n and self.aggregator_process and self._process is None and not self._stop.is_set():
            self._start_process()  # lazily: a server nobody clicks needs no second process
        return n if n >= self.shipper.batch_size else 0  # a full batch: go again at once

    def _loop(self, work: Callable[[], int], interval: float) -> None:
        while not self._stop.is_set():
            try:
                busy = work()
            except Exception:
                self.loop_errors += 1
                log.exception("analytics background work failed; it will run again")
                busy = 0
            if not busy:
                self._stop.wait(interval)

    def _start_process(self) -> None:
        assert isinstance(self.log, SqliteClickLog)
        context = multiprocessing.get_context("spawn")  # never fork a threaded server
        self._process_stop = context.Event()
        self._process = context.Process(
            target=run_aggregator,
            args=(
                str(self.aggregator.path),
                self.log.path,
                self.aggregate_interval_s,
                os.getpid(),
                self._process_stop,
            ),
            name="click-aggregator",
            daemon=True,
        )
        self._process.start()

    def stop(self, *, flush: bool = True) -> None:
        """Stop the background work; with ``flush``, ship and aggregate what is left."""
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=10)
        self._threads.clear()
        if self._process is not None and self._process_stop is not None:
            self._process_stop.set()
            self._process.join(timeout=10)
            if self._process.is_alive():
                self._process.terminate()
                self._process.join(timeout=5)
            self._process = None
        if flush:
            try:
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
        """Ship everything buffered and fold everything logged; returns events folded."""
        self.shipper.flush()
        return self.aggregator.catch_up()

    # -- observability -----------------------------------------------------------------

    def stats(self) -> dict[str, Any]:
        """Buffer, shipper and aggregator counters, and how far the aggregator trails."""
        consumer = self.aggregator.consumer_state()
        return {
            "buffer": self.buffer.stats(),
            "shipper": self.shipper.stats(),
            "log": {"endOffset": self.log.end_offset()},
            "aggregator": {
                "mode": "process" if self.aggregator_process else "thread",
                "offset": consumer["offset"],
                "lagEvents": self.log.backlog(consumer["offset"]),
                "counted": consumer["counted"],
                "duplicatesSkipped": consumer["duplicates"],
            },
            "loopErrors": self.loop_errors,
        }


def run_aggregator(
    stats_path: str, log_path: str, interval_s: float, parent_pid: int, stop: Any
) -> None:
    """The aggregator as its own process: fold the log until told to stop or orphaned."""
    aggregator = ClickAggregator(stats_path, SqliteClickLog(log_path))
    while not stop.is_set() and os.getppid() == parent_pid:
        try:
            busy = aggregator.step()
        except Exception:
            log.exception("the aggregator process failed a round; it will run again")
            busy = 0
        if not busy:
            stop.wait(interval_s)
    aggregator.close()


__all__ = [
    "AGENT_KINDS",
    "BOT",
    "GRAINS",
    "HUMAN",
    "LINK_PREVIEW_AGENTS",
    "MAX_RANGE_S",
    "PREVIEW",
    "ClickAggregator",
    "ClickAnalytics",
    "ClickBuffer",
    "ClickEnricher",
    "ClickEvent",
    "ClickLog",
    "ClickShipper",
    "MemoryClickLog",
    "SqliteClickLog",
    "classify_agent",
    "country_code",
    "event_dims",
    "referrer_host",
    "run_aggregator",
]
