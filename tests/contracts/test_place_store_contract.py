"""The places-store contract, run against every implementation behind ``open_place_store``.

Reads (one place, count, profiles, snapshot), owner writes with their validation, and
the change stream the live index tails: every write appends exactly one change, in
order, carrying the rows before and after. The backends come from the seam's registry
(:data:`lookup.geo.places.BACKENDS`): a new backend registers its scheme there, says in
:data:`FRESH` how to get the URL of a fresh, empty database of it, and must pass unchanged.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from lookup.geo import geohash
from lookup.geo.places import (
    BACKENDS,
    COLUMNS,
    PlaceError,
    PlaceStore,
    backend,
    open_place_store,
    open_place_writer,
    row_dict,
)
from lookup.kit.storeurl import sqlite_url
from tests.contracts.seams import (
    Fresh,
    check_port_imports_no_backend,
    check_registered,
    fresh_url,
)


def _seed_rows() -> list[dict[str, Any]]:
    rows = []
    for i, (name, lat, lng, category) in enumerate(
        [
            ("Harbour Cafe", 12.93, 77.62, "cafe"),
            ("Grand Hotel", 12.94, 77.63, "hotel"),
            ("Lotus Kitchen", 48.85, 2.35, "restaurant"),
        ]
    ):
        rows.append(
            {
                "id": f"biz:{i:07d}", "num": i, "name": name, "lat": lat, "lng": lng,
                "category": category, "kind": "business", "geohash": geohash.encode(lat, lng),
                "country": "IN", "timezone": "Asia/Kolkata", "population": None,
                "tags": '["coffee"]', "hours": None, "price": 2, "review_count": 2,
                "review_stars": 9, "generated": 1, "near_city": None, "updated_at": 0.0,
            }
        )  # fmt: skip
    return rows


#: scheme -> how to get the URL of a fresh, empty database: a function of a temp dir, or
#: the name of the fixture that gives a new database on a real server.
FRESH: dict[str, Fresh] = {
    "sqlite": lambda tmp: sqlite_url(tmp / "places.sqlite"),
    "postgresql": "postgres_db",
}


def _seeded(url: str, clock: Callable[[], float]) -> PlaceStore:
    with open_place_writer(url) as db:
        db.insert_dicts(_seed_rows())
        db.finish({"next_num": "3"})
    return open_place_store(url, clock=clock)


@pytest.fixture(params=list(BACKENDS))
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[PlaceStore]:
    made = _seeded(fresh_url(request, tmp_path, FRESH), lambda: 1234.5)
    try:
        yield made
    finally:
        made.close()


def test_every_registered_backend_opens_a_place_store() -> None:
    check_registered(BACKENDS, backend)
    for scheme in BACKENDS:
        assert callable(getattr(backend(scheme), "open_writer", None)), scheme


def test_the_port_imports_no_backend() -> None:
    check_port_imports_no_backend("lookup.geo.places", ("psycopg", "sqlite3"))


NEW = {"name": "Saffron Bistro", "lat": 12.95, "lng": 77.64, "category": "Restaurant"}


def test_it_is_a_place_store(store: PlaceStore) -> None:
    assert isinstance(store, PlaceStore)


def test_reads(store: PlaceStore) -> None:
    assert store.count() == 3
    row = store.get("biz:0000001")
    assert row is not None and row["name"] == "Grand Hotel" and set(row) == set(COLUMNS)
    assert store.get("biz:nope") is None
    profiles = store.profiles([2, 0, 99], ("num", "name"))
    assert sorted((p["num"], p["name"]) for p in profiles) == [
        (0, "Harbour Cafe"),
        (2, "Lotus Kitchen"),
    ]
    with pytest.raises(ValueError):
        store.profiles([0], ("num", "password"))


def test_snapshot_is_every_row_by_num(store: PlaceStore) -> None:
    seq, rows = store.snapshot()
    assert seq == store.last_seq() == 0
    assert [row_dict(r)["num"] for r in rows] == [0, 1, 2]
    assert [r["id"] for r in store.iter_rows()] == ["biz:0000000", "biz:0000001", "biz:0000002"]


def test_add_stores_a_business_and_appends_one_change(store: PlaceStore) -> None:
    row = store.add(dict(NEW))
    assert row["num"] == 3 and row["id"] == "biz:u3" and row["kind"] == "business"
    assert row["category"] == "restaurant" and row["updated_at"] == 1234.5
    assert row["geohash"] == geohash.encode(12.95, 77.64)
    assert store.get("biz:u3") == row and store.count() == 4
    (change,) = store.changes_since(0)
    assert change.op == "upsert" and change.place_id == "biz:u3"
    assert change.before is None and change.after == row and change.at == 1234.5
    assert store.last_seq() == change.seq
    with pytest.raises(PlaceError) as taken:
        store.add(dict(NEW), place_id="biz:u3")
    assert taken.value.code == "ALREADY_EXISTS"


def test_numbers_are_never_reused(store: PlaceStore) -> None:
    first = store.add(dict(NEW))
    store.delete(first["id"])
    assert store.add(dict(NEW))["num"] == first["num"] + 1


def test_edit_move_review_and_delete_each_append_a_change(store: PlaceStore) -> None:
    edited = store.edit("biz:0000000", {"name": "Harbour Roasters", "tags": ["Espresso"]})
    assert edited["name"] == "Harbour Roasters" and edited["tags"] == '["espresso"]'
    moved = store.move("biz:0000000", 13.0, 77.7)
    assert moved["geohash"] == geohash.encode(13.0, 77.7)
    reviewed = store.add_review("biz:0000000", 5)
    assert (reviewed["review_count"], reviewed["review_stars"]) == (3, 14)
    gone = store.delete("biz:0000000")
    assert gone["lat"] == 13.0 and store.get("biz:0000000") is None and store.count() == 2
    changes = store.changes_since(0)
    assert [c.op for c in changes] == ["upsert", "upsert", "upsert", "delete"]
    assert [c.seq for c in changes] == sorted(c.seq for c in changes)
    assert changes[1].before == edited and changes[1].after == moved
    assert changes[-1].before == gone and changes[-1].after is None
    assert store.changes_since(changes[1].seq, limit=1) == [changes[2]]
    seq, rows = store.snapshot()
    assert seq == changes[-1].seq and len(rows) == 2


@pytest.mark.parametrize(
    "fields",
    [
        {"name": "x", "lat": 91, "lng": 0, "category": "cafe"},
        {"name": "", "lat": 0, "lng": 0, "category": "cafe"},
        {"name": "x", "lat": 0, "lng": 0},
        {"name": "x", "lat": 0, "lng": 0, "category": "cafe", "num": 7},
        {"name": "x", "lat": 0, "lng": 0, "category": "cafe", "price": 9},
        {"name": "x", "lat": 0, "lng": 0, "category": "cafe", "timezone": "Mars/Olympus"},
    ],
)
def test_bad_fields_are_refused_and_write_nothing(
    store: PlaceStore, fields: dict[str, Any]
) -> None:
    with pytest.raises(PlaceError) as info:
        store.add(fields)
    assert info.value.code == "INVALID_PARAMETER"
    assert store.count() == 3 and store.changes_since(0) == []


def test_unknown_places_are_not_found(store: PlaceStore) -> None:
    for write in (
        lambda: store.edit("biz:nope", {"name": "y"}),
        lambda: store.delete("biz:nope"),
        lambda: store.add_review("biz:nope", 4),
    ):
        with pytest.raises(PlaceError) as info:
            write()
        assert info.value.code == "NOT_FOUND"
    with pytest.raises(PlaceError):
        store.add_review("biz:0000000", 6)
    assert store.changes_since(0) == []


def test_the_factory_refuses_other_schemes(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="sqlite:///"):
        open_place_store("redis://127.0.0.1/0")
    with pytest.raises(FileNotFoundError):
        open_place_store(sqlite_url(tmp_path / "missing.sqlite"))


def test_rows_of_kinds_reads_only_those_kinds(store: PlaceStore) -> None:
    """What the name lookup reads: only the kinds asked for (businesses here), by num."""
    rows = store.rows_of_kinds(("business",), ("id", "name", "kind"))
    assert rows == [
        {"id": r["id"], "name": r["name"], "kind": "business"} for r in store.iter_rows()
    ]
    assert store.rows_of_kinds(("city", "airport"), ("id",)) == []
    with pytest.raises(ValueError):
        store.rows_of_kinds(("business",), ("id", "password"))
    with pytest.raises(ValueError):
        store.rows_of_kinds((), ("id",))
