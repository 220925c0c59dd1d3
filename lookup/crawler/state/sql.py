"""The crawl state in SQL, written once for every engine: the statements and the operations
the SQLite and the PostgreSQL backends share.

Both keep the same tables (PostgreSQL names them ``crawl_*``: one crawl per database) and
ask them the same questions; what differs is said by a :class:`Dialect` — the tables'
names, how a host's row is read (PostgreSQL sums its append-only counters), how a URL is
inserted only when new — and :class:`CrawlSql` renders every shared statement for it
once. :class:`SqlCrawlQueries` answers the reader's questions (and the counts the writer
reports), :class:`SqlCrawlWriter` adds the writes both engines spell alike; a backend
gives its connection (``_rows``, ``_exec``, ``transaction``) and the writes that differ
(a fleet's partitions, fences and append-only counters on PostgreSQL).

This module imports no driver: a row is anything with ``keys()`` and ``row[name]``
(``sqlite3.Row``, psycopg's dict rows).
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, fields
from typing import Any, ClassVar, Literal, Protocol, TypeVar

from lookup.crawler.state import (
    ANSWER_FAILURES,
    CutRecord,
    CycleRecord,
    FetchedUrl,
    FetchRecord,
    HostPause,
    HostRecord,
    ProbeAnswer,
    RedirectRecord,
    RobotsRecord,
    UrlRecord,
)
from lookup.kit.engines.dialects import SqlDialect

__all__ = [
    "TABLES",
    "URL_FIELDS",
    "CrawlSql",
    "Dialect",
    "Row",
    "SqlCrawlQueries",
    "SqlCrawlWriter",
    "counts",
    "cut_record",
    "fetch_record",
    "host_record",
    "url_record",
]

#: The tables both engines keep, by the names the statements give them.
TABLES = ("meta", "urls", "hosts", "cycles", "host_budget", "cuts", "redirects", "fetches")
#: The URL store's columns, in :class:`UrlRecord`'s order.
URL_FIELDS = tuple(f.name for f in fields(UrlRecord))
_URL_KNOWN = frozenset(URL_FIELDS)
_HOST_FIELDS = frozenset(f.name for f in fields(HostRecord))

R = TypeVar("R")


class Row(Protocol):
    """A result row: its column names, and a value by name."""

    def keys(self) -> Iterable[str]: ...

    def __getitem__(self, key: str, /) -> Any: ...


def _record(cls: type[R], row: Row, known: frozenset[str]) -> R:
    """A row as a record; columns an older crawl database lacks keep their defaults."""
    return cls(**{k: row[k] for k in row.keys() if k in known})  # noqa: SIM118


def url_record(row: Row) -> UrlRecord:
    """A ``urls`` row as a :class:`UrlRecord` (the MinHash as ``bytes``)."""
    record = _record(UrlRecord, row, _URL_KNOWN)
    if record.minhash is not None and not isinstance(record.minhash, bytes):
        record.minhash = bytes(record.minhash)  # PostgreSQL's BYTEA comes as a memoryview
    return record


def host_record(row: Row) -> HostRecord:
    """A host row (with its counters) as a :class:`HostRecord`."""
    return _record(HostRecord, row, _HOST_FIELDS)


def fetch_record(row: Row) -> FetchRecord:
    """A ``fetches`` row as a :class:`FetchRecord`."""
    return FetchRecord(
        row["url"], row["host"], row["address"], row["kind"], row["started"], row["took"],
        row["status"], row["outcome"], row["delay"],
    )  # fmt: skip


def cut_record(row: Row) -> CutRecord:
    """A ``cuts`` row as a :class:`CutRecord`."""
    return CutRecord(row["url"], row["host"], row["rule"], row["detail"] or "", row["at"])


def counts(rows: Iterable[Row]) -> dict[str, int]:
    """``{k: n}`` of rows with the columns ``k`` and ``n``."""
    return {str(r["k"]): int(r["n"]) for r in rows}


@dataclass(frozen=True)
class Dialect(SqlDialect):
    """How one engine spells what differs in the crawl state's shared statements (its
    placeholder and "any of a list" are :class:`SqlDialect`'s)."""

    #: The name of each of :data:`TABLES` in this engine's database.
    tables: Mapping[str, str]
    #: ``SELECT … FROM <hosts> h``: each host's row with its counters (a statement adds
    #: ``WHERE``/``ORDER BY`` on ``h``).
    host_rows: str
    #: An insert that does nothing when the key is taken, with ``{table}``, ``{columns}``
    #: and ``{values}`` to fill in.
    insert_if_absent: str


