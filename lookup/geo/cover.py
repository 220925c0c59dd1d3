"""A geohash cell cover of a polygon, written by hand: cells inside taken whole, the
boundary's cells checked place by place.

Start from the coarsest precision at which the shape's bounding box spans a handful of
cells. Each cell is classified against the shape's edges, exactly:

* an edge meets the cell (a closed rectangle, widened by :data:`MARGIN_DEG`) → **boundary**;
* no edge meets it → the cell lies in one face of the polygon, so its centre decides:
  **inside** (every place in it matches: its code range is taken whole) or **outside**
  (dropped).

A boundary cell holding more than :data:`REFINE_OVER` places (counted by binary search on
the index, no row read) is split into its 32 children, largest first, while the cover
stays within ``max_cells``; a child tests only the edges that met its parent. A cell
with no place in it is dropped at once. What is left of the boundary is read and
checked point by point (:meth:`lookup.geo.polygon.Shape.contains`).

Edge–cell tests are the separating-axis test (the edge's box against the cell, then
the cell's four corners against the edge's line) with exact orientations, so a cell
is called inside or outside only when it is; rounding can only make a cell boundary.
A shape crossing ±180 lives in an unwrapped frame (longitudes past 180): a cell is also
tried 360° east, and is inside when either copy is.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from lookup.geo import geohash as gh
from lookup.geo.polygon import Shape, covers, orientation

#: Cells are widened by this much (degrees) before the edge test: an edge passing within
#: it makes the cell a boundary one (checked per place), never a wrongly whole one.
MARGIN_DEG = 1e-9
#: A boundary cell with more places than this is worth splitting into its children.
REFINE_OVER = 32
#: Cells at the start: the coarsest precision whose box cover is at most this many.
START_CELLS = 16

#: Counts of index rows per cell (the cells as sorted integer cells of one precision).
Counter = Callable[[np.ndarray, int], np.ndarray]


@dataclass
class Cover:
    """A shape's cells: ``inside`` ones taken whole, ``boundary`` ones checked per place;
    each a list of ``(cell, precision)``."""

    inside: list[tuple[int, int]] = field(default_factory=list)
    boundary: list[tuple[int, int]] = field(default_factory=list)
    refined: int = 0  # cells split into children

    def ranges(self, which: str) -> np.ndarray:
        """The half-open 60-bit code ranges of ``inside`` or ``boundary``, sorted, merged."""
        cells = self.inside if which == "inside" else self.boundary
        if not cells:
            return np.zeros((0, 2), dtype=np.int64)
        out = np.array([gh.cell_range(c, p) for c, p in cells], dtype=np.int64)
        out = out[np.argsort(out[:, 0], kind="stable")]
        reach = np.maximum.accumulate(out[:, 1])
        breaks = np.flatnonzero(out[1:, 0] > reach[:-1]) + 1
        starts = out[np.concatenate([[0], breaks]), 0]
        ends = reach[np.concatenate([breaks - 1, [len(out) - 1]])]
        return np.stack([starts, ends], axis=1).astype(np.int64)

    def describe(self) -> dict[str, object]:
        """Geohash names of the cells (explanations, the dashboard)."""
        return {
            "inside": [gh.to_string(c, p) for c, p in self.inside],
            "boundary": [gh.to_string(c, p) for c, p in self.boundary],
            "refined": self.refined,
        }


def _rects(cells: np.ndarray, precision: int) -> np.ndarray:
    """(south, west, north, east) of each integer cell."""
    return np.array([gh.cell_bounds(int(c), precision) for c in cells], dtype=np.float64)


def _meets(edges: np.ndarray, rect: np.ndarray) -> np.ndarray:
    """Which edges (rows ax, ay, bx, by) meet the closed rectangle (s, w, n, e)."""
    s, w, n, e = rect
    ax, ay, bx, by = (edges[:, k] for k in range(4))
    boxes = (
        (np.maximum(ax, bx) >= w)
        & (np.minimum(ax, bx) <= e)
        & (np.maximum(ay, by) >= s)
        & (np.minimum(ay, by) <= n)
    )
    idx = np.flatnonzero(boxes)
    if not len(idx):
        return boxes
    sub = edges[idx]
    signs = np.stack(
        [
            orientation(sub[:, 0], sub[:, 1], sub[:, 2], sub[:, 3], cx, cy)
            for cx, cy in ((w, s), (e, s), (e, n), (w, n))
        ]
    )
    separated = (signs > 0).all(axis=0) | (signs < 0).all(axis=0)
    boxes[idx[separated]] = False
    return boxes


def _classify(
    shape_edges: np.ndarray, candidates: list[np.ndarray], rects: np.ndarray, shift: float
) -> tuple[np.ndarray, list[np.ndarray]]:
    """Per cell: 0 outside, 1 inside, 2 boundary; and for each, the edges that met it."""
    state = np.zeros(len(rects), dtype=np.int8)
    met: list[np.ndarray] = []
    lone: list[int] = []
    for i, (s, w, n, e) in enumerate(rects):
        m = MARGIN_DEG
        widened = np.array([s - m, w + shift - m, n + m, e + shift + m])
        edges = shape_edges[candidates[i]] if len(candidates[i]) else candidates[i]
        hits = _meets(edges, widened) if len(edges) else np.zeros(0, dtype=bool)
        found = candidates[i][hits] if len(edges) else candidates[i]
        met.append(found)
        if len(found):
            state[i] = 2
        else:
            lone.append(i)
    if lone:
        centre_x = (rects[lone, 1] + rects[lone, 3]) / 2.0 + shift
        centre_y = (rects[lone, 0] + rects[lone, 2]) / 2.0
        state[lone] = covers(shape_edges, centre_x, centre_y).astype(np.int8)
    return state, met


def _start(shape: Shape) -> tuple[np.ndarray, int]:
    """Sorted integer cells of the coarsest-but-useful precision covering the shape's box."""
    south, north = shape.south, shape.north
    spans = [(shape.west, min(shape.east, 180.0))]
    if shape.east > 180.0:
        spans.append((-180.0, shape.east - 360.0))
    best: np.ndarray | None = None
    best_p = 1
    for p in range(1, gh.MAX_PRECISION + 1):
        lat_bits, lng_bits = gh.axis_bits(p)
        r0 = gh._quantize(max(south - MARGIN_DEG, -90.0), -90.0, 180.0, lat_bits)
        r1 = gh._quantize(min(north + MARGIN_DEG, 90.0), -90.0, 180.0, lat_bits)
        cols: list[int] = []
        for w, e in spans:
            c0 = gh._quantize(max(w - MARGIN_DEG, -180.0), -180.0, 360.0, lng_bits)
            c1 = gh._quantize(min(e + MARGIN_DEG, 180.0), -180.0, 360.0, lng_bits)
            cols.extend(range(c0, c1 + 1))
        if (r1 - r0 + 1) * len(set(cols)) > START_CELLS and best is not None:
            break
        best_p = p
        best = np.array(
            sorted({gh.cell_of(r, c, p) for r in range(r0, r1 + 1) for c in set(cols)}),
            dtype=np.int64,
        )
    assert best is not None
    return best, best_p


