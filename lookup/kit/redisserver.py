"""Old import path of the throw-away redis-server, kept for one release.

Its names moved to :mod:`lookup.kit.engines.redisserver`, with the rest of the kit's engine
plumbing (:mod:`lookup.kit.engines`); this module gives the very same objects.
"""

from __future__ import annotations

from lookup.kit.engines.redisserver import RedisServer, redis_available

__all__ = ["RedisServer", "redis_available"]
