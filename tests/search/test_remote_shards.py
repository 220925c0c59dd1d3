"""Shard servers as real processes: a coordinator over them answers as the in-process
engine does (the oracle), and keeps answering while a replica is stopped or killed."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from pathlib import Path
from queue import SimpleQueue
from types import SimpleNamespace
from typing import Any

import httpx
import pytest
from starlette.testclient import TestClient

from lookup.kit.asgi import build_app
from lookup.search import SearchService, build_index
from lookup.search.bm25 import make_plan
from lookup.search.filters import filter_nodes
from lookup.search.http import search_route
from lookup.search.remote import RemoteShards, ShardUnavailable, remote_coordinator
from lookup.search.shard_server import ShardFleet
from tests.conftest import shared_build
from tests.search.corpus import BASE_TIME, CrawlWriter, Page

NOW = BASE_TIME + 40 * 86400
#: Long enough that a healthy shard on a loaded two-core machine never misses it.
DEADLINE_MS = 8000.0

#: (query, options): every shape the coordinator has — AND, the OR fallback, phrases,
#: operators, prefixes, fuzzy terms, boosts, fields, filters, facets, pages, sorting,
#: collapsing, typos and "did you mean", pruning past trackTotalHits, explain.
SHAPES: list[tuple[str, dict[str, Any]]] = [
    ("return value", {}),
    ("return value", {"explain": True, "limit": 20}),
    ("return value", {"page": 2, "limit": 7}),
    ("return zzyzxnotaword", {}),
    ('"return value"', {"explain": True}),
    ("pyth* file", {"explain": True}),
    ("file OR directory", {"limit": 30}),
    ("python AND NOT file", {}),
    ("(list OR dict) -value", {}),
    ("pyhton~ module", {}),
    ("title:python", {}),
    ("module^3 object", {"explain": True}),
    ('"return the value"~2', {}),
    ("python", {"facets": True, "limit": 5}),
    ("python", {"filters": filter_nodes(lang="en"), "facets": True}),
    ("value", {"sort": "date", "limit": 15}),
    ("python", {"collapse": 1, "limit": 10}),
    ("python", {"collapse": 2, "page": 2, "limit": 5}),
    ("retrun vaule", {}),
    ("fuction", {"typos": True}),
    ("the", {}),
    ("python file", {"track_total_hits": 0}),
    ("object", {"track_total_hits": 5, "limit": 50}),
]


@pytest.fixture(scope="module")
def index_2(tmp_path_factory: pytest.TempPathFactory, base_crawl: Path) -> Path:
    """The crawl indexed into two shards of several segments each."""
    return shared_build(
        tmp_path_factory,
        "search-idx2",
        lambda out: build_index(base_crawl, out, shards=2, segment_docs=60),
    )


@pytest.fixture(scope="module")
def oracle(index_2: Path) -> Iterator[SearchService]:
    svc = SearchService(index_2, realtime=False)
    svc.reload()
    yield svc
    svc.close()


def _remote(
    index: Path, fleet: ShardFleet, realtime: bool = False
) -> tuple[SearchService, RemoteShards]:
    """A service whose coordinator asks the fleet's processes (the tier polled by hand)."""
    coordinator, shards = remote_coordinator(fleet.members(), deadline_ms=DEADLINE_MS)
    svc = SearchService(index, realtime=realtime, coordinator=coordinator)
    svc.reload()
    return svc, shards


def _same(body: dict[str, Any]) -> dict[str, Any]:
    """The answer without its timing."""
    return {k: v for k, v in body.items() if k != "tookMs"}


@pytest.fixture(scope="module")
def fleet(index_2: Path) -> Iterator[ShardFleet]:
    with ShardFleet(index_2, shards=2, replicas=2, realtime=False) as running:
        yield running


