"""The link store — the source of truth — and the write path's atomic operations (SQLite).

Embedded default: one SQLite file in WAL mode (readers never block the writer), one
connection per thread, an in-process writer lock so the threads of one process queue
without SQLite's busy-handler sleeps (:mod:`lookup.kit.dblock`), ``busy_timeout`` so
writers of different processes queue instead of failing, and
``BEGIN IMMEDIATE`` for every multi-statement write so a transaction takes the write
lock before it reads. With ``synchronous=NORMAL`` a commit survives the death of the
process (the SIGKILL test checks it); a power cut may lose the last few commits.

Every uniqueness decision is taken by one conditional write, never read-then-write:

* a key (generated or alias) is claimed by ``INSERT ... ON CONFLICT(key) DO NOTHING``
  and its row count — of many concurrent claims exactly one gets ``rowcount == 1``;
* a click on a link with ``max_clicks`` is admitted by one conditional ``UPDATE``
  (``clicks < max_clicks``), so exactly ``max_clicks`` redirects succeed;
* keys are never deleted: deletion and expiry leave a tombstone (status DELETED or
  EXPIRED, no URL) and the key stays taken forever.

Tables: ``links``; ``idempotency`` (replayed create responses); ``link_audit`` (who
changed what, when — retargets keep old and new URL); ``owner_tokens`` (the hash of each
rotated or revoked owner token, the owner it stands for and when it was revoked: a token
never seen here is its own owner); ``id_allocator`` (range leases,
see :class:`lookup.kit.ids.SqliteIdAllocator`).

:class:`LinkStore` names the operations the service, the resolver and the scanner use;
:class:`SqliteLinkStore` is the embedded implementation and :func:`open_link_store`
picks one from a URL (``sqlite:///path``, or ``postgresql://…`` for
:class:`~lookup.shortener.store_pg.PostgresLinkStore`).
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Protocol, runtime_checkable

from lookup.kit.dblock import WalCheckpointer, writer_lock
from lookup.kit.sqlite import SYNCHRONOUS_LEVELS, ConnectionPool, connect
from lookup.kit.storeurl import parse_store_url
from lookup.shortener.model import Link, Status
from lookup.shortener.store_base import (
    COLUMNS,
    UPDATABLE,
    CreateResult,
    Gone,
    IdempotencyClaim,
    IdempotencyMismatch,
    KeyTaken,
    LinkMissing,
    NotOwner,
    StoreError,
    row_to_link,
    to_db,
)

__all__ = [
    "UPDATABLE",
    "CreateResult",
    "Gone",
    "IdempotencyClaim",
    "IdempotencyMismatch",
    "KeyTaken",
    "LinkMissing",
    "LinkStore",
    "NotOwner",
    "SqliteLinkStore",
    "StoreError",
    "open_link_store",
]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS links (
    key            TEXT PRIMARY KEY,
    id             INTEGER UNIQUE,
    alias          INTEGER NOT NULL DEFAULT 0,
    long_url       TEXT NOT NULL,
    owner          TEXT,
    created_at     REAL NOT NULL,
    updated_at     REAL NOT NULL,
    expires_at     REAL,
    max_clicks     INTEGER,
    clicks         INTEGER NOT NULL DEFAULT 0,
    status         TEXT NOT NULL DEFAULT 'ACTIVE'
                   CHECK (status IN ('ACTIVE', 'DISABLED', 'DELETED', 'EXPIRED')),
    redirect_type  INTEGER NOT NULL DEFAULT 302 CHECK (redirect_type IN (301, 302)),
    max_age        INTEGER,
    password_hash  TEXT,
    tags           TEXT NOT NULL DEFAULT '[]',
    scan_verdict   TEXT NOT NULL DEFAULT 'PENDING',
    status_reason  TEXT,
    scan_reasons   TEXT NOT NULL DEFAULT '[]'
);
CREATE INDEX IF NOT EXISTS links_by_owner ON links(owner, created_at, key);
CREATE INDEX IF NOT EXISTS links_due_by_date ON links(expires_at)
    WHERE expires_at IS NOT NULL AND status IN ('ACTIVE', 'DISABLED');
CREATE INDEX IF NOT EXISTS links_due_by_clicks ON links(key)
    WHERE max_clicks IS NOT NULL AND status IN ('ACTIVE', 'DISABLED');
CREATE TABLE IF NOT EXISTS idempotency (
    scope       TEXT NOT NULL,
    idem_key    TEXT NOT NULL,
    body_hash   TEXT NOT NULL,
    response    TEXT NOT NULL,
    created_at  REAL NOT NULL,
    PRIMARY KEY (scope, idem_key)
);
CREATE TABLE IF NOT EXISTS link_audit (
    seq      INTEGER PRIMARY KEY AUTOINCREMENT,
    key      TEXT NOT NULL,
    at       REAL NOT NULL,
    actor    TEXT,
    action   TEXT NOT NULL,
    old_url  TEXT,
    new_url  TEXT,
    detail   TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX IF NOT EXISTS link_audit_by_key ON link_audit(key, seq);
CREATE TABLE IF NOT EXISTS owner_tokens (
    token_hash  TEXT PRIMARY KEY,
    owner       TEXT NOT NULL,
    created_at  REAL NOT NULL,
    revoked_at  REAL
);
CREATE TABLE IF NOT EXISTS cache_outbox (
    id   INTEGER PRIMARY KEY AUTOINCREMENT,
    key  TEXT NOT NULL,
    at   REAL NOT NULL
);
"""

