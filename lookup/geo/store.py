"""The places database: the source of truth, and the write path's change stream.

The index is a derived copy shaped for one question; this store is the business
database it is derived from. Owners' adds, edits, moves and deletes land here, and
each one appends a row to ``changes`` in the same transaction (a transactional
outbox). The live index tails that stream; the nightly-style rebuild reads the whole
table. Nothing here is on the read path of a search.

:class:`PlaceStore` is the interface the places service, its HTTP routes and the
change-stream tailer use; :class:`SqlitePlaceStore` is the embedded implementation and
:func:`open_place_store` picks one from a URL (``sqlite:///path``). The data set's
builder writes a new database through :class:`PlaceDatabaseWriter`, so every statement
that touches the places tables lives in this module.
"""

from __future__ import annotations

import json
import math
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from lookup.errors import Damaged
from lookup.geo import geohash
from lookup.geo.hours import canonical_json, parse_hours, zone
from lookup.geo.reviews import ReviewStore
from lookup.geo.reviewstore import SqliteReviews, create_review_schema
from lookup.geo.zones import UNSET_ZONES, zone_at
from lookup.kit.engines import sqlite as kit_sqlite
from lookup.kit.engines.storeurl import parse_store_url
from lookup.kit.integrity import is_not_writable, not_writable

#: Bumped when the table layout changes; stored in ``meta``.
SCHEMA_VERSION = "1"

SCHEMA = """
CREATE TABLE IF NOT EXISTS places (
    id           TEXT PRIMARY KEY,
    num          INTEGER NOT NULL UNIQUE,   -- dense integer key used by the index
    name         TEXT NOT NULL,
    lat          REAL NOT NULL,
    lng          REAL NOT NULL,
    category     TEXT NOT NULL,
    kind         TEXT NOT NULL,             -- city | airport | business
    geohash      TEXT NOT NULL,             -- precision 12, for rebuilds and debugging
    country      TEXT,
    timezone     TEXT,
    population   INTEGER,
    tags         TEXT NOT NULL DEFAULT '[]',  -- JSON array of keywords
    hours        TEXT,                        -- JSON weekly schedule (local time) or NULL
    price        INTEGER,                     -- 1..4 or NULL
    review_count INTEGER NOT NULL DEFAULT 0,
    review_stars INTEGER NOT NULL DEFAULT 0,  -- sum of the stars of all reviews
    generated    INTEGER NOT NULL DEFAULT 0,  -- 1 = a generated row, not real data
    near_city    TEXT,                        -- generated businesses: the city they surround
    updated_at   REAL NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS places_geohash ON places(geohash);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS changes (
    seq      INTEGER PRIMARY KEY AUTOINCREMENT,
    place_id TEXT NOT NULL,
    op       TEXT NOT NULL,      -- upsert | delete
    before   TEXT,               -- JSON row before the change (NULL for an add)
    after    TEXT,               -- JSON row after the change (NULL for a delete)
    at       REAL NOT NULL
);
"""

#: The columns of a place row, in table order.
COLUMNS = (
    "id",
    "num",
    "name",
    "lat",
    "lng",
    "category",
    "kind",
    "geohash",
    "country",
    "timezone",
    "population",
    "tags",
    "hours",
    "price",
    "review_count",
    "review_stars",
    "generated",
    "near_city",
    "updated_at",
)

#: What owners may set on add or edit (the rest is derived or owned by other services).
EDITABLE = (
    "name",
    "lat",
    "lng",
    "category",
    "timezone",
    "tags",
    "hours",
    "price",
    "review_count",
    "review_stars",
    "country",
)


def create_schema(conn: sqlite3.Connection) -> None:
    """Create the places tables if they do not exist."""
    conn.executescript(SCHEMA)
    create_review_schema(conn)  # the reviews tables: added to older databases on open
    conn.execute(
        "INSERT OR REPLACE INTO meta(key, value) VALUES ('schema_version', ?)", (SCHEMA_VERSION,)
    )


