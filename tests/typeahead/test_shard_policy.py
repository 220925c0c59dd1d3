"""The sharded deployment honours the serve-time policy: the hot blocklist and trending.

Real shard servers (child processes on loopback) behind the real router app; the oracle
is the single-server :class:`SuggestService` over the same data directory — the same
blocklist file, the same trending policy and clock, the same searches recorded.
"""

from __future__ import annotations

import random
import shutil
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from lookup.kit.admin import server_admin_token
from lookup.kit.clients import network_of
from lookup.server import create_app
from lookup.typeahead.normalize import normalize_prefix
from lookup.typeahead.pipeline import blocklist_path
from lookup.typeahead.router import ShardRouter, install_router, shards_spanned
from lookup.typeahead.serving import SuggestService
from lookup.typeahead.shard_server import top_n
from lookup.typeahead.sharding import ShardLayout, ensure_shard_sets, shard_file
from lookup.typeahead.snapshot import Snapshot
from lookup.typeahead.supervisor import ShardCluster
from lookup.typeahead.trending import TrendingPolicy

from .conftest import Built
from .test_shard_http import get, prefixes_of, serve_in_thread

N_SHARDS = 3
MARKETS = ("en-IN", "hi-IN")
POLICY = TrendingPolicy(floor=30, min_users=5, min_networks=5)


class FakeClock:
    """A clock the test moves by hand, shared by the router and the oracle."""

    def __init__(self) -> None:
        self.now = 1_790_000_000.0

    def __call__(self) -> float:
        return self.now


@dataclass
class Deployment:
    """Shard servers, a router with serve-time policy, and the single-server oracle."""

    data_dir: Path
    root: Path
    router: ShardRouter
    oracle: SuggestService
    clock: FakeClock
    url: str


@pytest.fixture(scope="module")
def dep(built: Built, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployment]:
    data_dir = tmp_path_factory.mktemp("sharded-policy") / "data"
    shutil.copytree(built.data_dir, data_dir)
    root = ensure_shard_sets(data_dir, N_SHARDS)
    clock = FakeClock()
    with ShardCluster(root, N_SHARDS) as cluster:
        router = ShardRouter.from_root(root, cluster.addresses)
        router.attach_serving(data_dir, clock=clock, trending=POLICY)
        app = create_app(data_dir, subsystems=[lambda m: install_router(m, router)])
        with serve_in_thread(app) as url:
            oracle = SuggestService.from_data_dir(data_dir, clock=clock, trending=POLICY)
            oracle.infix = False  # the router serves no word-anywhere matches
            yield Deployment(data_dir, root, router, oracle, clock, url)


@pytest.fixture(scope="module")
def client(dep: Deployment) -> Iterator[httpx.Client]:
    """A client holding the admin token (the blocklist edits here are an operator's)."""
    admin = {"Authorization": f"Bearer {server_admin_token(dep.data_dir)}"}
    with httpx.Client(base_url=dep.url, trust_env=False, timeout=10.0, headers=admin) as c:
        yield c


def common_words(snap: Snapshot, n: int = 2, top: int = 400) -> list[str]:
    """The ``n`` words (of 3+ characters) in the most of the best ``top`` suggestions."""
    words = Counter(w for s in snap.strings()[:top] for w in set(s.split()) if len(w) >= 3)
    return [w for w, _ in words.most_common(n)]


def routed_equal_oracle(
    dep: Deployment, client: httpx.Client, market: str, prefixes: list[str], seed: int
) -> list[tuple[str, int, list[str]]]:
    """Assert every routed answer equals the oracle's; returns ``(prefix, limit, answer)``."""
    rng = random.Random(seed)
    out = []
    for p in prefixes:
        limit = rng.choice([10, 10, 1, 3, 5])
        r = get(client, p, market, limit)
        want = dep.oracle.lookup(p, market, limit).body()
        assert r.status_code == 200, (p, r.text)
        assert r.json() == want, (market, p, limit)
        out.append((p, limit, want["suggestions"]))
    return out


