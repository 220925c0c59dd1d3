"""The building blocks' knobs (unique ids, the quorum store, rate limits)."""

from __future__ import annotations

from lookup.settings.base import (
    Setting,
    as_positive_float,
    as_text,
)

KNOBS: list[Setting] = [
    # -- building blocks (unique ids) ----------------------------------------------------
    Setting(
        "etcd_url",
        "LOOKUP_ETCD_URL",
        "",
        as_text,
        "url",
        "",
        "the etcd that leases Snowflake worker ids and keeps web search's shard "
        "membership (its HTTP gateway, e.g. "
        "http://127.0.0.1:2379); unset: the notebook and the dashboard start a "
        "throw-away etcd of their own when the etcd binary is there.",
    ),
    Setting(
        "etcd_bin",
        "LOOKUP_ETCD_BIN",
        "/usr/bin/etcd",
        as_text,
        "path",
        "",
        "the etcd binary throw-away servers are started from (Debian's etcd-server).",
    ),
    Setting(
        "snowflake_lease_ttl",
        "LOOKUP_SNOWFLAKE_LEASE_TTL",
        10.0,
        as_positive_float,
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
        as_positive_float,
        "s",
        "",
        "how long a KV coordinator waits for one replica (a frozen node costs this once "
        "before its missed heartbeats mark it down).",
    ),
    Setting(
        "kv_heartbeat_s",
        "LOOKUP_KV_HEARTBEAT_S",
        0.25,
        as_positive_float,
        "s",
        "",
        "seconds between a KV node's heartbeats to each peer (and hint delivery rounds).",
    ),
    Setting(
        "kv_down_after_s",
        "LOOKUP_KV_DOWN_AFTER_S",
        1.5,
        as_positive_float,
        "s",
        "",
        "a KV peer that has not answered a heartbeat for this long is treated as down: "
        "coordinators skip it and leave hints for it.",
    ),
    Setting(
        "kv_anti_entropy_s",
        "LOOKUP_KV_ANTI_ENTROPY_S",
        1.0,
        as_positive_float,
        "s",
        "",
        "seconds between a KV node's Merkle-tree exchanges with its peers.",
    ),
    # -- rate limits on Redis -------------------------------------------------------------
    Setting(
        "redis_bin",
        "LOOKUP_REDIS_BIN",
        "/usr/bin/redis-server",
        as_text,
        "path",
        "",
        "the redis-server binary throw-away servers are started from (Debian's redis-server).",
    ),
    Setting(
        "ratelimit_redis_timeout",
        "LOOKUP_RATELIMIT_REDIS_TIMEOUT",
        0.25,
        as_positive_float,
        "s",
        "",
        "seconds a Redis rate limiter waits for its server before it declares it "
        "unavailable and applies its on_unavailable policy (a limiter sits on every "
        "request, so it must give up fast).",
    ),
]
