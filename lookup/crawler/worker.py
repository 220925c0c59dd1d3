"""One fleet worker: the crawl loop over the partitions it holds, under leases and fences.

A :class:`FleetWorker` is the embedded crawl loop (:class:`lookup.crawler.engine.Crawler`)
with its fleet seams (:mod:`lookup.crawler.hooks`) filled in:

- **State** is the shared PostgreSQL store (:mod:`lookup.crawler.state.postgres`); the worker's
  WARC files and event log go to ``OUT/<worker>/``.
- **Leases.** :class:`~lookup.crawler.leases.PartitionLeases` holds its partitions in
  etcd. Every turn of the loop the worker syncs: a newly granted partition is recorded
  with its epoch in the store and **taken over** from it — that partition's URLs in
  flight go back to its queue, and its queue, host ready times, robots.txt cache and
  probes are loaded (nothing of any other partition is touched); a partition lost or
  handed over leaves the frontier.
- **Before every request** the lease is asked (:meth:`PartitionLeases.permits`): past its
  local deadline — etcd unreachable, or this process frozen — nothing new starts; a
  partition being handed over gets no new work and is released once its requests in
  flight are done.
- **Fencing.** Each request's task runs with ``current_fence = (partition, epoch)``, so
  every write it makes is checked by the store against the partition's current epoch
  in the same transaction. A refused write drops the partition at once, logged.
- **Politeness across the fleet.** Partitions are by address (see
  :mod:`lookup.crawler.partitions`): all names on one address are in one partition, so
  one worker's frontier — one request per host and per address, after the host's
  delay — holds for the whole fleet, and a takeover waits the host's last delay (or its
  stored ready time, if later) before the first request.
- **Discovered links** of other partitions are written to the store (the primary key is
  the fleet's seen-set); their owner polls for them every ``crawl_pickup_interval``,
  and with them each host's page budget spent fleet-wide (so a host's budget can be
  overshot only by what other workers admit for it within one poll).
- **One memory.** Before judging an answer (and at every poll) the worker reads the page
  fetches the others committed since its last look: each original's fingerprints go
  into its duplicate check and each outcome into the trap rules' URL-pattern counts, so
  a copy of a page another worker fetched is its duplicate and a pattern another worker
  found breeding duplicates is cut here too — as in the embedded crawl's one process.
- **Done** when nothing is in flight or queued anywhere in the fleet (URLs waiting for
  an unreadable robots.txt aside, as in the embedded crawl).
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from lookup import settings
from lookup.crawler.config import CrawlConfig
from lookup.crawler.dedup import DuplicateDetector
from lookup.crawler.fetcher import DnsResolver, FetchResult
from lookup.crawler.frontier import Frontier, FrontierEntry, HostTurn, PolitenessPolicy
from lookup.crawler.leases import PartitionLeases
from lookup.crawler.outcomes import Link, RuleKit, stored_verdict
from lookup.crawler.output import WarcStore
from lookup.crawler.partitions import Fence, FencedOut, current_fence, partition_of
from lookup.crawler.robots import RobotsCache
from lookup.crawler.scope import LOOPBACK
from lookup.crawler.seen import SeenStats, SeenUrls
from lookup.crawler.soft404 import ProbeSignature
from lookup.crawler.state import CrawlStateError, CrawlWriter, CycleRecord, HostRecord, UrlRecord
from lookup.crawler.state.postgres import PgCrawlStore
from lookup.crawler.steering import Steering
from lookup.crawler.traps import TrapGuard
from lookup.errors import Unavailable
from lookup.kit.engines.etcd import etcd_client
from lookup.kit.urlnorm import host_of, url_hash

from lookup.crawler.engine import Crawler  # isort: skip - the loop this worker extends

__all__ = ["FleetOptions", "FleetWorker", "Takeover", "coordinator_url"]

log = logging.getLogger("lookup.crawler.fleet")


def coordinator_url(url: str) -> str:
    """``etcd://host:port`` (or ``http://…``) as the etcd gateway's http URL."""
    parts = urlsplit(url)
    if parts.scheme not in ("etcd", "http", "https") or not parts.hostname:
        raise ValueError(f"not an etcd coordinator URL: {url!r} (etcd://host:port)")
    scheme = "http" if parts.scheme == "etcd" else parts.scheme
    return f"{scheme}://{parts.hostname}:{parts.port or 2379}"


