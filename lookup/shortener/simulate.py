"""A traffic simulator: realistic clicks through the real HTTP redirect path, and what each
cache layer absorbed.

:func:`simulate_traffic` talks to a running API (``lookup serve``) with ``httpx`` only —
no shortcut into the process — so every request goes through uvicorn, the redirect
route, the cache layers and the click buffer exactly as a browser's would. The mix:

* **people** — clicks on the owner's links with Zipf-skewed popularity (rank ``r`` is
  clicked in proportion to ``1 / r ** s``), from visitors with real browser user agents,
  countries (``CF-IPCountry``, as an edge would send) and referrers;
* **a viral link** — its cache entry is purged first (an owner edit, as after a
  retarget), then a burst of simultaneous clicks arrives: single-flight turns the
  burst's misses into one store read;
* **bots** — crawlers visiting links uniformly, and link-preview fetchers (Slack,
  Facebook, X/Twitter, WhatsApp) fetching the popular ones;
* **a scraper** — guessing random seven-character keys, and retrying its guesses;
  the negative cache answers the retries without a store read.

Given several API addresses (the processes of one fleet, ``lookup up --backend …``),
the redirects go round-robin over them and the counters are summed over all of them.

The answer compares ``GET /v1/shortener/metrics`` before and after, so it shows what
the server itself counted: hit rates per layer, single-flight collapses, negative-cache
hits, store reads. Other traffic to the same server during a run is counted too.
"""

from __future__ import annotations

import itertools
import random
import statistics
import threading
import time
from collections import Counter
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import Any

import httpx

from lookup.kit.ids import BASE62_ALPHABET

#: Real browser user agents (the build number varies per simulated visitor).
BROWSERS = (
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_{minor} like Mac OS X) AppleWebKit/605.1.15 "
    "(KHTML, like Gecko) Version/17.{minor} Mobile/15E148 Safari/604.1",
    "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/124.0.6367.{build} Mobile Safari/537.36",
    "Mozilla/5.0 (Linux; Android 13; SM-A536B) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/123.0.6312.{build} Mobile Safari/537.36",
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/124.0.6367.{build} Safari/537.36",
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) "
    "Version/17.{minor} Safari/605.1.15",
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:125.0) Gecko/20100101 Firefox/125.{minor}",
    "Mozilla/5.0 (iPad; CPU OS 17_{minor} like Mac OS X) AppleWebKit/605.1.15 "
    "(KHTML, like Gecko) Version/17.{minor} Mobile/15E148 Safari/604.1",
    "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/124.0.6367.{build} Safari/537.36",
)
BROWSER_WEIGHTS = (26, 22, 12, 20, 7, 5, 5, 3)
COUNTRIES = ("US", "IN", "BR", "GB", "DE", "ID", "JP", "FR", "NG", "MX", "CA", "ES")
COUNTRY_WEIGHTS = (24, 20, 9, 8, 7, 6, 5, 5, 4, 4, 4, 4)
REFERRERS = (
    None,
    "https://t.co/",
    "https://www.facebook.com/",
    "https://news.ycombinator.com/",
    "https://www.reddit.com/r/programming/",
    "https://www.google.com/",
    "https://www.linkedin.com/feed/",
)
REFERRER_WEIGHTS = (30, 22, 14, 10, 10, 9, 5)
CRAWLERS = (
    "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
    "Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)",
    "Mozilla/5.0 (compatible; AhrefsBot/7.0; +http://ahrefs.com/robot/)",
)
PREVIEWERS = (
    "Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)",
    "facebookexternalhit/1.1 (+http://www.facebook.com/externalhit_uatext.php)",
    "Twitterbot/1.0",
    "WhatsApp/2.24.8.78 A",
    "Discordbot/2.0; +https://discordapp.com",
)
SCRAPER_AGENT = "python-requests/2.31.0"
KINDS = ("human", "viral", "bot", "preview", "scraper")


