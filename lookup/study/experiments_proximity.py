"""Predict-then-run experiments on proximity search: geohash cells and their edges.

Both build a real :class:`lookup.geo.index.GeohashIndex` over seeded synthetic places
around a point and ask it for cells and candidates; distances are the index's own
haversine, checked against a brute-force scan of every place.
"""

from __future__ import annotations

import math
from typing import Any

from lookup.study.measure import Experiment, Measured

__all__ = ["EXPERIMENTS_PROXIMITY", "neighbour_miss", "radius_cells"]

#: Koramangala, Bengaluru: the design text's worked example.
_LAT, _LNG = 12.9352, 77.6245
_MAX_CELLS = 200_000


def _places(
    lat: float, lng: float, half_side_m: float, count: int, seed: int
) -> list[dict[str, Any]]:
    """``count`` places spread evenly over a square of ``2 × half_side_m`` around a point."""
    import numpy as np

    from lookup.geo import geohash as gh

    rng = np.random.default_rng(seed)
    d_lat = half_side_m / gh.METRES_PER_DEGREE
    d_lng = d_lat / math.cos(math.radians(lat))
    lats = np.clip(lat + rng.uniform(-d_lat, d_lat, count), -90.0, 90.0)
    lngs = lng + rng.uniform(-d_lng, d_lng, count)
    return [
        {
            "id": f"p:{i}",
            "num": i,
            "name": f"Place {i}",
            "lat": float(a),
            "lng": float(b),
            "category": "restaurant",
            "kind": "business",
            "tags": "[]",
            "review_count": 0,
            "review_stars": 0,
            "generated": 1,
            "updated_at": 0.0,
        }
        for i, (a, b) in enumerate(zip(lats, lngs, strict=True))
    ]


def _index(rows: list[dict[str, Any]]) -> Any:
    from lookup.geo.index import GeohashIndex

    return GeohashIndex.from_rows(rows)


def radius_cells(
    radius_m: float = 5_000.0,
    precision: int = 5,
    lat: float = _LAT,
    lng: float = _LNG,
    places: int = 4_000,
    seed: int = 3,
) -> Measured:
    """How many geohash cells of ``precision`` a circle of ``radius_m`` needs.

    The index covers the circle's bounding box with every cell of that precision it
    touches; the chain sets that beside the 3×3 block at the precision the radius picks.
    """
    from lookup.geo import geohash as gh
    from lookup.geo.index import circle_box, merge_cells

    if not 1 <= precision <= gh.MAX_PRECISION:
        raise ValueError(f"precision must be within 1..{gh.MAX_PRECISION}")
    if not 1.0 <= radius_m <= 1_000_000.0:
        raise ValueError("radius_m must be between 1 m and 1,000 km")
    index = _index(_places(lat, lng, 1.5 * radius_m, places, seed))
    box = circle_box(lat, lng, radius_m)
    n_cells = index.cover_size(box, precision)
    if n_cells > _MAX_CELLS:
        raise ValueError(f"{n_cells:,} cells: choose a coarser precision for this radius")
    cells = index.cover(box, precision)
    ranges = merge_cells(cells, precision)
    chosen = gh.precision_for_radius(radius_m, lat)
    block = index.block_cells(lat, lng, chosen)
    block_ranges = merge_cells(block, chosen)
    h, w = gh.cell_size_m(precision, lat)
    h0, w0 = gh.cell_size_m(chosen, lat)
    found, _, _ = index.within_radius(ranges, lat, lng, radius_m)
    chain = (
        f"a circle of {radius_m:,.0f} m around ({lat}, {lng}); its bounding box is about "
        f"{2 * radius_m / 1000:.3g} km on each side",
        f"a precision-{precision} cell here is {h:,.0f} m × {w:,.0f} m",
        f"the index covers the box with {len(cells)} cells of precision {precision} "
        f"({len(ranges)} contiguous code ranges to scan), holding "
        f"{index.count_in(ranges):,} of {places:,} places",
        f"for comparison: the radius alone picks precision {chosen} ({h0:,.0f} m × "
        f"{w0:,.0f} m), whose 3×3 block is {len(block)} cells holding "
        f"{index.count_in(block_ranges):,} places",
        f"after the exact distance filter {len(found):,} places are within the radius",
    )
    return Measured(
        float(len(cells)),
        "count",
        chain,
        {
            "precision": precision,
            "cells": len(cells),
            "ranges": len(ranges),
            "candidates": index.count_in(ranges),
            "precision for radius": chosen,
            "block cells": len(block),
            "block candidates": index.count_in(block_ranges),
            "within radius": len(found),
        },
    )


