"""Nearest-k without a radius: a best-first walk over the index's own cells.

PostGIS answers ``ORDER BY geom <-> point LIMIT k`` from its R-tree by opening index
nodes in the order of their distance lower bound; this is the same walk over the cells
the places are already sorted by, so "the 10 nearest chargers, however far" needs no
radius and no second structure:

* **geohash**: the world splits into its 32 precision-1 cells, a cell into its 32
  children, … — a cell holding at most :data:`LEAF_ROWS` rows (or at precision 12) is
  read instead: one code range, a contiguous slice of the sorted arrays (and of the live
  delta). Oceans stay big cells; a city splits deep.
* **quadtree**: its own nodes, four children each; its leaves are read.
* **scan**: one leaf, the whole table (the brute force the others are compared with).

A heap holds the unopened cells by :func:`rect_distance_m` — the great-circle distance
from the point to the cell's rectangle, a lower bound for every place inside (less a
millimetre of slack for rounding). Places read are filtered (category, price, text,
open now: before they count), measured by haversine and kept if they are among the k
best by ``(distance in micrometres, place number)``, the sort key of
:mod:`lookup.geo.search`. The walk ends when the k-th best is strictly nearer than
every unopened cell: a cell whose bound equals that distance is still opened, so a
place at the same distance with a smaller number is never missed.

Far from everything (the middle of the Pacific) the cells near the point are empty or
sparse and big, and the nearest places come after a few steps. A filter that matches
little makes the walk open more cells; after :data:`WALK_STEPS` it stops splitting and
reads the unopened cells in batches, still nearest bound first, each batch twice the
rows of the last (:data:`BATCH_MIN_ROWS` at least) and read in one vectorised pass, with
the same stopping rule between batches: a few passes where one cell at a time would
cost a Python step each, and never much worse than brute force when nothing matches.
It always ends: the cells cover the world.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from lookup.geo import geohash as gh
from lookup.geo.index import GeohashIndex, PlaceColumns, Plan, Planner, _rows_in, merge_ranges
from lookup.geo.ranking import haversine_m

#: A geohash cell with at most this many rows is read rather than split.
LEAF_ROWS = 256
#: Cells opened one by one before the walk turns to batches (a filter matching little).
WALK_STEPS = 32
#: The first batch's rows at least; each later batch doubles.
BATCH_MIN_ROWS = 4096
#: Sort keys count distance in micrometres (:mod:`lookup.geo.search` uses the same scale).
DIST_SCALE = 1e6
#: Slack taken off a cell's bound: a millimetre, and a millionth of the distance (the
#: haversine of a place and the bound of its cell are rounded differently near 90°).
_SLACK_M = 1e-3
_SLACK_SHARE = 1e-6

#: Which rows of some places pass the search's filters (a boolean mask).
Keep = Callable[[PlaceColumns], np.ndarray]


def rect_distance_m(
    lat: float,
    lng: float,
    south: np.ndarray,
    north: np.ndarray,
    west: np.ndarray,
    east: np.ndarray,
) -> np.ndarray:
    """Great-circle distance (m) from a point to each latitude/longitude rectangle; 0 inside.

    With the point's longitude inside the rectangle's, the nearest place is due north or
    south: the latitude gap. Otherwise it lies on the west or the east edge (along a
    parallel, distance grows with the longitude gap), so it is the distance to the nearer
    of the two meridian arcs: the cross-track distance where the point's foot on the
    meridian's great circle falls within the arc, else the nearer end (S2's
    ``S2LatLngRect::GetDistance``). The poles and ±180 need no special case: sines and
    cosines wrap.
    """
    phi, lam = math.radians(lat), math.radians(lng)
    s, n = np.radians(south), np.radians(north)
    out = np.maximum(0.0, np.maximum(phi - n, s - phi))
    outside = np.flatnonzero(~((west <= lng) & (lng <= east)))
    if len(outside):
        # both edges of every rectangle at once: [west edges, east edges]
        s2, n2 = np.tile(s[outside], 2), np.tile(n[outside], 2)
        edge = np.radians(np.concatenate([west[outside], east[outside]]))
        d_lam = lam - edge
        cos_phi = math.cos(phi)
        foot = np.arctan2(math.sin(phi), cos_phi * np.cos(d_lam))  # the foot's latitude
        cross = np.arcsin(np.minimum(1.0, np.abs(cos_phi * np.sin(d_lam))))
        ends = _angle(phi, lam, np.concatenate([s2, n2]), np.tile(edge, 2))
        m = len(edge)
        to_edge = np.where((foot >= s2) & (foot <= n2), cross, np.minimum(ends[:m], ends[m:]))
        half = len(outside)
        out[outside] = np.minimum(to_edge[:half], to_edge[half:])
    return out * gh.EARTH_RADIUS_M


def _angle(phi: float, lam: float, phi2: np.ndarray, lam2: np.ndarray) -> np.ndarray:
    """Central angles from one point to many (haversine)."""
    a = (
        np.sin((phi2 - phi) * 0.5) ** 2
        + math.cos(phi) * np.cos(phi2) * np.sin((lam2 - lam) * 0.5) ** 2
    )
    return 2.0 * np.arcsin(np.sqrt(np.minimum(a, 1.0)))


def _lower_keys(bound_m: np.ndarray) -> list[int]:
    """Cell bounds as sort keys no place inside can be below (micrometres, rounded down)."""
    slack = _SLACK_M + _SLACK_SHARE * bound_m
    keys: list[int] = (
        np.floor(np.maximum(bound_m - slack, 0.0) * DIST_SCALE).astype(np.int64).tolist()
    )
    return keys


# ----------------------------------------------------------------------- cells


class _GeohashCells:
    """Geohash cells as the walk's tree: node = (cell, precision, rows)."""

    strategy = "nearest"

    def __init__(self, index: GeohashIndex) -> None:
        self.index = index

    def root(self) -> Any:
        return (0, 0, len(self.index.base) + self.index.delta_size)

    def is_leaf(self, node: Any) -> bool:
        return bool(node[2] <= LEAF_ROWS or node[1] == gh.MAX_PRECISION)

    def code_range(self, node: Any) -> tuple[int, int]:
        return gh.cell_range(node[0], node[1])

    def children(self, node: Any) -> tuple[list[Any], tuple[np.ndarray, ...]]:
        cell, precision, _ = node
        p = precision + 1
        first = cell << 5
        counts = self.index.range_counts(
            (first + np.arange(33, dtype=np.int64)) << (gh.CODE_BITS - 5 * p)
        )
        kids = np.flatnonzero(counts)
        values = first + kids
        bounds: Any = gh.cell_bounds(values.astype(np.uint64), p)  # vectorised: arrays
        south, west, north, east = bounds
        nodes = [(v, p, c) for v, c in zip(values.tolist(), counts[kids].tolist(), strict=True)]
        return nodes, (south, north, west, east)

    def label(self, node: Any) -> str:
        return gh.to_string(node[0], node[1]) if node[1] else "(world)"

    def box(self, node: Any) -> tuple[float, float, float, float]:
        if not node[1]:
            return (-90.0, -180.0, 90.0, 180.0)
        return gh.cell_bounds(node[0], node[1])


