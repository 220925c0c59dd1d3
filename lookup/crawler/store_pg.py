"""The crawl state in PostgreSQL: the fleet's one durable truth, many writers at once.

The same tables as the embedded SQLite state (:mod:`lookup.crawler.store_sqlite`), named
``crawl_*`` (one crawl per database), plus what a fleet needs:

- every URL and host row carries its **partition** (``part``: hash of the host's address
  mod P), so a worker taking a partition over reads back only that partition's queue,
  leases, hosts and robots cache (:meth:`PgCrawlStore.partition_queue`,
  :meth:`PgCrawlStore.partition_hosts`, :meth:`PgCrawlStore.take_over`);
- ``crawl_partitions(part, epoch, owner)`` holds each partition's current fencing epoch.
  A transaction opened while :data:`~lookup.crawler.partitions.current_fence` is set
  first reads that row ``FOR SHARE`` and raises
  :class:`~lookup.crawler.partitions.FencedOut` when the epoch is not the writer's; the
  row lock is held until the commit, so a newer grant (an ``UPDATE`` of the row) waits
  for the writes checked under the old epoch — check and write are one atomic unit.
  A write outside any transaction opens one of its own, so no partition write escapes
  the check.
- host counters and per-cycle budgets are **append-only** rows summed on read: many
  workers count admissions for one host at once, and an ``UPDATE … + 1`` of a shared row
  would make their transactions wait on each other (and deadlock when two pages link
  each other's hosts);
- each URL row records the transaction that inserted it (``txid``); a worker polls the
  queued rows of its partitions inserted since the oldest transaction still open at its
  last poll (:meth:`PgCrawlStore.queued_since`), the usual outbox cursor that never
  skips a row committed late. Each fetch record carries its transaction too, so a worker
  learns the pages the others fetched (their content fingerprints for the duplicate
  check, their outcomes for the trap rules) the same way
  (:meth:`PgCrawlStore.pages_fetched_since`).

This is the only module that speaks SQL about the fleet's crawl state.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator, Sequence
from dataclasses import fields
from typing import Any, Literal

import psycopg
from psycopg.rows import dict_row

from lookup.crawler.partitions import Fence, FencedOut, current_fence, partition_of
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
from lookup.kit.crawlevents import check_event
from lookup.kit.postgres import PgPool, ensure_schema

__all__ = ["PgCrawlReader", "PgCrawlStore"]

DDL = """
CREATE TABLE IF NOT EXISTS crawl_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS crawl_urls (
    url_hash TEXT PRIMARY KEY, url TEXT NOT NULL, host TEXT NOT NULL, state TEXT NOT NULL,
    kind TEXT NOT NULL DEFAULT 'page', depth INTEGER NOT NULL DEFAULT 0,
    level INTEGER NOT NULL DEFAULT 1, seq BIGINT NOT NULL DEFAULT 0,
    redirects INTEGER NOT NULL DEFAULT 0, attempts INTEGER NOT NULL DEFAULT 0,
    found_on TEXT, discovered_at DOUBLE PRECISION, lease_until DOUBLE PRECISION,
    outcome TEXT, reason TEXT, http_status INTEGER, fetched_at TEXT,
    last_fetch DOUBLE PRECISION, fetches INTEGER NOT NULL DEFAULT 0,
    changes INTEGER NOT NULL DEFAULT 0, "interval" DOUBLE PRECISION,
    next_due DOUBLE PRECISION, importance DOUBLE PRECISION NOT NULL DEFAULT 1.0,
    sitemap_lastmod DOUBLE PRECISION, etag TEXT, last_modified TEXT, content_hash TEXT,
    simhash TEXT, minhash BYTEA, near_eligible INTEGER NOT NULL DEFAULT 0, storage_key TEXT,
    title TEXT, canonical TEXT, out_links INTEGER, dup_of TEXT, dup_kind TEXT,
    dup_score DOUBLE PRECISION, cycle INTEGER NOT NULL DEFAULT 1,
    part INTEGER NOT NULL DEFAULT 0,
    txid BIGINT NOT NULL DEFAULT (pg_current_xact_id()::text::bigint)
);
CREATE TABLE IF NOT EXISTS crawl_hosts (
    host TEXT PRIMARY KEY, address TEXT, part INTEGER NOT NULL DEFAULT 0,
    robots_state TEXT, robots_status INTEGER, robots_body TEXT, robots_reason TEXT,
    robots_fetched_at DOUBLE PRECISION, robots_expires_at DOUBLE PRECISION,
    crawl_delay DOUBLE PRECISION, last_delay DOUBLE PRECISION NOT NULL DEFAULT 0, scheme TEXT,
    probe_url TEXT, probe_status INTEGER, probe_title TEXT, probe_text TEXT,
    probe_location TEXT, probe_attempts INTEGER NOT NULL DEFAULT 0,
    ready_at DOUBLE PRECISION, queue INTEGER, in_flight INTEGER, waiting_robots INTEGER,
    state_at DOUBLE PRECISION
);
CREATE TABLE IF NOT EXISTS crawl_cycles (
    n INTEGER PRIMARY KEY, started_at DOUBLE PRECISION NOT NULL, reason TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS crawl_host_counts (
    host TEXT NOT NULL, counter TEXT NOT NULL, n INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS crawl_host_counts_host ON crawl_host_counts (host);
CREATE TABLE IF NOT EXISTS crawl_host_budget (
    host TEXT NOT NULL, cycle INTEGER NOT NULL, admitted INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS crawl_host_budget_cycle ON crawl_host_budget (cycle, host);
CREATE TABLE IF NOT EXISTS crawl_cuts (
    id BIGSERIAL PRIMARY KEY, url TEXT NOT NULL, host TEXT NOT NULL, rule TEXT NOT NULL,
    detail TEXT, at DOUBLE PRECISION NOT NULL
);
CREATE TABLE IF NOT EXISTS crawl_redirects (
    id BIGSERIAL PRIMARY KEY, from_url TEXT NOT NULL, to_url TEXT NOT NULL,
    status INTEGER NOT NULL, at DOUBLE PRECISION NOT NULL
);
CREATE TABLE IF NOT EXISTS crawl_fetches (
    id BIGSERIAL PRIMARY KEY, url TEXT NOT NULL, host TEXT NOT NULL, address TEXT,
    kind TEXT NOT NULL, started DOUBLE PRECISION NOT NULL, took DOUBLE PRECISION NOT NULL,
    status INTEGER, outcome TEXT NOT NULL, delay DOUBLE PRECISION, worker TEXT, epoch BIGINT,
    txid BIGINT NOT NULL DEFAULT (pg_current_xact_id()::text::bigint)
);
CREATE TABLE IF NOT EXISTS crawl_partitions (
    part INTEGER PRIMARY KEY, epoch BIGINT NOT NULL, owner TEXT NOT NULL,
    granted_at DOUBLE PRECISION NOT NULL DEFAULT extract(epoch FROM clock_timestamp())
);
CREATE TABLE IF NOT EXISTS crawl_grants (
    id BIGSERIAL PRIMARY KEY, part INTEGER NOT NULL, epoch BIGINT NOT NULL,
    owner TEXT NOT NULL, at DOUBLE PRECISION NOT NULL
);
CREATE TABLE IF NOT EXISTS crawl_events (
    id BIGSERIAL PRIMARY KEY, url_hash TEXT NOT NULL, key TEXT NOT NULL, event TEXT NOT NULL,
    worker TEXT, epoch BIGINT,
    txid BIGINT NOT NULL DEFAULT (pg_current_xact_id()::text::bigint)
);
CREATE INDEX IF NOT EXISTS crawl_events_url ON crawl_events (url_hash, id);
CREATE INDEX IF NOT EXISTS crawl_events_txid ON crawl_events (txid, id);
CREATE INDEX IF NOT EXISTS crawl_urls_state ON crawl_urls (state, seq);
CREATE INDEX IF NOT EXISTS crawl_urls_part ON crawl_urls (part, state);
CREATE INDEX IF NOT EXISTS crawl_urls_url ON crawl_urls (url);
CREATE INDEX IF NOT EXISTS crawl_urls_host ON crawl_urls (host);
CREATE INDEX IF NOT EXISTS crawl_urls_canonical ON crawl_urls (canonical);
CREATE INDEX IF NOT EXISTS crawl_hosts_part ON crawl_hosts (part);
DO $$ BEGIN  -- a store made before fetch records carried their transaction
    IF NOT EXISTS (SELECT 1 FROM information_schema.columns WHERE table_schema =
                   current_schema() AND table_name = 'crawl_fetches' AND column_name = 'txid')
    THEN ALTER TABLE crawl_fetches
         ADD COLUMN txid BIGINT NOT NULL DEFAULT (pg_current_xact_id()::text::bigint);
    END IF;
END $$;
CREATE INDEX IF NOT EXISTS crawl_fetches_txid ON crawl_fetches (txid);
"""
#: The DDL's last object: the DDL runs in one transaction, so it exists only once all do.
_SCHEMA_MADE = "SELECT to_regclass('crawl_fetches_txid') IS NOT NULL AS made"

_URL_FIELDS = tuple(f.name for f in fields(UrlRecord))
_URL_KNOWN = frozenset(_URL_FIELDS)
_HOST_FIELDS = frozenset(f.name for f in fields(HostRecord))
_URL_COLUMNS = ", ".join(f'"{n}"' for n in _URL_FIELDS)
_URL_MARKS = ", ".join("%s" for _ in _URL_FIELDS)

_COUNT_STATES = "SELECT state, COUNT(*) FROM crawl_urls GROUP BY state"
_COUNT_OUTCOMES = (
    "SELECT outcome, COUNT(*) FROM crawl_urls WHERE outcome IS NOT NULL GROUP BY outcome"
)
_COUNT_CUTS = "SELECT rule, COUNT(*) FROM crawl_cuts GROUP BY rule"
_BUDGET = "SELECT host, SUM(admitted) FROM crawl_host_budget WHERE cycle = %s GROUP BY host"
#: Host rows with their counters summed from the append-only counts (see the module doc).
_HOSTS = (
    "SELECT h.*, COALESCE(c.admitted, 0) AS admitted, COALESCE(c.fetched, 0) AS fetched, "
    "COALESCE(c.errors, 0) AS errors, COALESCE(c.backoffs, 0) AS backoffs FROM crawl_hosts h "
    "LEFT JOIN (SELECT host, "
    + ", ".join(f"SUM(n) FILTER (WHERE counter = '{k}') AS {k}" for k in HOST_COUNTERS)
    + " FROM crawl_host_counts GROUP BY host) c ON c.host = h.host"
)


def _url(row: dict[str, Any]) -> UrlRecord:
    values = {k: v for k, v in row.items() if k in _URL_KNOWN}
    if values.get("minhash") is not None:
        values["minhash"] = bytes(values["minhash"])
    return UrlRecord(**values)


def _host(row: dict[str, Any]) -> HostRecord:
    return HostRecord(**{k: v for k, v in row.items() if k in _HOST_FIELDS})


def _fetch(row: dict[str, Any]) -> FetchRecord:
    return FetchRecord(
        row["url"], row["host"], row["address"], row["kind"], row["started"], row["took"],
        row["status"], row["outcome"], row["delay"],
    )  # fmt: skip


def _cut(row: dict[str, Any]) -> CutRecord:
    return CutRecord(row["url"], row["host"], row["rule"], row["detail"] or "", row["at"])


def _counts(rows: Sequence[dict[str, Any]]) -> dict[str, int]:
    return {str(v[0]): int(v[1]) for v in (tuple(r.values()) for r in rows)}


class _Queries:
    """The read queries the writer and the reader share (one SQL text each)."""

    _pool: PgPool
    _conn: psycopg.Connection[Any] | None = None

    @contextlib.contextmanager
    def _cursor(self) -> Iterator[psycopg.Cursor[dict[str, Any]]]:
        if self._conn is not None:  # inside the writer's transaction
            with self._conn.cursor(row_factory=dict_row) as cur:
                yield cur
            return
        with self._pool.connection() as conn, conn.cursor(row_factory=dict_row) as cur:
            yield cur

    def _rows(self, sql: str, args: Sequence[Any] = ()) -> list[dict[str, Any]]:
        try:
            with self._cursor() as cur:
                cur.execute(sql, args)  # type: ignore[arg-type]
                return cur.fetchall()
        except psycopg.errors.UndefinedTable as exc:
            raise CrawlStateError(f"no crawl state in this database: {exc}") from exc

    def meta(self) -> dict[str, Any]:
        return {r["key"]: json.loads(r["value"]) for r in self._rows("SELECT * FROM crawl_meta")}

    def count_states(self) -> dict[str, int]:
        return _counts(self._rows(_COUNT_STATES))

    def count_outcomes(self) -> dict[str, int]:
        return _counts(self._rows(_COUNT_OUTCOMES))

    def count_cuts(self) -> dict[str, int]:
        return _counts(self._rows(_COUNT_CUTS))

    def count_duplicate_kinds(self) -> dict[str, int]:
        return _counts(
            self._rows(
                "SELECT dup_kind, COUNT(*) FROM crawl_urls WHERE outcome = 'duplicate' "
                "GROUP BY dup_kind"
            )
        )

    def count_cycles(self) -> int:
        return int(self._rows("SELECT COUNT(*) AS n FROM crawl_cycles")[0]["n"] or 1)

    def count_requests(self) -> tuple[int, int]:
        row = self._rows(
            "SELECT COUNT(*) AS n, COUNT(*) FILTER (WHERE kind = 'robots') AS r FROM crawl_fetches"
        )[0]
        return int(row["n"]), int(row["r"])

    def count_pages(self, since: float | None = None) -> int:
        sql = (
            "SELECT COUNT(*) AS n FROM crawl_fetches WHERE kind NOT IN ('robots', 'probe') "
            "AND status IS NOT NULL AND status NOT IN (429, 503) AND NOT (outcome = ANY(%s))"
        )
        args: list[Any] = [list(ANSWER_FAILURES)]
        if since is not None:
            sql += " AND started >= %s"
            args.append(since)
        return int(self._rows(sql, args)[0]["n"])

    def budget_used(self, cycle: int) -> dict[str, int]:
        return _counts(self._rows(_BUDGET, (cycle,)))

    def hosts(self) -> list[HostRecord]:
        return [_host(r) for r in self._rows(f"{_HOSTS} ORDER BY h.host")]

    def host_queues(self) -> dict[str, dict[str, int]]:
        out: dict[str, dict[str, int]] = {}
        for r in self._rows(
            "SELECT host, state, COUNT(*) AS n FROM crawl_urls "
            "WHERE state IN ('queued', 'leased') GROUP BY host, state"
        ):
            out.setdefault(r["host"], {})[r["state"]] = int(r["n"])
        return out

    def last_fetches(self) -> dict[str, FetchRecord]:
        rows = self._rows("SELECT DISTINCT ON (host) * FROM crawl_fetches ORDER BY host, id DESC")
        return {r["host"]: _fetch(r) for r in rows}

    def host_probes(self) -> list[HostRecord]:
        rows = self._rows(f"{_HOSTS} WHERE h.probe_status IS NOT NULL ORDER BY h.host")
        return [_host(r) for r in rows]

    def urls_with_outcome(self, outcome: str) -> list[UrlRecord]:
        rows = self._rows("SELECT * FROM crawl_urls WHERE outcome = %s ORDER BY seq", (outcome,))
        return [_url(r) for r in rows]

    def duplicates(self) -> list[UrlRecord]:
        rows = self._rows(
            "SELECT * FROM crawl_urls WHERE outcome = 'duplicate' AND dup_of IS NOT NULL "
            "ORDER BY seq"
        )
        return [_url(r) for r in rows]

    def blocked(self) -> list[UrlRecord]:
        rows = self._rows("SELECT * FROM crawl_urls WHERE state = 'blocked' ORDER BY seq")
        return [_url(r) for r in rows]

    def waiting_on_robots(self) -> list[tuple[str, str | None, int | None]]:
        rows = self._rows(
            "SELECT u.url, h.robots_reason, h.robots_status FROM crawl_urls u JOIN crawl_hosts h "
            "ON u.host = h.host WHERE u.state = 'queued' AND h.robots_state = 'disallow-all' "
            "ORDER BY u.seq"
        )
        return [(r["url"], r["robots_reason"], r["robots_status"]) for r in rows]

    def stored_pages(self) -> list[str]:
        rows = self._rows(
            "SELECT url FROM crawl_urls WHERE storage_key IS NOT NULL "
            "AND outcome IN ('ok', 'duplicate', 'unchanged') ORDER BY seq"
        )
        return [r["url"] for r in rows]

    def cuts(self, rule: str | None = None) -> list[CutRecord]:
        if rule is None:
            return [_cut(r) for r in self._rows("SELECT * FROM crawl_cuts ORDER BY id")]
        rows = self._rows("SELECT * FROM crawl_cuts WHERE rule = %s ORDER BY id", (rule,))
        return [_cut(r) for r in rows]

    def fetch_log(self, order: Literal["id", "started"] = "id") -> list[FetchRecord]:
        if order not in ("id", "started"):
            raise ValueError(f"order must be 'id' or 'started', not {order!r}")
        return [_fetch(r) for r in self._rows(f"SELECT * FROM crawl_fetches ORDER BY {order}, id")]

    # -- the fleet's own questions ---------------------------------------------------
    def partition_epochs(self) -> dict[int, tuple[int, str]]:
        """Each granted partition's current epoch and owner."""
        rows = self._rows("SELECT part, epoch, owner FROM crawl_partitions ORDER BY part")
        return {int(r["part"]): (int(r["epoch"]), r["owner"]) for r in rows}

    def grants(self) -> list[tuple[int, int, str, float]]:
        """Every grant ever recorded, in order: (partition, epoch, owner, wall time)."""
        rows = self._rows("SELECT part, epoch, owner, at FROM crawl_grants ORDER BY id")
        return [(int(r["part"]), int(r["epoch"]), r["owner"], float(r["at"])) for r in rows]

    def last_fetch_by_worker(self) -> dict[str, float]:
        """Each worker's latest request (its start, wall time): when it was last seen."""
        rows = self._rows(
            "SELECT worker, MAX(started) AS at FROM crawl_fetches "
            "WHERE worker IS NOT NULL GROUP BY worker"
        )
        return {r["worker"]: float(r["at"]) for r in rows}

    def fleet_fetches(self) -> list[tuple[str, str, float, str | None, int | None]]:
        """(url, kind, started, worker, epoch) of every request, in order."""
        rows = self._rows(
            "SELECT url, kind, started, worker, epoch FROM crawl_fetches ORDER BY started, id"
        )
        return [(r["url"], r["kind"], r["started"], r["worker"], r["epoch"]) for r in rows]

    def outbox_since(self, cursor: int) -> tuple[list[str], int]:
        """The outbox's event lines written by transactions from ``cursor`` (a transaction
        id) up to the oldest one still open, in transaction order, and the next cursor.

        Every transaction below the snapshot's xmin has ended, so a row is returned by
        exactly one call of a chain ``c0 → c1 → …``; two writes of one partition are in
        commit order (the fence's row lock serialises them).
        """
        nxt = int(
            self._rows("SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint AS x")[0]["x"]
        )
        rows = self._rows(
            "SELECT event FROM crawl_events WHERE txid >= %s AND txid < %s ORDER BY txid, id",
            (cursor, nxt),
        )
        return [r["event"] for r in rows], max(cursor, nxt)

    def outbox_rows(self) -> list[tuple[str, str, int | None]]:
        """(event line, worker, epoch) of every outbox row, for audits."""
        rows = self._rows("SELECT event, worker, epoch FROM crawl_events ORDER BY txid, id")
        return [(r["event"], r["worker"], r["epoch"]) for r in rows]


class PgCrawlStore(_Queries):
    """The crawl loop's writer over a PostgreSQL database (tables made on open).

    One transaction at a time per store object (the crawl loop's transactions never
    await), on a pooled connection; ``worker`` names the writer in the fetch log.
    """

    def __init__(
        self, url: str, *, partitions: int = 256, worker: str = "", idle_timeout_ms: int = 2000
    ) -> None:
        self.dsn = url
        self.idle_timeout_ms = idle_timeout_ms
        self.partitions = partitions
        self.worker = worker
        self._pool = PgPool(url, what="the crawl store", max_size=4)
        self._conn = None
        # Only the first opener runs the DDL: its CREATE INDEX … IF NOT EXISTS statements
        # lock the tables running workers write, in an order that can deadlock with their
        # commits (a worker joining a running fleet died of "deadlock detected").
        if not self._rows(_SCHEMA_MADE)[0]["made"]:
            ensure_schema(url, "lookup-crawl-store", DDL, "the crawl store")

    def close(self) -> None:
        self._pool.close()

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        """One atomic transaction, fenced by :data:`current_fence` (nested calls join)."""
        if self._conn is not None:
            yield
            return
        fence = current_fence.get()
        with self._pool.transaction() as conn:
            self._conn = conn
            try:
                # A writer frozen (SIGSTOP) inside a transaction must not hold its locks for
                # ever — the partition row's, or (unfenced: the frontier's state) its hosts'
                # rows, which the new owner writes: the server ends it after this long.
                conn.execute(
                    "SELECT set_config('idle_in_transaction_session_timeout', %s, true)",
                    (f"{self.idle_timeout_ms}ms",),
                )
                if fence is not None:
                    self._check(conn, fence)
                yield
            finally:
                self._conn = None

    @staticmethod
    def _check(conn: psycopg.Connection[Any], fence: Fence) -> None:
        row = conn.execute(
            "SELECT epoch, owner FROM crawl_partitions WHERE part = %s FOR SHARE",
            (fence.partition,),
        ).fetchone()
        if row is None or int(row[0]) != fence.epoch:
            raise FencedOut(fence, None if row is None else int(row[0]), row and row[1])

    def _exec(self, sql: str, args: Sequence[Any] = ()) -> int:
        with self.transaction():
            assert self._conn is not None
            return self._conn.execute(sql, args).rowcount  # type: ignore[arg-type]

    def _set(self, table: str, key: str, value: str, changes: dict[str, Any]) -> None:
        sets = ", ".join(f'"{k}" = %s' for k in changes)
        self._exec(f"UPDATE {table} SET {sets} WHERE {key} = %s", (*changes.values(), value))

    # -- meta ----------------------------------------------------------------------------
    def get_meta(self, key: str, default: Any = None) -> Any:
        rows = self._rows("SELECT value FROM crawl_meta WHERE key = %s", (key,))
        return json.loads(rows[0]["value"]) if rows else default

    def set_meta(self, key: str, value: Any) -> None:
        self._exec(
            "INSERT INTO crawl_meta(key, value) VALUES (%s, %s) "
            "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            (key, json.dumps(value)),
        )

    def set_meta_once(self, key: str, value: Any) -> Any:
        """Set ``key`` unless some writer already did; the value that holds now."""
        self._exec(
            "INSERT INTO crawl_meta(key, value) VALUES (%s, %s) ON CONFLICT (key) DO NOTHING",
            (key, json.dumps(value)),
        )
        return self.get_meta(key)

    # -- the URL store -------------------------------------------------------------------
    def insert_url(self, record: UrlRecord, *, if_absent: bool) -> bool:
        """Insert a URL; True when inserted. ``if_absent=False`` raises on a known hash."""
        tail = " ON CONFLICT (url_hash) DO NOTHING" if if_absent else ""
        sql = f"INSERT INTO crawl_urls ({_URL_COLUMNS}) VALUES ({_URL_MARKS}){tail}"
        return self._exec(sql, tuple(vars(record).values())) == 1

    def url(self, url_hash: str) -> UrlRecord | None:  # type: ignore[override]
        rows = self._rows("SELECT * FROM crawl_urls WHERE url_hash = %s", (url_hash,))
        return _url(rows[0]) if rows else None

    def url_exists(self, url_hash: str) -> bool:
        return bool(self._rows("SELECT 1 FROM crawl_urls WHERE url_hash = %s", (url_hash,)))

    def iter_url_hashes(self) -> Iterator[str]:
        for r in self._rows("SELECT url_hash FROM crawl_urls"):
            yield r["url_hash"]

    def max_seq(self) -> int:
        return int(self._rows("SELECT COALESCE(MAX(seq), 0) AS m FROM crawl_urls")[0]["m"])

    def lease_url(self, url_hash: str, until: float) -> None:
        self._set("crawl_urls", "url_hash", url_hash, {"state": "leased", "lease_until": until})

    def settle_url(
        self, url_hash: str, state: str, outcome: str, reason: str | None = None
    ) -> None:
        changes: dict[str, Any] = {"state": state, "outcome": outcome}
        if reason is not None:
            changes["reason"] = reason
        self._set("crawl_urls", "url_hash", url_hash, changes)

    def names_canonical(self, url: str) -> bool:
        q = "SELECT 1 FROM crawl_urls WHERE canonical = %s AND url != %s LIMIT 1"
        return bool(self._rows(q, (url, url)))

    def promote(self, url_hash: str) -> None:
        self._set("crawl_urls", "url_hash", url_hash, {"outcome": "ok", "reason": None})

    def supersede(self, url_hash: str, kind: str, by_url: str, score: float | None) -> None:
        reason = f"duplicate of {by_url}, its cluster's canonical URL"
        self._exec(
            "UPDATE crawl_urls d SET dup_of = %s, "
            "dup_kind = CASE WHEN d.content_hash = o.content_hash THEN %s::text "
            "ELSE d.dup_kind END, "
            "dup_score = CASE WHEN d.content_hash = o.content_hash THEN %s::double precision "
            "ELSE d.dup_score END "
            "FROM crawl_urls o WHERE o.url_hash = %s AND d.dup_of = o.url "
            "AND d.outcome = 'duplicate' AND d.url != %s",
            (by_url, kind, score, url_hash, by_url),
        )
        changes = {
            "outcome": "duplicate", "dup_of": by_url, "dup_kind": kind, "dup_score": score,
            "reason": reason,
        }  # fmt: skip
        self._set("crawl_urls", "url_hash", url_hash, changes)

    def record_fetched(self, fetched: FetchedUrl) -> None:
        f = fetched.facts
        changes: dict[str, Any] = {
            "http_status": fetched.http_status, "fetched_at": fetched.fetched_at,
            "last_fetch": fetched.last_fetch, "lease_until": None, "state": fetched.state,
            "attempts": fetched.attempts, "outcome": fetched.outcome,
        }  # fmt: skip
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
        self._set("crawl_urls", "url_hash", fetched.url_hash, changes)

    def note_reason(self, url_hash: str, reason: str) -> None:
        self._set("crawl_urls", "url_hash", url_hash, {"reason": reason})

    def set_next_due(self, url_hash: str, when: float | None) -> None:
        self._set("crawl_urls", "url_hash", url_hash, {"next_due": when})

    def set_sitemap_lastmod(self, url_hash: str, lastmod: float) -> None:
        self._set("crawl_urls", "url_hash", url_hash, {"sitemap_lastmod": lastmod})

    def requeue_due(self, url_hash: str, *, level: int, cycle: int) -> None:
        self._set(
            "crawl_urls", "url_hash", url_hash,
            {"state": "queued", "attempts": 0, "level": level, "cycle": cycle},
        )  # fmt: skip

    def readmit_deferred(self, url_hash: str, *, cycle: int, reason: str) -> None:
        self._set(
            "crawl_urls", "url_hash", url_hash,
            {"state": "queued", "outcome": None, "attempts": 0, "cycle": cycle, "reason": reason},
        )  # fmt: skip

    def queued(self) -> list[UrlRecord]:
        rows = self._rows("SELECT * FROM crawl_urls WHERE state = 'queued' ORDER BY seq")
        return [_url(r) for r in rows]

    def release_stale_leases(self) -> int:
        """Every lease back to the queue (the embedded crawl's restart; a fleet worker
        uses :meth:`take_over`, one partition at a time)."""
        return self._exec(
            "UPDATE crawl_urls SET state = 'queued', lease_until = NULL WHERE state = 'leased'"
        )

    def originals(self) -> list[UrlRecord]:
        rows = self._rows(
            "SELECT * FROM crawl_urls "
            "WHERE state = 'done' AND outcome = 'ok' AND content_hash IS NOT NULL"
        )
        return [_url(r) for r in rows]

    def indexed_outcomes(self) -> list[tuple[str, str]]:
        rows = self._rows(
            "SELECT url, outcome FROM crawl_urls WHERE outcome IN ('ok', 'duplicate')"
        )
        return [(r["url"], r["outcome"]) for r in rows]

    def due_for_recrawl(self, now: float, limit: int = 1000) -> list[UrlRecord]:
        rows = self._rows(
            "SELECT * FROM crawl_urls WHERE state = 'done' AND next_due IS NOT NULL "
            "AND next_due <= %s ORDER BY next_due LIMIT %s",
            (now, limit),
        )
        return [_url(r) for r in rows]

    def deferred(self) -> list[UrlRecord]:
        rows = self._rows(
            "SELECT * FROM crawl_urls WHERE state = 'cut' AND outcome = 'trap:host-budget' "
            "ORDER BY seq"
        )
        return [_url(r) for r in rows]

    # -- hosts ---------------------------------------------------------------------------
    def ensure_host(self, host: str, address: str, scheme: str | None = None) -> None:
        self._exec(
            "INSERT INTO crawl_hosts(host, address, scheme, part) VALUES (%s, %s, %s, %s) "
            "ON CONFLICT (host) DO NOTHING",
            (host, address, scheme, partition_of(address, self.partitions)),
        )

    def count_host(self, host: str, counter: HostCounter, by: int = 1) -> None:
        if counter not in HOST_COUNTERS:
            raise ValueError(counter)
        self._exec(
            "INSERT INTO crawl_host_counts(host, counter, n) VALUES (%s, %s, %s)",
            (host, counter, by),
        )

    def set_host_pause(self, host: str, pause: HostPause) -> None:
        self._set(
            "crawl_hosts", "host", host,
            {"last_delay": pause.last_delay, "ready_at": pause.ready_at},
        )  # fmt: skip

    def record_robots(
        self, host: str, robots: RobotsRecord, pause: HostPause, probe_url: str | None
    ) -> None:
        self._set(
            "crawl_hosts", "host", host,
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
        self._set("crawl_hosts", "host", host, changes)

    def write_frontier_state(self, states: list[FrontierHostState]) -> None:
        """The frontier's per-host state, in one transaction (unfenced: a view, not truth)."""
        token = current_fence.set(None)
        try:
            # One statement, not executemany: after psycopg's pipelined executemany the
            # server does not arm the idle timeout (a frozen writer kept the rows locked).
            with self.transaction():
                assert self._conn is not None
                self._conn.execute(
                    "UPDATE crawl_hosts h SET ready_at = s.ready_at, queue = s.queue, "
                    "in_flight = s.in_flight, waiting_robots = s.waiting_robots, "
                    "state_at = s.state_at FROM unnest(%s::float8[], %s::int[], %s::int[], "
                    "%s::int[], %s::float8[], %s::text[]) "
                    "AS s(ready_at, queue, in_flight, waiting_robots, state_at, host) "
                    "WHERE h.host = s.host",
                    [
                        [s.ready_at for s in states], [s.queue for s in states],
                        [s.in_flight for s in states], [s.waiting_robots for s in states],
                        [s.state_at for s in states], [s.host for s in states],
                    ],
                )  # fmt: skip
        except psycopg.Error as exc:
            raise CrawlStateError(str(exc)) from exc
        finally:
            current_fence.reset(token)

    # -- cycles and budgets ---------------------------------------------------------------
    def add_cycle(self, cycle: CycleRecord) -> None:
        """Record a cycle (a second writer recording the same one changes nothing)."""
        self._exec(
            "INSERT INTO crawl_cycles(n, started_at, reason) VALUES (%s, %s, %s) "
            "ON CONFLICT (n) DO NOTHING",
            (cycle.n, cycle.started_at, cycle.reason),
        )

    def cycles(self) -> list[CycleRecord]:
        rows = self._rows("SELECT n, started_at, reason FROM crawl_cycles ORDER BY n")
        return [CycleRecord(r["n"], r["started_at"], r["reason"]) for r in rows]

    def bump_budget(self, host: str, cycle: int, by: int = 1) -> None:
        self._exec(
            "INSERT INTO crawl_host_budget(host, cycle, admitted) VALUES (%s, %s, %s)",
            (host, cycle, by),
        )

    # -- cuts, redirects, the fetch log ----------------------------------------------------
    def add_cut(self, cut: CutRecord) -> None:
        self._exec(
            "INSERT INTO crawl_cuts(url, host, rule, detail, at) VALUES (%s, %s, %s, %s, %s)",
            (cut.url, cut.host, cut.rule, cut.detail, cut.at),
        )

    def add_redirect(self, redirect: RedirectRecord) -> None:
        self._exec(
            "INSERT INTO crawl_redirects(from_url, to_url, status, at) VALUES (%s, %s, %s, %s)",
            (redirect.from_url, redirect.to_url, redirect.status, redirect.at),
        )

    def add_fetch(self, fetch: FetchRecord) -> None:
        fence = current_fence.get()
        self._exec(
            "INSERT INTO crawl_fetches (url, host, address, kind, started, took, status, "
            "outcome, delay, worker, epoch) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
            (
                fetch.url, fetch.host, fetch.address, fetch.kind, fetch.started, fetch.took,
                fetch.status, fetch.outcome, fetch.delay, self.worker or None,
                fence.epoch if fence is not None else None,
            ),
        )  # fmt: skip

    def add_events(self, events: Sequence[dict[str, Any]]) -> int:
        """Put a page's events into the outbox, inside the caller's (fenced) commit, so
        a fenced-out writer's event is never recorded. An event equal to the URL's last
        one (same type and content hash / reason: a refetch after a takeover) is skipped;
        a change is a new row. Returns how many rows were written."""
        fence = current_fence.get()
        written = 0
        for event in events:
            check_event(event)
            key = f"{event['type']}:{event.get('contentHash') or event.get('reason', '')}"
            written += self._exec(
                "INSERT INTO crawl_events (url_hash, key, event, worker, epoch) "
                "SELECT %s, %s, %s, %s, %s WHERE (SELECT key FROM crawl_events "
                "WHERE url_hash = %s ORDER BY id DESC LIMIT 1) IS DISTINCT FROM %s",
                (
                    event["urlHash"], key, json.dumps(event, separators=(",", ":")),
                    self.worker or None, fence.epoch if fence is not None else None,
                    event["urlHash"], key,
                ),
            )  # fmt: skip
        return written

    # -- partitions: grants, takeover, pick-up ------------------------------------------------
    def grant_partition(self, part: int, epoch: int, owner: str, at: float) -> bool | None:
        """Record ``owner``'s grant of ``part`` at ``epoch``; False if another is stored
        (a newer epoch; the same grant again, after etcd came back, is True); None while
        an old writer's transaction still locks the partition (ask again)."""
        token = current_fence.set(None)
        try:
            with self.transaction():
                assert self._conn is not None
                self._conn.execute("SET LOCAL lock_timeout = '4s'")  # a frozen old writer
                row = self._conn.execute(
                    "INSERT INTO crawl_partitions(part, epoch, owner, granted_at) "
                    "VALUES (%s, %s, %s, %s) ON CONFLICT (part) DO UPDATE "
                    "SET epoch = excluded.epoch, owner = excluded.owner, "
                    "granted_at = excluded.granted_at "
                    "WHERE crawl_partitions.epoch < excluded.epoch RETURNING part",
                    (part, epoch, owner, at),
                ).fetchone()
                if row is not None:
                    self._conn.execute(
                        "INSERT INTO crawl_grants(part, epoch, owner, at) VALUES (%s, %s, %s, %s)",
                        (part, epoch, owner, at),
                    )
                    return True
                held = self._conn.execute(
                    "SELECT epoch, owner FROM crawl_partitions WHERE part = %s", (part,)
                ).fetchone()
                return held is not None and (int(held[0]), held[1]) == (epoch, owner)
        except psycopg.errors.LockNotAvailable:
            return None
        finally:
            current_fence.reset(token)

    def take_over(self, part: int) -> int:
        """The partition's URLs in flight go back to its queue (run under its new fence).

        Their holder's epoch is refused from now on, so none of them can be completed by
        it: they are queued again at once, not after their lease time.
        """
        return self._exec(
            "UPDATE crawl_urls SET state = 'queued', lease_until = NULL "
            "WHERE part = %s AND state = 'leased'",
            (part,),
        )

    def partition_queue(self, part: int) -> list[UrlRecord]:
        """The queued URLs of one partition, in discovery order."""
        rows = self._rows(
            "SELECT * FROM crawl_urls WHERE part = %s AND state = 'queued' ORDER BY seq", (part,)
        )
        return [_url(r) for r in rows]

    def partition_hosts(self, part: int) -> list[HostRecord]:
        """The hosts of one partition (robots cache, ready times, probes)."""
        rows = self._rows(f"{_HOSTS} WHERE h.part = %s ORDER BY h.host", (part,))
        return [_host(r) for r in rows]

    def queue_cursor(self) -> int:
        """Where a pick-up poll starts: the oldest transaction still open now."""
        rows = self._rows("SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint AS x")
        return int(rows[0]["x"])

    def queued_since(
        self, parts: Sequence[int], cursor: int
    ) -> tuple[list[tuple[UrlRecord, str]], int]:
        """(URL, its host's address) for the queued URLs of ``parts`` inserted by
        transactions from ``cursor`` on, and the next cursor (rows may repeat across
        polls; the caller skips the ones it holds)."""
        nxt = self.queue_cursor()
        if not parts:
            return [], nxt
        rows = self._rows(
            "SELECT u.*, h.address AS host_address FROM crawl_urls u "
            "JOIN crawl_hosts h ON h.host = u.host WHERE u.part = ANY(%s) "
            "AND u.state = 'queued' AND u.txid >= %s ORDER BY u.seq",
            (list(parts), cursor),
        )
        return [(_url(r), r["host_address"]) for r in rows], nxt

    def pages_fetched_since(
        self, cursor: int, *, not_by: str | None = None
    ) -> tuple[list[tuple[int, UrlRecord]], int]:
        """(fetch id, the URL's row) of each page fetch committed by transactions from
        ``cursor`` on whose URL ended ``ok``, ``duplicate`` or ``soft-404`` (not by worker
        ``not_by``), in commit order, and the next cursor (rows may repeat across polls:
        the caller skips the fetch ids it has)."""
        nxt = self.queue_cursor()
        rows = self._rows(
            "SELECT f.id AS fetch_id, u.* FROM crawl_fetches f JOIN crawl_urls u ON u.url = f.url "
            "WHERE f.txid >= %s AND f.kind = 'page' AND f.worker IS DISTINCT FROM %s "
            "AND u.outcome IN ('ok', 'duplicate', 'soft-404') ORDER BY f.txid, f.id",
            (cursor, not_by),
        )
        return [(int(r["fetch_id"]), _url(r)) for r in rows], nxt

    def open_work(self) -> int:
        """URLs in flight or queued fleet-wide, not counting the ones waiting for a host's
        unreadable robots.txt (the embedded crawl stops with those too)."""
        rows = self._rows(
            "SELECT COUNT(*) AS n FROM crawl_urls u LEFT JOIN crawl_hosts h ON h.host = u.host "
            "WHERE u.state = 'leased' OR (u.state = 'queued' "
            "AND h.robots_state IS DISTINCT FROM 'disallow-all')"
        )
        return int(rows[0]["n"])


class PgCrawlReader(_Queries):
    """Read-only queries over a fleet's crawl state (running or finished)."""

    def __init__(self, url: str) -> None:
        self.dsn = url
        self._pool = PgPool(url, what="the crawl store", max_size=2)
        self._conn = None

    def close(self) -> None:
        self._pool.close()

    def __enter__(self) -> PgCrawlReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def url(self, url: str) -> UrlRecord | None:  # type: ignore[override]
        rows = self._rows("SELECT * FROM crawl_urls WHERE url = %s", (url,))
        return _url(rows[0]) if rows else None
