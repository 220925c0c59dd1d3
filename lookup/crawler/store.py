"""Durable crawl state in one SQLite file: the URL store, host records, cuts, fetch log.

Every URL the crawler ever admitted has one row in ``urls`` keyed by its hash —
this is the durable URL store behind the Bloom filter, and the durable frontier:
``state`` is ``queued`` (waiting), ``leased`` (in flight), ``done`` (fetched, with its
outcome), ``cut`` (a trap rule refused it), ``blocked`` (robots.txt) or ``failed``.

A crawl runs in **cycles** (``cycles``; the current one in ``meta``): each host may
have at most its page budget admitted per cycle (``host_budget``), so the budget
survives a restart within a cycle and starts afresh with the next one. The
``hosts`` table also keeps each host's soft-404 probe and the frontier's own view
of it (its ready time, queue and fetch in flight), written as the crawl runs.
Work is leased, not assigned: a URL is ``leased`` while a fetch is in flight and a
restarted crawler puts every lease it finds back to ``queued`` (the process that
held them is gone), so nothing queued is ever lost. A page's result and the links
it discovered are committed in one transaction, after its WARC record and event
are written, so a committed ``done`` is never fetched again.

WAL mode with ``synchronous=NORMAL`` survives the crawler being killed (SIGKILL)
at any instant; only a power cut could lose the last transactions.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

__all__ = ["CrawlStore", "URL_STATES"]

URL_STATES = ("queued", "leased", "done", "cut", "blocked", "failed")

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
    cycle         INTEGER NOT NULL DEFAULT 1
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
CREATE INDEX IF NOT EXISTS urls_due ON urls (state, next_due);
"""


