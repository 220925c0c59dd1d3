"""Consistent hashing ring with virtual nodes (Karger et al.; Dynamo's partitioner).

Each physical node owns ``vnodes * weight`` points on a 128-bit circle, the md5 of
``f"{node}-{i}"``. A key belongs to the first point clockwise of md5(key) (strictly
greater, wrapping at the top). Adding or removing a node therefore moves only the keys
whose nearest point changed — about 1/N of them — instead of almost all of them as
``hash(key) mod N`` does.

The point scheme is the one ``uhashring`` uses by default, so for ``str`` keys our
lookups equal its lookups (tests/blocks/test_ring.py checks that); we keep our own
copy because the ring is the subject here and because the KV store needs the
preference list (N distinct physical nodes clockwise), which uhashring builds by
walking a generator per call.
"""

from __future__ import annotations

import bisect
import hashlib
from collections.abc import Iterable


def ring_hash(key: str | bytes) -> int:
    """The 128-bit position of ``key`` on the circle (md5, big-endian)."""
    data = key.encode("utf-8") if isinstance(key, str) else bytes(key)
    return int.from_bytes(hashlib.md5(data, usedforsecurity=False).digest(), "big")


class HashRing:
    """Nodes on a hash circle; ``node_for`` and ``preference_list`` map keys to nodes."""

    def __init__(self, nodes: Iterable[str] = (), *, vnodes: int = 160) -> None:
        if vnodes < 1:
            raise ValueError(f"vnodes must be >= 1, got {vnodes}")
        self._vnodes = vnodes
        self._weights: dict[str, int] = {}
        self._owner: dict[int, str] = {}
        self._node_points: dict[str, list[int]] = {}
        self._points: list[int] = []
        self._owners: list[str] = []  # _owners[i] owns _points[i]
        for node in nodes:
            self.add(node)

    @property
    def vnodes(self) -> int:
        """Points per unit of weight."""
        return self._vnodes

    @property
    def nodes(self) -> list[str]:
        """Physical nodes, in the order they were added."""
        return list(self._weights)

    def weight(self, node: str) -> int:
        """The weight ``node`` was added with (KeyError when absent)."""
        return self._weights[node]

    def points(self, node: str) -> list[int]:
        """The positions ``node`` owns on the circle (sorted)."""
        return sorted(p for p in self._node_points[node] if self._owner.get(p) == node)

    def add(self, node: str, weight: int = 1) -> None:
        """Place ``node`` on the ring with ``vnodes * weight`` points; re-adding re-weights."""
        if not isinstance(node, str) or not node:
            raise ValueError("node must be a non-empty string")
        if weight < 1:
            raise ValueError(f"weight must be >= 1, got {weight}")
        if node in self._weights:
            self._drop_points(node)
        self._weights[node] = weight
        points = [ring_hash(f"{node}-{i}") for i in range(self._vnodes * weight)]
        self._node_points[node] = points
        for point in points:
            # A 128-bit collision between two nodes is not going to happen; if it did,
            # the later node wins the point, as in uhashring.
            self._owner[point] = node
        self._rebuild()

    def remove(self, node: str) -> None:
        """Take ``node`` off the ring (KeyError when it is not on it)."""
        if node not in self._weights:
            raise KeyError(f"node {node!r} is not on the ring")
        self._drop_points(node)
        del self._weights[node]
        self._rebuild()

    def __contains__(self, node: object) -> bool:
        return node in self._weights

    def __len__(self) -> int:
        return len(self._weights)

    def _drop_points(self, node: str) -> None:
        for point in self._node_points.pop(node, []):
            if self._owner.get(point) == node:
                del self._owner[point]

    def _rebuild(self) -> None:
        self._points = sorted(self._owner)
        self._owners = [self._owner[p] for p in self._points]

    def _start(self, key: str | bytes) -> int:
        if not self._points:
            raise LookupError("the ring has no nodes")
        i = bisect.bisect_right(self._points, ring_hash(key))
        return 0 if i == len(self._points) else i

    def node_for(self, key: str | bytes) -> str:
        """The node owning ``key``: the first point clockwise of its hash."""
        return self._owners[self._start(key)]

    def preference_list(self, key: str | bytes, n: int) -> list[str]:
        """The first ``n`` distinct physical nodes clockwise from ``key`` (fewer if the
        ring has fewer): the coordinator, then the replicas, then fallbacks."""
        if n < 1:
            raise ValueError(f"n must be >= 1, got {n}")
        start = self._start(key)
        want = min(n, len(self._weights))
        seen: list[str] = []
        owners = self._owners
        total = len(owners)
        for step in range(total):
            owner = owners[(start + step) % total]
            if owner not in seen:
                seen.append(owner)
                if len(seen) == want:
                    break
        return seen
