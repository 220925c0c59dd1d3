"""Old import path of SQLite connections, kept for one release.

Its names moved to :mod:`lookup.kit.engines.sqlite`, with the rest of the kit's engine
plumbing (:mod:`lookup.kit.engines`); this module gives the very same objects.
"""

from __future__ import annotations

from lookup.kit.engines.sqlite import (
    STORE_ERRORS,
    SYNCHRONOUS_LEVELS,
    ConnectionPool,
    busy_error,
    connect,
    is_read_only_error,
)

__all__ = [
    "ConnectionPool",
    "STORE_ERRORS",
    "SYNCHRONOUS_LEVELS",
    "busy_error",
    "connect",
    "is_read_only_error",
]
