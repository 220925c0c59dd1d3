"""Index versions across shard processes: no query mixes versions, and a new version is
rolled out through a canary — promoted when it answers like the live one, rolled back
(with no failed query) when it empties half the queries or its files fail their checksum.

One fleet (2 shards × 2 replicas) over one tiny index serves the whole module; each test
publishes the next version into that index and starts from whatever is live."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from queue import SimpleQueue
from types import SimpleNamespace
from typing import Any

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from lookup.search import build_index
from lookup.search.bm25 import make_plan
from lookup.search.coordinator import Coordinator
from lookup.search.location import DirectoryIndexLocation, open_index_location
from lookup.search.remote import ShardUnavailable, remote_coordinator
from lookup.search.rollout import CanaryFigures, Rollout, RolloutPolicy, overlap_at
from lookup.search.shard import IndexVersion
from lookup.search.shard_server import (
    ACTIVATE_PATH,
    ShardFleet,
    ShardServer,
    VersionNotHeld,
    open_version,
)
from tests.search.corpus import BASE_TIME, CrawlWriter, Page

NOW = BASE_TIME + 40 * 86400
DEADLINE_MS = 8000.0
#: Query options: a fixed clock, and no typo tolerance (tok030 must not find tok003).
OPTS: dict[str, Any] = {"now": NOW, "suggest": False, "typos": False}
TOKEN = "rollout-test-admin-token"
N = 40
#: Known-item queries (one page each) and group queries (several pages each).
QUERIES = [f"tok{i:03d}" for i in range(N)] + [f"grp{g}" for g in range(5)]


def _pages(lo: int, hi: int) -> list[Page]:
    return [
        Page(
            url=f"https://s{i % 3}.example/p{i}",
            title=f"Item tok{i:03d}",
            text=f"A page about tok{i:03d} in group grp{i % 5}.\n\n"
            f"Shared filler words follow here for page tok{i:03d}.",
            links=[f"https://s{(i + 1) % 3}.example/p{(i + 1) % hi}"],
        )
        for i in range(lo, hi)
    ]


@pytest.fixture(scope="module")
def token() -> Iterator[str]:
    """The admin token the shard servers (children: they inherit it) ask for."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("LOOKUP_ADMIN_TOKEN", TOKEN)
        yield TOKEN


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> tuple[CrawlWriter, Path]:
    """A crawl of N pages and its index (2 shards): version 1."""
    root = tmp_path_factory.mktemp("rollout")
    crawl = CrawlWriter(root / "crawl")
    crawl.fetch(_pages(0, N))
    index = root / "index"
    assert build_index(crawl.root, index, shards=2).published
    return crawl, index


@pytest.fixture(scope="module")
def fleet(site: tuple[CrawlWriter, Path], token: str) -> Iterator[ShardFleet]:
    with ShardFleet(site[1], shards=2, replicas=2, realtime=False) as running:
        yield running


def _oracle(snap: IndexVersion) -> dict[str, list[str]]:
    """Each query's top URLs on one version, from the in-process engine."""
    coord = Coordinator(replicas=1, hedge=False, deadline_ms=60_000.0)
    try:
        return {q: _urls(coord.search(snap, q, **OPTS)) for q in QUERIES}
    finally:
        coord.close()


def _urls(body: dict[str, Any]) -> list[str]:
    return [str(r["url"]) for r in body["results"]]


def _health(fleet: ShardFleet) -> dict[tuple[int, int], dict[str, Any]]:
    return {(r["shard"], r["replica"]): r for r in fleet.wait_ready()}


def _activate(fleet: ShardFleet, body: dict[str, Any], auth: str | None = TOKEN) -> list[int]:
    codes = []
    with httpx.Client(trust_env=False, timeout=60.0) as client:
        for address in fleet.addresses.values():
            headers = {"authorization": f"Bearer {auth}"} if auth else {}
            codes.append(
                client.post(address + ACTIVATE_PATH, json=body, headers=headers).status_code
            )
    return codes


def _publish_more(crawl: CrawlWriter, index: Path, lo: int, hi: int) -> int:
    """Fetch pages lo..hi (new ones) and publish the next version; its number."""
    crawl.fetch(_pages(lo, hi), at=NOW - 86400)
    report = build_index(crawl.root, index, shards=2)
    assert report.published, report
    current = DirectoryIndexLocation(index).current()
    assert current is not None
    return current.version