@dataclass(frozen=True)
class TrafficPlan:
    """How much traffic of each kind to send; shares are fractions of ``requests``."""

    requests: int = 3_000
    links: int = 40
    zipf_s: float = 1.1
    viral_share: float = 0.2
    bot_share: float = 0.08
    preview_share: float = 0.04
    scraper_share: float = 0.1
    scraper_keys: int = 120
    visitors: int = 600
    concurrency: int = 16
    seed: int = 7

    def validate(self) -> None:
        """Raise ValueError for a plan that cannot run."""
        if not 1 <= self.requests <= 200_000:
            raise ValueError("requests must be between 1 and 200,000")
        if not 1 <= self.links <= 1_000:
            raise ValueError("links must be between 1 and 1,000")
        shares = (self.viral_share, self.bot_share, self.preview_share, self.scraper_share)
        if any(s < 0 for s in shares) or sum(shares) > 1:
            raise ValueError("the shares must be non-negative and add up to at most 1")
        if not 1 <= self.concurrency <= 128:
            raise ValueError("concurrency must be between 1 and 128")
        if self.zipf_s < 0:
            raise ValueError("zipf_s must be non-negative")
        if self.scraper_keys < 1 or self.visitors < 1:
            raise ValueError("scraper_keys and visitors must be at least 1")


@dataclass(frozen=True)
class Visit:
    """One planned request."""

    kind: str
    key: str
    headers: dict[str, str]


@dataclass
class SimulationResult:
    """What was sent, what came back, and what each cache layer absorbed."""

    plan: TrafficPlan
    keys: list[str]
    viral_key: str
    sent: Counter[str] = field(default_factory=Counter)
    statuses: dict[str, Counter[int]] = field(default_factory=dict)
    errors: int = 0
    elapsed_s: float = 0.0
    latency_ms: dict[str, float] = field(default_factory=dict)
    layers: dict[str, int] = field(default_factory=dict)
    analytics: dict[str, int] = field(default_factory=dict)

    @property
    def total(self) -> int:
        """Requests sent."""
        return sum(self.sent.values())

    @property
    def requests_per_s(self) -> float:
        """Requests answered per second of wall time."""
        return self.total / self.elapsed_s if self.elapsed_s > 0 else 0.0

    def layer_rows(self) -> list[dict[str, Any]]:
        """Per layer: the lookups it answered and its share of all redirect lookups."""
        total = max(1, self.layers.get("lookups", 0))
        rows = [
            ("In-process LRU cache", "l1Hits", "hot keys answered from memory"),
            ("Negative cache", "negativeHits", "unknown keys answered without the store"),
            ("Single-flight (collapsed)", "collapsed", "waited for another request's load"),
            ("Shared cache tier", "sharedHits", "answered by the shared tier"),
            ("Link store", "storeReads", "read from the store (SQLite or PostgreSQL)"),
            ("Rate limited (429)", "rateLimited", "refused: unknown-key budget spent"),
        ]
        return [
            {
                "layer": name,
                "lookups": self.layers.get(field_name, 0),
                "share": self.layers.get(field_name, 0) / total,
                "meaning": meaning,
            }
            for name, field_name, meaning in rows
        ]

    def as_dict(self) -> dict[str, Any]:
        """A JSON-friendly summary."""
        return {
            "total": self.total,
            "elapsedS": round(self.elapsed_s, 3),
            "requestsPerS": round(self.requests_per_s, 1),
            "sent": dict(self.sent),
            "statuses": {k: dict(v) for k, v in self.statuses.items()},
            "errors": self.errors,
            "latencyMs": self.latency_ms,
            "layers": self.layers,
            "analytics": self.analytics,
            "viralKey": self.viral_key,
        }


def zipf_weights(n: int, s: float) -> list[float]:
    """Click probabilities of ranks 1..n under Zipf's law with exponent ``s``."""
    raw = [1.0 / (rank**s) for rank in range(1, n + 1)]
    total = sum(raw)
    return [w / total for w in raw]


def browser_headers(rng: random.Random) -> dict[str, str]:
    """A browser visitor's headers: user agent, country and (sometimes) a referrer."""
    template = rng.choices(BROWSERS, BROWSER_WEIGHTS)[0]
    headers = {
        "User-Agent": template.format(minor=rng.randint(0, 6), build=rng.randint(1, 250)),
        "CF-IPCountry": rng.choices(COUNTRIES, COUNTRY_WEIGHTS)[0],
    }
    referrer = rng.choices(REFERRERS, REFERRER_WEIGHTS)[0]
    if referrer:
        headers["Referer"] = referrer
    return headers


