"""The crawl state in one SQLite file (``DIR/crawl.sqlite``): the writer and the reader.

Every URL the crawler ever admitted has one row in ``urls`` keyed by its hash; ``hosts``
keeps each host's robots.txt, counters, soft-404 probe and the frontier's own view of it;
``cycles`` and ``host_budget`` the crawl cycles and each host's pages admitted per cycle;
``cuts``, ``redirects`` and ``fetches`` what the crawl refused, followed and asked.

Work is leased, not assigned: a URL is ``leased`` while a fetch is in flight and a
restarted crawler puts every lease it finds back to ``queued`` (the process that held
them is gone), so nothing queued is ever lost. A page's result and the links it
discovered are committed in one transaction, after its WARC record and event are
written, so a committed ``done`` is never fetched again.

WAL mode with ``synchronous=NORMAL`` survives the crawler being killed (SIGKILL) at any
instant; only a power cut could lose the last transactions. WAL also lets the reader
(opened read-only) watch a running crawl while its one writer works.

The statements both engines share are :mod:`lookup.crawler.state.sql`'s; this module
holds the schema, how SQLite spells what differs, and how it connects.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from lookup.crawler.state import (
    HOST_COUNTERS,
    CrawlStateError,
    CycleRecord,
    FetchRecord,
    FrontierHostState,
    HostCounter,
    HostRecord,
    UrlRecord,
)
from lookup.crawler.state.sql import TABLES, CrawlSql, Dialect, SqlCrawlQueries, SqlCrawlWriter
from lookup.kit.engines.sqlite import connect
from lookup.kit.engines.storeurl import StoreUrl

__all__ = ["SQLITE", "SqliteCrawlReader", "SqliteCrawlStateError", "SqliteCrawlStore"]

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS urls (
    url_hash      TEXT PRIMARY KEY,
    url           TEXT NOT NULL,
    host          TEXT NOT NULL,
    state         TEXT NOT NULL,
    kind          TEXT NOT NULL DEFAULT 'page',
    depth         INTEGER NOT NULL DEFAULT 0,
    level         INTEGER NOT NULL DEFAULT 1,
    seq           INTEGER NOT NULL DEFAULT 0,
    redirects     INTEGER NOT NULL DEFAULT 0,
    attempts      INTEGER NOT NULL DEFAULT 0,
    found_on      TEXT,
    discovered_at REAL,
    lease_until   REAL,
    outcome       TEXT,
    reason        TEXT,
    http_status   INTEGER,
    fetched_at    TEXT,
    last_fetch    REAL,
    fetches       INTEGER NOT NULL DEFAULT 0,
    changes       INTEGER NOT NULL DEFAULT 0,
    interval      REAL,
    next_due      REAL,
    importance    REAL NOT NULL DEFAULT 1.0,
    sitemap_lastmod REAL,
    etag          TEXT,
    last_modified TEXT,
    content_hash  TEXT,
    simhash       TEXT,
    minhash       BLOB,
    near_eligible INTEGER NOT NULL DEFAULT 0,
    storage_key   TEXT,
    title         TEXT,
    canonical     TEXT,
    out_links     INTEGER,
    dup_of        TEXT,
    dup_kind      TEXT,
    dup_score     REAL,
    cycle         INTEGER NOT NULL DEFAULT 1,
    part          INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS hosts (
    host          TEXT PRIMARY KEY,
    address       TEXT,
    robots_state  TEXT,
    robots_status INTEGER,
    robots_body   TEXT,
    robots_reason TEXT,
    robots_fetched_at REAL,
    robots_expires_at REAL,
    crawl_delay   REAL,
    last_delay    REAL NOT NULL DEFAULT 0,
    admitted      INTEGER NOT NULL DEFAULT 0,
    fetched       INTEGER NOT NULL DEFAULT 0,
    errors        INTEGER NOT NULL DEFAULT 0,
    backoffs      INTEGER NOT NULL DEFAULT 0,
    scheme        TEXT,
    probe_url     TEXT,
    probe_status  INTEGER,
    probe_title   TEXT,
    probe_text    TEXT,
    probe_location TEXT,
    probe_attempts INTEGER NOT NULL DEFAULT 0,
    ready_at      REAL,
    queue         INTEGER,
    in_flight     INTEGER,
    waiting_robots INTEGER,
    state_at      REAL
);
CREATE TABLE IF NOT EXISTS cycles (
    n          INTEGER PRIMARY KEY,
    started_at REAL NOT NULL,
    reason     TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS host_budget (
    host     TEXT NOT NULL,
    cycle    INTEGER NOT NULL,
    admitted INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (host, cycle)
);
CREATE TABLE IF NOT EXISTS cuts (
    id     INTEGER PRIMARY KEY,
    url    TEXT NOT NULL,
    host   TEXT NOT NULL,
    rule   TEXT NOT NULL,
    detail TEXT,
    at     REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS redirects (
    from_url TEXT NOT NULL,
    to_url   TEXT NOT NULL,
    status   INTEGER NOT NULL,
    at       REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS fetches (
    id       INTEGER PRIMARY KEY,
    url      TEXT NOT NULL,
    host     TEXT NOT NULL,
    address  TEXT,
    kind     TEXT NOT NULL,
    started  REAL NOT NULL,
    took     REAL NOT NULL,
    status   INTEGER,
    outcome  TEXT NOT NULL,
    delay    REAL
);
"""

