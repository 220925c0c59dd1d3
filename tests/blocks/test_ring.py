"""The consistent hashing ring against uhashring (same md5 point scheme) and brute force."""

from __future__ import annotations

import hashlib
import itertools
import statistics
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from uhashring import HashRing as UHashRing

from lookup.blocks.kv import experiments
from lookup.kit.ring import HashRing, ring_hash

NODES = [f"node-{i}" for i in range(10)]
KEYS = [f"key:{i}" for i in range(3000)]


@pytest.mark.parametrize("vnodes", [1, 7, 40, 160])
def test_lookups_equal_uhashring(vnodes: int) -> None:
    ours = HashRing(NODES, vnodes=vnodes)
    theirs = UHashRing(nodes=NODES, vnodes=vnodes)
    assert [ours.node_for(k) for k in KEYS] == [theirs.get_node(k) for k in KEYS]


def test_weights_and_membership_changes_equal_uhashring() -> None:
    ours = HashRing(vnodes=50)
    theirs = UHashRing(nodes=[], vnodes=50)
    for i, node in enumerate(NODES):
        ours.add(node, weight=1 + i % 3)
        theirs.add_node(node, {"weight": 1 + i % 3})
    ours.remove("node-4")
    theirs.remove_node("node-4")
    assert sorted(ours.nodes) == sorted(theirs.get_nodes())
    assert [ours.node_for(k) for k in KEYS] == [theirs.get_node(k) for k in KEYS]


def test_preference_list_equals_uhashring_range() -> None:
    ours = HashRing(NODES, vnodes=20)
    theirs = UHashRing(nodes=NODES, vnodes=20)
    for key in KEYS[:500]:
        expected = [conf["nodename"] for conf in theirs.range(key, size=3)]
        assert ours.preference_list(key, 3) == expected


def _brute_preference(nodes: dict[str, int], vnodes: int, key: str, n: int) -> list[str]:
    """Walk every point in order from the key's hash; no bisect, no caching."""
    points = sorted(
        (ring_hash(f"{node}-{i}"), node) for node, w in nodes.items() for i in range(vnodes * w)
    )
    h = ring_hash(key)
    after = [p for p in points if p[0] > h] + [p for p in points if p[0] <= h]
    out: list[str] = []
    for _, node in after:
        if node not in out:
            out.append(node)
    return out[:n]


@settings(max_examples=60, deadline=None)
@given(
    nodes=st.dictionaries(
        st.text("abcdef", min_size=1, max_size=4), st.integers(1, 3), min_size=1, max_size=6
    ),
    vnodes=st.integers(1, 8),
    key=st.text(max_size=12),
    n=st.integers(1, 7),
)
def test_preference_list_matches_brute_force(
    nodes: dict[str, int], vnodes: int, key: str, n: int
) -> None:
    ring = HashRing(vnodes=vnodes)
    for node, w in nodes.items():
        ring.add(node, weight=w)
    pref = ring.preference_list(key, n)
    assert pref == _brute_preference(nodes, vnodes, key, n)
    assert len(pref) == min(n, len(nodes)) == len(set(pref))
    assert pref[0] == ring.node_for(key)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.sampled_from(NODES), min_size=1, max_size=10, unique=True), st.data())
def test_remove_then_add_restores_every_lookup(members: list[str], data: st.DataObject) -> None:
    ring = HashRing(members, vnodes=10)
    before = [ring.node_for(k) for k in KEYS[:300]]
    gone = data.draw(st.sampled_from(members))
    ring.remove(gone)
    if len(members) > 1:
        after = [ring.node_for(k) for k in KEYS[:300]]
        # only the removed node's keys moved
        assert all(a == b for a, b in zip(before, after, strict=True) if a != gone)
        assert gone not in after
    ring.add(gone)
    assert [ring.node_for(k) for k in KEYS[:300]] == before


def test_bytes_and_str_keys_hash_the_same_utf8() -> None:
    ring = HashRing(NODES)
    assert ring.node_for("ключ") == ring.node_for("ключ".encode())


def test_weight_multiplies_points_and_share() -> None:
    ring = HashRing(vnodes=40)
    ring.add("light")
    ring.add("heavy", weight=3)
    assert len(ring.points("light")) == 40 and len(ring.points("heavy")) == 120
    share = sum(ring.node_for(k) == "heavy" for k in KEYS) / len(KEYS)
    assert 0.6 < share < 0.9  # about 3/4 of the keys


