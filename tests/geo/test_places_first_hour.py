"""Places defects a PostGIS or Typesense user meets in the first hour (issue 27), over a
real ``lookup serve``.

- Item 12: a place added or moved through the API without a time zone was stored as UTC,
  so ``openNow`` read a Bengaluru café's hours five and a half hours off. Now the zone is
  derived from the point (the polygons the ``timezonefinder`` package ships), an invalid
  one is refused, and a rebuild fixes rows stored as UTC before.
- Item 14: the result set depended on ``limit`` (21 results at ``limit=7``, 114 at
  ``limit=100`` for one query): the radius widened until one *page* was full. Now it widens
  until a fixed number of places match, whatever the page size.
"""

from __future__ import annotations

import shutil
import sqlite3
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import httpx
import pytest

from lookup.datasets import places as places_dataset
from lookup.geo.zones import zone_at
from lookup.kit.admin import admin_token_path
from tests.conftest import running_lookup

ADMIN = {"Authorization": "Bearer places-zones-admin-token"}
#: Koramangala, Bengaluru (Asia/Kolkata, UTC+05:30); Paris; the middle of the Pacific.
BENGALURU = (12.9352, 77.6245)
PARIS = (48.8566, 2.3522)
PACIFIC = (0.0, -160.0)


@pytest.fixture(scope="module")
def served(
    built_data_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, Path]]:
    data_dir = tmp_path_factory.mktemp("zones") / "data"
    shutil.copytree(built_data_dir, data_dir)
    admin_token_path(data_dir).parent.mkdir(parents=True, exist_ok=True)
    admin_token_path(data_dir).write_text(ADMIN["Authorization"].split()[1] + "\n")
    with running_lookup(data_dir, timeout=120) as url:
        yield url, data_dir


@pytest.fixture
def live(served: tuple[str, Path]) -> str:
    return served[0]


def _hours_open_now_in(tz: str) -> dict[str, list[str]]:
    """An hour's opening that holds now in ``tz`` (and not in UTC, 5.5 hours away)."""
    now = datetime.now(ZoneInfo(tz))
    start = now - timedelta(minutes=20)
    end = start + timedelta(minutes=60)
    day = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")[start.weekday()]
    if end.date() != start.date():  # keep it inside one day: open till midnight
        return {day: [f"{start:%H:%M}-24:00"]}
    return {day: [f"{start:%H:%M}-{end:%H:%M}"]}


def _add(url: str, lat: float, lng: float, **extra: Any) -> dict[str, Any]:
    body = {"name": "Filter Coffee Corner", "lat": lat, "lng": lng, "category": "cafe", **extra}
    r = httpx.post(f"{url}/v1/places", json=body, headers=ADMIN, timeout=60)
    assert r.status_code == 201, r.text
    return dict(r.json())


def _open_near(url: str, lat: float, lng: float, q: str) -> list[str]:
    params = {"lat": lat, "lng": lng, "radius": 100, "widen": "false", "q": q, "openNow": "true"}
    r = httpx.get(f"{url}/v1/search", params=params, timeout=60)
    assert r.status_code == 200, r.text
    return [p["id"] for p in r.json()["results"]]


def test_zone_at_knows_the_cities_and_the_sea() -> None:
    assert zone_at(*BENGALURU) == "Asia/Kolkata"
    assert zone_at(*PARIS) == "Europe/Paris"
    assert zone_at(*PACIFIC) == "Etc/GMT+11"  # UTC−11: the nautical zone of 160° W
    assert zone_at(0.0, 179.99) == "Etc/GMT-12" and zone_at(0.0, -179.99) == "Etc/GMT+12"


def test_a_place_added_without_a_zone_is_open_by_its_own_clock(live: str) -> None:
    hours = _hours_open_now_in("Asia/Kolkata")
    place = _add(live, *BENGALURU, hours=hours, tags=["zonecheck"])
    assert place["timezone"] == "Asia/Kolkata"
    assert place["id"] in _open_near(live, *BENGALURU, "zonecheck")
    moved = httpx.patch(
        f"{live}/v1/places/{place['id']}",
        json={"lat": PARIS[0], "lng": PARIS[1]},
        headers=ADMIN,
        timeout=60,
    )
    assert moved.status_code == 200 and moved.json()["timezone"] == "Europe/Paris"


def test_a_zone_given_is_kept_and_a_bad_one_refused(live: str) -> None:
    kept = _add(live, *BENGALURU, timezone="Asia/Kathmandu")
    assert kept["timezone"] == "Asia/Kathmandu"
    r = httpx.post(
        f"{live}/v1/places",
        json={"name": "x", "lat": 1, "lng": 1, "category": "cafe", "timezone": "Mars/Olympus"},
        headers=ADMIN,
        timeout=60,
    )
    assert r.status_code == 400 and r.json()["error"] == "INVALID_PARAMETER"


def test_a_rebuild_fixes_the_rows_stored_as_utc(served: tuple[str, Path]) -> None:
    live, data_dir = served
    place = _add(live, *BENGALURU, tags=["utcbefore"])
    with sqlite3.connect(places_dataset.db_path(data_dir), timeout=30) as conn:
        conn.execute("UPDATE places SET timezone = 'UTC' WHERE id = ?", (place["id"],))
    r = httpx.post(f"{live}/v1/places/index/rebuild", headers=ADMIN, timeout=120)
    assert r.status_code == 200, r.text
    assert r.json()["zonesAssigned"] >= 1
    got = httpx.get(f"{live}/v1/places/{place['id']}", timeout=60).json()
    assert got["timezone"] == "Asia/Kolkata"


@pytest.mark.parametrize("q", ["", "coffee", "biryani"])
def test_the_result_set_does_not_depend_on_the_page_size(live: str, q: str) -> None:
    """The same search at limit 7 (paged to the end) and at limit 100: one radius, one
    total, the same places in the same order."""
    base = {"lat": BENGALURU[0], "lng": BENGALURU[1], "radius": 250, "q": q}
    big = httpx.get(f"{live}/v1/search", params={**base, "limit": 100}, timeout=60).json()
    pages, cursor = [], None
    while True:
        params = {**base, "limit": 7, **({"cursor": cursor} if cursor else {})}
        page = httpx.get(f"{live}/v1/search", params=params, timeout=60).json()
        pages.append(page)
        cursor = page.get("nextCursor")
        if not cursor:
            break
    small = pages[0]
    assert small["radiusUsedM"] == big["radiusUsedM"]
    assert small["total"] == big["total"]
    ids = [p["id"] for page in pages for p in page["results"]]
    assert len(ids) == small["total"]
    assert ids[: len(big["results"])] == [p["id"] for p in big["results"]]
