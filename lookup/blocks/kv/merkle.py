"""Merkle trees over a replica's keys, so two replicas find what differs cheaply.

Keys fall into ``2**depth`` buckets by the top bits of their ring position
(:func:`lookup.kit.ring.ring_hash`); a leaf is the hash of its bucket's
``(key, version digest)`` pairs in key order, an inner node the hash of its two
children. A node fetches its peer's tree in one round trip (``2**(depth+1) - 1`` hashes:
16 KB at depth 8, whatever the number of keys) and compares top-down, descending only
where hashes differ: identical replicas stop at the root, replicas that differ in a few
keys compare ``O(few * depth)`` hashes. Only the differing buckets' contents are then
shipped — not the whole data set.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from lookup.kit.ring import ring_hash

__all__ = ["MerkleTree", "bucket_of", "diff_buckets"]

_EMPTY = hashlib.sha256(b"").digest()


def bucket_of(key: str, depth: int) -> int:
    """The leaf a key belongs to: the top ``depth`` bits of its 128-bit ring position."""
    return ring_hash(key) >> (128 - depth) if depth else 0


@dataclass(frozen=True)
class MerkleTree:
    """A complete binary tree stored level by level: ``levels[0]`` is ``[root]``."""

    depth: int
    levels: tuple[tuple[bytes, ...], ...]

    @classmethod
    def build(cls, digests: Mapping[str, str], depth: int = 8) -> MerkleTree:
        """The tree of ``{key: version digest}`` with ``2**depth`` leaves."""
        if not 0 <= depth <= 16:
            raise ValueError(f"depth must be 0..16, got {depth}")
        buckets: list[list[tuple[str, str]]] = [[] for _ in range(1 << depth)]
        for key, digest in digests.items():
            buckets[bucket_of(key, depth)].append((key, digest))
        leaves = []
        for items in buckets:
            if not items:
                leaves.append(_EMPTY)
                continue
            h = hashlib.sha256()
            for key, digest in sorted(items):
                h.update(key.encode("utf-8") + b"\0" + digest.encode("ascii") + b"\n")
            leaves.append(h.digest())
        levels = [tuple(leaves)]
        while len(levels[0]) > 1:
            below = levels[0]
            levels.insert(
                0,
                tuple(
                    hashlib.sha256(below[i] + below[i + 1]).digest()
                    for i in range(0, len(below), 2)
                ),
            )
        return cls(depth, tuple(levels))

    @property
    def root(self) -> bytes:
        return self.levels[0][0]

    def to_json(self) -> list[list[str]]:
        return [[h.hex() for h in level] for level in self.levels]

    @classmethod
    def from_json(cls, data: Iterable[Iterable[str]]) -> MerkleTree:
        levels = tuple(tuple(bytes.fromhex(h) for h in level) for level in data)
        depth = len(levels) - 1
        if depth < 0 or any(len(level) != 1 << i for i, level in enumerate(levels)):
            raise ValueError("not a complete Merkle tree")
        return cls(depth, levels)


def diff_buckets(a: MerkleTree, b: MerkleTree) -> tuple[list[int], int]:
    """The leaves whose hashes differ, found top-down; and how many hashes were compared."""
    if a.depth != b.depth:
        raise ValueError(f"trees of different depth ({a.depth} vs {b.depth})")
    compared = 1
    if a.root == b.root:
        return [], compared
    frontier = [0]
    for level in range(1, a.depth + 1):
        nxt = []
        for i in frontier:
            for child in (2 * i, 2 * i + 1):
                compared += 1
                if a.levels[level][child] != b.levels[level][child]:
                    nxt.append(child)
        frontier = nxt
    return frontier, compared
