"""The crawl state in PostgreSQL: the fleet's one durable truth, many writers at once.

The same tables as the embedded SQLite state (:mod:`lookup.crawler.state.sqlite`), named
``crawl_*`` (one crawl per database), asked the same questions
(:mod:`lookup.crawler.state.sql`), plus what a fleet needs:

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

The statements both engines share are :mod:`lookup.crawler.state.sql`'s; this module
holds the schema, how PostgreSQL spells what differs, and the fleet's own statements.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator, Sequence
from typing import Any

import psycopg
from psycopg.rows import dict_row

from lookup.crawler.partitions import Fence, FencedOut, current_fence, partition_of
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
from lookup.crawler.state.sql import (
    CrawlSql,
    Dialect,
    SqlCrawlQueries,
    SqlCrawlWriter,
    host_record,
    url_record,
)
from lookup.kit.crawlevents import check_event
from lookup.kit.engines.postgres import PgPool, ensure_schema
from lookup.kit.engines.storeurl import StoreUrl

__all__ = ["POSTGRES", "PgCrawlReader", "PgCrawlStore"]

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

#: Host rows with their counters summed from the append-only counts (see the module doc).
_HOSTS = (
    "SELECT h.*, COALESCE(c.admitted, 0) AS admitted, COALESCE(c.fetched, 0) AS fetched, "
    "COALESCE(c.errors, 0) AS errors, COALESCE(c.backoffs, 0) AS backoffs FROM crawl_hosts h "
    "LEFT JOIN (SELECT host, "
    + ", ".join(f"SUM(n) FILTER (WHERE counter = '{k}') AS {k}" for k in HOST_COUNTERS)
    + " FROM crawl_host_counts GROUP BY host) c ON c.host = h.host"
)


POSTGRES = Dialect(
    name="postgresql",
    tables={
        "meta": "crawl_meta",
        "urls": "crawl_urls",
        "hosts": "crawl_hosts",
        "cycles": "crawl_cycles",
        "host_budget": "crawl_host_budget",
        "cuts": "crawl_cuts",
        "redirects": "crawl_redirects",
        "fetches": "crawl_fetches",
    },
    host_rows=_HOSTS,
    insert_if_absent=(
        "INSERT INTO {table} ({columns}) VALUES ({values}) ON CONFLICT (url_hash) DO NOTHING"
    ),
)
_SQL = CrawlSql(POSTGRES)


class _PgQueries(SqlCrawlQueries):
    """The shared questions on a pooled connection, and the fleet's own (the writer's and
    the reader's alike)."""

    sql = _SQL
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

    def _rows(self, statement: str, args: Sequence[Any] = ()) -> list[dict[str, Any]]:
        try:
            with self._cursor() as cur:
                cur.execute(statement, args)  # type: ignore[arg-type]
                return cur.fetchall()
        except psycopg.errors.UndefinedTable as exc:
            raise CrawlStateError(f"no crawl state in this database: {exc}") from exc

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


class PgCrawlStore(_PgQueries, SqlCrawlWriter):
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

    @classmethod
    def from_url(cls, url: StoreUrl, **options: Any) -> PgCrawlStore:
        """The crawl state in the database ``url`` names, opened for writing; ``options``:
        ``partitions``, ``worker``, ``idle_timeout_ms``."""
        return cls(url.url, **options)

    @classmethod
    def open_reader(cls, url: StoreUrl) -> PgCrawlReader:
        """The crawl state in the database ``url`` names, opened read-only."""
        return PgCrawlReader(url.url)

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

    def _exec(self, statement: str, args: Sequence[Any] = ()) -> int:
        with self.transaction():
            assert self._conn is not None
            return self._conn.execute(statement, args).rowcount  # type: ignore[arg-type]

    def set_meta_once(self, key: str, value: Any) -> Any:
        """Set ``key`` unless some writer already did; the value that holds now."""
        self._exec(
            "INSERT INTO crawl_meta(key, value) VALUES (%s, %s) ON CONFLICT (key) DO NOTHING",
            (key, json.dumps(value)),
        )
        return self.get_meta(key)

    # -- the URL store -------------------------------------------------------------------
    def supersede(self, url_hash: str, kind: str, by_url: str, score: float | None) -> None:
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
        self._superseded(url_hash, kind, by_url, score)

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

    def bump_budget(self, host: str, cycle: int, by: int = 1) -> None:
        self._exec(
            "INSERT INTO crawl_host_budget(host, cycle, admitted) VALUES (%s, %s, %s)",
            (host, cycle, by),
        )

    # -- the fetch log and the event outbox -------------------------------------------------
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
        return [url_record(r) for r in rows]

    def partition_hosts(self, part: int) -> list[HostRecord]:
        """The hosts of one partition (robots cache, ready times, probes)."""
        rows = self._rows(f"{self.sql.host_rows} WHERE h.part = %s ORDER BY h.host", (part,))
        return [host_record(r) for r in rows]

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
        return [(url_record(r), r["host_address"]) for r in rows], nxt

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
        return [(int(r["fetch_id"]), url_record(r)) for r in rows], nxt

    def open_work(self) -> int:
        """URLs in flight or queued fleet-wide, not counting the ones waiting for a host's
        unreadable robots.txt (the embedded crawl stops with those too)."""
        rows = self._rows(
            "SELECT COUNT(*) AS n FROM crawl_urls u LEFT JOIN crawl_hosts h ON h.host = u.host "
            "WHERE u.state = 'leased' OR (u.state = 'queued' "
            "AND h.robots_state IS DISTINCT FROM 'disallow-all')"
        )
        return int(rows[0]["n"])


class PgCrawlReader(_PgQueries):
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

    def url(self, url: str) -> UrlRecord | None:
        """The URL store's record of ``url`` (by its text, as stored)."""
        return self._url_named(url)