def cover(shape: Shape, max_cells: int, count: Counter | None = None) -> Cover:
    """The cells of ``shape`` (see the module text); ``count`` gives each cell's number of
    index rows (None: every cell counts as full, refined while the budget allows)."""
    edges = shape.edges()
    every = np.arange(len(edges))
    out = Cover()
    cells, precision = _start(shape)
    candidates: list[np.ndarray] = [every] * len(cells)
    while len(cells):
        counts = count(cells, precision) if count is not None else np.full(len(cells), 1 << 30)
        keep = counts > 0
        cells, counts = cells[keep], counts[keep]
        candidates = [c for c, k in zip(candidates, keep, strict=True) if k]
        rects = _rects(cells, precision)
        state, met = _classify(edges, candidates, rects, 0.0)
        if shape.crosses_antimeridian:  # the copy 360° east of the cell, in the shape's frame
            east_state, east_met = _classify(edges, candidates, rects, 360.0)
            for i in range(len(cells)):
                if east_state[i] == 1 or (east_state[i] == 2 and state[i] == 0):
                    state[i] = east_state[i]
                if state[i] == 2:
                    met[i] = np.union1d(met[i], east_met[i])
        out.inside.extend((int(c), precision) for c in cells[state == 1])
        edge_cells = np.flatnonzero(state == 2)
        room = max_cells - len(out.inside) - len(out.boundary) - len(edge_cells)
        split: list[int] = []
        if precision < gh.MAX_PRECISION:
            for i in sorted(edge_cells.tolist(), key=lambda i: -int(counts[i])):
                if counts[i] <= REFINE_OVER or room < 31:
                    continue
                split.append(int(i))
                room -= 31
        split_set = set(split)
        out.boundary.extend(
            (int(cells[i]), precision) for i in edge_cells if int(i) not in split_set
        )
        out.refined += len(split)
        children = [(int(cells[i]) << 5) | k for i in split for k in range(32)]
        candidates = [met[i] for i in split for _ in range(32)]
        cells = np.array(children, dtype=np.int64)
        precision += 1
    return out


__all__ = ["Cover", "cover"]