INDEXES = """
CREATE INDEX IF NOT EXISTS urls_state ON urls (state, seq);
CREATE INDEX IF NOT EXISTS urls_host ON urls (host);
CREATE INDEX IF NOT EXISTS urls_canonical ON urls (canonical);
CREATE INDEX IF NOT EXISTS urls_due ON urls (state, next_due);
"""

SQLITE = Dialect(
    name="sqlite",
    tables={t: t for t in TABLES},
    host_rows="SELECT h.* FROM hosts h",  # the counters are columns of the host's row
    insert_if_absent="INSERT OR IGNORE INTO {table} ({columns}) VALUES ({values})",
)
_SQL = CrawlSql(SQLITE)


class SqliteCrawlStateError(CrawlStateError, sqlite3.DatabaseError):
    """The SQLite crawl state cannot be read (also a ``sqlite3.DatabaseError``)."""


def _path(url: StoreUrl) -> Path:
    assert url.path is not None  # parse_store_url gives every sqlite URL its path
    return url.path


class SqliteCrawlStore(SqlCrawlWriter):
    """The crawl loop's writer over ``DIR/crawl.sqlite`` (made and migrated on open)."""

    sql = _SQL

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self._db = connect(self.path)
        self._db.row_factory = sqlite3.Row
        self._db.executescript(SCHEMA)
        self._migrate()
        self._db.executescript(INDEXES)
        self._in_tx = False

    @classmethod
    def from_url(cls, url: StoreUrl, **options: Any) -> SqliteCrawlStore:
        """The crawl state in the file ``url`` names, opened for writing."""
        return cls(_path(url), **options)

    @classmethod
    def open_reader(cls, url: StoreUrl) -> SqliteCrawlReader:
        """The crawl state in the file ``url`` names, opened read-only."""
        return SqliteCrawlReader(_path(url))

    def _migrate(self) -> None:
        """Add the columns a crawl database made by an older version lacks."""
        for table in ("urls", "hosts"):
            have = {r["name"] for r in self._db.execute(f"PRAGMA table_info({table})")}
            for line in (
                SCHEMA.split(f"CREATE TABLE IF NOT EXISTS {table} (", 1)[1]
                .split(");", 1)[0]
                .splitlines()
            ):
                parts = line.strip().rstrip(",").split(None, 1)
                if len(parts) == 2 and parts[0] not in have and "PRIMARY KEY" not in parts[1]:
                    self._db.execute(f"ALTER TABLE {table} ADD COLUMN {parts[0]} {parts[1]}")

    def close(self) -> None:
        self._db.close()

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        """One atomic transaction (nested calls join the outer one)."""
        if self._in_tx:
            yield
            return
        self._db.execute("BEGIN IMMEDIATE")
        self._in_tx = True
        try:
            yield
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        else:
            self._db.execute("COMMIT")
        finally:
            self._in_tx = False

    def _rows(self, statement: str, args: Sequence[Any] = ()) -> list[sqlite3.Row]:
        return self._db.execute(statement, args).fetchall()

    def _exec(self, statement: str, args: Sequence[Any] = ()) -> int:
        return self._db.execute(statement, args).rowcount

    def iter_url_hashes(self) -> Iterator[str]:
        """Every URL's hash, streamed (a large crawl's hashes need not fit in a list)."""
        for (h,) in self._db.execute("SELECT url_hash FROM urls"):
            yield h

    def supersede(self, url_hash: str, kind: str, by_url: str, score: float | None) -> None:
        self._db.execute(
            "UPDATE urls SET dup_of = :by, "
            "dup_kind = CASE WHEN urls.content_hash = o.hash THEN :kind ELSE dup_kind END, "
            "dup_score = CASE WHEN urls.content_hash = o.hash THEN :score ELSE dup_score END "
            "FROM (SELECT url, content_hash AS hash FROM urls WHERE url_hash = :h) AS o "
            "WHERE urls.outcome = 'duplicate' AND urls.dup_of = o.url AND urls.url != :by",
            {"h": url_hash, "by": by_url, "kind": kind, "score": score},
        )
        self._superseded(url_hash, kind, by_url, score)

    # -- hosts -----------------------------------------------------------------------
    def ensure_host(self, host: str, address: str, scheme: str | None = None) -> None:
        self._db.execute(
            "INSERT INTO hosts(host, address, scheme) VALUES (?, ?, ?) "
            "ON CONFLICT(host) DO NOTHING",
            (host, address, scheme),
        )

    def count_host(self, host: str, counter: HostCounter, by: int = 1) -> None:
        if counter not in HOST_COUNTERS:
            raise ValueError(counter)
        self._db.execute(f"UPDATE hosts SET {counter} = {counter} + ? WHERE host = ?", (by, host))

    def write_frontier_state(self, states: list[FrontierHostState]) -> None:
        """The frontier's per-host state, in one transaction; raises CrawlStateError."""
        try:
            with self.transaction():
                self._db.executemany(
                    "UPDATE hosts SET ready_at = ?, queue = ?, in_flight = ?, "
                    "waiting_robots = ?, state_at = ? WHERE host = ?",
                    [
                        (s.ready_at, s.queue, s.in_flight, s.waiting_robots, s.state_at, s.host)
                        for s in states
                    ],
                )
        except sqlite3.Error as exc:
            raise SqliteCrawlStateError(str(exc)) from exc

    # -- crawl cycles and the per-host budget -------------------------------------------
    def add_cycle(self, cycle: CycleRecord) -> None:
        self._db.execute(
            "INSERT INTO cycles(n, started_at, reason) VALUES (?, ?, ?)",
            (cycle.n, cycle.started_at, cycle.reason),
        )

    def bump_budget(self, host: str, cycle: int, by: int = 1) -> None:
        self._db.execute(
            "INSERT INTO host_budget(host, cycle, admitted) VALUES (?, ?, ?) "
            "ON CONFLICT(host, cycle) DO UPDATE SET admitted = admitted + excluded.admitted",
            (host, cycle, by),
        )

    # -- the fetch log -----------------------------------------------------------------
    def add_fetch(self, fetch: FetchRecord) -> None:
        self._db.execute(
            "INSERT INTO fetches (url, host, address, kind, started, took, status, outcome, delay)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                fetch.url, fetch.host, fetch.address, fetch.kind, fetch.started, fetch.took,
                fetch.status, fetch.outcome, fetch.delay,
            ),
        )  # fmt: skip


