"""Old import path of the places store, kept for one release.

The places database is now a seam package, :mod:`lookup.geo.places`: the port (the
:class:`~lookup.geo.places.PlaceStore` protocol, its records and
:func:`~lookup.geo.places.open_place_store`) in its ``__init__``, the embedded SQLite
backend in :mod:`lookup.geo.places.sqlite` and the PostgreSQL one in
:mod:`lookup.geo.places.postgres`. This module gives the very same objects.
"""

from __future__ import annotations

from lookup.geo.places import (
    COLUMNS,
    EDITABLE,
    SCHEMA_VERSION,
    Change,
    PlaceError,
    PlaceStore,
    open_place_store,
    row_dict,
)
from lookup.geo.places.sqlite import (
    SCHEMA,
    PlaceDatabaseWriter,
    SqlitePlaceStore,
    check_database,
    connect,
    create_schema,
    damage_of,
    is_complete,
)

__all__ = [
    "COLUMNS",
    "EDITABLE",
    "SCHEMA",
    "SCHEMA_VERSION",
    "Change",
    "PlaceDatabaseWriter",
    "PlaceError",
    "PlaceStore",
    "SqlitePlaceStore",
    "check_database",
    "connect",
    "create_schema",
    "damage_of",
    "is_complete",
    "open_place_store",
    "row_dict",
]
