"""Prometheus metrics at ``GET /metrics``: the API's requests and latencies, and what
each system adds (search's hedges, the crawler's fetch outcomes and politeness waits).

The text is ``prometheus_client``'s exposition format, so the tools operators already
run scrape it as it is.

- :data:`REGISTRY` is this process's registry (not ``prometheus_client``'s default one,
  so libraries' own metrics stay out and a test process that builds several apps counts
  into one place). It holds the process collector and the HTTP counts' families.
- :data:`HTTP_STATS` counts each HTTP request by route *template* (``/{key}``, never the
  key), method and status, and times it (:meth:`HttpStats.note`, called by the outermost
  layer, :class:`~lookup.kit.asgi.ErrorGuard`): plain ints and latency buckets on the
  event loop's thread, no lock at all, read into Prometheus families only when
  ``/metrics`` is scraped.
- A system adds collectors read at scrape time to ``Mounts.metrics`` (search: the
  coordinator's own counters, so a query pays nothing for them).
- A process that serves no HTTP (the crawler) writes its registry to a ``*.prom`` file
  (:func:`write_textfile`, atomic); :class:`TextfileCollector` re-exposes such files with a
  ``worker`` label naming the writer, the way node_exporter's textfile collector does.

Several processes: each ``lookup serve`` process keeps its own counts and is its own
scrape target (``lookup up --workers N`` gives each a port; Prometheus tells them apart
by ``instance``). ``lookup_process_info`` names the process (pid), so under ``uvicorn
--workers`` (one port, a worker per scrape) the series of different workers stay apart.
"""

from __future__ import annotations

import os
from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from prometheus_client import (
    CONTENT_TYPE_PLAIN_0_0_4,
    CollectorRegistry,
    Gauge,
    ProcessCollector,
    generate_latest,
)
from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily
from prometheus_client.metrics_core import Metric
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.registry import Collector
from starlette.types import Scope

__all__ = [
    "CONTENT_TYPE",
    "HTTP_STATS",
    "LATENCY_BUCKETS",
    "REGISTRY",
    "HttpStats",
    "TextfileCollector",
    "exposition",
    "route_of",
    "write_textfile",
]

#: What ``/metrics`` answers with: the classic text format every Prometheus reads.
CONTENT_TYPE = CONTENT_TYPE_PLAIN_0_0_4
#: Latency buckets (seconds) from the hot paths' sub-millisecond answers to slow builds.
LATENCY_BUCKETS = (
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
)  # fmt: skip

REGISTRY = CollectorRegistry()
ProcessCollector(registry=REGISTRY)
_INFO = Gauge(
    "lookup_process_info", "This server process (1); pid tells workers apart.", ["pid"],
    registry=REGISTRY,
)  # fmt: skip
_INFO.labels(pid=str(os.getpid())).set(1)
#: The route label of a request no route matched (a 404, or a mount's own path).
UNMATCHED = "unmatched"
_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


def route_of(scope: Scope) -> str:
    """The template of the route that served ``scope`` (set by the router), never the path."""
    route = scope.get("route")
    if route is None:
        return UNMATCHED
    path = getattr(route, "path", None) or getattr(route, "metrics_label", None)
    return path if isinstance(path, str) else type(route).__name__


