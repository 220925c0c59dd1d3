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

This is the only module that speaks SQL about crawl state.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
from collections.abc import Iterator
from dataclasses import fields
from pathlib import Path
from typing import Any, Literal, TypeVar

from lookup.crawler.store import (
    ANSWER_FAILURES,
    HOST_COUNTERS,
    CrawlStateError,
    CutRecord,
    CycleRecord,
    FetchedUrl,
    FetchRecord,
    FrontierHostState,
    HostCounter,
    HostPause,
    HostRecord,
    ProbeAnswer,
    RedirectRecord,
    RobotsRecord,
    UrlRecord,
)
from lookup.kit.sqlite import connect

__all__ = ["SqliteCrawlReader", "SqliteCrawlStateError", "SqliteCrawlStore"]

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

R = TypeVar("R")
_URL_FIELDS = tuple(f.name for f in fields(UrlRecord))
_HOST_FIELDS = frozenset(f.name for f in fields(HostRecord))
_URL_COLUMNS = ", ".join(_URL_FIELDS)
_URL_MARKS = ", ".join("?" for _ in _URL_FIELDS)


class SqliteCrawlStateError(CrawlStateError, sqlite3.DatabaseError):
    """The SQLite crawl state cannot be read (also a ``sqlite3.DatabaseError``)."""


def _record(cls: type[R], row: sqlite3.Row, known: frozenset[str]) -> R:
    """A row as a record; columns an older crawl database lacks keep their defaults."""
    return cls(**{k: row[k] for k in row.keys() if k in known})  # noqa: SIM118


_URL_KNOWN = frozenset(_URL_FIELDS)


def _url(row: sqlite3.Row) -> UrlRecord:
    return _record(UrlRecord, row, _URL_KNOWN)


def _host(row: sqlite3.Row) -> HostRecord:
    return _record(HostRecord, row, _HOST_FIELDS)


def _fetch(row: sqlite3.Row) -> FetchRecord:
    return FetchRecord(
        row["url"], row["host"], row["address"], row["kind"], row["started"], row["took"],
        row["status"], row["outcome"], row["delay"],
    )  # fmt: skip


def _cut(row: sqlite3.Row) -> CutRecord:
    return CutRecord(row["url"], row["host"], row["rule"], row["detail"] or "", row["at"])


def _counts(rows: Iterator[sqlite3.Row] | list[sqlite3.Row]) -> dict[str, int]:
    return {str(r[0]): r[1] for r in rows}


_COUNT_STATES = "SELECT state, COUNT(*) FROM urls GROUP BY state"
_COUNT_OUTCOMES = "SELECT outcome, COUNT(*) FROM urls WHERE outcome IS NOT NULL GROUP BY outcome"
_COUNT_CUTS = "SELECT rule, COUNT(*) FROM cuts GROUP BY rule"
_COUNT_DUP_KINDS = (
    "SELECT dup_kind, COUNT(*) FROM urls WHERE outcome = 'duplicate' GROUP BY dup_kind"
)
_BUDGET = "SELECT host, admitted FROM host_budget WHERE cycle = ?"


