"""The places database in PostgreSQL + PostGIS: one store every API process of a fleet shares.

The same tables as the SQLite file (:mod:`lookup.geo.places.sqlite`), asked the same
questions (:mod:`lookup.geo.places.sql`), plus what PostGIS gives:

- ``places.geog geography(Point, 4326)``, a column PostgreSQL generates from ``lng`` and
  ``lat`` on every insert, update and ``COPY`` (``GENERATED ALWAYS … STORED``), so it can
  never disagree with them, and the GiST index ``places_geog_gist`` on it — what
  ``ST_DWithin`` and ``ORDER BY geog <-> point`` plan with (:mod:`lookup.geo.postgis`
  runs those queries on this table; :attr:`PostgresPlaceStore.url` is where);
- ``place_changes.seq`` a ``BIGSERIAL``, written in the transaction of the place write it
  records. Every write first takes one transaction-scoped advisory lock (the store's
  write lock): two processes never take one place number, never build on the same old
  row, and the change numbers follow commit order, so a tailer reading ``seq > last``
  never skips a change committed late;
- the key-value table is ``places_meta`` (a fleet's database holds other systems' tables).

A server that cannot be reached makes every call raise :class:`~lookup.errors.Unavailable`
(HTTP 503) within the pool's short timeouts (:mod:`lookup.kit.engines.postgres`); a write
that raised it may or may not have committed, one that returned did.
:class:`PostgresPlaceWriter` loads a data set with ``COPY`` in one transaction: nothing is
visible until it finishes.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import psycopg

from lookup.geo.places import COLUMNS, SCHEMA_VERSION
from lookup.geo.places.sql import PlaceDialect, SqlPlaceStore
from lookup.kit.engines.postgres import PgPool, connect, ensure_schema, unavailable
from lookup.kit.engines.storeurl import StoreUrl

__all__ = ["DDL", "POSTGRES", "PostgresPlaceStore", "PostgresPlaceWriter"]

#: How PostgreSQL spells the shared statements.
POSTGRES = PlaceDialect("postgresql", meta="places_meta", changes="place_changes")
#: What the stores here call the database in errors.
WHAT = "the places database"
#: The advisory lock every write transaction takes first (the store's write lock).
WRITE_LOCK = "SELECT pg_advisory_xact_lock(hashtextextended('lookup.geo.places.write', 0))"

DDL = f"""
CREATE EXTENSION IF NOT EXISTS postgis;
CREATE TABLE IF NOT EXISTS places (
    id           TEXT PRIMARY KEY,
    num          BIGINT NOT NULL UNIQUE,
    name         TEXT NOT NULL,
    lat          DOUBLE PRECISION NOT NULL,
    lng          DOUBLE PRECISION NOT NULL,
    category     TEXT NOT NULL,
    kind         TEXT NOT NULL,
    geohash      TEXT NOT NULL,
    country      TEXT,
    timezone     TEXT,
    population   BIGINT,
    tags         TEXT NOT NULL DEFAULT '[]',
    hours        TEXT,
    price        INTEGER,
    review_count INTEGER NOT NULL DEFAULT 0,
    review_stars INTEGER NOT NULL DEFAULT 0,
    generated    INTEGER NOT NULL DEFAULT 0,
    near_city    TEXT,
    updated_at   DOUBLE PRECISION NOT NULL DEFAULT 0,
    geog         geography(Point, 4326) NOT NULL
                 GENERATED ALWAYS AS (ST_SetSRID(ST_MakePoint(lng, lat), 4326)::geography) STORED
);
CREATE INDEX IF NOT EXISTS places_geohash ON places (geohash);
CREATE INDEX IF NOT EXISTS places_geog_gist ON places USING GIST (geog);
CREATE TABLE IF NOT EXISTS places_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS place_changes (
    seq      BIGSERIAL PRIMARY KEY,
    place_id TEXT NOT NULL,
    op       TEXT NOT NULL,
    before   TEXT,
    after    TEXT,
    at       DOUBLE PRECISION NOT NULL
);
CREATE TABLE IF NOT EXISTS reviews (
    place_id    TEXT NOT NULL,
    user_id     TEXT NOT NULL,
    rating      INTEGER NOT NULL CHECK (rating BETWEEN 1 AND 5),
    text        TEXT NOT NULL DEFAULT '',
    new_account INTEGER NOT NULL,
    created_at  DOUBLE PRECISION NOT NULL,
    updated_at  DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (place_id, user_id)
);
CREATE INDEX IF NOT EXISTS reviews_newest ON reviews (place_id, updated_at, user_id);
CREATE TABLE IF NOT EXISTS review_users (
    user_id  TEXT PRIMARY KEY,
    first_at DOUBLE PRECISION NOT NULL
);
CREATE TABLE IF NOT EXISTS review_totals (
    place_id   TEXT PRIMARY KEY,
    base_count INTEGER NOT NULL,
    base_stars INTEGER NOT NULL,
    est_count  INTEGER NOT NULL,
    est_stars  INTEGER NOT NULL,
    new_count  INTEGER NOT NULL,
    new_stars  INTEGER NOT NULL
);
INSERT INTO places_meta (key, value) VALUES ('schema_version', '{SCHEMA_VERSION}')
    ON CONFLICT (key) DO UPDATE SET value = excluded.value;
