"""The places store is a seam package (``lookup.geo.places``): its old module,
``lookup.geo.store``, still gives the very same objects for one release, and the package
``lookup.geo`` exports the port's names from their new home."""

from __future__ import annotations

import importlib

import lookup.geo
from tests.aliases import check_alias

OLD_TO_NEW = {
    "lookup.geo.places": (
        "COLUMNS", "EDITABLE", "SCHEMA_VERSION", "Change", "PlaceError", "PlaceStore",
        "open_place_store", "row_dict",
    ),
    "lookup.geo.places.sqlite": (
        "SCHEMA", "PlaceDatabaseWriter", "SqlitePlaceStore", "check_database", "connect",
        "create_schema", "damage_of", "is_complete",
    ),
}  # fmt: skip


def test_the_old_store_module_gives_the_new_objects() -> None:
    check_alias("lookup.geo.store", OLD_TO_NEW)


def test_the_geo_package_exports_the_ports_names() -> None:
    places = importlib.import_module("lookup.geo.places")
    sqlite = importlib.import_module("lookup.geo.places.sqlite")
    for name in ("Change", "PlaceError", "PlaceStore", "open_place_store"):
        assert getattr(lookup.geo, name) is getattr(places, name)
    assert lookup.geo.SqlitePlaceStore is sqlite.SqlitePlaceStore


def test_the_review_store_keeps_its_old_name() -> None:
    from lookup.geo.reviewstore import SqliteReviews, SqlReviews

    assert SqliteReviews is SqlReviews