#: Columns added after the first release, with their definitions (added on open).
_ADDED_COLUMNS = {"scan_reasons": "TEXT NOT NULL DEFAULT '[]'"}


@runtime_checkable
class LinkStore(Protocol):
    """The link store's operations: every uniqueness decision is one conditional write.

    Implementations must give exactly one winner among concurrent claims of a key
    (:meth:`create` raises :class:`KeyTaken` for the others), replay or refuse a reused
    Idempotency-Key (:class:`IdempotencyMismatch`), keep tombstones forever, and admit
    exactly ``max_clicks`` clicks of a link across every process (:meth:`consume_click`).
    """

    def create(
        self,
        link: Link,
        *,
        idempotency: IdempotencyClaim | None = None,
        render: Callable[[Link], dict[str, Any]],
        actor: str | None = None,
    ) -> CreateResult:
        """Claim ``link.key`` and store the link (and its rendered response) atomically."""
        ...

    def find_replay(self, idempotency: IdempotencyClaim) -> dict[str, Any] | None:
        """The stored response of a live claim with the same body; mismatch raises."""
        ...

    def update(
        self,
        key: str,
        changes: dict[str, Any],
        *,
        actor: str | None,
        action: str = "update",
        expected_owner: str | None = None,
        check_owner: bool = False,
        allow_tombstone: bool = False,
    ) -> tuple[Link, Link]:
        """Change columns of one link, audited; returns ``(old, new)``."""
        ...

    def tombstone(
        self,
        key: str,
        status: Status,
        *,
        actor: str | None,
        reason: str | None = None,
        expected_owner: str | None = None,
        check_owner: bool = False,
    ) -> tuple[Link, Link]:
        """Turn a link into a tombstone (DELETED or EXPIRED, no URL); the key stays taken."""
        ...

    def consume_click(self, key: str, now: float) -> Link | None:
        """Spend one click of a budgeted link (one conditional write), or None if refused."""
        ...

    def expire_due(self, now: float) -> list[str]:
        """Tombstone links past their date or click budget; returns their keys."""
        ...

    def purge_idempotency(self, now: float) -> int:
        """Forget idempotency records older than the TTL; returns how many."""
        ...

    def get(self, key: str) -> Link | None:
        """The link or tombstone stored under ``key``."""
        ...

    def list_owner(
        self,
        owner: str,
        *,
        limit: int = 50,
        before: tuple[float, str] | None = None,
        tag: str | None = None,
        status: Status | None = None,
    ) -> list[Link]:
        """An owner's links, newest first, after the ``(created_at, key)`` cursor."""
        ...

    def iter_links(
        self, *, after: str = "", limit: int = 500, statuses: tuple[Status, ...] = (Status.ACTIVE,)
    ) -> list[Link]:
        """A page of links in key order after ``after`` (the scanner's sweep)."""
        ...

    def audit(self, key: str) -> list[dict[str, Any]]:
        """A link's change history, oldest first."""
        ...

    def token_owner(self, token_hash: str) -> tuple[str, bool] | None:
        """``(owner, revoked)`` recorded for a token's hash; None for a token never
        rotated or revoked (its owner is its own hash)."""
        ...

    def revoke_token(self, token_hash: str, owner: str, now: float) -> bool:
        """Revoke a token standing for ``owner``; False if it was revoked already."""
        ...

    def rotate_token(self, old_hash: str, new_hash: str, owner: str, now: float) -> bool:
        """In one transaction: revoke ``old_hash`` and record ``new_hash`` for ``owner``.
        Exactly one of concurrent rotations of a token wins; False for the others."""
        ...

    def defer_invalidations(self, keys: Sequence[str]) -> None:
        """Keep ``keys`` for the cache tier to invalidate later (its outbox: Redis was
        unreachable when they changed)."""
        ...

    def deferred_invalidations(self, limit: int) -> list[tuple[int, str]]:
        """Up to ``limit`` kept invalidations, oldest first: ``(id, key)``."""
        ...

    def forget_invalidations(self, ids: Sequence[int]) -> None:
        """Drop the kept invalidations ``ids`` (sent)."""
        ...

    def ping(self) -> None:
        """A cheap round trip (health probe)."""
        ...

    def counts(self) -> dict[str, int]:
        """Links by status."""
        ...

    def close(self) -> None:
        """Release connections; a later call reopens them."""
        ...