class CrawlSql:
    """Every shared statement of the crawl state, rendered once for one :class:`Dialect`."""

    def __init__(self, dialect: Dialect) -> None:
        self.dialect = dialect
        self._updates: dict[tuple[str, str, tuple[str, ...]], str] = {}
        b = dialect.bind
        t = dialect.tables
        meta, urls, hosts, cycles = t["meta"], t["urls"], t["hosts"], t["cycles"]
        budget, cuts, redirects, fetches = t["host_budget"], t["cuts"], t["redirects"], t["fetches"]
        columns = ", ".join(f'"{n}"' for n in URL_FIELDS)
        values = ", ".join("?" for _ in URL_FIELDS)
        self.host_rows = dialect.host_rows
        # -- what the readers ask (and the writer's counts)
        self.meta = f"SELECT key, value FROM {meta}"
        self.count_states = f"SELECT state AS k, COUNT(*) AS n FROM {urls} GROUP BY state"
        self.count_outcomes = (
            f"SELECT outcome AS k, COUNT(*) AS n FROM {urls} WHERE outcome IS NOT NULL "
            "GROUP BY outcome"
        )
        self.count_duplicate_kinds = (
            f"SELECT dup_kind AS k, COUNT(*) AS n FROM {urls} WHERE outcome = 'duplicate' "
            "GROUP BY dup_kind"
        )
        self.count_cuts = f"SELECT rule AS k, COUNT(*) AS n FROM {cuts} GROUP BY rule"
        self.count_cycles = f"SELECT COUNT(*) AS n FROM {cycles}"
        self.count_requests = (
            "SELECT COUNT(*) AS n, COUNT(CASE WHEN kind = 'robots' THEN 1 END) AS robots "
            f"FROM {fetches}"
        )
        count_pages = (
            f"SELECT COUNT(*) AS n FROM {fetches} WHERE kind NOT IN ('robots', 'probe') "
            "AND status IS NOT NULL AND status NOT IN (429, 503) "
            f"AND NOT ({dialect.any_of.format(column='outcome')})"
        )
        self.count_pages = b(count_pages)
        self.count_pages_since = b(f"{count_pages} AND started >= ?")
        self.budget_used = b(
            f"SELECT host AS k, SUM(admitted) AS n FROM {budget} WHERE cycle = ? GROUP BY host"
        )
        self.hosts = f"{dialect.host_rows} ORDER BY h.host"
        self.host_probes = f"{dialect.host_rows} WHERE h.probe_status IS NOT NULL ORDER BY h.host"
        self.host_queues = (
            f"SELECT host, state, COUNT(*) AS n FROM {urls} "
            "WHERE state IN ('queued', 'leased') GROUP BY host, state"
        )
        self.last_fetches = (
            f"SELECT f.* FROM {fetches} f JOIN "
            f"(SELECT host, MAX(id) AS id FROM {fetches} GROUP BY host) m ON f.id = m.id"
        )
        self.url_named = b(f"SELECT * FROM {urls} WHERE url = ?")
        self.urls_with_outcome = b(f"SELECT * FROM {urls} WHERE outcome = ? ORDER BY seq")
        self.duplicates = (
            f"SELECT * FROM {urls} WHERE outcome = 'duplicate' AND dup_of IS NOT NULL ORDER BY seq"
        )
        self.blocked = f"SELECT * FROM {urls} WHERE state = 'blocked' ORDER BY seq"
        self.waiting_on_robots = (
            f"SELECT u.url, h.robots_reason, h.robots_status FROM {urls} u JOIN {hosts} h "
            "ON u.host = h.host WHERE u.state = 'queued' AND h.robots_state = 'disallow-all' "
            "ORDER BY u.seq"
        )
        self.stored_pages = (
            f"SELECT url FROM {urls} WHERE storage_key IS NOT NULL "
            "AND outcome IN ('ok', 'duplicate', 'unchanged') ORDER BY seq"
        )
        self.cuts = f"SELECT * FROM {cuts} ORDER BY id"
        self.cuts_of_rule = b(f"SELECT * FROM {cuts} WHERE rule = ? ORDER BY id")
        self.fetch_log = {
            "id": f"SELECT * FROM {fetches} ORDER BY id",
            "started": f"SELECT * FROM {fetches} ORDER BY started, id",
        }
        # -- what the writer reads back and writes
        self.get_meta = b(f"SELECT value FROM {meta} WHERE key = ?")
        self.set_meta = b(
            f"INSERT INTO {meta}(key, value) VALUES (?, ?) "
            "ON CONFLICT (key) DO UPDATE SET value = excluded.value"
        )
        self.insert_url = b(f"INSERT INTO {urls} ({columns}) VALUES ({values})")
        self.insert_url_if_absent = b(
            dialect.insert_if_absent.format(table=urls, columns=columns, values=values)
        )
        self.url_hashed = b(f"SELECT * FROM {urls} WHERE url_hash = ?")
        self.url_exists = b(f"SELECT 1 AS found FROM {urls} WHERE url_hash = ?")
        self.url_hashes = f"SELECT url_hash FROM {urls}"
        self.max_seq = f"SELECT COALESCE(MAX(seq), 0) AS m FROM {urls}"
        self.names_canonical = b(
            f"SELECT 1 AS found FROM {urls} WHERE canonical = ? AND url != ? LIMIT 1"
        )
        self.queued = f"SELECT * FROM {urls} WHERE state = 'queued' ORDER BY seq"
        self.release_stale_leases = (
            f"UPDATE {urls} SET state = 'queued', lease_until = NULL WHERE state = 'leased'"
        )
        self.originals = (
            f"SELECT * FROM {urls} "
            "WHERE state = 'done' AND outcome = 'ok' AND content_hash IS NOT NULL"
        )
        self.indexed_outcomes = (
            f"SELECT url, outcome FROM {urls} WHERE outcome IN ('ok', 'duplicate')"
        )
        self.due_for_recrawl = b(
            f"SELECT * FROM {urls} WHERE state = 'done' AND next_due IS NOT NULL "
            "AND next_due <= ? ORDER BY next_due LIMIT ?"
        )
        self.deferred = (
            f"SELECT * FROM {urls} WHERE state = 'cut' AND outcome = 'trap:host-budget' "
            "ORDER BY seq"
        )
        self.cycles = f"SELECT n, started_at, reason FROM {cycles} ORDER BY n"
        self.add_cut = b(f"INSERT INTO {cuts}(url, host, rule, detail, at) VALUES (?, ?, ?, ?, ?)")
        self.add_redirect = b(
            f"INSERT INTO {redirects}(from_url, to_url, status, at) VALUES (?, ?, ?, ?)"
        )

    def update(self, table: str, key: str, columns: Iterable[str]) -> str:
        """``UPDATE`` of ``columns`` in the row of ``table`` (one of :data:`TABLES`) whose
        ``key`` is a parameter after theirs (rendered once per set of columns)."""
        wanted = (table, key, tuple(columns))
        statement = self._updates.get(wanted)
        if statement is None:
            sets = ", ".join(f'"{c}" = ?' for c in wanted[2])
            statement = self.dialect.bind(
                f"UPDATE {self.dialect.tables[table]} SET {sets} WHERE {key} = ?"
            )
            self._updates[wanted] = statement
        return statement


