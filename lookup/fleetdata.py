"""What a fleet on PostgreSQL shares that one server keeps in its data directory.

At ``lookup up --backend postgres`` the places data set and the typeahead's current
snapshots are copied once into the fleet's database, so every API process loads its
places index from the ``places`` table (and tails its changes) and serves the typeahead
snapshots from the shared version store: no API process needs the data directory's copy.
A database that already holds them is left as it is (the fleet's own writes live there).
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

from lookup.datasets.places import db_path
from lookup.geo.places import open_place_store
from lookup.geo.places.copy import copy_data_set
from lookup.geo.places.sqlite import check_database
from lookup.typeahead.pipeline import snapshot_root
from lookup.typeahead.snapshot import TrieSnapshotStore, open_snapshot_store

Say = Callable[[str], None]


def share_places(url: str, data_dir: Path, say: Say = print) -> str:
    """Copy the data directory's places into the database at ``url`` unless it holds a
    finished load already; returns a line saying which happened."""
    store = open_place_store(url)
    try:
        if store.loaded():
            return f"places: the database holds {store.count():,} places already"
    finally:
        store.close()
    source = db_path(data_dir)
    if not source.exists() or not check_database(source):
        return "places: no data set is built yet; the API answers 'not built' until one is loaded"
    count = copy_data_set(url, source, say)
    return f"places: {count:,} places copied into the database"


def share_snapshots(url: str, data_dir: Path) -> list[str]:
    """Publish each market's current snapshot from the data directory into the shared
    snapshot store at ``url``, for the markets that have none there; one line per market."""
    local = TrieSnapshotStore(snapshot_root(data_dir))
    shared = open_snapshot_store(url)
    lines = []
    try:
        for market in local.names():
            version = local.current(market)
            if version is None:
                continue
            if shared.current(market) is not None:
                lines.append(f"typeahead {market}: the store serves {shared.current(market)}")
                continue
            with tempfile.TemporaryDirectory() as tmp:
                copy = Path(tmp) / "snapshot.trie"  # publish takes its source away
                shutil.copyfile(local.path(market, version), copy)
                shared.publish(market, version, copy)
            lines.append(f"typeahead {market}: snapshot {version} published to the store")
    finally:
        close = getattr(shared, "close", None)
        if close is not None:
            close()
    return lines
