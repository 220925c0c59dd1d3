"""Copy a built places data set (its SQLite file) into the places database a URL names.

``lookup places load`` and a fleet's start (:mod:`lookup.fleetdata`) use it, so a fleet's
API processes can load their index from PostgreSQL instead of sharing a data directory.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from lookup.geo.places import open_place_store, open_place_writer, row_dict
from lookup.kit.engines.storeurl import sqlite_url

#: Place rows copied per ``insert`` call of a load.
LOAD_BATCH = 20_000


def copy_data_set(url: str, source: Path, say: Callable[[str], None] = lambda _m: None) -> int:
    """Copy every place row and the data set's facts from the SQLite file ``source`` into
    the empty places database at ``url`` in one load; returns the number of places.

    ``ValueError`` when the target already holds places (a second load would clash on
    ``num``); :class:`~lookup.errors.Unavailable` when its server does not answer.
    """
    store = open_place_store(sqlite_url(source))
    try:
        _, rows = store.snapshot()
        meta = store.meta()
    finally:
        store.close()
    top = max((int(row_dict(r)["num"]) for r in rows), default=-1) + 1
    facts = {k: v for k, v in meta.items() if k not in ("complete", "schema_version")}
    facts["next_num"] = str(max(int(meta.get("next_num") or 0), top))
    facts["loaded_from"] = str(source)
    with open_place_writer(url) as db:
        for start in range(0, len(rows), LOAD_BATCH):
            db.insert(rows[start : start + LOAD_BATCH])
            say(f"{min(start + LOAD_BATCH, len(rows)):,} of {len(rows):,} places")
        db.finish(facts)
    return len(rows)
