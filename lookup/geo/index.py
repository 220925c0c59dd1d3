"""The in-memory geohash index: one sorted array of 64-bit cell codes plus narrow columns.

Each place is a row of a few numpy columns (code, lat, lng, place number, rating,
category, price, time zone, hours), all sorted by the place's 60-bit interleaved
geohash code. A geohash cell of any precision is then a contiguous range of rows,
found by two binary searches (``np.searchsorted``) — the prefix query of the seed,
without strings. The count of places in a cell is the length of its range.

Search plans the cells to read (:class:`Plan`): the seed's 3×3 block at the
precision chosen from the radius, refined to a finer covering when the block is
dense, and replaced by a covering of the circle's bounding box where the block
cannot hold the circle (near the poles). The exact distance filter and ranking
happen afterwards, in :mod:`lookup.geo.search`.

Writes never touch the sorted arrays: a change from the stream marks the old row
dead and puts the new state in a small ``delta`` (also sorted by code), which every
plan reads through the same code ranges. A rebuild folds the delta back in.
"""

from __future__ import annotations

import json
import math
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from operator import itemgetter
from typing import Any, Protocol

import numpy as np

from lookup.geo import geohash as gh
from lookup.geo.hours import MINUTES_PER_WEEK, week_bitmap
from lookup.geo.places import COLUMNS
from lookup.geo.ranking import TextIndex, bayesian_rating, factorize, haversine_m

#: When the 3×3 block holds more candidates than this, finer coverings are considered.
DENSE_CANDIDATES = 2048
#: At most this many cells in one covering.
MAX_COVER_CELLS = 128
#: A range read costs about as much as this many candidates (binary searches, slicing).
RANGE_COST = 64
#: Margin (degrees) added around a bounding box so rounding never drops a point on its edge.
BOX_MARGIN_DEG = 1e-9

COLUMN_DTYPES: dict[str, Any] = {
    "code": np.int64,
    "lat": np.float64,
    "lng": np.float64,
    "num": np.int32,
    "rating": np.float32,
    "category": np.uint16,
    "price": np.uint8,
    "tz": np.uint16,
    "hours": np.uint16,
}


# ------------------------------------------------------------------ geometry


@dataclass(frozen=True)
class Box:
    """A latitude band and one or two longitude intervals (two when crossing ±180)."""

    south: float
    north: float
    lngs: tuple[tuple[float, float], ...]
    #: for a circle: its west and east edge without wrapping (may pass ±180); None = all
    span: tuple[float, float] | None = None

    @classmethod
    def rect(cls, south: float, west: float, north: float, east: float) -> Box:
        """A map rectangle; ``west > east`` means it crosses the antimeridian."""
        if west <= east:
            return cls(south, north, ((west, east),))
        return cls(south, north, ((west, 180.0), (-180.0, east)))

    def contains(self, lat: np.ndarray, lng: np.ndarray) -> np.ndarray:
        """Which points lie inside (edges included)."""
        inside_lng = np.zeros(len(lat), dtype=bool)
        for w, e in self.lngs:
            inside_lng |= (lng >= w) & (lng <= e)
        return inside_lng & (lat >= self.south) & (lat <= self.north)


def circle_box(lat: float, lng: float, radius_m: float) -> Box:
    """The latitude/longitude bounding box of a spherical circle (a cap).

    The extreme longitudes are ±asin(sin δ / cos φ) for angular radius δ; a cap that
    reaches a pole spans every longitude.
    """
    delta = radius_m / gh.EARTH_RADIUS_M
    d_deg = math.degrees(delta)
    south, north = lat - d_deg, lat + d_deg
    if north >= 90.0 or south <= -90.0 or delta >= math.pi / 2:
        return Box(max(south, -90.0), min(north, 90.0), ((-180.0, 180.0),))
    ratio = math.sin(delta) / math.cos(math.radians(lat))
    if ratio >= 1.0:
        return Box(south, north, ((-180.0, 180.0),))
    d_lng = math.degrees(math.asin(ratio))
    west, east = lng - d_lng, lng + d_lng
    if west < -180.0:
        return Box(south, north, ((west + 360.0, 180.0), (-180.0, east)), (west, east))
    if east > 180.0:
        return Box(south, north, ((west, 180.0), (-180.0, east - 360.0)), (west, east))
    return Box(south, north, ((west, east),), (west, east))