def test_bad_input_is_a_clear_error() -> None:
    with pytest.raises(LookupError):
        HashRing().node_for("k")
    with pytest.raises(ValueError):
        HashRing(vnodes=0)
    with pytest.raises(ValueError):
        HashRing(["a"]).add("b", weight=0)
    with pytest.raises(KeyError):
        HashRing(["a"]).remove("b")
    with pytest.raises(ValueError):
        HashRing(["a"]).preference_list("k", 0)


# -- the notebook's ring figures (lookup.blocks.kv.experiments), pinned by brute force -------
def _brute_owners(nodes: list[str], vnodes: int, keys: list[str]) -> list[str]:
    """Each key's node by walking every point in order: no bisect, no ring object."""
    points = sorted((ring_hash(f"{node}-{i}"), node) for node in nodes for i in range(vnodes))
    owners = []
    for key in keys:
        h = ring_hash(key)
        owners.append(next((node for p, node in points if p > h), points[0][1]))
    return owners


def _mod_owner(key: str, nodes: list[str]) -> str:
    return nodes[int(hashlib.md5(key.encode()).hexdigest(), 16) % len(nodes)]


def _moved(before: list[str], after: list[str]) -> float:
    return round(sum(a != b for a, b in zip(before, after, strict=True)) / len(before), 4)


def test_key_movement_equals_brute_force_and_the_ideal() -> None:
    sample = [f"key:{i}" for i in range(400)]
    names = [f"node-{i}" for i in range(10)]
    grown = [*names, "node-10"]
    rows = experiments.key_movement(nodes=10, keys=len(sample), vnodes=(1, 40))
    mod = _moved([_mod_owner(k, names) for k in sample], [_mod_owner(k, grown) for k in sample])
    assert rows[0]["moved on join"] == rows[0]["moved on leave"] == mod
    for row, v in zip(rows[1:], (1, 40), strict=True):
        moved = _moved(_brute_owners(names, v, sample), _brute_owners(grown, v, sample))
        assert row["vnodes"] == v and row["moved on join"] == row["moved on leave"] == moved
    # 10 nodes -> 11 on many keys, averaged over six draws of the points (md5: no chance)
    draws = [
        experiments.key_movement(nodes=10, keys=20_000, vnodes=(160,), prefix=f"d{d}")
        for d in range(6)
    ]
    mod_share = sum(r[0]["moved on join"] for r in draws) / len(draws)
    ring_share = sum(r[1]["moved on join"] for r in draws) / len(draws)
    assert abs(mod_share - 10 / 11) < 0.01  # hash mod N: almost every key moves
    assert abs(ring_share - 1 / 11) < 0.01  # the ring: only the new node's share
    assert all(r[1]["moved on join"] < 0.12 for r in draws)


def test_load_imbalance_equals_brute_force_and_falls_with_vnodes() -> None:
    sample = [f"key:{i}" for i in range(400)]
    names = [f"node-{i}" for i in range(10)]
    for row in experiments.load_imbalance(nodes=10, keys=len(sample), vnodes=(1, 20)):
        counts = Counter(_brute_owners(names, row["vnodes"], sample))
        load = [counts.get(n, 0) for n in names]
        mean = statistics.fmean(load)
        assert row["max/mean"] == round(max(load) / mean, 3)
        assert row["min/mean"] == round(min(load) / mean, 3)
        assert row["stdev/mean"] == round(statistics.pstdev(load) / mean, 3)
    # one draw of the points need not fall at every step (it does not here from 100 to 500
    # vnodes); the mean over eight draws does, and by a wide margin
    vnodes = (1, 10, 100, 500)
    draws = [
        experiments.load_imbalance(nodes=10, keys=20_000, vnodes=vnodes, prefix=f"d{d}")
        for d in range(8)
    ]
    means = [statistics.fmean(d[i]["max/mean"] for d in draws) for i in range(len(vnodes))]
    assert all(a > b + 0.05 for a, b in itertools.pairwise(means)), means
    assert means[0] > 2.0 and means[-1] < 1.15, means
