"""The shard protocol's wire format and the shard server's endpoint, in-process."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from queue import SimpleQueue

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient

from lookup.kit.asgi import build_app
from lookup.search import SearchService
from lookup.search import query as query_lang
from lookup.search.analysis import Phrase
from lookup.search.bm25 import Signals, make_plan
from lookup.search.coordinator import Coordinator
from lookup.search.matching import scoring_of
from lookup.search.remote import Member, RemoteShards, ShardUnavailable, VacantReplica
from lookup.search.shard_server import QUERY_PATH, ShardServer, install_shard
from lookup.search.wire import (
    WireError,
    decode_answer,
    decode_plan,
    encode_answer,
    encode_plan,
)
from tests.search.corpus import BASE_TIME

NOW = BASE_TIME + 40 * 86400
WORDS = ["python", "file", "return", "value", "list", "pyth", "site", "title"]
PIECES = WORDS + ["AND", "OR", "NOT", "-", "(", ")", '"', "*", "~", "^2", "title:", "site:"]


def _plan_of(text: str, **options: object) -> object:
    node = query_lang.parse(text) if query_lang.has_operators(text) else None
    terms = sorted(set(w for w in text.lower().split() if w.isalpha()))[:8] or ["python"]
    return make_plan(
        terms,
        [len(t) for t in terms],
        400,
        40_000,
        k=10,
        now=NOW,
        signals=Signals(link_weight=0.1 / 3, fresh_weight=0.05 / 7),
        phrases=(Phrase(("a", "b"), (0, 2)),) if node is None else (),
        expr=node,
        scoring=None if node is None else scoring_of(node),
        **options,
    )


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(PIECES), min_size=1, max_size=10), st.booleans())
def test_any_plan_comes_back_equal(pieces: list[str], facets: bool) -> None:
    text = " ".join(pieces)
    try:
        plan = _plan_of(text, facets=facets, exact_count=not facets, track_total=7)
    except query_lang.QuerySyntaxError:
        return
    back = decode_plan(encode_plan(plan))  # type: ignore[arg-type]
    assert back == plan
    assert back.idfs == plan.idfs  # type: ignore[attr-defined]  # bit for bit, not approximately


@pytest.mark.parametrize(
    "body",
    [
        b"not json",
        b"[]",
        b'{"c": "Popen", "f": {}}',
        b'{"c": "QueryPlan", "f": {"nope": 1}}',
        b'{"c": "QueryPlan", "f": {"terms": {"t": []}}}',
        json.dumps({"t": [1]}).encode(),
        b'{"c": "Signals", "f": {}}',
        ("[" * 5000 + "]" * 5000).encode(),
    ],
)
def test_anything_but_a_plan_is_refused(body: bytes) -> None:
    with pytest.raises(WireError):
        decode_plan(body)


def test_only_known_classes_are_sent() -> None:
    from lookup.search import wire

    with pytest.raises(TypeError):
        wire.encode_plan(object())  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def served(index_4: Path) -> Iterator[tuple[SearchService, TestClient]]:
    svc = SearchService(index_4, realtime=False)
    server = ShardServer(svc, 1, 0)
    app = build_app(index_4.parent, subsystems=[lambda m: install_shard(m, server)])
    with TestClient(app) as client:
        yield svc, client
    svc.close()


def test_the_endpoint_answers_what_the_shard_answers(
    served: tuple[SearchService, TestClient],
) -> None:
    svc, client = served
    snap = svc.snapshot()
    plan = make_plan(["return", "value"], [snap.df("return"), snap.df("value")],
                     snap.live_docs, snap.live_length, k=20, now=NOW, facets=True)  # fmt: skip
    reply = client.post(QUERY_PATH, content=encode_plan(plan))
    assert reply.status_code == 200, reply.text
    answer, version = decode_answer(reply.content)
    want = snap.shards[1].search(plan)
    assert version == str(snap.version)
    assert answer.hits == want.hits and answer.matched == want.matched
    assert (answer.mode, answer.docs, answer.exact) == (want.mode, want.docs, want.exact)
    assert answer.facets is not None and want.facets is not None
    assert answer.facets.counts == want.facets.counts
    again, _ = decode_answer(encode_answer(want, version))
    assert again.hits == want.hits
    health = client.get("/healthz").json()["systems"]["search-shard"]
    assert health["shard"] == 1 and health["replica"] == 0
    assert health["version"] == str(snap.version) and health["status"] == "ok"


@pytest.mark.parametrize("body", [b"{", b'{"c": "Fuzzy", "f": {}}', b"x" * 300_000])
def test_a_bad_plan_is_a_4xx_json_error(
    served: tuple[SearchService, TestClient], body: bytes
) -> None:
    _, client = served
    reply = client.post(QUERY_PATH, content=body)
    assert 400 <= reply.status_code < 500
    assert reply.json()["error"] in ("INVALID_PLAN", "PLAN_TOO_LARGE", "PAYLOAD_TOO_LARGE")


def test_a_shard_the_version_lacks_is_404(index_4: Path) -> None:
    svc = SearchService(index_4, realtime=False)
    server = ShardServer(svc, 9, 0)
    app = build_app(index_4.parent, subsystems=[lambda m: install_shard(m, server)])
    plan = make_plan(["python"], [1], 10, 100, k=5, now=NOW)
    with TestClient(app) as client:
        reply = client.post(QUERY_PATH, content=encode_plan(plan))
        assert reply.status_code == 404 and reply.json()["error"] == "NO_SUCH_SHARD"
    svc.close()


def test_members_can_be_replaced_and_a_shard_without_one_fails_fast() -> None:
    coordinator = Coordinator(inline=False)
    shards = RemoteShards(coordinator, timeout_s=0.5)
    shards.set_members(
        [{"address": "http://127.0.0.1:9", "shard": 0, "replica": r} for r in (0, 1)]
        + [{"address": "http://127.0.0.1:10", "shard": 2, "replica": 0}]
    )
    assert [len(g.replicas) for g in coordinator.groups] == [2, 1, 1]
    assert isinstance(coordinator.groups[1].replicas[0], VacantReplica)
    kept = coordinator.groups[0].replicas[1]
    shards.set_members([{"address": "http://127.0.0.1:9/", "shard": 0, "replica": 1}])
    assert coordinator.groups[0].replicas == [kept]  # the same client, counters kept
    assert isinstance(coordinator.groups[2].replicas[0], VacantReplica)
    inbox: SimpleQueue = SimpleQueue()
    coordinator.groups[1].replicas[0].submit(None, None, False, inbox)  # type: ignore[arg-type]
    assert isinstance(inbox.get_nowait()[1], ShardUnavailable)
    with pytest.raises(ValueError):
        Member.of({"address": "127.0.0.1:9", "shard": 0, "replica": 0})
    coordinator.close()


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.lists(st.tuples(st.integers(0, 3), st.integers(0, 2)), max_size=8),
        min_size=1,
        max_size=4,
    )
)
def test_each_shard_is_served_by_exactly_its_members(rounds: list[list[tuple[int, int]]]) -> None:
    """Whatever member sets follow each other, a shard's replicas are its members in
    replica order (a vacant stand-in when it has none), and a known member keeps its
    replica object."""
    coordinator = Coordinator(inline=False)
    shards = RemoteShards(coordinator, timeout_s=0.5)
    before: dict[tuple[int, int], object] = {}  # the last round's replica objects
    try:
        for pairs in rounds:
            members = [
                {"address": f"http://127.0.0.1:{1000 + 10 * s + r}", "shard": s, "replica": r}
                for s, r in pairs
            ]
            shards.set_members(members)
            now: dict[tuple[int, int], object] = {}
            for s, group in enumerate(coordinator.groups):
                want = sorted({r for s2, r in pairs if s2 == s})
                if not want:
                    assert [type(x) for x in group.replicas] == [VacantReplica]
                    continue
                assert [x.replica for x in group.replicas] == want
                for x in group.replicas:
                    now[(s, x.replica)] = x
                    assert before.get((s, x.replica), x) is x  # kept, not rebuilt
            before = now
    finally:
        coordinator.close()


@pytest.mark.parametrize(
    "args",
    [["--shard", "-1"], ["--shard", "0", "--replica", "-2"], ["--shard", "0", "--port", "70000"]],
)
def test_serve_shard_refuses_bad_arguments(args: list[str], tmp_path: Path) -> None:
    from lookup.cli import main

    assert main(["search", "serve-shard", "--data-dir", str(tmp_path), *args]) == 2
