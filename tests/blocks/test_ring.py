"""The consistent hashing ring against uhashring (same md5 point scheme) and brute force."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from uhashring import HashRing as UHashRing

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