class SqliteLinkStore:
    """SQLite link store; safe to share between threads (each thread gets its own connection)."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        synchronous: str = "NORMAL",
        busy_timeout_ms: int = 10_000,
        idempotency_ttl_s: float = 86_400.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if synchronous.upper() not in SYNCHRONOUS_LEVELS:
            raise ValueError(f"unknown synchronous mode {synchronous!r}")
        self.path = str(path)
        self.synchronous = synchronous.upper()
        self.busy_timeout_ms = busy_timeout_ms
        self.idempotency_ttl_s = idempotency_ttl_s
        self.clock = clock
        self._pool = ConnectionPool(self.path, self._open)
        self._writer = writer_lock(self.path)
        self.checkpointer = WalCheckpointer(self.path, busy_timeout_ms=busy_timeout_ms)
        conn = self._conn()
        with self._writer:
            conn.executescript(_SCHEMA)
            have = {row[1] for row in conn.execute("PRAGMA table_info(links)")}
            for column, definition in _ADDED_COLUMNS.items():
                if column not in have:  # a database from before the column existed
                    conn.execute(f"ALTER TABLE links ADD COLUMN {column} {definition}")

    # -- connections -------------------------------------------------------------------

    def _open(self) -> sqlite3.Connection:
        conn = connect(
            self.path, synchronous=self.synchronous, busy_timeout_ms=self.busy_timeout_ms
        )
        conn.execute("PRAGMA foreign_keys = ON")
        self.checkpointer.prepare(conn)
        return conn

    def _conn(self) -> sqlite3.Connection:
        return self._pool.get()

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """A write transaction that holds the write lock from its first statement.

        The threads of this process queue on an in-process lock first (see
        :mod:`lookup.kit.dblock`), so only writers of *other* processes ever meet
        SQLite's busy handler and its sleeps; the WAL is checkpointed by a background
        thread, never inside a commit (see :class:`lookup.kit.dblock.WalCheckpointer`).
        """
        conn = self._conn()
        with self._writer:
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
        self.checkpointer.committed()

    def close(self) -> None:
        """Close every connection this store opened (in any thread); later calls reopen."""
        self.checkpointer.stop()
        self._pool.close()

    # -- the write path ----------------------------------------------------------------

    def create(
        self,
        link: Link,
        *,
        idempotency: IdempotencyClaim | None = None,
        render: Callable[[Link], dict[str, Any]],
        actor: str | None = None,
    ) -> CreateResult:
        """Claim ``link.key`` and store the link, in one transaction.

        With an Idempotency-Key: a live record with the same body digest returns the
        original response (``replayed=True``); a different digest raises
        :class:`IdempotencyMismatch`. Otherwise the key is claimed with a conditional
        insert; if anybody holds it already, :class:`KeyTaken`.
        """
        now = self.clock()
        with self._write() as conn:
            if idempotency is not None:
                row = conn.execute(
                    "SELECT body_hash, response FROM idempotency"
                    " WHERE scope = ? AND idem_key = ? AND created_at > ?",
                    (idempotency.scope, idempotency.key, now - self.idempotency_ttl_s),
                ).fetchone()
                if row is not None:
                    if row[0] != idempotency.body_hash:
                        raise IdempotencyMismatch(idempotency.key)
                    return CreateResult(json.loads(row[1]), None, True)
            cur = conn.execute(
                f"INSERT INTO links ({COLUMNS}) VALUES ({', '.join('?' * 18)})"
                " ON CONFLICT(key) DO NOTHING",
                (
                    link.key,
                    link.id,
                    int(link.alias),
                    link.long_url,
                    link.owner,
                    link.created_at,
                    link.updated_at,
                    link.expires_at,
                    link.max_clicks,
                    link.clicks,
                    link.status.value,
                    link.redirect_type,
                    link.max_age,
                    link.password_hash,
                    json.dumps(list(link.tags)),
                    link.scan_verdict,
                    link.status_reason,
                    json.dumps(list(link.scan_reasons)),
                ),
            )
            if cur.rowcount != 1:
                raise KeyTaken(link.key)
            response = render(link)
            if idempotency is not None:
                conn.execute(
                    "INSERT INTO idempotency (scope, idem_key, body_hash, response, created_at)"
                    " VALUES (?, ?, ?, ?, ?)"
                    " ON CONFLICT(scope, idem_key) DO UPDATE SET body_hash = excluded.body_hash,"
                    " response = excluded.response, created_at = excluded.created_at",
                    (
                        idempotency.scope,
                        idempotency.key,
                        idempotency.body_hash,
                        json.dumps(response),
                        now,
                    ),
                )
            conn.execute(
                "INSERT INTO link_audit (key, at, actor, action, old_url, new_url)"
                " VALUES (?, ?, ?, 'create', NULL, ?)",
                (link.key, now, actor, link.long_url),
            )
        return CreateResult(response, link, False)

    def find_replay(self, idempotency: IdempotencyClaim) -> dict[str, Any] | None:
        """The stored response for a live Idempotency-Key with the same body digest, None if
        the key is unused; :class:`IdempotencyMismatch` if it was used with another body.

        A fast path before validation (a replay must not fail because, say, the expiry
        it asked for has passed since); :meth:`create` re-checks inside its transaction.
        """
        row = (
            self._conn()
            .execute(
                "SELECT body_hash, response FROM idempotency"
                " WHERE scope = ? AND idem_key = ? AND created_at > ?",
                (idempotency.scope, idempotency.key, self.clock() - self.idempotency_ttl_s),
            )
            .fetchone()
        )
        if row is None:
            return None
        if row[0] != idempotency.body_hash:
            raise IdempotencyMismatch(idempotency.key)
        return json.loads(row[1])  # type: ignore[no-any-return]

    def update(
        self,
        key: str,
        changes: dict[str, Any],
        *,
        actor: str | None,
        action: str = "update",
        expected_owner: str | None = None,
        check_owner: bool = False,
        allow_tombstone: bool = False,
    ) -> tuple[Link, Link]:
        """Apply ``changes`` to one link atomically and audit it; returns ``(old, new)``.

        With ``check_owner``, the link's owner must equal ``expected_owner``
        (:class:`NotOwner` otherwise). Tombstones cannot change (:class:`Gone`).
        """
        bad = set(changes) - UPDATABLE
        if bad:
            raise ValueError(f"cannot update {sorted(bad)}")
        now = self.clock()
        with self._write() as conn:
            row = conn.execute(f"SELECT {COLUMNS} FROM links WHERE key = ?", (key,)).fetchone()
            if row is None:
                raise LinkMissing(key)
            old = row_to_link(row)
            if check_owner and (old.owner is None or old.owner != expected_owner):
                raise NotOwner(key)
            if old.is_tombstone and not allow_tombstone:
                raise Gone(key)
            if changes:
                assignments = ", ".join(f"{c} = ?" for c in changes)
                values = [to_db(c, v) for c, v in changes.items()]
                row = conn.execute(
                    f"UPDATE links SET {assignments}, updated_at = ? WHERE key = ?"
                    f" RETURNING {COLUMNS}",
                    (*values, now, key),
                ).fetchall()[0]  # step to the end, so the statement completes
            new = row_to_link(row)
            detail = {
                c: to_db(c, v)
                for c, v in changes.items()
                if c not in ("long_url", "password_hash")
            }
            if "password_hash" in changes:
                detail["password"] = "set" if changes["password_hash"] else "removed"
            conn.execute(
                "INSERT INTO link_audit (key, at, actor, action, old_url, new_url, detail)"
                " VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    key,
                    now,
                    actor,
                    action,
                    old.long_url,
                    new.long_url if "long_url" in changes else None,
                    json.dumps(detail),
                ),
            )
        return old, new

    def tombstone(
        self,
        key: str,
        status: Status,
        *,
        actor: str | None,
        reason: str | None = None,
        expected_owner: str | None = None,
        check_owner: bool = False,
    ) -> tuple[Link, Link]:
        """Turn a link into a tombstone (DELETED or EXPIRED): no URL, key taken forever."""
        if status not in (Status.DELETED, Status.EXPIRED):
            raise ValueError("a tombstone is DELETED or EXPIRED")
        return self.update(
            key,
            {"status": status, "long_url": "", "password_hash": None, "status_reason": reason},
            actor=actor,
            action="delete" if status is Status.DELETED else "expire",
            expected_owner=expected_owner,
            check_owner=check_owner,
        )

    def consume_click(self, key: str, now: float) -> Link | None:
        """Admit one redirect of a link with ``max_clicks``: one conditional UPDATE.

        Returns the updated link, or None when the link is not active, expired, or has
        used all its clicks (then exactly ``max_clicks`` callers were admitted).
        """
        conn = self._conn()
        with self._writer:
            rows = conn.execute(
                f"UPDATE links SET clicks = clicks + 1 WHERE key = ? AND status = 'ACTIVE'"
                f" AND max_clicks IS NOT NULL AND clicks < max_clicks"
                f" AND (expires_at IS NULL OR expires_at > ?) RETURNING {COLUMNS}",
                (key, now),
            ).fetchall()  # step to the end, so the statement completes and commits
        self.checkpointer.committed()
        return row_to_link(rows[0]) if rows else None

    def expire_due(self, now: float) -> list[str]:
        """Tombstone every link past its date or its click budget; returns their keys.

        Redirects never need this (expiry is checked on every read); it reclaims the
        URLs' storage and makes the state visible in listings.
        """
        with self._write() as conn:
            rows = conn.execute(
                "SELECT key, long_url FROM links WHERE status IN ('ACTIVE', 'DISABLED') AND ("
                " (expires_at IS NOT NULL AND expires_at <= ?)"
                " OR (max_clicks IS NOT NULL AND clicks >= max_clicks))",
                (now,),
            ).fetchall()
            for key, long_url in rows:
                conn.execute(
                    "UPDATE links SET status = 'EXPIRED', long_url = '', password_hash = NULL,"
                    " status_reason = 'expired', updated_at = ? WHERE key = ?",
                    (now, key),
                )
                conn.execute(
                    "INSERT INTO link_audit (key, at, actor, action, old_url, new_url)"
                    " VALUES (?, ?, 'system', 'expire', ?, NULL)",
                    (key, now, long_url),
                )
        return [r[0] for r in rows]

    def purge_idempotency(self, now: float) -> int:
        """Forget Idempotency-Keys older than the retention window; returns how many."""
        with self._write() as conn:
            cur = conn.execute(
                "DELETE FROM idempotency WHERE created_at <= ?", (now - self.idempotency_ttl_s,)
            )
            return cur.rowcount

    # -- reads -------------------------------------------------------------------------

    def get(self, key: str) -> Link | None:
        """The link (or tombstone) for ``key``, or None if the key was never claimed."""
        row = self._conn().execute(f"SELECT {COLUMNS} FROM links WHERE key = ?", (key,)).fetchone()
        return None if row is None else row_to_link(row)

    def list_owner(
        self,
        owner: str,
        *,
        limit: int = 50,
        before: tuple[float, str] | None = None,
        tag: str | None = None,
        status: Status | None = None,
    ) -> list[Link]:
        """An owner's links, newest first; ``before`` is the keyset cursor (created_at, key)."""
        where = ["owner = ?"]
        params: list[Any] = [owner]
        if before is not None:
            where.append("(created_at < ? OR (created_at = ? AND key < ?))")
            params += [before[0], before[0], before[1]]
        if tag is not None:
            where.append("EXISTS (SELECT 1 FROM json_each(links.tags) WHERE value = ?)")
            params.append(tag)
        if status is not None:
            where.append("status = ?")
            params.append(status.value)
        rows = (
            self._conn()
            .execute(
                f"SELECT {COLUMNS} FROM links WHERE {' AND '.join(where)}"
                " ORDER BY created_at DESC, key DESC LIMIT ?",
                (*params, limit),
            )
            .fetchall()
        )
        return [row_to_link(r) for r in rows]

    def iter_links(
        self, *, after: str = "", limit: int = 500, statuses: tuple[Status, ...] = (Status.ACTIVE,)
    ) -> list[Link]:
        """A page of links in key order (for background jobs such as the scanner)."""
        marks = ", ".join("?" * len(statuses))
        rows = (
            self._conn()
            .execute(
                f"SELECT {COLUMNS} FROM links WHERE key > ? AND status IN ({marks})"
                " ORDER BY key LIMIT ?",
                (after, *(s.value for s in statuses), limit),
            )
            .fetchall()
        )
        return [row_to_link(r) for r in rows]

    def audit(self, key: str) -> list[dict[str, Any]]:
        """The change history of one link, oldest first."""
        rows = (
            self._conn()
            .execute(
                "SELECT seq, at, actor, action, old_url, new_url, detail FROM link_audit"
                " WHERE key = ? ORDER BY seq",
                (key,),
            )
            .fetchall()
        )
        return [
            {
                "seq": r[0],
                "at": r[1],
                "actor": r[2],
                "action": r[3],
                "oldUrl": r[4],
                "newUrl": r[5],
                "detail": json.loads(r[6] or "{}"),
            }
            for r in rows
        ]

    # -- owner tokens ------------------------------------------------------------------

    def token_owner(self, token_hash: str) -> tuple[str, bool] | None:
        """``(owner, revoked)`` recorded for a token's hash, or None (never recorded)."""
        row = (
            self._conn()
            .execute(
                "SELECT owner, revoked_at FROM owner_tokens WHERE token_hash = ?", (token_hash,)
            )
            .fetchone()
        )
        return None if row is None else (str(row[0]), row[1] is not None)

    _REVOKE = (
        "INSERT INTO owner_tokens (token_hash, owner, created_at, revoked_at) VALUES (?, ?, ?, ?)"
        " ON CONFLICT(token_hash) DO UPDATE SET revoked_at = excluded.revoked_at"
        " WHERE owner_tokens.revoked_at IS NULL"
    )

    def revoke_token(self, token_hash: str, owner: str, now: float) -> bool:
        """Revoke a token (one conditional upsert); False if it was revoked already."""
        with self._write() as conn:
            return conn.execute(self._REVOKE, (token_hash, owner, now, now)).rowcount == 1

    def rotate_token(self, old_hash: str, new_hash: str, owner: str, now: float) -> bool:
        """Revoke ``old_hash`` and record ``new_hash`` for ``owner``, atomically."""
        with self._write() as conn:
            if conn.execute(self._REVOKE, (old_hash, owner, now, now)).rowcount != 1:
                return False
            conn.execute(
                "INSERT INTO owner_tokens (token_hash, owner, created_at) VALUES (?, ?, ?)",
                (new_hash, owner, now),
            )
            return True

    # -- the cache tier's outbox (kit.cache.InvalidationOutbox) ------------------------

    def defer_invalidations(self, keys: Sequence[str]) -> None:
        """Keep ``keys`` for the cache tier to invalidate once Redis is reachable."""
        now = self.clock()
        with self._write() as conn:
            conn.executemany(
                "INSERT INTO cache_outbox (key, at) VALUES (?, ?)", [(k, now) for k in keys]
            )

    def deferred_invalidations(self, limit: int) -> list[tuple[int, str]]:
        """Up to ``limit`` kept invalidations, oldest first."""
        rows = (
            self._conn()
            .execute("SELECT id, key FROM cache_outbox ORDER BY id LIMIT ?", (limit,))
            .fetchall()
        )
        return [(int(i), str(k)) for i, k in rows]

    def forget_invalidations(self, ids: Sequence[int]) -> None:
        """Drop the kept invalidations ``ids`` (sent)."""
        if not ids:
            return
        with self._write() as conn:
            conn.executemany("DELETE FROM cache_outbox WHERE id = ?", [(i,) for i in ids])

    def ping(self) -> None:
        """Fail loudly if the database cannot be reached (for health checks)."""
        self._conn().execute("SELECT 1").fetchall()

    def counts(self) -> dict[str, int]:
        """How many keys are in each status."""
        rows = self._conn().execute("SELECT status, COUNT(*) FROM links GROUP BY status").fetchall()
        out = {s.value: 0 for s in Status}
        out.update({r[0]: r[1] for r in rows})
        return out


def open_link_store(url: str, **options: Any) -> LinkStore:
    """The link store a URL names: ``sqlite:///path/links.sqlite3`` or
    ``postgresql://user@host:port/db`` (:class:`~lookup.shortener.store_pg.PostgresLinkStore`,
    shared by every process of a fleet).

    ``options`` go to the implementation (``idempotency_ttl_s``, ``clock``; SQLite's
    ``synchronous``, ``busy_timeout_ms``; PostgreSQL's ``pool_size``, ``pool_timeout_s``).
    """
    parsed = parse_store_url(url, ("sqlite", "postgresql"))
    if parsed.scheme == "postgresql":
        from lookup.shortener.store_pg import PostgresLinkStore

        return PostgresLinkStore(parsed.url, **options)
    assert parsed.path is not None
    return SqliteLinkStore(parsed.path, **options)
