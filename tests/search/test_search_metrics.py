"""The search coordinator's hedges and deadlines in ``/metrics`` (issue 28 item 19).

The oracle is the coordinator's own status (``GET /search/coordinator``): after a query
whose primary replica is dead, the exposition, parsed as Prometheus parses it, shows the
same hedges, wins and per-replica requests.
"""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from lookup.kit.metrics import exposition
from lookup.search import SearchService
from lookup.search.metrics import CoordinatorMetrics
from tests.search.corpus import BASE_TIME

NOW = BASE_TIME + 40 * 86400


def _samples(text: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for fam in text_string_to_metric_families(text)
        for s in fam.samples
    }


def test_hedges_in_the_exposition_are_the_coordinators_own(service_4: SearchService) -> None:
    service_4.coordinator.set_fault(1, 0, "dead")
    service_4.search("return value", now=NOW, deadline_ms=5000)
    status = service_4.coordinator.status()["shards"]
    got = _samples(exposition([CoordinatorMetrics(service_4)]).decode())
    for shard in status:
        s = str(shard["shard"])
        assert (
            got[("lookup_search_hedges_total", frozenset({("shard", s)}))] == shard["hedgesFired"]
        )
        assert (
            got[("lookup_search_hedge_wins_total", frozenset({("shard", s)}))] == shard["hedgeWins"]
        )
        assert (
            got[("lookup_search_shard_queries_total", frozenset({("shard", s)}))]
            == shard["queries"]
        )
        for r in shard["replicas"]:
            key = frozenset({("shard", s), ("replica", str(r["replica"]))})
            assert got[("lookup_search_replica_requests_total", key)] == r["requests"]
    assert got[("lookup_search_hedges_total", frozenset({("shard", "1")}))] >= 1
