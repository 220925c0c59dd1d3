"""What a crawl is given and what it tells: its configuration, live progress and final report.

:class:`CrawlConfig` holds every knob of one crawl (defaults are polite settings for
the open web); :class:`CrawlProgress` is the live snapshot a running crawl hands its
progress callback; :class:`CrawlReport` is how a run ended (also ``DIR/report.json``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lookup.crawler.fetcher import DEFAULT_USER_AGENT
from lookup.crawler.robots import DAY
from lookup.crawler.scope import CrawlScope, Network
from lookup.crawler.traps import TrapPolicy

__all__ = ["CrawlConfig", "CrawlError", "CrawlProgress", "CrawlReport"]


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
    meta_refresh_max_delay: float = 100.0  # a sooner <meta refresh> is a redirect (Scrapy's)
    max_attempts: int = 5  # for 429/503 (the server asked us to come back)
    max_error_attempts: int = 2  # for timeouts, refused connections, other 5xx
    robots_ttl: float = DAY
    robots_retry: float = 600.0
    expected_urls: int = 1_000_000
    bloom_fp_rate: float = 0.01
    traps: TrapPolicy = field(default_factory=TrapPolicy)
    hosts: dict[str, str] = field(default_factory=dict)
    strict_hosts: bool = False
    allow_any_address: bool = False  # every public address; never a private/metadata one
    allow_ranges: tuple[Network, ...] = ()  # address ranges allowed explicitly (the sandbox's)
    scope: CrawlScope = field(default_factory=CrawlScope)  # domains, include/exclude patterns
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
    # The render tier (crawler/render.py): pages built by their scripts, rendered in a browser.
    render_budget: int = 0  # renders per crawl (0: the cheap fetch only)
    render_workers: int = 1  # browser pages at once (the render queue's workers)
    render_text_chars: int = 200  # a candidate shows at most this much visible text
    render_script_share: float = 0.5  # ... or is at least this share inline script
    render_timeout: float = 15.0  # seconds per render, its requests' politeness included
    render_max_requests: int = 20  # requests one render may make to its host
    render_browser: Path = Path("/usr/bin/chromium")


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
    rendered: int = 0  # pages rendered in a browser (the render tier)

    def line(self) -> str:
        return (
            f"{self.elapsed:6.1f}s  pages {self.pages} ({self.pages_per_second:.1f}/s)  "
            f"hosts active {self.hosts_active}  frontier {self.frontier}  "
            f"in flight {self.in_flight}  dups {self.duplicates}  soft 404s {self.soft_404s}  "
            f"traps cut {self.traps_cut}  blocked {self.blocked}  errors {self.errors}  "
            f"cycle {self.cycle}" + (f"  rendered {self.rendered}" if self.rendered else "")
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
    robots_unparseable: int = 0  # 2xx robots.txt answers that were not rules files
    rendered: int = 0  # pages rendered in a browser (the render tier)
    rendered_share: float = 0.0  # rendered / pages fetched
    render: dict[str, Any] = field(default_factory=dict)  # the render tier's counters

    def lines(self) -> list[str]:
        out = [
            f"stopped: {self.stop_reason} after {self.elapsed:.1f} s (crawl cycle {self.cycle})",
            f"pages fetched {self.pages} ({self.pages_per_second:.1f}/s), requests {self.requests}"
            f" (robots.txt {self.robots_fetches}, not a rules file {self.robots_unparseable}),"
            f" events {self.events}",
            f"frontier left {self.frontier}, hosts {self.hosts}",
            "outcomes: " + ", ".join(f"{k} {v}" for k, v in sorted(self.outcomes.items())),
            "duplicates: "
            + (", ".join(f"{k} {v}" for k, v in sorted(self.duplicates.items())) or "none"),
            f"soft 404s: {self.soft_404s}",
            "traps cut: "
            + (", ".join(f"{k} {v}" for k, v in sorted(self.traps.items())) or "none"),
            "seen check: " + ", ".join(f"{k} {v}" for k, v in self.seen.items()),
        ]
        if self.render.get("budget"):
            r = self.render
            out.append(
                f"rendered {self.rendered} of {self.pages} pages ({self.rendered_share:.1%}) "
                f"with a browser: candidates {r.get('candidates', 0)}, over budget "
                f"{r.get('over-budget', 0)}, failed {r.get('failed', 0)}, unavailable "
                f"{r.get('unavailable', 0)}, render requests {r.get('requests', 0)}"
                + (f" ({r['unavailable_reason']})" if r.get("unavailable_reason") else "")
            )
        return out
