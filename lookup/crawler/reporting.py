"""What a running crawl reports: its live progress and the final report (a mixin of
:class:`lookup.crawler.engine.Crawler`, which owns the counters, frontier and store)."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from typing import TYPE_CHECKING, Any

from lookup.crawler.config import CrawlProgress, CrawlReport
from lookup.crawler.frontier import Frontier
from lookup.crawler.outcomes import FAILED
from lookup.crawler.seen import SeenUrls
from lookup.crawler.state import CrawlWriter


class CrawlReporting:
    """:meth:`progress` while the crawl runs, :meth:`report` when it stops."""

    _counts: Counter[str]
    _t0: float
    _tasks: set[asyncio.Task[None]]
    frontier: Frontier
    store: CrawlWriter
    seen: SeenUrls
    cycle: int
    resumed_leases: int

    if TYPE_CHECKING:  # the render tier's counters (crawler/render.py:PageRendering)

        def render_summary(self) -> dict[str, Any]: ...

    def _ready_wall(self, ready_mono: float) -> float:
        """A frontier ready time (monotonic) on the wall clock, for the store."""
        return ready_mono + (time.time() - time.monotonic())

    def progress(self) -> CrawlProgress:
        elapsed = time.monotonic() - self._t0
        pages = self._counts["pages"]
        return CrawlProgress(
            elapsed=elapsed,
            pages=pages,
            pages_per_second=pages / elapsed if elapsed > 0 else 0.0,
            requests=self._counts["requests"],
            hosts_active=self.frontier.active_hosts(),
            frontier=len(self.frontier),
            in_flight=len(self._tasks),
            events=self._counts["events"],
            duplicates=self._counts["duplicate"],
            traps_cut=self._counts["cut"],
            blocked=self._counts["blocked"],
            errors=self._counts["errors"] + sum(self._counts[k] for k in FAILED),
            soft_404s=self._counts["soft-404"],
            cycle=self.cycle,
            rendered=self._counts["rendered"],
            hosts=[
                {**h, "ready_at": self._ready_wall(float(h["ready_at"]))}  # type: ignore[arg-type]
                for h in self.frontier.snapshot()
            ],
        )

    def report(self, reason: str) -> CrawlReport:
        elapsed = time.monotonic() - self._t0
        s = self.seen.stats
        return CrawlReport(
            stop_reason=reason,
            elapsed=elapsed,
            pages=self._counts["pages"],
            requests=self._counts["requests"],
            robots_fetches=self._counts["robots"],
            events=self._counts["events"],
            pages_per_second=self._counts["pages"] / elapsed if elapsed > 0 else 0.0,
            outcomes=self.store.count_outcomes(),
            # As stored, like the outcomes: a declared canonical fetched late turns the
            # cluster's first original into a duplicate (and a promoted one back into a page).
            duplicates=self.store.count_duplicate_kinds(),
            traps=self.store.count_cuts(),
            states=self.store.count_states(),
            frontier=len(self.frontier),
            hosts=len(self.frontier.hosts),
            seen={
                "definitely_new": s.definitely_new,
                "maybe_seen": s.maybe_seen,
                "false_positives": s.false_positives,
            },
            resumed_leases=self.resumed_leases,
            cycle=self.cycle,
            soft_404s=self._counts["soft-404"],
            robots_unparseable=self._counts["robots-unparseable"],
            rendered=self._counts["rendered"],
            rendered_share=self._counts["rendered"] / max(1, self._counts["pages"]),
            render=self.render_summary(),
        )
