"""``lookup up --backend postgres`` shares the data directory's places and current typeahead
snapshots through the fleet's database (lookup/fleetdata.py), once.

Oracles: the places read back from PostgreSQL are the SQLite data set's rows; a server with
no snapshot on disk answers what the data directory's snapshots answer.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from lookup.fleet import ServingFleet
from lookup.fleetdata import share_places, share_snapshots
from lookup.geo.places import open_place_store, row_dict
from lookup.typeahead.pipeline import snapshot_root
from lookup.typeahead.serving import SuggestService
from lookup.typeahead.snapshot import open_snapshot_store
from tests.geo.conftest import write_places_db
from tests.geo.test_places_postgres import SEED


def _rows(url: str) -> list[dict[str, object]]:
    store = open_place_store(url)
    try:
        return sorted((row_dict(r) for r in store.snapshot()[1]), key=lambda r: str(r["id"]))
    finally:
        store.close()


def test_places_are_copied_once_and_a_database_with_places_keeps_them(
    postgres_db: str, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    assert "no data set" in share_places(postgres_db, data, say=lambda _m: None)
    write_places_db(data, SEED)
    assert share_places(postgres_db, data, say=lambda _m: None).startswith("places: 3 places")
    want = _rows(f"sqlite:///{data / 'places' / 'places.sqlite'}")
    assert _rows(postgres_db) == want
    store = open_place_store(postgres_db)
    try:  # the fleet's own writes live in the database: a second start keeps them
        store.add({"name": "Added", "lat": 1.0, "lng": 2.0, "category": "cafe"})
    finally:
        store.close()
    assert "already" in share_places(postgres_db, data, say=lambda _m: None)
    assert len(_rows(postgres_db)) == len(SEED) + 1


def test_current_snapshots_are_published_and_served_with_no_copy_on_disk(
    data_dir: Path, postgres_db: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    oracle = SuggestService.from_data_dir(data_dir)
    markets = oracle.store.names()
    lines = share_snapshots(postgres_db, data_dir)
    assert sorted(lines) == sorted(
        f"typeahead {m}: snapshot {oracle.store.current(m)} published to the store" for m in markets
    )
    assert all("serves" in line for line in share_snapshots(postgres_db, data_dir))
    monkeypatch.setenv("LOOKUP_TYPEAHEAD_SNAPSHOT_STORE", postgres_db)
    monkeypatch.setenv("LOOKUP_TYPEAHEAD_SNAPSHOT_CACHE", str(tmp_path / "cache"))
    shutil.rmtree(snapshot_root(data_dir))
    served = SuggestService.from_data_dir(data_dir)
    try:
        assert open_snapshot_store(postgres_db).names() == markets
        for q, market in [("ip", "en-IN"), ("", "en-IN"), ("क्", "hi-IN")]:
            got, want = served.lookup(q, market).body(), oracle.lookup(q, market).body()
            assert got["suggestions"] == want["suggestions"], (q, market)
    finally:
        served.close()
        oracle.close()


def test_a_postgres_fleet_points_places_and_snapshots_at_its_database(tmp_path: Path) -> None:
    url = "postgresql://postgres@127.0.0.1:5999/postgres"
    env = ServingFleet(tmp_path, ("postgres",), urls={"store_url": url}).environment()
    assert env["LOOKUP_PLACES_STORE_URL"] == url
    assert env["LOOKUP_TYPEAHEAD_SNAPSHOT_STORE"] == url
    env = ServingFleet(tmp_path, ("redis",)).environment()
    assert "LOOKUP_PLACES_STORE_URL" not in env and "LOOKUP_TYPEAHEAD_SNAPSHOT_STORE" not in env