def _widen(box: Box, margin: float = BOX_MARGIN_DEG) -> Box:
    lngs = tuple((max(w - margin, -180.0), min(e + margin, 180.0)) for w, e in box.lngs)
    span = None if box.span is None else (box.span[0] - margin, box.span[1] + margin)
    return Box(max(box.south - margin, -90.0), min(box.north + margin, 90.0), lngs, span)


# ---------------------------------------------------------------------- plans


@dataclass
class Plan:
    """Which code ranges a search reads, and why (for explanations and the dashboard).

    ``cells`` (names) and ``boxes`` (south, west, north, east) are computed on first use,
    so the hot path does not pay for labels nobody reads.
    """

    strategy: str  # block | cover | quadtree | scan
    ranges: np.ndarray  # (k, 2) int64 half-open code ranges, sorted, non-overlapping
    precision: int | None = None
    candidates: int = 0  # base rows inside the ranges
    describe_cells: Any = None  # () -> (names, boxes)
    _labels: tuple[list[str], list[tuple[float, float, float, float]]] | None = None

    def _computed(self) -> tuple[list[str], list[tuple[float, float, float, float]]]:
        if self._labels is None:
            self._labels = self.describe_cells() if self.describe_cells else ([], [])
        return self._labels

    @property
    def cells(self) -> list[str]:
        return self._computed()[0]

    @property
    def boxes(self) -> list[tuple[float, float, float, float]]:
        return self._computed()[1]

    def describe(self) -> dict[str, Any]:
        """A JSON-friendly summary."""
        return {
            "strategy": self.strategy,
            "precision": self.precision,
            "cells": self.cells,
            "ranges": int(len(self.ranges)),
            "candidates": int(self.candidates),
        }


class Planner(Protocol):
    """Something that turns a circle or a rectangle into code ranges of a :class:`GeohashIndex`."""

    name: str

    @property
    def places(self) -> GeohashIndex: ...

    def plan_radius(self, lat: float, lng: float, radius_m: float) -> Plan: ...

    def plan_box(self, box: Box) -> Plan: ...


def merge_cells(cells: np.ndarray, precision: int) -> np.ndarray:
    """Code ranges of sorted unique integer cells, with neighbours on the curve merged."""
    cells = np.asarray(cells, dtype=np.int64)
    if not len(cells):
        return np.zeros((0, 2), dtype=np.int64)
    step = np.diff(cells)
    if (step <= 0).any():  # the planners pass sorted unique cells; anything else is fixed
        cells = np.unique(cells)
        step = np.diff(cells)
    breaks = np.flatnonzero(step != 1) + 1
    starts = cells[np.concatenate([[0], breaks])]
    ends = cells[np.concatenate([breaks - 1, [len(cells) - 1]])] + 1
    shift = gh.CODE_BITS - 5 * precision
    return np.stack([starts << shift, ends << shift], axis=1)


def merge_ranges(ranges: np.ndarray) -> np.ndarray:
    """Sort code ranges and merge the ones that touch or overlap."""
    if len(ranges) <= 1:
        return ranges
    ranges = ranges[np.argsort(ranges[:, 0], kind="stable")]
    reach = np.maximum.accumulate(ranges[:, 1])
    breaks = np.flatnonzero(ranges[1:, 0] > reach[:-1]) + 1
    starts = ranges[np.concatenate([[0], breaks]), 0]
    ends = reach[np.concatenate([breaks - 1, [len(ranges) - 1]])]
    return np.stack([starts, ends], axis=1).astype(np.int64)


# ---------------------------------------------------------------- vocabulary