class SqlCrawlQueries(ABC):
    """The questions every crawl state answers alike: the reader's, and the counts and
    host rows the writer reports. A backend gives :attr:`sql` and :meth:`_rows`."""

    sql: ClassVar[CrawlSql]

    @abstractmethod
    def _rows(self, statement: str, args: Sequence[Any] = ()) -> Sequence[Row]:
        """Every row ``statement`` answers."""

    def meta(self) -> dict[str, Any]:
        return {r["key"]: json.loads(r["value"]) for r in self._rows(self.sql.meta)}

    # -- counts --------------------------------------------------------------------------
    def count_states(self) -> dict[str, int]:
        return counts(self._rows(self.sql.count_states))

    def count_outcomes(self) -> dict[str, int]:
        return counts(self._rows(self.sql.count_outcomes))

    def count_duplicate_kinds(self) -> dict[str, int]:
        return counts(self._rows(self.sql.count_duplicate_kinds))

    def count_cuts(self) -> dict[str, int]:
        return counts(self._rows(self.sql.count_cuts))

    def count_cycles(self) -> int:
        return int(self._rows(self.sql.count_cycles)[0]["n"] or 1)

    def count_requests(self) -> tuple[int, int]:
        """Every request made, and how many of them were for robots.txt."""
        row = self._rows(self.sql.count_requests)[0]
        return int(row["n"]), int(row["robots"])

    def count_pages(self, since: float | None = None) -> int:
        """Page fetches that got an HTTP answer (not 429/503), optionally since a wall time."""
        failures = self.sql.dialect.array(ANSWER_FAILURES)
        if since is None:
            return int(self._rows(self.sql.count_pages, (failures,))[0]["n"])
        return int(self._rows(self.sql.count_pages_since, (failures, since))[0]["n"])

    def budget_used(self, cycle: int) -> dict[str, int]:
        """Pages admitted per host in ``cycle``."""
        return counts(self._rows(self.sql.budget_used, (cycle,)))

    # -- hosts ---------------------------------------------------------------------------
    def hosts(self) -> list[HostRecord]:
        return [host_record(r) for r in self._rows(self.sql.hosts)]

    def host_queues(self) -> dict[str, dict[str, int]]:
        """Per host, how many URLs are ``queued`` and ``leased``."""
        out: dict[str, dict[str, int]] = {}
        for r in self._rows(self.sql.host_queues):
            out.setdefault(r["host"], {})[r["state"]] = int(r["n"])
        return out

    def last_fetches(self) -> dict[str, FetchRecord]:
        """Each host's latest request."""
        return {r["host"]: fetch_record(r) for r in self._rows(self.sql.last_fetches)}

    def host_probes(self) -> list[HostRecord]:
        """Hosts whose soft-404 probe was answered, by host."""
        return [host_record(r) for r in self._rows(self.sql.host_probes)]

    # -- URLs ----------------------------------------------------------------------------
    def _url_named(self, url: str) -> UrlRecord | None:
        rows = self._rows(self.sql.url_named, (url,))
        return url_record(rows[0]) if rows else None

    def _urls(self, statement: str, args: Sequence[Any] = ()) -> list[UrlRecord]:
        return [url_record(r) for r in self._rows(statement, args)]

    def urls_with_outcome(self, outcome: str) -> list[UrlRecord]:
        return self._urls(self.sql.urls_with_outcome, (outcome,))

    def duplicates(self) -> list[UrlRecord]:
        """Every page found to duplicate another (``dup_of`` set), in crawl order."""
        return self._urls(self.sql.duplicates)

    def blocked(self) -> list[UrlRecord]:
        """Every URL robots.txt kept the crawl from, with the decision that did it."""
        return self._urls(self.sql.blocked)

    def waiting_on_robots(self) -> list[tuple[str, str | None, int | None]]:
        """Queued URLs whose host's robots.txt is unreadable: (url, reason, status)."""
        rows = self._rows(self.sql.waiting_on_robots)
        return [(r["url"], r["robots_reason"], r["robots_status"]) for r in rows]

    def stored_pages(self) -> list[str]:
        """URLs whose copy is in the crawl's WARC files, in crawl order."""
        return [r["url"] for r in self._rows(self.sql.stored_pages)]

    # -- cuts and the fetch log ------------------------------------------------------------
    def cuts(self, rule: str | None = None) -> list[CutRecord]:
        if rule is None:
            return [cut_record(r) for r in self._rows(self.sql.cuts)]
        return [cut_record(r) for r in self._rows(self.sql.cuts_of_rule, (rule,))]

    def fetch_log(self, order: Literal["id", "started"] = "id") -> list[FetchRecord]:
        if order not in ("id", "started"):
            raise ValueError(f"order must be 'id' or 'started', not {order!r}")
        return [fetch_record(r) for r in self._rows(self.sql.fetch_log[order])]


