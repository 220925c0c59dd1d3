"""Leadership by a PostgreSQL session-level advisory lock (``postgresql://…``; see
:mod:`lookup.kit.leadership`).

``pg_try_advisory_lock(hashtextextended(name, 0))`` on a dedicated autocommit connection:
it never waits, it is held for as long as the session lives, and the server drops it the
moment the session ends — a clean exit, a crash, ``kill -9`` (the kernel closes the
socket). While leading, each :meth:`PostgresLeadership.hold` checks the session with a
``SELECT 1``; a connection that fails means the lock may be someone else's now, so the
process stops leading and retries on a new connection at the next call.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

import psycopg

from lookup.kit.engines.postgres import connect, describe_url
from lookup.kit.engines.storeurl import StoreUrl

__all__ = ["PostgresLeadership"]

log = logging.getLogger("lookup.kit.leadership")


class PostgresLeadership:
    """The leader of ``name`` among every process asking the same database."""

    def __init__(self, url: str, name: str) -> None:
        self.url = url
        self.name = name
        self._conn: psycopg.Connection[Any] | None = None
        self._leading = False
        self._lock = threading.Lock()
        self.terms = 0  # how many times this process became the leader

    @classmethod
    def from_url(cls, url: StoreUrl, name: str) -> PostgresLeadership:
        """The leadership of ``name`` among the processes asking the database ``url`` names."""
        return cls(url.url, name)

    def describe(self) -> str:
        return describe_url(self.url)

    def hold(self) -> bool:
        with self._lock:
            try:
                if self._conn is None or self._conn.closed:
                    self._conn = connect(self.url, autocommit=True)
                    self._leading = False
                if self._leading:
                    self._conn.execute("SELECT 1")
                    return True
                row = self._conn.execute(
                    "SELECT pg_try_advisory_lock(hashtextextended(%s, 0))", (self.name,)
                ).fetchone()
                self._leading = bool(row and row[0])
                if self._leading:
                    self.terms += 1
                    log.info("this process leads %s now", self.name)
                return self._leading
            except (psycopg.OperationalError, psycopg.InterfaceError) as exc:
                if self._leading:
                    log.warning("lost the lead of %s: %s", self.name, exc)
                self._drop()
                return False

    def _drop(self) -> None:
        conn, self._conn, self._leading = self._conn, None, False
        if conn is not None:
            try:
                conn.close()
            except psycopg.Error:
                pass

    def release(self) -> None:
        with self._lock:
            if self._leading and self._conn is not None:
                try:  # at once: a closed session's locks go only when the server notices
                    self._conn.execute(
                        "SELECT pg_advisory_unlock(hashtextextended(%s, 0))", (self.name,)
                    )
                except (psycopg.OperationalError, psycopg.InterfaceError):
                    pass  # the session is gone, and its lock with it
            self._drop()
