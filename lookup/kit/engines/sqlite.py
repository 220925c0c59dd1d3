"""SQLite connections the way every embedded store here opens them, and one pool per store.

Every store of the workbench that is a SQLite file opens it through :func:`connect`
(WAL, a busy timeout, a ``synchronous`` level, autocommit so transactions are explicit)
and keeps one connection per thread in a :class:`ConnectionPool` — SQLite connections
must not be shared between threads mid-transaction, and opening one per call costs
more than the query. Only store modules open a database through this; the HTTP edge
imports :func:`busy_error` alone, to answer a lock held past the busy timeout with a 503.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Literal

from lookup.errors import Unavailable

__all__ = [
    "STORE_ERRORS",
    "SYNCHRONOUS_LEVELS",
    "ConnectionPool",
    "busy_error",
    "connect",
    "is_read_only_error",
]

SYNCHRONOUS_LEVELS = ("OFF", "NORMAL", "FULL", "EXTRA")


def connect(
    path: str | os.PathLike[str],
    *,
    readonly: bool = False,
    wal: bool = True,
    synchronous: str | None = "NORMAL",
    busy_timeout_ms: int = 10_000,
    pragmas: tuple[str, ...] = (),
    autocommit: bool = True,
) -> sqlite3.Connection:
    """Open a SQLite file: read-only by URI, or read-write in WAL mode.

    ``pragmas`` run before ``journal_mode`` (``page_size`` must precede WAL on a new
    file). ``autocommit`` (``isolation_level=None``) leaves every transaction to the
    caller's explicit ``BEGIN``; ``False`` keeps Python's implicit transactions.
    """
    # "DEFERRED": Python's implicit transactions, as the default "" (a plain BEGIN) does
    isolation: Literal["DEFERRED"] | None = None if autocommit else "DEFERRED"
    if readonly:
        conn = sqlite3.connect(
            f"file:{Path(path)}?mode=ro",
            uri=True,
            timeout=busy_timeout_ms / 1000.0,
            isolation_level=isolation,
            check_same_thread=False,
        )
        return conn
    conn = sqlite3.connect(
        str(path),
        isolation_level=isolation,
        check_same_thread=False,
        timeout=busy_timeout_ms / 1000.0,
    )
    conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
    for pragma in pragmas:
        conn.execute(f"PRAGMA {pragma}")
    if wal:
        conn.execute("PRAGMA journal_mode = WAL")
    if synchronous is not None:
        level = synchronous.upper()
        if level not in SYNCHRONOUS_LEVELS:
            raise ValueError(f"unknown synchronous mode {synchronous!r}")
        conn.execute(f"PRAGMA synchronous = {level}")
    return conn


def is_read_only_error(exc: BaseException) -> bool:
    """Whether SQLite refused because it cannot write the file or its directory (it keeps
    ``-wal`` and ``-shm`` files beside a database, so a read-only directory is enough)."""
    if not isinstance(exc, sqlite3.OperationalError):
        return False
    text = str(exc).lower()
    return "readonly" in text or "read-only" in text or "unable to open database" in text


#: The exceptions :func:`busy_error` reads (what the HTTP edge hands it).
STORE_ERRORS: tuple[type[Exception], ...] = (sqlite3.OperationalError,)
#: SQLite's primary result codes for a lock another connection holds: SQLITE_BUSY, SQLITE_LOCKED.
_BUSY_CODES = (5, 6)


def busy_error(exc: BaseException) -> Unavailable | None:
    """The domain error for SQLite giving up on a lock ("database is locked": another
    connection held it past the busy timeout), else None.

    A busy database is a store that cannot serve right now, not a bug: HTTP 503 with
    ``Retry-After``, as a PostgreSQL outage answers (:mod:`lookup.kit.engines.postgres`). The edge
    maps it once, for every route (:func:`lookup.kit.http.api_error_of`), never per call."""
    if not isinstance(exc, sqlite3.OperationalError):
        return None
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        busy = (code & 0xFF) in _BUSY_CODES
    else:  # an error raised by hand, without SQLite's code: its words
        text = str(exc).lower()
        busy = "database is locked" in text or "table is locked" in text or "is busy" in text
    if not busy:
        return None
    return Unavailable(
        f"the database is busy ({exc}): another writer held it longer than the busy "
        "timeout; try again",
        headers={"Retry-After": "1"},
    )


class ConnectionPool:
    """One connection per thread for one database file; :meth:`close` closes them all.

    ``opener`` makes a new connection (default :func:`connect` on ``path``); a pool
    closed by :meth:`close` reopens on the next :meth:`get`.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        opener: Callable[[], sqlite3.Connection] | None = None,
    ) -> None:
        self.path = str(path)
        self._opener = opener or (lambda: connect(self.path))
        self._local = threading.local()
        self._all: list[sqlite3.Connection] = []
        self._lock = threading.Lock()

    def get(self) -> sqlite3.Connection:
        """This thread's connection, opened on first use."""
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._opener()
            self._local.conn = conn
            with self._lock:
                self._all.append(conn)
        return conn

    def close(self) -> None:
        """Close every connection the pool opened, in any thread."""
        with self._lock:
            for conn in self._all:
                try:
                    conn.close()
                except sqlite3.Error:
                    pass
            self._all.clear()
        self._local = threading.local()
