"""The shipper: moves clicks from the buffer to the click log in batches, in the background.

It runs in its own thread, never on the event loop, but in the redirect server's
process — so each microsecond it spends per click is taken from the redirects (the
GIL). It therefore does the least it can: each round takes up to ``batch_size`` clicks,
turns each into a :class:`~lookup.shortener.analytics.events.RawClick` (an event id,
the cached keyed hash of the IP, the headers as they came) and appends the batch to
the log in one write. Parsing user agents, classifying bots and hashing visitors is
the aggregator's job, in its own process. If the log refuses, the same batch — same event ids —
is retried with back-off; the buffer meanwhile keeps filling and, once full, drops
new clicks instead of slowing the redirect. A retry after a write whose
acknowledgement was lost puts the batch in the log twice: that is at-least-once
delivery, and the aggregator's de-duplication by event id absorbs it. A log that is
:class:`~lookup.errors.Unavailable` (its server down) is an outage, logged once at its
start and once at its end (:class:`~lookup.shortener.analytics.outage.OutageLog`).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from lookup.errors import Unavailable
from lookup.shortener.analytics.buffer import ClickBuffer
from lookup.shortener.analytics.clicklog import ClickLog
from lookup.shortener.analytics.events import ClickEnricher, RawBatch
from lookup.shortener.analytics.outage import OutageLog

log = logging.getLogger("lookup.shortener.analytics")


class ClickShipper:
    """Buffer → raw click records → click log, batch by batch (see the module docstring)."""

    def __init__(
        self,
        buffer: ClickBuffer,
        click_log: ClickLog,
        enricher: ClickEnricher,
        *,
        batch_size: int = 1_000,
        max_backoff_s: float = 5.0,
        clock: Callable[[], float] = time.monotonic,
        outage: OutageLog | None = None,
        on_shipped: Callable[[RawBatch], None] | None = None,
    ) -> None:
        self.buffer = buffer
        #: Called with each batch once the log has it (webhooks' clicks); its failure is
        #: logged and counted, never retried into the log.
        self.on_shipped = on_shipped
        self.hook_errors = 0
        self.log = click_log
        self.enricher = enricher
        self.batch_size = batch_size
        self.max_backoff_s = max_backoff_s
        self.clock = clock
        self.outage = outage or OutageLog("the click log", log)
        self._pending: RawBatch | None = None
        self._lock = threading.Lock()
        self._failures = 0
        self._retry_at = 0.0
        self.shipped = 0
        self.batches = 0
        self.failed_writes = 0

    @property
    def pending(self) -> int:
        """Events taken from the buffer but not yet acknowledged by the log."""
        return 0 if self._pending is None else len(self._pending)

    def ship_once(self) -> int:
        """Ship one batch (retrying a failed one first); returns how many events were written.

        Raises nothing: a failing log is counted and retried later with back-off.
        """
        with self._lock:
            if self._pending and self.clock() < self._retry_at:
                return 0
            if not self._pending:
                first, clicks = self.buffer.take(self.batch_size)
                if not clicks:
                    return 0
                self._pending = self.enricher.raw_batch(self.buffer.origin, first, clicks)
            batch = self._pending
            try:
                self.log.append(batch)
            except Exception as exc:
                self.failed_writes += 1
                self._failures += 1
                delay = min(self.max_backoff_s, 0.05 * 2 ** min(self._failures, 10))
                self._retry_at = self.clock() + delay
                if isinstance(exc, Unavailable):
                    self.outage.failed(exc)  # logged once per outage
                elif self.failed_writes <= 5 or self.failed_writes % 100 == 0:
                    log.warning("the click log refused a batch; retrying", exc_info=True)
                return 0
            self.outage.ok()
            self._pending = None
            self._failures = 0
            self.shipped += len(batch)
            self.batches += 1
            if self.on_shipped is not None:
                try:
                    self.on_shipped(batch)
                except Exception:
                    self.hook_errors += 1
                    log.exception("the shipped-clicks hook failed; the clicks are in the log")
            return len(batch)

    def flush(self) -> int:
        """Ship until the buffer is empty or the log refuses; returns events written."""
        total = 0
        while True:
            n = self.ship_once()
            total += n
            if n == 0:
                return total

    def stats(self) -> dict[str, int]:
        """Shipped events and batches, failed writes, events awaiting a retry."""
        return {
            "shipped": self.shipped,
            "batches": self.batches,
            "failedWrites": self.failed_writes,
            "pending": self.pending,
        }