def test_top_n_is_the_exact_best_n(built: Built, tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    shutil.copytree(built.data_dir, data_dir)
    root = ensure_shard_sets(data_dir, 2)
    snap = Snapshot(shard_file(root / "en-IN", 1))
    keys = list(snap.reader.iter_keys())
    rng = random.Random(3)
    prefixes = {k[:n] for k, _ in rng.sample(keys, 150) for n in (2, 3, 5)}
    for p in sorted(prefixes):
        every = sorted({t for k, t in keys if k.startswith(p)})
        for n in (1, 10, 11, 25, 200):
            assert top_n(snap, p, n) == every[:n], (p, n)
    layout = ShardLayout.load(root / "en-IN")
    for first in {k[0] for k, _ in keys} | {""}:
        holding = {layout.plan.shard_of(k) for k in (k for k, _ in keys) if k.startswith(first)}
        assert holding <= set(shards_spanned(layout.plan, first))


@pytest.mark.parametrize("market", MARKETS)
def test_router_applies_the_hot_blocklist_like_the_single_server(
    dep: Deployment, client: httpx.Client, market: str
) -> None:
    snap = dep.oracle.snapshot(market)
    words = common_words(snap, n=4)
    r = client.post("/v1/typeahead/blocklist", json={"terms": words})
    assert r.status_code == 200 and r.json()["terms"] == sorted(words)
    try:
        assert dep.oracle.blocklist.refresh()  # the single server reads the same file
        lines = blocklist_path(dep.data_dir).read_text(encoding="utf-8").split("\n")
        assert set(words) <= set(lines)
        prefixes = prefixes_of(snap, seed=11, count=150)
        hit = [s for s in snap.strings()[:300] if set(words) & set(s.split())]
        prefixes += sorted({s[:n] for s in hit for n in (2, 3)})
        assert len(prefixes) > 250
        answers = routed_equal_oracle(dep, client, market, prefixes, seed=5)
        # the blocklist mattered, and often needed more than the stored list held
        blocked = deeper = head_deeper = 0
        for p, limit, got in answers:
            q = normalize_prefix(p)
            blocked += any(set(words) & set(s.split()) for s in snap.suggest(q, limit))
            beyond = any(s not in snap.suggest(q) for s in got)  # past the stored top 10
            deeper += beyond
            head_deeper += beyond and len(q) <= 1
        assert blocked >= 20 and deeper >= 5
        assert head_deeper >= 1  # head-table prefixes were refilled from the shards too
    finally:
        for word in words:
            r = client.delete("/v1/typeahead/blocklist", params={"term": word})
            assert r.status_code == 200
        dep.oracle.blocklist.refresh()
    routed_equal_oracle(dep, client, market, prefixes_of(snap, seed=12, count=40), seed=6)


def test_a_blocked_term_disappears_within_seconds_without_a_rebuild(
    dep: Deployment, client: httpx.Client
) -> None:
    market = "en-IN"
    snap = dep.oracle.snapshot(market)
    target = next(s for s in snap.strings()[5:] if len(s) >= 6 and " " not in s[:3])
    p = target[:3]
    assert target in get(client, p, market).json()["suggestions"]
    path = blocklist_path(dep.data_dir)
    before = path.read_text(encoding="utf-8") if path.exists() else ""
    path.write_text(before + target + "\n", encoding="utf-8")  # an operator edits the file
    try:
        deadline = time.monotonic() + 10
        while target in get(client, p, market).json()["suggestions"]:
            assert time.monotonic() < deadline, "the blocklist file edit was not picked up"
            time.sleep(0.1)
        dep.oracle.blocklist.refresh()
        prefixes = [target[:n] for n in range(len(target) + 1)]
        answers = routed_equal_oracle(dep, client, market, prefixes, seed=1)
        assert not any(target in got for _, _, got in answers)
        status = client.get("/v1/typeahead/blocklist").json()
        assert status["terms"] == [target] and status["version"] >= 1
    finally:
        path.write_text(before, encoding="utf-8")
    deadline = time.monotonic() + 10
    while target not in get(client, p, market).json()["suggestions"]:
        assert time.monotonic() < deadline, "removing the term from the file was not picked up"
        time.sleep(0.1)
    dep.oracle.blocklist.refresh()


def test_a_burst_of_searches_trends_in_routed_answers_like_on_the_single_server(
    dep: Deployment, client: httpx.Client
) -> None:
    market = "en-IN"
    snap = dep.oracle.snapshot(market)
    strings = snap.strings()
    full = next(s for s in strings[20:] if " " not in s[:2] and len(snap.suggest(s[:2])) == 10)
    new = f"{full[:2]}zq trending now"  # a query the snapshot has never seen
    known = next(s for s in strings[len(strings) // 2 :] if len(s) >= 4)  # a small score
    for i in range(POLICY.floor + 10):
        for q in (new, known):
            # The admin client is a trusted relay: it names each user and their address.
            user = f"u{i % (POLICY.min_users + 2)}"
            address = f"198.51.{i % (POLICY.min_users + 2)}.7"
            body = {"q": q, "market": market, "userId": user, "clientAddress": address}
            r = client.post("/v1/searches", json=body)
            assert r.status_code == 202 and r.json()["recorded"]
            assert dep.oracle.record_search(q, market, user, network_of(address)) == q
    trending = client.get("/v1/typeahead/trending", params={"market": market}).json()
    want = [t.to_dict() for t in dep.oracle.tracker.trending(market)]  # type: ignore[union-attr]
    assert trending["terms"] == want and {t["q"] for t in want} == {new, known}
    prefixes = sorted(
        {q[:n] for q in (new, known) for n in range(len(q) + 1)} | set(prefixes_of(snap, 2, 60))
    )
    answers = dict((p, got) for p, _, got in routed_equal_oracle(dep, client, market, prefixes, 4))
    assert new in answers[new[:3]] and known in answers[known]
    assert new not in snap.suggest(new[:2], 10)
    dep.clock.now += POLICY.window_s + 120  # the window moves past the burst: both fade
    routed_equal_oracle(dep, client, market, [new[:3], known[:3], ""], seed=8)
    assert new not in get(client, new[:3], market).json()["suggestions"]


def test_policy_endpoints_refuse_bad_input(client: httpx.Client) -> None:
    cases = [
        (client.post("/v1/typeahead/blocklist", json={"terms": "x"}), 400, "INVALID_REQUEST"),
        (client.post("/v1/typeahead/blocklist", json={"terms": ["\x07"]}), 400, "INVALID_TERM"),
        (client.delete("/v1/typeahead/blocklist", params={"term": "make a bomb"}), 409,
         "BUILTIN_TERM"),
        (client.delete("/v1/typeahead/blocklist", params={"term": "never added"}), 404,
         "NOT_FOUND"),
        (client.post("/v1/searches", json={"q": "ipl", "market": "fr-FR"}), 400,
         "UNKNOWN_MARKET"),
        (client.post("/v1/searches", json={"q": "  "}), 400, "INVALID_QUERY"),
        (client.post("/v1/searches", json={"q": "a\x00b"}), 400, "INVALID_QUERY"),
        (client.get("/v1/typeahead/trending", params={"market": "xx-YY"}), 404,
         "UNKNOWN_MARKET"),
    ]  # fmt: skip
    for r, status, code in cases:
        assert r.status_code == status and r.json()["error"] == code, r.text
    health = client.get("/healthz").json()["systems"]["typeahead-router"]
    assert health["status"] == "ok" and health["blocklistTerms"] == 0