def connect(path: str | os.PathLike[str], *, readonly: bool = False) -> sqlite3.Connection:
    """Open the places database (WAL, so the index can read while owners write).

    Python's implicit transactions stay on: a write and its change row commit together
    (``with conn:``), and a snapshot opens its own ``BEGIN``.
    """
    conn = kit_sqlite.connect(path, readonly=readonly, busy_timeout_ms=5000, autocommit=False)
    if readonly:
        conn.execute("PRAGMA busy_timeout=5000")
    conn.row_factory = sqlite3.Row
    return conn


def is_complete(path: str | os.PathLike[str]) -> bool:
    """True when ``path`` is a places database whose builder finished (``meta.complete``)."""
    if not Path(path).exists():
        return False
    try:
        conn = kit_sqlite.connect(path, readonly=True)
        try:
            row = conn.execute("SELECT value FROM meta WHERE key = 'complete'").fetchone()
        finally:
            conn.close()
    except sqlite3.Error:
        return False
    return bool(row and row[0] == "1")


def check_database(path: str | os.PathLike[str]) -> bool:
    """Open the places database the way the store does and let SQLite check it
    (``PRAGMA quick_check``: every page and b-tree, not index-to-table agreement); True when
    its builder finished (``meta.complete``), False for an unfinished build.

    A damaged file raises :class:`~lookup.errors.Damaged`, and a directory the server cannot
    write (SQLite keeps ``-wal`` and ``-shm`` beside the file) raises it with the code
    ``NOT_WRITABLE`` (:func:`damage_of`).
    """
    try:
        conn = connect(path)
        try:
            found = [str(r[0]) for r in conn.execute("PRAGMA quick_check(5)")]
            if found != ["ok"]:
                lines = [x for r in found for x in r.splitlines() if not x.startswith("***")]
                raise sqlite3.DatabaseError("quick_check: " + "; ".join(lines[:3]))
            row = conn.execute("SELECT value FROM meta WHERE key = 'complete'").fetchone()
        finally:
            conn.close()
    except Exception as exc:
        damage = damage_of(path, exc)
        if damage is None:
            raise
        raise damage from None
    return bool(row and row[0] == "1")


def damage_of(path: str | os.PathLike[str], exc: BaseException) -> Damaged | None:
    """The :class:`~lookup.errors.Damaged` error an exception from the places database means
    (a damaged file, or a directory the server cannot write), or None for anything else (a
    lock held too long is not damage)."""
    if is_not_writable(exc):
        return not_writable(Path(path).parent, "places search")
    if not isinstance(exc, sqlite3.DatabaseError):
        return None
    text = str(exc)
    if isinstance(exc, sqlite3.OperationalError) and not any(
        w in text.lower() for w in ("malformed", "not a database", "disk i/o", "corrupt")
    ):
        return None
    return Damaged(
        f"the places database {path} is damaged ({text}); places search and place edits "
        "answer 503 until it is restored",
        file=str(path),
        remedy=f"restore {path} from a backup (the server checks it again as soon as the file "
        "changes). Rebuilding it with `lookup datasets build places` also works but discards "
        "every place added, edited or reviewed through the API",
    )


