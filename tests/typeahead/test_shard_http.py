"""Prefix-range shards over real HTTP: shard servers as processes, one router, same answers.

The shard servers are real child processes (``lookup typeahead serve-shard``) on loopback
sockets; the router is the real app on uvicorn in a thread. The oracle is the unsharded
service over the same snapshots — what ``/v1/suggest`` answers on one machine.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import httpx
import pytest

from lookup.kit.http import ApiError
from lookup.server import create_app
from lookup.typeahead.router import ShardRouter, install_router
from lookup.typeahead.serving import SuggestService
from lookup.typeahead.sharding import (
    PLAN_FILE,
    ShardLayout,
    ensure_shard_sets,
    in_range,
    shard_file,
)
from lookup.typeahead.snapshot import Snapshot
from lookup.typeahead.supervisor import ShardCluster
from tests.conftest import ROOT, free_port, serve_in_thread, wait_http

from .conftest import Built

N_SHARDS = 3
MARKETS = ("en-IN", "hi-IN")


@dataclass
class Deployment:
    """A data directory cut into shards, the shard servers, the router and the oracle."""

    data_dir: Path
    root: Path
    cluster: ShardCluster
    router: ShardRouter
    url: str
    oracle: SuggestService


@pytest.fixture(scope="module")
def deployment(built: Built, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployment]:
    data_dir = tmp_path_factory.mktemp("sharded") / "data"
    shutil.copytree(built.data_dir, data_dir)
    root = ensure_shard_sets(data_dir, N_SHARDS)
    with ShardCluster(root, N_SHARDS) as cluster:
        router = ShardRouter.from_root(root, cluster.addresses)
        app = create_app(data_dir, subsystems=[lambda m: install_router(m, router)])
        with serve_in_thread(app) as url:
            oracle = SuggestService.from_data_dir(data_dir)
            oracle.infix = False  # the router serves no word-anywhere matches
            yield Deployment(data_dir, root, cluster, router, url, oracle)


@pytest.fixture(scope="module")
def client(deployment: Deployment) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=deployment.url, trust_env=False, timeout=10.0) as c:
        yield c


def prefixes_of(snap: Snapshot, seed: int, count: int = 220) -> list[str]:
    """1-char, 2-char, longer, Devanagari, unseen and unnormalised prefixes of a market."""
    rng = random.Random(seed)
    keys = [k for k, _ in snap.reader.iter_keys()]
    out = {""} | {k[0] for k in keys}
    twos = sorted({k[:2] for k in keys if len(k) >= 2})
    out |= set(rng.sample(twos, min(len(twos), count // 2)))
    for k in rng.sample(keys, min(len(keys), count)):
        out.add(k[: rng.randint(3, max(3, len(k)))])
    out |= {"q", "ž", "zzq", "xqjv", "क्", "क्ष", "क्षz", "ज़", "ab\u200d", "IP", "  ip", "ipl ", "Ka"}
    return sorted(out)


def get(client: httpx.Client, q: str, market: str, limit: int | None = None) -> httpx.Response:
    path = f"/v1/suggest?q={quote(q, safe='')}&market={market}"
    return client.get(path if limit is None else f"{path}&limit={limit}")


@pytest.mark.parametrize("market", MARKETS)
def test_routed_answers_equal_the_unsharded_trie(
    deployment: Deployment, client: httpx.Client, market: str
) -> None:
    snap = deployment.oracle.snapshot(market)
    layout = deployment.router.layouts[market]
    assert layout.source_version == snap.version and layout.plan.n == N_SHARDS
    prefixes = prefixes_of(snap, seed=len(market))
    assert len(prefixes) > 300
    rng = random.Random(4)
    answered_by: set[str] = set()
    for p in prefixes:
        limit = rng.choice([None, None, None, 1, 3, 10])
        r = get(client, p, market, limit)
        want = deployment.oracle.lookup(p, market, limit or 10).body()
        assert r.status_code == 200, (p, r.text)
        assert r.json() == want, p
        assert r.headers["cache-control"] == "public, max-age=300"
        norm = want["q"]
        expected = "head" if len(norm) <= 1 else str(layout.plan.shard_of(norm))
        assert r.headers["x-lookup-shard"] == expected, p
        answered_by.add(expected)
    assert answered_by == {"head", *map(str, range(N_SHARDS))}  # every shard served some


def test_each_shard_file_holds_only_its_range(deployment: Deployment) -> None:
    for market in MARKETS:
        source = deployment.oracle.snapshot(market)
        whole = {k: source.string(t) for k, t in source.reader.iter_keys()}
        layout = ShardLayout.load(deployment.root / market)
        seen: dict[str, str] = {}
        for i, (lo, hi) in enumerate(layout.plan.ranges()):
            shard = Snapshot(shard_file(deployment.root / market, i))
            assert (
                shard.meta["range"] == [lo, hi] and shard.meta["source_version"] == source.version
            )
            keys = {k: shard.string(t) for k, t in shard.reader.iter_keys()}
            assert keys and all(layout.plan.shard_of(k) == i for k in keys)
            assert all(in_range(k, lo, hi) for k in keys if len(k) >= 2)
            assert set(shard.strings()) == set(keys.values())  # only the strings it leads to
            assert not seen.keys() & keys.keys()
            seen |= keys
            scores = [shard.score(j) for j in range(shard.n_strings)]
            assert scores == sorted(scores, reverse=True)  # the global rank order, kept
        assert seen == whole  # together the shards hold every key, each leading to the same text
        assert set(layout.head) == {""} | {k[0] for k in whole}


def test_each_shard_server_maps_only_its_own_files(deployment: Deployment) -> None:
    if not Path("/proc/self/maps").exists():
        pytest.skip("needs /proc")
    with httpx.Client(trust_env=False, timeout=5.0) as c:
        for i, url in enumerate(deployment.cluster.addresses):
            held = c.get(f"{url}/healthz").json()["systems"]["typeahead-shard"]
            pid = deployment.cluster.procs[i].pid
            assert held["shard"] == i and held["pid"] == pid
            mapped = {
                line.split(maxsplit=5)[5]
                for line in Path(f"/proc/{pid}/maps").read_text().splitlines()
                if line.rstrip().endswith(".trie")
            }
            want = {str(shard_file(deployment.root / m, i)) for m in MARKETS}
            assert mapped == want


def test_shard_server_refuses_what_it_does_not_own(deployment: Deployment) -> None:
    layout = deployment.router.layouts["en-IN"]
    outside = next(b for b in ("ab", "ma", "zz", "st") if layout.plan.shard_of(b) != 0)
    with httpx.Client(base_url=deployment.cluster.addresses[0], trust_env=False) as c:
        r = c.get(f"/v1/shard/suggest?q={outside}&market=en-IN")
        assert r.status_code == 421 and r.json()["error"] == "WRONG_SHARD"
        r = c.get("/v1/shard/suggest?q=a&market=en-IN")
        assert r.status_code == 400 and r.json()["error"] == "NOT_SHARDED"
        for bad, code in [("q=ab%00", "INVALID_QUERY"), ("q=ab&limit=0", "INVALID_LIMIT"),
                          ("q=ab&market=xx-YY", "UNKNOWN_MARKET")]:  # fmt: skip
            r = c.get(f"/v1/shard/suggest?{bad}")
            assert r.status_code == 400 and r.json()["error"] == code


@pytest.mark.parametrize(
    "query, status, code",
    [
        ("q=" + "a" * 101, 400, "QUERY_TOO_LONG"),
        ("q=ab%07", 400, "INVALID_QUERY"),
        ("q=%FF%FE", 400, "INVALID_QUERY"),
        ("q=ab&limit=11", 400, "INVALID_LIMIT"),
        ("q=ab&limit=x", 400, "INVALID_LIMIT"),
        ("q=ab&market=fr-FR", 400, "UNKNOWN_MARKET"),
    ],
)
def test_router_refuses_bad_input(client: httpx.Client, query: str, status: int, code: str) -> None:
    r = client.get(f"/v1/suggest?{query}")
    assert r.status_code == status
    assert r.json()["error"] == code and r.json()["message"]


def test_router_method_and_status(client: httpx.Client) -> None:
    r = client.post("/v1/suggest?q=ip")
    assert r.status_code == 405 and r.json()["error"] == "METHOD_NOT_ALLOWED"
    status = client.get("/v1/typeahead/shards").json()
    assert set(status["markets"]) == set(MARKETS)
    assert [s["up"] for s in status["servers"]] == [True] * N_SHARDS
    assert all(s["holds"].keys() == set(MARKETS) for s in status["servers"])
    assert client.get("/healthz").json()["systems"]["typeahead-router"]["status"] == "ok"


def ask(router: ShardRouter, raw: str) -> tuple[int, str, str]:
    """``(status, error code or "", message or body)`` of one routed lookup, in a fresh loop."""

    async def once() -> tuple[int, str, str]:
        try:
            body, _ = await router.answer(raw.encode())
            return 200, "", body.decode()
        except ApiError as exc:
            return exc.status, exc.code, exc.message
        finally:
            await router.aclose()

    return asyncio.run(once())


def test_router_notices_a_shard_serving_another_cut(deployment: Deployment) -> None:
    stale = ShardRouter.from_root(deployment.root, deployment.cluster.addresses)
    stale.layouts["en-IN"].source_version = "20000101T000000Z-000000"
    assert ask(stale, "q=ip")[:2] == (503, "SHARD_MISMATCH")
    swapped = ShardRouter.from_root(deployment.root, deployment.cluster.addresses[::-1])
    q = next(b for b in ("ab", "ip", "zz") if swapped.layouts["en-IN"].plan.shard_of(b) != 1)
    assert ask(swapped, f"q={q}")[:2] == (503, "SHARD_MISMATCH")


def test_a_hung_shard_times_out_with_503(deployment: Deployment) -> None:
    hung = 2
    router = ShardRouter.from_root(deployment.root, deployment.cluster.addresses, timeout=0.3)
    plan = router.layouts["en-IN"].plan
    strings = deployment.oracle.snapshot("en-IN").strings()
    q = next(s[:3] for s in strings if len(s) >= 3 and plan.shard_of(s) == hung)
    other = next(s[:3] for s in strings if len(s) >= 3 and plan.shard_of(s) != hung)
    pid = deployment.cluster.procs[hung].pid
    os.kill(pid, signal.SIGSTOP)  # the process is there, its socket accepts, nothing answers
    try:
        status, code, message = ask(router, f"q={quote(q)}")
        assert ask(router, f"q={quote(other)}")[0] == 200
    finally:
        os.kill(pid, signal.SIGCONT)
    assert (status, code) == (503, "SHARD_UNAVAILABLE")
    assert f"shard {hung} of en-IN" in message and "within 0.3 s" in message


def test_a_dead_shard_fails_only_its_range_then_recovers(
    deployment: Deployment, client: httpx.Client
) -> None:
    dead = 1
    cluster = deployment.cluster
    samples = {m: prefixes_of(deployment.oracle.snapshot(m), seed=9, count=60) for m in MARKETS}
    cluster.stop_shard(dead, kill=True)
    try:
        failed = 0
        for market, prefixes in samples.items():
            plan = deployment.router.layouts[market].plan
            for p in prefixes:
                r = get(client, p, market)
                want = deployment.oracle.lookup(p, market).body()
                if len(want["q"]) >= 2 and plan.shard_of(want["q"]) == dead:
                    assert r.status_code == 503, p
                    body = r.json()
                    assert (
                        body["error"] == "SHARD_UNAVAILABLE" and f"shard {dead} " in body["message"]
                    )
                    assert r.headers["retry-after"] == "1"
                    failed += 1
                else:
                    assert r.status_code == 200 and r.json() == want, p
        assert failed >= 10
        servers = client.get("/v1/typeahead/shards").json()["servers"]
        assert [s["up"] for s in servers] == [i != dead for i in range(N_SHARDS)]
        assert servers[dead]["failures"] >= failed and servers[dead]["lastError"]
    finally:
        cluster.restart_shard(dead)
    for market, prefixes in samples.items():
        for p in prefixes:
            r = get(client, p, market)
            assert r.status_code == 200 and r.json() == deployment.oracle.lookup(p, market).body()


def test_shard_sets_are_cut_again_only_when_the_snapshot_changes(deployment: Deployment) -> None:
    plan = deployment.root / "en-IN" / PLAN_FILE
    before = plan.stat().st_mtime_ns
    assert ensure_shard_sets(deployment.data_dir, N_SHARDS) == deployment.root
    assert plan.stat().st_mtime_ns == before
    other = deployment.data_dir.parent / "other"  # a copy whose cut is out of date
    shutil.copytree(deployment.data_dir, other)
    stale = other / deployment.root.relative_to(deployment.data_dir) / "hi-IN" / PLAN_FILE
    body = json.loads(stale.read_text(encoding="utf-8"))
    body["source_version"] = "20000101T000000Z-000000"
    stale.write_text(json.dumps(body), encoding="utf-8")
    root = ensure_shard_sets(other, N_SHARDS)
    assert (
        ShardLayout.load(root / "hi-IN").source_version
        == deployment.oracle.snapshot("hi-IN").version
    )
    assert not [p for p in root.iterdir() if p.name.startswith(".")]  # no leftovers
    with pytest.raises(LookupError, match="lookup typeahead build"):
        ensure_shard_sets(other.parent / "empty", 2)


def test_serve_shards_command(built: Built, tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    shutil.copytree(built.data_dir, data_dir)
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "lookup.cli", "typeahead", "serve-shards", "--shards", "2",
         "--port", str(port), "--data-dir", str(data_dir)],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        wait_http(f"{url}/healthz", proc, timeout=90)
        oracle = SuggestService.from_data_dir(data_dir)
        oracle.infix = False  # the router serves no word-anywhere matches
        with httpx.Client(base_url=url, trust_env=False) as c:
            for q, market in [("ip", "en-IN"), ("i", "en-IN"), ("क्", "hi-IN"), ("zzq", "en-IN")]:
                r = get(c, q, market)
                assert r.status_code == 200 and r.json() == oracle.lookup(q, market).body()
            pids = [s["pid"] for s in c.get("/v1/typeahead/shards").json()["servers"]]
        assert len(pids) == 2 and all(isinstance(p, int) for p in pids)
    finally:
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 0, out.decode()
    assert b"typeahead router on" in out and b"shard 1 at http://127.0.0.1:" in out
    deadline = time.monotonic() + 10
    while any(_running(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(_running(p) for p in pids)  # the shard servers stopped with it


def _running(pid: int) -> bool:
    """True if ``pid`` exists and is not a zombie waiting to be reaped."""
    try:
        os.kill(pid, 0)
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (ProcessLookupError, FileNotFoundError):
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"