def neighbour_miss(
    radius_m: float = 500.0,
    places: int = 20_000,
    queries: int = 200,
    seed: int = 5,
    lat: float = _LAT,
    lng: float = _LNG,
) -> Measured:
    """The share of the places truly within ``radius_m`` that a search misses when it
    reads only the query point's own geohash cell instead of the 3×3 block."""
    import numpy as np

    from lookup.geo import geohash as gh
    from lookup.geo.index import merge_cells
    from lookup.geo.ranking import haversine_m

    if radius_m <= 0 or places < 100 or queries < 1:
        raise ValueError("need radius_m > 0, places >= 100 and queries >= 1")
    half = 10.0 * radius_m
    rows = _places(lat, lng, half, places, seed)
    index = _index(rows)
    all_lat = np.array([r["lat"] for r in rows])
    all_lng = np.array([r["lng"] for r in rows])
    rng = np.random.default_rng(seed + 1)
    d_lat = 0.7 * half / gh.METRES_PER_DEGREE
    d_lng = d_lat / math.cos(math.radians(lat))
    truth = own_found = block_found = own_read = block_read = 0
    for qa, qb in zip(
        lat + rng.uniform(-d_lat, d_lat, queries),
        lng + rng.uniform(-d_lng, d_lng, queries),
        strict=True,
    ):
        p = gh.precision_for_radius(radius_m, float(qa))
        cell = gh.cell_value(gh.encode_code(float(qa), float(qb)), p)
        own = merge_cells(np.array([cell], dtype=np.int64), p)
        block = merge_cells(index.block_cells(float(qa), float(qb), p), p)
        got_own, _, read_own = index.within_radius(own, float(qa), float(qb), radius_m)
        got_block, _, read_block = index.within_radius(block, float(qa), float(qb), radius_m)
        truth += int((haversine_m(float(qa), float(qb), all_lat, all_lng) <= radius_m).sum())
        own_found += len(got_own)
        block_found += len(got_block)
        own_read += read_own
        block_read += read_block
    if truth == 0:
        raise ValueError("no place fell within the radius of any query; use more places")
    missed = 1.0 - own_found / truth
    p_mid = gh.precision_for_radius(radius_m, lat)
    h, w = gh.cell_size_m(p_mid, lat)
    chain = (
        f"{places:,} places spread evenly over {2 * half / 1000:.3g} km × "
        f"{2 * half / 1000:.3g} km; {queries} query points at random inside it",
        f"for {radius_m:,.0f} m the index picks precision {p_mid}: cells of "
        f"{h:,.0f} m × {w:,.0f} m, at least the radius on their shorter side",
        f"a brute-force scan of every place found {truth:,} within the radius over all queries",
        f"reading only each query's own cell found {own_found:,} of them "
        f"({own_read:,} places read): {missed:.1%} missed",
        f"reading the 3×3 block found {block_found:,} ({block_read:,} places read): "
        f"{truth - block_found} missed",
    )
    return Measured(
        missed,
        "fraction",
        chain,
        {
            "in radius (brute force)": truth,
            "found in own cell": own_found,
            "found in 3x3 block": block_found,
            "read in own cell": own_read,
            "read in 3x3 block": block_read,
            "precision": p_mid,
        },
    )


EXPERIMENTS_PROXIMITY = (
    Experiment(
        "radius_cells",
        "Geohash cells a radius search must read at a given precision",
        radius_cells,
        {"radius_m": 5_000.0, "precision": 5, "lat": _LAT, "lng": _LNG, "places": 4_000, "seed": 3},
    ),
    Experiment(
        "neighbour_miss",
        "Places missed by reading only the query's own geohash cell",
        neighbour_miss,
        {"radius_m": 500.0, "places": 20_000, "queries": 200, "seed": 5, "lat": _LAT, "lng": _LNG},
    ),
)
