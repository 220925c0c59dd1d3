"""The crawler's knobs (control API, fleet)."""

from __future__ import annotations

from lookup.settings.base import (
    Setting,
    as_partitions,
    as_positive_float,
    as_text,
)

KNOBS: list[Setting] = [
    # -- crawler control API ---------------------------------------------------------------
    Setting(
        "crawl_store",
        "LOOKUP_CRAWL_STORE",
        "",
        as_text,
        "url",
        "",
        "the crawl the API's /crawler endpoints (controls, per-host health) act on: its "
        "store URL (sqlite:///DIR/crawl.sqlite, or the fleet's postgresql://…); default: "
        "the newest crawl under <data-dir>/crawls. A request's crawl=NAME picks another "
        "crawl there.",
    ),
    # -- the crawler fleet ----------------------------------------------------------------
    Setting(
        "crawl_partitions",
        "LOOKUP_CRAWL_PARTITIONS",
        256,
        as_partitions,
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
        as_positive_float,
        "s",
        "",
        "seconds a fleet worker's partition leases live in etcd without a keep-alive "
        "(renewed every third of it); a worker stops fetching a partition once it passes.",
    ),
    Setting(
        "crawl_pickup_interval",
        "LOOKUP_CRAWL_PICKUP_INTERVAL",
        0.5,
        as_positive_float,
        "s",
        "",
        "how often a fleet worker polls the store for URLs other workers discovered "
        "in its partitions.",
    ),
]
