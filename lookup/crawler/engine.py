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
written. What an answer means is decided by the ordered outcome rules of
:mod:`lookup.crawler.outcomes`; every write goes through the crawl-state writer
(:class:`~lookup.crawler.state.CrawlWriter`), in typed records.

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
import ssl
import time
from collections import Counter
from dataclasses import asdict
from pathlib import Path
from urllib.parse import urlsplit

from lookup.crawler.config import CrawlConfig, CrawlError, CrawlProgress, CrawlReport
from lookup.crawler.dedup import DuplicateDetector, Verdict, minhash_from_bytes
from lookup.crawler.fetcher import (
    HTML_TYPES,
    PAGE_TYPES,
    DnsResolver,
    Fetcher,
    FetchResult,
    ResolveError,
    parse_retry_after,
    tls_context,
)
from lookup.crawler.frontier import Frontier, FrontierEntry, HostTurn, PolitenessPolicy
from lookup.crawler.hooks import CrawlHooks
from lookup.crawler.outcomes import (
    FAILED,
    RETRY_STATUSES,
    SITEMAP_KINDS,
    FetchContext,
    Link,
    RuleKit,
    decide,
    importance,
    probe_signature,
)
from lookup.crawler.output import EventLogWriter, WarcStore, iso
from lookup.crawler.partitions import FencedOut
from lookup.crawler.render import PageRendering
from lookup.crawler.reporting import CrawlReporting
from lookup.crawler.robothops import RobotsHops
from lookup.crawler.robots import RobotsCache
from lookup.crawler.scope import LOOPBACK, CrawlScope
from lookup.crawler.seen import SeenUrls
from lookup.crawler.sitemaps import sitemap_sources
from lookup.crawler.soft404 import ProbeSignature
from lookup.crawler.state import (
    STATE_FILE,
    CrawlStateError,
    CrawlWriter,
    CutRecord,
    CycleRecord,
    FetchedUrl,
    FetchRecord,
    FrontierHostState,
    HostPause,
    RedirectRecord,
    UrlRecord,
    crawl_state_url,
    open_crawl_store,
)
from lookup.crawler.steering import Steering
from lookup.crawler.traps import TrapGuard
from lookup.kit.urlnorm import host_of, normalize_url, url_hash

__all__ = ["CrawlConfig", "CrawlError", "CrawlProgress", "CrawlReport", "Crawler", "crawl"]

log = logging.getLogger("lookup.crawler")


def _level(depth: int, kind: str = "page", redirected: bool = False) -> int:
    if kind in SITEMAP_KINDS or redirected or depth <= 1:
        return 0
    return 1 if depth <= 4 else 2


