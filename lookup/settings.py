"""Every knob of the workbench, declared once: name, environment variable, type, default, unit.

Nothing else in ``lookup/`` or ``app/`` reads the environment (a test over the source tree
enforces it): code asks ``settings.get("data_dir")``, which reads the variable at call
time, so a test or a child process that sets it is seen at once. ``lookup settings``
prints the whole table with the current values.

A value that does not parse raises :class:`SettingError` naming the variable, the value and
what it accepts — a clear message at start-up, never a traceback deep inside a service.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["SETTINGS", "Setting", "SettingError", "child_environ", "describe", "get"]


class SettingError(ValueError):
    """An environment variable holds a value its setting cannot accept."""


_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")


def _text(raw: str) -> str:
    return raw.strip()


def _flag(raw: str) -> bool:
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ValueError(f"expected one of {', '.join(_TRUE + _FALSE)}")


def _positive_float(raw: str) -> float:
    value = float(raw)
    if not value > 0:
        raise ValueError("expected a number above 0")
    return value


def _partitions(raw: str) -> int:
    n = int(raw)
    if not 1 <= n <= 65536:
        raise ValueError(f"must be between 1 and 65536, not {n}")
    return n


def _seconds(raw: str) -> float:
    value = float(raw)
    if not value >= 0:
        raise ValueError("expected a number of seconds, 0 or more")
    return value


def _share(raw: str) -> float:
    value = float(raw)
    if not 0 < value <= 1:
        raise ValueError("expected a fraction above 0 and at most 1")
    return value


def _nice(raw: str) -> int:
    value = raw.strip()
    if not value.isdigit() or int(value) > 19:
        raise ValueError("expected a whole number from 0 to 19")
    return int(value)


def _track_total(raw: str) -> int | bool:
    value = raw.strip().lower()
    if value in ("true", "yes", "on"):
        return True
    if value.isdigit():
        return int(value)
    raise ValueError("expected true (count every match) or a whole number, 0 or more")


def _rate(raw: str) -> str:
    from lookup.kit.ratelimit import RatePolicy

    RatePolicy.parse(raw.strip())  # validate now; the caller parses it again into a policy
    return raw.strip()


def _proxies(raw: str) -> tuple[str, ...]:
    """``off`` → (), ``on`` → ("*",) (any peer), else the addresses and networks named."""
    value = raw.strip().lower()
    if value in _FALSE:
        return ()
    if value in _TRUE or value == "*":
        return ("*",)
    return _networks(raw)


def _hosts(raw: str) -> tuple[str, ...]:
    """``sh.example,.example.com,127.0.0.1`` → the names; ``*`` allows any host."""
    names = tuple(part.strip().lower() for part in raw.split(",") if part.strip())
    for name in names:
        if name != "*" and (any(c in name for c in "/ @?#") or name.startswith("*")):
            raise ValueError(
                f"{name!r} is not a host name (write sh.example, .example.com for a domain "
                "and its subdomains, an address, or * for any host)"
            )
    return names


def _origins(raw: str) -> tuple[str, ...]:
    """``https://app.example,http://localhost:3000`` → the origins; ``*`` allows any."""
    origins = tuple(part.strip().rstrip("/") for part in raw.split(",") if part.strip())
    for origin in origins:
        scheme, sep, rest = origin.partition("://")
        bad_host = not rest or any(c in rest for c in "/ @?#")
        if origin != "*" and (not sep or scheme not in ("http", "https") or bad_host):
            raise ValueError(
                f"{origin!r} is not an origin (write scheme://host[:port], such as "
                "https://app.example, or * for any)"
            )
    return origins


def _byte_count(raw: str) -> int:
    value = raw.strip()
    if not value.isdigit() or not 1024 <= int(value) <= 1024 * 1024:
        raise ValueError("expected a whole number of bytes from 1024 to 1048576")
    return int(value)


def _port_slot(raw: str) -> tuple[int, int]:
    index, sep, count = raw.strip().partition("/")
    if not (sep and index.isdigit() and count.isdigit() and int(index) < int(count) <= 64):
        raise ValueError("expected I/N, two whole numbers with I < N <= 64 (e.g. 0/1, 2/4)")
    return int(index), int(count)


def _networks(raw: str) -> tuple[str, ...]:
    import ipaddress

    nets = tuple(part.strip() for part in raw.split(",") if part.strip())
    for net in nets:
        ipaddress.ip_network(net, strict=False)  # ValueError names the bad one
    return nets


