"""The places store on PostgreSQL + PostGIS: what the shared contract does not say.

- ``geog`` is the point (lng, lat) after every kind of write (add, move, bulk load), and
  the GiST index ``places_geog_gist`` is there;
- a place write and its ``changes`` row are one transaction: a write that fails after the
  row was written leaves neither;
- two processes adding places at once never take one number, and no review is lost;
- the same random writes on PostgreSQL and on SQLite (the oracle: the embedded store)
  leave the same rows and the same change stream (a hypothesis property);
- ``lookup places load`` copies a built data set in, once: a second load is refused.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from lookup.cli import main as lookup_main
from lookup.geo import geohash
from lookup.geo.places import PlaceError, PlaceStore, open_place_store, open_place_writer
from lookup.geo.places.postgres import PostgresPlaceStore
from lookup.kit.engines.storeurl import sqlite_url
from tests.geo.conftest import write_places_db

ROOT = Path(__file__).resolve().parents[2]


def _row(i: int, lat: float, lng: float) -> dict[str, Any]:
    return {
        "id": f"biz:{i:07d}", "num": i, "name": f"Cafe {i}", "lat": lat, "lng": lng,
        "category": "cafe", "kind": "business", "geohash": geohash.encode(lat, lng),
        "country": "IN", "timezone": "Asia/Kolkata", "population": None, "tags": "[]",
        "hours": None, "price": 2, "review_count": 0, "review_stars": 0, "generated": 1,
        "near_city": None, "updated_at": 0.0,
    }  # fmt: skip


SEED = [_row(0, 12.93, 77.62), _row(1, -89.5, 179.99), _row(2, 0.0, -180.0)]


def _load(url: str, rows: list[dict[str, Any]] = SEED) -> None:
    with open_place_writer(url) as db:
        db.insert_dicts(rows)
        db.finish({"next_num": str(len(rows))})


@pytest.fixture
def pg(postgres_db: str) -> Iterator[PostgresPlaceStore]:
    _load(postgres_db)
    store = open_place_store(postgres_db, clock=lambda: 1000.0)
    assert isinstance(store, PostgresPlaceStore)
    try:
        yield store
    finally:
        store.close()


def _points(url: str) -> dict[str, tuple[float, float, float, float]]:
    """id → (lat, lng, latitude of geog, longitude of geog), read by PostGIS."""
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT id, lat, lng, ST_Y(geog::geometry), ST_X(geog::geometry) FROM places"
        ).fetchall()
    return {r[0]: (r[1], r[2], r[3], r[4]) for r in rows}


def test_geog_is_the_point_after_every_write_and_is_gist_indexed(pg: PostgresPlaceStore) -> None:
    added = pg.add({"name": "Saffron", "lat": 48.85, "lng": 2.35, "category": "restaurant"})
    pg.move("biz:0000000", -33.86, 151.2)
    pg.edit("biz:0000001", {"name": "Pole Cafe"})  # no move: the point stays
    points = _points(pg.url)
    assert set(points) == {"biz:0000000", "biz:0000001", "biz:0000002", added["id"]}
    for lat, lng, glat, glng in points.values():
        assert (glat, glng) == pytest.approx((lat, lng), abs=1e-12)
    assert points["biz:0000000"][:2] == (-33.86, 151.2)
    with psycopg.connect(pg.url) as conn:
        (definition,) = conn.execute(
            "SELECT indexdef FROM pg_indexes WHERE indexname = 'places_geog_gist'"
        ).fetchone() or ("",)
        kind = conn.execute(
            "SELECT format_type(atttypid, atttypmod) FROM pg_attribute "
            "WHERE attrelid = 'places'::regclass AND attname = 'geog'"
        ).fetchone()
    assert "USING gist (geog)" in definition
    assert kind is not None and kind[0] == "geography(Point,4326)"


def test_a_write_that_fails_after_its_row_leaves_neither_row_nor_change(
    pg: PostgresPlaceStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*_args: Any) -> None:
        raise RuntimeError("the change could not be written")

    monkeypatch.setattr(pg, "_append", broken)
    with pytest.raises(RuntimeError):
        pg.add({"name": "Ghost", "lat": 1.0, "lng": 1.0, "category": "cafe"})
    with pytest.raises(RuntimeError):
        pg.move("biz:0000000", 1.0, 1.0)
    monkeypatch.undo()
    assert pg.count() == 3 and pg.last_seq() == 0
    assert pg.get("biz:0000000") == {**_row(0, 12.93, 77.62)}
    assert pg.add({"name": "Real", "lat": 1.0, "lng": 1.0, "category": "cafe"})["num"] == 3


WRITER = r"""
import json, sys, time
from pathlib import Path
from lookup.geo.places import PlaceError, open_place_store