class _QuadtreeCells:
    """A :class:`~lookup.geo.quadtree.QuadtreeIndex`'s nodes as the walk's tree."""

    strategy = "nearest"

    def __init__(self, tree: Any) -> None:
        self.tree = tree
        self.index: GeohashIndex = tree.places

    def root(self) -> Any:
        return 0

    def is_leaf(self, node: Any) -> bool:
        return bool(self.tree.first_child[node] < 0)

    def code_range(self, node: Any) -> tuple[int, int]:
        shift = gh.CODE_BITS - 2 * int(self.tree.depth[node])
        prefix = int(self.tree.prefix[node])
        return prefix << shift, (prefix + 1) << shift

    def children(self, node: Any) -> tuple[list[Any], tuple[np.ndarray, ...]]:
        t = self.tree
        kids = int(t.first_child[node]) + np.arange(4)
        shift = gh.CODE_BITS - 2 * int(t.depth[kids[0]])
        first = int(t.prefix[kids[0]])
        counts = self.index.range_counts((first + np.arange(5, dtype=np.int64)) << shift)
        kids = kids[counts > 0]
        return kids.tolist(), (t.south[kids], t.north[kids], t.west[kids], t.east[kids])

    def label(self, node: Any) -> str:
        return f"q{int(self.tree.depth[node])}:{int(self.tree.prefix[node])}"

    def box(self, node: Any) -> tuple[float, float, float, float]:
        t = self.tree
        return (
            float(t.south[node]),
            float(t.west[node]),
            float(t.north[node]),
            float(t.east[node]),
        )


