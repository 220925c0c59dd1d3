"""PostgreSQL connections the way every scale-out store here opens them (psycopg 3).

One :class:`PgPool` per store object: a :class:`psycopg_pool.ConnectionPool` opened on
first use (so ``close()`` lets go and the next call reopens, as the embedded stores do),
with short timeouts so that an outage answers fast instead of hanging a request — a
connection attempt gives up after :data:`CONNECT_TIMEOUT_S`, a caller waits at most
``pool_timeout_s`` for a free connection, and every connection is checked when it leaves
the pool (after a server restart the dead ones are replaced, not handed out). A
connection-level failure (server down, restarted, unreachable, pool exhausted) becomes
:class:`lookup.errors.Unavailable` — HTTP 503 with a JSON error at the edge.

:func:`ensure_schema` creates tables idempotently under a transaction-scoped advisory
lock, so two processes opening one database at once never race on ``CREATE TABLE IF NOT
EXISTS`` (which is not safe concurrently in PostgreSQL on its own).
:func:`describe_url` names a server without its credentials, for status pages.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
import psycopg_pool
from psycopg.conninfo import conninfo_to_dict

from lookup.errors import Unavailable

__all__ = [
    "CONNECT_TIMEOUT_S",
    "PgPool",
    "connect",
    "describe_url",
    "ensure_schema",
    "unavailable",
]

#: Seconds a new connection may take before the attempt fails (libpq's minimum is 2).
CONNECT_TIMEOUT_S = 2
#: Seconds a caller waits for a pooled connection before the store answers Unavailable.
POOL_TIMEOUT_S = 2.0

#: What a lost or refused server looks like to psycopg (PoolTimeout is an OperationalError).
_CONNECTION_ERRORS = (psycopg.OperationalError, psycopg.InterfaceError)


def describe_url(url: str) -> str:
    """``postgresql://host:port/db`` for a connection URL: never the user or password."""
    try:
        info = conninfo_to_dict(url)
    except psycopg.ProgrammingError:
        return "postgresql://(unparsable URL)"
    host = info.get("host") or "localhost"
    port = info.get("port") or "5432"
    return f"postgresql://{host}:{port}/{info.get('dbname') or ''}"


def unavailable(what: str, url: str, exc: BaseException) -> Unavailable:
    """The domain error for a store that cannot reach its server right now."""
    reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return Unavailable(f"{what} ({describe_url(url)}) is unavailable: {reason}")


def connect(url: str, *, autocommit: bool = False) -> psycopg.Connection[Any]:
    """One connection outside any pool (schema set-up, one-off reads), short timeout."""
    return psycopg.connect(url, connect_timeout=CONNECT_TIMEOUT_S, autocommit=autocommit)


def ensure_schema(url: str, lock_name: str, ddl: str, what: str = "the store") -> None:
    """Run ``ddl`` (``CREATE ... IF NOT EXISTS`` statements) once per database, safely.

    The statements run in one transaction that first takes the advisory lock named by
    ``lock_name``, so concurrent openers queue and the second finds everything made. On a
    read replica (a server in recovery) nothing runs: its tables are its primary's, made
    there and streamed over, and it could not change them anyway.
    """
    try:
        with connect(url) as conn:
            replica = conn.execute("SELECT pg_is_in_recovery()").fetchone()
            if replica is not None and replica[0]:
                return
            conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (lock_name,))
            conn.execute(ddl)  # type: ignore[arg-type]  # several statements, no parameters
    except _CONNECTION_ERRORS as exc:
        raise unavailable(what, url, exc) from exc


class PgPool:
    """A lazily opened connection pool over one database URL; thread-safe.

    ``connection()`` yields an autocommit connection — each statement its own transaction,
    one round trip, for the single-statement operations that are most of a store's calls;
    ``transaction()`` yields one inside ``BEGIN … COMMIT`` (rolled back on an exception).
    Both turn connection-level failures into :class:`~lookup.errors.Unavailable`.
    ``close()`` closes the pool; the next call opens a new one.
    """

    def __init__(
        self,
        url: str,
        *,
        what: str = "the store",
        max_size: int = 8,
        pool_timeout_s: float = POOL_TIMEOUT_S,
    ) -> None:
        self.url = url
        self.what = what
        self.max_size = max_size
        self.pool_timeout_s = pool_timeout_s
        self._pool: psycopg_pool.ConnectionPool[Any] | None = None
        self._lock = threading.Lock()

    def _get(self) -> psycopg_pool.ConnectionPool[Any]:
        with self._lock:
            if self._pool is None:
                pool: psycopg_pool.ConnectionPool[Any] = psycopg_pool.ConnectionPool(
                    self.url,
                    min_size=1,
                    max_size=self.max_size,
                    kwargs={"connect_timeout": CONNECT_TIMEOUT_S, "autocommit": True},
                    timeout=self.pool_timeout_s,
                    check=psycopg_pool.ConnectionPool.check_connection,
                    # Give up a failing connection attempt soon: the next caller starts a
                    # fresh one at once instead of waiting out a long back-off, so the store
                    # serves again within moments of the server coming back.
                    reconnect_timeout=max(1.0, self.pool_timeout_s),
                    name="lookup-" + self.what.removeprefix("the ").replace(" ", "-"),
                    open=False,
                )
                pool.open(wait=False)
                self._pool = pool
            return self._pool

    @contextmanager
    def connection(self) -> Iterator[psycopg.Connection[Any]]:
        """A pooled autocommit connection; Unavailable when the server cannot serve."""
        try:
            with self._get().connection() as conn:
                yield conn
        except _CONNECTION_ERRORS as exc:
            raise unavailable(self.what, self.url, exc) from exc

    @contextmanager
    def transaction(self) -> Iterator[psycopg.Connection[Any]]:
        """A pooled connection inside one transaction: committed when the block ends
        cleanly, rolled back on an exception; Unavailable when the server cannot serve."""
        with self.connection() as conn, conn.transaction():
            yield conn

    def close(self) -> None:
        """Close every connection of the pool (the next call opens a new pool)."""
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.close()