class PlaceDatabaseWriter:
    """Writes a new places database in bulk: the data set builder's one way in.

    No journal and no fsync while writing (the builder writes a temporary file and
    renames it into place only when :meth:`finish` has run); :meth:`finish` stores the
    build's ``meta``, marks the database complete and leaves it in WAL mode for the
    readers and writers that open it next.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._conn = kit_sqlite.connect(
            self.path,
            wal=False,
            synchronous="OFF",
            pragmas=("journal_mode = OFF",),
            autocommit=False,
        )
        create_schema(self._conn)
        marks = ", ".join("?" for _ in COLUMNS)
        self._insert = f"INSERT INTO places({', '.join(COLUMNS)}) VALUES ({marks})"

    def insert(self, rows: Iterable[Sequence[Any]]) -> None:
        """Add place rows, each a tuple in :data:`COLUMNS` order."""
        self._conn.executemany(self._insert, rows)

    def insert_dicts(self, rows: Iterable[Mapping[str, Any]]) -> None:
        """Add place rows given as dicts keyed by :data:`COLUMNS` (a missing key is NULL)."""
        self.insert(tuple(r.get(c) for c in COLUMNS) for r in rows)

    def finish(self, meta: Mapping[str, str]) -> None:
        """Store ``meta``, mark the database complete, commit, and switch it to WAL."""
        self._conn.executemany(
            "INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", list(meta.items())
        )
        self._conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('complete', '1')")
        self._conn.commit()
        self._conn.execute("PRAGMA journal_mode=WAL")

    def close(self) -> None:
        """Close the connection (an unfinished database stays incomplete)."""
        self._conn.close()

    def __enter__(self) -> PlaceDatabaseWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class PlaceError(ValueError):
    """A place edit that cannot be applied; ``code`` is the API error code."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True)
class Change:
    """One entry of the change stream: the full row after (upsert) or before (delete)."""

    seq: int
    place_id: str
    op: str
    before: dict[str, Any] | None
    after: dict[str, Any] | None
    at: float


def row_dict(row: sqlite3.Row | tuple[Any, ...]) -> dict[str, Any]:
    """A place row as a plain dict keyed by :data:`COLUMNS`."""
    return dict(zip(COLUMNS, tuple(row), strict=True))


@runtime_checkable
class PlaceStore(ReviewStore, Protocol):
    """The places database as the places service, its routes and the tailer use it.

    Reads: one place, the count, profile columns for a page of place numbers, the whole
    table with the change sequence it is consistent with, and the change stream.
    Writes (each appends to the change stream atomically): add, edit, move, review,
    delete; a bad edit raises :class:`PlaceError`.
    """

    def get(self, place_id: str) -> dict[str, Any] | None:
        """The place row with ``place_id``, or ``None``."""
        ...

    def count(self) -> int:
        """How many places the database holds."""
        ...

    def profiles(self, nums: list[int], columns: tuple[str, ...]) -> list[dict[str, Any]]:
        """Rows (as dicts of ``columns``) for the given place numbers."""
        ...

    def last_seq(self) -> int:
        """The sequence number of the newest change (0 when there is none)."""
        ...

    def changes_since(self, seq: int, limit: int = 10_000) -> list[Change]:
        """Changes with a sequence number above ``seq``, oldest first."""
        ...

    def snapshot(self) -> tuple[int, list[tuple[Any, ...]]]:
        """Every row (tuples in :data:`COLUMNS` order, by ``num``) and its change sequence."""
        ...

    def iter_rows(self) -> Iterator[dict[str, Any]]:
        """Every place row as a dict."""
        ...

    def rows_of_kinds(
        self, kinds: tuple[str, ...], columns: tuple[str, ...]
    ) -> list[dict[str, Any]]:
        """The rows (as dicts of ``columns``) whose ``kind`` is one of ``kinds`` — e.g. the
        cities and airports a name lookup needs, without reading every business."""
        ...

    def add(self, fields: dict[str, Any], *, place_id: str | None = None) -> dict[str, Any]:
        """Create a business; returns the stored row."""
        ...

    def edit(self, place_id: str, fields: dict[str, Any]) -> dict[str, Any]:
        """Change some fields of a place; returns the new row."""
        ...

    def move(self, place_id: str, lat: float, lng: float) -> dict[str, Any]:
        """Move a place; returns the new row."""
        ...

    def add_review(self, place_id: str, stars: int) -> dict[str, Any]:
        """Record one 1–5 star review on the place's totals; returns the new row."""
        ...

    def assign_zones(self) -> int:
        """Give the places stored without a time zone the zone of their point; how many."""
        ...

    def delete(self, place_id: str) -> dict[str, Any]:
        """Remove a place; returns the row it had."""
        ...

    def close(self) -> None:
        """Let go of the database."""
        ...