@dataclass(frozen=True)
class Setting:
    """One knob: where it is read from, what it accepts, and why its default is what it is."""

    name: str
    env: str
    default: Any
    parse: Callable[[str], Any]
    kind: str
    unit: str
    help: str
    choices: tuple[str, ...] = ()

    def read(self, environ: Mapping[str, str] | None = None) -> Any:
        """The current value: the variable if set and non-blank, else the default."""
        env = os.environ if environ is None else environ
        raw = env.get(self.env)
        if raw is None or not raw.strip():
            return self.default
        try:
            value = self.parse(raw)
        except ValueError as exc:
            raise SettingError(f"{self.env}={raw!r}: {exc}") from None
        if self.choices and value not in self.choices:
            raise SettingError(f"{self.env}={raw!r}: must be one of {', '.join(self.choices)}")
        return value


def _lower(raw: str) -> str:
    return raw.strip().lower()


SETTINGS: dict[str, Setting] = {
    s.name: s
    for s in [
        # -- where state lives and how the pieces find each other ---------------------------
        Setting(
            "data_dir",
            "LOOKUP_DATA_DIR",
            "data",
            _text,
            "path",
            "",
            "where all state lives (databases, snapshots, indexes); delete it to rebuild "
            "everything. Every command's --data-dir overrides it.",
        ),
        Setting(
            "public_url",
            "LOOKUP_PUBLIC_URL",
            "",
            _text,
            "url",
            "",
            "the address clients use to reach the API, used in short links (default: the "
            "address `lookup serve` binds, http://127.0.0.1:8000 for the app factory).",
        ),
        Setting(
            "api_url",
            "LOOKUP_API_URL",
            "http://127.0.0.1:8000",
            _text,
            "url",
            "",
            "where the dashboard finds the HTTP API.",
        ),
        Setting(
            "api_timeout",
            "LOOKUP_API_TIMEOUT",
            2.0,
            _positive_float,
            "seconds",
            "s",
            "how long the dashboard waits for an API answer before it says the API is slow "
            "(connecting: at most 1 s of it); the test suite raises it on a loaded machine.",
        ),
        Setting(
            "sandbox_url",
            "LOOKUP_SANDBOX_URL",
            "http://127.0.0.1:8600",
            _text,
            "url",
            "",
            "the sandbox web's control address the crawler page starts crawls against "
            "(`make run` starts it on port 8600).",
        ),
        # -- the HTTP front end (uvicorn, lookup/kit/serving.py) ---------------------------
        Setting(
            "http_max_header_bytes",
            "LOOKUP_HTTP_MAX_HEADER_BYTES",
            32 * 1024,
            _byte_count,
            "int",
            "bytes",
            "the largest request line plus headers a connection may send before 431: "
            "32 KiB, nginx's default (4 x 8 KiB buffers); this API takes no cookies and "
            "short tokens, and a parser fed 200 MB of header stalls every connection.",
        ),
        Setting(
            "http_header_timeout",
            "LOOKUP_HTTP_HEADER_TIMEOUT",
            10.0,
            _positive_float,
            "s",
            "",
            "seconds a client has to send a whole request head, counted from the connection "
            "(or the previous response); a slow-drip (Slowloris) connection is then closed. "
            "10 s, as Go servers' usual ReadHeaderTimeout: far above a real client's "
            "milliseconds, far below nginx's 60 s that lets a few hosts hold every slot.",
        ),
        Setting(
            "http_body_timeout",
            "LOOKUP_HTTP_BODY_TIMEOUT",
            30.0,
            _positive_float,
            "s",
            "",
            "seconds a client has to send a whole request body once its head arrived "
            "(408, then closed); bodies here are at most 64 KiB of JSON or CSV, so 30 s "
            "allows a 2 KiB/s link and no drip.",
        ),
        Setting(
            "http_keep_alive",
            "LOOKUP_HTTP_KEEP_ALIVE",
            5.0,
            _positive_float,
            "s",
            "",
            "seconds an idle keep-alive connection stays open after a response (uvicorn's "
            "default, 5 s: a client's next request on the same page reuses it, an idle "
            "one stops holding a slot).",
        ),
        Setting(
            "health_probe_timeout",
            "LOOKUP_HEALTH_PROBE_TIMEOUT",
            0.5,
            _positive_float,
            "s",
            "",
            "seconds /healthz waits for each system's probe (run off the event loop) before "
            "reporting it SLOW: a liveness check must answer while a store hangs (PostgreSQL "
            "down makes a probe wait 2 s for its pool), and load balancers give up after ~1 s.",
        ),
        Setting(
            "admin_token",
            "LOOKUP_ADMIN_TOKEN",
            "",
            _text,
            "secret",
            "",
            "the bearer token of mutating management endpoints; when unset, a random one "
            "is created once in the data directory (admin.token, mode 0600), or in the "
            "shared store when LOOKUP_SHORTENER_STORE names one (one token for the fleet).",
        ),
        # -- URL shortener -------------------------------------------------------------------
        Setting(
            "shortener_rate_anon",
            "LOOKUP_SHORTENER_RATE_ANON",
            "",
            _rate,
            "rate",
            "COUNT/SECONDS[:BURST]",
            "link creations per client IP without an owner token (default 20/60; the strictest: "
            "anonymous creation is where abuse comes from).",
        ),
        Setting(
            "shortener_rate_owner",
            "LOOKUP_SHORTENER_RATE_OWNER",
            "",
            _rate,
            "rate",
            "COUNT/SECONDS[:BURST]",
            "link creations per owner token (default 600/60).",
        ),
        Setting(
            "shortener_rate_ip",
            "LOOKUP_SHORTENER_RATE_IP",
            "",
            _rate,
            "rate",
            "COUNT/SECONDS[:BURST]",
            "link creations per client IP with a token (default 1200/60): stops rotating tokens.",
        ),
        Setting(
            "shortener_rate_misses",
            "LOOKUP_SHORTENER_RATE_MISSES",
            "",
            _rate,
            "rate",
            "COUNT/SECONDS[:BURST]",
            "store lookups of unknown keys per client IP (default 50/1:500): stops key guessing.",
        ),
        Setting(
            "shortener_rate_password",
            "LOOKUP_SHORTENER_RATE_PASSWORD",
            "",
            _rate,
            "rate",
            "COUNT/SECONDS[:BURST]",
            "password attempts per client IP and link (default 10/60): stops guessing.",
        ),
        Setting(
            "trust_forwarded_for",
            "LOOKUP_TRUST_FORWARDED_FOR",
            (),
            _proxies,
            "proxies",
            "off | on | ADDRESS[,NETWORK...]",
            "the proxies whose X-Forwarded-For names the client (rate limits, trending): "
            "off (default) trusts none, so the header is ignored everywhere, uvicorn "
            "included; a list of addresses or networks (127.0.0.1,::1 for a proxy on this "
            "machine) trusts only connections from those; on trusts any peer — only when "
            "nothing but your proxy can reach the server, else any client picks its own "
            "identity.",
        ),
        Setting(
            "allowed_hosts",
            "LOOKUP_ALLOWED_HOSTS",
            (),
            _hosts,
            "hosts",
            "NAME[,.DOMAIN,ADDRESS...] | *",
            "the names a request's Host header may carry besides loopback names (against "
            "DNS rebinding): empty (default) allows the address `lookup serve` listens on "
            "and the host of LOOKUP_PUBLIC_URL; .example.com allows a domain and its "
            "subdomains; * allows any host. Others get 400 HOST_NOT_ALLOWED.",
        ),
        Setting(
            "shortener_analytics",
            "LOOKUP_SHORTENER_ANALYTICS",
            True,
            _flag,
            "flag",
            "",
            "record clicks (buffer → log → aggregator); 0 serves redirects without "
            "analytics, for comparisons.",
        ),
        Setting(
            "shortener_scanner",
            "LOOKUP_SHORTENER_SCANNER",
            True,
            _flag,
            "flag",
            "",
            "run the background safety scanner over new and changed links; 0 turns it off.",
        ),
        Setting(
            "shortener_allowed_ranges",
            "LOOKUP_SHORTENER_ALLOWED_RANGES",
            (),
            _networks,
            "list",
            "CIDR,CIDR,...",
            "non-public networks short links may lead to anyway (e.g. 127.0.0.0/8 for a demo "
            "that shortens its own loopback pages); empty by default: loopback, private, "
            "link-local, CGNAT, multicast and reserved destinations are refused.",
        ),
        Setting(
            "shortener_aggregator",
            "LOOKUP_SHORTENER_AGGREGATOR",
            "process",
            _lower,
            "choice",
            "",
            "where the click aggregator runs: its own process (default; keeps its CPU off "
            "the redirect path), a thread here, or external (`python -m "
            "lookup.shortener.analytics`).",
            choices=("thread", "process", "external"),
        ),
        Setting(
            "shortener_aggregator_nice",
            "LOOKUP_SHORTENER_AGGREGATOR_NICE",
            19,
            _nice,
            "int",
            "nice 0..19",
            "CPU priority of the aggregator process: 19 yields to the redirect path.",
        ),
        # -- typeahead -------------------------------------------------------------------------
        Setting(
            "suggest_cors_origins",
            "LOOKUP_SUGGEST_CORS_ORIGINS",
            (),
            _origins,
            "origins",
            "ORIGIN[,ORIGIN...] | *",
            "web origins whose pages may call GET /v1/suggest from the browser (CORS): "
            "https://app.example,http://localhost:3000; * allows any; empty (default): none.",
        ),
        Setting(
            "typeahead_rate_searches",
            "LOOKUP_TYPEAHEAD_RATE_SEARCHES",
            "30/60:30",
            _rate,
            "rate",
            "COUNT/SECONDS[:BURST]",
            "submitted searches (POST /v1/searches) per client address (an IPv6 /64): a "
            "person searches a few times a minute; a brigade from one client is cut off.",
        ),
        Setting(
            "typeahead_blocklist",
            "LOOKUP_TYPEAHEAD_BLOCKLIST",
            "",
            _text,
            "url",
            "",
            "where the typeahead hot blocklist lives: postgresql://user@host:port/db shares "
            "one list between API processes (`lookup up --backend postgres` sets it to the "
            "shortener's store); file:///path/blocklist.txt or unset: <data-dir>/typeahead/"
            "blocklist.txt, edited under a file lock. Each process re-reads it within a "
            "second of a change.",
        ),
        # -- building blocks (unique ids) ----------------------------------------------------
        Setting(
            "etcd_url",
            "LOOKUP_ETCD_URL",
            "",
            _text,
            "url",
            "",
            "the etcd that leases Snowflake worker ids (its HTTP gateway, e.g. "
            "http://127.0.0.1:2379); unset: the notebook and the dashboard start a "
            "throw-away etcd of their own when the etcd binary is there.",
        ),
        Setting(
            "etcd_bin",
            "LOOKUP_ETCD_BIN",
            "/usr/bin/etcd",
            _text,
            "path",
            "",
            "the etcd binary throw-away servers are started from (Debian's etcd-server).",
        ),
        Setting(
            "snowflake_lease_ttl",
            "LOOKUP_SNOWFLAKE_LEASE_TTL",
            10.0,
            _positive_float,
            "s",
            "",
            "seconds a Snowflake worker-id lease lives without a keep-alive (refreshed every "
            "third of it); a generator stops issuing once it passes.",
        ),
        # -- building blocks (the quorum key-value store) ----------------------------------------
        Setting(
            "kv_replica_timeout_s",
            "LOOKUP_KV_REPLICA_TIMEOUT_S",
            1.0,
            _positive_float,
            "s",
            "",
            "how long a KV coordinator waits for one replica (a frozen node costs this once "
            "before its missed heartbeats mark it down).",
        ),
        Setting(
            "kv_heartbeat_s",
            "LOOKUP_KV_HEARTBEAT_S",
            0.25,
            _positive_float,
            "s",
            "",
            "seconds between a KV node's heartbeats to each peer (and hint delivery rounds).",
        ),
        Setting(
            "kv_down_after_s",
            "LOOKUP_KV_DOWN_AFTER_S",
            1.5,
            _positive_float,
            "s",
            "",
            "a KV peer that has not answered a heartbeat for this long is treated as down: "
            "coordinators skip it and leave hints for it.",
        ),
        Setting(
            "kv_anti_entropy_s",
            "LOOKUP_KV_ANTI_ENTROPY_S",
            1.0,
            _positive_float,
            "s",
            "",
            "seconds between a KV node's Merkle-tree exchanges with its peers.",
        ),
        # -- rate limits on Redis -------------------------------------------------------------
        Setting(
            "redis_bin",
            "LOOKUP_REDIS_BIN",
            "/usr/bin/redis-server",
            _text,
            "path",
            "",
            "the redis-server binary throw-away servers are started from (Debian's redis-server).",
        ),
        Setting(
            "ratelimit_redis_timeout",
            "LOOKUP_RATELIMIT_REDIS_TIMEOUT",
            0.25,
            _positive_float,
            "s",
            "",
            "seconds a Redis rate limiter waits for its server before it declares it "
            "unavailable and applies its on_unavailable policy (a limiter sits on every "
            "request, so it must give up fast).",
        ),
        # -- scale-out backends (issue 13): unset = the embedded default -------------------
        Setting(
            "shortener_store",
            "LOOKUP_SHORTENER_STORE",
            "",
            _text,
            "url",
            "",
            "where the shortener keeps links, id blocks, aliases, idempotency keys, audit, "
            "click budgets and click counts: postgresql://user@host:port/db shares them "
            "between API processes; unset: SQLite files in the data directory.",
        ),
        Setting(
            "cache_url",
            "LOOKUP_CACHE_URL",
            "",
            _text,
            "url",
            "",
            "the shortener's shared cache tier between each process's LRU and the store "
            "(redis://host:port/db); unset: none (the in-process LRU only).",
        ),
        Setting(
            "cache_redis_timeout",
            "LOOKUP_CACHE_REDIS_TIMEOUT",
            0.1,
            _positive_float,
            "s",
            "",
            "seconds the Redis cache tier waits to connect or for a reply before a call counts "
            "as failed (a miss, a skipped fill); three in a row open its circuit breaker.",
        ),
        Setting(
            "cache_l1_unwatched_ttl",
            "LOOKUP_CACHE_L1_UNWATCHED_TTL",
            1.0,
            _positive_float,
            "s",
            "",
            "seconds a process keeps a link in its in-process cache while it cannot hear the "
            "shared tier's invalidations (Redis down): how stale a link changed through another "
            "process during an outage can be here.",
        ),
        Setting(
            "cache_outbox_poll",
            "LOOKUP_CACHE_OUTBOX_POLL",
            1.0,
            _positive_float,
            "s",
            "",
            "seconds between a process's looks at the link store's outbox of invalidations "
            "that could not reach Redis (its own, or a crashed process's): how long after "
            "Redis is reachable again such a change can still be served from the tier.",
        ),
        Setting(
            "redis_breaker_reset",
            "LOOKUP_REDIS_BREAKER_RESET",
            1.0,
            _positive_float,
            "s",
            "",
            "seconds a Redis client's open circuit breaker refuses calls at once before it "
            "lets one probe through (the shared cache tier's).",
        ),
        Setting(
            "limits_url",
            "LOOKUP_LIMITS_URL",
            "",
            _text,
            "url",
            "",
            "where the shortener's rate limits live (redis://host:port/db: one limit for the "
            "whole fleet); unset: each process's own memory.",
        ),
        Setting(
            "limits_local_share",
            "LOOKUP_LIMITS_LOCAL_SHARE",
            1.0,
            _share,
            "fraction",
            "",
            "the part of each create / miss limit a process keeps to itself while the Redis "
            "of LOOKUP_LIMITS_URL is unreachable (1/N for N API processes); password attempts "
            "are refused instead.",
        ),
        Setting(
            "clicks_url",
            "LOOKUP_CLICKS_URL",
            "",
            _text,
            "url",
            "",
            "the click stream (redis://host:port/db: Redis Streams with a consumer group); "
            "unset: the SQLite click log in the data directory.",
        ),
        Setting(
            "clicks_claim_idle",
            "LOOKUP_CLICKS_CLAIM_IDLE",
            30.0,
            _positive_float,
            "s",
            "",
            "seconds a click-stream entry may stay unacknowledged with one aggregator of the "
            "consumer group before another claims it (its consumer died mid-batch).",
        ),
        Setting(
            "clicks_fold_delay",
            "LOOKUP_CLICKS_FOLD_DELAY",
            0.0,
            _seconds,
            "s",
            "",
            "for failure drills only: seconds a group aggregator waits between taking a batch "
            "from the click stream and folding it, so a kill lands in the middle (0: none).",
        ),
        Setting(
            "postgres_bin",
            "LOOKUP_POSTGRES_BIN",
            "",
            _text,
            "path",
            "",
            "the bin directory of the PostgreSQL that throw-away servers are started from "
            "(initdb, pg_ctl); unset: the newest under /usr/lib/postgresql.",
        ),
        Setting(
            "port_slot",
            "LOOKUP_PORT_SLOT",
            (0, 1),
            _port_slot,
            "I/N",
            "",
            "which share of the free-port range this process draws the throw-away servers' "
            "loopback ports from: 0/1 is all of it; a parallel test run gives worker I of N "
            "its own share, so two workers never draw the same port.",
        ),
        Setting(
            "require_servers",
            "LOOKUP_REQUIRE_SERVERS",
            False,
            _flag,
            "flag",
            "",
            "tests that need a real server (etcd, Redis, PostgreSQL) fail instead of "
            "skipping when its binary is missing (.ci/run sets it).",
        ),
        # -- crawler control API ---------------------------------------------------------------
        Setting(
            "crawl_store",
            "LOOKUP_CRAWL_STORE",
            "",
            _text,
            "url",
            "",
            "the crawl the API's /crawler endpoints (controls, per-host health) act on: its "
            "store URL (sqlite:///DIR/crawl.sqlite, or the fleet's postgresql://…); default: "
            "the newest crawl under <data-dir>/crawls. A request's crawl=NAME picks another "
            "crawl there.",
        ),
        # -- web search ----------------------------------------------------------------------
        Setting(
            "search_deadline_ms",
            "LOOKUP_SEARCH_DEADLINE_MS",
            None,
            _positive_float,
            "ms",
            "",
            "per-query deadline for a shard's answer before the coordinator hedges or "
            "answers partially (default: the coordinator's DEFAULT_DEADLINE_MS). The test "
            "suite raises it so a loaded machine never fakes a miss.",
        ),
        Setting(
            "search_track_total_hits",
            "LOOKUP_SEARCH_TRACK_TOTAL_HITS",
            10_000,
            _track_total,
            "int",
            "0.., or true",
            "GET /search counts matches exactly up to this many per index segment (Elasticsearch's "
            "track_total_hits, 10,000 by default); past it a shard may take the top results "
            "by dynamic pruning and report the total as a lower bound (totalRelation: gte). "
            "true counts every match; a request's trackTotalHits overrides it.",
        ),
        Setting(
            "search_compiled",
            "LOOKUP_SEARCH_COMPILED",
            True,
            _flag,
            "flag",
            "",
            "score plain AND/OR queries with the compiled kernels (numba, lookup/search/"
            "kernels.py; compiled once into a cache beside the module); off: the numpy path, "
            "the same results, slower.",
        ),
        # -- the crawler fleet ----------------------------------------------------------------
        Setting(
            "crawl_partitions",
            "LOOKUP_CRAWL_PARTITIONS",
            256,
            _partitions,
            "int",
            "1..65536",
            "partitions a fleet crawl splits its hosts into (hash of the host's address mod "
            "P), far more than workers so work moves in small pieces; fixed when a crawl "
            "starts (kept in its store).",
        ),
        Setting(
            "crawl_lease_ttl",
            "LOOKUP_CRAWL_LEASE_TTL",
            10.0,
            _positive_float,
            "s",
            "",
            "seconds a fleet worker's partition leases live in etcd without a keep-alive "
            "(renewed every third of it); a worker stops fetching a partition once it passes.",
        ),
        Setting(
            "crawl_pickup_interval",
            "LOOKUP_CRAWL_PICKUP_INTERVAL",
            0.5,
            _positive_float,
            "s",
            "",
            "how often a fleet worker polls the store for URLs other workers discovered "
            "in its partitions.",
        ),
    ]
}


def get(name: str, environ: Mapping[str, str] | None = None) -> Any:
    """The current value of setting ``name`` (read from the environment now)."""
    try:
        setting = SETTINGS[name]
    except KeyError:
        raise KeyError(f"unknown setting {name!r}; known: {', '.join(sorted(SETTINGS))}") from None
    return setting.read(environ)


def describe(environ: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
    """Every setting with its current value, for ``lookup settings`` and the docs."""
    rows = []
    for s in SETTINGS.values():
        try:
            value: Any = s.read(environ)
        except SettingError as exc:
            value = f"INVALID ({exc})"
        if s.kind == "secret" and value:
            value = "(set)"
        rows.append(
            {
                "name": s.name,
                "env": s.env,
                "value": value,
                "default": s.default,
                "unit": s.unit,
                "help": s.help,
            }
        )
    return rows


def child_environ(**overrides: str) -> dict[str, str]:
    """This process's environment with ``overrides`` (by env name), for a child process."""
    env = dict(os.environ)
    env.update(overrides)
    return env