url, go, n, name = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
store = open_place_store(url)
store.count()  # connected before the start
print("ready", flush=True)
while not go.exists():
    time.sleep(0.001)
ids, errors = [], []
for i in range(n):
    try:
        ids.append(store.add({"name": f"{name} {i}", "lat": 12.9, "lng": 77.6,
                              "category": "cafe"})["id"])
        store.add_review("biz:0000000", 5)
    except PlaceError as exc:
        errors.append(f"{exc.code} {exc.message}")
store.close()
print(json.dumps({"ids": ids, "errors": errors}), flush=True)
"""


def test_two_processes_adding_at_once_never_collide(pg: PostgresPlaceStore, tmp_path: Path) -> None:
    go, n = tmp_path / "go", 15
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, pg.url, str(go), str(n), name],
            stdout=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        )  # fmt: skip
        for name in ("A", "B")
    ]
    for proc in procs:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    go.touch()
    results = []
    for proc in procs:
        out, _ = proc.communicate(timeout=120)
        assert proc.returncode == 0
        results.append(json.loads(out.strip().splitlines()[-1]))
    assert [r["errors"] for r in results] == [[], []]
    ids = [i for r in results for i in r["ids"]]
    rows = [pg.get(i) for i in ids]
    nums = sorted(int(r["num"]) for r in rows if r is not None)
    assert nums == list(range(3, 3 + 2 * n))  # dense, none taken twice
    zero = pg.get("biz:0000000")
    assert zero is not None and (zero["review_count"], zero["review_stars"]) == (2 * n, 10 * n)
    changes = pg.changes_since(0)
    assert len(changes) == 4 * n
    assert [c.seq for c in changes] == sorted({c.seq for c in changes})
    # replaying the stream in order gives the table (commit order = sequence order)
    state: dict[str, Any] = {}
    for change in changes:
        state[change.place_id] = change.after
    assert all(pg.get(pid) == row for pid, row in state.items())


OPS = st.lists(
    st.one_of(
        st.tuples(
            st.just("add"),
            st.floats(-90, 90, allow_nan=False),
            st.floats(-180, 180, allow_nan=False),
        ),
        st.tuples(
            st.just("move"),
            st.integers(0, 5),
            st.floats(-90, 90, allow_nan=False),
            st.floats(-180, 180, allow_nan=False),
        ),
        st.tuples(st.just("review"), st.integers(0, 5), st.integers(0, 6)),
        st.tuples(
            st.just("user_review"), st.integers(0, 5), st.sampled_from("uv"), st.integers(1, 5)
        ),
        st.tuples(st.just("delete"), st.integers(0, 5)),
    ),
    max_size=8,
)


def _apply(store: PlaceStore, op: tuple[Any, ...]) -> str:
    """Run one write; what it answered (the row, or the error code)."""
    from lookup.geo.reviews import ReviewPolicy

    ids = sorted(r["id"] for r in store.iter_rows())
    try:
        if op[0] == "add":
            return json.dumps(store.add({"name": "N", "lat": op[1], "lng": op[2], "category": "c"}))
        pid = ids[op[1] % len(ids)] if ids else "biz:none"
        if op[0] == "move":
            return json.dumps(store.move(pid, op[2], op[3]))
        if op[0] == "review":
            return json.dumps(store.add_review(pid, op[2]))
        if op[0] == "user_review":
            return json.dumps(store.put_review(pid, op[2], op[3], "ok", ReviewPolicy()))
        return json.dumps(store.delete(pid))
    except PlaceError as exc:
        return exc.code


@settings(
    max_examples=10,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(ops=OPS)
@example(ops=[("move", 0, 0.0, -0.0), ("review", 0, 3)])  # found: SQLite drops the sign of 0
def test_random_writes_leave_what_sqlite_leaves(
    postgres_db: str, ops: list[tuple[Any, ...]]
) -> None:
    with psycopg.connect(postgres_db, autocommit=True) as conn:
        made = conn.execute("SELECT to_regclass('places') IS NOT NULL").fetchone()
        if made and made[0]:  # a fresh start for each example, the schema kept
            conn.execute(
                "TRUNCATE places, places_meta, place_changes, reviews, review_users, review_totals "
                "RESTART IDENTITY"
            )
    _load(postgres_db)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "places.sqlite"
        _load(sqlite_url(path))
        stores = [open_place_store(postgres_db, clock=lambda: 7.0),
                  open_place_store(sqlite_url(path), clock=lambda: 7.0)]  # fmt: skip
        try:
            answers = [[_apply(s, op) for op in ops] for s in stores]
            assert answers[0] == answers[1]
            pg_rows, lite_rows = (list(s.iter_rows()) for s in stores)
            assert pg_rows == lite_rows
            streams = [[(c.place_id, c.op, c.before, c.after) for c in s.changes_since(0)]
                       for s in stores]  # fmt: skip
            assert streams[0] == streams[1]
        finally:
            for s in stores:
                s.close()


def test_lookup_places_load_copies_a_data_set_once(
    postgres_db: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = write_places_db(tmp_path / "data", SEED)
    assert lookup_main(["places", "load", "--store", postgres_db, "--data-dir", str(data)]) == 0
    store = open_place_store(postgres_db)
    try:
        assert store.loaded() and store.count() == 3
        assert store.meta()["next_num"] == "3"
        assert [r["id"] for r in store.iter_rows()] == [r["id"] for r in SEED]
    finally:
        store.close()
    assert lookup_main(["places", "load", "--store", postgres_db, "--data-dir", str(data)]) == 1
    assert "holds 3 places already" in capsys.readouterr().err
    empty = tmp_path / "empty"
    assert lookup_main(["places", "load", "--store", postgres_db, "--data-dir", str(empty)]) == 1


def test_a_worker_whose_database_is_down_reports_it_and_loads_once_it_answers(
    postgres_db: str, tmp_path: Path
) -> None:
    from lookup.geo.service import PlacesService
    from lookup.kit.engines.ports import free_port

    down = PlacesService(
        tmp_path / "a", store_url=f"postgresql://postgres@127.0.0.1:{free_port()}/x"
    )
    try:
        down.start(interval=3600)  # the server is not there: logged, not raised
        assert down.status()["status"] == "UNAVAILABLE"
    finally:
        down.close()
    empty = PlacesService(tmp_path / "b", store_url=postgres_db)
    try:
        assert empty.status()["status"] == "NOT_BUILT"  # tables made, no data set loaded
        _load(postgres_db)
        assert empty.sync() == 0 and empty.index is not None  # the tailer loads it
        status = empty.status()
        assert (status["status"], status["places"], status["store"]) == ("ok", 3, "postgresql")
    finally:
        empty.close()


def test_the_store_url_setting_takes_postgresql_or_sqlite_only() -> None:
    from lookup import settings

    env = {"LOOKUP_PLACES_STORE_URL": "postgresql://u@h:5432/db"}
    assert settings.get("places_store_url", env) == "postgresql://u@h:5432/db"
    assert settings.get("places_store_url", {}) == ""
    with pytest.raises(ValueError):
        settings.get("places_store_url", {"LOOKUP_PLACES_STORE_URL": "redis://h/0"})
