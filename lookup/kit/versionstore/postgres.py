"""The version store on PostgreSQL: version rows, content-addressed chunks, one pointer row.

Tables (created on first use, under an advisory lock):

* ``vs_chunks(sha256, size, data bytea)`` — every chunk once, named by its SHA-256;
* ``vs_versions(line, version, seq, created, meta)`` — one row per stored version;
* ``vs_files(line, version, path, size, sha256, chunks text[])`` — a version's files,
  each the concatenation of its chunks in order;
* ``vs_pointers(line, current, previous, serial)`` — what each line serves.

A publish writes its chunks, version row and file rows in one transaction, and a swap
updates the pointer row in one transaction that also sends ``NOTIFY lookup_versions``
(delivered at commit, so a listener never hears of a swap it cannot see). A publish
holds the shared form of an advisory lock and :meth:`PgVersionStore.gc` the exclusive
one, so a collection never drops a chunk a publish in flight reuses.
:meth:`PgVersionStore.wait` ``LISTEN``\\ s on one connection of its own and re-reads the
pointer after every notice (and once right after ``LISTEN``, so nothing is missed).
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import psycopg

from lookup.kit.engines.postgres import PgPool, connect, describe_url, ensure_schema, unavailable
from lookup.kit.engines.storeurl import StoreUrl
from lookup.kit.versionstore import (
    FileEntry,
    FileSource,
    Pointer,
    VersionInfo,
    check_line,
    check_path,
    check_version,
)
from lookup.kit.versionstore.cache import CHUNK_SIZE, LocalCache, chunked, entry_of

__all__ = ["CHANNEL", "PgVersionStore"]

#: The channel every swap is announced on (payload: the line's name).
CHANNEL = "lookup_versions"
_GC_LOCK = "lookup.versionstore.gc"
_WHAT = "the version store"

_DDL = """
CREATE TABLE IF NOT EXISTS vs_chunks (
    sha256 text PRIMARY KEY,
    size integer NOT NULL,
    data bytea NOT NULL
);
CREATE TABLE IF NOT EXISTS vs_versions (
    line text NOT NULL,
    version text NOT NULL,
    seq bigserial NOT NULL,
    created double precision NOT NULL,
    meta jsonb NOT NULL DEFAULT '{}',
    PRIMARY KEY (line, version)
);
CREATE TABLE IF NOT EXISTS vs_files (
    line text NOT NULL,
    version text NOT NULL,
    path text NOT NULL,
    size bigint NOT NULL,
    sha256 text NOT NULL,
    chunks text[] NOT NULL,
    PRIMARY KEY (line, version, path),
    FOREIGN KEY (line, version) REFERENCES vs_versions (line, version) ON DELETE CASCADE
);
CREATE TABLE IF NOT EXISTS vs_pointers (
    line text PRIMARY KEY,
    current text,
    previous text,
    serial bigint NOT NULL DEFAULT 0,
    changed double precision
);
"""


class PgVersionStore:
    """Versions in PostgreSQL tables (see the module docstring)."""

    def __init__(self, url: str, *, chunk_size: int = CHUNK_SIZE) -> None:
        self.url = url
        self.chunk_size = chunk_size
        self.pool = PgPool(url, what=_WHAT)
        self._local = threading.local()  # each waiting thread listens on its own connection
        self._listeners: list[psycopg.Connection[Any]] = []
        self._listen_lock = threading.Lock()
        ensure_schema(url, "lookup.versionstore.schema", _DDL, _WHAT)

    @classmethod
    def from_url(cls, url: StoreUrl, **options: Any) -> PgVersionStore:
        """The store in the database ``postgresql://…`` names."""
        return cls(url.url, **options)

    # -- reading

    def lines(self) -> list[str]:
        """Lines with at least one stored version."""
        with self.pool.connection() as conn:
            rows = conn.execute("SELECT DISTINCT line FROM vs_versions ORDER BY line").fetchall()
        return [r[0] for r in rows]

    def versions(self, line: str) -> list[str]:
        """Stored versions, first published first."""
        with self.pool.connection() as conn:
            rows = conn.execute(
                "SELECT version FROM vs_versions WHERE line = %s ORDER BY seq", (check_line(line),)
            ).fetchall()
        return [r[0] for r in rows]

    def info(self, line: str, version: str) -> VersionInfo:
        """A stored version's row and files."""
        with self.pool.connection() as conn:
            row = conn.execute(
                "SELECT created, meta FROM vs_versions WHERE line = %s AND version = %s",
                (check_line(line), check_version(version)),
            ).fetchone()
            if row is None:
                raise LookupError(f"{line} has no version {version}")
            files = conn.execute(
                "SELECT path, size, sha256, chunks FROM vs_files "
                "WHERE line = %s AND version = %s ORDER BY path",
                (line, version),
            ).fetchall()
        entries = {p: FileEntry(int(n), sha, tuple(chunks)) for p, n, sha, chunks in files}
        return VersionInfo(line, version, float(row[0]), dict(row[1]), entries)

    def pointer(self, line: str) -> Pointer:
        """The line's pointer row, or an empty pointer."""
        with self.pool.connection() as conn:
            return self._pointer(conn, line)

    @staticmethod
    def _pointer(conn: psycopg.Connection[Any], line: str) -> Pointer:
        row = conn.execute(
            "SELECT current, previous, serial FROM vs_pointers WHERE line = %s", (check_line(line),)
        ).fetchone()
        return Pointer(None, None, 0) if row is None else Pointer(row[0], row[1], int(row[2]))

    def current(self, line: str) -> str | None:
        """The version served for ``line``."""
        return self.pointer(line).current

    # -- writing

    def publish(
        self,
        line: str,
        version: str,
        files: Mapping[str, FileSource],
        meta: Mapping[str, Any] | None = None,
        *,
        activate: bool = False,
    ) -> VersionInfo:
        """Chunks, the version row and its file rows in one transaction (and the swap)."""
        check_line(line)
        check_version(version)
        for path in files:
            check_path(path)
        created = time.time()
        entries: dict[str, FileEntry] = {}
        with self.pool.transaction() as conn:
            conn.execute(
                "SELECT pg_advisory_xact_lock_shared(hashtextextended(%s, 0))", (_GC_LOCK,)
            )
            try:
                conn.execute(
                    "INSERT INTO vs_versions (line, version, created, meta) "
                    "VALUES (%s, %s, %s, %s)",
                    (line, version, created, json.dumps(dict(meta or {}))),
                )
            except psycopg.errors.UniqueViolation:
                raise ValueError(
                    f"{line} {version} is stored already; versions are never reused"
                ) from None
            for path, source in files.items():
                whole = hashlib.sha256()
                parts: list[tuple[str, int]] = []
                for sha, data in chunked(source, self.chunk_size):
                    whole.update(data)
                    parts.append((sha, len(data)))
                    conn.execute(
                        "INSERT INTO vs_chunks (sha256, size, data) VALUES (%s, %s, %s) "
                        "ON CONFLICT (sha256) DO NOTHING",
                        (sha, len(data), data),
                    )
                entry = entry_of(parts, whole.hexdigest())
                entries[path] = entry
                conn.execute(
                    "INSERT INTO vs_files (line, version, path, size, sha256, chunks) "
                    "VALUES (%s, %s, %s, %s, %s, %s)",
                    (line, version, path, entry.size, entry.sha256, list(entry.chunks)),
                )
            if activate:
                self._swap(conn, line, version)
        return VersionInfo(line, version, created, dict(meta or {}), entries)

    def activate(self, line: str, version: str) -> str | None:
        """Swap the pointer row and notify, in one transaction."""
        with self.pool.transaction() as conn:
            return self._swap(conn, line, version)

    @staticmethod
    def _swap(conn: psycopg.Connection[Any], line: str, version: str) -> str | None:
        stored = conn.execute(
            "SELECT 1 FROM vs_versions WHERE line = %s AND version = %s",
            (check_line(line), check_version(version)),
        ).fetchone()
        if stored is None:
            raise LookupError(f"{line} has no version {version}")
        conn.execute(
            "INSERT INTO vs_pointers (line, serial) VALUES (%s, 0) ON CONFLICT (line) DO NOTHING",
            (line,),
        )
        row = conn.execute(
            "SELECT current, previous FROM vs_pointers WHERE line = %s FOR UPDATE", (line,)
        ).fetchone()
        assert row is not None
        before, earlier = row
        previous = before if before != version else earlier
        conn.execute(
            "UPDATE vs_pointers SET current = %s, previous = %s, serial = serial + 1, "
            "changed = %s WHERE line = %s",
            (version, previous, time.time(), line),
        )
        conn.execute("SELECT pg_notify(%s, %s)", (CHANNEL, line))
        return str(before) if before is not None else None

    def fetch(
        self,
        line: str,
        version: str,
        cache_dir: str | os.PathLike[str],
        only: tuple[str, ...] | None = None,
    ) -> Path:
        """Put the version together in ``cache_dir``, reading only the chunks not cached."""
        files = self.info(line, version).files
        cache = LocalCache(cache_dir, self.describe())
        return cache.assemble(line, version, files, self._read_chunks, only)

    def _read_chunks(self, shas: Sequence[str]) -> dict[str, bytes]:
        out: dict[str, bytes] = {}
        with self.pool.connection() as conn:
            for i in range(0, len(shas), 16):  # a few MiB per round trip at most
                rows = conn.execute(
                    "SELECT sha256, data FROM vs_chunks WHERE sha256 = ANY(%s)",
                    (list(shas[i : i + 16]),),
                ).fetchall()
                out.update((sha, bytes(data)) for sha, data in rows)
        return out

    def gc(self, line: str, keep: int) -> list[str]:
        """Drop old version rows of ``line`` and every chunk no file row refers to."""
        with self.pool.transaction() as conn:
            conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (_GC_LOCK,))
            current = self._pointer(conn, line).current
            stored = [
                r[0]
                for r in conn.execute(
                    "SELECT version FROM vs_versions WHERE line = %s ORDER BY seq", (line,)
                ).fetchall()
            ]
            newest = set(stored[-max(1, keep) :])
            dropped = [v for v in stored if v not in newest and v != current]
            if dropped:
                conn.execute(
                    "DELETE FROM vs_versions WHERE line = %s AND version = ANY(%s)",
                    (line, dropped),
                )
            conn.execute(
                "DELETE FROM vs_chunks c WHERE NOT EXISTS "
                "(SELECT 1 FROM vs_files f WHERE c.sha256 = ANY(f.chunks))"
            )
        return dropped

    # -- waiting

    def wait(self, line: str, seen: int | None, timeout: float) -> Pointer:
        """``LISTEN``, read the pointer, and wait for notices until its serial moves."""
        deadline = time.monotonic() + max(0.0, timeout)
        check_line(line)
        try:
            conn = self._listening()
            while True:
                found = self._pointer(conn, line)
                left = deadline - time.monotonic()
                if found.serial != seen or left <= 0:
                    return found
                for _note in conn.notifies(timeout=left, stop_after=1):
                    break
        except (psycopg.OperationalError, psycopg.InterfaceError) as exc:
            self._drop_listener(getattr(self._local, "conn", None))
            raise unavailable(_WHAT, self.url, exc) from exc

    def _listening(self) -> psycopg.Connection[Any]:
        """This thread's listening connection (opened, with ``LISTEN``, on first use)."""
        conn: psycopg.Connection[Any] | None = getattr(self._local, "conn", None)
        if conn is None or conn.closed:
            conn = connect(self.url, autocommit=True)
            conn.execute(f"LISTEN {CHANNEL}")
            self._local.conn = conn
            with self._listen_lock:
                self._listeners.append(conn)
        return conn

    def _drop_listener(self, conn: psycopg.Connection[Any] | None) -> None:
        if conn is None:
            return
        self._local.conn = None
        with self._listen_lock:
            if conn in self._listeners:
                self._listeners.remove(conn)
        try:
            conn.close()
        except psycopg.Error:
            pass

    def describe(self) -> str:
        """``postgresql://host:port/db`` (never the password)."""
        return describe_url(self.url)

    def close(self) -> None:
        """Close the pool and the listening connection."""
        with self._listen_lock:
            listeners, self._listeners = self._listeners, []
        for conn in listeners:
            try:
                conn.close()
            except psycopg.Error:
                pass
        self.pool.close()
