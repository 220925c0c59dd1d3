"""The crawl loop's seams for a fleet worker: where the embedded crawl and a worker differ.

The embedded crawl (:class:`lookup.crawler.engine.Crawler`) uses these defaults: one
partition, every admitted URL into its own frontier, done when its frontier is.
:class:`lookup.crawler.worker.FleetWorker` overrides them to admit only its partitions'
URLs, sync its partition leases every turn, ask its lease before each request, finish
when the whole fleet has, and drop a partition whose write the store refused.
"""

from __future__ import annotations

import logging
from typing import Any

from lookup.crawler.frontier import Frontier, FrontierEntry, HostTurn
from lookup.crawler.outcomes import Link
from lookup.crawler.output import EventLogWriter
from lookup.crawler.partitions import FencedOut

__all__ = ["CrawlHooks"]

log = logging.getLogger("lookup.crawler")


class CrawlHooks:
    """Default (embedded, one-process) behaviour of the crawl loop's fleet seams."""

    frontier: Frontier
    events: EventLogWriter
    _seq: int  # the last discovery number given

    def _enqueue(self, entry: FrontierEntry, address: str) -> None:
        """An admitted URL joins the frontier."""
        self.frontier.add(entry, address)

    def _partition(self, address: str | Exception | None) -> int:
        """The partition of a host on ``address`` (the embedded crawl has one: 0)."""
        return 0

    def _owns(self, address: str) -> bool:
        """Is a host on ``address`` this process's to fetch (the embedded crawl: always)?"""
        return True

    def _admission_order(self, links: list[Link]) -> list[Link]:
        """The order a page's links are admitted in (the embedded crawl: as found)."""
        return links

    def _next_seq(self, url: str) -> int:
        """The discovery number of ``url``, admitted now (the frontier's order)."""
        self._seq += 1
        return self._seq

    def _links_admitted(self) -> None:
        """A page's links are all admitted (the embedded crawl: nothing to do)."""

    async def _tick(self) -> None:
        """Once per turn of the crawl loop."""

    def _next_lease(self, now: float) -> HostTurn | None:
        """The next request's permission."""
        return self.frontier.lease(now)

    def _finished(self) -> str | None:
        """Why the crawl is over once nothing is in flight (None: not over yet)."""
        if self.frontier.has_due_work():
            return None
        return "waiting-robots" if len(self.frontier) else "done"

    def _emit_events(self, events: list[dict[str, Any]]) -> None:
        """A page's events, before its commit: the embedded crawl appends them to its log
        (``(urlHash, contentHash)`` makes a repeat after a crash harmless)."""
        for event in events:
            self.events.append(event)

    def _commit_events(self, events: list[dict[str, Any]]) -> None:
        """A page's events, inside its commit (the fleet's outbox; embedded: nothing)."""

    def _fenced_out(self, lease: HostTurn, exc: FencedOut) -> None:
        """The store refused a write of this lease's partition: a newer owner holds it."""
        log.error("write for %s refused: %s", lease.host, exc)
