"""The crawl loop: lease a due host, fetch, parse, deduplicate, filter links, repeat.

    seeds ─► admit ─► Frontier ─lease─► robots? ─► Fetcher ─► parse ─► dedup ─► WARC + event
               ▲        (heap of host ready times)                     │
               └──────── normalise ◄── trap rules ◄── seen-check ◄────┘ links, redirects

Every URL enters through :meth:`Crawler._admit` (normalise → per-URL trap rules →
host budget → Bloom filter + URL store → robots.txt if known → frontier) and every
request leaves through :meth:`Frontier.lease`, which is the only way to get work:
robots.txt first on each host, then one probe for a URL that cannot exist (what
the host's "not found" looks like, to tell soft 404s), one request per host and
per address at a time, each after the host's delay. A page's outcome and the links
it found are committed in one transaction after its WARC record and event are
written.

The crawl runs in **cycles**: a host's page budget counts the URLs admitted for it
in the current cycle (kept in the store, so a restart within a cycle does not
refill it). A new cycle — when ``cycle_seconds`` have passed, or on
``resume`` with ``new_cycle`` — gives every host a fresh budget and re-admits the
URLs deferred because a budget was spent.

While it runs, the crawler writes the frontier's own view of every host (its ready
time from the heap, its queue, its fetch in flight) into the store every
``state_interval`` seconds, so a dashboard shows the real next-allowed times.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import logging
import os
import sqlite3
import ssl
import time
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from lookup.crawler.dedup import DuplicateDetector, Verdict, minhash_from_bytes, minhash_to_bytes
from lookup.crawler.fetcher import (
    DEFAULT_USER_AGENT,
    HTML_TYPES,
    Fetcher,
    FetchResult,
    ResolveError,
    Resolver,
    parse_retry_after,
    tls_context,
)
from lookup.crawler.frontier import Frontier, FrontierEntry, Lease, PolitenessPolicy
from lookup.crawler.output import EventLog, WarcStore, iso
from lookup.crawler.parse import RobotsDirectives, parse_html, parse_robots_directives
from lookup.crawler.robots import DAY, MAX_ROBOTS_BYTES, RobotsCache, RobotsPolicy
from lookup.crawler.seen import SeenUrls
from lookup.crawler.soft404 import ProbeSignature, classify, probe_path
from lookup.crawler.store import CrawlStore
from lookup.crawler.traps import TrapGuard, TrapPolicy
from lookup.kit.urlnorm import host_of, normalize, url_hash

__all__ = ["CrawlConfig", "CrawlError", "CrawlProgress", "CrawlReport", "Crawler", "crawl"]

log = logging.getLogger("lookup.crawler")

REDIRECTS = (301, 302, 303, 307, 308)
RETRY_STATUSES = (429, 503)
#: Fetch errors worth another try (the network); every other error is a final answer.
NETWORK_ERRORS = ("timeout", "connect", "protocol", "dns")
#: Outcomes that leave a URL ``failed`` (no usable answer) rather than ``done``.
FAILED = (*NETWORK_ERRORS, "tls")


class CrawlError(Exception):
    """A crawl cannot start (bad directory, nothing to resume, another crawler running)."""


@dataclass
class CrawlConfig:
    """Everything a crawl needs; defaults are polite settings for the open web."""

    out_dir: Path
    seeds: list[str] = field(default_factory=list)
    agent: str = "LookupBot"
    user_agent: str = DEFAULT_USER_AGENT
    concurrency: int = 64
    min_delay: float = 1.0
    delay_factor: float = 10.0
    max_backoff: float = 3600.0
    connect_timeout: float = 5.0
    timeout: float = 15.0
    max_bytes: int = 10 * 1024 * 1024
    max_redirects: int = 5
    max_attempts: int = 5  # for 429/503 (the server asked us to come back)
    max_error_attempts: int = 2  # for timeouts, refused connections, other 5xx
    robots_ttl: float = DAY
    robots_retry: float = 600.0
    expected_urls: int = 1_000_000
    bloom_fp_rate: float = 0.01
    traps: TrapPolicy = field(default_factory=TrapPolicy)
    hosts: dict[str, str] = field(default_factory=dict)
    strict_hosts: bool = False
    allow_any_address: bool = False
    max_pages: int | None = None
    max_seconds: float | None = None
    resume: bool = False
    use_minhash: bool = True
    follow_sitemaps: bool = True
    recrawl: bool = False
    recrawl_initial: float = DAY
    recrawl_min: float = 3600.0
    recrawl_max: float = 30 * DAY
    lease_seconds: float = 300.0
    ca_bundle: Path | None = None  # extra CAs to trust for https (PEM), besides the public ones
    cycle_seconds: float | None = DAY  # a crawl cycle; each host's page budget is per cycle
    new_cycle: bool = False  # with resume: start a new cycle now (fresh budgets)
    soft404_probe: bool = True  # probe each host with a URL that cannot exist
    state_interval: float = 0.5  # how often the frontier's per-host state is written
    progress: Callable[[CrawlProgress], None] | None = None
    progress_interval: float = 1.0


@dataclass
class CrawlProgress:
    """A live snapshot of a running crawl."""

    elapsed: float
    pages: int
    pages_per_second: float
    requests: int
    hosts_active: int
    frontier: int
    in_flight: int
    events: int
    duplicates: int
    traps_cut: int
    blocked: int
    errors: int
    soft_404s: int = 0
    cycle: int = 1
    hosts: list[dict[str, Any]] = field(default_factory=list)  # the frontier, per host

    def line(self) -> str:
        return (
            f"{self.elapsed:6.1f}s  pages {self.pages} ({self.pages_per_second:.1f}/s)  "
            f"hosts active {self.hosts_active}  frontier {self.frontier}  "
            f"in flight {self.in_flight}  dups {self.duplicates}  soft 404s {self.soft_404s}  "
            f"traps cut {self.traps_cut}  blocked {self.blocked}  errors {self.errors}  "
            f"cycle {self.cycle}"
        )


@dataclass
class CrawlReport:
    """How a crawl run ended and what it did."""

    stop_reason: str  # done | max-pages | max-seconds | stopped | waiting-robots
    elapsed: float
    pages: int
    requests: int
    robots_fetches: int
    events: int
    pages_per_second: float
    outcomes: dict[str, int]
    duplicates: dict[str, int]
    traps: dict[str, int]
    states: dict[str, int]
    frontier: int
    hosts: int
    seen: dict[str, int]
    resumed_leases: int = 0
    cycle: int = 1
    soft_404s: int = 0

    def lines(self) -> list[str]:
        out = [
            f"stopped: {self.stop_reason} after {self.elapsed:.1f} s (crawl cycle {self.cycle})",
            f"pages fetched {self.pages} ({self.pages_per_second:.1f}/s), requests {self.requests}"
            f" (robots.txt {self.robots_fetches}), events {self.events}",
            f"frontier left {self.frontier}, hosts {self.hosts}",
            "outcomes: " + ", ".join(f"{k} {v}" for k, v in sorted(self.outcomes.items())),
            "duplicates: "
            + (", ".join(f"{k} {v}" for k, v in sorted(self.duplicates.items())) or "none"),
            f"soft 404s: {self.soft_404s}",
            "traps cut: "
            + (", ".join(f"{k} {v}" for k, v in sorted(self.traps.items())) or "none"),
            "seen check: " + ", ".join(f"{k} {v}" for k, v in self.seen.items()),
        ]
        return out


def _importance(depth: int) -> float:
    """Pages near a seed matter more (they are better linked)."""
    return 2.0 if depth == 0 else 1.0 if depth <= 2 else 0.5


def _level(depth: int, kind: str = "page", redirected: bool = False) -> int:
    if kind == "sitemap" or redirected or depth <= 1:
        return 0
    return 1 if depth <= 4 else 2


class Crawler:
    """One crawl over one output directory; :meth:`run` it inside an event loop."""

    def __init__(self, config: CrawlConfig) -> None:
        self.config = config
        self.out = Path(config.out_dir)
        self._stop = asyncio.Event()
        self._wake = asyncio.Event()
        self._tasks: set[asyncio.Task[None]] = set()
        self._schemes: dict[str, str] = {}
        self._admitted: Counter[str] = Counter()
        self._counts: Counter[str] = Counter()
        self._t0 = time.monotonic()
        self._pages_leased = 0
        self._lock_fd: int | None = None
        self._probes: dict[str, ProbeSignature] = {}
        self._probe_urls: dict[str, str] = {}
        self._probe_attempts: Counter[str] = Counter()
        self.cycle = 1
        self._cycle_started = time.time()
        self.store: CrawlStore
        self.frontier: Frontier

    # -- public -------------------------------------------------------------------
    def stop(self) -> None:
        """Ask the crawl to stop gracefully (finishing fetches in flight)."""
        self._stop.set()
        self._wake.set()

    async def run(self) -> CrawlReport:
        self._open()
        try:
            async with Fetcher(
                self.resolver,
                user_agent=self.config.user_agent,
                connect_timeout=self.config.connect_timeout,
                timeout=self.config.timeout,
                max_bytes=self.config.max_bytes,
                max_connections=max(16, 2 * self.config.concurrency),
                ca_bundle=self.config.ca_bundle,
            ) as fetcher:
                self.fetcher = fetcher
                if not self.config.resume:
                    await self._add_seeds()
                progress = asyncio.create_task(self._progress_loop())
                state = asyncio.create_task(self._state_loop())
                try:
                    reason = await self._loop()
                finally:
                    progress.cancel()
                    state.cancel()
                    await self._drain()
                    try:
                        self._flush_frontier()  # the state a resumed crawl starts from
                    except sqlite3.Error:
                        log.exception("writing the frontier's final state failed")
            report = self.report(reason)
            (self.out / "report.json").write_text(json.dumps(asdict(report), indent=1))
            return report
        finally:
            self._close()

    # -- setup --------------------------------------------------------------------
    def _open(self) -> None:
        c = self.config
        self.out.mkdir(parents=True, exist_ok=True)
        self._lock_fd = os.open(self.out / "crawl.lock", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(self._lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(self._lock_fd)
            self._lock_fd = None
            raise CrawlError(f"another crawler is already using {self.out}") from None
        db_path = self.out / "crawl.sqlite"
        existed = db_path.exists()
        self.store = CrawlStore(db_path)
        started = self.store.get_meta("seeds")
        if c.resume and started is None:
            self._close()
            raise CrawlError(f"nothing to resume in {self.out}: no crawl state there")
        if not c.resume and existed and started is not None:
            self._close()
            raise CrawlError(f"{self.out} already holds a crawl; pass --resume to continue it")
        if c.resume and not c.hosts:  # the name table the crawl started with
            c.hosts = self.store.get_meta("hosts", {})
            c.strict_hosts = self.store.get_meta("strict_hosts", c.strict_hosts)
        if c.resume and c.ca_bundle is None and self.store.get_meta("ca_bundle"):
            kept = Path(self.store.get_meta("ca_bundle"))
            c.ca_bundle = kept if kept.is_file() else None
        if c.ca_bundle is not None:
            try:
                tls_context(c.ca_bundle)
            except (OSError, ssl.SSLError) as exc:
                self._close()
                raise CrawlError(f"cannot use {c.ca_bundle} as a CA bundle: {exc}") from None
        allowed = None if c.allow_any_address else Resolver.allowed
        self.resolver = Resolver(
            table={k.lower(): v for k, v in c.hosts.items()},
            strict=c.strict_hosts,
            allowed=allowed,
        )
        self.robots = RobotsCache(c.agent, ttl=c.robots_ttl, retry=c.robots_retry)
        self.frontier = Frontier(
            PolitenessPolicy(c.min_delay, c.delay_factor, c.max_backoff),
        )
        self.traps = TrapGuard(c.traps)
        self.dedup = DuplicateDetector(use_minhash=c.use_minhash)
        self.seen = SeenUrls(self.store, c.expected_urls, c.bloom_fp_rate)
        self._seq = self.store.max_seq()
        self.resumed_leases = 0
        if c.ca_bundle is not None:
            self.store.set_meta("ca_bundle", str(Path(c.ca_bundle).resolve()))
        self.store.set_meta("host_budget", c.traps.host_budget)
        self.store.set_meta("cycle_seconds", c.cycle_seconds)
        if c.resume:
            self._restore()
            expired = (
                c.cycle_seconds is not None
                and time.time() - self._cycle_started >= c.cycle_seconds
            )
            if c.new_cycle or expired:
                self._start_cycle("new-cycle" if c.new_cycle else "time")
        else:
            now = time.time()
            self.store.set_meta("seeds", c.seeds)
            self.store.set_meta("hosts", c.hosts)
            self.store.set_meta("strict_hosts", c.strict_hosts)
            self.store.set_meta("agent", c.user_agent)
            self.store.set_meta("started_at", now)
            self.store.set_meta("cycle", 1)
            self.store.set_meta("cycle_started_at", now)
            self.store.add_cycle(1, now, "start")
            self.cycle, self._cycle_started = 1, now
        self.warc = WarcStore(self.out)
        self.events = EventLog(self.out / "events.jsonl")

    def _close(self) -> None:
        for name in ("warc", "events"):
            obj = getattr(self, name, None)
            if obj is not None:
                with contextlib.suppress(OSError):
                    obj.close()
        if getattr(self, "store", None) is not None:
            self.store.close()
        if self._lock_fd is not None:
            with contextlib.suppress(OSError):
                fcntl.flock(self._lock_fd, fcntl.LOCK_UN)
                os.close(self._lock_fd)
            self._lock_fd = None

    def _restore(self) -> None:
        """Rebuild memory from the durable state after a stop or a crash."""
        now_wall = time.time()
        with self.store.tx():
            self.resumed_leases = self.store.release_stale_leases()
            self.cycle = int(self.store.get_meta("cycle", 1))
            self._cycle_started = float(
                self.store.get_meta("cycle_started_at", self.store.get_meta("started_at", now_wall))
            )
            if not self.store.cycles():  # a crawl from before cycles: its budget so far
                self.store.add_cycle(1, self._cycle_started, "start")
                for row in self.store.hosts():
                    self.store.bump_budget(row["host"], 1, row["admitted"])
        self._admitted = Counter(self.store.budget_used(self.cycle))
        for row in self.store.hosts():
            if row["scheme"]:
                self._schemes[row["host"]] = row["scheme"]
            if row["probe_url"]:
                self._probe_urls[row["host"]] = row["probe_url"]
                self._probe_attempts[row["host"]] = row["probe_attempts"]
            if row["probe_status"] is not None:
                self._probes[row["host"]] = ProbeSignature(
                    row["host"],
                    row["probe_url"] or "",
                    row["probe_status"] or None,
                    row["probe_title"] or "",
                    row["probe_text"] or "",
                    row["probe_location"],
                )
            # A failing robots.txt is re-read at once after a restart: fail closed, retry.
            if (
                row["robots_state"] in ("rules", "allow-all")
                and (row["robots_expires_at"] or 0) > now_wall
            ):
                self.robots.put(
                    RobotsPolicy(
                        row["host"],
                        row["robots_state"],
                        self.config.agent,
                        row["robots_status"],
                        row["robots_body"] or "",
                        row["robots_reason"] or "",
                        row["robots_fetched_at"] or now_wall,
                        row["robots_expires_at"],
                    )
                )
        for row in self.store.originals():
            self.dedup.register(
                row["url_hash"],
                Verdict(
                    None,
                    None,
                    row["content_hash"],
                    int(row["simhash"], 16) if row["simhash"] else 0,
                    minhash_from_bytes(row["minhash"]) if row["minhash"] else None,
                    shingle_count=10**6 if row["near_eligible"] else 0,
                ),
            )
        for row in self.store.db.execute(
            "SELECT url, outcome FROM urls WHERE outcome IN ('ok', 'duplicate')"
        ):
            self.traps.record(row["url"], duplicate=row["outcome"] == "duplicate")
        hosts = {r["host"]: r for r in self.store.hosts()}
        for row in self.store.queued():
            hrow = hosts.get(row["host"])
            address = hrow["address"] if hrow is not None else None
            if not address:
                continue  # resolved lazily below
            self._schemes.setdefault(row["host"], urlsplit(row["url"]).scheme)
            self.frontier.add(self._entry(row), address)
        # A host may have been fetched just before the crash: wait one delay first.
        now = time.monotonic()
        for host in list(self.frontier.hosts):
            hrow = hosts.get(host)
            last = float(hrow["last_delay"] or 0) if hrow is not None else 0.0
            crawl_delay = hrow["crawl_delay"] if hrow is not None else None
            # The whole last pause again from now (a kill may have come after the last
            # write of the ready time), or the frontier's own ready time if it is later.
            ready = now + max(last, crawl_delay or 0.0, self.config.min_delay)
            if (
                hrow is not None
                and hrow["ready_at"]
                and hrow["robots_state"] in ("rules", "allow-all")
            ):
                ready = max(ready, now + (hrow["ready_at"] - now_wall))
            self.frontier.set_ready(host, ready)
            policy = self.robots.get(host)
            if policy is not None:
                self.frontier.robots_known(host, crawl_delay=policy.crawl_delay)
                self.frontier.probe_needed(host, self._wants_probe(host))

    @staticmethod
    def _entry(row: Any) -> FrontierEntry:
        return FrontierEntry(
            url=row["url"],
            url_hash=row["url_hash"],
            host=row["host"],
            depth=row["depth"],
            level=row["level"],
            kind=row["kind"],
            redirects=row["redirects"],
            attempts=row["attempts"],
            seq=row["seq"],
        )

    async def _add_seeds(self) -> None:
        for seed in self.config.seeds:
            url = normalize(seed)
            if url is None:
                raise CrawlError(f"not a crawlable http(s) URL: {seed!r}")
            await self._admit_many([(url, 0, None, "page", 0)])

    # -- admission ------------------------------------------------------------------
    async def _addresses(self, hosts: set[str]) -> dict[str, str | Exception]:
        out: dict[str, str | Exception] = {}
        for h in hosts:
            name = urlsplit(f"http://{h}").hostname or h
            try:
                out[h] = await self.resolver.resolve(name)
            except ResolveError as exc:
                out[h] = exc
        return out

    async def _admit_many(
        self, items: list[tuple[str, int, str | None, str, int]]
    ) -> list[str]:
        """Resolve hosts (awaiting), then admit each URL (no awaits: one transaction)."""
        addresses = await self._addresses({host_of(u) for u, *_ in items})
        with self.store.tx():
            return [self._admit(u, d, f, k, r, addresses) for u, d, f, k, r in items]

    def _admit(
        self,
        url: str,
        depth: int,
        found_on: str | None,
        kind: str,
        redirects: int,
        addresses: dict[str, str | Exception],
    ) -> str:
        """The seen-check and every admission rule for one normalised URL; returns the verdict."""
        host = host_of(url)
        h = url_hash(url)
        cut = self.traps.check_url(url, depth)
        if cut is None and self.traps.pattern_verdict(url) == "cut":
            cut = ("duplicate-pattern", "this URL pattern keeps producing duplicates")
        if cut is None and kind == "page" and self.traps.over_budget(self._admitted[host]):
            cut = (
                "host-budget",
                f"{self.config.traps.host_budget} URLs admitted for {host} in crawl cycle "
                f"{self.cycle}: deferred to the next cycle",
            )
        address = addresses.get(host)
        level = _level(depth, kind, redirects > 0)
        if cut is None and self.traps.pattern_verdict(url) == "downrank":
            level = min(level + 1, 2)
        self._seq += 1
        row = {
            "url_hash": h,
            "url": url,
            "host": host,
            "state": "cut" if cut else "queued",
            "kind": kind,
            "depth": depth,
            "level": level,
            "seq": self._seq,
            "redirects": redirects,
            "found_on": found_on,
            "discovered_at": time.time(),
            "importance": _importance(depth),
            "cycle": self.cycle,
        }
        if cut:
            row["outcome"] = f"trap:{cut[0]}"
            row["reason"] = cut[1]
        if not self.seen.check(row):
            return "seen"
        if cut:
            self.store.add_cut(url, host, cut[0], cut[1])
            self._counts["cut"] += 1
            return "cut"
        if isinstance(address, Exception) or address is None:
            self.store.update_url(
                h, state="failed", outcome="unresolvable", reason=str(address or "no address")
            )
            self._counts["errors"] += 1
            return "unresolvable"
        policy = self.robots.get(host)
        if policy is not None and not policy.allows(url):
            self.store.update_url(
                h, state="blocked", outcome="robots-disallowed", reason=policy.decision(url)
            )
            self._counts["blocked"] += 1
            return "blocked"
        self._schemes.setdefault(host, urlsplit(url).scheme)
        self.store.ensure_host(host, address, self._schemes[host])
        if kind == "page":
            self._count_admission(host)
        entry = FrontierEntry(url, h, host, depth, level, kind, redirects, 0, self._seq)
        self.frontier.add(entry, address)
        self._wake.set()
        return "queued"

    def _count_admission(self, host: str) -> None:
        """One more page of ``host``'s budget spent in this cycle (durably)."""
        self._admitted[host] += 1
        self.store.bump_host(host, "admitted")
        self.store.bump_budget(host, self.cycle)

    # -- crawl cycles -----------------------------------------------------------------
    def _cycle_end(self) -> float | None:
        """Wall time at which the current cycle ends (None: cycles never end by time)."""
        cs = self.config.cycle_seconds
        return None if cs is None else self._cycle_started + cs

    def _start_cycle(self, reason: str) -> None:
        """A new crawl cycle: every host's budget starts afresh; deferred URLs come back."""
        now = time.time()
        self.cycle += 1
        self._cycle_started = now
        self._admitted.clear()
        hosts = {r["host"]: r for r in self.store.hosts()}
        readmitted = 0
        with self.store.tx():
            self.store.set_meta("cycle", self.cycle)
            self.store.set_meta("cycle_started_at", now)
            self.store.add_cycle(self.cycle, now, reason)
            for row in self.store.deferred():
                host = row["host"]
                hrow = hosts.get(host)
                if hrow is None or not hrow["address"]:
                    continue
                if self.traps.over_budget(self._admitted[host]):
                    continue  # still deferred: this cycle's budget is spent too
                policy = self.robots.get(host)
                if policy is not None and not policy.allows(row["url"]):
                    self.store.update_url(
                        row["url_hash"], state="blocked", outcome="robots-disallowed",
                        reason=policy.decision(row["url"]),
                    )  # fmt: skip
                    continue
                self._count_admission(host)
                self.store.update_url(
                    row["url_hash"], state="queued", outcome=None, attempts=0, cycle=self.cycle,
                    reason=f"deferred by the host budget; admitted in cycle {self.cycle}",
                )  # fmt: skip
                entry = self._entry(row)
                entry.attempts = 0
                self._schemes.setdefault(host, urlsplit(row["url"]).scheme)
                self.frontier.add(entry, hrow["address"])
                readmitted += 1
        log.info("crawl cycle %d (%s): %d deferred URLs admitted", self.cycle, reason, readmitted)
        self._wake.set()

    # -- the loop -------------------------------------------------------------------
    def _limit_reason(self) -> str | None:
        c = self.config
        if self._stop.is_set():
            return "stopped"
        if c.max_pages is not None and self._pages_leased >= c.max_pages:
            return "max-pages"
        if c.max_seconds is not None and time.monotonic() - self._t0 >= c.max_seconds:
            return "max-seconds"
        return None

    async def _loop(self) -> str:
        c = self.config
        last_due_check = 0.0
        while True:
            reason = self._limit_reason()
            if reason is not None:
                return reason
            now = time.monotonic()
            end = self._cycle_end()
            if end is not None and time.time() >= end:
                self._start_cycle("time")
            if c.recrawl and now - last_due_check >= 0.5:
                last_due_check = now
                await self._enqueue_due()
            while len(self._tasks) < c.concurrency:
                if c.max_pages is not None and self._pages_leased >= c.max_pages:
                    break
                lease = self.frontier.lease(now)
                if lease is None:
                    break
                if lease.kind == "page":
                    self._pages_leased += 1
                task = asyncio.create_task(self._work(lease))
                self._tasks.add(task)
                task.add_done_callback(self._task_done)
            if not self._tasks and not c.recrawl and not self.frontier.has_due_work():
                return "waiting-robots" if len(self.frontier) else "done"
            nxt = self.frontier.next_ready_at()
            wait = 0.5 if nxt is None else max(0.0, min(nxt - time.monotonic(), 0.5))
            if c.max_seconds is not None:
                wait = min(wait, max(0.0, self._t0 + c.max_seconds - time.monotonic()))
            self._wake.clear()
            if wait > 0:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), wait)

    def _task_done(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        self._wake.set()
        if not task.cancelled() and task.exception() is not None:
            log.error("crawl task failed", exc_info=task.exception())

    async def _drain(self, grace: float = 3.0) -> None:
        """Let fetches in flight finish (briefly); a cancelled one stays leased → re-queued."""
        if not self._tasks:
            return
        _done, pending = await asyncio.wait(set(self._tasks), timeout=grace)
        for task in pending:
            task.cancel()
        if pending:
            await asyncio.wait(pending)

    async def _progress_loop(self) -> None:
        cb = self.config.progress
        if cb is None:
            return
        while True:
            await asyncio.sleep(self.config.progress_interval)
            self._flush_frontier()  # the store shows what the callback is told
            cb(self.progress())

    async def _state_loop(self) -> None:
        while True:
            await asyncio.sleep(self.config.state_interval)
            try:
                self._flush_frontier()
            except Exception:  # noqa: BLE001 - a missed write is retried next time
                log.exception("writing the frontier's state failed")

    def _ready_wall(self, ready_mono: float) -> float:
        """A frontier ready time (monotonic) on the wall clock, for the store."""
        return ready_mono + (time.time() - time.monotonic())

    def _flush_frontier(self) -> None:
        """Write the frontier's own per-host state (ready time, queue, in flight) to the store."""
        offset = time.time() - time.monotonic()
        now = time.time()
        with self.store.tx():
            for hq in self.frontier.hosts.values():
                self.store.update_host(
                    hq.host,
                    ready_at=hq.ready_at + offset,
                    queue=len(hq),
                    in_flight=int(hq.in_flight),
                    waiting_robots=int(hq.waiting_robots),
                    state_at=now,
                )

    async def _work(self, lease: Lease) -> None:
        try:
            if lease.kind == "robots":
                await self._do_robots(lease)
            elif lease.kind == "probe":
                await self._do_probe(lease)
            else:
                await self._do_page(lease)
        except asyncio.CancelledError:
            raise
        except Exception:  # noqa: BLE001 - one bad page must never stop the crawl
            log.exception("processing %s failed", lease.entry.url if lease.entry else lease.host)
            self._counts["errors"] += 1
            hq = self.frontier.host(lease.host)
            if hq is not None and hq.in_flight:
                self.frontier.complete(lease, 0.0)
            if lease.entry is not None:
                with contextlib.suppress(Exception), self.store.tx():
                    self.store.update_url(
                        lease.entry.url_hash, state="failed", outcome="crawler-error"
                    )

    # -- robots.txt -----------------------------------------------------------------
    async def _do_robots(self, lease: Lease) -> None:
        c = self.config
        host = lease.host
        scheme = self._schemes.get(host, "http")
        url = f"{scheme}://{host}/robots.txt"
        res = await self.fetcher.fetch(url, accept=None, max_bytes=MAX_ROBOTS_BYTES)
        took = res.took
        hops = 0
        # RFC 9309 §2.3.1.2: follow at least five redirects — on the same host only, so
        # the hop is still this host's one request; a cross-host redirect fails closed.
        while res.ok and res.status in REDIRECTS and hops < 5:
            target = normalize(res.header("location") or "", url)
            if target is None or host_of(target) != host:
                break
            hops += 1
            res = await self.fetcher.fetch(target, accept=None, max_bytes=MAX_ROBOTS_BYTES)
            took += res.took
        if not res.ok:
            policy = self.robots.unreachable(host, f"{res.error}: {res.detail}")
        elif res.status in REDIRECTS:
            policy = self.robots.unreachable(host, f"HTTP {res.status} redirect not followed")
        else:
            assert res.status is not None
            policy = self.robots.from_response(host, res.status, res.body)
        failing = policy.state == "disallow-all"
        self.frontier.robots_known(host, crawl_delay=policy.crawl_delay)
        hq = self.frontier.host(host)
        if hq is not None:
            hq.needs_robots = failing
            hq.waiting_robots = failing
        probe = not failing and self._wants_probe(host)
        if probe and host not in self._probe_urls:
            self._probe_urls[host] = f"{scheme}://{host}{probe_path()}"
        self.frontier.probe_needed(host, probe)
        delay = self.frontier.complete(lease, took, extra_wait=c.robots_retry if failing else 0.0)
        self._counts["robots"] += 1
        self._counts["requests"] += 1 + hops
        sitemaps = policy.sitemaps if (c.follow_sitemaps and policy.state == "rules") else []
        items = []
        for sm in sitemaps:
            n = normalize(sm)
            if n is not None:
                items.append((n, 0, url, "sitemap", 0))
        with self.store.tx():
            self.store.update_host(
                host,
                robots_state=policy.state,
                robots_status=policy.status,
                robots_body=policy.body,
                robots_reason=policy.reason,
                robots_fetched_at=policy.fetched_at,
                robots_expires_at=policy.expires_at,
                crawl_delay=policy.crawl_delay,
                last_delay=delay,
                probe_url=self._probe_urls.get(host),
                ready_at=self._ready_wall(self.frontier.hosts[host].ready_at),
            )
            self.store.add_fetch(
                url=url,
                host=host,
                address=lease.address,
                kind="robots",
                started=res.started,
                took=took,
                status=res.status,
                outcome=policy.state,
                delay=delay,
            )
        if items:
            await self._admit_many(items)

    # -- the soft-404 probe -------------------------------------------------------------
    def _wants_probe(self, host: str) -> bool:
        return self.config.soft404_probe and host not in self._probes

    async def _do_probe(self, lease: Lease) -> None:
        """Ask ``host`` for a URL that cannot exist: what does its "not found" look like?"""
        c = self.config
        host = lease.host
        url = self._probe_urls.get(host) or f"{self._schemes.get(host, 'http')}://{host}/"
        policy = self.robots.get(host)
        if policy is None or not policy.allows(url):
            # robots.txt expired (re-read first) or forbids the probe: pages are judged by
            # their wording alone.
            if policy is not None:
                self._probes[host] = ProbeSignature(host, url, None)
            self.frontier.probe_needed(host, policy is None and self._wants_probe(host))
            if policy is None:
                self.frontier.robots_expired(host)
            self.frontier.release(lease)
            return
        res = await self.fetcher.fetch(url, accept=HTML_TYPES)
        retry_after = parse_retry_after(res.header("retry-after"))
        delay = self.frontier.complete(lease, res.took, status=res.status, retry_after=retry_after)
        self._counts["requests"] += 1
        self._counts["probes"] += 1
        self._probe_attempts[host] += 1
        attempts = self._probe_attempts[host]
        retry = (res.status in RETRY_STATUSES and attempts < c.max_attempts) or (
            res.error in NETWORK_ERRORS and attempts < c.max_error_attempts
        )
        signature: ProbeSignature | None = None
        if not retry:
            title = text = ""
            if res.status == 200 and res.error is None:
                parsed = parse_html(res.text(), c.agent)
                title, text = parsed.title, parsed.text
            signature = ProbeSignature(
                host, url, res.status, title[:300], text[:20_000], res.header("location")
            )
            self._probes[host] = signature
            self.frontier.probe_needed(host, False)
        outcome = f"probe:{res.error or res.status}"
        with self.store.tx():
            fields: dict[str, Any] = dict(
                probe_url=url,
                probe_attempts=attempts,
                last_delay=delay,
                ready_at=self._ready_wall(self.frontier.hosts[host].ready_at),
            )
            if signature is not None:
                fields.update(
                    probe_status=signature.status or 0,
                    probe_title=signature.title,
                    probe_text=signature.text,
                    probe_location=signature.location,
                )
            self.store.update_host(host, **fields)
            self.store.add_fetch(
                url=url,
                host=host,
                address=lease.address,
                kind="probe",
                started=res.started,
                took=res.took,
                status=res.status,
                outcome=outcome,
                delay=delay,
            )

    # -- one page ---------------------------------------------------------------------
    async def _do_page(self, lease: Lease) -> None:
        c = self.config
        e = lease.entry
        assert e is not None
        policy = self.robots.get(e.host)
        if policy is None:  # expired (24 h): this request re-reads robots.txt instead
            self.frontier.requeue(e, lease.address)
            self._pages_leased -= 1
            self.frontier.robots_expired(e.host)
            await self._do_robots(lease)
            return
        if not policy.allows(e.url):
            self._pages_leased -= 1
            self.frontier.release(lease)
            with self.store.tx():
                self.store.update_url(
                    e.url_hash, state="blocked", outcome="robots-disallowed",
                    reason=policy.decision(e.url),
                )  # fmt: skip
            self._counts["blocked"] += 1
            return
        if self.traps.pattern_verdict(e.url) == "cut":
            self._pages_leased -= 1
            self.frontier.release(lease)
            with self.store.tx():
                detail = "this URL pattern keeps producing duplicates"
                self.store.update_url(
                    e.url_hash, state="cut", outcome="trap:duplicate-pattern", reason=detail
                )
                self.store.add_cut(e.url, e.host, "duplicate-pattern", detail)
            self._counts["cut"] += 1
            return
        row = self.store.url_row(e.url_hash)
        conditional: dict[str, str] = {}
        if row is not None and row["fetches"]:
            if row["etag"]:
                conditional["If-None-Match"] = row["etag"]
            elif row["last_modified"]:
                conditional["If-Modified-Since"] = row["last_modified"]
        with self.store.tx():
            self.store.update_url(
                e.url_hash, state="leased", lease_until=time.time() + c.lease_seconds
            )
        accept = HTML_TYPES if e.kind == "page" else None
        res = await self.fetcher.fetch(e.url, accept=accept, conditional=conditional)
        retry_after = parse_retry_after(res.header("retry-after"))
        delay = self.frontier.complete(
            lease, res.took, status=res.status, retry_after=retry_after
        )
        self._counts["requests"] += 1
        if res.ok and res.status not in RETRY_STATUSES:
            self._counts["pages"] += 1
        await self._handle(e, lease, res, row, delay, retry_after)

    async def _handle(
        self,
        e: FrontierEntry,
        lease: Lease,
        res: FetchResult,
        row: Any,
        delay: float,
        retry_after: float | None,
    ) -> None:
        c = self.config
        update: dict[str, Any] = {
            "http_status": res.status,
            "fetched_at": iso(res.started),
            "last_fetch": res.started,
            "lease_until": None,
        }
        links: list[tuple[str, int, str | None, str, int]] = []
        hints: list[tuple[str, float]] = []
        event: dict[str, Any] | None = None
        requeue = False
        outcome: str
        host_bump: str | None = None

        if res.error is not None and res.error in NETWORK_ERRORS:
            e.attempts += 1
            host_bump = "errors"
            if e.attempts < c.max_error_attempts:
                requeue, outcome = True, f"retry:{res.error}"
            else:
                outcome = res.error
            update["reason"] = res.detail
        elif res.error is not None:  # tls | too-large | not-html | binary: a final answer
            outcome = res.error
            update["reason"] = res.detail
        elif res.status in RETRY_STATUSES:
            e.attempts += 1
            host_bump = "backoffs"
            update["reason"] = (
                f"HTTP {res.status}, Retry-After {retry_after}, waiting {delay:.2f} s"
            )
            if e.attempts < c.max_attempts:
                requeue, outcome = True, f"retry:http-{res.status}"
            else:
                outcome = f"http-{res.status}"
        elif res.status in REDIRECTS:
            outcome = "redirect"
            target = normalize(res.header("location") or "", e.url)
            if target is None:
                update["reason"] = f"unusable Location {res.header('location')!r}"
            elif e.redirects + 1 > c.max_redirects:
                update["reason"] = f"redirect limit {c.max_redirects} reached → {target}"
                links.append((target, e.depth, e.url, "redirect-limit", e.redirects + 1))
            else:
                update["reason"] = f"→ {target}"
                links.append((target, e.depth, e.url, e.kind, e.redirects + 1))
        elif res.status == 304:
            outcome = "not-modified"
            update.update(self._reschedule(row, changed=False, depth=e.depth))
        elif res.status is not None and res.status >= 500:
            e.attempts += 1
            host_bump = "errors"
            if e.attempts < c.max_error_attempts:
                requeue, outcome = True, f"retry:http-{res.status}"
            else:
                outcome = f"http-{res.status}"
        elif res.status != 200:
            outcome = f"http-{res.status}"
        elif e.kind == "sitemap":
            outcome = "sitemap"
            sitemap_links, hints = self._sitemap_links(res, e)
            links.extend(sitemap_links)
        else:
            outcome, event, page_links = self._page(e, res, row, update)
            links.extend(page_links)

        if requeue:
            update.update(state="queued", attempts=e.attempts, outcome=outcome)
        else:
            state = "failed" if outcome in FAILED else "done"
            update.update(state=state, attempts=e.attempts, outcome=outcome)
            if state == "done":
                update["fetches"] = (row["fetches"] if row is not None else 0) + 1
        self._counts[outcome.split(":")[0]] += 1

        # Write the page and its event before the commit that marks the URL done.
        if event is not None:
            self.events.append(event)
            self._counts["events"] += 1

        redirect_target = links[0][0] if outcome == "redirect" and links else None
        admitted = await self._addresses({host_of(u) for u, *_ in links})
        with self.store.tx():
            self.store.update_url(e.url_hash, **update)
            if host_bump:
                self.store.bump_host(e.host, host_bump)
            self.store.bump_host(e.host, "fetched")
            self.store.update_host(
                e.host,
                last_delay=delay,
                ready_at=self._ready_wall(self.frontier.hosts[e.host].ready_at),
            )
            self.store.add_fetch(
                url=e.url,
                host=e.host,
                address=lease.address,
                kind=e.kind,
                started=res.started,
                took=res.took,
                status=res.status,
                outcome=outcome,
                delay=delay,
            )
            if redirect_target is not None:
                assert res.status is not None
                self.store.add_redirect(e.url, redirect_target, res.status)
            for url, depth, found_on, kind, redirects in links:
                if kind == "redirect-limit":
                    self.store.add_cut(url, host_of(url), "redirect-limit", f"after {e.url}")
                    self._counts["cut"] += 1
                    continue
                verdict = self._admit(url, depth, found_on, kind, redirects, admitted)
                if redirect_target == url and verdict == "seen":
                    self.store.update_url(
                        e.url_hash, reason=f"→ {url} (already known: a loop or a duplicate)"
                    )
            for url, lastmod in hints:
                self._lastmod_hint(url, lastmod)
        if requeue:
            self.frontier.requeue(e, lease.address)

    def _page(
        self, e: FrontierEntry, res: FetchResult, row: Any, update: dict[str, Any]
    ) -> tuple[str, dict[str, Any] | None, list[tuple[str, int, str | None, str, int]]]:
        """Parse, check robots directives, deduplicate, store; the outcome, event and links."""
        parsed = parse_html(res.text(), self.config.agent)
        directives = parsed.robots
        header = res.header("x-robots-tag")
        if header:
            directives = directives.merge(parse_robots_directives(header, self.config.agent))
        base = normalize(parsed.base_url, e.url) if parsed.base_url else e.url
        base = base or e.url
        out: dict[str, None] = {}
        if not directives.nofollow:
            for href in parsed.links:
                n = normalize(href, base)
                if n is not None and n != e.url:
                    out[n] = None
        canonical = normalize(parsed.canonical, base) if parsed.canonical else None
        if canonical and canonical != e.url and not directives.nofollow:
            out.setdefault(canonical, None)
        links = [(u, e.depth + 1, e.url, "page", 0) for u in out]
        update.update(title=parsed.title[:300], canonical=canonical, out_links=len(out))
        if directives.noindex:
            update["reason"] = _directive_reason(directives, header)
            return "noindex", None, links

        soft = classify(
            e.url,
            title=parsed.title,
            heading=parsed.heading,
            text=parsed.text,
            probe=self._probes.get(e.host),
        )
        if soft.is_soft_404:
            # "Not found" in a 200: never indexed, no event, and its links (often
            # "did you mean ..." suggestions that breed more of the same) not followed.
            fp = self.dedup.fingerprint(parsed.text)
            self.dedup.forget(e.url_hash)
            key = self.warc.write_response(
                e.url, 200, res.raw_headers, res.body, fetched_at=res.started, address=res.address
            )
            update.update(
                content_hash=fp.content_hash, simhash=f"0x{fp.simhash:016x}", minhash=None,
                near_eligible=0, storage_key=key, out_links=0, reason=soft.reason,
                dup_of=None, dup_kind=None, dup_score=soft.score,
            )  # fmt: skip
            update.update(self._reschedule(row, changed=False, depth=e.depth))
            self.traps.record(e.url, duplicate=True)
            return "soft-404", None, []

        verdict = self.dedup.check(e.url_hash, parsed.text)
        update.update(
            content_hash=verdict.content_hash,
            simhash=f"0x{verdict.simhash:016x}",
            near_eligible=int(verdict.near_eligible),
            minhash=minhash_to_bytes(verdict.minhash) if verdict.minhash is not None else None,
            etag=res.header("etag"),
            last_modified=res.header("last-modified"),
        )
        if verdict.is_duplicate:
            assert verdict.of is not None
            original = self.store.url_row(verdict.of)
            original_url = original["url"] if original is not None else verdict.of
            if verdict.kind == "exact" and original is not None and original["fetched_at"]:
                key = self.warc.write_revisit(
                    e.url,
                    refers_to=original_url,
                    refers_to_date=original["fetched_at"],
                    digest=verdict.content_hash,
                    fetched_at=res.started,
                )
            else:
                key = self.warc.write_response(
                    e.url, 200, res.raw_headers, res.body,
                    fetched_at=res.started, address=res.address,
                )  # fmt: skip
            update.update(
                storage_key=key, dup_of=original_url, dup_kind=verdict.kind,
                dup_score=verdict.score, minhash=None,
            )  # fmt: skip
            update.update(self._reschedule(row, changed=False, depth=e.depth))
            self.traps.record(e.url, duplicate=True)
            self._counts[f"dup:{verdict.kind}"] += 1
            return "duplicate", None, links

        self.traps.record(e.url, duplicate=False)
        previous = row["content_hash"] if row is not None else None
        changed = previous != verdict.content_hash
        update.update(self._reschedule(row, changed=changed, depth=e.depth))
        update.update(dup_of=None, dup_kind=None, dup_score=None)
        if not changed:
            return "unchanged", None, links
        key = self.warc.write_response(
            e.url, 200, res.raw_headers, res.body, fetched_at=res.started, address=res.address
        )
        update["storage_key"] = key
        if row is not None and row["fetches"]:
            update["changes"] = (row["changes"] or 0) + 1
        event = {
            "type": "PageFetched",
            "url": e.url,
            "urlHash": e.url_hash,
            "fetchedAt": iso(res.started),
            "httpStatus": 200,
            "contentHash": verdict.content_hash,
            "simhash": f"0x{verdict.simhash:016x}",
            "storageKey": key,
            "outLinks": len(links),
            "changed": True,
            "title": parsed.title[:300],
        }
        return "ok", event, links

    def _sitemap_links(
        self, res: FetchResult, e: FrontierEntry
    ) -> tuple[list[tuple[str, int, str | None, str, int]], list[tuple[str, float]]]:
        """URLs (and child sitemaps) listed in a sitemap, and their ``lastmod`` times."""
        out: list[tuple[str, int, str | None, str, int]] = []
        hints: list[tuple[str, float]] = []
        try:
            root = ET.fromstring(res.body)
        except ET.ParseError:
            return out, hints
        is_index = root.tag.endswith("sitemapindex")
        for node in root:
            loc = lastmod = None
            for child in node:
                if child.tag.endswith("loc"):
                    loc = (child.text or "").strip()
                elif child.tag.endswith("lastmod"):
                    lastmod = (child.text or "").strip()
            url = normalize(loc) if loc else None
            if url is None:
                continue
            out.append((url, e.depth + 1, e.url, "sitemap" if is_index else "page", 0))
            if lastmod and not is_index:
                try:
                    stamp = datetime.fromisoformat(lastmod.replace("Z", "+00:00"))
                except ValueError:
                    continue
                if stamp.tzinfo is None:
                    stamp = stamp.replace(tzinfo=UTC)
                hints.append((url, stamp.timestamp()))
        return out, hints

    def _lastmod_hint(self, url: str, lastmod: float) -> None:
        """A sitemap says ``url`` changed at ``lastmod``: if after our copy, make it due now."""
        h = url_hash(url)
        row = self.store.url_row(h)
        if row is None:
            return
        self.store.update_url(h, sitemap_lastmod=lastmod)
        if row["last_fetch"] and lastmod > row["last_fetch"] and row["state"] == "done":
            self.store.update_url(h, next_due=time.time())

    # -- recrawl ----------------------------------------------------------------------
    def _reschedule(self, row: Any, *, changed: bool, depth: int) -> dict[str, Any]:
        """Adaptive recrawl: halve the interval on change, ×1.5 when unchanged, by importance."""
        c = self.config
        previous = row["interval"] if row is not None else None
        if previous is None:
            interval = c.recrawl_initial
        elif changed:
            interval = max(c.recrawl_min, previous / 2)
        else:
            interval = min(c.recrawl_max, previous * 1.5)
        effective = min(c.recrawl_max, max(c.recrawl_min, interval / _importance(depth)))
        return {"interval": interval, "next_due": time.time() + effective}

    async def _enqueue_due(self) -> None:
        rows = self.store.due_for_recrawl(time.time(), limit=500)
        if not rows:
            return
        addresses = await self._addresses({r["host"] for r in rows})
        with self.store.tx():
            for r in rows:
                address = addresses.get(r["host"])
                if not isinstance(address, str):
                    self.store.update_url(r["url_hash"], next_due=None)
                    continue
                if r["kind"] == "page" and self.traps.over_budget(self._admitted[r["host"]]):
                    # This cycle's budget for the host is spent: due again next cycle.
                    end = self._cycle_end()
                    self.store.update_url(r["url_hash"], next_due=end)
                    continue
                overdue = time.time() - (r["next_due"] or time.time())
                level = 0 if r["interval"] and overdue > r["interval"] else 1
                if r["kind"] == "page":
                    self._count_admission(r["host"])
                self.store.update_url(
                    r["url_hash"], state="queued", attempts=0, level=level, cycle=self.cycle
                )
                entry = self._entry(r)
                entry.level, entry.attempts = level, 0
                self.frontier.add(entry, address)
        self._wake.set()

    # -- reporting --------------------------------------------------------------------
    def progress(self) -> CrawlProgress:
        elapsed = time.monotonic() - self._t0
        pages = self._counts["pages"]
        return CrawlProgress(
            elapsed=elapsed,
            pages=pages,
            pages_per_second=pages / elapsed if elapsed > 0 else 0.0,
            requests=self._counts["requests"],
            hosts_active=self.frontier.active_hosts(),
            frontier=len(self.frontier),
            in_flight=len(self._tasks),
            events=self._counts["events"],
            duplicates=self._counts["duplicate"],
            traps_cut=self._counts["cut"],
            blocked=self._counts["blocked"],
            errors=self._counts["errors"] + sum(self._counts[k] for k in FAILED),
            soft_404s=self._counts["soft-404"],
            cycle=self.cycle,
            hosts=[
                {**h, "ready_at": self._ready_wall(float(h["ready_at"]))}  # type: ignore[arg-type]
                for h in self.frontier.snapshot()
            ],
        )

    def report(self, reason: str) -> CrawlReport:
        elapsed = time.monotonic() - self._t0
        dups = {k.split(":", 1)[1]: v for k, v in self._counts.items() if k.startswith("dup:")}
        s = self.seen.stats
        return CrawlReport(
            stop_reason=reason,
            elapsed=elapsed,
            pages=self._counts["pages"],
            requests=self._counts["requests"],
            robots_fetches=self._counts["robots"],
            events=self._counts["events"],
            pages_per_second=self._counts["pages"] / elapsed if elapsed > 0 else 0.0,
            outcomes=self.store.count_outcomes(),
            duplicates=dups,
            traps=self.store.count_cuts(),
            states=self.store.count_states(),
            frontier=len(self.frontier),
            hosts=len(self.frontier.hosts),
            seen={
                "definitely_new": s.definitely_new,
                "maybe_seen": s.maybe_seen,
                "false_positives": s.false_positives,
            },
            resumed_leases=self.resumed_leases,
            cycle=self.cycle,
            soft_404s=self._counts["soft-404"],
        )


def _directive_reason(d: RobotsDirectives, header: str | None) -> str:
    source = f"X-Robots-Tag: {header}" if header else "meta robots"
    flags = [n for n, on in (("noindex", d.noindex), ("nofollow", d.nofollow)) if on]
    return f"{', '.join(flags)} ({source})"


def crawl(config: CrawlConfig) -> CrawlReport:
    """Run a crawl to completion (or its limits) in a fresh event loop."""
    return asyncio.run(Crawler(config).run())
