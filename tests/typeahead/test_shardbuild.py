"""Shards built in parallel, each from its own keys, equal today's single build cut into shards.

Oracles: today's build (:func:`compile_market`'s one trie) cut by today's code
(:func:`shard_market`, or :func:`write_shards` over the same boundaries), and a brute
force top k over the keys.
"""

from __future__ import annotations

import dataclasses
import json
import random
import shutil
import tempfile
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any
from unittest import mock
from urllib.parse import quote

import httpx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lookup.server import create_app
from lookup.typeahead import sharding
from lookup.typeahead.filters import DEFAULT_BLOCKLIST, TermBlocklist
from lookup.typeahead.pipeline import compile_market, snapshot_root
from lookup.typeahead.router import ShardRouter, install_router
from lookup.typeahead.serving import SuggestService
from lookup.typeahead.shardbuild import (
    ScoredKeys,
    ShardTask,
    build_shard,
    build_shards,
    merge_head,
    plan_for,
)
from lookup.typeahead.sharding import (
    PLAN_FILE,
    ShardedSuggest,
    ShardPlan,
    shard_file,
    shard_market,
    write_shards,
)
from lookup.typeahead.snapshot import Snapshot, open_snapshot_store, write_snapshot
from lookup.typeahead.supervisor import ShardCluster
from lookup.typeahead.trie import RadixTrie, TrieReader, brute_force_top
from tests.conftest import serve_in_thread

from .conftest import Built

Answer = tuple[list[str], list[float], bool]


def answer(router: ShardedSuggest, prefix: str) -> Answer:
    """Suggestions, their scores and completeness, from the head table or the owning shard."""
    if len(prefix) <= 1:
        entry = router.head.get(prefix, {"suggestions": [], "scores": [], "complete": True})
        return entry["suggestions"], entry["scores"], entry["complete"]
    snap = router.shards[router.plan.shard_of(prefix)]
    found = snap.find(prefix)
    return snap.texts(found.ids), [float(x) for x in snap.scores_of(found.ids)], found.complete


def whole_answer(whole: Snapshot, prefix: str) -> Answer:
    found = whole.find(prefix)
    return whole.texts(found.ids), [whole.score(i) for i in found.ids], found.complete


def assert_same_files(ours: Path, theirs: Path, n: int, *, plan_exact: bool = True) -> None:
    """Every shard file holds the same arrays, strings, scores and metadata; same plan.json."""
    for i in range(n):
        a, b = Snapshot(shard_file(ours, i)), Snapshot(shard_file(theirs, i))
        assert (a.market, a.k, a.meta, a.header["counts"]) == (b.market, b.k, b.meta,
                                                              b.header["counts"])  # fmt: skip
        assert a.strings() == b.strings()
        arrays_a, arrays_b = a.arrays(), b.arrays()
        assert arrays_a.keys() == arrays_b.keys()
        for name in arrays_a:
            assert np.array_equal(arrays_a[name], arrays_b[name]), (i, name)
        assert a.reader.labels_of()[0] == b.reader.labels_of()[0]
    body_a = json.loads((ours / PLAN_FILE).read_text(encoding="utf-8"))
    body_b = json.loads((theirs / PLAN_FILE).read_text(encoding="utf-8"))
    if not plan_exact:
        assert body_a["plan"]["starts"] == body_b["plan"]["starts"]
        body_a["plan"] = body_b["plan"]
    assert body_a == body_b


def serial(fn: Any, tasks: Any) -> list[Any]:
    return [fn(t) for t in tasks]


@pytest.mark.parametrize(("market", "n_shards"), [("en-IN", 3), ("hi-IN", 2), ("hi-IN", 4)])
def test_parallel_build_equals_todays_build_cut_into_shards(
    built: Built, tmp_path: Path, market: str, n_shards: int
) -> None:
    build = built.builds[market]
    plan = plan_for(build, n_shards)
    assert plan.n == n_shards
    with ThreadPoolExecutor(2) as pool:
        paths = build_shards(build, plan, tmp_path / "ours", map=pool.map)
    assert paths == [shard_file(tmp_path / "ours", i) for i in range(n_shards)]
    today = shard_market(build, n_shards, tmp_path / "today")
    assert today.starts == plan.starts
    assert_same_files(tmp_path / "ours", tmp_path / "today", n_shards)

    # every prefix of every query of the log (kept or filtered) answers the same: terms,
    # scores, order and completeness, through both cuts and the unsharded trie
    ours, theirs = ShardedSuggest(tmp_path / "ours"), ShardedSuggest(tmp_path / "today")
    whole = Snapshot(write_snapshot(tmp_path / "whole.trie", market, build.trie, build.strings,
                                    build.scores, infix=False))  # fmt: skip
    queries = built.board.markets[market].queries
    prefixes = {q[:j] for q in queries for j in range(len(q) + 1)} | {"zzq", "क्षz"}
    assert len(prefixes) > 1000
    served = set()
    for p in sorted(prefixes):
        got = answer(ours, p)
        assert got == answer(theirs, p) == whole_answer(whole, p), p
        if len(p) >= 2:
            served.add(ours.plan.shard_of(p))
    assert served == set(range(n_shards))


