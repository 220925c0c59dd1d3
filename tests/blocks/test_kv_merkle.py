"""Merkle-tree diffs against brute force: the buckets holding a key the two sides disagree on."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from lookup.blocks.kv.merkle import MerkleTree, bucket_of, diff_buckets


@settings(max_examples=150, deadline=None)
@given(
    st.dictionaries(st.text(max_size=6), st.sampled_from(["d1", "d2", "d3"]), max_size=40),
    st.dictionaries(st.text(max_size=6), st.sampled_from(["d1", "d2", "d3"]), max_size=40),
    st.integers(0, 6),
)
def test_merkle_diff_finds_exactly_the_buckets_that_differ(
    a: dict[str, str], b: dict[str, str], depth: int
) -> None:
    ta, tb = MerkleTree.build(a, depth), MerkleTree.build(b, depth)
    buckets, compared = diff_buckets(ta, tb)
    differing = {k for k in set(a) | set(b) if a.get(k) != b.get(k)}
    assert set(buckets) == {bucket_of(k, depth) for k in differing}  # brute force
    assert (ta.root == tb.root) == (not differing)
    assert compared <= 1 + 2 * depth * max(1, len(buckets))
    assert MerkleTree.from_json(ta.to_json()) == ta
