"""The search coordinator's counters as Prometheus metrics, read when ``/metrics`` is scraped.

The coordinator already counts, per shard, the queries it fanned out, the hedges it sent,
the hedges that answered first and the deadlines missed (:class:`~lookup.search.
coordinator.ShardGroup`), and per replica the requests it was sent. This collector reads
those at scrape time, so a query pays nothing more for being measured. ``POST
/search/coordinator/reset`` zeroes them: Prometheus sees a counter reset, as after a
restart. Request counts and latencies of ``GET /search`` itself are the API's
(``lookup_http_requests_total{route="/search"}``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

__all__ = ["CoordinatorMetrics"]


class CoordinatorMetrics(Collector):
    """The live coordinator's shard and replica counters (``service.coordinator``)."""

    def __init__(self, service: Any) -> None:
        self.service = service

    def collect(self) -> Iterator[Metric]:
        coordinator = getattr(self.service, "coordinator", None)
        groups = list(getattr(coordinator, "groups", ()))
        queries = CounterMetricFamily(
            "lookup_search_shard_queries", "Queries fanned out to each shard.", labels=["shard"]
        )
        hedges = CounterMetricFamily(
            "lookup_search_hedges", "Hedged requests sent, per shard.", labels=["shard"]
        )
        wins = CounterMetricFamily(
            "lookup_search_hedge_wins", "Hedges that answered before the primary, per shard.",
            labels=["shard"],
        )  # fmt: skip
        misses = CounterMetricFamily(
            "lookup_search_deadline_misses", "Shard answers that missed the query deadline.",
            labels=["shard"],
        )  # fmt: skip
        delay = GaugeMetricFamily(
            "lookup_search_hedge_delay_seconds",
            "The wait before a shard's hedge is sent (about its p95 latency).",
            labels=["shard"],
        )
        replica = CounterMetricFamily(
            "lookup_search_replica_requests", "Requests sent to each replica (hedges included).",
            labels=["shard", "replica"],
        )  # fmt: skip
        for g in groups:
            shard = str(g.shard)
            queries.add_metric([shard], g.queries)
            hedges.add_metric([shard], g.hedges)
            wins.add_metric([shard], g.hedge_wins)
            misses.add_metric([shard], g.deadline_misses)
            delay.add_metric([shard], g.hedge_delay_ms() / 1000.0)
            for r in g.replicas:
                replica.add_metric([shard, str(r.replica)], r.stats.requests)
        yield from (queries, hedges, wins, misses, delay, replica)
