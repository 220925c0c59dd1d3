"""Old import path of the SQLite writer's lock and WAL checkpointer, kept for one release.

Its names moved to :mod:`lookup.kit.engines.sqlitewriter`, with the rest of the kit's engine
plumbing (:mod:`lookup.kit.engines`); this module gives the very same objects.
"""

from __future__ import annotations

from lookup.kit.engines.sqlitewriter import WalCheckpointer, writer_lock

__all__ = ["WalCheckpointer", "writer_lock"]