def test_default_pool_builds_the_same_shards(built: Built, tmp_path: Path) -> None:
    """Without ``map`` the shards are built on a process pool of two workers."""
    build = built.builds["hi-IN"]
    plan = plan_for(build, 2)
    build_shards(build, plan, tmp_path / "pool")
    build_shards(build, plan, tmp_path / "serial", map=map)
    assert_same_files(tmp_path / "pool", tmp_path / "serial", 2)


def test_k_follows_the_market_build(built: Built, tmp_path: Path) -> None:
    """A build made with another k per node is cut with that k, as today's cut does."""
    config = dataclasses.replace(built.config, k=3)
    build = compile_market(built.board.markets["hi-IN"], TermBlocklist(DEFAULT_BLOCKLIST), config)
    build_shards(build, plan_for(build, 3), tmp_path / "ours", map=map)
    shard_market(build, 3, tmp_path / "today")
    assert_same_files(tmp_path / "ours", tmp_path / "today", 3)
    assert Snapshot(shard_file(tmp_path / "ours", 0)).k == 3


# ----------------------------------------------------------------- random tables, random cuts

ALPHABET = "abcक्ष"


@st.composite
def scored_tables(draw: st.DrawFn) -> tuple[ScoredKeys, list[str]]:
    """A small market as compile_market makes one: ranked strings (ties in score broken
    by the string, as there), their own keys, alias keys (another rank's misspelling or
    spelling), and duplicate keys; plus random boundaries."""
    texts = draw(st.lists(st.text(ALPHABET, min_size=1, max_size=4), min_size=1, max_size=30,
                          unique=True))  # fmt: skip
    levels = draw(st.lists(st.sampled_from([0.5, 1.0, 2.0, 7.0]), min_size=len(texts),
                           max_size=len(texts)))  # fmt: skip  # few levels: many ties
    score_of = dict(zip(texts, levels, strict=True))
    ranked = sorted(score_of, key=lambda s: (-score_of[s], s))
    rank = {s: i for i, s in enumerate(ranked)}
    keys = [(s, rank[s], False) for s in ranked]
    aliases = draw(st.lists(st.tuples(st.text(ALPHABET, min_size=1, max_size=4),
                                      st.sampled_from(ranked)), max_size=8))  # fmt: skip
    keys += [(key, rank[target], key != target) for key, target in aliases]
    keys = draw(st.permutations(keys))
    buckets = sorted({key[:2] for key, _, _ in keys})  # cuts mostly where keys are
    cut = st.sampled_from(buckets[1:] or buckets) | st.text(ALPHABET, min_size=1, max_size=2)
    cuts = draw(st.lists(cut, min_size=1, max_size=4))
    scores = np.array([score_of[s] for s in ranked], dtype=np.float64)
    return ScoredKeys("xx-XX", ranked, scores, keys), ["", *sorted(set(cuts))]


@settings(max_examples=80, deadline=None)
@given(scored_tables(), st.sampled_from([1, 2, 3, 10]))
def test_random_tables_and_boundaries_equal_todays_cut(
    table: tuple[ScoredKeys, list[str]], k: int
) -> None:
    scored, starts = table
    plan = ShardPlan(starts)
    owners = {plan.shard_of(key) for key, _, _ in scored.keys}
    with tempfile.TemporaryDirectory() as tmp:
        ours, theirs = Path(tmp) / "ours", Path(tmp) / "today"
        if len(owners) < plan.n:  # a shard without keys has no trie: refused, nothing written
            with pytest.raises(ValueError, match="own no keys"):
                build_shards(scored, starts, ours, map=map, k=k)
            assert not (ours / PLAN_FILE).exists()
            return
        build_shards(scored, starts, ours, map=map, k=k, source_version="v1")
        # today's cut over the same boundaries (its planner made to draw these)
        cut = ShardPlan(list(starts))
        with mock.patch.object(sharding, "plan_shards", lambda *_a, **_k: cut):
            trie = RadixTrie(k)
            for key, t, alias in scored.keys:
                trie.add(key, t, alias=alias)
            full = TrieReader.from_arrays(trie.build())

            def head(prefix: str) -> tuple[list[str], bool, list[float]]:
                node = full.locate(prefix)
                ids = list(full.top(node)) if node >= 0 else []
                scores = [float(np.float32(scored.scores[t])) for t in ids]
                return [scored.strings[t] for t in ids], node < 0 or full.is_complete(node), scores

            write_shards(scored.market, scored.keys, scored.strings, scored.scores, head,
                         plan.n, theirs, k=k, source_version="v1")  # fmt: skip
        assert_same_files(ours, theirs, plan.n, plan_exact=False)
        # and against brute force: the k best ranks of every key under each prefix (a key
        # given twice leads to its better rank, as in the trie)
        router = ShardedSuggest(ours)
        best: dict[str, int] = {}
        for key, t, _ in scored.keys:
            best[key] = min(t, best.get(key, t))
        prefixes = {key[:j] for key in best for j in range(len(key) + 1)}
        for p in prefixes | {"zz", "b"}:
            want = [scored.strings[t] for t in brute_force_top(best.items(), p, k)]
            assert answer(router, p)[0] == want, p


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.lists(st.integers(0, 40), unique=True, max_size=6), st.booleans()),
                min_size=1, max_size=4), st.integers(1, 6))  # fmt: skip
