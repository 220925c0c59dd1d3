"""Which database serves places, in the health report (``systems.places.backend``): the
data set's SQLite file, or PostgreSQL + PostGIS by address — never a user or password —
in every state the report can be in (built, not built, server down).
"""

from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from lookup.datasets.places import db_path
from lookup.geo.places import open_place_writer
from lookup.geo.service import PlacesService, store_backend
from lookup.kit.engines.ports import free_port
from lookup.kit.engines.storeurl import sqlite_url
from tests.geo.test_places_postgres import SEED

POSTGIS = "PostgreSQL + PostGIS"


def test_the_embedded_store_is_named_as_the_sqlite_file(tmp_path: Path) -> None:
    service = PlacesService(tmp_path)
    try:
        report = service.status()
        assert report["status"] == "NOT_BUILT"
        assert report["backend"] == {
            "engine": "sqlite",
            "name": "SQLite file",
            "where": str(db_path(tmp_path)),
        }
    finally:
        service.close()


def test_a_sqlite_url_names_its_file(tmp_path: Path) -> None:
    file = tmp_path / "elsewhere" / "places.sqlite"
    backend = store_backend(sqlite_url(file), db_path(tmp_path))
    assert backend == {"engine": "sqlite", "name": "SQLite file", "where": str(file)}


def test_a_postgresql_store_that_is_down_is_named_without_its_password(tmp_path: Path) -> None:
    url = f"postgresql://places:s3cretpw@127.0.0.1:{free_port()}/fleet"
    service = PlacesService(tmp_path, store_url=url)
    try:
        report = service.status()
        assert report["status"] == "UNAVAILABLE"
        where = report["backend"]["where"]
        assert report["backend"]["name"] == POSTGIS and report["backend"]["engine"] == "postgresql"
        assert where.endswith(f"127.0.0.1:{url.rsplit(':', 1)[1]}") and "s3cret" not in where
        assert "places@" not in where  # the user is left out too
    finally:
        service.close()


def test_a_built_postgresql_store_is_named_in_the_ok_report(
    postgres_db: str, tmp_path: Path
) -> None:
    with open_place_writer(postgres_db) as db:
        db.insert_dicts(SEED)
        db.finish({"next_num": str(len(SEED))})
    service = PlacesService(tmp_path, store_url=postgres_db)
    try:
        report = service.status()
        assert (report["status"], report["store"]) == ("ok", "postgresql")
        assert report["backend"]["name"] == POSTGIS
        assert report["backend"]["where"] == postgres_db.replace("postgres@", "")
    finally:
        service.close()


@given(
    user=st.text("abcdefgh", min_size=1, max_size=8),
    password=st.text("QXZJKW", min_size=4, max_size=12),
    port=st.integers(1024, 65535),
)
def test_no_password_reaches_the_report(user: str, password: str, port: int) -> None:
    url = f"postgresql://{user}:{password}@127.0.0.1:{port}/places"
    backend = store_backend(url, Path("unused.sqlite"))
    assert password not in backend["where"] and backend["where"].startswith("postgresql://")