def plan_visits(
    plan: TrafficPlan, keys: list[str], viral_key: str
) -> tuple[list[Visit], list[Visit]]:
    """The regular traffic (shuffled) and the viral burst, deterministic for ``plan.seed``."""
    plan.validate()
    rng = random.Random(plan.seed)
    n = plan.requests
    n_viral = int(n * plan.viral_share)
    n_bot = int(n * plan.bot_share)
    n_preview = int(n * plan.preview_share)
    n_scraper = int(n * plan.scraper_share)
    n_human = n - n_viral - n_bot - n_preview - n_scraper
    visitors = [browser_headers(rng) for _ in range(plan.visitors)]
    weights = zipf_weights(len(keys), plan.zipf_s)
    regular: list[Visit] = []
    for key in rng.choices(keys, weights, k=n_human):
        regular.append(Visit("human", key, dict(rng.choice(visitors))))
    for _ in range(n_bot):
        regular.append(Visit("bot", rng.choice(keys), {"User-Agent": rng.choice(CRAWLERS)}))
    popular = keys[: max(1, len(keys) // 5)] + [viral_key]
    for _ in range(n_preview):
        regular.append(
            Visit("preview", rng.choice(popular), {"User-Agent": rng.choice(PREVIEWERS)})
        )
    guesses = ["".join(rng.choices(BASE62_ALPHABET, k=7)) for _ in range(plan.scraper_keys)]
    for _ in range(n_scraper):
        regular.append(Visit("scraper", rng.choice(guesses), {"User-Agent": SCRAPER_AGENT}))
    rng.shuffle(regular)
    burst = [Visit("viral", viral_key, dict(rng.choice(visitors))) for _ in range(n_viral)]
    return regular, burst


def _flatten_metrics(metrics: dict[str, Any]) -> dict[str, int]:
    cache = metrics.get("cache", {})
    analytics = metrics.get("analytics") or {}
    buffer = analytics.get("buffer", {})
    return {
        "lookups": cache.get("requests", 0),
        "l1Hits": cache.get("l1", {}).get("hits", 0),
        "negativeHits": cache.get("negative", {}).get("hits", 0),
        "l1Expirations": cache.get("l1", {}).get("expirations", 0),
        "negativeExpirations": cache.get("negative", {}).get("expirations", 0),
        "sharedHits": cache.get("shared", {}).get("hits", 0)
        + cache.get("shared", {}).get("negativeHits", 0),
        "storeReads": cache.get("store", {}).get("reads", 0),
        "storeNotFound": cache.get("store", {}).get("notFound", 0),
        "loads": cache.get("singleFlight", {}).get("loads", 0),
        "collapsed": cache.get("singleFlight", {}).get("collapsed", 0),
        "clicksAccepted": buffer.get("accepted", 0),
        "clicksDropped": buffer.get("dropped", 0),
    }


def _percentile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, int(round(q * (len(ordered) - 1)))))
    return ordered[index]


def create_links(client: httpx.Client, token: str, count: int, seed: int) -> list[str]:
    """Create ``count`` links owned by ``token`` (tagged ``simulated``); returns their keys."""
    rng = random.Random(seed)
    sites = ("example.com", "example.org", "example.net")
    sections = ("article", "docs", "event", "shop", "video", "post")
    keys = []
    for i in range(count):
        url = f"https://{rng.choice(sites)}/{rng.choice(sections)}/{seed}-{i}"
        resp = client.post(
            "/v1/links",
            json={"longUrl": url, "tags": ["simulated"]},
            headers={"Authorization": f"Bearer {token}"},
        )
        if resp.status_code != 201:
            raise RuntimeError(f"creating a link failed: HTTP {resp.status_code} {resp.text}")
        keys.append(resp.json()["key"])
    return keys


