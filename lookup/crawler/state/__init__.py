"""Crawl state behind two seams: the **writer** the crawl loop calls, the **reader** for the rest.

Durable crawl state is the URL store (one record per URL ever admitted, keyed by its
hash — the durable frontier behind the Bloom filter), host records, crawl cycles and
each host's page budget per cycle, every cut with its rule, every redirect and every
fetch. A URL's ``state`` is ``queued`` (waiting), ``leased`` (in flight), ``done``
(fetched, with its outcome), ``cut`` (a trap rule refused it), ``blocked``
(robots.txt) or ``failed``.

This package is the seam. Its ``__init__`` is the port and imports no backend:

* :class:`CrawlWriter` names what the crawl loop does to that state, in typed records
  (:class:`UrlRecord`, :class:`FetchedUrl`, :class:`FetchRecord`, :class:`CutRecord`,
  :class:`RobotsRecord`, ...): admit, lease, settle, count, and what ``--resume`` reads
  back to rebuild memory;
* :class:`CrawlReader` names every query the dashboard, the inspector and the session
  view ask of a crawl (running or finished); it never writes;
* :data:`BACKENDS`, the registry ``scheme → "module:Class"``, and the factories
  :func:`open_crawl_store` and :func:`open_crawl_reader`, which import the backend a URL
  names when they are called.

The backends: :mod:`.sqlite` (``sqlite:///DIR/crawl.sqlite``, the embedded crawl) and
:mod:`.postgres` (``postgresql://…``, the fleet's shared store), both over :mod:`.sql`,
which holds the statements and operations the two engines share, written once.

Neither seam leaks its engine: answers are records, plain dicts and lists, and an
unreadable state raises :class:`CrawlStateError`.

Adding a backend is one file plus one registry line: write ``state/<engine>.py`` with a
writer class that has ``from_url`` (the writer) and ``open_reader`` (its reader), add
its scheme to :data:`BACKENDS`, and say in ``tests/contracts/test_crawl_store_contract.py``
how to make an empty one; the contract then runs against it.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol, cast, runtime_checkable

from lookup.kit.engines.storeurl import StoreUrl, sqlite_url
from lookup.kit.registry import backend_for, load_backend

__all__ = [
    "ANSWER_FAILURES",
    "BACKENDS",
    "HOST_COUNTERS",
    "STATE_FILE",
    "URL_STATES",
    "Backend",
    "ContentFacts",
    "CrawlReader",
    "CrawlStateError",
    "CrawlWriter",
    "CutRecord",
    "CycleRecord",
    "FetchRecord",
    "FetchedUrl",
    "FrontierHostState",
    "HostCounter",
    "HostPause",
    "HostRecord",
    "PageFacts",
    "ProbeAnswer",
    "RedirectRecord",
    "RobotsRecord",
    "Schedule",
    "UrlFacts",
    "UrlRecord",
    "Validators",
    "backend",
    "crawl_state_url",
    "open_crawl_reader",
    "open_crawl_store",
]

#: Each URL scheme and the writer class that serves it (its ``open_reader`` opens the
#: reader), imported when a URL names the scheme.
BACKENDS: dict[str, str] = {
    "sqlite": "lookup.crawler.state.sqlite:SqliteCrawlStore",
    "postgresql": "lookup.crawler.state.postgres:PgCrawlStore",
}

URL_STATES = ("queued", "leased", "done", "cut", "blocked", "failed")
#: The host counters the crawl loop bumps.
HOST_COUNTERS = ("admitted", "fetched", "errors", "backoffs")
HostCounter = Literal["admitted", "fetched", "errors", "backoffs"]
#: The crawl state's file inside a crawl directory (the layout ``lookup crawl`` writes).
STATE_FILE = "crawl.sqlite"
_NETWORK = ("timeout", "connect", "protocol", "dns")
#: Fetch outcomes that are not an HTTP answer (the request failed or was refused): a page
#: fetch with one of them does not count as a page fetched.
ANSWER_FAILURES = (
    *_NETWORK,
    *(f"retry:{e}" for e in _NETWORK),
    "tls",
    "too-large",
    "not-html",
    "binary",
)


class CrawlStateError(Exception):
    """The crawl state cannot be read (not a crawl database, damaged, or unreachable)."""


# ----------------------------------------------------------------------------- records


@dataclass
class UrlRecord:
    """One URL of the URL store: where it came from, its state, and what its fetch found."""

    url_hash: str
    url: str
    host: str
    state: str
    kind: str = "page"  # page | sitemap | sitemap-probe (/sitemap.xml tried)
    depth: int = 0
    level: int = 1  # frontier priority level (0 first)
    seq: int = 0  # discovery order
    redirects: int = 0
    attempts: int = 0
    found_on: str | None = None
    discovered_at: float | None = None
    lease_until: float | None = None
    outcome: str | None = None
    reason: str | None = None
    http_status: int | None = None
    fetched_at: str | None = None  # ISO 8601
    last_fetch: float | None = None  # wall clock
    fetches: int = 0
    changes: int = 0
    interval: float | None = None  # recrawl interval, seconds
    next_due: float | None = None
    importance: float = 1.0
    sitemap_lastmod: float | None = None
    etag: str | None = None
    last_modified: str | None = None
    content_hash: str | None = None
    simhash: str | None = None  # 0x-prefixed hex
    minhash: bytes | None = None
    near_eligible: int = 0
    storage_key: str | None = None
    title: str | None = None
    canonical: str | None = None
    out_links: int | None = None
    dup_of: str | None = None
    dup_kind: str | None = None
    dup_score: float | None = None
    cycle: int = 1
    part: int = 0  # the fleet's partition: hash(host address) mod P (lookup.crawler.partitions)


@dataclass
class HostRecord:
    """One host: its address, robots.txt, counters, soft-404 probe and frontier state."""

    host: str
    address: str | None = None
    robots_state: str | None = None  # rules | allow-all | disallow-all | None (not read)
    robots_status: int | None = None
    robots_body: str | None = None
    robots_reason: str | None = None
    robots_fetched_at: float | None = None
    robots_expires_at: float | None = None
    crawl_delay: float | None = None
    last_delay: float = 0.0
    admitted: int = 0
    fetched: int = 0
    errors: int = 0
    backoffs: int = 0
    scheme: str | None = None
    probe_url: str | None = None
    probe_status: int | None = None  # 0: no answer; None: not asked yet
    probe_title: str | None = None
    probe_text: str | None = None
    probe_location: str | None = None
    probe_attempts: int = 0
    ready_at: float | None = None  # wall clock: the frontier's ready time
    queue: int | None = None
    in_flight: int | None = None
    waiting_robots: int | None = None
    state_at: float | None = None  # when the frontier's state was last written


@dataclass(frozen=True)
class FetchRecord:
    """One request the crawler made (robots.txt, probe, page or sitemap)."""

    url: str
    host: str
    address: str | None
    kind: str  # robots | probe | page | sitemap
    started: float  # wall clock
    took: float  # seconds
    status: int | None
    outcome: str
    delay: float | None  # the pause chosen after it


@dataclass(frozen=True)
class CutRecord:
    """A URL a trap rule refused, with the rule and why."""

    url: str
    host: str
    rule: str
    detail: str = ""
    at: float = field(default_factory=time.time)


@dataclass(frozen=True)
class RedirectRecord:
    """A redirect the crawler followed (or would have)."""

    from_url: str
    to_url: str
    status: int
    at: float = field(default_factory=time.time)


@dataclass(frozen=True)
class CycleRecord:
    """A crawl cycle: its number, when it started and why."""

    n: int
    started_at: float
    reason: str  # start | time | new-cycle


@dataclass(frozen=True)
class HostPause:
    """The pause the frontier chose after a host's last request, and when it may go again."""

    last_delay: float
    ready_at: float  # wall clock


