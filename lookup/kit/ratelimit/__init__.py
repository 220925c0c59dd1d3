"""Rate limiting: every algorithm of seed 004's figure behind one :class:`RateLimiter`.

- :mod:`.bucket` — the interface (:class:`RateLimiter`, :class:`RatePolicy`,
  :class:`RateDecision`, :func:`check_all`) and the token bucket
  (:class:`MemoryRateLimiter`, the default);
- :mod:`.windows` — fixed window, sliding-window log, sliding-window counter, leaky bucket;
- :mod:`.hybrid` — :class:`HybridRateLimiter`, local prepaid budgets before a shared limit;
- :mod:`.tiers` — :class:`TierTable` (free / pro / enterprise, re-read when its file
  changes) and :class:`TieredRateLimiter`, which picks the identity's tier per check;
- :mod:`.factory` — :func:`open_rate_limiter` (``memory:[?algorithm=NAME]``,
  ``redis://…?algorithm=NAME[&local_budget=F]``).

Names are re-exported lazily (``kit/lazy.py``).
"""

from __future__ import annotations

from lookup.kit.lazy import lazy_exports

_BUCKET = "lookup.kit.ratelimit.bucket"
_WINDOWS = "lookup.kit.ratelimit.windows"
_FACTORY = "lookup.kit.ratelimit.factory"
_HYBRID = "lookup.kit.ratelimit.hybrid"
_TIERS = "lookup.kit.ratelimit.tiers"

_EXPORTS = {
    "MemoryRateLimiter": _BUCKET,
    "RateDecision": _BUCKET,
    "RateLimiter": _BUCKET,
    "RatePolicy": _BUCKET,
    "check_all": _BUCKET,
    "most_restrictive": _BUCKET,
    "FixedWindowLimiter": _WINDOWS,
    "LeakyBucketLimiter": _WINDOWS,
    "SlidingCounterLimiter": _WINDOWS,
    "SlidingLogLimiter": _WINDOWS,
    "ALGORITHM_NAMES": _FACTORY,
    "DEFAULT_ALGORITHM": _FACTORY,
    "open_rate_limiter": _FACTORY,
    "HybridRateLimiter": _HYBRID,
    "TierTable": _TIERS,
    "TieredRateLimiter": _TIERS,
}

__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
