"""Applying the operator's controls inside a crawler process, within a second.

A :class:`Steering` polls its :class:`~lookup.crawler.controls.CrawlControls` every
``interval`` seconds (0.5 s by default: a command takes effect within one second of
being issued), folds the new commands into its :class:`ControlState` and applies them
to the crawl:

- the frontier's ``held`` predicate is the state's :meth:`ControlState.holds`, so a
  blocked or paused host (or every host, when the crawl is paused) is never leased
  again — not for a page, not for robots.txt, not for a robots redirect hop;
- on a block, the queued URLs it covers leave the frontier and are settled as cut by
  the rule ``operator-block``; admission (:meth:`check_url`) cuts new ones the same
  way, and the frontier's ``refuses`` predicate turns away anything that still comes up
  for a lease (a recrawl, a new cycle re-admitting a deferred URL, a fleet takeover)
  before a request is made (:meth:`settle_turned_away` cuts those);
- a delay sets the host's floor in the frontier (it replaces ``min_delay``; robots.txt's
  Crawl-delay and a 429/503 back-off still apply on top); ``set-delay *`` is the global
  per-host ceiling: every host's floor is raised to it, its own delay included;
- block detection (:mod:`lookup.crawler.blocking`): the crawl loop hands every answer to
  :meth:`Steering.answered`; a host whose latest answers are mostly 403/429/CAPTCHA
  pages is flagged (a warning in the log, and on the health page) and its floor is
  multiplied by ``crawl_block_slowdown`` until it is cleared;
- the process's metrics (:mod:`lookup.crawler.metrics`) are written next to the crawl
  every :data:`METRICS_EVERY` seconds and when it stops.
- ``recrawl`` puts a known URL back at the head of its host's queue (level 0) or admits
  an unknown one as a seed.

After applying, it acknowledges the version (worker name, time) in the controls log.
The last ``recrawl`` acted on is kept in the crawl's meta (``controls_version.<worker>``)
so a resumed crawl does not recrawl again what it was asked to recrawl before the stop.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import TYPE_CHECKING

from lookup.crawler.blocking import BlockPolicy, BlockWindow, refused
from lookup.crawler.controls import (
    ControlRecord,
    ControlState,
    CrawlControls,
    controls_url,
    open_crawl_controls,
)
from lookup.crawler.metrics import CrawlMetrics, metrics_file
from lookup.crawler.state import CutRecord
from lookup.kit.urlnorm import host_of, url_hash

if TYPE_CHECKING:
    from lookup.crawler.engine import Crawler

__all__ = ["BLOCK_RULE", "METRICS_EVERY", "Steering"]

log = logging.getLogger("lookup.crawler.steering")

#: The cut rule of a URL an operator's block refused.
BLOCK_RULE = "operator-block"
#: Seconds between two writes of the process's metrics file.
METRICS_EVERY = 2.0


class Steering:
    """The controls of one crawl, applied to one crawler (``worker`` names it in acks)."""

    def __init__(
        self,
        crawler: Crawler,
        controls: CrawlControls,
        *,
        worker: str = "crawl",
        interval: float = 0.5,
        blocks: BlockPolicy | None = None,
    ) -> None:
        self.crawler = crawler
        self.controls = controls
        self.worker = worker
        self.interval = interval
        self.state = ControlState()
        self._meta_key = f"controls_version.{worker}"
        self._recrawl_done = int(crawler.store.get_meta(self._meta_key, 0) or 0)
        self._pending: list[str] = []
        self.blocks = BlockWindow(blocks or BlockPolicy.from_settings())
        self.metrics = CrawlMetrics()
        self._metrics_path = metrics_file(crawler.out, worker)
        self._metrics_at = 0.0
        crawler.frontier.held = self.state.holds
        crawler.frontier.delay_floor = self.floor
        crawler.frontier.refuses = lambda entry: self._why_blocked(entry.url) is not None

    @classmethod
    def open(cls, crawler: Crawler, store_url: str, worker: str) -> Steering:
        """The controls of the crawl at ``store_url``, applied once before any request."""
        steering = cls(crawler, open_crawl_controls(controls_url(store_url)), worker=worker)
        steering.poll()
        return steering

    # -- polling ------------------------------------------------------------------------
    def poll(self) -> int:
        """Read and apply new commands; returns how many there were."""
        try:
            new = self.controls.since(self.state.version)
        except Exception:  # noqa: BLE001 - the controls store is down: keep the last state
            log.warning("reading the crawl controls failed; keeping version %d",
                        self.state.version, exc_info=True)  # fmt: skip
            return 0
        self.settle_turned_away()
        for rec in new:
            self.state.apply(rec)
            self._apply(rec)
        if new:
            self.metrics.controls_version.set(self.state.version)
            self.metrics.global_delay.set(self.state.ceiling or 0.0)
            self.crawler.frontier.wake_held()
            self.crawler._wake.set()
            with contextlib.suppress(Exception):
                self.controls.acknowledge(self.worker, self.state.version)
        return len(new)

    async def run(self) -> None:
        """Poll until cancelled; admit the URLs asked for by ``recrawl``."""
        while True:
            self.poll()
            if self._pending:
                urls, self._pending = self._pending, []
                await self.crawler._admit_many([(u, 0, None, "page", 0) for u in urls])
            if time.monotonic() - self._metrics_at >= METRICS_EVERY:
                self.write_metrics()
            await asyncio.sleep(self.interval)

    def close(self) -> None:
        """Settle what the frontier turned away, then let the controls store go."""
        try:
            self.settle_turned_away()
        finally:
            self.write_metrics()
            self.controls.close()

    def write_metrics(self) -> None:
        """Write the process's metrics file (a failure is logged, never fatal)."""
        self._metrics_at = time.monotonic()
        try:
            self.metrics.write(self._metrics_path)
        except OSError:
            log.warning("writing %s failed", self._metrics_path, exc_info=True)

    # -- the pause between two requests to a host ------------------------------------------
    def floor(self, host: str) -> float | None:
        """The host's least pause (the frontier's ``delay_floor``): the operator's delay for
        it, raised to the global ceiling, times the slow-down while block detection flags
        it (None: the crawl's own ``min_delay``)."""
        frontier = self.crawler.frontier
        base = frontier.politeness.min_delay
        controls = self.state.floor_for(host, base)
        if not self.blocks.flagged(host):
            return controls
        hq = frontier.hosts.get(host)
        crawl_delay = (hq.crawl_delay if hq is not None else None) or 0.0
        return self.blocks.slowed(host, max(base if controls is None else controls, crawl_delay))

    def answered(
        self, host: str, kind: str, status: int | None, outcome: str, wait: float | None
    ) -> None:
        """One answer came back (its outcome decided): count it, and feed block detection."""
        self.metrics.fetched(kind, outcome, wait)
        was = refused(kind, status, outcome)
        if was is None:
            return
        change = self.blocks.observe(host, was, time.time())
        if change is None:
            return
        self.metrics.flagged.set(len(self.blocks.flags()))
        if change:
            flag = self.blocks.flag(host)
            self.metrics.flags.inc()
            self.crawler.frontier.stretch_pause(host)
            log.warning(
                "host %s flagged for review: %s; slowing it %g-fold to %.3f s between requests",
                host, flag.reason() if flag else "", self.blocks.policy.slowdown,
                self.floor(host) or 0.0,
            )  # fmt: skip
        else:
            log.info("host %s no longer flagged: most of its latest answers are pages", host)

    # -- what the crawl loop asks ---------------------------------------------------------
    def check_url(self, url: str) -> tuple[str, str] | None:
        """The admission rule: ``(rule, detail)`` when a block covers ``url``."""
        why = self._why_blocked(url)
        return None if why is None else (BLOCK_RULE, why)

    def settle_turned_away(self) -> None:
        """Cut the URLs the frontier turned away since the last call (a pattern's block)."""
        c = self.crawler
        entries, c.frontier.turned_away = c.frontier.turned_away, []
        if not entries:
            return
        with c.store.transaction():
            for e in entries:
                self._cut(e.url, e.host, self._why_blocked(e.url) or "blocked by the operator")

    # -- applying -------------------------------------------------------------------------
    def _why_blocked(self, url: str) -> str | None:
        host_block = self.state.host_blocked(host_of(url))
        if host_block is not None:
            return f"the operator blocked host {host_block} (control v{self.state.version})"
        pattern = self.state.url_blocked(url)
        if pattern is not None:
            return f"the operator blocked {pattern} (control v{self.state.version})"
        return None

    def _cut(self, url: str, host: str, why: str) -> None:
        c = self.crawler
        c.store.settle_url(url_hash(url), "cut", f"trap:{BLOCK_RULE}", why)
        c.store.add_cut(CutRecord(url, host, BLOCK_RULE, why))
        c._counts["cut"] += 1

    def _drop_blocked(self) -> None:
        """Take every queued URL a block covers out of the frontier, settled as cut."""
        c = self.crawler
        dropped = []
        for h in list(c.frontier.hosts):
            dropped += c.frontier.remove_host_entries(h, lambda e: self._why_blocked(e.url) is None)
        if dropped:
            with c.store.transaction():
                for e in dropped:
                    self._cut(e.url, e.host, self._why_blocked(e.url) or "blocked")
            log.info("controls v%d: %d queued URLs cut", self.state.version, len(dropped))

    def _apply(self, rec: ControlRecord) -> None:
        log.info("control v%d: %s %s %s", rec.version, rec.command, rec.target,
                 "" if rec.value is None else rec.value)  # fmt: skip
        if rec.command in ("block-host", "block-pattern"):
            self._drop_blocked()
        elif rec.command == "set-delay":
            for host in list(self.crawler.frontier.hosts):
                self.crawler.frontier.stretch_pause(host)
        elif rec.command == "recrawl" and rec.version > self._recrawl_done:
            self._recrawl(rec.target)
            self._recrawl_done = rec.version
            self.crawler.store.set_meta(self._meta_key, rec.version)

    def _recrawl(self, url: str) -> None:
        c = self.crawler
        if self._why_blocked(url) is not None:
            return
        row = c.store.url(url_hash(url))
        if row is None:
            self._pending.append(url)  # admitted (resolving its host) by run()
            return
        if row.state in ("queued", "leased"):
            return  # already on its way
        hosts = {h.host: h for h in c.store.hosts() if h.host == row.host}
        address = hosts[row.host].address if row.host in hosts else None
        if not address:
            self._pending.append(url)
            return
        if not c._owns(address):
            return  # a fleet worker acts on its own partitions' URLs; the owner does this one
        with c.store.transaction():
            c.store.requeue_due(row.url_hash, level=0, cycle=c.cycle)
        entry = c._entry(row)
        entry.level, entry.attempts = 0, 0
        c.frontier.add(entry, address, front=True)
