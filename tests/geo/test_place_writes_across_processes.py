"""Place writes from several processes on one places database (a fleet's API workers share
it, and so do a server and a command-line writer): no spurious 409, no lost update.

Each writer is a real process with its own connection, started together on a barrier file.
The old store read the next place number (and a review's totals) before its write
transaction began, so two processes could pick the same number — the second add was
refused as ``ALREADY_EXISTS`` (409) — or both add their review to the same old totals.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from lookup.geo import geohash
from lookup.geo.store import PlaceDatabaseWriter, SqlitePlaceStore

ROOT = Path(__file__).resolve().parents[2]

WRITER = r"""
import json, sys, time
from pathlib import Path
from lookup.geo.store import PlaceError, SqlitePlaceStore

db, go, n, name = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
store = SqlitePlaceStore(db)
print("ready", flush=True)
while not go.exists():
    time.sleep(0.001)
ids, errors = [], []
for i in range(n):
    try:
        row = store.add({"name": f"{name} {i}", "lat": 12.9 + i * 1e-4, "lng": 77.6,
                         "category": "cafe"})
        ids.append(row["id"])
    except PlaceError as exc:
        errors.append(f"add: {exc.code} {exc.message}")
    try:
        store.add_review("biz:0000000", 5)
    except PlaceError as exc:
        errors.append(f"review: {exc.code} {exc.message}")
store.close()
print(json.dumps({"ids": ids, "errors": errors}), flush=True)
"""


def _database(path: Path) -> None:
    with PlaceDatabaseWriter(path) as db:
        db.insert_dicts([{
            "id": "biz:0000000", "num": 0, "name": "Harbour Cafe", "lat": 12.93, "lng": 77.62,
            "category": "cafe", "kind": "business", "geohash": geohash.encode(12.93, 77.62),
            "timezone": "Asia/Kolkata", "tags": "[]", "review_count": 0, "review_stars": 0,
            "generated": 1, "updated_at": 0.0,
        }])  # fmt: skip
        db.finish({"next_num": "1"})


def test_two_processes_adding_places_at_once_never_collide(tmp_path: Path) -> None:
    path = tmp_path / "places.sqlite"
    _database(path)
    go = tmp_path / "go"
    n, writers = 40, 3
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(path), str(go), str(n), f"writer{w}"],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )  # fmt: skip
        for w in range(writers)
    ]
    try:
        for proc in procs:  # every writer has its connection open before any writes
            assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        go.touch()
        outs = [proc.communicate(timeout=120) for proc in procs]
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
    results = []
    for proc, (out, err) in zip(procs, outs, strict=True):
        assert proc.returncode == 0, err[-2000:]
        results.append(json.loads(out.strip().splitlines()[-1]))
    errors = [e for r in results for e in r["errors"]]
    assert errors == [], errors[:5]  # no spurious ALREADY_EXISTS (409), no "database is locked"
    ids = [i for r in results for i in r["ids"]]
    assert len(ids) == len(set(ids)) == n * writers

    store = SqlitePlaceStore(path)
    try:
        rows = list(store.iter_rows())
        assert len(rows) == 1 + n * writers
        assert len({r["num"] for r in rows}) == len(rows)  # every place its own number
        reviewed = store.get("biz:0000000")
        assert reviewed is not None
        assert reviewed["review_count"] == n * writers  # no review lost
        assert reviewed["review_stars"] == 5 * n * writers
        changes = store.changes_since(0, limit=100_000)
        assert len(changes) == 2 * n * writers  # one change per write, none lost
        counts = [c.after["review_count"] for c in changes if c.place_id == "biz:0000000"]
        assert counts == list(range(1, n * writers + 1))  # each review saw the one before
    finally:
        store.close()
