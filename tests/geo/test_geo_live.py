"""The write path: the places store, its change stream, live index updates and rebuilds."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from lookup.datasets import places as places_dataset
from lookup.geo import geohash as gh
from lookup.geo.search import Filters
from lookup.geo.service import PlacesService
from lookup.geo.store import PlaceError, PlaceStore, SqlitePlaceStore, row_dict
from tests.geo.conftest import NOW, Oracle, write_places_db

HOURS = {"mon": ["09:00-17:00"], "sat": ["10:00-14:00"]}


@pytest.fixture
def data_dir(built_rows: list[dict[str, Any]], tmp_path: Path) -> Path:
    """A private places database: the built businesses and every 8th city and airport."""
    rows = [r for r in built_rows if r["kind"] == "business" or r["num"] % 8 == 0]
    return write_places_db(tmp_path / "data", rows)


@pytest.fixture
def service(data_dir: Path) -> PlacesService:
    svc = PlacesService(data_dir, cache_ttl=0.0)
    assert svc.ready()
    yield svc
    svc.close()


def _oracle(store: PlaceStore) -> Oracle:
    _, rows = store.snapshot()
    return Oracle(row_dict(r) for r in rows)


def _check_against_oracle(
    service: PlacesService,
    points: list[tuple[float, float]],
    radii: tuple[float, ...] = (300.0, 3000.0, 20_000.0),
) -> int:
    assert service.store is not None
    oracle = _oracle(service.store)
    checked = 0
    for planner in ("geohash", "quadtree"):
        search = service.searcher(planner)
        for lat, lng in points:
            for r in radii:
                m, *_ = search.matches(lat, lng, r, Filters(), NOW)
                assert set(m.cols.num.tolist()) == oracle.within(lat, lng, r), (planner, lat, lng)
                checked += len(m)
    return checked


# ------------------------------------------------------------------ the store


def test_store_writes_append_to_the_change_stream(data_dir: Path) -> None:
    store = SqlitePlaceStore(places_dataset.db_path(data_dir), clock=lambda: 1000.0)
    start = store.last_seq()
    added = store.add(
        {
            "name": "Dosa Point",
            "lat": 12.93,
            "lng": 77.62,
            "category": "restaurant",
            "tags": ["dosa", "Idli"],
            "hours": HOURS,
            "price": 2,
            "timezone": "Asia/Kolkata",
        }
    )
    assert added["geohash"].startswith("tdr1") and added["kind"] == "business"
    assert json.loads(added["tags"]) == ["dosa", "idli"]
    moved = store.move(added["id"], 12.95, 77.65)
    assert moved["geohash"] == gh.encode(12.95, 77.65)
    reviewed = store.add_review(added["id"], 4)
    assert (reviewed["review_count"], reviewed["review_stars"]) == (1, 4)
    store.delete(added["id"])
    changes = store.changes_since(start)
    assert [c.op for c in changes] == ["upsert", "upsert", "upsert", "delete"]
    assert [c.seq for c in changes] == sorted(c.seq for c in changes)
    assert changes[0].before is None and changes[-1].after is None
    assert changes[1].before["lat"] == 12.93 and changes[1].after["lat"] == 12.95
    assert store.get(added["id"]) is None
    # a place number is never handed out twice, even after the newest place is deleted
    again = store.add({"name": "Next", "lat": 1.0, "lng": 1.0, "category": "cafe"})
    assert again["num"] > added["num"]
    store.close()


@pytest.mark.parametrize(
    "fields, code",
    [
        ({"name": "x", "lat": 91, "lng": 0, "category": "cafe"}, "INVALID_PARAMETER"),
        ({"name": "x", "lat": 1, "lng": float("nan"), "category": "cafe"}, "INVALID_PARAMETER"),
        ({"name": "", "lat": 1, "lng": 1, "category": "cafe"}, "INVALID_PARAMETER"),
        ({"name": "x", "lat": 1, "lng": 1}, "INVALID_PARAMETER"),
        ({"name": "x", "lat": 1, "lng": 1, "category": "cafe", "price": 7}, "INVALID_PARAMETER"),
        (
            {"name": "x", "lat": 1, "lng": 1, "category": "cafe", "hours": {"mon": ["9-5"]}},
            "INVALID_PARAMETER",
        ),
        (
            {"name": "x", "lat": 1, "lng": 1, "category": "cafe", "timezone": "Mars/Base"},
            "INVALID_PARAMETER",
        ),
        (
            {
                "name": "x",
                "lat": 1,
                "lng": 1,
                "category": "cafe",
                "review_count": 2,
                "review_stars": 11,
            },
            "INVALID_PARAMETER",
        ),
        ({"name": "x", "lat": 1, "lng": 1, "category": "cafe", "num": 5}, "INVALID_PARAMETER"),
    ],
)
def test_store_rejects_bad_fields(data_dir: Path, fields: dict[str, Any], code: str) -> None:
    store = SqlitePlaceStore(places_dataset.db_path(data_dir))
    before = store.last_seq()
    with pytest.raises(PlaceError) as err:
        store.add(fields)
    assert err.value.code == code
    assert store.last_seq() == before  # nothing written, nothing streamed
    with pytest.raises(PlaceError) as missing:
        store.edit("biz:nope", {"name": "y"})
    assert missing.value.code == "NOT_FOUND"
    store.close()


# ---------------------------------------------------------- live index updates


def test_live_updates_match_the_database(service: PlacesService) -> None:
    store = service.store
    assert store is not None
    rng = np.random.default_rng(21)
    ids = [r["id"] for r in store.iter_rows() if r["kind"] == "business"][:400]
    touched: list[tuple[float, float]] = []
    for step in range(120):
        op = rng.choice(["add", "edit", "move", "delete", "review"])
        lat = float(np.clip(12.97 + rng.normal(0, 0.05), -90, 90))
        lng = float(77.59 + rng.normal(0, 0.05))
        if op == "add" or not ids:
            row = store.add(
                {
                    "name": f"New {step}",
                    "lat": lat,
                    "lng": lng,
                    "category": str(rng.choice(["restaurant", "cafe", "pharmacy"])),
                    "tags": ["biryani"] if step % 2 else [],
                    "hours": HOURS,
                    "timezone": "Asia/Kolkata",
                    "price": int(rng.integers(1, 5)),
                }
            )
            ids.append(row["id"])
        else:
            pid = ids[int(rng.integers(0, len(ids)))]
            if op == "edit":
                store.edit(pid, {"name": f"Renamed {step}", "category": "cafe"})
            elif op == "move":
                old = store.get(pid)
                touched.append((old["lat"], old["lng"]))
                store.move(pid, lat, lng)
            elif op == "review":
                store.add_review(pid, int(rng.integers(1, 6)))
            else:
                old = store.delete(pid)
                ids.remove(pid)
                touched.append((old["lat"], old["lng"]))
        touched.append((lat, lng))
        if step % 17 == 0:
            service.sync()
    service.sync()
    index = service.index
    assert index is not None and index.seq == store.last_seq() and index.delta_size > 0
    assert len(index) == store.count()
    assert _check_against_oracle(service, touched[::4]) > 100
    # text follows edits too
    search = service.searcher()
    m, *_ = search.matches(12.97, 77.59, 20_000, Filters(q="Renamed"), NOW)
    oracle = _oracle(store)
    assert set(m.cols.num.tolist()) == oracle.within(12.97, 77.59, 20_000, q="Renamed")


def test_a_move_leaves_the_old_cell_and_enters_the_new(service: PlacesService) -> None:
    store, index = service.store, service.index
    assert store is not None and index is not None
    row = next(r for r in store.iter_rows() if r["kind"] == "business")
    old_cell = gh.encode(row["lat"], row["lng"], 6)
    new_lat, new_lng = -33.8688, 151.2093
    new_cell = gh.encode(new_lat, new_lng, 6)
    before = index.cell_counts([old_cell, new_cell])
    store.move(row["id"], new_lat, new_lng)
    assert service.sync() == 1
    assert index.cell_counts([old_cell, new_cell]) == [before[0] - 1, before[1] + 1]
    search = service.searcher()
    near_old = search.matches(row["lat"], row["lng"], 50, Filters(), NOW)[0]
    near_new = search.matches(new_lat, new_lng, 50, Filters(), NOW)[0]
    assert row["num"] not in near_old.cols.num.tolist()
    assert row["num"] in near_new.cols.num.tolist()


def test_replaying_changes_is_harmless(service: PlacesService) -> None:
    store, index = service.store, service.index
    assert store is not None and index is not None
    row = next(r for r in store.iter_rows() if r["kind"] == "business")
    start = store.last_seq()
    store.move(row["id"], 40.0, -74.0)
    store.edit(row["id"], {"name": "Twice Cafe"})
    added = store.add({"name": "Fresh", "lat": 40.001, "lng": -74.001, "category": "cafe"})
    store.delete(added["id"])
    changes = store.changes_since(start)
    assert service.sync() == 4
    state = (len(index), index.delta_size, index.seq, index.generation)
    found = service.searcher().matches(40.0, -74.0, 500, Filters(), NOW)[0].cols.num.tolist()
    for change in changes + changes[::-1]:  # again, and out of order
        assert index.apply(change) is False
    assert (len(index), index.delta_size, index.seq, index.generation) == state
    assert service.searcher().matches(40.0, -74.0, 500, Filters(), NOW)[0].cols.num.tolist() == (
        found
    )
    # and a fresh index that replays the same change twice ends in the same state
    fresh = PlacesService(service.data_dir, cache_ttl=0.0)
    fresh.store = SqlitePlaceStore(store.path)
    rebuilt = fresh._build(version=1)
    assert rebuilt.seq == store.last_seq()
    assert rebuilt.apply(changes[0]) is False
    fresh.close()


def test_rebuild_swaps_in_a_new_version_and_corrects_misses(service: PlacesService) -> None:
    store, index = service.store, service.index
    assert store is not None and index is not None
    row = next(r for r in store.iter_rows() if r["kind"] == "business")
    store.move(row["id"], 51.5074, -0.1278)
    # simulate a change the live path lost: skip it in the stream
    index.seq = store.last_seq()
    search = service.searcher()
    assert row["num"] not in search.matches(51.5074, -0.1278, 100, Filters(), NOW)[0].cols.num
    stats = service.rebuild()
    assert stats["indexVersion"] == index.version + 1 and stats["deltaPlaces"] == 0
    assert service.index is not index
    assert (
        row["num"] in service.searcher().matches(51.5074, -0.1278, 100, Filters(), NOW)[0].cols.num
    )
    assert _check_against_oracle(service, [(51.5074, -0.1278), (row["lat"], row["lng"])]) > 0


def test_readers_never_see_a_half_swapped_index(service: PlacesService) -> None:
    errors: list[BaseException] = []
    totals: set[int] = set()
    searches = [0]
    stop = threading.Event()

    def reader() -> None:
        # A reader that never pauses holds the GIL through the rebuild's whole snapshot
        # read: sqlite3 lets the GIL go around every row's step, and each time the rebuild
        # waits up to the 5 ms switch interval to get it back (the convoy effect), so one
        # rebuild took 4-10 minutes on a loaded machine. Readers here pause 2 ms between
        # searches, as requests arriving over a network do, and the index is swapped until
        # they have searched across the swaps.
        while not stop.wait(0.002):
            try:
                totals.add(
                    service.searcher().search(12.97, 77.59, 20_000, widen=False, now=NOW).total
                )
                searches[0] += 1
            except BaseException as exc:  # noqa: BLE001 - the test reports any failure
                errors.append(exc)
                return

    thread = threading.Thread(target=reader)
    thread.start()
    try:
        rebuilds = 0
        while rebuilds < 2 or (searches[0] < 50 and rebuilds < 50 and not errors):
            service.rebuild()  # swap until the readers have searched across the swaps
            rebuilds += 1
    finally:
        stop.set()
        thread.join(timeout=30)
    assert not errors
    assert searches[0] > 0
    assert len(totals) == 1  # same data, every version answers the same


def _wait_for(check: Any, seconds: float = 30.0) -> None:
    import time

    deadline = time.monotonic() + seconds
    while not check() and time.monotonic() < deadline:
        time.sleep(0.02)


def test_the_tailer_applies_outside_writes_in_the_background(service: PlacesService) -> None:
    from lookup.kit.service import LiveService

    assert isinstance(service, LiveService)
    writer = SqlitePlaceStore(service.path)  # another writer (e.g. a second process)
    added = writer.add({"name": "Tailed Cafe", "lat": 10.0, "lng": 10.0, "category": "cafe"})
    writer.close()
    service.start(interval=0.05)
    assert service.index is not None
    _wait_for(lambda: service.index.seq == service.store.last_seq())  # type: ignore[union-attr]
    found = service.searcher().matches(10.0, 10.0, 200, Filters(), NOW)[0].cols.num.tolist()
    assert added["num"] in found
    status = service.status()
    assert status["status"] == "ok"
    assert status["sync"]["running"] and status["sync"]["failures"] == 0
    service.close()
    service.close()  # twice is fine
    assert not service.status()["sync"]["running"]


def test_a_failing_poll_is_counted_not_swallowed(
    service: PlacesService, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def broken() -> int:
        raise OSError("disk went away")

    monkeypatch.setattr(service, "sync", broken)
    with caplog.at_level("ERROR", logger="lookup.geo"):
        service.start(interval=0.05)
        _wait_for(lambda: service.status()["sync"]["failures"] >= 2)
    status = service.status()["sync"]
    assert status["failures"] >= 2 and status["running"]  # the loop keeps going
    assert status["lastError"] == "OSError: disk went away"
    assert "places-sync" in caplog.text