def test_head_merge_is_the_top_k_of_the_union(
    answers: list[tuple[list[int], bool]], k: int
) -> None:
    shard_answers = [(sorted(ids)[:k], ok and len(ids) <= k) for ids, ok in answers]
    top, complete = merge_head(shard_answers, k)
    union = sorted({t for ids, _ in answers for t in ids})
    assert top == union[:k]
    assert complete == (all(ok for _, ok in answers) and len(union) <= k)


def test_bad_boundaries_are_refused(built: Built, tmp_path: Path) -> None:
    build = built.builds["en-IN"]
    for starts in (["a", "m"], ["", "m", "c"], ["", "m", "m"], []):
        with pytest.raises(ValueError):
            build_shards(build, starts, tmp_path / "bad", map=map)
    with pytest.raises(RuntimeError, match="in task order"):
        build_shards(build, ["", "m"], tmp_path / "bad", map=lambda f, xs: reversed(serial(f, xs)))
    assert not (tmp_path / "bad" / PLAN_FILE).exists()


def test_a_shard_task_pickles_and_builds_alone(tmp_path: Path) -> None:
    import pickle

    task = ShardTask("xx-XX", 1, 2, ("b", None), [("ba", 3, False), ("bc", 1, True)], [1, 3],
                     ["bc", "ba"], np.array([2.0, 1.0]), 10, str(tmp_path / "s.trie"))  # fmt: skip
    result = build_shard(pickle.loads(pickle.dumps(task)))
    assert result.head == {"": ([1, 3], False), "b": ([1, 3], False)}  # an alias: not complete
    snap = Snapshot(result.path)
    assert snap.suggest("ba") == ["ba"] and snap.suggest("b") == ["bc", "ba"]


# ----------------------------------------------------------------- served by shard servers


@pytest.fixture(scope="module")
def sharded_root(built: Built, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Both markets built with build_shards into one root, as ensure_shard_sets lays it out."""
    root = tmp_path_factory.mktemp("shardbuild") / "n2"
    store = open_snapshot_store(snapshot_root(built.data_dir))
    for market, build in built.builds.items():
        snap = store.open(market)
        assert snap is not None and snap.strings() == build.strings
        meta = {key: snap.meta[key] for key in sharding.SOURCE_META_KEYS if key in snap.meta}
        build_shards(build, plan_for(build, 2), root / market, map=map,
                     source_version=snap.version, source_meta=meta)  # fmt: skip
    yield root


@pytest.mark.slow
def test_shard_cluster_serves_the_parallel_build(
    built: Built, sharded_root: Path, tmp_path: Path
) -> None:
    data_dir = tmp_path / "data"
    shutil.copytree(built.data_dir, data_dir)
    oracle = SuggestService.from_data_dir(data_dir)
    oracle.infix = False  # the router serves no word-anywhere matches
    with ShardCluster(sharded_root, 2) as cluster:
        router = ShardRouter.from_root(sharded_root, cluster.addresses)
        app = create_app(data_dir, subsystems=[lambda m: install_router(m, router)])
        with serve_in_thread(app) as url, httpx.Client(base_url=url, trust_env=False,
                                                       timeout=10.0) as client:  # fmt: skip
            rng = random.Random(26)
            for market in ("en-IN", "hi-IN"):
                keys = [k for k, _, _ in built.builds[market].keys]
                prefixes = {""} | {k[0] for k in keys} | {"zzq", "IP", "क्ष"}
                prefixes |= {k[: rng.randint(2, max(2, len(k)))] for k in rng.sample(keys, 40)}
                shards = set()
                for p in sorted(prefixes):
                    r = client.get(f"/v1/suggest?q={quote(p, safe='')}&market={market}")
                    assert r.status_code == 200, (p, r.text)
                    assert r.json() == oracle.lookup(p, market, 10).body(), (market, p)
                    shards.add(r.headers["x-lookup-shard"])
                assert shards == {"head", "0", "1"}