def test_answers_over_processes_equal_the_in_process_engine(
    index_2: Path, fleet: ShardFleet, oracle: SearchService
) -> None:
    remote, shards = _remote(index_2, fleet)
    try:
        for query, options in SHAPES:
            want = oracle.search(query, now=NOW, **options)
            got = remote.search(query, now=NOW, **options)
            assert _same(got) == _same(want), (query, options)
        assert got["shardsAnswered"] == got["shardsQueried"] == 2
        # every query reached the processes: each shard's primary answered requests
        served = {(m["shard"], m["replica"]): m["requests"] for m in shards.members()}
        assert served[(0, 0)] > 0 and served[(1, 0)] > 0
        assert all(m["errors"] == 0 for m in shards.members())
    finally:
        remote.close()


def test_a_replica_reports_its_shard_and_version(fleet: ShardFleet, oracle: SearchService) -> None:
    reports = fleet.wait_ready()
    version = str(oracle.snapshot().version)
    seen = {(r["shard"], r["replica"]) for r in reports}
    assert seen == {(0, 0), (0, 1), (1, 0), (1, 1)}
    assert all(r["version"] == version and r["status"] == "ok" for r in reports)


class _AtNow(SearchService):
    """A service whose queries all run at NOW (the HTTP route takes no clock), so the
    answers over HTTP can be compared exactly."""

    def search(self, query: str, page: int = 1, limit: int = 10, ranking: str = "auto",
               **options: Any) -> dict[str, Any]:  # fmt: skip
        return super().search(query, page, limit, ranking, now=NOW, **options)


def _client(service: SearchService, data_dir: Path) -> TestClient:
    app = build_app(data_dir, subsystems=[lambda m: m.fast_routes.append(search_route(service))])
    return TestClient(app, raise_server_exceptions=False)


def test_drill_stop_and_kill_a_replica_under_load(index_2: Path, tmp_path: Path) -> None:
    """Over HTTP: SIGSTOP a primary, and its queries are hedged to the replica with every
    shard answering; SIGCONT; SIGKILL another, and the same — no 5xx, no partial answer,
    every answer equal to the in-process engine's."""
    queries = [q for q, _ in SHAPES[:8]]
    oracle = _AtNow(index_2, realtime=False)
    with _client(oracle, tmp_path) as client:
        want = {q: _same(client.get("/search", params={"q": q}).json()) for q in queries}
    oracle.close()
    with ShardFleet(index_2, shards=2, replicas=2, realtime=False) as fleet:
        coordinator, shards = remote_coordinator(fleet.members(), deadline_ms=DEADLINE_MS)
        remote = _AtNow(index_2, realtime=False, coordinator=coordinator)
        failures: list[str] = []
        partial: list[int] = []
        answered = 0
        stop = threading.Event()

        def load(client: TestClient) -> None:  # a modest loop, one query at a time
            nonlocal answered
            while not stop.is_set():
                for q in queries:
                    reply = client.get("/search", params={"q": q})
                    if reply.status_code != 200:
                        failures.append(f"{q}: {reply.status_code} {reply.text[:200]}")
                        continue
                    answered += 1
                    body = reply.json()
                    if body["shardsAnswered"] != body["shardsQueried"]:
                        partial.append(body["shardsAnswered"])
                    elif _same(body) != want[q]:
                        failures.append(f"{q}: differs from the oracle")

        def run_for(n: int) -> None:
            start = answered
            while answered - start < n and worker.is_alive():
                stop.wait(0.05)

        with _client(remote, tmp_path) as client:
            worker = threading.Thread(target=load, args=(client,), daemon=True)
            worker.start()
            try:
                run_for(10)
                fleet.signal(0, 0, signal.SIGSTOP)
                run_for(25)
                stopped = coordinator.status()["shards"][0]
                fleet.signal(0, 0, signal.SIGCONT)
                run_for(10)
                fleet.signal(1, 0, signal.SIGKILL)
                run_for(25)
            finally:
                stop.set()
                worker.join(timeout=60)
                remote.close()
        assert not failures, failures[:5]
        assert not partial, partial[:5]
        assert answered >= 70
        assert stopped["hedgeWins"] > 0  # the stopped primary's queries went to replica 1
        killed = {(m["shard"], m["replica"]): m for m in shards.members()}[(1, 0)]
        assert killed["errors"] > 0  # it was asked, refused, and the replica answered


