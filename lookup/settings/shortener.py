"""The URL shortener's knobs."""

from __future__ import annotations

from lookup.settings.base import (
    Setting,
    as_bulk_items,
    as_flag,
    as_hosts,
    as_lower,
    as_networks,
    as_nice,
    as_partitions,
    as_positive_float,
    as_proxies,
    as_rate,
    as_short_domains,
)

KNOBS: list[Setting] = [
    # -- URL shortener -------------------------------------------------------------------
    Setting(
        "shortener_rate_anon",
        "LOOKUP_SHORTENER_RATE_ANON",
        "",
        as_rate,
        "rate",
        "COUNT/SECONDS[:BURST]",
        "link creations per client IP without an owner token (default 20/60; the strictest: "
        "anonymous creation is where abuse comes from).",
    ),
    Setting(
        "shortener_rate_owner",
        "LOOKUP_SHORTENER_RATE_OWNER",
        "",
        as_rate,
        "rate",
        "COUNT/SECONDS[:BURST]",
        "link creations per owner token (default 600/60).",
    ),
    Setting(
        "shortener_rate_ip",
        "LOOKUP_SHORTENER_RATE_IP",
        "",
        as_rate,
        "rate",
        "COUNT/SECONDS[:BURST]",
        "link creations per client IP with a token (default 1200/60): stops rotating tokens.",
    ),
    Setting(
        "shortener_rate_misses",
        "LOOKUP_SHORTENER_RATE_MISSES",
        "",
        as_rate,
        "rate",
        "COUNT/SECONDS[:BURST]",
        "store lookups of unknown keys per client IP (default 50/1:500): stops key guessing.",
    ),
    Setting(
        "shortener_rate_password",
        "LOOKUP_SHORTENER_RATE_PASSWORD",
        "",
        as_rate,
        "rate",
        "COUNT/SECONDS[:BURST]",
        "password attempts per client IP and link (default 10/60): stops guessing.",
    ),
    Setting(
        "trust_forwarded_for",
        "LOOKUP_TRUST_FORWARDED_FOR",
        (),
        as_proxies,
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
        as_hosts,
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
        as_flag,
        "flag",
        "",
        "record clicks (buffer → log → aggregator); 0 serves redirects without "
        "analytics, for comparisons.",
    ),
    Setting(
        "shortener_scanner",
        "LOOKUP_SHORTENER_SCANNER",
        True,
        as_flag,
        "flag",
        "",
        "run the background safety scanner over new and changed links; 0 turns it off.",
    ),
    Setting(
        "shortener_allowed_ranges",
        "LOOKUP_SHORTENER_ALLOWED_RANGES",
        (),
        as_networks,
        "list",
        "CIDR,CIDR,...",
        "non-public networks short links may lead to anyway (e.g. 127.0.0.0/8 for a demo "
        "that shortens its own loopback pages); empty by default: loopback, private, "
        "link-local, CGNAT, multicast and reserved destinations are refused.",
    ),
    Setting(
        "shortener_domains",
        "LOOKUP_SHORTENER_DOMAINS",
        (),
        as_short_domains,
        "list",
        "DOMAIN,DOMAIN,...",
        "short domains a link may live on besides the default one (the public base URL's "
        "host); GET /{key} is resolved by the Host header, an unknown host as the default.",
    ),
    Setting(
        "shortener_bulk_max",
        "LOOKUP_SHORTENER_BULK_MAX",
        1000,
        as_bulk_items,
        "int",
        "links 1..10000",
        "the most links one POST /v1/links/bulk may create: a larger array is refused "
        "whole with 413 TOO_MANY_ITEMS, before any link is made.",
    ),
    Setting(
        "shortener_aggregator",
        "LOOKUP_SHORTENER_AGGREGATOR",
        "process",
        as_lower,
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
        as_nice,
        "int",
        "nice 0..19",
        "CPU priority of the aggregator process: 19 yields to the redirect path.",
    ),
    Setting(
        "shortener_webhook_timeout",
        "LOOKUP_SHORTENER_WEBHOOK_TIMEOUT",
        5.0,
        as_positive_float,
        "float",
        "s",
        "how long a webhook POST may take (connect and answer) before it counts as failed.",
    ),
    Setting(
        "shortener_webhook_max_attempts",
        "LOOKUP_SHORTENER_WEBHOOK_MAX_ATTEMPTS",
        8,
        as_partitions,
        "int",
        "attempts",
        "POSTs of one webhook delivery before it is marked failed in the delivery log.",
    ),
    Setting(
        "shortener_webhook_backoff",
        "LOOKUP_SHORTENER_WEBHOOK_BACKOFF",
        10.0,
        as_positive_float,
        "float",
        "s",
        "wait after a webhook's first failed attempt; doubles each time (half of it "
        "random jitter), up to LOOKUP_SHORTENER_WEBHOOK_BACKOFF_CAP.",
    ),
    Setting(
        "shortener_webhook_backoff_cap",
        "LOOKUP_SHORTENER_WEBHOOK_BACKOFF_CAP",
        3600.0,
        as_positive_float,
        "float",
        "s",
        "the longest wait between two attempts of a webhook delivery.",
    ),
    Setting(
        "shortener_webhook_batch_size",
        "LOOKUP_SHORTENER_WEBHOOK_BATCH_SIZE",
        100,
        as_partitions,
        "int",
        "clicks",
        "clicks per link.clicked webhook POST at most; a full batch goes out at once.",
    ),
    Setting(
        "shortener_webhook_batch_interval",
        "LOOKUP_SHORTENER_WEBHOOK_BATCH_INTERVAL",
        5.0,
        as_positive_float,
        "float",
        "s",
        "how long a click waits for others before a smaller link.clicked batch is sent.",
    ),
    Setting(
        "shortener_webhook_poll",
        "LOOKUP_SHORTENER_WEBHOOK_POLL",
        1.0,
        as_positive_float,
        "float",
        "s",
        "how often the webhook sender looks for endpoints, outbox events and due retries "
        "(and how soon an endpoint registered by another process is seen).",
    ),
]