def open_place_store(
    url: str | os.PathLike[str], *, clock: Callable[[], float] = time.time
) -> PlaceStore:
    """The places store ``url`` names: ``sqlite:///path`` (or a bare path) to an existing file.

    ``clock`` stamps ``updated_at`` and change times. An unknown scheme raises
    ValueError naming the accepted ones.
    """
    parsed = parse_store_url(str(url), accepted=("sqlite",))
    assert parsed.path is not None
    return SqlitePlaceStore(parsed.path, clock=clock)


class SqlitePlaceStore(SqliteReviews):
    """Add, edit, move and delete places in a SQLite file; every write appends to the stream.

    Thread-safe: writes share one connection behind a lock, short reads another behind
    their own, and whole-table reads open their own, so a write waiting out the busy
    timeout for another process's lock never holds up a read (WAL: readers never wait for
    writers), nor does a rebuild's scan hold up a search. ``clock`` stamps ``updated_at``.
    Several processes may write one file (a fleet's API workers, a server and a command): each
    write is one ``BEGIN IMMEDIATE`` transaction that reads what it depends on — the next
    place number, the row it edits, a review's totals — only after taking SQLite's write
    lock, so two writers never pick one number (a spurious ``ALREADY_EXISTS``) or both
    build on the same old row (a lost edit or review).
    """

    def __init__(self, path: str | Path, *, clock: Any = time.time) -> None:
        self.path = Path(path)
        if not self.path.exists():
            raise FileNotFoundError(f"no places database at {self.path}")
        self._conn = connect(self.path)
        create_schema(self._conn)
        self._conn.commit()
        self._lock = threading.Lock()
        self._reader = connect(self.path)
        self._read_lock = threading.Lock()
        self._clock = clock

    def close(self) -> None:
        """Close the connections."""
        with self._read_lock:
            self._reader.close()
        with self._lock:
            self._conn.close()

    @contextmanager
    def _reading(self) -> Iterator[sqlite3.Connection]:
        """The connection of short reads, held for the block (never the writers' lock)."""
        with self._read_lock:
            yield self._reader

    @contextmanager
    def _scanning(self) -> Iterator[sqlite3.Connection]:
        """A connection of its own for a whole-table read (closed after the block)."""
        conn = connect(self.path)
        try:
            yield conn
        finally:
            conn.close()

    # ------------------------------------------------------------------ reads

    def get(self, place_id: str) -> dict[str, Any] | None:
        """The place row with ``place_id``, or ``None``."""
        with self._reading() as conn:
            row = conn.execute(
                f"SELECT {', '.join(COLUMNS)} FROM places WHERE id = ?", (place_id,)
            ).fetchone()
        return row_dict(row) if row else None

    def count(self) -> int:
        """How many places the database holds."""
        with self._reading() as conn:
            return int(conn.execute("SELECT COUNT(*) FROM places").fetchone()[0])

    def profiles(self, nums: list[int], columns: tuple[str, ...]) -> list[dict[str, Any]]:
        """Rows (as dicts of ``columns``) for the given place numbers — hydrating a page."""
        bad = set(columns) - set(COLUMNS)
        if bad:
            raise ValueError(f"unknown columns {sorted(bad)}")
        out: list[dict[str, Any]] = []
        with self._reading() as conn:
            for start in range(0, len(nums), 500):
                chunk = [int(n) for n in nums[start : start + 500]]
                rows = conn.execute(
                    f"SELECT {', '.join(columns)} FROM places "
                    f"WHERE num IN ({', '.join('?' for _ in chunk)})",
                    chunk,
                ).fetchall()
                out.extend(dict(zip(columns, tuple(r), strict=True)) for r in rows)
        return out

    def last_seq(self) -> int:
        """The sequence number of the newest change (0 when there is none)."""
        with self._reading() as conn:
            row = conn.execute("SELECT MAX(seq) FROM changes").fetchone()
        return int(row[0] or 0)

    def changes_since(self, seq: int, limit: int = 10_000) -> list[Change]:
        """Changes with a sequence number above ``seq``, oldest first."""
        with self._reading() as conn:
            rows = conn.execute(
                "SELECT seq, place_id, op, before, after, at FROM changes WHERE seq > ? "
                "ORDER BY seq LIMIT ?",
                (seq, limit),
            ).fetchall()
        return [
            Change(
                seq=int(r[0]),
                place_id=r[1],
                op=r[2],
                before=json.loads(r[3]) if r[3] else None,
                after=json.loads(r[4]) if r[4] else None,
                at=float(r[5]),
            )
            for r in rows
        ]

    def snapshot(self) -> tuple[int, list[tuple[Any, ...]]]:
        """Every row plus the change sequence it is consistent with (one read transaction)."""
        with self._scanning() as conn:
            conn.execute("BEGIN")
            try:
                seq = int(conn.execute("SELECT MAX(seq) FROM changes").fetchone()[0] or 0)
                rows = conn.execute(
                    f"SELECT {', '.join(COLUMNS)} FROM places ORDER BY num"
                ).fetchall()
            finally:
                conn.execute("COMMIT")
        return seq, [tuple(r) for r in rows]

    # ----------------------------------------------------------------- writes

    def add(self, fields: dict[str, Any], *, place_id: str | None = None) -> dict[str, Any]:
        """Create a business; returns the stored row. ``PlaceError`` for bad fields, a taken id."""
        clean = _validate(fields, partial=False)
        with self._writing():
            num = self._next_num()
            pid = place_id or f"biz:u{num}"
            if self._conn.execute("SELECT 1 FROM places WHERE id = ?", (pid,)).fetchone():
                raise PlaceError("ALREADY_EXISTS", f"a place with id {pid!r} already exists")
            row: dict[str, Any] = {
                "id": pid,
                "num": num,
                "kind": "business",
                "population": None,
                "generated": 0,
                "near_city": None,
                "country": None,
                "tags": "[]",
                "hours": None,
                "price": None,
                "review_count": 0,
                "review_stars": 0,
            }
            row.update(clean)
            if "timezone" not in clean:  # the zone of its point: openNow reads local hours
                row["timezone"] = zone_at(row["lat"], row["lng"])
            row["geohash"] = geohash.encode(row["lat"], row["lng"])
            row["updated_at"] = self._clock()
            self._write(row, new=True)
            self._append(pid, "upsert", None, row)
        return row

    def edit(self, place_id: str, fields: dict[str, Any]) -> dict[str, Any]:
        """Change some fields of a place (a new lat/lng is a move); returns the new row."""
        clean = _validate(fields, partial=True)

        def change(before: dict[str, Any]) -> dict[str, Any]:
            moved = ("lat" in clean or "lng" in clean) and "timezone" not in clean
            if not moved:
                return clean
            lat, lng = clean.get("lat", before["lat"]), clean.get("lng", before["lng"])
            return {**clean, "timezone": zone_at(lat, lng)}  # a moved place keeps local time

        with self._writing():
            return self._edit_locked(place_id, change)

    def assign_zones(self) -> int:
        """Give every place stored without a zone (or with the old default, UTC) the zone of
        its point, each as an edit on the change stream; returns how many changed."""
        with self._writing():
            unset = [z for z in UNSET_ZONES if z is not None]
            rows = self._conn.execute(
                "SELECT id, lat, lng FROM places WHERE timezone IS NULL OR timezone IN "
                f"({', '.join('?' * len(unset))})",
                unset,
            ).fetchall()
            for pid, lat, lng in rows:
                self._edit_locked(pid, _set_zone(zone_at(lat, lng)))
        return len(rows)

    def _edit_locked(
        self, place_id: str, change: Callable[[dict[str, Any]], dict[str, Any]]
    ) -> dict[str, Any]:
        """Apply ``change(row before)``'s fields inside the caller's write transaction."""
        before = self._get_locked(place_id)
        if before is None:
            raise PlaceError("NOT_FOUND", f"no place with id {place_id!r}")
        after = dict(before)
        after.update(change(before))
        _check_review_totals(after)
        after["geohash"] = geohash.encode(after["lat"], after["lng"])
        after["updated_at"] = self._clock()
        self._write(after)
        self._append(place_id, "upsert", before, after)
        return after

    def move(self, place_id: str, lat: float, lng: float) -> dict[str, Any]:
        """Move a place: for the index, a delete from the old cell and an insert into the new."""
        return self.edit(place_id, {"lat": lat, "lng": lng})

    def add_review(self, place_id: str, stars: int) -> dict[str, Any]:
        """Record one 1–5 star review on the place's totals (the rating aggregator's job)."""
        if isinstance(stars, bool) or not isinstance(stars, int) or not 1 <= stars <= 5:
            raise PlaceError("INVALID_PARAMETER", "stars must be an integer from 1 to 5")
        with self._writing():  # the totals are read under the write lock: no review is lost
            return self._edit_locked(place_id, lambda row: {
                "review_count": row["review_count"] + 1,
                "review_stars": row["review_stars"] + stars,
            })  # fmt: skip

    def delete(self, place_id: str) -> dict[str, Any]:
        """Remove a place; returns the row it had."""
        with self._writing():
            before = self._get_locked(place_id)
            if before is None:
                raise PlaceError("NOT_FOUND", f"no place with id {place_id!r}")
            self._conn.execute("DELETE FROM places WHERE id = ?", (place_id,))
            self._forget_reviews(place_id)
            self._append(place_id, "delete", before, None)
        return before

    @contextmanager
    def _writing(self) -> Iterator[None]:
        """One write transaction that holds SQLite's write lock from its first read (``BEGIN
        IMMEDIATE``, waiting up to the busy timeout for another process's writer):
        committed when the block ends, rolled back if it raises."""
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield
            except BaseException:
                self._conn.rollback()
                raise
            self._conn.commit()

    def _next_num(self) -> int:
        # Numbers are never reused, so a late change for a deleted place cannot hit a new one.
        row = self._conn.execute("SELECT value FROM meta WHERE key = 'next_num'").fetchone()
        top = int(self._conn.execute("SELECT COALESCE(MAX(num), -1) + 1 FROM places").fetchone()[0])
        num = max(int(row[0]) if row else 0, top)
        self._conn.execute(
            "INSERT OR REPLACE INTO meta(key, value) VALUES ('next_num', ?)", (str(num + 1),)
        )
        return num

    def _get_locked(self, place_id: str) -> dict[str, Any] | None:
        row = self._conn.execute(
            f"SELECT {', '.join(COLUMNS)} FROM places WHERE id = ?", (place_id,)
        ).fetchone()
        return row_dict(row) if row else None

    def _write(self, row: dict[str, Any], *, new: bool = False) -> None:
        # A new place is a plain INSERT: a clash on its number fails loudly instead of
        # replacing (deleting) the place that holds it.
        verb = "INSERT" if new else "INSERT OR REPLACE"
        self._conn.execute(
            f"{verb} INTO places({', '.join(COLUMNS)}) VALUES ({', '.join('?' for _ in COLUMNS)})",
            tuple(row[c] for c in COLUMNS),
        )

    def _append(
        self, place_id: str, op: str, before: dict[str, Any] | None, after: dict[str, Any] | None
    ) -> None:
        self._conn.execute(
            "INSERT INTO changes(place_id, op, before, after, at) VALUES (?, ?, ?, ?, ?)",
            (
                place_id,
                op,
                json.dumps(before) if before else None,
                json.dumps(after) if after else None,
                self._clock(),
            ),
        )

    def iter_rows(self) -> Iterator[dict[str, Any]]:
        """Every place row as a dict (for tests and exports)."""
        _, rows = self.snapshot()
        for row in rows:
            yield row_dict(row)

    def rows_of_kinds(
        self, kinds: tuple[str, ...], columns: tuple[str, ...]
    ) -> list[dict[str, Any]]:
        """The rows (as dicts of ``columns``) whose ``kind`` is one of ``kinds``."""
        bad = set(columns) - set(COLUMNS)
        if bad or not kinds:
            raise ValueError(f"unknown columns {sorted(bad)}" if bad else "no kinds given")
        with self._scanning() as conn:
            rows = conn.execute(
                f"SELECT {', '.join(columns)} FROM places "
                f"WHERE kind IN ({', '.join('?' for _ in kinds)}) ORDER BY num",
                list(kinds),
            ).fetchall()
        return [dict(zip(columns, tuple(r), strict=True)) for r in rows]