class SqliteCrawlStore:
    """The crawl loop's writer over ``DIR/crawl.sqlite`` (made and migrated on open)."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self._db = connect(self.path)
        self._db.row_factory = sqlite3.Row
        self._db.executescript(SCHEMA)
        self._migrate()
        self._db.executescript(INDEXES)
        self._in_tx = False

    def _migrate(self) -> None:
        """Add the columns a crawl database made by an older version lacks."""
        for table in ("urls", "hosts"):
            have = {r[1] for r in self._db.execute(f"PRAGMA table_info({table})")}
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

    def _set(self, table: str, key: str, value: str, changes: dict[str, Any]) -> None:
        sets = ", ".join(f"{k} = ?" for k in changes)
        self._db.execute(f"UPDATE {table} SET {sets} WHERE {key} = ?", (*changes.values(), value))

    # -- meta ------------------------------------------------------------------------
    def get_meta(self, key: str, default: Any = None) -> Any:
        row = self._db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return json.loads(row[0]) if row else default

    def set_meta(self, key: str, value: Any) -> None:
        self._db.execute(
            "INSERT INTO meta(key, value) VALUES (?, ?) "
            "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (key, json.dumps(value)),
        )

    # -- the URL store -----------------------------------------------------------------
    def insert_url(self, record: UrlRecord, *, if_absent: bool) -> bool:
        """Insert a URL; returns True when inserted (False: the hash was known).

        ``if_absent=False`` is the Bloom filter's "definitely new" path: a conflict
        there would be a bug, and raises.
        """
        verb = "INSERT OR IGNORE" if if_absent else "INSERT"
        cur = self._db.execute(
            f"{verb} INTO urls ({_URL_COLUMNS}) VALUES ({_URL_MARKS})", tuple(vars(record).values())
        )
        return cur.rowcount == 1

    def url(self, url_hash: str) -> UrlRecord | None:
        row = self._db.execute("SELECT * FROM urls WHERE url_hash = ?", (url_hash,)).fetchone()
        return None if row is None else _url(row)

    def url_exists(self, url_hash: str) -> bool:
        return (
            self._db.execute("SELECT 1 FROM urls WHERE url_hash = ?", (url_hash,)).fetchone()
            is not None
        )

    def iter_url_hashes(self) -> Iterator[str]:
        for (h,) in self._db.execute("SELECT url_hash FROM urls"):
            yield h

    def max_seq(self) -> int:
        return int(self._db.execute("SELECT COALESCE(MAX(seq), 0) FROM urls").fetchone()[0])

    def lease_url(self, url_hash: str, until: float) -> None:
        self._set("urls", "url_hash", url_hash, {"state": "leased", "lease_until": until})

    def settle_url(
        self, url_hash: str, state: str, outcome: str, reason: str | None = None
    ) -> None:
        changes: dict[str, Any] = {"state": state, "outcome": outcome}
        if reason is not None:
            changes["reason"] = reason
        self._set("urls", "url_hash", url_hash, changes)

    def names_canonical(self, url: str) -> bool:
        q = "SELECT 1 FROM urls WHERE canonical = ? AND url != ? LIMIT 1"
        return self._db.execute(q, (url, url)).fetchone() is not None

    def promote(self, url_hash: str) -> None:
        self._set("urls", "url_hash", url_hash, {"outcome": "ok", "reason": None})

    def supersede(self, url_hash: str, kind: str, by_url: str, score: float | None) -> None:
        reason = f"duplicate of {by_url}, its cluster's canonical URL"
        self._db.execute(
            "UPDATE urls SET dup_of = :by, "
            "dup_kind = CASE WHEN urls.content_hash = o.hash THEN :kind ELSE dup_kind END, "
            "dup_score = CASE WHEN urls.content_hash = o.hash THEN :score ELSE dup_score END "
            "FROM (SELECT url, content_hash AS hash FROM urls WHERE url_hash = :h) AS o "
            "WHERE urls.outcome = 'duplicate' AND urls.dup_of = o.url AND urls.url != :by",
            {"h": url_hash, "by": by_url, "kind": kind, "score": score},
        )
        changes = {
            "outcome": "duplicate", "dup_of": by_url, "dup_kind": kind, "dup_score": score,
            "reason": reason,
        }  # fmt: skip
        self._set("urls", "url_hash", url_hash, changes)

    def record_fetched(self, fetched: FetchedUrl) -> None:
        """Store what one fetch did to its URL (the facts left None keep their values)."""
        f = fetched.facts
        changes: dict[str, Any] = {
            "http_status": fetched.http_status,
            "fetched_at": fetched.fetched_at,
            "last_fetch": fetched.last_fetch,
            "lease_until": None,
            "state": fetched.state,
            "attempts": fetched.attempts,
            "outcome": fetched.outcome,
        }
        if fetched.fetches is not None:
            changes["fetches"] = fetched.fetches
        if f.reason is not None:
            changes["reason"] = f.reason
        if f.page is not None:
            changes.update(
                title=f.page.title, canonical=f.page.canonical, out_links=f.page.out_links
            )
        if f.content is not None:
            c = f.content
            changes.update(
                content_hash=c.content_hash, simhash=c.simhash, near_eligible=c.near_eligible,
                minhash=c.minhash, dup_of=c.dup_of, dup_kind=c.dup_kind, dup_score=c.dup_score,
            )  # fmt: skip
        if f.validators is not None:
            changes.update(etag=f.validators.etag, last_modified=f.validators.last_modified)
        if f.storage_key is not None:
            changes["storage_key"] = f.storage_key
        if f.schedule is not None:
            changes.update(interval=f.schedule.interval, next_due=f.schedule.next_due)
        if f.changes is not None:
            changes["changes"] = f.changes
        self._set("urls", "url_hash", fetched.url_hash, changes)

    def note_reason(self, url_hash: str, reason: str) -> None:
        self._set("urls", "url_hash", url_hash, {"reason": reason})

    def set_next_due(self, url_hash: str, when: float | None) -> None:
        self._set("urls", "url_hash", url_hash, {"next_due": when})

    def set_sitemap_lastmod(self, url_hash: str, lastmod: float) -> None:
        self._set("urls", "url_hash", url_hash, {"sitemap_lastmod": lastmod})

    def requeue_due(self, url_hash: str, *, level: int, cycle: int) -> None:
        """A page due for its recrawl goes back into the frontier."""
        self._set(
            "urls", "url_hash", url_hash,
            {"state": "queued", "attempts": 0, "level": level, "cycle": cycle},
        )  # fmt: skip

    def readmit_deferred(self, url_hash: str, *, cycle: int, reason: str) -> None:
        """A URL deferred by its host's budget is admitted in a new cycle."""
        self._set(
            "urls", "url_hash", url_hash,
            {"state": "queued", "outcome": None, "attempts": 0, "cycle": cycle, "reason": reason},
        )  # fmt: skip

    def queued(self) -> list[UrlRecord]:
        """Every queued URL in discovery order (to rebuild the frontier)."""
        rows = self._db.execute("SELECT * FROM urls WHERE state = 'queued' ORDER BY seq")
        return [_url(r) for r in rows]

    def release_stale_leases(self) -> int:
        """Leases held by a crawler that is gone go back to the queue."""
        cur = self._db.execute(
            "UPDATE urls SET state = 'queued', lease_until = NULL WHERE state = 'leased'"
        )
        return cur.rowcount

    def originals(self) -> list[UrlRecord]:
        """Pages indexed as originals (to rebuild the duplicate detector)."""
        rows = self._db.execute(
            "SELECT * FROM urls "
            "WHERE state = 'done' AND outcome = 'ok' AND content_hash IS NOT NULL"
        )
        return [_url(r) for r in rows]

    def indexed_outcomes(self) -> list[tuple[str, str]]:
        """(url, outcome) of every page fetched as an original or a duplicate (trap memory)."""
        rows = self._db.execute(
            "SELECT url, outcome FROM urls WHERE outcome IN ('ok', 'duplicate')"
        )
        return [(r[0], r[1]) for r in rows]

    def due_for_recrawl(self, now: float, limit: int = 1000) -> list[UrlRecord]:
        rows = self._db.execute(
            "SELECT * FROM urls WHERE state = 'done' AND next_due IS NOT NULL AND next_due <= ? "
            "ORDER BY next_due LIMIT ?",
            (now, limit),
        )
        return [_url(r) for r in rows]

    def deferred(self) -> list[UrlRecord]:
        """URLs refused because their host's budget was spent: they wait for a new cycle."""
        rows = self._db.execute(
            "SELECT * FROM urls WHERE state = 'cut' AND outcome = 'trap:host-budget' ORDER BY seq"
        )
        return [_url(r) for r in rows]

    # -- hosts -----------------------------------------------------------------------
    def hosts(self) -> list[HostRecord]:
        return [_host(r) for r in self._db.execute("SELECT * FROM hosts ORDER BY host")]

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

    def set_host_pause(self, host: str, pause: HostPause) -> None:
        self._set(
            "hosts", "host", host, {"last_delay": pause.last_delay, "ready_at": pause.ready_at}
        )

    def record_robots(
        self, host: str, robots: RobotsRecord, pause: HostPause, probe_url: str | None
    ) -> None:
        self._set(
            "hosts", "host", host,
            {
                "robots_state": robots.state, "robots_status": robots.status,
                "robots_body": robots.body, "robots_reason": robots.reason,
                "robots_fetched_at": robots.fetched_at, "robots_expires_at": robots.expires_at,
                "crawl_delay": robots.crawl_delay, "last_delay": pause.last_delay,
                "probe_url": probe_url, "ready_at": pause.ready_at,
            },
        )  # fmt: skip

    def record_probe(
        self, host: str, url: str, attempts: int, pause: HostPause, answer: ProbeAnswer | None
    ) -> None:
        changes: dict[str, Any] = {
            "probe_url": url, "probe_attempts": attempts,
            "last_delay": pause.last_delay, "ready_at": pause.ready_at,
        }  # fmt: skip
        if answer is not None:
            changes.update(
                probe_status=answer.status, probe_title=answer.title,
                probe_text=answer.text, probe_location=answer.location,
            )  # fmt: skip
        self._set("hosts", "host", host, changes)

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

    def cycles(self) -> list[CycleRecord]:
        rows = self._db.execute("SELECT n, started_at, reason FROM cycles ORDER BY n")
        return [CycleRecord(r[0], r[1], r[2]) for r in rows]

    def bump_budget(self, host: str, cycle: int, by: int = 1) -> None:
        self._db.execute(
            "INSERT INTO host_budget(host, cycle, admitted) VALUES (?, ?, ?) "
            "ON CONFLICT(host, cycle) DO UPDATE SET admitted = admitted + excluded.admitted",
            (host, cycle, by),
        )

    def budget_used(self, cycle: int) -> dict[str, int]:
        """Pages admitted per host in ``cycle``."""
        return _counts(self._db.execute(_BUDGET, (cycle,)))

    # -- cuts, redirects, fetch log ----------------------------------------------------
    def add_cut(self, cut: CutRecord) -> None:
        self._db.execute(
            "INSERT INTO cuts(url, host, rule, detail, at) VALUES (?, ?, ?, ?, ?)",
            (cut.url, cut.host, cut.rule, cut.detail, cut.at),
        )

    def add_redirect(self, redirect: RedirectRecord) -> None:
        self._db.execute(
            "INSERT INTO redirects(from_url, to_url, status, at) VALUES (?, ?, ?, ?)",
            (redirect.from_url, redirect.to_url, redirect.status, redirect.at),
        )

    def add_fetch(self, fetch: FetchRecord) -> None:
        self._db.execute(
            "INSERT INTO fetches (url, host, address, kind, started, took, status, outcome, delay)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                fetch.url, fetch.host, fetch.address, fetch.kind, fetch.started, fetch.took,
                fetch.status, fetch.outcome, fetch.delay,
            ),
        )  # fmt: skip

    # -- counts --------------------------------------------------------------------------
    def count_states(self) -> dict[str, int]:
        return _counts(self._db.execute(_COUNT_STATES))

    def count_outcomes(self) -> dict[str, int]:
        return _counts(self._db.execute(_COUNT_OUTCOMES))

    def count_duplicate_kinds(self) -> dict[str, int]:
        return _counts(self._db.execute(_COUNT_DUP_KINDS))

    def count_cuts(self) -> dict[str, int]:
        return _counts(self._db.execute(_COUNT_CUTS))