def test_a_query_stays_on_its_version_while_the_replicas_switch(
    site: tuple[CrawlWriter, Path], fleet: ShardFleet
) -> None:
    """Replicas following CURRENT switch one by one; a coordinator still on the old
    version pins its requests to it and gets complete answers of that version only."""
    crawl, index = site
    assert set(_activate(fleet, {"follow": True})) == {200}
    location = DirectoryIndexLocation(index)
    old = open_version(location, location.current().version)  # type: ignore[union-attr]
    want = _oracle(old)
    coordinator, _ = remote_coordinator(fleet.members(), deadline_ms=DEADLINE_MS)
    try:
        for q in QUERIES[:4]:  # every replica has served the old version
            coordinator.search(old, q, **OPTS)
        new = _publish_more(crawl, index, N, N + 3)
        switched = rounds_after = 0
        answers = 0
        while rounds_after < 2:
            for q in QUERIES:
                body = coordinator.search(old, q, **OPTS)
                assert body["shardsAnswered"] == body["shardsQueried"] == 2, (q, body)
                assert _urls(body) == want[q], q
                answers += 1
            if switched or all(r["version"] == str(new) for r in _health(fleet).values()):
                switched = 1
                rounds_after += 1
            assert answers < 200 * len(QUERIES), "the replicas never switched"
        # a version no replica holds is refused, never answered from another one
        snap = old
        plan = make_plan(["tok001"], [snap.df("tok001")], snap.live_docs, snap.live_length,
                         k=5, now=NOW)  # fmt: skip
        inbox: SimpleQueue = SimpleQueue()
        replica = coordinator.groups[0].replicas[0]
        replica.submit(SimpleNamespace(version=new + 50), plan, False, inbox)  # type: ignore[arg-type]
        _, refused = inbox.get(timeout=DEADLINE_MS / 1000.0)
        assert isinstance(refused, ShardUnavailable) and "VERSION_NOT_HELD" in str(refused)
        assert all(str(old.version) in r["held"] for r in _health(fleet).values())
    finally:
        coordinator.close()


def test_activation_needs_the_admin_token_and_a_version(fleet: ShardFleet) -> None:
    assert set(_activate(fleet, {"follow": True}, auth=None)) == {401}
    assert set(_activate(fleet, {"follow": True}, auth="wrong")) == {403}
    assert set(_activate(fleet, {"version": "x"})) == {400}
    assert set(_activate(fleet, {"version": 99999})) == {404}


def _rollout(
    index: Path, fleet: ShardFleet, token: str, **policy: Any
) -> tuple[Rollout, Coordinator]:
    coordinator, shards = remote_coordinator(fleet.members(), deadline_ms=DEADLINE_MS)
    rollout = Rollout(
        DirectoryIndexLocation(index),
        coordinator,
        shards,
        admin_token=token,
        # latency is judged in test_the_verdict…: a loaded test machine decides no timing
        policy=RolloutPolicy(
            **{"share": 0.5, "min_queries": 20, "latency_slack_ms": 60_000.0, **policy}
        ),
    )
    rollout.start()
    return rollout, coordinator


def _check(body: dict[str, Any], q: str, wants: dict[str, dict[str, list[str]]]) -> str:
    """Empty when an answer is complete and equal to the oracle of the version it names."""
    if body["shardsAnswered"] != 2 or body["shardsQueried"] != 2:
        return f"{q}: partial answer {body['shardsAnswered']}/{body['shardsQueried']}"
    if _urls(body) != wants[body["version"]][q]:
        return f"{q}: not the answer of version {body['version']}"
    return ""


def _serve_until_decided(
    rollout: Rollout, wants: dict[str, dict[str, list[str]]]
) -> list[dict[str, Any]]:
    """Queries under the rollout, from this thread and one more, until it decides (and
    one more round); every answer must be complete and equal to the oracle of the one
    version it names, also while the replicas switch."""
    stop = threading.Event()
    problems: list[str] = []
    served = [0]

    def load() -> None:
        while not stop.is_set():
            for q in QUERIES:
                try:
                    problems.append(_check(rollout.search(q, **OPTS), q, wants))
                    served[0] += 1
                except Exception as exc:  # noqa: BLE001 - a failed query is the finding
                    problems.append(f"{q}: {type(exc).__name__}: {exc}")

    worker = threading.Thread(target=load, daemon=True)
    worker.start()
    bodies = []
    try:
        for round_no in range(40):
            for q in QUERIES:
                body = rollout.search(q, **OPTS)
                assert not _check(body, q, wants), _check(body, q, wants)
                bodies.append(body)
            if rollout.state != "canary" and round_no > 0:
                break
        else:
            raise AssertionError(f"no decision: {rollout.status()}")
    finally:
        stop.set()
        worker.join(60.0)
    assert [p for p in problems if p] == [] and served[0] > 0
    return bodies