@dataclass(frozen=True)
class FleetOptions:
    """Where a worker's fleet is and who it is."""

    store_url: str
    coordinator: str  # etcd://host:port
    worker: str
    crawl: str = "crawl"  # the etcd key prefix: one fleet per name
    partitions: int | None = None  # None: the crawl_partitions setting (or the store's)
    lease_ttl: float | None = None  # None: the crawl_lease_ttl setting
    pickup_interval: float | None = None  # None: the crawl_pickup_interval setting


@dataclass(frozen=True)
class Takeover:
    """One partition this worker took over: what it found and how long it took."""

    partition: int
    epoch: int
    at: float  # wall clock
    queued: int
    requeued: int  # URLs in flight under the previous epoch, queued again
    hosts: int
    took: float  # seconds


class _SharedSeen(SeenUrls):
    """The fleet's seen-set is the store's primary key: other workers add URLs too, so no
    local filter can say "definitely new"; every admission is one insert-if-absent."""

    def __init__(self, store: CrawlWriter) -> None:  # noqa: D107 - no Bloom filter to build
        self.store = store
        self.stats = SeenStats()

    def check(self, row: UrlRecord) -> bool:
        new = self.store.insert_url(row, if_absent=True)
        if new:
            self.stats.definitely_new += 1
        else:
            self.stats.maybe_seen += 1
        return new