class SqliteCrawlReader:
    """Read-only queries over ``DIR/crawl.sqlite`` (a running crawl or a finished one).

    Raises ``FileNotFoundError`` when the file is missing; every query that meets a file
    that is not a crawl database raises :class:`SqliteCrawlStateError`.
    """

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

    def _rows(self, sql: str, args: tuple[Any, ...] = ()) -> list[sqlite3.Row]:
        try:
            return self._db.execute(sql, args).fetchall()
        except sqlite3.Error as exc:
            raise SqliteCrawlStateError(str(exc)) from exc

    def _has(self, table: str, column: str | None = None) -> bool:
        if column is None:
            rows = self._rows(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)
            )
            return bool(rows)
        return any(r[1] == column for r in self._rows(f"PRAGMA table_info({table})"))

    def meta(self) -> dict[str, Any]:
        return {r["key"]: json.loads(r["value"]) for r in self._rows("SELECT * FROM meta")}

    # -- counts --------------------------------------------------------------------------
    def count_states(self) -> dict[str, int]:
        return _counts(self._rows(_COUNT_STATES))

    def count_outcomes(self) -> dict[str, int]:
        return _counts(self._rows(_COUNT_OUTCOMES))

    def count_duplicate_kinds(self) -> dict[str, int]:
        return _counts(self._rows(_COUNT_DUP_KINDS))

    def count_cuts(self) -> dict[str, int]:
        return _counts(self._rows(_COUNT_CUTS))

    def count_cycles(self) -> int:
        if not self._has("cycles"):
            return 1
        return int(self._rows("SELECT COUNT(*) FROM cycles")[0][0] or 1)

    def count_requests(self) -> tuple[int, int]:
        row = self._rows("SELECT COUNT(*), COALESCE(SUM(kind = 'robots'), 0) FROM fetches")[0]
        return int(row[0]), int(row[1])

    def count_pages(self, since: float | None = None) -> int:
        marks = ", ".join("?" for _ in ANSWER_FAILURES)
        sql = (
            "SELECT COUNT(*) FROM fetches WHERE kind NOT IN ('robots', 'probe') "
            f"AND status IS NOT NULL AND status NOT IN (429, 503) AND outcome NOT IN ({marks})"
        )
        args: tuple[Any, ...] = ANSWER_FAILURES
        if since is not None:
            sql += " AND started >= ?"
            args = (*args, since)
        return int(self._rows(sql, args)[0][0])

    def budget_used(self, cycle: int) -> dict[str, int]:
        if not self._has("host_budget"):
            return {}
        return _counts(self._rows(_BUDGET, (cycle,)))

    # -- hosts ---------------------------------------------------------------------------
    def hosts(self) -> list[HostRecord]:
        return [_host(r) for r in self._rows("SELECT * FROM hosts ORDER BY host")]

    def host_queues(self) -> dict[str, dict[str, int]]:
        out: dict[str, dict[str, int]] = {}
        for r in self._rows(
            "SELECT host, state, COUNT(*) FROM urls WHERE state IN ('queued', 'leased') "
            "GROUP BY host, state"
        ):
            out.setdefault(r[0], {})[r[1]] = r[2]
        return out

    def last_fetches(self) -> dict[str, FetchRecord]:
        rows = self._rows(
            "SELECT f.* FROM fetches f JOIN "
            "(SELECT host, MAX(id) AS id FROM fetches GROUP BY host) m ON f.id = m.id"
        )
        return {r["host"]: _fetch(r) for r in rows}

    def host_probes(self) -> list[HostRecord]:
        if not self._has("hosts", "probe_status"):  # a crawl made before probes existed
            return []
        rows = self._rows("SELECT * FROM hosts WHERE probe_status IS NOT NULL ORDER BY host")
        return [_host(r) for r in rows]

    # -- URLs ----------------------------------------------------------------------------
    def url(self, url: str) -> UrlRecord | None:
        rows = self._rows("SELECT * FROM urls WHERE url = ?", (url,))
        return _url(rows[0]) if rows else None

    def urls_with_outcome(self, outcome: str) -> list[UrlRecord]:
        return [
            _url(r)
            for r in self._rows("SELECT * FROM urls WHERE outcome = ? ORDER BY seq", (outcome,))
        ]

    def duplicates(self) -> list[UrlRecord]:
        """Every page found to duplicate another (``dup_of`` set), in crawl order."""
        rows = self._rows(
            "SELECT * FROM urls WHERE outcome = 'duplicate' AND dup_of IS NOT NULL ORDER BY seq"
        )
        return [_url(r) for r in rows]

    def blocked(self) -> list[UrlRecord]:
        """Every URL robots.txt kept the crawl from, with the decision that did it."""
        return [
            _url(r) for r in self._rows("SELECT * FROM urls WHERE state = 'blocked' ORDER BY seq")
        ]

    def waiting_on_robots(self) -> list[tuple[str, str | None, int | None]]:
        rows = self._rows(
            "SELECT u.url, h.robots_reason, h.robots_status FROM urls u JOIN hosts h "
            "ON u.host = h.host WHERE u.state = 'queued' AND h.robots_state = "
            "'disallow-all' ORDER BY u.seq"
        )
        return [(r[0], r[1], r[2]) for r in rows]

    def stored_pages(self) -> list[str]:
        rows = self._rows(
            "SELECT url FROM urls WHERE storage_key IS NOT NULL "
            "AND outcome IN ('ok', 'duplicate', 'unchanged') ORDER BY seq"
        )
        return [r[0] for r in rows]

    # -- cuts and the fetch log ------------------------------------------------------------
    def cuts(self, rule: str | None = None) -> list[CutRecord]:
        if rule is None:
            return [_cut(r) for r in self._rows("SELECT * FROM cuts ORDER BY id")]
        return [
            _cut(r) for r in self._rows("SELECT * FROM cuts WHERE rule = ? ORDER BY id", (rule,))
        ]

    def fetch_log(self, order: Literal["id", "started"] = "id") -> list[FetchRecord]:
        if order not in ("id", "started"):
            raise ValueError(f"order must be 'id' or 'started', not {order!r}")
        return [_fetch(r) for r in self._rows(f"SELECT * FROM fetches ORDER BY {order}")]
