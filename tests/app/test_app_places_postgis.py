"""The Places page's comparison with PostGIS as the fourth planner (issue 26, places item 3).

The real API serves a small places data set from the PostgreSQL place store (PostGIS), so
``index=postgis`` answers; the comparison then shows four rows — geohash, quadtree, brute
force, PostGIS — and each says it returned what brute force returned, checked here
against an oracle of this file's own (haversine over every row of the table). Against a
server whose places are in SQLite the PostGIS row is left out with the API's reason.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
import pytest
from streamlit.testing.v1 import AppTest

from tests.conftest import serve_in_thread

PLACES = "views/places.py"
SEED_POINT = (12.9352, 77.6245)  # Koramangala, the page's first preset


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from lookup.datasets import places

    data_dir = tmp_path_factory.mktemp("places-postgis-data")
    places.build(data_dir, count=800, progress=False)
    return data_dir


@pytest.fixture(scope="module")
def rows(built: Path) -> list[tuple[Any, ...]]:
    from lookup.datasets.places import db_path
    from lookup.geo.places import open_place_store

    store = open_place_store(f"sqlite:///{db_path(built)}")
    try:
        return list(store.snapshot()[1])
    finally:
        store.close()


@pytest.fixture(scope="module")
def pg_api(postgres_server: Any, built: Path, rows: list[tuple[Any, ...]]) -> Iterator[str]:
    """The real API with its places in a PostgreSQL database loaded from the data set."""
    from lookup.geo.places import open_place_writer
    from lookup.server import create_app

    name = f"t_pgpage_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(postgres_server.url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    url = postgres_server.url.rsplit("/", 1)[0] + f"/{name}"
    with open_place_writer(url) as writer:
        writer.insert(rows)
        writer.finish({})
    patch = pytest.MonkeyPatch()
    patch.setenv("LOOKUP_PLACES_STORE_URL", url)
    try:
        app = create_app(built)  # the places service reads the store's URL here
    finally:
        patch.undo()
    try:
        with serve_in_thread(app, timeout_s=60) as api:
            yield api
    finally:
        with psycopg.connect(postgres_server.url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(scope="module")
def sqlite_api(built: Path) -> Iterator[str]:
    from lookup.server import create_app

    with serve_in_thread(create_app(built), timeout_s=60) as api:
        yield api


def _within(rows: list[tuple[Any, ...]], lat: float, lng: float, radius: float) -> int:
    """Places within ``radius`` metres: haversine over every row, written out here."""
    from lookup.geo.places import COLUMNS

    la, ln = COLUMNS.index("lat"), COLUMNS.index("lng")
    p2 = np.radians(np.array([r[la] for r in rows]))
    dl = np.radians(np.array([r[ln] for r in rows]) - lng)
    p1 = math.radians(lat)
    a = np.sin((p2 - p1) / 2) ** 2 + math.cos(p1) * np.cos(p2) * np.sin(dl / 2) ** 2
    d = 2 * 6_371_000.0 * np.arcsin(np.sqrt(np.minimum(a, 1.0)))
    return int((d <= radius).sum())


def _compare(at: AppTest) -> Any:
    for toggle in at.toggle:
        if toggle.key == "places.compare":
            toggle.set_value(True).run()
    assert not at.exception
    tables = [d.value for d in at.dataframe if "Same results as brute force" in d.value.columns]
    assert len(tables) == 1
    return tables[0]


def _radius_used(at: AppTest) -> float:
    value = next(m.value for m in at.metric if m.label == "Radius used")
    number, unit = value.replace(",", "").split()
    return float(number) * (1000.0 if unit == "km" else 1.0)


def test_postgis_is_the_fourth_planner_and_agrees_with_brute_force(
    pg_api: str, rows: list[tuple[Any, ...]], visit: Callable[[str, str], AppTest]
) -> None:
    at = visit(PLACES, pg_api)
    table = _compare(at)
    assert list(table["Index"]) == ["Geohash", "Quadtree", "Brute force", "PostGIS"]
    assert list(table["Same results as brute force"]) == ["yes"] * 4
    truth = _within(rows, *SEED_POINT, _radius_used(at))
    assert set(table["Results"]) == {truth}
    postgis = table[table["Index"] == "PostGIS"].iloc[0]
    assert postgis["Cells read"] == "GiST index"
    assert truth <= postgis["Candidates read"] < len(rows)  # the GiST index, not every row
    captions = " ".join(c.value for c in at.caption)
    assert "All four return the same" in captions


def test_a_sqlite_server_leaves_postgis_out_and_says_why(
    sqlite_api: str, visit: Callable[[str, str], AppTest]
) -> None:
    at = visit(PLACES, sqlite_api)
    table = _compare(at)
    assert list(table["Index"]) == ["Geohash", "Quadtree", "Brute force"]
    captions = " ".join(c.value for c in at.caption)
    assert "PostGIS is not compared here" in captions and "POSTGIS_UNAVAILABLE" in captions
    assert "All three return the same" in captions
