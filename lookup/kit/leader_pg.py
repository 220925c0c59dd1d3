"""Old import path of the PostgreSQL leadership, kept for one release: use
:mod:`lookup.kit.leadership.postgres` (or :func:`lookup.kit.leadership.open_leadership`).
"""

from __future__ import annotations

from lookup.kit.leadership.postgres import PostgresLeadership

__all__ = ["PostgresLeadership"]
