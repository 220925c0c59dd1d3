"""The one way to open a Redis client: short timeouts, no hidden retries, a safe description.

redis-py retries a failed command ten times with exponential back-off by default; on a
request path that turns a dead server into seconds per request. Every client of the
workbench (the cache tier, the rate limiters, the click stream) fails fast instead and
leaves the decision to its caller (a circuit breaker, a declared outage policy).
"""

from __future__ import annotations

from urllib.parse import urlsplit

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

__all__ = ["UNAVAILABLE", "describe_redis_url", "redis_client"]

#: What a client raises when its server cannot be reached or does not answer in time.
UNAVAILABLE: tuple[type[Exception], ...] = (redis.ConnectionError, redis.TimeoutError, OSError)


def redis_client(
    url: str,
    *,
    timeout_s: float,
    socket_timeout_s: float | None = None,
    max_connections: int | None = None,
) -> redis.Redis:
    """A client for ``url`` that gives up after ``timeout_s`` (connect and each reply,
    unless ``socket_timeout_s`` says otherwise for replies) and never retries by itself.
    ``max_connections`` raises redis-py's pool limit (100) for many threads at once."""
    extra = {} if max_connections is None else {"max_connections": max_connections}
    return redis.Redis.from_url(
        url,
        **extra,
        socket_connect_timeout=timeout_s,
        socket_timeout=timeout_s if socket_timeout_s is None else socket_timeout_s,
        retry=Retry(NoBackoff(), 0),
        retry_on_timeout=False,
    )


def describe_redis_url(url: str) -> str:
    """``redis://host:port/db`` — the address without user or password, for status pages."""
    parts = urlsplit(url.strip())
    host = parts.hostname or "localhost"
    port = parts.port or 6379
    db = parts.path.strip("/") or "0"
    return f"{parts.scheme}://{host}:{port}/{db}"
