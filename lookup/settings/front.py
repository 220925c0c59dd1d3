"""Where state lives, the HTTP front end and the scale-out backends' URLs."""

from __future__ import annotations

from lookup.settings.base import (
    Setting,
    as_byte_count,
    as_flag,
    as_lower,
    as_port_slot,
    as_positive_float,
    as_seconds,
    as_share,
    as_text,
)

KNOBS: list[Setting] = [
    # -- where state lives and how the pieces find each other ---------------------------
    Setting(
        "data_dir",
        "LOOKUP_DATA_DIR",
        "data",
        as_text,
        "path",
        "",
        "where all state lives (databases, snapshots, indexes); delete it to rebuild "
        "everything. Every command's --data-dir overrides it.",
    ),
    Setting(
        "public_url",
        "LOOKUP_PUBLIC_URL",
        "",
        as_text,
        "url",
        "",
        "the address clients use to reach the API, used in short links (default: the "
        "address `lookup serve` binds, http://127.0.0.1:8000 for the app factory).",
    ),
    Setting(
        "api_url",
        "LOOKUP_API_URL",
        "http://127.0.0.1:8000",
        as_text,
        "url",
        "",
        "where the dashboard finds the HTTP API.",
    ),
    Setting(
        "api_timeout",
        "LOOKUP_API_TIMEOUT",
        2.0,
        as_positive_float,
        "seconds",
        "s",
        "how long the dashboard waits for an API answer before it says the API is slow "
        "(connecting: at most 1 s of it); the test suite raises it on a loaded machine.",
    ),
    Setting(
        "sandbox_url",
        "LOOKUP_SANDBOX_URL",
        "http://127.0.0.1:8600",
        as_text,
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
        as_byte_count,
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
        as_positive_float,
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
        as_positive_float,
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
        as_positive_float,
        "s",
        "",
        "seconds an idle keep-alive connection stays open after a response (uvicorn's "
        "default, 5 s: a client's next request on the same page reuses it, an idle "
        "one stops holding a slot).",
    ),
    Setting(
        "metrics_auth",
        "LOOKUP_METRICS_AUTH",
        "open",
        as_lower,
        "choice",
        "",
        "who may read GET /metrics: open (as /healthz: counts and latencies, no data or "
        "secrets, and Prometheus scrapes it with no secret to manage) or admin (the admin "
        "token as a bearer token; Prometheus sends it with authorization.credentials_file).",
        choices=("open", "admin"),
    ),
    Setting(
        "health_probe_timeout",
        "LOOKUP_HEALTH_PROBE_TIMEOUT",
        0.5,
        as_positive_float,
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
        as_text,
        "secret",
        "",
        "the bearer token of mutating management endpoints; when unset, a random one "
        "is created once in the data directory (admin.token, mode 0600), or in the "
        "shared store when LOOKUP_SHORTENER_STORE names one (one token for the fleet).",
    ),
    # -- scale-out backends (issue 13): unset = the embedded default -------------------
    Setting(
        "shortener_store",
        "LOOKUP_SHORTENER_STORE",
        "",
        as_text,
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
        as_text,
        "url",
        "",
        "the shortener's shared cache tier between each process's LRU and the store "
        "(redis://host:port/db); unset: none (the in-process LRU only).",
    ),
    Setting(
        "cache_redis_timeout",
        "LOOKUP_CACHE_REDIS_TIMEOUT",
        0.1,
        as_positive_float,
        "s",
        "",
        "seconds the Redis cache tier waits to connect or for a reply before a call counts "
        "as failed (a miss, a skipped fill); three in a row open its circuit breaker.",
    ),
    Setting(
        "cache_l1_unwatched_ttl",
        "LOOKUP_CACHE_L1_UNWATCHED_TTL",
        1.0,
        as_positive_float,
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
        as_positive_float,
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
        as_positive_float,
        "s",
        "",
        "seconds a Redis client's open circuit breaker refuses calls at once before it "
        "lets one probe through (the shared cache tier's).",
    ),
    Setting(
        "limits_url",
        "LOOKUP_LIMITS_URL",
        "",
        as_text,
        "url",
        "",
        "where the shortener's rate limits live (redis://host:port/db: one limit for the "
        "whole fleet); unset: each process's own memory.",
    ),
    Setting(
        "limits_local_share",
        "LOOKUP_LIMITS_LOCAL_SHARE",
        1.0,
        as_share,
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
        as_text,
        "url",
        "",
        "the click stream (redis://host:port/db: Redis Streams with a consumer group); "
        "unset: the SQLite click log in the data directory.",
    ),
    Setting(
        "clicks_claim_idle",
        "LOOKUP_CLICKS_CLAIM_IDLE",
        30.0,
        as_positive_float,
        "s",
        "",
        "seconds a click-stream entry may stay unacknowledged with one aggregator of the "
        "consumer group before another claims it (its consumer died mid-batch).",
    ),
    Setting(
        "clicks_fold_delay",
        "LOOKUP_CLICKS_FOLD_DELAY",
        0.0,
        as_seconds,
        "s",
        "",
        "for failure drills only: seconds a group aggregator waits between taking a batch "
        "from the click stream and folding it, so a kill lands in the middle (0: none).",
    ),
    Setting(
        "postgres_bin",
        "LOOKUP_POSTGRES_BIN",
        "",
        as_text,
        "path",
        "",
        "the bin directory of the PostgreSQL that throw-away servers are started from "
        "(initdb, pg_ctl); unset: the newest under /usr/lib/postgresql.",
    ),
    Setting(
        "port_slot",
        "LOOKUP_PORT_SLOT",
        (0, 1),
        as_port_slot,
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
        as_flag,
        "flag",
        "",
        "tests that need a real server (etcd, Redis, PostgreSQL) fail instead of "
        "skipping when its binary is missing (.ci/run sets it).",
    ),
]
