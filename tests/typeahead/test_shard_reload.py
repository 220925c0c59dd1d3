"""Sharded serving loads a new snapshot without a restart, and never answers from two cuts.

Real shard server processes follow a snapshot store (the directory store, polled, and
the shared PostgreSQL store, told by ``NOTIFY``); the router follows it too. The test
publishes version B while three clients hammer the router: every shard moves to B with
the same process id, every answer is exactly the unsharded trie's answer of the one
version it names, and no client sees A again once it saw B. The unit tests below pin a
version on one shard server in-process.
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lookup.kit.http import ApiError
from lookup.typeahead.router import ShardRouter
from lookup.typeahead.shard_server import ShardServer
from lookup.typeahead.sharding import shard_snapshot
from lookup.typeahead.snapshot import Snapshot, open_snapshot_store, write_snapshot
from lookup.typeahead.supervisor import ShardCluster
from lookup.typeahead.trie import RadixTrie

MARKET = "en-IN"
A = "20260101T000000Z-00000a"
B = "20260102T000000Z-00000b"
COMMON = ["apple pie", "apple tart", "banana bread", "cherry cake", "date loaf", "fig jam",
          "grape juice", "kiwi salad", "lemon curd", "mango lassi", "olive oil", "pear tart",
          "plum jam", "quince paste", "rice pudding", "sago kheer", "tomato soup"]  # fmt: skip
#: B puts new suggestions first under some prefixes (``ap``, ``ba``, ``to``, ``p``).
STRINGS = {
    A: COMMON,
    B: ["apricot jam", "banana split", "tomato rice", "pumpkin pie", *COMMON],
}
PREFIXES = ["a", "ap", "appl", "ba", "b", "ch", "fi", "ki", "ma", "p", "pe", "pl", "ri", "to",
            "tom", "sa", "le", ""]  # fmt: skip


def write_version(tmp: Path, version: str) -> Path:
    strings = STRINGS[version]
    trie = RadixTrie()
    for i, s in enumerate(strings):
        trie.add(s, i)
    scores = np.arange(len(strings), 0, -1, dtype=float)
    return write_snapshot(
        tmp / f"{version}.trie", MARKET, trie.build(), strings, scores, version=version
    )


def expected(tmp: Path) -> dict[str, dict[str, list[str]]]:
    """The unsharded trie's answer per version and prefix (the oracle)."""
    out: dict[str, dict[str, list[str]]] = {}
    for version in (A, B):
        snap = Snapshot(write_version(tmp / "oracle", version))
        out[version] = {p: snap.suggest(p, 10) for p in PREFIXES}
        assert all(out[version].values()), "every probe must find something (no typo fallback)"
    assert out[A]["ap"] != out[B]["ap"] and out[A]["p"] != out[B]["p"]
    return out


@pytest.fixture(params=["directory", pytest.param("postgresql", marks=pytest.mark.postgres)])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "postgresql":
        return str(request.getfixturevalue("postgres_db"))
    return (tmp_path / "snapshots").as_uri()


