"""Sharding by prefix range: a measured plan, a head table, and the same answers as one trie."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lookup.typeahead.sharding import ShardedSuggest, bucket_of, plan_shards, shard_market
from lookup.typeahead.snapshot import Snapshot, write_snapshot

from .conftest import Built


@settings(max_examples=80, deadline=None)
@given(
    st.dictionaries(st.text("abcdefक्ष", min_size=1, max_size=5), st.floats(0.0, 100.0),
                    min_size=1, max_size=80),
    st.integers(1, 6),
)  # fmt: skip
def test_plan_cuts_only_between_two_character_buckets(weights: dict[str, float], n: int) -> None:
    keys = list(weights)
    plan = plan_shards(keys, [weights[k] for k in keys], n)
    assert plan.starts[0] == "" and plan.starts == sorted(set(plan.starts))
    assert 1 <= plan.n <= n
    # every key of a bucket lands in the same shard, and shards are contiguous ranges
    owner: dict[str, int] = {}
    for k in sorted(keys):
        s = plan.shard_of(k)
        assert owner.setdefault(bucket_of(k), s) == s
        for longer in (k, k + "a"):
            if len(longer) >= 2:
                assert plan.shard_of(longer) == plan.shard_of(bucket_of(longer))
    assert [owner[b] for b in sorted(owner)] == sorted(owner[b] for b in sorted(owner))
    assert sum(plan.keys) == len(keys) and sum(plan.cost) == pytest.approx(1.0)


def test_plan_balances_measured_cost_not_letters() -> None:
    # "s" is crowded, "x" and "z" nearly empty: the cuts land inside "s", not at letters
    keys = [f"s{c}{i}" for c in "abcdefghijklmnopqrst" for i in range(50)]
    keys += ["xa1", "za1", "ba1", "ca1"]
    plan = plan_shards(keys, [1.0] * len(keys), 4)
    assert plan.n == 4 and all(start.startswith("s") for start in plan.starts[1:])
    assert max(plan.cost) < 0.3
    hot = plan_shards(
        keys, [100.0 if k.startswith("se") else 1.0 for k in keys], 4, size_weight=0.0
    )
    assert hot.starts != plan.starts  # traffic moves the boundaries


@pytest.mark.parametrize("market", ["en-IN", "hi-IN"])
@pytest.mark.parametrize("n_shards", [2, 3, 5])
def test_sharded_answers_equal_the_unsharded_trie(
    built: Built, tmp_path: Path, market: str, n_shards: int
) -> None:
    build = built.builds[market]
    plan = shard_market(build, n_shards, tmp_path / "shards")
    assert plan.n == n_shards and max(plan.cost) < 2.0 / n_shards
    router = ShardedSuggest(tmp_path / "shards")
    whole = Snapshot(
        write_snapshot(tmp_path / "whole.trie", market, build.trie, build.strings, build.scores)
    )
    rng = random.Random(n_shards)
    keys = [k for k, _, _ in build.keys]
    prefixes = {""} | {k[0] for k in keys} | {"zz", "क्ष"}
    prefixes |= {k[: rng.randint(1, len(k))] for k in rng.sample(keys, min(len(keys), 1500))}
    used = set()
    for p in sorted(prefixes):
        got, complete, shard = router.lookup(p)
        want = whole.find(p)
        assert got == whole.texts(want.ids) and complete == want.complete, p
        assert (shard is None) == (len(p) <= 1)
        if shard is not None:
            used.add(shard)
    assert used == set(range(n_shards))  # every shard served something
