"""Old import path of the shared cache's Redis tier, kept for one release: use
:mod:`lookup.kit.sharedcache.redis`.

:class:`~lookup.kit.sharedcache.redis.RedisSharedCache` and its Lua scripts live there;
the port it implements (``VersionedSharedCache``, ``CacheRead``, ``InvalidationOutbox``)
and the factory ``open_shared_cache`` are :mod:`lookup.kit.sharedcache`.
"""

from __future__ import annotations

from lookup.kit.sharedcache.redis import FILL_SCRIPT, INVALIDATE_SCRIPT, RedisSharedCache

__all__ = ["FILL_SCRIPT", "INVALIDATE_SCRIPT", "RedisSharedCache"]
