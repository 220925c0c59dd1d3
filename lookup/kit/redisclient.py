"""Old import path of the Redis client, kept for one release.

Its names moved to :mod:`lookup.kit.engines.redis`, with the rest of the kit's engine
plumbing (:mod:`lookup.kit.engines`); this module gives the very same objects.
"""

from __future__ import annotations

from lookup.kit.engines.redis import UNAVAILABLE, describe_redis_url, redis_client

__all__ = ["UNAVAILABLE", "describe_redis_url", "redis_client"]