@dataclass(frozen=True)
class RobotsRecord:
    """A host's robots.txt as the crawler read it."""

    state: str
    status: int | None
    body: str
    reason: str
    fetched_at: float
    expires_at: float
    crawl_delay: float | None


@dataclass(frozen=True)
class ProbeAnswer:
    """What a host answered for the URL that cannot exist."""

    status: int  # 0: no answer
    title: str
    text: str
    location: str | None


@dataclass(frozen=True)
class FrontierHostState:
    """The frontier's own view of one host, written while the crawl runs."""

    host: str
    ready_at: float  # wall clock
    queue: int
    in_flight: int
    waiting_robots: int
    state_at: float


@dataclass(frozen=True)
class PageFacts:
    """What parsing a page found: its title, canonical URL and number of links."""

    title: str
    canonical: str | None
    out_links: int


@dataclass(frozen=True)
class ContentFacts:
    """A page's fingerprints and what they matched (``dup_*`` None: an original)."""

    content_hash: str
    simhash: str
    near_eligible: int
    minhash: bytes | None
    dup_of: str | None = None
    dup_kind: str | None = None
    dup_score: float | None = None


@dataclass(frozen=True)
class Validators:
    """The answer's validators for a conditional recrawl."""

    etag: str | None
    last_modified: str | None


@dataclass(frozen=True)
class Schedule:
    """When to fetch the page again: the adaptive interval and the time it is due."""

    interval: float
    next_due: float


