"""Old import path of SQL dialects, kept for one release.

Its names moved to :mod:`lookup.kit.engines.dialects`, with the rest of the kit's engine
plumbing (:mod:`lookup.kit.engines`); this module gives the very same objects.
"""

from __future__ import annotations

from lookup.kit.engines.dialects import (
    ENGINES,
    Connection,
    Cursor,
    Engine,
    SqlDialect,
    bind_placeholders,
    executemany,
    json_array,
)

__all__ = [
    "Connection",
    "Cursor",
    "ENGINES",
    "Engine",
    "SqlDialect",
    "bind_placeholders",
    "executemany",
    "json_array",
]
