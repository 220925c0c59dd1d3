"""The shortener's composition root: every part built once and wired, with no back-references.

:class:`Shortener` opens the state through its factories — the link store
(:func:`~lookup.shortener.links.open_link_store`), the id allocator
(:func:`~lookup.kit.idblocks.open_id_allocator`), the click log
(:func:`~lookup.shortener.analytics.clicklog.open_click_log`) and the click counts
(:func:`~lookup.shortener.analytics.clickcounts.open_click_counts`), from URLs derived from
the data directory; the rate limiters (:func:`~lookup.kit.ratelimit.open_rate_limiter`, in-process
token buckets) and the shared cache tier (:func:`~lookup.kit.sharedcache.open_shared_cache`,
none unless the config hands one in) likewise — and builds the parts in dependency order,
each given what it talks to:

* analytics first (it needs nobody): its buffer's ``offer`` becomes the service's
  ``on_click``;
* the link service, whose ``notify`` publishes to :class:`LinkEvents`;
* the scanner, reading the store and acting through the service, with the aggregator's
  ``top_keys`` for hot links; it subscribes to the events here;
* the HTTP edge's parts: :class:`~lookup.shortener.parse.RequestParser`,
  :class:`~lookup.shortener.views.LinkViews` and :class:`~lookup.shortener.api.LinkApi`
  (click stats answered by analytics).

Nothing is assigned into another part after construction, so no module imports one that
imports it back: ``service`` knows neither analytics nor the scanner.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import secrets
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lookup import settings
from lookup.kit.clients import Trust
from lookup.kit.engines.storeurl import sqlite_url
from lookup.kit.idblocks import open_id_allocator
from lookup.kit.ids import FeistelPermutation, load_or_create_secret
from lookup.kit.leadership import open_leadership
from lookup.kit.ratelimit import RateLimiter, RatePolicy, open_rate_limiter
from lookup.kit.secrets import SecretStore, open_secret_store, random_bytes
from lookup.kit.sharedcache import SharedCache, open_shared_cache
from lookup.kit.sharedcache.null import NullSharedCache
from lookup.shortener.analytics import ClickAnalytics
from lookup.shortener.analytics.clickcounts import open_click_counts
from lookup.shortener.analytics.clicklog import open_click_log
from lookup.shortener.api import LinkApi
from lookup.shortener.blocklist import open_blocklist_source
from lookup.shortener.domains import Domains
from lookup.shortener.keys import KEY_SPACE, KeyMinter, ReservedWords
from lookup.shortener.links import open_link_store
from lookup.shortener.model import Link
from lookup.shortener.parse import RequestParser
from lookup.shortener.resolver import Resolver
from lookup.shortener.rules import RuleStore, open_rule_store
from lookup.shortener.scanner import Scanner
from lookup.shortener.service import ShortenerService
from lookup.shortener.urls import AddressPolicy, Blocklist, UrlPolicy
from lookup.shortener.views import LinkViews
from lookup.shortener.webhooks.options import SenderOptions

log = logging.getLogger("lookup.shortener")


@dataclass
class Limits:
    """Token-bucket policies; anonymous creation is the strictest.

    ``anonymous``: creates per client IP without a token. ``owner``: creates per owner
    token. ``ip``: creates per client IP with a token (stops rotating tokens).
    ``misses``: store lookups of unknown keys per client IP (a scraper guessing keys).
    ``passwords``: password attempts per client IP and link.
    """

    anonymous: RatePolicy = field(default_factory=lambda: RatePolicy.per(20, 60))
    owner: RatePolicy = field(default_factory=lambda: RatePolicy.per(600, 60))
    ip: RatePolicy = field(default_factory=lambda: RatePolicy.per(1200, 60))
    misses: RatePolicy = field(default_factory=lambda: RatePolicy.per(50, 1, burst=500))
    passwords: RatePolicy = field(default_factory=lambda: RatePolicy.per(10, 60))

    _SETTINGS = {
        "anonymous": "shortener_rate_anon",
        "owner": "shortener_rate_owner",
        "ip": "shortener_rate_ip",
        "misses": "shortener_rate_misses",
        "passwords": "shortener_rate_password",
    }

    @classmethod
    def from_env(cls, environ: dict[str, str] | None = None) -> Limits:
        """Defaults, overridden by ``LOOKUP_SHORTENER_RATE_*`` = ``COUNT/SECONDS[:BURST]``."""
        limits = cls()
        for attr, name in cls._SETTINGS.items():
            text = settings.get(name, environ)
            if text:
                setattr(limits, attr, RatePolicy.parse(text))
        return limits


@dataclass
class ShortenerConfig:
    """Everything a :class:`Shortener` needs; tests inject clocks and small limits."""

    data_dir: Path
    base_url: str = "http://127.0.0.1:8000"
    block_size: int = 10_000
    cache_size: int = 100_000
    cache_ttl_s: float = 60.0
    negative_ttl_s: float = 30.0
    shared: SharedCache | None = None
    limits: Limits = field(default_factory=Limits)
    wall_clock: Callable[[], float] = time.time
    mono_clock: Callable[[], float] = time.monotonic
    sweep_interval_s: float = 60.0
    trust_forwarded_for: Trust = False
    synchronous: str = "NORMAL"
    analytics: bool = True
    aggregator: str = "thread"
    aggregator_nice: int = 19
    scanner: bool = True
    #: CIDR networks destinations may use although not public (off by default; a demo on
    #: loopback or a test fixture names them); see :class:`~lookup.shortener.urls.AddressPolicy`.
    allowed_ranges: tuple[str, ...] = ()
    #: host → its addresses now, for the scanner's DNS re-checks (None: the system resolver).
    resolve_host: Callable[[str], list[str]] | None = None
    #: Where links, id blocks, click counts and the fleet's secrets live: ``postgresql://…``
    #: shares them between API processes; empty: SQLite files and secret files in the data
    #: directory (the embedded default).
    store_url: str = ""
    #: Scale-out backends by URL (empty: the embedded default): the shared cache tier,
    #: the rate limits and the click stream (``redis://host:port/db``).
    cache_url: str = ""
    l1_unwatched_ttl_s: float = 1.0
    limits_url: str = ""
    clicks_url: str = ""
    #: The part of each limit a process keeps to itself while ``limits_url`` is unreachable.
    limits_local_share: float = 1.0
    #: Webhook delivery: timeouts, retries, click batches (``shortener_webhook_*``).
    webhook_options: SenderOptions = field(default_factory=SenderOptions)
    #: Short domains a link may live on besides the base URL's host (issue 27 item 3).
    domains: tuple[str, ...] = ()

    @classmethod
    def from_env(cls, data_dir: Path, base_url: str) -> ShortenerConfig:
        """Config for ``lookup serve``: limits from ``LOOKUP_SHORTENER_RATE_*``,
        ``LOOKUP_TRUST_FORWARDED_FOR`` (the proxies whose ``X-Forwarded-For`` is believed),
        ``LOOKUP_SHORTENER_ANALYTICS=0`` / ``LOOKUP_SHORTENER_SCANNER=0`` to run without
        click analytics / the safety scanner (for comparisons), ``LOOKUP_SHORTENER_STORE``
        for a shared store (PostgreSQL) instead of the data directory. The click aggregator runs
        in its own process at CPU priority ``LOOKUP_SHORTENER_AGGREGATOR_NICE`` (19),
        unless ``LOOKUP_SHORTENER_AGGREGATOR`` says ``thread`` (in this process) or
        ``external`` (not here: ``python -m lookup.shortener.analytics`` runs it)."""
        return cls(
            data_dir=Path(data_dir),
            base_url=base_url,
            limits=Limits.from_env(),
            trust_forwarded_for=settings.get("trust_forwarded_for"),
            analytics=settings.get("shortener_analytics"),
            aggregator=settings.get("shortener_aggregator"),
            aggregator_nice=settings.get("shortener_aggregator_nice"),
            scanner=settings.get("shortener_scanner"),
            allowed_ranges=tuple(settings.get("shortener_allowed_ranges")),
            store_url=settings.get("shortener_store"),
            cache_url=settings.get("cache_url"),
            l1_unwatched_ttl_s=settings.get("cache_l1_unwatched_ttl"),
            limits_url=settings.get("limits_url"),
            clicks_url=settings.get("clicks_url"),
            limits_local_share=settings.get("limits_local_share"),
            webhook_options=SenderOptions.from_settings(),
            domains=tuple(settings.get("shortener_domains")),
        )


class LinkEvents:
    """Fan-out of the service's link events (``created``, ``updated``, ``retargeted``, ``deleted``,
    ``disabled``, ``enabled``, ``expired``) to whoever subscribed; a failing subscriber
    is logged and never stops the others or the change."""

    def __init__(self) -> None:
        self._subscribers: list[Callable[[str, Link], None]] = []

    def subscribe(self, fn: Callable[[str, Link], None]) -> None:
        """Call ``fn(event, link)`` after every committed change."""
        self._subscribers.append(fn)

    def publish(self, event: str, link: Link) -> None:
        """Tell every subscriber about ``event`` on ``link``."""
        for fn in list(self._subscribers):
            try:
                fn(event, link)
            except Exception:
                log.exception("shortener listener failed on %s %s", event, link.key)


class Shortener:
    """The shortener over one data directory (``<data_dir>/shortener/``), wired once.

    A :class:`~lookup.kit.service.LiveService`: :meth:`status` for ``/healthz``,
    :meth:`close` to stop and let go.

    ``analytics_options`` go to :class:`~lookup.shortener.analytics.ClickAnalytics`
    (``capacity``, ``batch_size``, ``ship_interval_s``, ``click_log``, ...).
    """

    def __init__(
        self, config: ShortenerConfig, *, analytics_options: Mapping[str, Any] | None = None
    ) -> None:
        self.config = config
        self.base_url = config.base_url.rstrip("/")
        self.dir = Path(config.data_dir) / "shortener"
        self.dir.mkdir(parents=True, exist_ok=True)
        # With a shared store the fleet's secrets (the key permutation's, the HMAC keys
        # derived from it, the admin token) live there: processes with different data
        # directories must agree on them, or two ids could map to one key.
        shared_store = config.store_url.strip()
        self.secrets: SecretStore = open_secret_store(shared_store or self.dir.resolve().as_uri())
        secret = self.secrets.get_or_create("secret.key", random_bytes(32))
        token = settings.get("admin_token")  # configured: it wins
        if not token:
            made = self.secrets.get_or_create(
                "admin.token", lambda: (secrets.token_urlsafe(32) + "\n").encode("ascii")
            )
            token = made.decode("ascii").strip()
        self.admin_token: str = token
        clock = config.wall_clock
        mono = config.mono_clock

        if shared_store:
            links_url = shared_store
            self.store = open_link_store(links_url, clock=clock)
        else:
            links_url = sqlite_url(self.dir / "links.sqlite3")
            self.store = open_link_store(links_url, synchronous=config.synchronous, clock=clock)
        # Redirect rules: their own table (link_rules) in the links' database.
        self.rules: RuleStore = open_rule_store(links_url)
        self.allocator = open_id_allocator(
            links_url, "links", block_size=config.block_size, limit=KEY_SPACE
        )
        self.reserved = ReservedWords()
        permutation = FeistelPermutation(
            KEY_SPACE, hmac.new(secret, b"feistel-keys", hashlib.sha256).digest()
        )
        self.minter = KeyMinter(self.allocator, permutation, self.reserved)
        # The blocklist lives with the links: a fleet on a shared store enforces one list.
        blocklist_file = self.dir / "blocklist.txt"
        self.blocklist = Blocklist(
            source=open_blocklist_source(shared_store or blocklist_file.resolve().as_uri()),
            recheck_s=1.0 if shared_store else 2.0,
        )
        self.blocklist.write_template()
        addresses = AddressPolicy(config.allowed_ranges)
        self.urls = UrlPolicy([self.base_url], self.blocklist, addresses=addresses)
        tier = (
            config.shared
            if config.shared is not None
            else open_shared_cache(config.cache_url or "none:")
        )
        self.resolver = Resolver(
            self.store,
            cache_size=config.cache_size,
            cache_ttl_s=config.cache_ttl_s,
            negative_ttl_s=config.negative_ttl_s,
            shared=tier,
            unwatched_ttl_s=config.l1_unwatched_ttl_s,
            # a fleet on PostgreSQL without Redis: other workers change links unheard
            unheard_writers=bool(shared_store) and isinstance(tier, NullSharedCache),
            clock=mono,
            rules=self.rules,
        )
        limits = config.limits

        def limiter(policy: RatePolicy, name: str, outage: str) -> RateLimiter:
            """In-process, or on ``limits_url`` with its declared outage policy."""
            if not config.limits_url:
                return open_rate_limiter("memory:", policy, name=name, clock=mono)
            share = f"&local_share={config.limits_local_share!r}" if outage == "local" else ""
            url = f"{config.limits_url}?on_unavailable={outage}{share}"
            return open_rate_limiter(url, policy, name=name, clock=mono)

        # Creates and misses fail open to a local share; password guessing fails closed.
        self.limit_anonymous = limiter(limits.anonymous, "anonymous", "local")
        self.limit_owner = limiter(limits.owner, "owner", "local")
        self.limit_ip = limiter(limits.ip, "ip", "local")
        self.limit_misses = limiter(limits.misses, "misses", "local")
        self.limit_passwords = limiter(limits.passwords, "passwords", "closed")
        self.domains = Domains(self.base_url, config.domains, self.store, clock=mono)
        self.views = LinkViews(self.base_url, clock=clock, domains=self.domains)

        # Webhooks: their own tables in the links' database; clicks reach them through the
        # click shipper (after the click log), never through the redirect.
        from lookup.shortener.webhooks.hub import Webhooks, open_webhooks

        self.webhooks: Webhooks = open_webhooks(
            links_url,
            self.urls,
            render=self.views.owner,
            short_url=self.views.short_url,
            options=config.webhook_options,
            clock=clock,
            resolve=config.resolve_host,
        )
        self.analytics: ClickAnalytics | None = None
        if config.analytics:
            options: dict[str, Any] = {
                "aggregator": config.aggregator,
                "aggregator_nice": config.aggregator_nice,
                "clock": clock,
                "on_shipped": self.webhooks.on_clicks,
                **(analytics_options or {}),
            }
            own_log = options.get("click_log") is None and not config.clicks_url
            if options.get("click_log") is None:
                options["click_log"] = open_click_log(
                    config.clicks_url or sqlite_url(self.dir / "clicklog.sqlite3")
                )
            if options.get("click_counts") is None and shared_store:
                # A process folding its own click log into the fleet's counters keeps its
                # own consumer offset there (under a random id kept beside the log).
                scope = load_or_create_secret(self.dir / "clicklog.id", 16).hex() if own_log else ""
                options["click_counts"] = open_click_counts(shared_store, consumer_scope=scope)
            elif options.get("click_counts") is None:
                options["click_counts"] = open_click_counts(
                    sqlite_url(self.dir / "clickstats.sqlite3")
                )
            self.analytics = ClickAnalytics(self.dir, secret, **options)

        self.events = LinkEvents()
        self.events.subscribe(self.webhooks.on_link_event)
        self.service = ShortenerService(
            self.store,
            self.minter,
            self.resolver,
            render=self.views.created,
            ip_key=hmac.new(secret, b"client-ip", hashlib.sha256).digest(),
            clock=clock,
            on_click=None if self.analytics is None else self.analytics.on_click,
            notify=self.events.publish,
        )
        self.scanner: Scanner | None = None
        if config.scanner:
            self.scanner = Scanner(
                self.store,
                self.service,
                self.blocklist,
                state_dir=self.dir,
                hot_keys=None if self.analytics is None else self.analytics.aggregator.top_keys,
                clock=clock,
                addresses=addresses,
                resolve=config.resolve_host,
                # One scanner sweeps for the whole fleet: the leader elected in the store.
                leadership=open_leadership(shared_store or "solo:", "lookup.shortener.scanner"),
            )
            self.events.subscribe(self.scanner.on_link_event)

        self.parser = RequestParser(
            self.urls,
            self.reserved,
            hmac.new(secret, b"idempotency-body", hashlib.sha256).digest(),
            clock=clock,
            domains=self.domains.check,
        )
        self.api = LinkApi(self.service, self.parser, self.views, stats=self.analytics, clock=clock)

    # -- lifecycle ---------------------------------------------------------------------

    def start(self) -> None:
        """Start analytics' loops and the scanner's (each idempotent)."""
        if self.analytics is not None:
            self.analytics.start()
        if self.scanner is not None:
            self.scanner.start()
        self.webhooks.start()

    def stop(self) -> None:
        """Stop the webhook sender, the scanner, then analytics (shipping what is still
        buffered)."""
        self.webhooks.stop()
        if self.scanner is not None:
            self.scanner.stop()
        if self.analytics is not None:
            self.analytics.stop()

    def close(self) -> None:
        """Stop the background work (if running) and release every database connection;
        safe to call twice (connections reopen on next use, so a restarted lifespan still
        works)."""
        self.stop()
        if self.analytics is not None:
            self.analytics.close()
        self.service.close()
        self.webhooks.close()
        self.rules.close()
        self.blocklist.close()

    # -- observability -----------------------------------------------------------------

    def rate_limiters(self) -> list[RateLimiter]:
        """Every rate limiter of the shortener."""
        return [
            self.limit_anonymous,
            self.limit_owner,
            self.limit_ip,
            self.limit_misses,
            self.limit_passwords,
        ]

    def backends(self) -> dict[str, str]:
        """What each scale-out seam of this process runs on (scheme and address, never a
        password; ``embedded`` for the default in the data directory)."""

        def described(part: object, default: str = "embedded") -> str:
            describe = getattr(part, "describe", None)
            return describe() if describe is not None else default  # type: ignore[no-any-return]

        counts = None if self.analytics is None else self.analytics.aggregator.counts
        secrets_at = self.secrets.describe()
        blocklist_at = self.blocklist.describe()
        shared = self.resolver.shared
        return {
            "cache": described(shared, shared.name),
            "limits": described(self.limit_anonymous),
            "clicks": described(None if self.analytics is None else self.analytics.log),
            "store": described(self.store),
            "ids": described(self.allocator),
            "clickCounts": described(counts, "embedded" if counts is not None else "off"),
            "secrets": "embedded" if secrets_at.startswith("file:") else secrets_at,
            "blocklist": blocklist_at
            if not blocklist_at.startswith(("file:", "builtin"))
            else "embedded",
        }

    def metrics(self) -> dict[str, Any]:
        """Counters for the dashboard: cache layers, limiters, clicks, links by status,
        analytics and the scanner."""
        counters = self.service.counters()
        return {
            "backends": self.backends(),
            "cache": self.resolver.stats(),
            "rateLimits": {lim.name: lim.stats() for lim in self.rate_limiters()},
            "clicks": counters["clicks"],
            "links": counters["links"],
            "created": counters["created"],
            "generatedKeyCollisions": counters["generatedKeyCollisions"],
            "idLeases": counters["idLeases"],
            "blocklistVersion": self.blocklist.version,
            "analytics": None if self.analytics is None else self.analytics.stats(),
            "scanner": None if self.scanner is None else self.scanner.stats(),
            "webhooks": self.webhooks.stats(),
        }

    def status(self) -> dict[str, Any]:
        """A cheap readiness probe for ``/healthz`` (the :class:`~lookup.kit.service.
        LiveService` call; full counts live in :meth:`metrics`): ``degraded`` while the
        click aggregator's process is down (its restart pending), ``ready`` otherwise."""
        self.store.ping()
        cache = self.resolver.stats()
        report: dict[str, Any] = {
            "status": "ready",
            "created": self.service.created,
            "cacheHits": cache["l1"]["hits"],
            "storeReads": cache["store"]["reads"],
            "backends": self.backends(),
        }
        if self.resolver.exact_only:  # keys from before the case rule that differ by case
            report["caseCollisions"] = sorted(self.resolver.exact_only)
        if self.analytics is not None:
            aggregator = self.analytics.aggregator_health()
            report["aggregator"] = aggregator
            if aggregator.get("state") == "down":
                report["status"] = "degraded"
        return report


__all__ = ["LinkEvents", "Limits", "Shortener", "ShortenerConfig"]