class Crawler(CrawlHooks, RobotsHops, CrawlReporting, PageRendering):
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
        self.store: CrawlWriter
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
                steer = asyncio.create_task(self.steering.run())
                try:
                    reason = await self._loop()
                finally:
                    progress.cancel()
                    state.cancel()
                    steer.cancel()
                    await self._drain()
                    await self._close_rendering()
                    try:
                        self._flush_frontier()  # the state a resumed crawl starts from
                    except CrawlStateError:
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
        existed = (self.out / STATE_FILE).exists()
        self.store = open_crawl_store(crawl_state_url(self.out))
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
        if c.resume and c.scope.unlimited and self.store.get_meta("scope"):
            c.scope = CrawlScope(**self.store.get_meta("scope"))  # the scope it started with
        if c.resume and c.ca_bundle is None and self.store.get_meta("ca_bundle"):
            kept = Path(self.store.get_meta("ca_bundle"))
            c.ca_bundle = kept if kept.is_file() else None
        if c.ca_bundle is not None:
            try:
                tls_context(c.ca_bundle)
            except (OSError, ssl.SSLError) as exc:
                self._close()
                raise CrawlError(f"cannot use {c.ca_bundle} as a CA bundle: {exc}") from None
        self.resolver = DnsResolver(
            table={k.lower(): v for k, v in c.hosts.items()},
            strict=c.strict_hosts,
            allowed=tuple(c.allow_ranges) + (() if c.allow_any_address else LOOPBACK),
            public=c.allow_any_address,
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
        self.store.set_meta("scope", c.scope.to_meta())
        self.store.set_meta("cycle_seconds", c.cycle_seconds)
        if c.resume:
            self._restore()
            expired = (
                c.cycle_seconds is not None and time.time() - self._cycle_started >= c.cycle_seconds
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
            self.store.add_cycle(CycleRecord(1, now, "start"))
            self.cycle, self._cycle_started = 1, now
        self.warc = WarcStore(self.out, agent=c.user_agent)
        self.events = EventLogWriter(self.out / "events.jsonl")
        self.steering = Steering.open(self, crawl_state_url(self.out), "crawl")
        self._rules = RuleKit(c, self.dedup, self.warc, self.traps, self._probes, self.store.url,
                              self.store.names_canonical)  # fmt: skip

    def _close(self) -> None:
        for name in ("warc", "events", "steering"):
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
        with self.store.transaction():
            self.resumed_leases = self.store.release_stale_leases()
            self.cycle = int(self.store.get_meta("cycle", 1))
            self._cycle_started = float(
                self.store.get_meta("cycle_started_at", self.store.get_meta("started_at", now_wall))
            )
            if not self.store.cycles():  # a crawl from before cycles: its budget so far
                self.store.add_cycle(CycleRecord(1, self._cycle_started, "start"))
                for known in self.store.hosts():
                    self.store.bump_budget(known.host, 1, known.admitted)
        self._admitted = Counter(self.store.budget_used(self.cycle))
        for h in self.store.hosts():
            if h.scheme:
                self._schemes[h.host] = h.scheme
            if h.probe_url:
                self._probe_urls[h.host] = h.probe_url
                self._probe_attempts[h.host] = h.probe_attempts
            if h.probe_status is not None:
                self._probes[h.host] = ProbeSignature.from_host(h)
            self.robots.restore(h, now_wall)
        for row in self.store.originals():
            assert row.content_hash is not None  # originals() selects pages with a content hash
            self.dedup.register(
                row.url_hash,
                Verdict(
                    None,
                    None,
                    row.content_hash,
                    int(row.simhash, 16) if row.simhash else 0,
                    minhash_from_bytes(row.minhash) if row.minhash else None,
                    shingle_count=10**6 if row.near_eligible else 0,
                ),
            )
        for url, outcome in self.store.indexed_outcomes():
            self.traps.record(url, duplicate=outcome == "duplicate")
        hosts = {h.host: h for h in self.store.hosts()}
        for row in self.store.queued():
            hrow = hosts.get(row.host)
            address = hrow.address if hrow is not None else None
            if not address:
                continue  # resolved lazily below
            self._schemes.setdefault(row.host, urlsplit(row.url).scheme)
            self.frontier.add(self._entry(row), address)
        # A host may have been fetched just before the crash: wait one delay first.
        now = time.monotonic()
        for host in list(self.frontier.hosts):
            hrow = hosts.get(host)
            last = float(hrow.last_delay or 0) if hrow is not None else 0.0
            crawl_delay = hrow.crawl_delay if hrow is not None else None
            # The whole last pause again from now (a kill may have come after the last
            # write of the ready time), or the frontier's own ready time if it is later.
            ready = now + max(last, crawl_delay or 0.0, self.config.min_delay)
            if hrow is not None and hrow.ready_at and hrow.robots_state in ("rules", "allow-all"):
                ready = max(ready, now + (hrow.ready_at - now_wall))
            self.frontier.set_ready(host, ready)
            policy = self.robots.get(host)
            if policy is not None:
                self.frontier.robots_known(host, crawl_delay=policy.crawl_delay)
                self.frontier.probe_needed(host, self._wants_probe(host))

    @staticmethod
    def _entry(row: UrlRecord) -> FrontierEntry:
        r = row
        return FrontierEntry(
            r.url, r.url_hash, r.host, r.depth, r.level, r.kind, r.redirects, r.attempts, r.seq
        )

    async def _add_seeds(self) -> None:
        for seed in self.config.seeds:
            url = normalize_url(seed)
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

    async def _admit_many(self, items: list[Link]) -> list[str]:
        """Resolve hosts (awaiting), then admit each URL (no awaits: one transaction)."""
        addresses = await self._addresses({host_of(u) for u, *_ in items})
        with self.store.transaction():
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
        cut = self.steering.check_url(url) or self.config.scope.check(url)
        cut = cut or self.traps.check_url(url, depth)
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
        seq = self._next_seq(url)
        row = UrlRecord(
            part=self._partition(address),
            url_hash=h,
            url=url,
            host=host,
            state="cut" if cut else "queued",
            kind=kind,
            depth=depth,
            level=level,
            seq=seq,
            redirects=redirects,
            found_on=found_on,
            discovered_at=time.time(),
            importance=importance(depth),
            cycle=self.cycle,
            outcome=f"trap:{cut[0]}" if cut else None,
            reason=cut[1] if cut else None,
        )
        if not self.seen.check(row):
            return "seen"
        if cut:
            self.store.add_cut(CutRecord(url, host, cut[0], cut[1]))
            self._counts["cut"] += 1
            return "cut"
        if isinstance(address, Exception) or address is None:
            self.store.settle_url(h, "failed", "unresolvable", str(address or "no address"))
            self._counts["errors"] += 1
            return "unresolvable"
        policy = self.robots.get(host)
        if policy is not None and not policy.allows(url):
            self.store.settle_url(h, "blocked", "robots-disallowed", policy.decision(url))
            self._counts["blocked"] += 1
            return "blocked"
        self._schemes.setdefault(host, urlsplit(url).scheme)
        self.store.ensure_host(host, address, self._schemes[host])
        if kind == "page":
            self._count_admission(host)
        entry = FrontierEntry(url, h, host, depth, level, kind, redirects, 0, seq)
        self._enqueue(entry, address)
        self._wake.set()
        return "queued"

    def _count_admission(self, host: str) -> None:
        """One more page of ``host``'s budget spent in this cycle (durably)."""
        self._admitted[host] += 1
        self.store.count_host(host, "admitted")
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
        hosts = {h.host: h for h in self.store.hosts()}
        readmitted = 0
        with self.store.transaction():
            self.store.set_meta("cycle", self.cycle)
            self.store.set_meta("cycle_started_at", now)
            self.store.add_cycle(CycleRecord(self.cycle, now, reason))
            for row in self.store.deferred():
                host = row.host
                hrow = hosts.get(host)
                if hrow is None or not hrow.address:
                    continue
                if self.traps.over_budget(self._admitted[host]):
                    continue  # still deferred: this cycle's budget is spent too
                policy = self.robots.get(host)
                if policy is not None and not policy.allows(row.url):
                    self.store.settle_url(
                        row.url_hash, "blocked", "robots-disallowed", policy.decision(row.url)
                    )
                    continue
                self._count_admission(host)
                self.store.readmit_deferred(
                    row.url_hash, cycle=self.cycle,
                    reason=f"deferred by the host budget; admitted in cycle {self.cycle}",
                )  # fmt: skip
                entry = self._entry(row)
                entry.attempts = 0
                self._schemes.setdefault(host, urlsplit(row.url).scheme)
                self.frontier.add(entry, hrow.address)
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
            await self._tick()
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
                lease = self._next_lease(now)
                if lease is None:
                    break
                if lease.kind == "page":
                    self._pages_leased += 1
                task = asyncio.create_task(self._work(lease))
                self._tasks.add(task)
                task.add_done_callback(self._task_done)
            if not self._tasks and not c.recrawl and (done := self._finished()) is not None:
                return done
            nxt = self.frontier.next_ready_at()
            wait = 0.5 if nxt is None else max(0.0, min(nxt - time.monotonic(), 0.5))
            if len(self._tasks) >= c.concurrency:  # every slot busy: a task's end wakes us
                wait = 0.5  # (a host due now must not spin the loop and starve the fetches)
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

    def _flush_frontier(self) -> None:
        """Write the frontier's own per-host state (ready time, queue, in flight) to the store."""
        offset = time.time() - time.monotonic()
        now = time.time()
        self.store.write_frontier_state(
            [
                FrontierHostState(
                    hq.host,
                    hq.ready_at + offset,
                    len(hq),
                    int(hq.in_flight),
                    int(hq.waiting_robots),
                    now,
                )  # fmt: skip
                for hq in self.frontier.hosts.values()
            ]
        )

    async def _work(self, lease: HostTurn) -> None:
        try:
            if lease.kind == "robots":
                await self._do_robots(lease)
            elif lease.kind == "probe":
                await self._do_probe(lease)
            else:
                await self._do_page(lease)
        except asyncio.CancelledError:
            raise
        except FencedOut as exc:
            self._fenced_out(lease, exc)
        except Exception:  # noqa: BLE001 - one bad page must never stop the crawl
            log.exception("processing %s failed", lease.entry.url if lease.entry else lease.host)
            self._counts["errors"] += 1
            hq = self.frontier.host(lease.host)
            if hq is not None and hq.in_flight:
                self.frontier.complete(lease, 0.0)
            if lease.entry is not None:
                with contextlib.suppress(Exception):  # the store away: it stays leased
                    try:  # a commit the server ended (a frozen writer): is the fence ours?
                        with self.store.transaction():
                            self.store.settle_url(lease.entry.url_hash, "failed", "crawler-error")
                    except FencedOut as exc:
                        self._fenced_out(lease, exc)

    # -- robots.txt -----------------------------------------------------------------
    async def _do_robots(self, lease: HostTurn) -> None:
        c = self.config
        host = lease.host
        scheme = self._schemes.get(host, "http")
        own_delay: list[float] = []  # set once this host's lease is given back for a hop

        async def hop(url: str, took: float) -> FetchResult:
            if not own_delay:  # this host's request is over: its pause starts now
                own_delay.append(self.frontier.complete(lease, took))
                self.frontier.hold(host)
            return await self._robots_hop(url)

        answer = await self.robots.read(self.fetcher, host, scheme, hop)
        policy, res = answer.policy, answer.result
        if res.status is not None:  # archived as it was answered, whatever it said
            self.warc.write_response(
                res.url, res.status, res.raw_headers, res.body,
                fetched_at=res.started, address=res.address, request=res.sent,
            )  # fmt: skip
        failing = self._robots_known(host, scheme, policy)
        extra_wait = c.robots_retry if failing else 0.0
        if own_delay:
            delay = own_delay[0]
            self.frontier.unhold(host)
            if failing:
                self.frontier.set_ready(host, time.monotonic() + extra_wait)
        else:
            delay = self.frontier.complete(lease, answer.took, extra_wait=extra_wait)
        self._counts["robots"] += 1
        self.steering.answered(host, "robots", res.status, policy.state, delay)
        self._counts["robots-unparseable"] += policy.reason.startswith("unparseable")
        self._counts["requests"] += 1 + answer.hops
        found = sitemap_sources(policy.state, policy.sitemaps, f"{scheme}://{host}")
        items = [(n, 0, answer.url, k, 0) for u, k in found if (n := normalize_url(u))]
        items = items if c.follow_sitemaps else []
        with self.store.transaction():
            self.store.record_robots(
                host, answer.record, self._pause(host, delay), self._probe_urls.get(host)
            )
            self.store.add_fetch(
                FetchRecord(
                    answer.url,
                    host,
                    lease.address,
                    "robots",
                    res.started,
                    answer.took,
                    res.status,
                    policy.state,
                    delay,
                )  # fmt: skip
            )
        if items:
            await self._admit_many(items)

    # -- the soft-404 probe -------------------------------------------------------------
    def _wants_probe(self, host: str) -> bool:
        return self.config.soft404_probe and host not in self._probes

    async def _do_probe(self, lease: HostTurn) -> None:
        """Ask ``host`` for a URL that cannot exist: what does its "not found" look like?"""
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
        signature = probe_signature(res, host, url, attempts, self.config)
        if signature is not None:
            self._probes[host] = signature
            self.frontier.probe_needed(host, False)
        outcome = f"probe:{res.error or res.status}"
        answer = signature.answer if signature is not None else None
        with self.store.transaction():
            self.store.record_probe(host, url, attempts, self._pause(host, delay), answer)
            self.store.add_fetch(self._fetch_record(lease, url, "probe", res, outcome, delay))

    # -- one page ---------------------------------------------------------------------
    async def _do_page(self, lease: HostTurn) -> None:
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
            with self.store.transaction():
                self.store.settle_url(
                    e.url_hash, "blocked", "robots-disallowed", policy.decision(e.url)
                )
            self._counts["blocked"] += 1
            return
        if self.traps.pattern_verdict(e.url) == "cut":
            self._pages_leased -= 1
            self.frontier.release(lease)
            with self.store.transaction():
                detail = "this URL pattern keeps producing duplicates"
                self.store.settle_url(e.url_hash, "cut", "trap:duplicate-pattern", detail)
                self.store.add_cut(CutRecord(e.url, e.host, "duplicate-pattern", detail))
            self._counts["cut"] += 1
            return
        row = self.store.url(e.url_hash)
        conditional: dict[str, str] = {}
        if row is not None and row.fetches:
            if row.etag:
                conditional["If-None-Match"] = row.etag
            elif row.last_modified:
                conditional["If-Modified-Since"] = row.last_modified
        with self.store.transaction():
            self.store.lease_url(e.url_hash, time.time() + c.lease_seconds)
        accept = PAGE_TYPES if e.kind == "page" else None
        res = await self.fetcher.fetch(e.url, accept=accept, conditional=conditional)
        retry_after = parse_retry_after(res.header("retry-after"))
        delay = self.frontier.complete(lease, res.took, status=res.status, retry_after=retry_after)
        self._counts["requests"] += 1
        if res.ok and res.status not in RETRY_STATUSES:
            self._counts["pages"] += 1
        res = await self._render_tier_pass(e, res)  # a script-built page: its render
        await self._handle(e, lease, res, row, delay, retry_after)

    async def _handle(
        self,
        e: FrontierEntry,
        lease: HostTurn,
        res: FetchResult,
        row: UrlRecord | None,
        delay: float,
        retry_after: float | None,
    ) -> None:
        """Judge the answer by the outcome rules, then commit the URL, its links and the fetch."""
        ctx = FetchContext(e, res, row, delay, retry_after, self._rules)
        outcome = decide(ctx)
        if outcome.attempts is not None:
            e.attempts = outcome.attempts
        if outcome.requeue:
            state = "queued"
        else:
            state = "failed" if outcome.name in FAILED else "done"
        fetched = FetchedUrl(
            e.url_hash, state, outcome.name, e.attempts, res.status, iso(res.started),
            res.started,
            fetches=(row.fetches if row is not None else 0) + 1 if state == "done" else None,
            facts=outcome.facts,
        )  # fmt: skip
        self._counts[outcome.name.split(":")[0]] += 1
        self.steering.answered(e.host, e.kind, res.status, outcome.name, delay)  # metrics, blocks

        # Write the page and its event before the commit that marks the URL done.
        events = [ev for ev in (outcome.event, *outcome.also) if ev]
        self._note_rendered(events, res, e.url)
        self._emit_events(events)
        self._counts["events"] += len(events)

        links = outcome.links
        hop = outcome.name in ("redirect", "meta-refresh")
        redirect_target = links[0][0] if hop and links else None
        admitted = await self._addresses({host_of(u) for u, *_ in links})
        with self.store.transaction():
            self._commit_events(events)
            self.store.record_fetched(fetched)
            if outcome.supersedes:  # the cluster's declared canonical replaces it
                self.store.supersede(*outcome.supersedes)
            if outcome.promotes:
                self.store.promote(outcome.promotes)
            if outcome.host_counter:
                self.store.count_host(e.host, outcome.host_counter)
            self.store.count_host(e.host, "fetched")
            self.store.set_host_pause(e.host, self._pause(e.host, delay))
            self.store.add_fetch(self._fetch_record(lease, e.url, e.kind, res, outcome.name, delay))
            if redirect_target is not None:
                assert res.status is not None
                self.store.add_redirect(RedirectRecord(e.url, redirect_target, res.status))
            try:
                for url, depth, found_on, kind, redirects in self._admission_order(links):
                    if kind == "redirect-limit":
                        self.store.add_cut(
                            CutRecord(url, host_of(url), "redirect-limit", f"after {e.url}")
                        )
                        self._counts["cut"] += 1
                        continue
                    verdict = self._admit(url, depth, found_on, kind, redirects, admitted)
                    if redirect_target == url and verdict == "seen":
                        self.store.note_reason(
                            e.url_hash, f"→ {url} (already known: a loop or a duplicate)"
                        )
            finally:
                self._links_admitted()
            for url, lastmod in outcome.hints:
                self._lastmod_hint(url, lastmod)
        if outcome.requeue:
            self.frontier.requeue(e, lease.address)

    def _pause(self, host: str, delay: float) -> HostPause:
        """The pause after a request to ``host`` and its frontier ready time (wall clock)."""
        return HostPause(delay, self._ready_wall(self.frontier.hosts[host].ready_at))

    @staticmethod
    def _fetch_record(
        lease: HostTurn, url: str, kind: str, res: FetchResult, outcome: str, delay: float
    ) -> FetchRecord:
        return FetchRecord(
            url, lease.host, lease.address, kind, res.started, res.took, res.status, outcome, delay
        )

    def _lastmod_hint(self, url: str, lastmod: float) -> None:
        """A sitemap says ``url`` changed at ``lastmod``: if after our copy, make it due now."""
        h = url_hash(url)
        row = self.store.url(h)
        if row is None:
            return
        self.store.set_sitemap_lastmod(h, lastmod)
        if row.last_fetch and lastmod > row.last_fetch and row.state == "done":
            self.store.set_next_due(h, time.time())

    # -- recrawl ----------------------------------------------------------------------
    async def _enqueue_due(self) -> None:
        rows = self.store.due_for_recrawl(time.time(), limit=500)
        if not rows:
            return
        addresses = await self._addresses({r.host for r in rows})
        with self.store.transaction():
            for r in rows:
                address = addresses.get(r.host)
                if not isinstance(address, str):
                    self.store.set_next_due(r.url_hash, None)
                    continue
                if r.kind == "page" and self.traps.over_budget(self._admitted[r.host]):
                    # This cycle's budget for the host is spent: due again next cycle.
                    self.store.set_next_due(r.url_hash, self._cycle_end())
                    continue
                overdue = time.time() - (r.next_due or time.time())
                level = 0 if r.interval and overdue > r.interval else 1
                if r.kind == "page":
                    self._count_admission(r.host)
                self.store.requeue_due(r.url_hash, level=level, cycle=self.cycle)
                entry = self._entry(r)
                entry.level, entry.attempts = level, 0
                self.frontier.add(entry, address)
        self._wake.set()


def crawl(config: CrawlConfig) -> CrawlReport:
    """Run a crawl to completion (or its limits) in a fresh event loop."""
    return asyncio.run(Crawler(config).run())