@dataclass(frozen=True)
class UrlFacts:
    """What an outcome rule found out about a URL; None fields leave the stored value as is."""

    reason: str | None = None
    page: PageFacts | None = None
    content: ContentFacts | None = None
    validators: Validators | None = None
    storage_key: str | None = None
    schedule: Schedule | None = None
    changes: int | None = None


@dataclass(frozen=True)
class FetchedUrl:
    """What one fetch did to one URL: its new state and outcome, and the facts found."""

    url_hash: str
    state: str  # queued (try again) | done | failed
    outcome: str
    attempts: int
    http_status: int | None
    fetched_at: str
    last_fetch: float
    fetches: int | None = None  # None: unchanged
    facts: UrlFacts = field(default_factory=UrlFacts)


# ----------------------------------------------------------------------------- seams


@runtime_checkable
class CrawlWriter(Protocol):
    """What the crawl loop does to its durable state (the embedded crawl: one process;
    the PostgreSQL store: a fleet's workers at once, each write fenced by its partition)."""

    def close(self) -> None: ...

    def transaction(self) -> AbstractContextManager[None]:
        """One atomic unit of writes (nested calls join the outer one)."""
        ...

    # meta
    def get_meta(self, key: str, default: Any = None) -> Any: ...
    def set_meta(self, key: str, value: Any) -> None: ...

    # the URL store
    def insert_url(self, record: UrlRecord, *, if_absent: bool) -> bool:
        """Insert a new URL; True when inserted. ``if_absent=False`` raises on a known hash."""
        ...

    def url(self, url_hash: str) -> UrlRecord | None: ...
    def url_exists(self, url_hash: str) -> bool: ...
    def iter_url_hashes(self) -> Iterator[str]: ...
    def max_seq(self) -> int: ...
    def lease_url(self, url_hash: str, until: float) -> None: ...

    def settle_url(
        self, url_hash: str, state: str, outcome: str, reason: str | None = None
    ) -> None:
        """A URL that will not be fetched now: blocked, cut or failed (reason None: kept)."""

    def names_canonical(self, url: str) -> bool:
        """Does another fetched page name ``url`` its ``rel=canonical``?"""

    def promote(self, url_hash: str) -> None:
        """A fetched duplicate becomes its cluster's representative (outcome ``ok``); its
        ``dup_of`` stays: an exact one's stored copy is a revisit of that page."""

    def supersede(self, url_hash: str, kind: str, by_url: str, score: float | None) -> None:
        """A fetched original is now a ``kind`` duplicate of ``by_url`` (its canonical, at
        ``score``), and so is every duplicate filed under it: the cluster moves to ``by_url``.

        A moved duplicate with the old original's text takes the old original's verdict; a
        near one keeps the measure it was found by (against the old original).
        """

    def record_fetched(self, fetched: FetchedUrl) -> None: ...
    def note_reason(self, url_hash: str, reason: str) -> None: ...
    def set_next_due(self, url_hash: str, when: float | None) -> None: ...
    def set_sitemap_lastmod(self, url_hash: str, lastmod: float) -> None: ...
    def requeue_due(self, url_hash: str, *, level: int, cycle: int) -> None: ...
    def readmit_deferred(self, url_hash: str, *, cycle: int, reason: str) -> None: ...

    # what --resume and the recrawl read back
    def queued(self) -> list[UrlRecord]: ...
    def release_stale_leases(self) -> int: ...
    def originals(self) -> list[UrlRecord]: ...
    def indexed_outcomes(self) -> list[tuple[str, str]]: ...
    def due_for_recrawl(self, now: float, limit: int = 1000) -> list[UrlRecord]: ...
    def deferred(self) -> list[UrlRecord]: ...

    # hosts
    def hosts(self) -> list[HostRecord]: ...
    def ensure_host(self, host: str, address: str, scheme: str | None = None) -> None: ...
    def count_host(self, host: str, counter: HostCounter, by: int = 1) -> None: ...
    def set_host_pause(self, host: str, pause: HostPause) -> None: ...

    def record_robots(
        self, host: str, robots: RobotsRecord, pause: HostPause, probe_url: str | None
    ) -> None: ...

    def record_probe(
        self, host: str, url: str, attempts: int, pause: HostPause, answer: ProbeAnswer | None
    ) -> None: ...

    def write_frontier_state(self, states: list[FrontierHostState]) -> None: ...

    # cycles and budgets
    def add_cycle(self, cycle: CycleRecord) -> None: ...
    def cycles(self) -> list[CycleRecord]: ...
    def bump_budget(self, host: str, cycle: int, by: int = 1) -> None: ...
    def budget_used(self, cycle: int) -> dict[str, int]: ...

    # cuts, redirects, the fetch log
    def add_cut(self, cut: CutRecord) -> None: ...
    def add_redirect(self, redirect: RedirectRecord) -> None: ...
    def add_fetch(self, fetch: FetchRecord) -> None: ...

    # counts for the crawl's report
    def count_states(self) -> dict[str, int]: ...
    def count_outcomes(self) -> dict[str, int]: ...
    def count_duplicate_kinds(self) -> dict[str, int]: ...
    def count_cuts(self) -> dict[str, int]: ...


