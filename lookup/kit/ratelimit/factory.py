"""``open_rate_limiter``: the limiter a URL names, with the algorithm in its query.

``memory:`` is the in-process token bucket (the default algorithm);
``memory:?algorithm=sliding_log`` picks another of :data:`ALGORITHM_NAMES`;
``redis://host:port/db?algorithm=NAME&on_unavailable=local|open|closed&local_share=F`` shares
the limit through Redis (the client is imported only then); ``local_share`` is the part of
the limit the ``local`` fallback keeps for this process. ``local_budget=F`` (0 < F ≤ 1, on
either scheme) puts the hybrid in front (:mod:`.hybrid`): each process takes ``F × limit``
at a time from the shared limit and decides locally until it runs out.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from urllib.parse import parse_qs, urlsplit, urlunsplit

from lookup.kit.engines.storeurl import parse_store_url
from lookup.kit.ratelimit.bucket import MemoryRateLimiter, RateLimiter, RatePolicy
from lookup.kit.ratelimit.windows import ALGORITHMS

__all__ = ["ALGORITHM_NAMES", "DEFAULT_ALGORITHM", "open_rate_limiter", "url_algorithm"]

#: The algorithm a URL without ``?algorithm=`` gets: every existing caller's token bucket.
DEFAULT_ALGORITHM = "token_bucket"

#: Every algorithm name the factory accepts.
ALGORITHM_NAMES: tuple[str, ...] = (DEFAULT_ALGORITHM, *ALGORITHMS)


#: The query parameters a rate limiter URL may carry.
_PARAMS = {"algorithm", "on_unavailable", "local_share", "local_budget"}


def _query(url: str) -> dict[str, list[str]]:
    query = parse_qs(urlsplit(str(url).strip()).query, keep_blank_values=True)
    unknown = sorted(set(query) - _PARAMS)
    if unknown:
        raise ValueError(f"unknown rate limiter URL parameter(s) {unknown} in {url!r}")
    return query


def url_algorithm(url: str) -> str:
    """The ``algorithm`` query parameter of ``url`` (default token bucket); refuses unknown ones."""
    query = _query(url)
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
    leaky_bucket instead. ``clock`` is the in-process limiters' time source (monotonic
    seconds; tests inject one); a ``redis://`` limiter takes its time from Redis and
    ignores it. ``local_budget=F`` wraps either in the hybrid. An unknown scheme raises
    ValueError naming the accepted ones.
    """
    budget = _query(url).get("local_budget")
    if budget is None:
        return _open(url, policy, name=name, clock=clock)
    from lookup.kit.ratelimit.hybrid import HybridRateLimiter

    try:
        fraction = float(budget[-1])
    except ValueError:
        raise ValueError(f"local_budget must be a number in (0, 1] in {url!r}") from None
    return HybridRateLimiter(_open(url, policy, name=name, clock=clock), fraction)


def _open(url: str, policy: RatePolicy, *, name: str, clock: Callable[[], float]) -> RateLimiter:
    """The limiter ``url`` names, without the hybrid."""
    parsed = parse_store_url(url, accepted=("memory", "redis"))
    algorithm = url_algorithm(url)
    if parsed.scheme == "memory":
        if {"on_unavailable", "local_share"} & set(_query(url)):
            raise ValueError(f"on_unavailable / local_share are for a shared limiter: {url!r}")
        if algorithm == DEFAULT_ALGORITHM:
            return MemoryRateLimiter(policy, name=name, clock=clock)
        return ALGORITHMS[algorithm](policy, name=name, clock=clock)
    if parsed.scheme == "redis":
        from lookup.kit.ratelimit.redis_store import RedisRateLimiter

        on_unavailable = _query(url).get("on_unavailable", ["local"])[-1]
        try:
            share = float(_query(url).get("local_share", ["1"])[-1])
        except ValueError:
            raise ValueError(f"local_share must be a number in (0, 1] in {url!r}") from None
        parts = urlsplit(str(url).strip())
        server = urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))
        return RedisRateLimiter(
            server, policy, algorithm=algorithm, name=name,
            on_unavailable=on_unavailable,  # type: ignore[arg-type]  # checked by the limiter
            local_share=share,
        )  # fmt: skip
    raise ValueError(f"unsupported rate limiter URL {url!r}")  # pragma: no cover