def simulate_traffic(
    api_url: str | Sequence[str],
    plan: TrafficPlan | None = None,
    *,
    token: str | None = None,
    admin_token: str | None = None,
    keys: list[str] | None = None,
    timeout_s: float = 10.0,
) -> SimulationResult:
    """Send ``plan``'s traffic to the API at ``api_url`` (or round-robin over several
    addresses of one fleet); see the module docstring.

    ``keys``: links (owned by ``token``) to use; by default ``plan.links`` new links are
    created. The last key plays the viral link; the others are ranked by popularity in
    the order given. ``admin_token`` reads ``/v1/shortener/metrics`` before and after
    (what each layer absorbed). Raises :class:`httpx.HTTPError` if the API cannot be
    reached (or refuses the admin token) and :class:`ValueError` for an impossible plan.
    """
    admin = {"Authorization": f"Bearer {admin_token}"} if admin_token else {}
    plan = plan or TrafficPlan()
    plan.validate()
    limits = httpx.Limits(
        max_connections=plan.concurrency, max_keepalive_connections=plan.concurrency
    )
    urls = [api_url] if isinstance(api_url, str) else list(api_url)
    if not urls:
        raise ValueError("the simulator needs at least one API address")
    stack = ExitStack()
    clients = [
        stack.enter_context(
            httpx.Client(
                base_url=url.rstrip("/"), timeout=timeout_s, limits=limits, follow_redirects=False
            )
        )
        for url in urls
    ]
    turn = itertools.count()

    def metrics() -> dict[str, int]:
        total: Counter[str] = Counter()
        for c in clients:
            answer = c.get("/v1/shortener/metrics", headers=admin).raise_for_status()
            total.update(_flatten_metrics(answer.json()))
        return dict(total)

    with stack:
        client = clients[0]
        if token is None:
            token = client.post("/v1/tokens").raise_for_status().json()["token"]
        if not keys:
            keys = create_links(client, token, plan.links + 1, plan.seed)
        if len(keys) < 2:
            raise ValueError(
                "the simulator needs at least two links (popular ones + the viral one)"
            )
        popular, viral_key = list(keys[:-1]), keys[-1]
        regular, burst = plan_visits(plan, popular, viral_key)
        result = SimulationResult(plan=plan, keys=list(keys), viral_key=viral_key)
        result.statuses = {kind: Counter() for kind in KINDS}
        latencies: list[float] = []
        lock = threading.Lock()

        def send(visit: Visit) -> None:
            started = time.perf_counter()
            via = clients[next(turn) % len(clients)]
            try:
                status = via.get(f"/{visit.key}", headers=visit.headers).status_code
            except httpx.HTTPError:
                status = 0
            elapsed = (time.perf_counter() - started) * 1000
            with lock:
                result.sent[visit.kind] += 1
                result.statuses[visit.kind][status] += 1
                latencies.append(elapsed)
                if status == 0:
                    result.errors += 1

        before = metrics()
        started = time.perf_counter()
        half = len(regular) // 2
        with ThreadPoolExecutor(max_workers=plan.concurrency) as pool:
            list(pool.map(send, regular[:half]))
            if burst:
                # An owner edit purges the viral key from every cache layer; the burst
                # then misses together, as when a hot key expires at its peak.
                client.patch(
                    f"/v1/links/{viral_key}",
                    json={"tags": ["simulated", "viral"]},
                    headers={"Authorization": f"Bearer {token}"},
                ).raise_for_status()
                gate = threading.Barrier(min(plan.concurrency, len(burst)))

                def burst_send(visit: Visit, index: int) -> None:
                    if index < gate.parties:
                        try:
                            gate.wait(timeout=5)
                        except threading.BrokenBarrierError:
                            pass
                    send(visit)

                list(pool.map(burst_send, burst, range(len(burst))))
            list(pool.map(send, regular[half:]))
        result.elapsed_s = time.perf_counter() - started
        after = metrics()
    delta = {name: after[name] - before.get(name, 0) for name in after}
    result.layers = {k: v for k, v in delta.items() if not k.startswith("clicks")}
    # The unknown-key budget is peeked, not charged, when it refuses: count the 429s here.
    result.layers["rateLimited"] = sum(c[429] for c in result.statuses.values())
    result.analytics = {"accepted": delta["clicksAccepted"], "dropped": delta["clicksDropped"]}
    result.latency_ms = {
        "p50": round(_percentile(latencies, 0.50), 2),
        "p90": round(_percentile(latencies, 0.90), 2),
        "p99": round(_percentile(latencies, 0.99), 2),
        "mean": round(statistics.fmean(latencies), 2) if latencies else 0.0,
    }
    return result


__all__ = [
    "KINDS",
    "SimulationResult",
    "TrafficPlan",
    "Visit",
    "create_links",
    "plan_visits",
    "simulate_traffic",
    "zipf_weights",
]