def test_a_good_version_is_promoted_with_no_failed_query(
    site: tuple[CrawlWriter, Path], fleet: ShardFleet, token: str
) -> None:
    crawl, index = site
    rollout, coordinator = _rollout(index, fleet, token)
    try:
        live = rollout.live
        assert live is not None
        new = _publish_more(crawl, index, N + 3, N + 6)
        # published is not live: every replica keeps serving the live version
        assert {r["version"] for r in _health(fleet).values()} == {str(live.version)}
        assert rollout.begin() == "canary"
        health = _health(fleet)
        assert {k: r["version"] for k, r in health.items()} == {
            (0, 0): str(new),
            (1, 0): str(new),
            (0, 1): str(live.version),
            (1, 1): str(live.version),
        }
        location = DirectoryIndexLocation(index)
        wants = {str(live.version): _oracle(live), str(new): _oracle(open_version(location, new))}
        bodies = _serve_until_decided(rollout, wants)
        status = rollout.status()
        assert status["state"] == "promoted", status
        assert status["live"] == new and status["figures"]["overlapAt10"] >= 0.6
        assert {b["version"] for b in bodies} == {str(live.version), str(new)}
        assert {r["version"] for r in _health(fleet).values()} == {str(new)}
        assert bodies[-1]["version"] == str(new)
    finally:
        rollout.close()
        coordinator.close()


