"""``open_rate_limiter``: the limiter a URL names, with the algorithm in its query.

``memory:`` is the in-process token bucket (the default algorithm);
``memory:?algorithm=sliding_log`` picks another of :data:`ALGORITHM_NAMES`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from urllib.parse import parse_qs, urlsplit

from lookup.kit.ratelimit.bucket import MemoryRateLimiter, RateLimiter, RatePolicy
from lookup.kit.ratelimit.windows import ALGORITHMS
from lookup.kit.storeurl import parse_store_url

__all__ = ["ALGORITHM_NAMES", "DEFAULT_ALGORITHM", "open_rate_limiter", "url_algorithm"]

#: The algorithm a URL without ``?algorithm=`` gets: every existing caller's token bucket.
DEFAULT_ALGORITHM = "token_bucket"

#: Every algorithm name the factory accepts.
ALGORITHM_NAMES: tuple[str, ...] = (DEFAULT_ALGORITHM, *ALGORITHMS)


def url_algorithm(url: str) -> str:
    """The ``algorithm`` query parameter of ``url`` (default token bucket); refuses unknown ones."""
    query = parse_qs(urlsplit(str(url).strip()).query, keep_blank_values=True)
    unknown = sorted(set(query) - {"algorithm"})
    if unknown:
        raise ValueError(f"unknown rate limiter URL parameter(s) {unknown} in {url!r}")
    values = query.get("algorithm", [DEFAULT_ALGORITHM])
    if len(values) != 1 or values[0] not in ALGORITHM_NAMES:
        names = ", ".join(ALGORITHM_NAMES)
        raise ValueError(f"unknown rate limit algorithm in {url!r}; expected one of: {names}")
    return values[0]


def open_rate_limiter(
    url: str,
    policy: RatePolicy,
    *,
    name: str = "",
    clock: Callable[[], float] = time.monotonic,
) -> RateLimiter:
    """The rate limiter ``url`` names: ``memory:`` gives in-process token buckets.

    ``memory:?algorithm=NAME`` picks fixed_window, sliding_log, sliding_counter or
    leaky_bucket instead. ``clock`` is the limiter's time source (monotonic seconds;
    tests inject one). An unknown scheme raises ValueError naming the accepted ones.
    """
    parsed = parse_store_url(url, accepted=("memory",))
    algorithm = url_algorithm(url)
    if parsed.scheme == "memory":
        if algorithm == DEFAULT_ALGORITHM:
            return MemoryRateLimiter(policy, name=name, clock=clock)
        return ALGORITHMS[algorithm](policy, name=name, clock=clock)
    raise ValueError(f"unsupported rate limiter URL {url!r}")  # pragma: no cover