class FleetWorker(Crawler):
    """The crawl loop of one fleet worker (see the module doc); :meth:`run` it."""

    store: PgCrawlStore

    def __init__(self, config: CrawlConfig, fleet: FleetOptions) -> None:
        super().__init__(config)
        self.fleet = fleet
        self.out = Path(config.out_dir) / fleet.worker
        self.partitions = fleet.partitions or int(settings.get("crawl_partitions"))
        ttl = fleet.lease_ttl or float(settings.get("crawl_lease_ttl"))
        self.lease_ttl = max(2, round(ttl))
        self.pickup_interval = fleet.pickup_interval or float(settings.get("crawl_pickup_interval"))
        self.leases: PartitionLeases | None = None
        self._held: dict[int, int] = {}  # partition -> epoch, taken over from the store
        self._loaded: dict[int, set[str]] = {}  # partition -> url hashes in the frontier
        self._host_part: dict[str, int] = {}
        self._inflight: Counter[int] = Counter()
        self._lease_epoch: dict[int, tuple[int, int]] = {}  # id(lease) -> (part, epoch)
        self._cursor = 0
        self._pages_cursor = 0
        self._pages_known: set[int] = set()  # fetch ids learnt from the store
        self._found_seq: dict[str, int] = {}  # URL -> its place on the page being admitted
        self._page_links: list[tuple[FrontierEntry, str]] | None = None
        self._last_poll = 0.0
        self._last_done_check = 0.0
        self._last_sweep = 0.0
        self.takeovers: list[Takeover] = []
        self.fenced: list[str] = []

    # -- setup ------------------------------------------------------------------------
    def _open(self) -> None:
        c = self.config
        self.out.mkdir(parents=True, exist_ok=True)
        self.store = PgCrawlStore(
            self.fleet.store_url, partitions=self.partitions, worker=self.fleet.worker
        )
        self.partitions = int(self.store.set_meta_once("partitions", self.partitions))
        self.store.partitions = self.partitions
        now = time.time()
        for key, value in (
            ("seeds", c.seeds), ("hosts", c.hosts), ("strict_hosts", c.strict_hosts),
            ("agent", c.user_agent), ("started_at", now), ("cycle", 1),
            ("cycle_started_at", now), ("host_budget", c.traps.host_budget),
            ("scope", c.scope.to_meta()),
        ):  # fmt: skip
            self.store.set_meta_once(key, value)
        self.store.add_cycle(CycleRecord(1, float(self.store.get_meta("started_at")), "start"))
        self._cycle_started = float(self.store.get_meta("cycle_started_at"))
        self.resolver = DnsResolver(
            table={k.lower(): v for k, v in c.hosts.items()},
            strict=c.strict_hosts,
            allowed=tuple(c.allow_ranges) + (() if c.allow_any_address else LOOPBACK),
            public=c.allow_any_address,
        )
        self.robots = RobotsCache(c.agent, ttl=c.robots_ttl, retry=c.robots_retry)
        self.frontier = Frontier(PolitenessPolicy(c.min_delay, c.delay_factor, c.max_backoff))
        self.traps = TrapGuard(c.traps)
        self.dedup = DuplicateDetector(use_minhash=c.use_minhash)
        self.seen = _SharedSeen(self.store)
        self._seq = self.store.max_seq()
        self.resumed_leases = 0
        self._admitted = Counter(self.store.budget_used(1))
        self._learn_fleet_pages(initial=True)  # the fleet's duplicate and trap memory so far
        # Storage keys name the worker's directory: the store's keys are read fleet-wide (a
        # duplicate of another worker's page refers to that worker's record).
        self.warc = WarcStore(self.out, key_prefix=f"{self.fleet.worker}/", agent=c.user_agent)
        self._rules = RuleKit(c, self.dedup, self.warc, self.traps, self._probes, self.store.url,
                              self.store.names_canonical)  # fmt: skip
        self.steering = Steering.open(self, self.fleet.store_url, self.fleet.worker)
        client = etcd_client(coordinator_url(self.fleet.coordinator))
        self._cursor = self.store.queue_cursor()
        self.leases = PartitionLeases(
            client, self.fleet.crawl, self.fleet.worker, self.partitions, self.lease_ttl
        ).start()
        log.info("worker %s joined: %d partitions, lease TTL %d s",
                 self.fleet.worker, self.partitions, self.lease_ttl)  # fmt: skip

    def _close(self) -> None:
        if self.leases is not None:
            self.leases.stop()
        super()._close()

    # -- partitions ---------------------------------------------------------------------
    def _partition(self, address: str | Exception | None) -> int:
        return partition_of(address, self.partitions) if isinstance(address, str) else 0

    async def _tick(self) -> None:
        try:
            self._sync_partitions()
            if time.monotonic() - self._last_sweep >= 1.0:
                self._last_sweep = time.monotonic()
                self._sweep()
            if time.monotonic() - self._last_poll >= self.pickup_interval:
                self._last_poll = time.monotonic()
                self._pick_up()
                self._learn_fleet_pages()
        except (Unavailable, CrawlStateError) as exc:  # the store is away: try again next turn
            log.warning("worker %s: partition sync failed: %s", self.fleet.worker, exc)

    def _sync_partitions(self) -> None:
        assert self.leases is not None
        owned = self.leases.owned()
        live = self.leases.live()
        draining = self.leases.draining()
        for part, epoch in list(self._held.items()):
            if part in draining:
                if self._inflight[part] == 0:
                    self._drop(part, "handed over to its preferred worker")
                    self.leases.release(part)
            elif live and owned.get(part) != epoch:
                self._drop(part, "its lease is gone")
            # not live: suspended (no new requests) until renewed in time, or lost
        for part in draining - set(self._held):  # granted, then preferred elsewhere before
            self.leases.release(part)  # this loop took it over: nothing in flight, hand over
        for part, epoch in sorted(owned.items()):
            if part not in self._held:
                self._take(part, epoch)

    def _take(self, part: int, epoch: int) -> None:
        """Take ``part`` over from the store: only its own leases, queue and hosts."""
        assert self.leases is not None
        t0 = time.monotonic()
        granted = self.store.grant_partition(part, epoch, self.fleet.worker, time.time())
        if granted is None:  # an old writer's transaction still holds it: next turn
            log.info("worker %s: partition %d still locked by its old owner", self.fleet.worker,
                     part)  # fmt: skip
            return
        if not granted:
            self.leases.drop(part, f"the store holds a newer grant than epoch {epoch}")
            return
        token = current_fence.set(Fence(part, epoch))
        try:
            with self.store.transaction():
                requeued = self.store.take_over(part)
            hosts = self.store.partition_hosts(part)
            queue = self.store.partition_queue(part)
        except FencedOut as exc:
            self.leases.drop(part, str(exc))
            return
        finally:
            current_fence.reset(token)
        self._held[part] = epoch
        self._loaded[part] = set()
        for host, hq in list(self.frontier.hosts.items()):  # nothing stale of an old grant
            if partition_of(hq.address, self.partitions) == part:
                self.frontier.forget_host(host)
        self._restore_hosts(part, hosts, queue)
        took = time.monotonic() - t0
        self.takeovers.append(
            Takeover(part, epoch, time.time(), len(queue), requeued, len(hosts), took)
        )
        if queue or requeued:
            log.info(
                "worker %s took partition %d (epoch %d): %d queued, %d in flight requeued, "
                "%d hosts, %.0f ms", self.fleet.worker, part, epoch, len(queue), requeued,
                len(hosts), took * 1000,
            )  # fmt: skip
        self._wake.set()

    def _restore_hosts(self, part: int, hosts: list[HostRecord], queue: list[UrlRecord]) -> None:
        """The embedded crawl's resume, for one partition's hosts and queue."""
        now_wall, now = time.time(), time.monotonic()
        by_host = {h.host: h for h in hosts}
        for h in hosts:
            self._host_part[h.host] = part
            if h.scheme:
                self._schemes[h.host] = h.scheme
            if h.probe_url:
                self._probe_urls[h.host] = h.probe_url
                self._probe_attempts[h.host] = h.probe_attempts
            if h.probe_status is not None:
                self._probes[h.host] = ProbeSignature.from_host(h)
            self.robots.restore(h, now_wall)
        for row in queue:
            hrow = by_host.get(row.host)
            if hrow is not None and hrow.address:
                self._add_loaded(part, row, hrow.address)
        # The previous owner may have fetched just before it stopped: wait the host's whole
        # last pause from now (or its stored ready time, if later) — and, since hosts on
        # one address share its turns, the latest of those over every host on the address.
        # (An unreadable robots.txt is read again at once, as after a restart.)
        by_address: dict[str, float] = {}
        for h in hosts:
            ready = now + max(float(h.last_delay or 0), h.crawl_delay or 0.0,
                              self.config.min_delay)  # fmt: skip
            if h.ready_at and h.robots_state in ("rules", "allow-all"):
                ready = max(ready, now + (h.ready_at - now_wall))
            if h.address:
                by_address[h.address] = max(by_address.get(h.address, 0.0), ready)
        for address, ready in by_address.items():
            self.frontier.delay_address(address, ready)
        for host in {r.host for r in queue} & set(self.frontier.hosts):
            host_address = by_host[host].address
            if host_address:
                self.frontier.set_ready(host, by_address[host_address])
            # The back-off goes on from where the previous owner left it (429/503 doubling).
            self.frontier.hosts[host].last_delay = float(by_host[host].last_delay or 0)
            policy = self.robots.get(host)
            if policy is not None:
                self.frontier.robots_known(host, crawl_delay=policy.crawl_delay)
                self.frontier.probe_needed(host, self._wants_probe(host))

    def _add_loaded(self, part: int, row: UrlRecord, address: str) -> None:
        self._schemes.setdefault(row.host, urlsplit(row.url).scheme)
        self._host_part[row.host] = part
        self._loaded[part].add(row.url_hash)
        self.frontier.add(self._entry(row), address)

    def _pick_up(self) -> None:
        """Queued URLs other workers wrote into this worker's partitions since the last poll."""
        rows, self._cursor = self.store.queued_since(sorted(self._held), self._cursor)
        # Every worker admits URLs for every host: the budget spent is the fleet's sum.
        for host, used in self.store.budget_used(self.cycle).items():
            self._admitted[host] = max(self._admitted[host], used)
        fresh_hosts: set[str] = set()
        for row, address in rows:
            loaded = self._loaded.get(row.part)
            if loaded is None or row.url_hash in loaded:
                continue
            if row.host not in self.frontier.hosts:
                fresh_hosts.add(row.host)
            self._add_loaded(row.part, row, address)
            self._wake.set()
        for host in fresh_hosts:  # a host new here may have robots.txt read by another owner
            for h in self.store.partition_hosts(self._host_part[host]):
                if h.host == host:
                    self.robots.restore(h, time.time())
                    policy = self.robots.get(host)
                    if policy is not None and host in self.frontier.hosts:
                        self.frontier.robots_known(host, crawl_delay=policy.crawl_delay)
                        self.frontier.probe_needed(host, self._wants_probe(host))

    def _learn_fleet_pages(self, *, initial: bool = False) -> None:
        """What the other workers' page fetches taught, committed since the last look:
        each original's fingerprints into the duplicate check, each outcome into the trap
        rules' URL-pattern counts — as if this worker had fetched them (the embedded
        crawl's one memory). ``initial``: everything so far, this worker's own included."""
        rows, self._pages_cursor = self.store.pages_fetched_since(
            0 if initial else self._pages_cursor, not_by=None if initial else self.fleet.worker
        )
        for fetch_id, row in rows:
            if fetch_id in self._pages_known:
                continue
            self._pages_known.add(fetch_id)
            if row.outcome == "ok" and row.content_hash:
                self.dedup.register(row.url_hash, stored_verdict(row))
            self.traps.record(row.url, duplicate=row.outcome != "ok")

    def _sweep(self) -> None:
        """Forget any host left in the frontier of a partition this worker no longer holds
        (a retry requeued by a request that finished after its partition was dropped)."""
        for host, hq in list(self.frontier.hosts.items()):
            if partition_of(hq.address, self.partitions) not in self._held and len(hq):
                dropped = self.frontier.forget_host(host)
                self._host_part.pop(host, None)
                log.info("worker %s: %d URLs of %s left to their partition's owner",
                         self.fleet.worker, dropped, host)  # fmt: skip

    def _drop(self, part: int, why: str) -> None:
        """``part`` leaves this worker: its hosts leave the frontier."""
        self._held.pop(part, None)
        self._loaded.pop(part, None)
        dropped = 0
        for host in [h for h, p in self._host_part.items() if p == part]:
            dropped += self.frontier.forget_host(host)
            del self._host_part[host]
        log.warning("worker %s dropped partition %d (%s): %d queued URLs left to the store",
                    self.fleet.worker, part, why, dropped)  # fmt: skip

    # -- the crawl loop's seams -----------------------------------------------------------
    def _enqueue(self, entry: FrontierEntry, address: str) -> None:
        part = partition_of(address, self.partitions)
        if part in self._held:
            self._host_part[entry.host] = part
            self._loaded[part].add(entry.url_hash)
            if self._page_links is not None:  # a page's links: in the order found, below
                self._page_links.append((entry, address))
            else:
                self.frontier.add(entry, address)
        # else: it is in the store, queued; its partition's owner picks it up

    def _owns(self, address: str) -> bool:
        return partition_of(address, self.partitions) in self._held

    def _render_permitted(self, address: str) -> bool:
        """A render's request is a request: the partition's lease is asked first."""
        assert self.leases is not None
        part = partition_of(address, self.partitions)
        epoch = self._held.get(part)
        return epoch is not None and self.leases.permits(part, epoch)

    def _admission_order(self, links: list[Link]) -> list[Link]:
        """By host, then URL hash: concurrent pages inserting the same new URLs take their
        row locks in one global order, so two workers' commits never deadlock. Their
        discovery numbers and frontier order stay the page's order, as in the embedded
        crawl (:meth:`_next_seq`, :meth:`_links_admitted`): the trap rules learn a host's
        URL patterns from the same pages in the same order, so they cut the same ones."""
        self._found_seq = {link[0]: self._seq + i for i, link in enumerate(links, 1)}
        self._seq += len(links)
        self._page_links = []
        return sorted(links, key=lambda link: (host_of(link[0]), url_hash(link[0])))

    def _next_seq(self, url: str) -> int:
        seq = self._found_seq.pop(url, None)
        return seq if seq is not None else super()._next_seq(url)

    def _links_admitted(self) -> None:
        for entry, address in sorted(self._page_links or (), key=lambda x: x[0].seq):
            self.frontier.add(entry, address)
        self._page_links, self._found_seq = None, {}

    def _next_lease(self, now: float) -> HostTurn | None:
        assert self.leases is not None
        while (lease := self.frontier.lease(now)) is not None:
            part = partition_of(lease.address, self.partitions)
            epoch = self._held.get(part)
            if epoch is not None and self.leases.permits(part, epoch):
                self._inflight[part] += 1
                self._lease_epoch[id(lease)] = (part, epoch)
                return lease
            # No lease to use on it right now: give the permission back, look again later.
            if lease.entry is not None:
                self.frontier.requeue(lease.entry, lease.address)
            self.frontier.release(lease)
            if lease.host in self.frontier.hosts:
                self.frontier.set_ready(lease.host, now + min(0.5, self.lease_ttl / 3))
        return None

    async def _work(self, lease: HostTurn) -> None:
        part, epoch = self._lease_epoch.pop(id(lease))
        current_fence.set(Fence(part, epoch))  # this task's writes carry its epoch
        try:
            await super()._work(lease)
        finally:
            self._inflight[part] -= 1

    async def _handle(
        self,
        e: FrontierEntry,
        lease: HostTurn,
        res: FetchResult,
        row: UrlRecord | None,
        delay: float,
        retry_after: float | None,
    ) -> None:
        """Judge an answer knowing every page the fleet committed before it (one read):
        a copy of a page another worker fetched a moment ago is its duplicate."""
        if res.ok:
            with contextlib.suppress(Unavailable, CrawlStateError):  # the poll catches up
                self._learn_fleet_pages()
        await super()._handle(e, lease, res, row, delay, retry_after)

    def _emit_events(self, events: list[dict[str, Any]]) -> None:
        """Nothing before the commit: a worker's events go to the store's outbox."""

    def _commit_events(self, events: list[dict[str, Any]]) -> None:
        """The page's events into the outbox, in its fenced commit (a refused write
        records none); storage keys name the worker's WARC under the fleet's ``OUT``."""
        self.store.add_events(events)

    def _fenced_out(self, lease: HostTurn, exc: FencedOut) -> None:
        part = exc.fence.partition
        self.fenced.append(str(exc))
        log.warning("worker %s: write refused, dropping partition %d at once: %s",
                    self.fleet.worker, part, exc)  # fmt: skip
        hq = self.frontier.host(lease.host)
        if hq is not None and hq.in_flight:
            self.frontier.release(lease)
        if self._held.get(part) == exc.fence.epoch:
            self._drop(part, "the store refused its epoch")
            assert self.leases is not None
            self.leases.drop(part, str(exc))

    def _finished(self) -> str | None:
        """Done when the store — the fleet's truth; this frontier only caches a part of
        it — has nothing queued or in flight (asked at most once a second)."""
        if time.monotonic() - self._last_done_check < 1.0:
            return None
        self._last_done_check = time.monotonic()
        with contextlib.suppress(Exception):  # the store unreachable: not done, ask again
            if self.store.open_work() == 0:
                return "done"
        return None

    def _flush_frontier(self) -> None:
        """Write the frontier's view of this worker's own hosts only."""
        mine = {h for h, p in self._host_part.items() if p in self._held}
        others = [h for h in self.frontier.hosts if h not in mine]
        saved = {h: self.frontier.hosts.pop(h) for h in others}
        try:
            super()._flush_frontier()
        finally:
            self.frontier.hosts.update(saved)

    def held(self) -> dict[int, int]:
        """The partitions this worker has taken over, with their epochs."""
        return dict(self._held)