class _ScanCells(_GeohashCells):
    """The whole table as one leaf: brute force."""

    strategy = "scan"

    def is_leaf(self, node: Any) -> bool:
        return True

    def code_range(self, node: Any) -> tuple[int, int]:
        return 0, 1 << gh.CODE_BITS


def cells_of(planner: Planner) -> Any:
    """The cell tree a nearest walk opens for ``planner`` (geohash, quadtree or scan)."""
    if planner.name == "quadtree":
        return _QuadtreeCells(planner)
    if planner.name == "scan":
        return _ScanCells(planner.places)
    return _GeohashCells(planner.places)


# ------------------------------------------------------------------------ walk


@dataclass
class Walk:
    """The k nearest places that pass the filters, nearest first, and what was read."""

    cols: PlaceColumns
    dist: np.ndarray
    dist_key: np.ndarray
    read: int
    opened: int
    plan: Plan


class _Best:
    """The k best places found so far by (distance key, place number), as positions in
    the index's base or delta read once at the start (a write during the walk swaps the
    delta for a new one, never edits it)."""

    def __init__(
        self,
        index: GeohashIndex,
        k: int,
        lat: float,
        lng: float,
        keep: Keep,
        after: tuple[int, int] | None,
    ) -> None:
        self.k, self.lat, self.lng, self.keep, self.after = k, lat, lng, keep, after
        self.parts = ((index.base, index.alive), (index.delta, None))
        self.key = np.zeros(0, dtype=np.int64)
        self.num = np.zeros(0, dtype=np.int64)
        self.dist = np.zeros(0)
        self.src = np.zeros(0, dtype=np.int8)  # 0: base, 1: delta
        self.pos = np.zeros(0, dtype=np.int64)

    @property
    def last_key(self) -> int | None:
        """The k-th best's distance key, once k are found."""
        return int(self.key[self.k - 1]) if len(self.key) >= self.k else None

    def read(self, ranges: np.ndarray) -> int:
        """Consider every place whose code is in ``ranges``; returns the rows read."""
        n = 0
        for src, (cols, alive) in enumerate(self.parts):
            if not len(cols):
                continue
            if len(ranges) == 1:  # one cell: a contiguous slice, read as views
                a, b = np.searchsorted(cols.code, ranges[0]).tolist()
                if b > a:
                    n += b - a
                    self._add(src, cols, alive, slice(a, b))
            else:
                rows = _rows_in(cols.code, ranges)
                n += len(rows)
                if len(rows):
                    self._add(src, cols, alive, rows)
        return n

    def _add(
        self, src: int, cols: PlaceColumns, alive: np.ndarray | None, at: slice | np.ndarray
    ) -> None:
        dist = haversine_m(self.lat, self.lng, cols.lat[at], cols.lng[at])
        key = np.rint(dist * DIST_SCALE).astype(np.int64)
        num = cols.num[at].astype(np.int64)
        ok = np.ones(len(key), dtype=bool) if alive is None else alive[at].copy()
        if self.after is not None:  # the cursor: only what comes after the last page
            d, n = self.after
            ok &= (key > d) | ((key == d) & (num > n))
        last = self.last_key
        if last is not None:  # cannot beat the k-th (an equal key may, by place number)
            ok &= key <= last
        idx = np.flatnonzero(ok)
        if not len(idx):
            return
        pos = at.start + idx if isinstance(at, slice) else at[idx]
        passed = self.keep(cols.take(pos))
        if not passed.any():
            return
        idx, pos = idx[passed], pos[passed]
        if len(idx) > 2 * self.k:  # many: only those that can be among the k best go on
            kth = np.partition(key[idx], self.k - 1)[self.k - 1]
            near = key[idx] <= kth
            idx, pos = idx[near], pos[near]
        key = np.concatenate([self.key, key[idx]])
        num = np.concatenate([self.num, num[idx]])
        order = np.lexsort((num, key))
        # a place read twice (moved by a write during the walk) counts once, at its nearest
        _, first = np.unique(num[order], return_index=True)
        order = order[np.sort(first)][: self.k]
        self.key, self.num = key[order], num[order]
        self.dist = np.concatenate([self.dist, dist[idx]])[order]
        self.src = np.concatenate([self.src, np.full(len(idx), src, dtype=np.int8)])[order]
        self.pos = np.concatenate([self.pos, pos])[order]

    def columns(self) -> PlaceColumns:
        """The best places' columns, best first."""
        in_base = self.src == 0
        (base, _), (delta, _) = self.parts
        cols = PlaceColumns.concat(base.take(self.pos[in_base]), delta.take(self.pos[~in_base]))
        order = np.concatenate([np.flatnonzero(in_base), np.flatnonzero(~in_base)])
        back = np.empty_like(order)
        back[order] = np.arange(len(order))
        return cols.take(back)


