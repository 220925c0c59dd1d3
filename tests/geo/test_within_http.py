"""``GET /v1/places/within`` over a real ``lookup serve`` (issue 27 item 15): a drawn
polygon's places equal brute force with ``shapely``, pages by cursor, places added across
±180 found by a polygon that crosses it, bad shapes refused with a JSON 400, and the
route in ``/openapi.json``."""

from __future__ import annotations

import json
import math
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
import shapely

from lookup.datasets import places as places_dataset
from lookup.geo.store import SqlitePlaceStore, row_dict
from lookup.kit.admin import admin_token_path
from tests.conftest import running_lookup

ADMIN = {"Authorization": "Bearer places-within-admin-token"}
MAX_VERTICES = 40


@pytest.fixture(scope="module")
def served(
    built_data_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, Path]]:
    data_dir = tmp_path_factory.mktemp("within") / "data"
    shutil.copytree(built_data_dir, data_dir)
    admin_token_path(data_dir).parent.mkdir(parents=True, exist_ok=True)
    admin_token_path(data_dir).write_text(ADMIN["Authorization"].split()[1] + "\n")
    env = {"LOOKUP_PLACES_POLYGON_MAX_VERTICES": str(MAX_VERTICES)}
    with running_lookup(data_dir, env=env, timeout=120) as url:
        yield url, data_dir


def _rows(data_dir: Path) -> list[dict[str, Any]]:
    store = SqlitePlaceStore(places_dataset.db_path(data_dir))
    try:
        _, rows = store.snapshot()
    finally:
        store.close()
    return [row_dict(r) for r in rows]


def _pages(url: str, **params: Any) -> tuple[list[dict[str, Any]], int]:
    found: list[dict[str, Any]] = []
    cursor = None
    while True:
        query = {**params, **({"cursor": cursor} if cursor else {})}
        r = httpx.get(f"{url}/v1/places/within", params=query, timeout=60)
        assert r.status_code == 200, r.text
        body = r.json()
        found += body["results"]
        if not body["truncated"]:
            return found, body["total"]
        cursor = body["nextCursor"]


def _polygon(lng: float, lat: float, size: float, n: int = 24) -> dict[str, Any]:
    ring = [
        [round(lng + size * (1 + 0.3 * math.sin(3 * a)) * math.cos(a), 6),
         round(lat + size * (1 + 0.3 * math.sin(3 * a)) * math.sin(a), 6)]
        for a in (2 * math.pi * i / n for i in range(n))
    ]  # fmt: skip
    hole = [[lng + size * 0.2 * math.cos(-a), lat + size * 0.2 * math.sin(-a)] for a in range(6)]
    return {"type": "Polygon", "coordinates": [[*ring, ring[0]], [*hole, hole[0]]]}


def test_a_drawn_polygon_equals_brute_force(served: tuple[str, Path]) -> None:
    url, data_dir = served
    poly = _polygon(77.6, 12.95, 0.6)  # round Bengaluru, a hole in the middle
    rows = _rows(data_dir)
    geom = shapely.Polygon(poly["coordinates"][0], [poly["coordinates"][1]])
    lat = np.array([r["lat"] for r in rows])
    lng = np.array([r["lng"] for r in rows])
    inside = shapely.covers(geom, shapely.points(lng, lat))
    expected = {r["id"] for r, hit in zip(rows, inside, strict=True) if hit}
    assert len(expected) > 20
    text = json.dumps(poly)
    found, total = _pages(url, polygon=text, limit=9)
    assert {p["id"] for p in found} == expected and total == len(expected)
    assert len(found) == len(expected)  # no place on two pages
    scanned, _ = _pages(url, polygon=text, limit=500, index="scan")
    assert {p["id"] for p in scanned} == expected
    r = httpx.get(f"{url}/v1/places/within", params={"polygon": text, "explain": "true"})
    body = r.json()
    assert body["cells"]["inside"] + body["cells"]["boundary"] >= 1
    assert body["shape"] == {
        "kind": "polygon",
        "vertices": 30,
        "holes": 1,
        "crossesAntimeridian": False,
    }
    assert body["explain"]["boundary"] and body["tested"] <= body["read"]
    cafes, _ = _pages(url, polygon=text, category="restaurant")
    assert cafes and all(p["category"] == "restaurant" and p["id"] in expected for p in cafes)
    rated, _ = _pages(url, polygon=text, category="restaurant", minRating="3.6")
    assert {p["id"] for p in rated} <= {p["id"] for p in cafes}
    assert _pages(url, polygon=text, minRating="5")[0] == []  # shrunk toward the mean
    assert _pages(url, polygon=text, minRating="0", limit=500)[1] == len(expected)