class SqlCrawlWriter(SqlCrawlQueries):
    """The crawl loop's writes both engines spell alike. A backend adds
    :meth:`transaction`, :meth:`_exec` and the writes that differ (``supersede``,
    ``ensure_host``, ``count_host``, ``write_frontier_state``, ``add_cycle``,
    ``bump_budget``, ``add_fetch``)."""

    @abstractmethod
    def transaction(self) -> AbstractContextManager[None]:
        """One atomic unit of writes (nested calls join the outer one)."""

    @abstractmethod
    def _exec(self, statement: str, args: Sequence[Any] = ()) -> int:
        """Run one write; how many rows it changed."""

    def _set(self, table: str, key: str, value: str, changes: dict[str, Any]) -> None:
        self._exec(self.sql.update(table, key, changes), (*changes.values(), value))

    # -- meta ------------------------------------------------------------------------
    def get_meta(self, key: str, default: Any = None) -> Any:
        rows = self._rows(self.sql.get_meta, (key,))
        return json.loads(rows[0]["value"]) if rows else default

    def set_meta(self, key: str, value: Any) -> None:
        self._exec(self.sql.set_meta, (key, json.dumps(value)))

    # -- the URL store -----------------------------------------------------------------
    def insert_url(self, record: UrlRecord, *, if_absent: bool) -> bool:
        """Insert a URL; returns True when inserted (False: the hash was known).

        ``if_absent=False`` is the Bloom filter's "definitely new" path: a conflict
        there would be a bug, and raises.
        """
        statement = self.sql.insert_url_if_absent if if_absent else self.sql.insert_url
        return self._exec(statement, tuple(vars(record).values())) == 1

    def url(self, url_hash: str) -> UrlRecord | None:
        rows = self._rows(self.sql.url_hashed, (url_hash,))
        return url_record(rows[0]) if rows else None

    def url_exists(self, url_hash: str) -> bool:
        return bool(self._rows(self.sql.url_exists, (url_hash,)))

    def iter_url_hashes(self) -> Iterator[str]:
        for r in self._rows(self.sql.url_hashes):
            yield r["url_hash"]

    def max_seq(self) -> int:
        return int(self._rows(self.sql.max_seq)[0]["m"])

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
        return bool(self._rows(self.sql.names_canonical, (url, url)))

    def promote(self, url_hash: str) -> None:
        self._set("urls", "url_hash", url_hash, {"outcome": "ok", "reason": None})

    def _superseded(self, url_hash: str, kind: str, by_url: str, score: float | None) -> None:
        """The original itself becomes a ``kind`` duplicate of ``by_url`` (``supersede``
        moves its cluster first, in the engine's own statement)."""
        changes = {
            "outcome": "duplicate", "dup_of": by_url, "dup_kind": kind, "dup_score": score,
            "reason": f"duplicate of {by_url}, its cluster's canonical URL",
        }  # fmt: skip
        self._set("urls", "url_hash", url_hash, changes)

    def record_fetched(self, fetched: FetchedUrl) -> None:
        """Store what one fetch did to its URL (the facts left None keep their values)."""
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

    # -- what --resume and the recrawl read back ---------------------------------------------
    def queued(self) -> list[UrlRecord]:
        """Every queued URL in discovery order (to rebuild the frontier)."""
        return self._urls(self.sql.queued)

    def release_stale_leases(self) -> int:
        """Every lease back to the queue: the crawler that held them is gone."""
        return self._exec(self.sql.release_stale_leases)

    def originals(self) -> list[UrlRecord]:
        """Pages indexed as originals (to rebuild the duplicate detector)."""
        return self._urls(self.sql.originals)

    def indexed_outcomes(self) -> list[tuple[str, str]]:
        """(url, outcome) of every page fetched as an original or a duplicate (trap memory)."""
        return [(r["url"], r["outcome"]) for r in self._rows(self.sql.indexed_outcomes)]

    def due_for_recrawl(self, now: float, limit: int = 1000) -> list[UrlRecord]:
        return self._urls(self.sql.due_for_recrawl, (now, limit))

    def deferred(self) -> list[UrlRecord]:
        """URLs refused because their host's budget was spent: they wait for a new cycle."""
        return self._urls(self.sql.deferred)

    # -- hosts -----------------------------------------------------------------------
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

    # -- cycles, cuts, redirects ---------------------------------------------------------
    def cycles(self) -> list[CycleRecord]:
        rows = self._rows(self.sql.cycles)
        return [CycleRecord(r["n"], r["started_at"], r["reason"]) for r in rows]

    def add_cut(self, cut: CutRecord) -> None:
        self._exec(self.sql.add_cut, (cut.url, cut.host, cut.rule, cut.detail, cut.at))

    def add_redirect(self, redirect: RedirectRecord) -> None:
        self._exec(
            self.sql.add_redirect,
            (redirect.from_url, redirect.to_url, redirect.status, redirect.at),
        )