class Vocab:
    """Small lookup tables the narrow columns point into: categories, time zones, schedules."""

    def __init__(self) -> None:
        self.categories: list[str] = []
        self._category_ids: dict[str, int] = {}
        self.timezones: list[str] = [""]  # 0 = unknown
        self._tz_ids: dict[str, int] = {"": 0}
        self.schedules: list[str] = [""]  # 0 = no opening hours known
        self._schedule_ids: dict[str, int] = {"": 0}
        self.bitmaps = np.zeros((1, MINUTES_PER_WEEK), dtype=bool)
        self._lock = threading.Lock()

    def _intern(
        self,
        names: list[str],
        ids: dict[str, int],
        key: str,
        on_new: Callable[[str], None] | None = None,
    ) -> int:
        """The id of ``key`` in one table, adding it (after ``on_new(key)``) when new."""
        with self._lock:
            found = ids.get(key)
            if found is None:
                if on_new is not None:
                    on_new(key)
                found = ids[key] = len(names)
                names.append(key)
            return found

    def category(self, name: str) -> int:
        return self._intern(self.categories, self._category_ids, name)

    def category_id(self, name: str) -> int | None:
        """The id of a known category, else ``None``."""
        return self._category_ids.get(name)

    def timezone(self, name: str | None) -> int:
        return self._intern(self.timezones, self._tz_ids, name or "")

    def schedule(self, hours_json: str | None) -> int:
        return self._intern(self.schedules, self._schedule_ids, hours_json or "", self._add_week)

    def _add_week(self, hours_json: str) -> None:
        bits = week_bitmap(json.loads(hours_json))
        self.bitmaps = np.vstack([self.bitmaps, bits[None, :]])

    @property
    def nbytes(self) -> int:
        return int(self.bitmaps.nbytes)


# -------------------------------------------------------------------- columns


@dataclass
class PlaceColumns:
    """The narrow per-place columns (struct of arrays), all of one length."""

    code: np.ndarray
    lat: np.ndarray
    lng: np.ndarray
    num: np.ndarray
    rating: np.ndarray
    category: np.ndarray
    price: np.ndarray
    tz: np.ndarray
    hours: np.ndarray

    @classmethod
    def empty(cls) -> PlaceColumns:
        return cls(**{k: np.zeros(0, dtype=d) for k, d in COLUMN_DTYPES.items()})

    @classmethod
    def from_lists(cls, values: Mapping[str, Sequence[Any] | np.ndarray]) -> PlaceColumns:
        return cls(**{k: np.asarray(values[k], dtype=d) for k, d in COLUMN_DTYPES.items()})

    def __len__(self) -> int:
        return len(self.code)

    def take(self, idx: np.ndarray) -> PlaceColumns:
        return PlaceColumns(**{k: getattr(self, k)[idx] for k in COLUMN_DTYPES})

    def sorted_by_code(self) -> PlaceColumns:
        # ties broken by place number so the order is fully deterministic
        order = np.lexsort((self.num, self.code))
        return self.take(order)

    @staticmethod
    def concat(a: PlaceColumns, b: PlaceColumns) -> PlaceColumns:
        if not len(b):
            return a
        if not len(a):
            return b
        return PlaceColumns(
            **{k: np.concatenate([getattr(a, k), getattr(b, k)]) for k in COLUMN_DTYPES}
        )

    @property
    def nbytes(self) -> int:
        return int(sum(getattr(self, k).nbytes for k in COLUMN_DTYPES))


@dataclass(frozen=True)
class PlaceRow:
    """The fields of one place the index needs, parsed from a database row."""

    num: int
    lat: float
    lng: float
    name: str
    category: str
    tags: tuple[str, ...]
    timezone: str | None
    hours: str | None
    price: int | None
    review_count: int
    review_stars: int

    @classmethod
    def from_db(cls, row: dict[str, Any]) -> PlaceRow:
        tags = row.get("tags") or "[]"
        return cls(
            num=int(row["num"]),
            lat=float(row["lat"]),
            lng=float(row["lng"]),
            name=str(row["name"]),
            category=str(row["category"]),
            tags=_tags(tags),
            timezone=row.get("timezone"),
            hours=row.get("hours"),
            price=row.get("price"),
            review_count=int(row.get("review_count") or 0),
            review_stars=int(row.get("review_stars") or 0),
        )


# ---------------------------------------------------------------------- index