def test_places_across_the_antimeridian(served: tuple[str, Path]) -> None:
    url, _ = served
    added = []
    for lng in (179.95, -179.95):
        body = {"name": "Dateline Kava Bar", "lat": -17.8, "lng": lng, "category": "cafe"}
        r = httpx.post(f"{url}/v1/places", json=body, headers=ADMIN, timeout=60)
        assert r.status_code == 201, r.text
        added.append(r.json()["id"])
    crossing = {
        "type": "Polygon",
        "coordinates": [
            [[179.5, -18.5], [-179.5, -18.5], [-179.5, -17], [179.5, -17], [179.5, -18.5]]
        ],
    }
    found, _ = _pages(url, polygon=json.dumps(crossing), q="dateline")
    assert sorted(p["id"] for p in found) == sorted(added)
    found, _ = _pages(url, bbox="179.5,-18.5,-179.5,-17", q="dateline")
    assert sorted(p["id"] for p in found) == sorted(added)
    # west < east: the box the other way round the world, 359° wide, holds neither
    found, _ = _pages(url, bbox="-179.5,-18.5,179.5,-17", q="dateline")
    assert found == []


@pytest.mark.parametrize(
    ("params", "code"),
    [
        (
            {"polygon": '{"type":"Polygon","coordinates":[[[0,0],[1,0],[1,1],[0,1]]]}'},
            "INVALID_POLYGON",
        ),
        (
            {"polygon": '{"type":"Polygon","coordinates":[[[0,0],[1,1],[1,0],[0,1],[0,0]]]}'},
            "INVALID_POLYGON",
        ),
        (
            {"polygon": '{"type":"Polygon","coordinates":[[[0,0],[1,0],[1,95],[0,0]]]}'},
            "INVALID_POLYGON",
        ),
        ({"polygon": "not json"}, "INVALID_POLYGON"),
        ({"polygon": json.dumps(_polygon(0, 0, 1, n=40))}, "INVALID_POLYGON"),  # 46 > 40 vertices
        ({"bbox": "1,2,3"}, "INVALID_POLYGON"),
        ({"bbox": "0,10,1,5"}, "INVALID_POLYGON"),
        ({}, "INVALID_PARAMETER"),
        ({"bbox": "0,0,1,1", "polygon": "{}"}, "INVALID_PARAMETER"),
        ({"bbox": "0,0,1,1", "minRating": "6"}, "INVALID_PARAMETER"),
        ({"bbox": "0,0,1,1", "limit": "0"}, "INVALID_PARAMETER"),
        ({"bbox": "0,0,1,1", "cursor": "forged"}, "INVALID_PARAMETER"),
        ({"bbox": "0,0,1,1", "category": "volcano"}, "INVALID_PARAMETER"),
        ({"bbox": "0,0,1,1", "radius": "5"}, "UNKNOWN_PARAMETER"),
    ],
)
def test_bad_input_is_a_json_400(
    served: tuple[str, Path], params: dict[str, str], code: str
) -> None:
    url, _ = served
    r = httpx.get(f"{url}/v1/places/within", params=params, timeout=60)
    assert r.status_code == 400, r.text
    assert r.json()["error"] == code and r.json()["message"]


def test_the_route_is_in_openapi(served: tuple[str, Path]) -> None:
    url, _ = served
    doc = httpx.get(f"{url}/openapi.json", timeout=60).json()
    op = doc["paths"]["/v1/places/within"]["get"]
    names = {p["name"] for p in op["parameters"]}
    assert {"polygon", "bbox", "category", "minRating", "limit", "cursor"} <= names
    assert "ST_Intersects" in op["description"]