class SqliteCrawlReader(SqlCrawlQueries):
    """Read-only queries over ``DIR/crawl.sqlite`` (a running crawl or a finished one).

    Raises ``FileNotFoundError`` when the file is missing; every query that meets a file
    that is not a crawl database raises :class:`SqliteCrawlStateError`. A crawl made by an
    older version, without a table or column a question needs, answers as if empty.
    """

    sql = _SQL

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        if not self.path.is_file():
            raise FileNotFoundError(f"{self.path.parent} holds no crawl (no {self.path.name})")
        try:
            self._db = connect(self.path, readonly=True, busy_timeout_ms=5000)
        except sqlite3.Error as exc:
            raise SqliteCrawlStateError(str(exc)) from exc
        self._db.row_factory = sqlite3.Row

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> SqliteCrawlReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _rows(self, statement: str, args: Sequence[Any] = ()) -> list[sqlite3.Row]:
        try:
            return self._db.execute(statement, args).fetchall()
        except sqlite3.Error as exc:
            raise SqliteCrawlStateError(str(exc)) from exc

    def _has(self, table: str, column: str | None = None) -> bool:
        if column is None:
            rows = self._rows(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)
            )
            return bool(rows)
        return any(r["name"] == column for r in self._rows(f"PRAGMA table_info({table})"))

    def url(self, url: str) -> UrlRecord | None:
        """The URL store's record of ``url`` (by its text, as stored)."""
        return self._url_named(url)

    def count_cycles(self) -> int:
        return super().count_cycles() if self._has("cycles") else 1

    def budget_used(self, cycle: int) -> dict[str, int]:
        return super().budget_used(cycle) if self._has("host_budget") else {}

    def host_probes(self) -> list[HostRecord]:
        if not self._has("hosts", "probe_status"):  # a crawl made before probes existed
            return []
        return super().host_probes()