class CrawlStore:
    """The crawl's SQLite database (``DIR/crawl.sqlite``)."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self.db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        self.db.row_factory = sqlite3.Row
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.executescript(SCHEMA)
        self._migrate()
        self.db.executescript(INDEXES)
        self._in_tx = False

    def _migrate(self) -> None:
        """Add the columns a crawl database made by an older version lacks."""
        for table in ("urls", "hosts"):
            have = {r[1] for r in self.db.execute(f"PRAGMA table_info({table})")}
            for line in SCHEMA.split(f"CREATE TABLE IF NOT EXISTS {table} (", 1)[1].split(
                ");", 1
            )[0].splitlines():
                parts = line.strip().rstrip(",").split(None, 1)
                if len(parts) == 2 and parts[0] not in have and "PRIMARY KEY" not in parts[1]:
                    self.db.execute(f"ALTER TABLE {table} ADD COLUMN {parts[0]} {parts[1]}")

    def close(self) -> None:
        self.db.close()

    @contextlib.contextmanager
    def tx(self) -> Iterator[sqlite3.Connection]:
        """One atomic transaction (nested calls join the outer one)."""
        if self._in_tx:
            yield self.db
            return
        self.db.execute("BEGIN IMMEDIATE")
        self._in_tx = True
        try:
            yield self.db
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        else:
            self.db.execute("COMMIT")
        finally:
            self._in_tx = False

    # -- meta ------------------------------------------------------------------------
    def get_meta(self, key: str, default: Any = None) -> Any:
        row = self.db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return json.loads(row[0]) if row else default

    def set_meta(self, key: str, value: Any) -> None:
        self.db.execute(
            "INSERT INTO meta(key, value) VALUES (?, ?) "
            "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (key, json.dumps(value)),
        )

    # -- the URL store -----------------------------------------------------------------
    def insert_url(self, row: dict[str, Any], *, if_absent: bool) -> bool:
        """Insert a URL row; returns True when inserted (False: the hash was known).

        ``if_absent=False`` is the Bloom filter's "definitely new" path: a conflict
        there would be a bug, and raises.
        """
        cols = ", ".join(row)
        marks = ", ".join("?" for _ in row)
        verb = "INSERT OR IGNORE" if if_absent else "INSERT"
        cur = self.db.execute(f"{verb} INTO urls ({cols}) VALUES ({marks})", tuple(row.values()))
        return cur.rowcount == 1

    def update_url(self, url_hash: str, **fields: Any) -> None:
        sets = ", ".join(f"{k} = ?" for k in fields)
        self.db.execute(f"UPDATE urls SET {sets} WHERE url_hash = ?", (*fields.values(), url_hash))

    def url_row(self, url_hash: str) -> sqlite3.Row | None:
        return self.db.execute("SELECT * FROM urls WHERE url_hash = ?", (url_hash,)).fetchone()

    def url_exists(self, url_hash: str) -> bool:
        return (
            self.db.execute("SELECT 1 FROM urls WHERE url_hash = ?", (url_hash,)).fetchone()
            is not None
        )

    def iter_url_hashes(self) -> Iterator[str]:
        for (h,) in self.db.execute("SELECT url_hash FROM urls"):
            yield h

    def queued(self) -> list[sqlite3.Row]:
        """Every queued URL in discovery order (to rebuild the frontier)."""
        return self.db.execute(
            "SELECT * FROM urls WHERE state = 'queued' ORDER BY seq"
        ).fetchall()

    def release_stale_leases(self) -> int:
        """Leases held by a crawler that is gone go back to the queue."""
        cur = self.db.execute(
            "UPDATE urls SET state = 'queued', lease_until = NULL WHERE state = 'leased'"
        )
        return cur.rowcount

    def originals(self) -> list[sqlite3.Row]:
        """Pages indexed as originals (to rebuild the duplicate detector)."""
        return self.db.execute(
            "SELECT url_hash, content_hash, simhash, minhash, near_eligible FROM urls "
            "WHERE state = 'done' AND outcome = 'ok' AND content_hash IS NOT NULL"
        ).fetchall()

    def due_for_recrawl(self, now: float, limit: int = 1000) -> list[sqlite3.Row]:
        return self.db.execute(
            "SELECT * FROM urls WHERE state = 'done' AND next_due IS NOT NULL AND next_due <= ? "
            "ORDER BY next_due LIMIT ?",
            (now, limit),
        ).fetchall()

    def max_seq(self) -> int:
        return int(self.db.execute("SELECT COALESCE(MAX(seq), 0) FROM urls").fetchone()[0])

    def count_states(self) -> dict[str, int]:
        return {
            row[0]: row[1]
            for row in self.db.execute("SELECT state, COUNT(*) FROM urls GROUP BY state")
        }

    def count_outcomes(self) -> dict[str, int]:
        return {
            str(row[0]): row[1]
            for row in self.db.execute(
                "SELECT outcome, COUNT(*) FROM urls WHERE outcome IS NOT NULL GROUP BY outcome"
            )
        }

    def duplicates(self) -> list[sqlite3.Row]:
        """Every page found to duplicate another: which one, by which method, how close."""
        return self.db.execute(
            "SELECT url, host, dup_of, dup_kind, dup_score, storage_key, content_hash, simhash "
            "FROM urls WHERE outcome = 'duplicate' ORDER BY seq"
        ).fetchall()

    def soft_404s(self) -> list[sqlite3.Row]:
        """Every page that answered 200 OK but meant "not found", with how that was seen."""
        return self.db.execute(
            "SELECT url, host, reason, title, content_hash, storage_key FROM urls "
            "WHERE outcome = 'soft-404' ORDER BY seq"
        ).fetchall()

    def blocked(self) -> list[sqlite3.Row]:
        """Every URL robots.txt kept us from, with the decision that did it."""
        return self.db.execute(
            "SELECT url, host, outcome, reason FROM urls WHERE state = 'blocked' ORDER BY seq"
        ).fetchall()

    # -- hosts -----------------------------------------------------------------------
    def host_row(self, host: str) -> sqlite3.Row | None:
        return self.db.execute("SELECT * FROM hosts WHERE host = ?", (host,)).fetchone()

    def ensure_host(self, host: str, address: str, scheme: str | None = None) -> None:
        self.db.execute(
            "INSERT INTO hosts(host, address, scheme) VALUES (?, ?, ?) "
            "ON CONFLICT(host) DO NOTHING",
            (host, address, scheme),
        )

    def update_host(self, host: str, **fields: Any) -> None:
        sets = ", ".join(f"{k} = ?" for k in fields)
        self.db.execute(f"UPDATE hosts SET {sets} WHERE host = ?", (*fields.values(), host))

    def bump_host(self, host: str, column: str, by: int = 1) -> None:
        if column not in ("admitted", "fetched", "errors", "backoffs"):
            raise ValueError(column)
        self.db.execute(f"UPDATE hosts SET {column} = {column} + ? WHERE host = ?", (by, host))

    def hosts(self) -> list[sqlite3.Row]:
        return self.db.execute("SELECT * FROM hosts ORDER BY host").fetchall()

    # -- crawl cycles and the per-host budget -------------------------------------------
    def add_cycle(self, n: int, started_at: float, reason: str) -> None:
        self.db.execute(
            "INSERT INTO cycles(n, started_at, reason) VALUES (?, ?, ?)", (n, started_at, reason)
        )

    def cycles(self) -> list[sqlite3.Row]:
        return self.db.execute("SELECT * FROM cycles ORDER BY n").fetchall()

    def bump_budget(self, host: str, cycle: int, by: int = 1) -> None:
        self.db.execute(
            "INSERT INTO host_budget(host, cycle, admitted) VALUES (?, ?, ?) "
            "ON CONFLICT(host, cycle) DO UPDATE SET admitted = admitted + excluded.admitted",
            (host, cycle, by),
        )

    def budget_used(self, cycle: int) -> dict[str, int]:
        """Pages admitted per host in ``cycle``."""
        return {
            r[0]: r[1]
            for r in self.db.execute(
                "SELECT host, admitted FROM host_budget WHERE cycle = ?", (cycle,)
            )
        }

    def deferred(self) -> list[sqlite3.Row]:
        """URLs refused because their host's budget was spent: they wait for a new cycle."""
        return self.db.execute(
            "SELECT * FROM urls WHERE state = 'cut' AND outcome = 'trap:host-budget' ORDER BY seq"
        ).fetchall()

    # -- cuts, redirects, fetch log ----------------------------------------------------
    def add_cut(self, url: str, host: str, rule: str, detail: str = "") -> None:
        self.db.execute(
            "INSERT INTO cuts(url, host, rule, detail, at) VALUES (?, ?, ?, ?, ?)",
            (url, host, rule, detail, time.time()),
        )

    def cuts(self) -> list[sqlite3.Row]:
        return self.db.execute("SELECT * FROM cuts ORDER BY id").fetchall()

    def count_cuts(self) -> dict[str, int]:
        return {
            row[0]: row[1]
            for row in self.db.execute("SELECT rule, COUNT(*) FROM cuts GROUP BY rule")
        }

    def add_redirect(self, from_url: str, to_url: str, status: int) -> None:
        self.db.execute(
            "INSERT INTO redirects(from_url, to_url, status, at) VALUES (?, ?, ?, ?)",
            (from_url, to_url, status, time.time()),
        )

    def add_fetch(self, **fields: Any) -> None:
        cols = ", ".join(fields)
        marks = ", ".join("?" for _ in fields)
        self.db.execute(f"INSERT INTO fetches ({cols}) VALUES ({marks})", tuple(fields.values()))

    def fetch_log(self) -> list[sqlite3.Row]:
        return self.db.execute("SELECT * FROM fetches ORDER BY id").fetchall()