def test_a_version_that_empties_half_the_queries_is_rolled_back(
    site: tuple[CrawlWriter, Path], fleet: ShardFleet, token: str, tmp_path: Path
) -> None:
    _, index = site
    rollout, coordinator = _rollout(index, fleet, token)
    try:
        live = rollout.live
        assert live is not None
        half = CrawlWriter(tmp_path / "half")  # another crawl: half the pages
        half.fetch(_pages(0, N // 2))
        assert build_index(half.root, index, shards=2, force=True).published
        location = DirectoryIndexLocation(index)
        broken = location.current().version  # type: ignore[union-attr]
        assert rollout.begin() == "canary"
        wants = {
            str(live.version): _oracle(live),
            str(broken): _oracle(open_version(location, broken)),
        }
        _serve_until_decided(rollout, wants)
        status = rollout.status()
        assert status["state"] == "rolled-back" and "empty" in status["reason"], status
        assert status["live"] == live.version and broken in status["rejected"]
        assert {r["version"] for r in _health(fleet).values()} == {str(live.version)}
        # CURRENT points at the live version again; the broken one is not tried again
        assert location.current().version == live.version  # type: ignore[union-attr]
        assert rollout.begin(broken) == "rolled-back"
        body = rollout.search("tok030", **OPTS)
        assert body["version"] == str(live.version) and len(body["results"]) == 1
    finally:
        rollout.close()
        coordinator.close()


def test_a_version_whose_shard_file_fails_its_checksum_is_refused_at_load(
    site: tuple[CrawlWriter, Path], fleet: ShardFleet, token: str
) -> None:
    crawl, index = site
    rollout, coordinator = _rollout(index, fleet, token)
    try:
        live = rollout.live
        assert live is not None
        crawl.fetch(_pages(0, 2), at=NOW - 3600)  # a refetch: the next version
        assert build_index(crawl.root, index, shards=2, rebuild=True).published
        location = DirectoryIndexLocation(index)
        damaged = location.manifest(location.current().version)  # type: ignore[union-attr]
        kept = {e.name for shard in live.manifest.segments for e in shard}
        fresh = [e.name for e in damaged.segments[0] if e.name not in kept]
        assert fresh, "a rebuild writes new segments"
        target = sorted(p for p in (index / "shard-00" / fresh[0]).iterdir() if p.is_file())
        victim = next(p for p in target if p.name != "meta.json" and p.stat().st_size > 0)
        data = bytearray(victim.read_bytes())
        data[len(data) // 2] ^= 0xFF
        victim.write_bytes(bytes(data))
        state = rollout.begin()
        status = rollout.status()
        assert state == "rolled-back" and "VERSION_DAMAGED" in status["reason"], status
        assert damaged.version in status["rejected"] and status["live"] == live.version
        assert {r["version"] for r in _health(fleet).values()} == {str(live.version)}
        want = _oracle(live)
        for q in QUERIES:  # no failed query after the refusal
            body = rollout.search(q, **OPTS)
            assert body["shardsAnswered"] == 2 and _urls(body) == want[q]
    finally:
        rollout.close()
        coordinator.close()


@given(
    st.lists(st.sampled_from("abcdefgh"), max_size=12, unique=True),
    st.lists(st.sampled_from("abcdefgh"), max_size=12, unique=True),
)
def test_overlap_is_a_share_and_one_on_itself(ours: list[str], theirs: list[str]) -> None:
    share = overlap_at(ours, theirs)
    assert 0.0 <= share <= 1.0
    assert overlap_at(theirs, theirs) == 1.0
    brute = len(set(ours[:10]) & set(theirs[:10])) / len(theirs[:10]) if theirs else float(not ours)
    assert share == brute


def test_the_verdict_waits_for_enough_queries_and_names_the_bad_figure() -> None:
    policy = RolloutPolicy(min_queries=4)
    figures = CanaryFigures()
    full = {"results": [{"url": "u1"}, {"url": "u2"}]}
    empty: dict[str, Any] = {"results": []}
    for _ in range(3):
        figures.record(full, full, 1.0, 1.0)
    assert figures.verdict(policy) is None
    figures.record(full, full, 1.0, 1.0)
    assert figures.verdict(policy) == ("promote", figures.verdict(policy)[1])  # type: ignore[index]
    for _ in range(4):
        figures.record(empty, full, 1.0, 1.0)
    decision, reason = figures.verdict(policy)  # type: ignore[misc]
    assert decision == "rollback" and "empty" in reason
    failing = CanaryFigures()
    for _ in range(4):
        failing.record(None, full, 0.0, 1.0)
    assert failing.verdict(policy)[0] == "rollback"  # type: ignore[index]
    slow = CanaryFigures()
    for i in range(4):  # the first (cold) query is not timed
        slow.record(full, full, 900.0 if i else 10_000.0, 10.0, timed=i > 0)
    decision, reason = slow.verdict(RolloutPolicy(min_queries=4, latency_slack_ms=50.0))  # type: ignore[misc]
    assert decision == "rollback" and "p95 900.0" in reason
    assert slow.verdict(RolloutPolicy(min_queries=4, latency_slack_ms=1000.0))[0] == "promote"  # type: ignore[index]
    with pytest.raises(ValueError):
        RolloutPolicy(share=0.0)


def test_any_kept_version_opens_from_the_shared_store(postgres_db: str, tmp_path: Path) -> None:
    """A canary replica on the PostgreSQL location opens the version it is told to, not
    only the current one: its files are fetched (checked) into an empty cache first."""
    crawl = CrawlWriter(tmp_path / "crawl")
    crawl.fetch(_pages(0, 12))
    work = tmp_path / "work"
    assert build_index(crawl.root, work, shards=2, index_store=postgres_db).published
    early = open_index_location(postgres_db, cache_dir=tmp_path / "early")
    location = open_index_location(postgres_db, cache_dir=tmp_path / "replica")
    try:
        first = early.open()  # the oracle: version 1 opened while it was the current one
        assert first is not None
        want = _oracle(first)
        crawl.fetch(_pages(12, 16), at=NOW - 86400)
        assert build_index(crawl.root, work, shards=2, index_store=postgres_db).published
        current = location.current()
        assert current is not None and current.version > first.version
        opened = open_version(location, first.version)  # the cache holds nothing yet
        assert _oracle(opened) == want
        assert _oracle(open_version(location, current.version)) != want
        with pytest.raises(KeyError):
            open_version(location, current.version + 100)
    finally:
        for loc in (early, location):
            loc.close()  # type: ignore[attr-defined]


class _FollowingService:
    """A stand-in for a shard server's service: ``snapshot()`` is whatever was published."""

    def __init__(self) -> None:
        self.snap: Any = None

    def snapshot(self) -> Any:
        return self.snap


@given(st.lists(st.tuples(st.booleans(), st.integers(1, 5)), min_size=1, max_size=30))
def test_a_replica_answers_the_served_version_and_the_one_before_only(
    steps: list[tuple[bool, int]],
) -> None:
    """Against a brute-force model: a request pinned to V is answered from V exactly when
    V is one of the two versions served most recently, else refused (VERSION_NOT_HELD)."""
    service = _FollowingService()
    server = ShardServer(service, 0, 0)  # type: ignore[arg-type]
    served: list[int] = []  # every version switched to, in order
    for publish, v in steps:
        if publish or service.snap is None:
            if service.snap is None or service.snap.version != v:
                service.snap = SimpleNamespace(version=v, shards=[])
            server.current()
            if not served or served[-1] != service.snap.version:
                served.append(service.snap.version)
            continue
        last_seen = {x: i for i, x in enumerate(served)}
        recent = sorted(last_seen, key=last_seen.__getitem__)[-2:]
        if v in recent:
            assert server.version_for(str(v)).version == v
        else:
            with pytest.raises(VersionNotHeld):
                server.version_for(str(v))
        assert server.version_for(None).version == served[-1]
