"""The URL frontier: priority decides what matters, politeness decides what is allowed now.

Two layers, after the Mercator crawler:

- **Front queues by priority.** Every URL lands in one of a few priority levels
  (importance, staleness, depth). A *biased selector* reads them — smooth weighted
  round-robin with weights such as 8 : 3 : 1 — so high priority dominates and a
  non-empty low level is still read at least once in every ``sum(weights)`` picks:
  nothing starves. The front queues are kept per host, so a URL's priority orders it
  against the other URLs of the same host (the only URLs it competes with for that
  host's fetch slot).
- **One back queue per host** (:class:`HostQueue`) and a **min-heap of host ready
  times**. A host is in the heap only while it has work and no fetch in flight.

The only way to obtain a URL is :meth:`Frontier.lease`, which pops a host whose
ready time has come and whose address is free — so no code path can fetch a host
early, or two hosts on one address at once. A host's first leases are for its
robots.txt and then (if asked for) its soft-404 probe; only then its pages.
After each fetch taking ``took`` seconds, :meth:`Frontier.complete` sets

    delay = max(robots Crawl-delay, delay_factor × took, min_delay)
    on 429/503: delay = max(delay, Retry-After, 2 × previous delay)   (capped)

and the next ready time of both the host and its address to ``now + delay``. Hosts due at
the same moment are leased in the order they were last served — round robin — so the
hosts sharing one address take turns instead of the busiest one winning every tie.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass

__all__ = [
    "DEFAULT_WEIGHTS",
    "Frontier",
    "FrontierEntry",
    "HostQueue",
    "HostTurn",
    "PolitenessPolicy",
    "WeightedSelector",
]

#: Selector weights of the priority levels, highest priority first.
DEFAULT_WEIGHTS = (8, 3, 1)


@dataclass
class FrontierEntry:
    """One URL waiting to be fetched."""

    url: str
    url_hash: str
    host: str
    depth: int = 0
    level: int = 1  # 0 = highest priority
    kind: str = "page"  # page | sitemap | sitemap-probe
    redirects: int = 0
    attempts: int = 0
    seq: int = 0


@dataclass
class HostTurn:
    """Permission to make one request to ``host`` now: a page, its robots.txt or its probe."""

    host: str
    address: str
    kind: str  # "page" | "robots" | "probe"
    entry: FrontierEntry | None
    leased_at: float


class WeightedSelector:
    """Smooth weighted round-robin over priority levels (nginx's algorithm).

    Each pick adds every non-empty level's weight to its credit, takes the level with
    the most credit and charges it the total weight of the non-empty levels. Over
    any ``sum(weights)`` consecutive picks with all levels non-empty, level ``i``
    is picked exactly ``weights[i]`` times.
    """

    def __init__(self, weights: tuple[int, ...] = DEFAULT_WEIGHTS) -> None:
        if not weights or any(w <= 0 for w in weights):
            raise ValueError(f"weights must be positive, got {weights}")
        self.weights = weights
        self._credit = [0] * len(weights)

    def pick(self, non_empty: list[bool]) -> int:
        """The level to read next among the non-empty ones."""
        total = 0
        best = -1
        for i, ok in enumerate(non_empty):
            if not ok:
                continue
            self._credit[i] += self.weights[i]
            total += self.weights[i]
            if best < 0 or self._credit[i] > self._credit[best]:
                best = i
        if best < 0:
            raise IndexError("every level is empty")
        self._credit[best] -= total
        return best


@dataclass
class HostQueue:
    """One host's back queue: its pending URLs by level, ready time and fetch state."""

    host: str
    address: str
    levels: list[deque[FrontierEntry]]
    selector: WeightedSelector
    ready_at: float = 0.0
    in_flight: bool = False
    needs_robots: bool = True
    waiting_robots: bool = False  # robots.txt unreachable: parked until it is retried
    needs_probe: bool = False  # ask for a URL that cannot exist before any page
    crawl_delay: float | None = None
    last_delay: float = 0.0
    fetches: int = 0
    heap_token: int = 0
    served: int = 0  # lease sequence number of its last lease (0: never leased)

    def __len__(self) -> int:
        return sum(len(q) for q in self.levels)

    def push(self, entry: FrontierEntry, *, front: bool = False) -> None:
        q = self.levels[min(entry.level, len(self.levels) - 1)]
        if front:
            q.appendleft(entry)
        else:
            q.append(entry)

    def pop(self) -> FrontierEntry:
        level = self.selector.pick([bool(q) for q in self.levels])
        return self.levels[level].popleft()

    def entries(self) -> Iterator[FrontierEntry]:
        for q in self.levels:
            yield from q


@dataclass
class PolitenessPolicy:
    """How long to leave a host alone after a fetch."""

    min_delay: float = 1.0
    delay_factor: float = 10.0
    max_backoff: float = 3600.0

    def delay(
        self,
        took: float,
        *,
        crawl_delay: float | None = None,
        status: int | None = None,
        retry_after: float | None = None,
        previous: float = 0.0,
        floor: float | None = None,
    ) -> float:
        """The pause before the host's next request (``floor`` replaces ``min_delay``)."""
        base = self.min_delay if floor is None else floor
        delay = max(crawl_delay or 0.0, self.delay_factor * took, base)
        if status in (429, 503):
            delay = max(delay, retry_after or 0.0, 2.0 * previous)
            delay = min(delay, max(self.max_backoff, crawl_delay or 0.0))
        return delay


class Frontier:
    """Front queues by priority, one back queue per host, a heap of ready times.

    ``clock`` is monotonic seconds (injectable for tests). Not thread-safe: one
    event loop owns it, as one worker owns a partition of hosts.
    """

    def __init__(
        self,
        politeness: PolitenessPolicy | None = None,
        *,
        weights: tuple[int, ...] = DEFAULT_WEIGHTS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.politeness = politeness or PolitenessPolicy()
        self.weights = weights
        self.clock = clock
        self.hosts: dict[str, HostQueue] = {}
        # (ready time, last served, token, host): hosts due at the same moment go in the
        # order they were last served, so hosts sharing an address take turns.
        self._heap: list[tuple[float, int, int, str]] = []
        self._tokens = itertools.count(1)
        self._served = itertools.count(1)
        self._seq = itertools.count(1)
        self._ip_busy: set[str] = set()
        self._ip_ready: dict[str, float] = {}
        self._ip_waiters: dict[str, set[str]] = {}
        self._size = 0
        #: Hosts that may not be asked anything now (operator controls); see :meth:`wake_held`.
        self.held: Callable[[str], bool] = lambda host: False
        #: An operator's delay for a host, in place of ``min_delay`` (None: the policy's).
        self.delay_floor: Callable[[str], float | None] = lambda host: None
        #: URLs that may not be fetched (an operator's block): :meth:`lease` turns them away
        #: into :attr:`turned_away` instead of giving a lease for them.
        self.refuses: Callable[[FrontierEntry], bool] = lambda entry: False
        self.turned_away: list[FrontierEntry] = []

    # -- adding ----------------------------------------------------------------------
    def add(self, entry: FrontierEntry, address: str, *, front: bool = False) -> None:
        """Queue ``entry`` for its host (on ``address``)."""
        if not entry.seq:
            entry.seq = next(self._seq)
        hq = self.hosts.get(entry.host)
        if hq is None:
            hq = HostQueue(
                entry.host,
                address,
                [deque() for _ in self.weights],
                WeightedSelector(self.weights),
                ready_at=self.clock(),
            )
            self.hosts[entry.host] = hq
        hq.push(entry, front=front)
        self._size += 1
        if not hq.in_flight:
            self._schedule(hq, hq.ready_at)

    def host(self, host: str) -> HostQueue | None:
        return self.hosts.get(host)

    def set_ready(self, host: str, ready_at: float) -> None:
        """Move ``host``'s ready time later (never earlier) — e.g. after a restart."""
        hq = self.hosts[host]
        if ready_at > hq.ready_at:
            hq.ready_at = ready_at
            if not hq.in_flight:
                self._schedule(hq, ready_at)

    def _schedule(self, hq: HostQueue, ready_at: float) -> None:
        hq.heap_token = next(self._tokens)
        heapq.heappush(self._heap, (ready_at, hq.served, hq.heap_token, hq.host))

    # -- taking ----------------------------------------------------------------------
    def next_ready_at(self) -> float | None:
        """When the earliest host becomes due (None if no host has work)."""
        while self._heap:
            ready_at, _, token, host = self._heap[0]
            hq = self.hosts.get(host)
            if hq is None or hq.heap_token != token or hq.in_flight:
                heapq.heappop(self._heap)
                continue
            return ready_at
        return None

    def lease(self, now: float | None = None) -> HostTurn | None:
        """Pop a due host and give one request's permission; None when nothing is due."""
        now = self.clock() if now is None else now
        while self._heap:
            ready_at, _, token, host = self._heap[0]
            hq = self.hosts.get(host)
            if hq is None or hq.heap_token != token or hq.in_flight:
                heapq.heappop(self._heap)
                continue
            if ready_at > now:
                return None
            heapq.heappop(self._heap)
            if self.held(host):
                hq.heap_token = 0  # out of the heap until wake_held
                continue
            ip = hq.address
            if ip in self._ip_busy:
                self._ip_waiters.setdefault(ip, set()).add(host)
                hq.heap_token = 0  # out of the heap until the address frees
                continue
            ip_ready = self._ip_ready.get(ip, 0.0)
            if ip_ready > now:
                hq.ready_at = max(hq.ready_at, ip_ready)
                self._schedule(hq, hq.ready_at)
                continue
            if hq.needs_robots:
                kind, entry = "robots", None
            elif hq.needs_probe and len(hq):
                kind, entry = "probe", None
            elif len(hq):
                kind, entry = "page", hq.pop()
                self._size -= 1
                if self.refuses(entry):
                    self.turned_away.append(entry)
                    self._release(hq, ip_ready)  # back in turn at its own ready time
                    continue
            else:
                self._drop_if_idle(hq)
                continue
            hq.in_flight = True
            hq.served = next(self._served)
            self._ip_busy.add(ip)
            return HostTurn(host, ip, kind, entry, now)
        return None

    def lease_host(self, host: str, address: str, now: float | None = None) -> HostTurn | None:
        """Permission for one request to ``host`` out of turn (a robots.txt redirect hop),
        under the same rules as :meth:`lease`; None while it must wait (see :meth:`wait_for`)."""
        now = self.clock() if now is None else now
        hq = self.hosts.get(host)
        if hq is None:
            hq = HostQueue(
                host, address, [deque() for _ in self.weights], WeightedSelector(self.weights),
                ready_at=now,
            )  # fmt: skip
            self.hosts[host] = hq
        if hq.in_flight or hq.ready_at > now or address in self._ip_busy or self.held(host):
            return None
        if self._ip_ready.get(address, 0.0) > now:
            return None
        hq.in_flight = True
        self._ip_busy.add(address)
        return HostTurn(host, address, "robots", None, now)

    def wait_for(self, host: str, address: str) -> float:
        """Seconds until ``host`` on ``address`` may be asked again (0: now, or when free)."""
        hq = self.hosts.get(host)
        ready = max(hq.ready_at if hq is not None else 0.0, self._ip_ready.get(address, 0.0))
        return max(0.0, ready - self.clock())

    async def wait_lease(self, host: str, address: str, patience: float = 60.0) -> HostTurn | None:
        """:meth:`lease_host` once ``host`` is due (None after ``patience`` seconds)."""
        give_up = self.clock() + patience
        while (lease := self.lease_host(host, address)) is None:
            if self.clock() > give_up:
                return None
            await asyncio.sleep(min(max(self.wait_for(host, address), 0.005), 0.5))
        return lease

    def hold(self, host: str) -> None:
        """Keep ``host`` out of turn (its robots.txt is being read on another host)."""
        self.hosts[host].in_flight = True

    def unhold(self, host: str) -> None:
        """Give ``host`` its turns back after :meth:`hold`."""
        hq = self.hosts[host]
        hq.in_flight = False
        if len(hq):
            self._schedule(hq, hq.ready_at)

    # -- giving back -----------------------------------------------------------------
    def complete(
        self,
        lease: HostTurn,
        took: float,
        *,
        status: int | None = None,
        retry_after: float | None = None,
        extra_wait: float = 0.0,
    ) -> float:
        """A request finished after ``took`` seconds: set the host's and address's next time.

        ``extra_wait`` parks the host longer (robots.txt unreachable: until retry).
        Returns the politeness delay applied.
        """
        hq = self.hosts[lease.host]
        now = self.clock()
        delay = self.politeness.delay(
            took,
            crawl_delay=hq.crawl_delay,
            status=status,
            retry_after=retry_after,
            previous=hq.last_delay,
            floor=self.delay_floor(hq.host),
        )
        hq.last_delay = delay
        hq.fetches += 1
        hq.ready_at = now + max(delay, extra_wait)
        self._release(hq, now + delay)
        return delay

    def release(self, lease: HostTurn) -> None:
        """The lease was not used for a request (e.g. robots.txt disallowed the URL)."""
        hq = self.hosts[lease.host]
        self._release(hq, self._ip_ready.get(hq.address, 0.0))

    def requeue(self, entry: FrontierEntry, address: str) -> None:
        """Put ``entry`` back at the head of its host's queue (a retry after 429/503)."""
        self.add(entry, address, front=True)

    def _release(self, hq: HostQueue, ip_ready: float) -> None:
        hq.in_flight = False
        ip = hq.address
        self._ip_busy.discard(ip)
        self._ip_ready[ip] = max(self._ip_ready.get(ip, 0.0), ip_ready)
        if len(hq):
            self._schedule(hq, hq.ready_at)
        else:
            self._drop_if_idle(hq)
        for other in sorted(self._ip_waiters.pop(ip, set())):
            ohq = self.hosts.get(other)
            if ohq is not None and not ohq.in_flight and len(ohq):
                ohq.ready_at = max(ohq.ready_at, self._ip_ready[ip])
                self._schedule(ohq, ohq.ready_at)

    def _drop_if_idle(self, hq: HostQueue) -> None:
        """A host with nothing queued leaves the heap but keeps its timing state."""
        hq.heap_token = 0

    # -- operator controls -----------------------------------------------------------
    def wake_held(self) -> None:
        """Put back in turn every host with work that :attr:`held` no longer holds."""
        for hq in self.hosts.values():
            if len(hq) and not hq.in_flight and not self.held(hq.host):
                self._schedule(hq, hq.ready_at)

    def stretch_pause(self, host: str) -> None:
        """A longer :attr:`delay_floor` for ``host`` applies to the pause already running."""
        hq = self.hosts.get(host)
        floor = self.delay_floor(host)
        if hq is not None and floor is not None and floor > hq.last_delay:
            self.set_ready(host, hq.ready_at + floor - hq.last_delay)
            hq.last_delay = floor

    # -- robots state ----------------------------------------------------------------
    def robots_known(
        self, host: str, *, crawl_delay: float | None, retry_at: float | None = None
    ) -> None:
        """robots.txt for ``host`` was read (or failed, with ``retry_at`` to try again)."""
        hq = self.hosts[host]
        hq.crawl_delay = crawl_delay
        hq.needs_robots = retry_at is not None
        hq.waiting_robots = retry_at is not None
        if retry_at is not None and retry_at > hq.ready_at:
            hq.ready_at = retry_at
            if not hq.in_flight and len(hq):
                self._schedule(hq, retry_at)

    def probe_needed(self, host: str, needed: bool) -> None:
        """Ask (or stop asking) for ``host``'s soft-404 probe before its next page."""
        hq = self.hosts.get(host)
        if hq is not None:
            hq.needs_probe = needed

    def robots_expired(self, host: str) -> None:
        """The cached robots.txt is too old: the host's next request must re-read it."""
        hq = self.hosts.get(host)
        if hq is not None:
            hq.needs_robots = True

    # -- introspection ---------------------------------------------------------------
    def __len__(self) -> int:
        """URLs waiting (not counting ones in flight)."""
        return self._size

    def in_flight(self) -> int:
        return sum(1 for hq in self.hosts.values() if hq.in_flight)

    def has_due_work(self) -> bool:
        """Is there any queued URL on a host that is not parked waiting for robots.txt?"""
        return any(len(hq) and not hq.waiting_robots for hq in self.hosts.values())

    def active_hosts(self) -> int:
        """Hosts with queued URLs or a fetch in flight."""
        return sum(1 for hq in self.hosts.values() if len(hq) or hq.in_flight)

    def level_sizes(self) -> list[int]:
        sizes = [0] * len(self.weights)
        for hq in self.hosts.values():
            for i, q in enumerate(hq.levels):
                sizes[i] += len(q)
        return sizes

    def remove_host_entries(
        self, host: str, keep: Callable[[FrontierEntry], bool]
    ) -> list[FrontierEntry]:
        """Drop the entries of ``host`` that ``keep`` rejects; returns them."""
        hq = self.hosts.get(host)
        if hq is None:
            return []
        dropped: list[FrontierEntry] = []
        for i, q in enumerate(hq.levels):
            kept: deque[FrontierEntry] = deque()
            for e in q:
                (kept if keep(e) else dropped).append(e)
            hq.levels[i] = kept
        self._size -= len(dropped)
        return dropped

    def delay_address(self, address: str, ready_at: float) -> None:
        """No request to ``address`` before ``ready_at`` (a fleet worker taking over hosts
        another worker fetched moments ago)."""
        self._ip_ready[address] = max(self._ip_ready.get(address, 0.0), ready_at)

    def forget_host(self, host: str) -> int:
        """Drop ``host``'s queue and, unless a request is in flight, its state (a fleet
        worker handing its partition over); returns the entries dropped."""
        hq = self.hosts.get(host)
        if hq is None:
            return 0
        dropped = len(self.remove_host_entries(host, lambda _e: False))
        if not hq.in_flight:
            del self.hosts[host]
        return dropped

    def snapshot(self) -> list[dict[str, object]]:
        """Per-host state for progress displays: queue length, ready in, in flight."""
        now = self.clock()
        return [
            {
                "host": hq.host,
                "address": hq.address,
                "queued": len(hq),
                "in_flight": hq.in_flight,
                "ready_in": max(0.0, hq.ready_at - now),
                "ready_at": hq.ready_at,
                "delay": hq.last_delay,
                "crawl_delay": hq.crawl_delay,
                "waiting_robots": hq.waiting_robots,
                "needs_robots": hq.needs_robots,
                "needs_probe": hq.needs_probe,
                "fetches": hq.fetches,
            }
            for hq in sorted(self.hosts.values(), key=lambda h: h.host)
        ]