@runtime_checkable
class CrawlReader(Protocol):
    """Every question the dashboard, the inspector and the session view ask of a crawl."""

    def close(self) -> None: ...
    def __enter__(self) -> CrawlReader: ...
    def __exit__(self, *exc: object) -> None: ...

    def meta(self) -> dict[str, Any]: ...

    # counts
    def count_states(self) -> dict[str, int]: ...
    def count_outcomes(self) -> dict[str, int]: ...
    def count_duplicate_kinds(self) -> dict[str, int]: ...
    def count_cuts(self) -> dict[str, int]: ...
    def count_cycles(self) -> int: ...
    def count_requests(self) -> tuple[int, int]:
        """Every request made, and how many of them were for robots.txt."""
        ...

    def count_pages(self, since: float | None = None) -> int:
        """Page fetches that got an HTTP answer (not 429/503), optionally since a wall time."""
        ...

    def budget_used(self, cycle: int) -> dict[str, int]: ...

    # hosts
    def hosts(self) -> list[HostRecord]: ...
    def host_queues(self) -> dict[str, dict[str, int]]:
        """Per host, how many URLs are ``queued`` and ``leased``."""
        ...

    def last_fetches(self) -> dict[str, FetchRecord]:
        """Each host's latest request."""
        ...

    def host_probes(self) -> list[HostRecord]:
        """Hosts whose soft-404 probe was answered, by host."""
        ...

    # URLs
    def url(self, url: str) -> UrlRecord | None:
        """The URL store's record of ``url`` (by its text, as stored)."""
        ...

    def urls_with_outcome(self, outcome: str) -> list[UrlRecord]: ...
    def duplicates(self) -> list[UrlRecord]: ...
    def blocked(self) -> list[UrlRecord]: ...
    def waiting_on_robots(self) -> list[tuple[str, str | None, int | None]]:
        """Queued URLs whose host's robots.txt is unreadable: (url, reason, status)."""
        ...

    def stored_pages(self) -> list[str]:
        """URLs whose copy is in the crawl's WARC files, in crawl order."""
        ...

    # cuts and the fetch log
    def cuts(self, rule: str | None = None) -> list[CutRecord]: ...
    def fetch_log(self, order: Literal["id", "started"] = "id") -> list[FetchRecord]: ...


# ---------------------------------------------------------------------------- factory


class Backend(Protocol):
    """What :data:`BACKENDS` names: a writer class that opens itself, and its reader, from
    a parsed URL."""

    def from_url(self, url: StoreUrl, **options: Any) -> CrawlWriter:
        """The crawl state ``url`` names, opened for writing (with the backend's ``options``)."""
        ...

    def open_reader(self, url: StoreUrl) -> CrawlReader:
        """The crawl state ``url`` names, opened read-only."""
        ...


def backend(scheme: str) -> Backend:
    """The class registered for ``scheme`` in :data:`BACKENDS`, imported now (ValueError
    naming the registered schemes for another)."""
    return cast(Backend, load_backend(BACKENDS, scheme))


def crawl_state_url(out_dir: str | os.PathLike[str]) -> str:
    """The store URL of the crawl state in a crawl directory (``DIR/crawl.sqlite``)."""
    return sqlite_url(Path(out_dir) / STATE_FILE)


def open_crawl_store(url: str, **options: Any) -> CrawlWriter:
    """The crawl state named by ``url`` (``sqlite:///DIR/crawl.sqlite`` or
    ``postgresql://…``, the fleet's shared store), opened for writing.

    ``options`` go to the backend (PostgreSQL's ``partitions``, ``worker``,
    ``idle_timeout_ms``). An unknown scheme raises ValueError naming the registered ones.
    """
    found, parsed = backend_for(BACKENDS, url)
    return cast(Backend, found).from_url(parsed, **options)


def open_crawl_reader(url: str) -> CrawlReader:
    """The crawl state named by ``url``, opened read-only (for a running or finished crawl).

    Raises ``FileNotFoundError`` when there is no crawl state there; an unknown scheme
    raises ValueError naming the registered ones.
    """
    found, parsed = backend_for(BACKENDS, url)
    return cast(Backend, found).open_reader(parsed)