"""

#: The tables a load copies, with their columns (the places first).
LOAD_TABLES: dict[str, tuple[str, ...]] = {
    "places": COLUMNS,
    "reviews": (
        "place_id", "user_id", "rating", "text", "new_account", "created_at", "updated_at",
    ),
    "review_users": ("user_id", "first_at"),
    "review_totals": (
        "place_id", "base_count", "base_stars", "est_count", "est_stars", "new_count",
        "new_stars",
    ),
}  # fmt: skip


def _schema(url: str) -> None:
    ensure_schema(url, "lookup.geo.places.schema", DDL, WHAT)


class PostgresPlaceStore(SqlPlaceStore):
    """Add, edit, move and delete places in a PostgreSQL database; every write appends to the
    stream in its own transaction. Thread-safe and safe across processes: a connection pool
    serves the reads, and each write runs on a pooled connection of its own under the
    store's advisory write lock. ``clock`` stamps ``updated_at`` and change times."""

    dialect = POSTGRES

    def __init__(
        self, url: str, *, clock: Callable[[], float] = time.time, pool_size: int = 8
    ) -> None:
        #: The database's connection URL: another module may run its own queries there.
        self.url = url
        self._clock = clock
        _schema(url)
        self._pool = PgPool(url, what=WHAT, max_size=pool_size)
        self._local = threading.local()

    @classmethod
    def from_url(
        cls, url: StoreUrl, *, clock: Callable[[], float] = time.time
    ) -> PostgresPlaceStore:
        """The store in the database ``url`` names (its tables are made if missing)."""
        return cls(url.url, clock=clock)

    @classmethod
    def open_writer(cls, url: StoreUrl) -> PostgresPlaceWriter:
        """The bulk loader of the (empty) database ``url`` names."""
        return PostgresPlaceWriter(url.url)

    def close(self) -> None:
        """Close the pool (the next call opens a new one)."""
        self._pool.close()

    def _tx(self) -> psycopg.Connection[Any]:
        conn: psycopg.Connection[Any] | None = getattr(self._local, "conn", None)
        if conn is None:
            raise RuntimeError("a places write statement outside a write transaction")
        return conn

    @contextmanager
    def _writing(self) -> Iterator[None]:
        """One transaction on a pooled connection that first takes the write lock (waiting
        for another process's writer): committed when the block ends, rolled back if it
        raises; a lost server is :class:`~lookup.errors.Unavailable`."""
        with self._pool.transaction() as conn:
            conn.execute(WRITE_LOCK)
            self._local.conn = conn
            try:
                yield
            finally:
                self._local.conn = None

    @contextmanager
    def _reading(self) -> Iterator[psycopg.Connection[Any]]:
        """A pooled autocommit connection for a short read."""
        with self._pool.connection() as conn:
            yield conn

    @contextmanager
    def _scanning(self) -> Iterator[psycopg.Connection[Any]]:
        """A pooled connection for a whole-table read (other reads use others)."""
        with self._pool.connection() as conn:
            yield conn

    def snapshot(self) -> tuple[int, list[tuple[Any, ...]]]:
        """Every row plus the change sequence it is consistent with: one ``REPEATABLE
        READ`` transaction, so the rows are exactly those of the changes up to ``seq``."""
        with self._pool.connection() as conn, conn.transaction():
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
            row = conn.execute("SELECT MAX(seq) FROM place_changes").fetchone()
            rows = conn.execute(f"SELECT {', '.join(COLUMNS)} FROM places ORDER BY num").fetchall()
        seq = int(row[0] or 0) if row else 0
        return seq, [tuple(r) for r in rows]


class PostgresPlaceWriter:
    """Loads a data set into an empty PostgreSQL places database with ``COPY``, all in one
    transaction: readers see no place until :meth:`finish` commits, and a load that fails
    or is closed unfinished leaves the database as it was. A database that holds places
    already is refused (``ValueError``): loading over live data would fork every serving
    index from the table."""

    def __init__(self, url: str) -> None:
        self.url = url
        _schema(url)
        try:
            self._conn = connect(url)
            held = self._conn.execute("SELECT COUNT(*) FROM places").fetchone()
        except (psycopg.OperationalError, psycopg.InterfaceError) as exc:
            raise unavailable(WHAT, url, exc) from exc
        if held and int(held[0]):
            self._conn.close()
            raise ValueError(
                f"the places database holds {int(held[0]):,} places already; load into an "
                "empty database"
            )

    def insert(self, rows: Iterable[Sequence[Any]]) -> None:
        """Add place rows, each a tuple in :data:`~lookup.geo.places.COLUMNS` order."""
        self.copy_rows("places", COLUMNS, rows)

    def insert_dicts(self, rows: Iterable[Mapping[str, Any]]) -> None:
        """Add place rows given as dicts keyed by the columns (a missing key is NULL)."""
        self.insert(tuple(r.get(c) for c in COLUMNS) for r in rows)

    def copy_rows(self, table: str, columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
        """``COPY`` rows (tuples in ``columns`` order) into one of :data:`LOAD_TABLES`."""
        if tuple(LOAD_TABLES.get(table, ())) != tuple(columns):
            raise ValueError(f"cannot load {table}({', '.join(columns)})")
        statement = f"COPY {table} ({', '.join(columns)}) FROM STDIN"
        with self._conn.cursor() as cur, cur.copy(statement) as copy:  # type: ignore[arg-type]
            for row in rows:
                copy.write_row(tuple(row))

    def finish(self, meta: Mapping[str, str]) -> None:
        """Store ``meta``, mark the database complete and commit the whole load."""
        items = [*meta.items(), ("complete", "1")]
        with self._conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO places_meta (key, value) VALUES (%s, %s) "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                items,
            )
        self._conn.commit()

    def close(self) -> None:
        """Close the connection (an unfinished load is rolled back)."""
        self._conn.close()

    def __enter__(self) -> PostgresPlaceWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
