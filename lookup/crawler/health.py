"""Per-host health of a crawl: what it asked each host, what came back, and what holds it.

One row per host from the crawl's own records (:class:`~lookup.crawler.state.CrawlReader`)
and its controls: requests by kind, errors by kind (network failures by name, HTTP
answers by class), 429/503 answers and the back-off now in force, robots.txt's state and
the URLs it refused, trap cuts by rule, the cycle's budget used, the next time the host
may be asked, the operator's controls on it (its own delay and the global one), whether
block detection flags it for review (:mod:`lookup.crawler.blocking`, replayed over the
fetch log with the same rule the crawler applies) and — in fleet mode, when the caller
hands in who holds an address's partition — the owning worker and its lease epoch.
"""

from __future__ import annotations

import time
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from lookup.crawler.blocking import BlockPolicy, BlockWindow, refused
from lookup.crawler.controls import ControlState
from lookup.crawler.state import ANSWER_FAILURES, CrawlReader

__all__ = ["HostHealth", "LeaseInfo", "host_health"]

_BACKOFF = (429, 503)


@dataclass(frozen=True)
class LeaseInfo:
    """Who owns a host's partition in fleet mode."""

    worker: str
    epoch: int
    expires_at: float | None = None


@dataclass
class HostHealth:
    """One host's health row (times are wall clock; ``next_allowed_in`` seconds from now)."""

    host: str
    address: str | None
    requests: int = 0
    requests_by_kind: dict[str, int] = field(default_factory=dict)
    pages: int = 0
    errors: dict[str, int] = field(default_factory=dict)
    throttled: int = 0  # 429 and 503 answers
    backoff: float = 0.0  # the pause in force after a 429/503 (0: none)
    last_delay: float = 0.0
    last_status: int | None = None
    robots: str | None = None  # rules | allow-all | disallow-all | None (not read yet)
    robots_status: int | None = None
    robots_blocked: int = 0  # URLs robots.txt refused
    cuts: dict[str, int] = field(default_factory=dict)
    budget_used: int = 0
    budget: int | None = None
    queued: int = 0
    in_flight: int = 0
    next_allowed_at: float | None = None
    next_allowed_in: float | None = None
    blocked: str | None = None  # the operator's block target covering the host
    paused: bool = False
    delay_override: float | None = None
    global_delay: float | None = None  # the operator's set-delay * (every host)
    flagged: str | None = None  # block detection: why the host is flagged for review
    flagged_since: float | None = None
    refused_share: float = 0.0  # 403/429/CAPTCHA answers in its latest window
    slowdown: float | None = None  # the factor on its pause while flagged
    worker: str | None = None
    epoch: int | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def _error_kind(status: int | None, outcome: str) -> str | None:
    if outcome in ANSWER_FAILURES:
        return outcome.removeprefix("retry:")
    if status is None:
        return None
    if status >= 500:
        return "http-5xx"
    if status >= 400:
        return "http-4xx"
    return None


def host_health(
    reader: CrawlReader,
    controls: ControlState | None = None,
    owner: Callable[[str], LeaseInfo | None] | None = None,
    now: float | None = None,
    blocks: BlockPolicy | None = None,
) -> list[HostHealth]:
    """Every host of the crawl, by name; ``owner`` maps an address to its partition's lease.

    The owner is looked up for the rows this call read, so a host that appears between
    two reads still gets one (a map of hosts read beforehand would miss it).
    """
    now = time.time() if now is None else now
    controls = controls or ControlState()
    meta = reader.meta()
    cycle = int(meta.get("cycle", 1) or 1)
    budget = meta.get("host_budget")
    used = reader.budget_used(cycle)
    queues = reader.host_queues()
    rows: dict[str, HostHealth] = {}
    for h in reader.hosts():
        q = queues.get(h.host, {})
        rows[h.host] = HostHealth(
            host=h.host,
            address=h.address,
            last_delay=float(h.last_delay or 0.0),
            robots=h.robots_state,
            robots_status=h.robots_status,
            budget_used=int(used.get(h.host, 0)),
            budget=int(budget) if budget is not None else None,
            queued=int(q.get("queued", 0)),
            in_flight=int(q.get("leased", 0)),
            next_allowed_at=h.ready_at,
            next_allowed_in=None if h.ready_at is None else max(0.0, h.ready_at - now),
        )
    kinds: dict[str, Counter[str]] = defaultdict(Counter)
    errors: dict[str, Counter[str]] = defaultdict(Counter)
    window = BlockWindow(blocks or BlockPolicy.from_settings())
    for f in reader.fetch_log("id"):
        was = refused(f.kind, f.status, f.outcome)
        if was is not None:
            window.observe(f.host, was, f.started)
        row = rows.get(f.host) or rows.setdefault(f.host, HostHealth(f.host, f.address))
        row.requests += 1
        kinds[f.host][f.kind] += 1
        if f.kind == "page" and f.status is not None and f.outcome not in ANSWER_FAILURES:
            row.pages += 1
        kind = _error_kind(f.status, f.outcome)
        if kind is not None:
            errors[f.host][kind] += 1
        if f.status in _BACKOFF:
            row.throttled += 1
        row.last_status = f.status
        row.backoff = float(f.delay or 0.0) if f.status in _BACKOFF else 0.0
    cuts: dict[str, Counter[str]] = defaultdict(Counter)
    for c in reader.cuts():
        cuts[c.host][c.rule] += 1
    for u in reader.blocked():
        if u.host in rows and (u.outcome or "").startswith("robots"):
            rows[u.host].robots_blocked += 1
    for host, row in rows.items():
        row.requests_by_kind = dict(sorted(kinds[host].items()))
        row.errors = dict(sorted(errors[host].items()))
        row.cuts = dict(sorted(cuts[host].items()))
        row.blocked = controls.host_blocked(host)
        row.paused = controls.crawl_paused or (controls.holds(host) and row.blocked is None)
        row.delay_override = controls.delay_for(host)
        row.global_delay = controls.ceiling
        flag = window.flag(host)
        if flag is not None:
            row.flagged, row.flagged_since = flag.reason(), flag.since
            row.refused_share = round(flag.share, 3)
            row.slowdown = window.policy.slowdown
        else:
            row.refused_share = round(window.share(host), 3)
        lease = owner(row.address) if owner is not None and row.address else None
        if lease is not None:
            row.worker, row.epoch = lease.worker, lease.epoch
    return [rows[h] for h in sorted(rows)]
