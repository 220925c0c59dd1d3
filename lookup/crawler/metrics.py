"""A crawler process's Prometheus metrics, written to ``<out>/metrics-<worker>.prom``.

A crawler serves no HTTP, so it does what batch jobs do for node_exporter's textfile
collector: it keeps its counters in a registry of its own (one per crawl, so two crawls in
one process never mix) and writes them to a file in its output directory every couple
of seconds (:class:`~lookup.crawler.steering.Steering` does, as it polls the controls) and
when it stops. The API's ``/metrics`` re-exposes the files of the crawl in view with a
``worker`` label (:class:`lookup.kit.metrics.TextfileCollector`, registered by
:mod:`lookup.crawler.http`).

The families: fetches by kind and outcome, the politeness pause chosen after each
request, hosts flagged by block detection, the controls' version and global delay, and
when the file was written (a stale file is a crawler that stopped).
"""

from __future__ import annotations

import re
import time
from pathlib import Path

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from lookup.kit.metrics import write_textfile

__all__ = ["WAIT_BUCKETS", "CrawlMetrics", "metrics_file"]

#: Pauses (seconds) from the tests' 10 ms floors to the back-off cap.
WAIT_BUCKETS = (0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 300.0)
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def metrics_file(out_dir: Path, worker: str) -> Path:
    """Where the crawler process ``worker`` writes its metrics."""
    return Path(out_dir) / f"metrics-{_UNSAFE.sub('_', worker) or 'crawl'}.prom"


class CrawlMetrics:
    """The counters of one crawler process."""

    def __init__(self) -> None:
        r = self.registry = CollectorRegistry()
        self.fetches = Counter(
            "lookup_crawler_fetches", "Requests made, by kind (robots, page, sitemap) and "
            "outcome (ok, http-404, retry:http-429, challenge, ...).", ["kind", "outcome"],
            registry=r,
        )  # fmt: skip
        self.waits = Histogram(
            "lookup_crawler_politeness_wait_seconds",
            "The pause chosen after each request before its host is asked again.",
            buckets=WAIT_BUCKETS,
            registry=r,
        )
        self.flagged = Gauge(
            "lookup_crawler_hosts_flagged",
            "Hosts block detection has flagged for review (and slowed) now.",
            registry=r,
        )
        self.flags = Counter(
            "lookup_crawler_block_flags", "Times a host was flagged by block detection.",
            registry=r,
        )  # fmt: skip
        self.global_delay = Gauge(
            "lookup_crawler_global_delay_seconds",
            "The operator's global per-host delay (set-delay *); 0 when none is set.",
            registry=r,
        )
        self.controls_version = Gauge(
            "lookup_crawler_controls_version", "The controls version this process applied.",
            registry=r,
        )  # fmt: skip
        self.written = Gauge(
            "lookup_crawler_metrics_written_timestamp_seconds",
            "When this file was written (unix time): an old one is a crawler that stopped.",
            registry=r,
        )

    def fetched(self, kind: str, outcome: str, wait: float | None) -> None:
        """Count one request and the pause chosen after it."""
        self.fetches.labels(kind, outcome).inc()
        if wait is not None:
            self.waits.observe(wait)

    def write(self, path: Path) -> None:
        """Write the file (atomically)."""
        self.written.set(time.time())
        write_textfile(path, self.registry)