def _set_zone(name: str) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """The edit that sets a row's time zone to ``name``."""
    return lambda _before: {"timezone": name}


def _validate(fields: dict[str, Any], *, partial: bool) -> dict[str, Any]:
    """Check owner-supplied fields; returns them normalised for the table."""
    if not isinstance(fields, dict):
        raise PlaceError("INVALID_PARAMETER", "place fields must be an object")
    unknown = set(fields) - set(EDITABLE)
    if unknown:
        raise PlaceError(
            "INVALID_PARAMETER",
            f"unknown or read-only field(s): {sorted(unknown)}; editable: {', '.join(EDITABLE)}",
        )
    if not partial:
        missing = [f for f in ("name", "lat", "lng", "category") if f not in fields]
        if missing:
            raise PlaceError("INVALID_PARAMETER", f"missing required field(s): {missing}")
    out: dict[str, Any] = {}
    for key, value in fields.items():
        if key == "name":
            if not isinstance(value, str) or not value.strip() or len(value) > 200:
                raise PlaceError("INVALID_PARAMETER", "name must be 1 to 200 characters")
            out[key] = value.strip()
        elif key in ("lat", "lng"):
            limit = 90.0 if key == "lat" else 180.0
            if (
                isinstance(value, bool)
                or not isinstance(value, (int, float))
                or not math.isfinite(value)
                or not -limit <= value <= limit
            ):
                raise PlaceError("INVALID_PARAMETER", f"{key} must be a number within ±{limit:g}")
            out[key] = float(value)
        elif key == "category":
            if not isinstance(value, str) or not value.strip() or len(value) > 40:
                raise PlaceError("INVALID_PARAMETER", "category must be a short non-empty string")
            out[key] = value.strip().lower()
        elif key == "country":
            if value is not None and (not isinstance(value, str) or len(value) > 3):
                raise PlaceError("INVALID_PARAMETER", "country must be an ISO country code")
            out[key] = value
        elif key == "timezone":
            if not isinstance(value, str):
                raise PlaceError("INVALID_PARAMETER", "timezone must be an IANA name")
            try:
                zone(value)
            except ValueError as exc:
                raise PlaceError("INVALID_PARAMETER", str(exc)) from None
            out[key] = value
        elif key == "tags":
            if (
                not isinstance(value, list)
                or not all(isinstance(t, str) and 0 < len(t) <= 40 for t in value)
                or len(value) > 30
            ):
                raise PlaceError("INVALID_PARAMETER", "tags must be a list of short strings")
            out[key] = json.dumps([t.strip().lower() for t in value])
        elif key == "hours":
            try:
                out[key] = canonical_json(parse_hours(value))
            except ValueError as exc:
                raise PlaceError("INVALID_PARAMETER", str(exc)) from None
        elif key == "price":
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 4
            ):
                raise PlaceError("INVALID_PARAMETER", "price must be an integer 1-4, or null")
            out[key] = value
        elif key in ("review_count", "review_stars"):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise PlaceError("INVALID_PARAMETER", f"{key} must be a non-negative integer")
            out[key] = value
    if not partial:
        _check_review_totals({"review_count": 0, "review_stars": 0, **out})
    return out


def _check_review_totals(row: dict[str, Any]) -> None:
    n, stars = row.get("review_count", 0), row.get("review_stars", 0)
    if not n <= stars <= 5 * n:
        raise PlaceError(
            "INVALID_PARAMETER",
            "review_stars must lie between review_count and 5 × review_count (each review is 1–5)",
        )
