"""Old import path of the click stream on Redis, kept for one release: use
:mod:`lookup.shortener.analytics.clicklog.redis` (or
:func:`lookup.shortener.analytics.clicklog.open_click_log`).
"""

from __future__ import annotations

from lookup.shortener.analytics.clicklog.redis import RedisClickLog, offset_of, stream_id

__all__ = ["RedisClickLog", "offset_of", "stream_id"]