@pytest.mark.slow  # real shard server processes
def test_every_shard_moves_to_the_new_version_without_a_restart_and_no_answer_mixes(
    store_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LOOKUP_TYPEAHEAD_RELOAD_POLL", "0.1")
    monkeypatch.setenv("LOOKUP_TYPEAHEAD_SNAPSHOT_CACHE", str(tmp_path / "cache"))
    oracle = expected(tmp_path)
    store = open_snapshot_store(store_url)
    (tmp_path / "staging").mkdir()
    store.publish(MARKET, A, write_version(tmp_path / "staging", A))
    root = tmp_path / "shards"
    first = store.open(MARKET)
    assert first is not None
    shard_snapshot(first, 2, root / MARKET)
    with ShardCluster(root, 2, store=store_url) as cluster:
        pids = [p.pid for p in cluster.procs]
        router = ShardRouter.from_root(root, cluster.addresses, timeout=10.0)
        router.follow(store, poll_s=0.1)
        answers = asyncio.run(_hammer(router, store, tmp_path))
        with httpx.Client(trust_env=False, timeout=5.0) as client:
            for i, address in enumerate(cluster.addresses):
                held = client.get(f"{address}/healthz").json()["systems"]["typeahead-shard"]
                assert held["pid"] == pids[i] and cluster.alive(i)
                assert held["markets"][MARKET]["version"] == B
        assert [p.pid for p in cluster.procs] == pids
        assert [(s["from"], s["to"]) for s in router.switches] == [(A, B)]
    failures = [a for a in answers if a[2] != 200]
    assert not failures, failures[:5]
    seen = {version for _, _, _, version, _ in answers}
    assert seen == {A, B}
    for worker, prefix, _, version, suggestions in answers:
        assert suggestions == oracle[version][prefix], (worker, prefix, version)
    for worker in {a[0] for a in answers}:
        mine = [version for w, _, _, version, _ in answers if w == worker]
        assert mine == sorted(mine), f"client {worker} saw {A} again after {B}"


async def _hammer(router: ShardRouter, store: Any, tmp: Path) -> list[tuple[Any, ...]]:
    """Three clients ask the router in turn while B is published; until every client has
    had answers from B."""
    answers: list[tuple[Any, ...]] = []
    stop = asyncio.Event()

    async def client(k: int) -> None:
        i = k
        while not stop.is_set():
            p = PREFIXES[i % len(PREFIXES)]
            i += 1
            raw = f"q={quote(p, safe='')}&market={MARKET}&limit=10".encode()
            try:
                body, _ = await router.answer(raw)
            except ApiError as exc:
                answers.append((k, p, exc.status, exc.code, exc.message))
                continue
            got = json.loads(body)
            answers.append((k, p, 200, got["version"], got["suggestions"]))

    clients = [asyncio.create_task(client(k)) for k in range(3)]
    try:
        await _until(lambda: len(answers) >= 30, "answers from A")
        await asyncio.to_thread(store.publish, MARKET, B, write_version(tmp / "staging", B))
        await _until(lambda: router.layouts[MARKET].source_version == B, "the switch to B")
        await _until(
            lambda: all(any(a[0] == k and a[3] == B for a in answers) for k in range(3)),
            "answers from B",
        )
    finally:
        stop.set()
        await asyncio.gather(*clients, return_exceptions=True)
        await router.aclose()
    return answers


async def _until(cond: Any, what: str, timeout: float = 120.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not cond():
        if loop.time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.02)


# -- one shard server, in-process ---------------------------------------------------------


def _server(tmp_path: Path) -> tuple[ShardServer, Any]:
    store = open_snapshot_store(tmp_path / "snapshots")
    (tmp_path / "staging").mkdir()
    store.publish(MARKET, A, write_version(tmp_path / "staging", A))
    snap = store.open(MARKET)
    assert snap is not None
    shard_snapshot(snap, 2, tmp_path / "shards" / MARKET)
    server = ShardServer(tmp_path / "shards", 0, store=store, n_shards=2)
    store.publish(MARKET, B, write_version(tmp_path / "staging", B))
    return server, store


def _ask(server: ShardServer, query: str) -> dict[str, Any]:
    body, version = server.answer(query.encode())
    got: dict[str, Any] = json.loads(body)
    assert got["version"] == version
    return got


def test_a_shard_server_switches_and_still_answers_a_request_pinned_to_the_old_version(
    tmp_path: Path,
) -> None:
    server, store = _server(tmp_path)
    assert server.version_of(MARKET) == A
    server.load_version(MARKET, B)
    assert server.version_of(MARKET) == B
    assert _ask(server, f"q=ap&market={MARKET}")["suggestions"][0] == "apricot jam"
    old = _ask(server, f"q=ap&market={MARKET}&version={A}")
    assert old["version"] == A and old["suggestions"][0] == "apple pie"
    with pytest.raises(ApiError) as exc:
        server.answer(f"q=ap&market={MARKET}&version=20200101T000000Z-000000".encode())
    assert (exc.value.status, exc.value.code) == (409, "VERSION_NOT_HELD")
    assert server.status()["markets"][MARKET]["held"] == [A, B]


def test_a_shard_server_holds_the_new_version_and_the_one_before_only(tmp_path: Path) -> None:
    server, store = _server(tmp_path)
    server.load_version(MARKET, B)
    server.load_version(MARKET, A)  # a rollback: A again, B kept as the one before
    assert list(server.held[MARKET]) == [B, A]
    c = "20260103T000000Z-00000c"
    STRINGS[c] = STRINGS[A][::-1]
    try:
        store.publish(MARKET, c, write_version(tmp_path / "staging", c))
        server.load_version(MARKET, c)
    finally:
        del STRINGS[c]
    assert list(server.held[MARKET]) == [A, c]
    reloads = tmp_path / "shards" / ".reload" / "shard-00" / MARKET
    assert sorted(os.listdir(reloads)) == sorted([A, c])


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(loads=st.lists(st.sampled_from([A, B]), min_size=1, max_size=6))
def test_whatever_the_order_of_switches_a_pinned_answer_comes_from_its_version(
    tmp_path_factory: pytest.TempPathFactory, loads: list[str]
) -> None:
    server, _ = _server(tmp_path_factory.mktemp("prop"))
    history = [A]
    for version in loads:
        server.load_version(MARKET, version)
        history = [v for v in history if v != version] + [version]
        assert server.version_of(MARKET) == version
        assert list(server.held[MARKET]) == history[-2:]
        for held in history[-2:]:
            got = _ask(server, f"q=ap&market={MARKET}&version={held}")
            assert got["version"] == held
            assert got["suggestions"][0] == STRINGS[held][0]


@pytest.mark.slow  # a process of its own
def test_serve_shard_refuses_a_store_without_a_shard_count(tmp_path: Path) -> None:
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-m", "lookup.cli", "typeahead", "serve-shard", "--dir", str(tmp_path),
         "--shard", "0", "--store", str(tmp_path / "snapshots")],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert out.returncode == 2 and "--store needs --shards" in out.stderr
