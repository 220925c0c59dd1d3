"""Shared fixtures for the proximity tests: a small built data set, a dense synthetic one,
and a brute-force oracle that scans every place with its own haversine and filters."""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import numpy as np
import pytest

from lookup.datasets import places as places_dataset
from lookup.geo.ranking import tokenize
from lookup.geo.store import PlaceDatabaseWriter, SqlitePlaceStore, row_dict
from tests.conftest import shared_build

#: A fixed instant (Wednesday 2025-06-11 12:30 UTC) so "open now" is reproducible.
NOW = 1749645000.0
EARTH_RADIUS_M = 6_371_000.0


class Oracle:
    """Brute force over a whole table: every place, exact distance, every filter."""

    def __init__(self, rows: Iterable[dict[str, Any]]) -> None:
        self.rows = [dict(r) for r in rows]
        self.num = np.array([r["num"] for r in self.rows], dtype=np.int64)
        self.lat = np.array([r["lat"] for r in self.rows], dtype=np.float64)
        self.lng = np.array([r["lng"] for r in self.rows], dtype=np.float64)
        names = sorted({r["category"] for r in self.rows})
        self._category_ids = {c: i for i, c in enumerate(names)}
        self.category = np.array([self._category_ids[r["category"]] for r in self.rows])
        self.price = np.array([r.get("price") or 0 for r in self.rows], dtype=np.int64)
        self.words = [
            set(tokenize(r["name"]))
            | set(tokenize(r["category"]))
            | set(tokenize(" ".join(json.loads(r.get("tags") or "[]"))))
            for r in self.rows
        ]
        self.count = np.array([r.get("review_count") or 0 for r in self.rows], dtype=np.float64)
        self.stars = np.array([r.get("review_stars") or 0 for r in self.rows], dtype=np.float64)
        self._open: dict[float, np.ndarray] = {}
        self._text: dict[str, np.ndarray] = {}

    def distances(self, lat: float, lng: float) -> np.ndarray:
        """Haversine, written out independently of the package."""
        p1, p2 = np.radians(lat), np.radians(self.lat)
        a = (
            np.sin((p2 - p1) / 2) ** 2
            + np.cos(p1) * np.cos(p2) * np.sin(np.radians(self.lng - lng) / 2) ** 2
        )
        return 2 * EARTH_RADIUS_M * np.arcsin(np.sqrt(np.minimum(a, 1.0)))

    def open_at(self, ts: float) -> np.ndarray:
        """Open status of every place at ``ts``, from its intervals and local clock."""
        if ts not in self._open:
            memo: dict[tuple[str, str], bool] = {}
            out = np.zeros(len(self.rows), dtype=bool)
            for i, r in enumerate(self.rows):
                key = (r.get("hours") or "", r.get("timezone") or "")
                if key not in memo:
                    memo[key] = _open_by_intervals(key[0], key[1], ts)
                out[i] = memo[key]
            self._open[ts] = out
        return self._open[ts]

    def mask(
        self,
        lat: float,
        lng: float,
        radius: float,
        *,
        categories: tuple[str, ...] = (),
        prices: tuple[int, ...] = (),
        q: str = "",
        open_now: bool = False,
        now: float = NOW,
    ) -> tuple[np.ndarray, np.ndarray]:
        """(which places match, their distances)."""
        d = self.distances(lat, lng)
        keep = d <= radius
        if categories:
            keep &= np.isin(self.category, [self._category_ids.get(c, -1) for c in categories])
        if prices:
            keep &= np.isin(self.price, list(prices))
        if q:
            keep &= self.text_match(q)
        if open_now:
            keep &= self.open_at(now)
        return keep, d

    def text_match(self, q: str) -> np.ndarray:
        """Places having at least one of the query's words in name, category or tags."""
        if q not in self._text:
            wanted = set(tokenize(q))
            self._text[q] = (
                np.array([bool(w & wanted) for w in self.words])
                if wanted
                else np.ones(len(self.rows), dtype=bool)
            )
        return self._text[q]

    def within(self, lat: float, lng: float, radius: float, **filters: Any) -> set[int]:
        keep, _ = self.mask(lat, lng, radius, **filters)
        return set(self.num[keep].tolist())