def _wait_for_tiers(fleet: ShardFleet, docs: int, deletions: int) -> None:
    """Until every process's tier (each tails the logs on its own) holds what it should."""
    with httpx.Client(trust_env=False, timeout=5.0) as client:
        for address in fleet.addresses.values():
            for _ in range(600):
                rt = client.get(f"{address}/healthz").json()["systems"]["search-shard"]["realtime"]
                if (rt["docs"], rt["pendingDeletions"]) == (docs, deletions):
                    break
                threading.Event().wait(0.1)
            assert (rt["docs"], rt["pendingDeletions"]) == (docs, deletions)


def test_the_real_time_tier_is_served_by_the_owning_shard(
    crawl: CrawlWriter, tmp_path: Path
) -> None:
    """Pages crawled after the build (and a removal) reach each shard process's slice of
    the real-time tier; the answers over processes still equal the in-process engine's."""
    index = tmp_path / "idx"
    build_index(crawl.root, index, shards=2)
    fresh = [
        Page(f"http://fresh.test/{i}.html", f"Fresh {i}", f"brandnew{i} news about heap queues {i}")
        for i in range(6)
    ]
    crawl.fetch(fresh, at=NOW)
    gone = crawl.gone("http://docs0.test/collections/ChainMap.html", at=NOW)
    oracle = SearchService(index)
    oracle.reload()
    assert oracle.tier is not None and oracle.tier.poll() == 7
    with ShardFleet(index, shards=2, replicas=1, realtime=True) as fleet:
        remote, _ = _remote(index, fleet, realtime=True)
        try:
            assert remote.tier is not None and remote.tier.poll() == 7
            _wait_for_tiers(fleet, docs=6, deletions=0)
            for query in ["brandnew3", "heap queues", "news", "chainmap", "brandnew*"]:
                want = oracle.search(query, now=NOW, explain=True, limit=20)
                got = remote.search(query, now=NOW, explain=True, limit=20)
                assert _same(got) == _same(want), query
            tiers = {r["explain"]["tier"] for r in got["results"]}
            assert tiers == {"realtime"} and len(got["results"]) == 6
            assert gone["url"] not in {r["url"] for r in remote.search("chainmap")["results"]}
            # a delete through the coordinator's service reaches the owning shard process
            target = remote.search("brandnew4")["results"][0]["url"]
            assert remote.delete(url=target)["deleted"]
            _wait_for_tiers(fleet, docs=5, deletions=1)
            oracle.tier.poll()
            for query in ["brandnew4", "heap queues", "news"]:
                want = oracle.search(query, now=NOW, limit=20)
                got = remote.search(query, now=NOW, limit=20)
                assert _same(got) == _same(want), query
            assert target not in {r["url"] for r in got["results"]} and len(got["results"]) == 5
        finally:
            remote.close()
            oracle.close()


def test_an_answer_of_another_version_is_refused_and_hedged(
    fleet: ShardFleet, oracle: SearchService
) -> None:
    """No query merges two versions: a replica serving another version is an error."""
    snap = oracle.snapshot()
    coordinator, shards = remote_coordinator(fleet.members(), deadline_ms=DEADLINE_MS)
    try:
        plan = make_plan(["python"], [snap.df("python")], snap.live_docs, snap.live_length,
                         k=5, now=NOW)  # fmt: skip
        replica = coordinator.groups[0].replicas[0]
        inbox: SimpleQueue = SimpleQueue()
        replica.submit(snap, plan, False, inbox)
        shard, answer = inbox.get(timeout=DEADLINE_MS / 1000.0)
        assert shard == 0 and answer.hits == snap.shards[0].search(plan).hits
        other = SimpleNamespace(version=snap.version + 1)  # what a coordinator on v+1 has
        replica.submit(other, plan, False, inbox)  # type: ignore[arg-type]
        shard, refused = inbox.get(timeout=DEADLINE_MS / 1000.0)
        assert isinstance(refused, ShardUnavailable) and "version" in str(refused)
        status = coordinator.status()["shards"][0]["replicas"]
        assert [r["address"] for r in status] == [fleet.addresses[(0, 0)], fleet.addresses[(0, 1)]]
    finally:
        coordinator.close()