def _batches(
    heap: list[tuple[int, int, Any]], cells: Any, best: _Best, index: GeohashIndex, rows: int
) -> tuple[list[tuple[int, int]], list[Any]]:
    """Read the unopened cells, nearest bound first, in batches of doubling size (the first
    of at least ``rows`` rows) until the k-th best is nearer than the next cell's bound.
    Returns each batch's (cells, rows read) and the cells read."""
    heap.sort()  # by bound (a heap's list sorted is still a heap)
    bounds = [key for key, _, _ in heap]
    nodes = [node for _, _, node in heap]
    ranges = np.array([cells.code_range(x) for x in nodes], dtype=np.int64).reshape(-1, 2)
    sizes = np.zeros(len(nodes), dtype=np.int64)
    for part in (index.base, index.delta):  # rows per cell: where its batch ends
        if len(part):
            ends = np.searchsorted(part.code, ranges.ravel()).reshape(-1, 2)
            sizes += ends[:, 1] - ends[:, 0]
    reach = np.cumsum(sizes)
    done: list[tuple[int, int]] = []
    i = 0
    while i < len(nodes):
        last = best.last_key
        if last is not None and last < bounds[i]:
            break
        before = int(reach[i - 1]) if i else 0
        j = max(i + 1, int(np.searchsorted(reach, before + rows, side="left")) + 1)
        j = min(j, len(nodes))
        done.append((j - i, best.read(merge_ranges(ranges[i:j]))))
        i, rows = j, rows * 2
    return done, nodes[:i]


def nearest_rows(
    planner: Planner,
    lat: float,
    lng: float,
    k: int,
    keep: Keep,
    after: tuple[int, int] | None = None,
) -> Walk:
    """The ``k`` nearest live places passing ``keep``, coming after ``after`` (a cursor's
    ``(distance key, place number)``), by a best-first walk over ``planner``'s cells — or
    by the planner's own ``nearest_walk`` when it has one (PostGIS's KNN order:
    :class:`lookup.geo.postgis.PostgisPlanner`)."""
    own = getattr(planner, "nearest_walk", None)
    if own is not None:
        walk: Walk = own(lat, lng, k, keep, after)
        return walk
    cells = cells_of(planner)
    index: GeohashIndex = planner.places
    best = _Best(index, k, lat, lng, keep, after)
    heap: list[tuple[int, int, Any]] = [(0, 0, cells.root())]
    pushed = 1
    read = opened = 0
    leaves: list[Any] = []
    strategy = cells.strategy
    while heap:
        last = best.last_key
        if last is not None and last < heap[0][0]:
            break  # every unopened cell is farther than the k-th best
        if opened >= WALK_STEPS:  # a filter matching little: the rest in batches
            batches, done = _batches(heap, cells, best, index, max(BATCH_MIN_ROWS, read))
            read += sum(n for _, n in batches)
            leaves += done
            opened += len(batches)
            strategy = f"{strategy}+batches"
            break
        _, _, node = heapq.heappop(heap)
        opened += 1
        if cells.is_leaf(node):
            read += best.read(np.array([cells.code_range(node)], dtype=np.int64))
            leaves.append(node)
            continue
        kids, (south, north, west, east) = cells.children(node)
        if not kids:
            continue
        keys = _lower_keys(rect_distance_m(lat, lng, south, north, west, east))
        for key, kid in zip(keys, kids, strict=True):
            heapq.heappush(heap, (key, pushed, kid))
            pushed += 1

    def labels() -> tuple[list[str], list[tuple[float, float, float, float]]]:
        return [cells.label(x) for x in leaves], [cells.box(x) for x in leaves]

    ranges = [cells.code_range(x) for x in leaves]
    plan = Plan(
        strategy,
        merge_ranges(np.array(ranges, dtype=np.int64).reshape(-1, 2)),
        candidates=read,
        describe_cells=labels,
    )
    return Walk(best.columns(), best.dist, best.key, read, opened, plan)
