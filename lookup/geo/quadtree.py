"""A quadtree over the same places: cells that adapt to density.

Start with the whole world as one node; while a node holds more than
``leaf_size`` places (100, as in the seed), split it into four quarters. Dense
city centres split many levels deep into small leaves; oceans stay one big leaf.

Splitting a node at its midpoints is exactly two more bits of the interleaved
geohash code (one longitude bit, one latitude bit), so every node is a code prefix
and its places are a contiguous range of the index's sorted arrays. The tree only
stores node boundaries; it shares the rows, the live delta and the exact filtering
with :class:`~lookup.geo.index.GeohashIndex`. Places added after the build land in
the delta and are read through their leaf's code range, so a leaf may hold more than
``leaf_size`` until the next rebuild (as the seed suggests).
"""

from __future__ import annotations

import numpy as np

from lookup.geo import geohash as gh
from lookup.geo.index import Box, GeohashIndex, Plan, _widen, circle_box, merge_ranges

LEAF_SIZE = 100
MAX_DEPTH = gh.AXIS_BITS  # 30 levels: one bit per axis per level


class QuadtreeIndex:
    """A region quadtree built over a :class:`GeohashIndex`'s rows; same planner interface."""

    name = "quadtree"

    def __init__(self, places: GeohashIndex, leaf_size: int = LEAF_SIZE) -> None:
        if leaf_size < 1:
            raise ValueError("leaf_size must be at least 1")
        self.places = places
        self.leaf_size = leaf_size
        codes = places.base.code
        depth = [0]
        prefix = [0]
        lo = [0]
        hi = [len(codes)]
        first_child = [-1]
        i = 0
        while i < len(depth):
            if hi[i] - lo[i] > leaf_size and depth[i] < MAX_DEPTH:
                d = depth[i] + 1
                shift = gh.CODE_BITS - 2 * d
                kids = [prefix[i] * 4 + k for k in range(4)]
                bounds = np.searchsorted(
                    codes,
                    [
                        kids[0] << shift,
                        kids[1] << shift,
                        kids[2] << shift,
                        kids[3] << shift,
                        (kids[3] + 1) << shift,
                    ],
                )
                first_child[i] = len(depth)
                for k in range(4):
                    depth.append(d)
                    prefix.append(kids[k])
                    lo.append(int(bounds[k]))
                    hi.append(int(bounds[k + 1]))
                    first_child.append(-1)
            i += 1
        self.depth = np.array(depth, dtype=np.int64)
        self.prefix = np.array(prefix, dtype=np.int64)
        self.count = np.array(hi, dtype=np.int64) - np.array(lo, dtype=np.int64)
        self.first_child = np.array(first_child, dtype=np.int64)
        # node bounds: a depth-d node is a grid cell with d bits per axis
        ilat = gh._compact(self.prefix.astype(np.uint64)).astype(np.int64)
        ilng = gh._compact((self.prefix >> 1).astype(np.uint64)).astype(np.int64)
        h = 180.0 / np.exp2(self.depth)
        w = 360.0 / np.exp2(self.depth)
        self.south = -90.0 + ilat * h
        self.north = self.south + h
        self.west = -180.0 + ilng * w
        self.east = self.west + w

    @property
    def leaves(self) -> int:
        return int((self.first_child < 0).sum())

    @property
    def nodes(self) -> int:
        return len(self.depth)

    @property
    def nbytes(self) -> int:
        return int(
            sum(
                a.nbytes
                for a in (
                    self.depth,
                    self.prefix,
                    self.count,
                    self.first_child,
                    self.south,
                    self.north,
                    self.west,
                    self.east,
                )
            )
        )

    def _intersects(self, nodes: np.ndarray, box: Box) -> np.ndarray:
        lat_ok = (self.south[nodes] <= box.north) & (self.north[nodes] >= box.south)
        lng_ok = np.zeros(len(nodes), dtype=bool)
        for w, e in box.lngs:
            lng_ok |= (self.west[nodes] <= e) & (self.east[nodes] >= w)
        return lat_ok & lng_ok

    def leaves_in(self, box: Box) -> np.ndarray:
        """Leaf nodes that intersect ``box`` (a level-by-level walk, vectorised per level)."""
        frontier = np.array([0], dtype=np.int64)
        found: list[np.ndarray] = []
        while len(frontier):
            frontier = frontier[self._intersects(frontier, box)]
            leaf = self.first_child[frontier] < 0
            found.append(frontier[leaf])
            inner = frontier[~leaf]
            frontier = (self.first_child[inner][:, None] + np.arange(4)).ravel()
        return np.sort(np.concatenate(found)) if found else np.zeros(0, np.int64)

    def _plan(self, leaves: np.ndarray) -> Plan:
        shift = gh.CODE_BITS - 2 * self.depth[leaves]
        ranges = np.stack([self.prefix[leaves] << shift, (self.prefix[leaves] + 1) << shift], 1)

        def labels() -> tuple[list[str], list[tuple[float, float, float, float]]]:
            names = [
                f"q{d}:{p}"
                for d, p in zip(
                    self.depth[leaves].tolist(), self.prefix[leaves].tolist(), strict=True
                )
            ]
            boxes = list(
                zip(
                    self.south[leaves].tolist(),
                    self.west[leaves].tolist(),
                    self.north[leaves].tolist(),
                    self.east[leaves].tolist(),
                    strict=True,
                )
            )
            return names, boxes

        return Plan(
            "quadtree",
            merge_ranges(ranges.astype(np.int64)),
            candidates=int(self.count[leaves].sum()),
            describe_cells=labels,
        )

    def plan_radius(self, lat: float, lng: float, radius_m: float) -> Plan:
        """Every leaf that meets the circle's bounding box."""
        return self._plan(self.leaves_in(_widen(circle_box(lat, lng, radius_m))))

    def plan_box(self, box: Box) -> Plan:
        """Every leaf that meets the rectangle."""
        return self._plan(self.leaves_in(_widen(box)))