class GeohashIndex:
    """Places sorted by 60-bit geohash code, searchable by cell; live-updatable; versioned.

    Build with :meth:`from_rows`. ``version`` names this snapshot; ``seq`` is the
    change-stream position it includes; ``generation`` counts changes applied live.
    """

    name = "geohash"

    def __init__(
        self,
        base: PlaceColumns,
        text: TextIndex,
        vocab: Vocab,
        *,
        prior_mean: float,
        version: int = 1,
        seq: int = 0,
        dense_candidates: int = DENSE_CANDIDATES,
        max_cover_cells: int = MAX_COVER_CELLS,
    ) -> None:
        self.base = base
        self.text = text
        self.vocab = vocab
        self.prior_mean = prior_mean
        self.version = version
        self.seq = seq
        self.built_at = time.time()
        self.generation = 0
        self.dense_candidates = dense_candidates
        self.max_cover_cells = max_cover_cells
        self.alive: np.ndarray | None = None  # allocated on the first delete
        self._delta: dict[int, tuple[Any, ...]] = {}
        self._delta_cols = PlaceColumns.empty()
        self._lock = threading.RLock()

    @property
    def places(self) -> GeohashIndex:
        return self

    # ------------------------------------------------------------ building

    @classmethod
    def from_rows(
        cls,
        rows: Iterable[dict[str, Any] | Sequence[Any]],
        *,
        version: int = 1,
        seq: int = 0,
        **options: Any,
    ) -> GeohashIndex:
        """Build from database rows: dicts, or tuples in :data:`lookup.geo.places.COLUMNS` order.

        Column-wise throughout: each needed column is read out of the rows once, repeated
        values (categories, time zones, schedules, names, tag lists) are handled once per
        distinct value, and everything per place is numpy.
        """
        rows = rows if isinstance(rows, list) else list(rows)
        if any(issubclass(kind, dict) for kind in set(map(type, rows))):
            rows = [
                tuple(r.get(c) for c in COLUMNS) if isinstance(r, dict) else tuple(r) for r in rows
            ]
        at = {c: i for i, c in enumerate(COLUMNS)}

        def col(name: str) -> list[Any]:
            return list(map(itemgetter(at[name]), rows))

        vocab = Vocab()

        def coded(values: list[Any], add: Any) -> np.ndarray:
            distinct, inverse = factorize(values)
            keys = [v or "" for v in distinct]
            ids = {k: add(k) for k in sorted(set(keys))}
            return np.array([ids[k] for k in keys], dtype=np.int64)[inverse]

        nums, categories = col("num"), col("category")
        count = _numbers(col("review_count"))
        stars = _numbers(col("review_stars"))
        prior = float(stars.sum() / count.sum()) if count.sum() > 0 else 3.5
        lat = np.array(col("lat"), dtype=np.float64)
        lng = np.array(col("lng"), dtype=np.float64)
        cols = PlaceColumns.from_lists(
            {
                "code": gh.encode_codes(lat, lng),
                "lat": lat,
                "lng": lng,
                "num": nums,
                "rating": bayesian_rating(stars, count, prior),
                "category": coded(categories, vocab.category),
                "price": _numbers(col("price")),
                "tz": coded(col("timezone"), vocab.timezone),
                "hours": coded(col("hours"), lambda h: vocab.schedule(h or None)),
            }
        )
        text = TextIndex.build(nums, col("name"), categories, col("tags"))
        return cls(
            cols.sorted_by_code(),
            text,
            vocab,
            prior_mean=prior,
            version=version,
            seq=seq,
            **options,
        )

    def _entry(self, p: PlaceRow) -> tuple[Any, ...]:
        rating = bayesian_rating(float(p.review_stars), float(p.review_count), self.prior_mean)
        return (
            gh.encode_code(p.lat, p.lng),
            p.lat,
            p.lng,
            p.num,
            rating,
            self.vocab.category(p.category),
            p.price or 0,
            self.vocab.timezone(p.timezone),
            self.vocab.schedule(p.hours),
        )

    # ---------------------------------------------------------- live writes

    def apply(self, change: Any) -> bool:
        """Apply one change-stream entry (``store.Change``); False if already applied.

        An upsert removes the place's current entry (wherever it is) and inserts the new
        state into the delta — for a move, a delete from the old cell and an insert into
        the new one. Changes at or below :attr:`seq` are ignored, so replays are harmless.
        """
        with self._lock:
            if change.seq <= self.seq:
                return False
            row = change.after if change.op == "upsert" else change.before
            if row is None:
                self.seq = change.seq
                return False
            num = int(row["num"])
            self._remove(num, change.before)
            if change.op == "upsert":
                place = PlaceRow.from_db(change.after)
                self._delta[num] = self._entry(place)
                self.text.set_place(num, place.name, place.category, place.tags)
            self._rebuild_delta()
            self.seq = change.seq
            self.generation += 1
            return True

    def _remove(self, num: int, before: dict[str, Any] | None) -> None:
        if self._delta.pop(num, None) is not None:
            return  # the base row (if any) died with an earlier change
        pos = self._find_base(num, before)
        if pos is not None:
            if self.alive is None:
                self.alive = np.ones(len(self.base), dtype=bool)
            self.alive[pos] = False

    def _find_base(self, num: int, before: dict[str, Any] | None) -> int | None:
        """Row of place ``num`` in the base: look in its old cell first, else scan."""
        if before is not None:
            try:
                code = gh.encode_code(float(before["lat"]), float(before["lng"]))
            except (KeyError, TypeError, ValueError):
                code = None
            if code is not None:
                lo, hi = np.searchsorted(self.base.code, [code, code + 1])
                hits = np.flatnonzero(self.base.num[lo:hi] == num)
                if len(hits):
                    return int(lo + hits[0])
        hits = np.flatnonzero(self.base.num == num)
        return int(hits[0]) if len(hits) else None

    def _rebuild_delta(self) -> None:
        if not self._delta:
            self._delta_cols = PlaceColumns.empty()
            return
        entries = list(self._delta.values())
        cols = {k: [e[i] for e in entries] for i, k in enumerate(COLUMN_DTYPES)}
        self._delta_cols = PlaceColumns.from_lists(cols).sorted_by_code()

    # ------------------------------------------------------------- reading

    def __len__(self) -> int:
        """Live places (base rows still alive plus the delta)."""
        alive = len(self.base) if self.alive is None else int(self.alive.sum())
        return alive + len(self._delta)

    @property
    def delta_size(self) -> int:
        return len(self._delta)

    def positions(self, ranges: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Rows in the base (alive) and in the delta whose codes fall in ``ranges``."""
        base_idx = _rows_in(self.base.code, ranges)
        alive = self.alive
        if alive is not None and len(base_idx):
            base_idx = base_idx[alive[base_idx]]
        delta = self._delta_cols
        delta_idx = _rows_in(delta.code, ranges) if len(delta) else np.zeros(0, np.int64)
        return base_idx, delta_idx

    def _rows_in_ranges(self, ranges: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
        """Live base rows and delta rows whose codes fall in ``ranges``; and rows read."""
        delta, alive = self._delta_cols, self.alive
        b = _rows_in(self.base.code, ranges)
        d = _rows_in(delta.code, ranges) if len(delta) else np.zeros(0, np.int64)
        read = len(b) + len(d)
        if alive is not None and len(b):
            b = b[alive[b]]
        return b, d, read

    def within_radius(
        self, ranges: np.ndarray, lat: float, lng: float, radius_m: float
    ) -> tuple[PlaceColumns, np.ndarray, int]:
        """Live places in ``ranges`` within ``radius_m`` of the point, by exact haversine.

        Returns (their columns, their distances in metres, how many rows were read).
        Only latitude and longitude are read for the candidates; the other columns are
        gathered for the survivors.
        """
        delta = self._delta_cols
        b, d, read = self._rows_in_ranges(ranges)
        dist_b = haversine_m(lat, lng, self.base.lat[b], self.base.lng[b])
        keep_b = dist_b <= radius_m
        if not len(d):
            return self.base.take(b[keep_b]), dist_b[keep_b], read
        dist_d = haversine_m(lat, lng, delta.lat[d], delta.lng[d])
        keep_d = dist_d <= radius_m
        cols = PlaceColumns.concat(self.base.take(b[keep_b]), delta.take(d[keep_d]))
        return cols, np.concatenate([dist_b[keep_b], dist_d[keep_d]]), read

    def in_box(self, ranges: np.ndarray, box: Box) -> tuple[PlaceColumns, int]:
        """Live places in ``ranges`` that lie inside the rectangle ``box``; and rows read."""
        delta = self._delta_cols
        b, d, read = self._rows_in_ranges(ranges)
        b = b[box.contains(self.base.lat[b], self.base.lng[b])]
        if len(d):
            d = d[box.contains(delta.lat[d], delta.lng[d])]
        return PlaceColumns.concat(self.base.take(b), delta.take(d)), read

    @property
    def delta(self) -> PlaceColumns:
        """The live delta's columns (replaced whole on each change, never edited in place)."""
        return self._delta_cols

    def range_counts(self, bounds: np.ndarray) -> np.ndarray:
        """Rows between each two consecutive codes of the sorted ``bounds`` (base rows, dead
        ones included, plus the delta): which child cells a nearest walk may skip."""
        counts = np.diff(np.searchsorted(self.base.code, bounds))
        delta = self._delta_cols
        if len(delta):
            counts = counts + np.diff(np.searchsorted(delta.code, bounds))
        return counts

    def count_in(self, ranges: np.ndarray) -> int:
        """Base rows in ``ranges`` (dead rows included): the planner's density estimate."""
        if not len(ranges):
            return 0
        lo = np.searchsorted(self.base.code, ranges[:, 0])
        hi = np.searchsorted(self.base.code, ranges[:, 1])
        return int((hi - lo).sum())

    def cell_counts(self, cells: Sequence[str]) -> list[int]:
        """How many live places each geohash cell holds (per-cell density)."""
        out = []
        for cell in cells:
            value, precision = gh.to_cell(cell)
            rng = np.array([gh.cell_range(value, precision)], dtype=np.int64)
            b, d = self.positions(rng)
            out.append(len(b) + len(d))
        return out

    # ------------------------------------------------------------- planning

    def cover(self, box: Box, precision: int) -> np.ndarray:
        """Integer cells of ``precision`` that intersect ``box`` (empty if more than the cap)."""
        lat_bits, lng_bits = gh.axis_bits(precision)
        r0 = gh._quantize(box.south, -90.0, 180.0, lat_bits)
        r1 = gh._quantize(box.north, -90.0, 180.0, lat_bits)
        cols: list[np.ndarray] = []
        for w, e in box.lngs:
            c0 = gh._quantize(w, -180.0, 360.0, lng_bits)
            c1 = gh._quantize(e, -180.0, 360.0, lng_bits)
            cols.append(np.arange(c0, c1 + 1, dtype=np.uint64))
        col = np.unique(np.concatenate(cols))
        rows = np.arange(r0, r1 + 1, dtype=np.uint64)
        ii, jj = np.meshgrid(rows, col, indexing="ij")
        return np.sort(gh.cell_of(ii.ravel(), jj.ravel(), precision).astype(np.int64))

    def cover_size(self, box: Box, precision: int) -> int:
        """How many cells of ``precision`` cover ``box`` (computed without listing them)."""
        lat_bits, lng_bits = gh.axis_bits(precision)
        rows = (
            gh._quantize(box.north, -90.0, 180.0, lat_bits)
            - gh._quantize(box.south, -90.0, 180.0, lat_bits)
            + 1
        )
        cols = 0
        for w, e in box.lngs:
            cols += (
                gh._quantize(e, -180.0, 360.0, lng_bits)
                - gh._quantize(w, -180.0, 360.0, lng_bits)
                + 1
            )
        return rows * min(cols, 1 << lng_bits)

    def block_cells(self, lat: float, lng: float, precision: int) -> np.ndarray:
        """The 3×3 block around the point's cell as integer cells (fewer at the poles)."""
        lat_bits, lng_bits = gh.axis_bits(precision)
        r = gh._quantize(lat, -90.0, 180.0, lat_bits)
        c = gh._quantize(lng, -180.0, 360.0, lng_bits)
        rows = [x for x in (r - 1, r, r + 1) if 0 <= x < (1 << lat_bits)]
        cols = sorted({(c + d) % (1 << lng_bits) for d in (-1, 0, 1)})
        return np.array(
            sorted(gh.cell_of(i, j, precision) for i in rows for j in cols), dtype=np.int64
        )

    @staticmethod
    def block_covers(lat: float, lng: float, precision: int, box: Box) -> bool:
        """Whether the 3×3 block around the point's cell contains the whole ``box``."""
        h, w = gh.cell_size_deg(precision)
        lat_bits, lng_bits = gh.axis_bits(precision)
        r = gh._quantize(lat, -90.0, 180.0, lat_bits)
        c = gh._quantize(lng, -180.0, 360.0, lng_bits)
        south = max(-90.0 + (r - 1) * h, -90.0)
        north = min(-90.0 + (r + 2) * h, 90.0)
        if box.south < south or box.north > north:
            return False
        if 3 * w >= 360.0:
            return True
        if box.span is None:
            return False
        west, east = -180.0 + (c - 1) * w, -180.0 + (c + 2) * w  # unwrapped around lng
        return box.span[0] >= west and box.span[1] <= east

    def _plan(self, strategy: str, cells: np.ndarray, precision: int) -> Plan:
        ranges = merge_cells(cells, precision)

        def labels() -> tuple[list[str], list[tuple[float, float, float, float]]]:
            return (
                [gh.to_string(int(c), precision) for c in cells],
                [gh.cell_bounds(int(c), precision) for c in cells],
            )

        return Plan(
            strategy,
            ranges,
            precision=precision,
            candidates=self.count_in(ranges),
            describe_cells=labels,
        )

    def _cost(self, plan: Plan) -> int:
        return plan.candidates + RANGE_COST * len(plan.ranges)

    def plan_radius(self, lat: float, lng: float, radius_m: float) -> Plan:
        """Cells for a circle: the 3×3 block at the radius's precision, or finer if dense."""
        box = _widen(circle_box(lat, lng, radius_m))
        p0 = gh.precision_for_radius(radius_m, lat)
        options: list[Plan] = []
        if self.block_covers(lat, lng, p0, box):
            block = self._plan("block", self.block_cells(lat, lng, p0), p0)
            if block.candidates <= self.dense_candidates:
                return block
            options.append(block)
            finer = range(p0 + 1, min(p0 + 3, gh.MAX_PRECISION) + 1)
        else:
            finer = range(max(p0 - 1, 1), min(p0 + 3, gh.MAX_PRECISION) + 1)
        for p in finer:
            if self.cover_size(box, p) <= self.max_cover_cells:
                options.append(self._plan("cover", self.cover(box, p), p))
        if not options:  # only possible at the poles: walk up until the covering is small
            p = max(p0 - 1, 1)
            while p > 1 and self.cover_size(box, p) > self.max_cover_cells:
                p -= 1
            options.append(self._plan("cover", self.cover(box, p), p))
        return min(options, key=self._cost)

    def plan_box(self, box: Box) -> Plan:
        """Cells to read for a map rectangle: the finest precision giving a few dozen cells."""
        box = _widen(box)
        best = 1
        for p in range(1, gh.MAX_PRECISION + 1):
            if self.cover_size(box, p) > 64:
                break
            best = p
        return self._plan("cover", self.cover(box, best), best)

    # -------------------------------------------------------------- memory

    def memory(self) -> dict[str, Any]:
        """Bytes held by the index, in total and per place (narrow columns vs the rest)."""
        n = max(len(self.base), 1)
        narrow = self.base.nbytes
        alive = 0 if self.alive is None else int(self.alive.nbytes)
        return {
            "places": len(self.base),
            "narrowBytes": narrow,
            "narrowBytesPerPlace": narrow / n,
            "columns": {k: int(getattr(self.base, k).nbytes) // n for k in COLUMN_DTYPES},
            "aliveMaskBytes": alive,
            "textBytes": self.text.nbytes,
            "textBytesPerPlace": self.text.nbytes / n,
            "scheduleBitmapBytes": self.vocab.nbytes,
            "deltaPlaces": len(self._delta),
        }


@lru_cache(maxsize=100_000)
def _tags_json(text: str) -> tuple[str, ...]:
    value = json.loads(text)
    return tuple(str(t) for t in value) if isinstance(value, list) else ()


def _tags(value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return _tags_json(value)
    return tuple(str(t) for t in value)


def _numbers(values: Sequence[Any]) -> np.ndarray:
    """A numeric column as float64, with ``None`` (SQL NULL) as 0."""
    out = np.array(values, dtype=np.float64) if len(values) else np.zeros(0)
    return np.nan_to_num(out, nan=0.0, copy=False)


def _rows_in(codes: np.ndarray, ranges: np.ndarray) -> np.ndarray:
    """Row numbers of a sorted code array that fall in the half-open code ranges."""
    if not len(ranges) or not len(codes):
        return np.zeros(0, dtype=np.int64)
    lo = np.searchsorted(codes, ranges[:, 0])
    hi = np.searchsorted(codes, ranges[:, 1])
    lengths = hi - lo
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    if len(lo) == 1:
        return np.arange(lo[0], hi[0], dtype=np.int64)
    keep = lengths > 0
    lo, lengths = lo[keep], lengths[keep]
    starts = np.repeat(lo - np.cumsum(lengths) + lengths, lengths)
    return starts + np.arange(total, dtype=np.int64)


class ScanIndex:
    """The brute-force "planner": read every row (for comparisons and as an oracle)."""

    name = "scan"

    def __init__(self, places: GeohashIndex) -> None:
        self.places = places

    def _all(self) -> Plan:
        ranges = np.array([[0, 1 << gh.CODE_BITS]], dtype=np.int64)
        return Plan("scan", ranges, candidates=len(self.places.base))

    def plan_radius(self, lat: float, lng: float, radius_m: float) -> Plan:
        return self._all()

    def plan_box(self, box: Box) -> Plan:
        return self._all()
