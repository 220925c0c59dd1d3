"""The places database in a SQLite file: the embedded store, and the data set's bulk writer.

The schema, the connections (WAL: the index reads while owners write), the integrity check a
server runs before it loads the file, and :class:`PlaceDatabaseWriter`, through which the
data set's builder writes a new database. The reads and writes themselves are
:mod:`lookup.geo.places.sql`'s, shared with PostgreSQL.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from lookup.errors import Damaged
from lookup.geo.places import COLUMNS, SCHEMA_VERSION
from lookup.geo.places.sql import PlaceDialect, SqlPlaceStore, insert_statement
from lookup.geo.reviewstore import create_review_schema
from lookup.kit.engines import sqlite as kit_sqlite
from lookup.kit.engines.storeurl import StoreUrl, sqlite_url
from lookup.kit.integrity import is_not_writable, not_writable

__all__ = [
    "SCHEMA",
    "SQLITE",
    "PlaceDatabaseWriter",
    "SqlitePlaceStore",
    "check_database",
    "connect",
    "create_schema",
    "damage_of",
    "is_complete",
]

#: How SQLite spells the shared statements.
SQLITE = PlaceDialect("sqlite")

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
        self._insert = insert_statement()

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


class SqlitePlaceStore(SqlPlaceStore):
    """Add, edit, move and delete places in a SQLite file; every write appends to the stream.

    Thread-safe: writes share one connection behind a lock, short reads another behind
    their own, and whole-table reads open their own, so a write waiting out the busy
    timeout for another process's lock never holds up a read (WAL: readers never wait for
    writers), nor does a rebuild's scan hold up a search. ``clock`` stamps ``updated_at``.
    Several processes may write one file (a fleet's API workers, a server and a command): each
    write is one ``BEGIN IMMEDIATE`` transaction — SQLite's write lock is the store's write
    lock of :mod:`lookup.geo.places.sql`, taken before the first read.
    """

    dialect = SQLITE

    def __init__(self, path: str | Path, *, clock: Callable[[], float] = time.time) -> None:
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

    @classmethod
    def from_url(cls, url: StoreUrl, *, clock: Callable[[], float] = time.time) -> SqlitePlaceStore:
        """The store in the existing file ``url`` names (``sqlite:///path``)."""
        assert url.path is not None
        return cls(url.path, clock=clock)

    @classmethod
    def open_writer(cls, url: StoreUrl) -> PlaceDatabaseWriter:
        """The bulk writer of a new database at the file ``url`` names."""
        assert url.path is not None
        return PlaceDatabaseWriter(url.path)

    @property
    def url(self) -> str:
        """The store's URL (``sqlite:///path``)."""
        return sqlite_url(self.path)

    def close(self) -> None:
        """Close the connections."""
        with self._read_lock:
            self._reader.close()
        with self._lock:
            self._conn.close()

    def _tx(self) -> sqlite3.Connection:
        return self._conn

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