class HttpStats(Collector):
    """The process's HTTP counts, kept in plain dicts and turned into Prometheus families
    when scraped.

    A request adds one to an int and one to a latency bucket found by ``bisect``: no lock
    and none of ``prometheus_client``'s per-call checks (measured: ``Counter.inc`` plus
    ``Histogram.observe`` cost several times this). That is safe because a server counts
    on its event loop's one thread; the scrape copies the dicts before reading them.
    """

    def __init__(self, buckets: tuple[float, ...] = LATENCY_BUCKETS) -> None:
        self.buckets = buckets
        self.counts: dict[tuple[str, str, int], int] = {}
        #: (route, method) -> [per-bucket counts (the last: above every bound), sum]
        self.times: dict[tuple[str, str], list[float]] = {}

    def note(self, scope: Scope, status: int, seconds: float) -> None:
        """Count one answered request of ``scope`` (:class:`~lookup.kit.asgi.ErrorGuard`,
        the outermost layer, calls it: the send it already wraps sees the status, so the
        counting adds no wrapper of its own to the hot paths)."""
        method = scope.get("method", "GET")
        if method not in _METHODS:
            method = "OTHER"  # a client's made-up method must not mint label values
        self.record(route_of(scope), method, status, seconds)

    def record(self, route: str, method: str, status: int, seconds: float) -> None:
        """Count one answered request."""
        key = (route, method, status)
        self.counts[key] = self.counts.get(key, 0) + 1
        timer = self.times.get(key[:2])
        if timer is None:
            timer = self.times[key[:2]] = [0.0] * (len(self.buckets) + 2)
        timer[bisect_left(self.buckets, seconds)] += 1  # the first bound at or above it
        timer[-1] += seconds

    @staticmethod
    def _copy(d: dict[Any, Any]) -> list[tuple[Any, Any]]:
        while True:
            try:  # a request on another thread may add a key while we copy
                return [(k, list(v) if isinstance(v, list) else v) for k, v in list(d.items())]
            except RuntimeError:
                continue

    def collect(self) -> Iterator[Metric]:
        requests = CounterMetricFamily(
            "lookup_http_requests",
            "HTTP requests answered, by route template, method and status.",
            labels=["route", "method", "status"],
        )
        for (route, method, status), n in sorted(self._copy(self.counts)):
            requests.add_metric([route, method, str(status)], n)
        latency = HistogramMetricFamily(
            "lookup_http_request_duration_seconds",
            "Time from a request's arrival to the end of its answer, by route template and method.",
            labels=["route", "method"],
        )
        bounds = [*(repr(float(b)) for b in self.buckets), "+Inf"]
        for (route, method), timer in sorted(self._copy(self.times)):
            cumulative, running = [], 0.0
            for bound, n in zip(bounds, timer[:-1], strict=True):
                running += n
                cumulative.append((bound, running))
            latency.add_metric([route, method], cumulative, sum_value=timer[-1])
        yield requests
        yield latency


#: This process's HTTP counts (every app :func:`~lookup.kit.asgi.build_app` builds adds to them).
HTTP_STATS = HttpStats()
REGISTRY.register(HTTP_STATS)


class _Many(Collector):
    """Several collectors as one, for :func:`exposition`."""

    def __init__(self, collectors: Iterable[Collector]) -> None:
        self.collectors = list(collectors)

    def collect(self) -> Iterator[Metric]:
        for c in self.collectors:
            yield from c.collect()


def exposition(extra: Iterable[Collector] = ()) -> bytes:
    """The text ``/metrics`` answers: :data:`REGISTRY`, then the systems' collectors."""
    text = generate_latest(REGISTRY)
    extra = list(extra)
    return text + generate_latest(_Many(extra)) if extra else text


def write_textfile(path: Path, registry: CollectorRegistry) -> None:
    """Write ``registry`` to ``path`` atomically (a reader sees the old or the new file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_bytes(generate_latest(registry))
    os.replace(tmp, path)


class TextfileCollector(Collector):
    """The metrics in ``*.prom`` files other processes wrote, each sample labelled with
    ``label`` = the writer's name (the file's name after ``prefix``).

    ``files`` is asked at every scrape (the files of the crawl in view). A family that
    appears in several files is one family with a sample per writer; ``_created``
    samples are left out (a restart shows as a counter reset, as Prometheus expects).
    """

    def __init__(
        self,
        files: Callable[[], Iterable[Path]],
        *,
        prefix: str = "metrics-",
        label: str = "worker",
    ) -> None:
        self.files = files
        self.prefix = prefix
        self.label = label

    def collect(self) -> Iterator[Metric]:
        families: dict[str, Metric] = {}
        try:
            paths = sorted(self.files())
        except OSError:
            return
        for path in paths:
            try:
                text = path.read_text(encoding="utf-8")
            except OSError:
                continue  # replaced or removed between the listing and the read
            writer = path.stem.removeprefix(self.prefix)
            try:
                parsed = list(text_string_to_metric_families(text))
            except ValueError:
                continue  # not a metrics file: skipped rather than failing the scrape
            for fam in parsed:
                if fam.name.endswith("_created"):
                    continue  # a counter's creation time (its own family in the old format)
                out = families.get(fam.name)
                if out is None:
                    out = families[fam.name] = Metric(fam.name, fam.documentation, fam.type)
                elif out.type != fam.type:
                    continue
                for s in fam.samples:
                    if s.name.endswith("_created"):
                        continue
                    out.add_sample(s.name, {**s.labels, self.label: writer}, s.value)
        yield from families.values()