def _open_by_intervals(hours: str, tz: str, ts: float) -> bool:
    if not hours or not tz:
        return False
    try:
        local = datetime.fromtimestamp(ts, ZoneInfo(tz))
    except Exception:
        return False
    schedule = json.loads(hours)
    days = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"]
    minute = local.hour * 60 + local.minute
    today = local.weekday()
    for offset, day_minute in ((0, minute), (1, minute + 24 * 60)):
        day = days[(today - offset) % 7]
        for interval in schedule.get(day, []):
            start_s, end_s = interval.split("-")
            start = int(start_s[:2]) * 60 + int(start_s[3:])
            end = int(end_s[:2]) * 60 + int(end_s[3:])
            if end <= start:
                end += 24 * 60
            if start <= day_minute < end:
                return True
    return False


def synthetic_rows(seed: int = 3) -> list[dict[str, Any]]:
    """A dense, awkward world: a packed city, both poles, the antimeridian, and everywhere."""
    rng = np.random.default_rng(seed)
    groups = [
        # (count, lat centre, lng centre, spread in degrees, tz)
        (12000, 12.9716, 77.5946, 0.08, "Asia/Kolkata"),  # a dense city centre
        (3000, 89.9, 0.0, 0.08, "UTC"),  # at the north pole
        (3000, -89.93, 0.0, 0.05, "Antarctica/McMurdo"),  # at the south pole
        (4000, -17.7, 180.0, 0.3, "Pacific/Fiji"),  # astride the antimeridian
        (3000, 64.0, -179.9, 0.2, "America/Adak"),  # far north, by ±180
    ]
    lat_parts, lng_parts, tzs = [], [], []
    for n, clat, clng, spread, tz in groups:
        lat_parts.append(np.clip(clat + rng.normal(0, spread, n), -90, 90))
        lng_parts.append((clng + rng.normal(0, spread * 2, n) + 180.0) % 360.0 - 180.0)
        tzs += [tz] * n
    n_world = 5000
    lat_parts.append(np.degrees(np.arcsin(rng.uniform(-1, 1, n_world))))
    lng_parts.append(rng.uniform(-180, 180, n_world))
    tzs += ["Europe/Berlin"] * n_world
    lat = np.concatenate(lat_parts)
    lng = np.concatenate(lng_parts)
    # exact poles and exact ±180 too
    lat = np.concatenate([lat, [90.0, -90.0, 0.0, 0.0, 45.0, -45.0]])
    lng = np.concatenate([lng, [0.0, 0.0, 180.0, -180.0, 180.0, -180.0]])
    tzs += ["UTC"] * 6
    cats = ["restaurant", "cafe", "pharmacy", "fuel", "hotel"]
    tags = [["biryani", "dosa"], ["pizza"], ["coffee", "cake"], ["biryani"], []]
    hours = list(places_dataset.HOURS_TEMPLATES.values())
    rows = []
    for i in range(len(lat)):
        count = int(rng.integers(0, 400))
        rows.append(
            {
                "id": f"s:{i}",
                "num": i,
                "name": f"Place {i} {['Golden', 'Royal', 'Spice'][i % 3]}",
                "lat": float(lat[i]),
                "lng": float(lng[i]),
                "category": cats[i % 5],
                "kind": "business",
                "geohash": "",
                "country": None,
                "timezone": tzs[i],
                "population": None,
                "tags": json.dumps(tags[(i // 5) % 5]),
                "hours": json.dumps(hours[i % len(hours)]) if i % 7 else None,
                "price": int(rng.integers(1, 5)) if i % 4 else None,
                "review_count": count,
                "review_stars": int(count * rng.uniform(1, 5)),
                "generated": 1,
                "near_city": None,
                "updated_at": 0.0,
            }
        )
    return rows


@pytest.fixture(scope="session")
def built_data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data directory with the places data set built small (5,000 businesses)."""
    return shared_build(
        tmp_path_factory,
        "geo-data",
        lambda data_dir: places_dataset.build(data_dir, count=5000, seed=11, progress=False),
    )


@pytest.fixture(scope="session")
def built_rows(built_data_dir: Path) -> list[dict[str, Any]]:
    store = SqlitePlaceStore(places_dataset.db_path(built_data_dir))
    try:
        _, rows = store.snapshot()
    finally:
        store.close()
    return [row_dict(r) for r in rows]


@pytest.fixture(scope="session")
def dense_rows() -> list[dict[str, Any]]:
    return synthetic_rows()


def write_places_db(data_dir: Path, rows: list[dict[str, Any]]) -> Path:
    """A complete places database holding exactly ``rows`` (for tests that write to it)."""
    path = places_dataset.db_path(data_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    with PlaceDatabaseWriter(path) as db:
        db.insert_dicts(rows)
        db.finish({"next_num": str(max(r["num"] for r in rows) + 1)})
    return data_dir
