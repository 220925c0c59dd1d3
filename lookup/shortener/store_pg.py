"""The link store on PostgreSQL: one database shared by every API process of a fleet.

The same operations and the same guarantees as :class:`~lookup.shortener.store.
SqliteLinkStore`, each uniqueness decision still one conditional write:

* a key is claimed by ``INSERT ... ON CONFLICT (key) DO NOTHING`` — of many concurrent
  claims from any number of processes exactly one inserts a row;
* a click of a budgeted link is one ``UPDATE ... WHERE clicks < max_clicks``; under READ
  COMMITTED a second updater waits for the first and re-checks the condition on the new
  row, so exactly ``max_clicks`` succeed;
* a create with an Idempotency-Key first takes a transaction-scoped advisory lock on
  that key, so two retries of one request racing in two processes give one link and one
  replay (SQLite gets this from its single writer);
* updates lock the row (``SELECT ... FOR UPDATE``) before they read it.

Connections come from a :class:`~lookup.kit.postgres.PgPool` with short timeouts: while
the server is down every call raises :class:`~lookup.errors.Unavailable` within the pool
timeout instead of hanging. The schema is created on open under an advisory lock.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from typing import Any

from lookup.kit.postgres import PgPool, describe_url, ensure_schema
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
    row_to_link,
    to_db,
)

__all__ = ["PostgresLinkStore"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS links (
    key            TEXT COLLATE "C" PRIMARY KEY,  -- byte order, as SQLite sorts
    id             BIGINT UNIQUE,
    alias          BOOLEAN NOT NULL DEFAULT FALSE,
    long_url       TEXT NOT NULL,
    owner          TEXT,
    created_at     DOUBLE PRECISION NOT NULL,
    updated_at     DOUBLE PRECISION NOT NULL,
    expires_at     DOUBLE PRECISION,
    max_clicks     BIGINT,
    clicks         BIGINT NOT NULL DEFAULT 0,
    status         TEXT NOT NULL DEFAULT 'ACTIVE'
                   CHECK (status IN ('ACTIVE', 'DISABLED', 'DELETED', 'EXPIRED')),
    redirect_type  INTEGER NOT NULL DEFAULT 302 CHECK (redirect_type IN (301, 302)),
    max_age        INTEGER,
    password_hash  TEXT,
    tags           JSONB NOT NULL DEFAULT '[]',
    scan_verdict   TEXT NOT NULL DEFAULT 'PENDING',
    status_reason  TEXT,
    scan_reasons   JSONB NOT NULL DEFAULT '[]'
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
    created_at  DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (scope, idem_key)
);
CREATE TABLE IF NOT EXISTS link_audit (
    seq      BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    key      TEXT NOT NULL,
    at       DOUBLE PRECISION NOT NULL,
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
    created_at  DOUBLE PRECISION NOT NULL,
    revoked_at  DOUBLE PRECISION
);
CREATE TABLE IF NOT EXISTS cache_outbox (
    id   BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    key  TEXT NOT NULL,
    at   DOUBLE PRECISION NOT NULL
);
"""

#: The JSON columns come back from psycopg as lists; the shared row mapper wants text.
_SELECT = COLUMNS.replace("tags", "tags::text").replace("scan_reasons", "scan_reasons::text")
_RETURNING = _SELECT


def _assign(column: str) -> str:
    return f"{column} = %s::jsonb" if column in ("tags", "scan_reasons") else f"{column} = %s"


class PostgresLinkStore:
    """The link store in one PostgreSQL database; thread-safe, shared by many processes.

    ``pool_size`` caps this process's connections; ``pool_timeout_s`` is how long a call
    waits for one before it raises :class:`~lookup.errors.Unavailable`.
    """

    def __init__(
        self,
        url: str,
        *,
        idempotency_ttl_s: float = 86_400.0,
        clock: Callable[[], float] = time.time,
        pool_size: int = 8,
        pool_timeout_s: float = 2.0,
    ) -> None:
        self.url = url
        self.idempotency_ttl_s = idempotency_ttl_s
        self.clock = clock
        ensure_schema(url, "lookup.shortener.links", _SCHEMA, "the link store")
        self._pool = PgPool(
            url, what="the link store", max_size=pool_size, pool_timeout_s=pool_timeout_s
        )

    def describe(self) -> str:
        """Where the links live, without credentials (for status pages)."""
        return describe_url(self.url)

    def close(self) -> None:
        """Close the pool's connections; the next call opens them again."""
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
        """Claim ``link.key`` and store the link (and its response) atomically; a claim that
        loses raises :class:`KeyTaken`, a reused Idempotency-Key replays or refuses."""
        now = self.clock()
        # Without an Idempotency-Key the claim and its audit row are one statement (its own
        # transaction); with one, the key's lock, the replay check and the record join it.
        scope = self._pool.connection() if idempotency is None else self._pool.transaction()
        with scope as conn:
            if idempotency is not None:
                conn.execute(
                    "SELECT pg_advisory_xact_lock(hashtextextended(%s, 1))",
                    (f"{len(idempotency.scope)}:{idempotency.scope}:{idempotency.key}",),
                )
                row = conn.execute(
                    "SELECT body_hash, response FROM idempotency"
                    " WHERE scope = %s AND idem_key = %s AND created_at > %s",
                    (idempotency.scope, idempotency.key, now - self.idempotency_ttl_s),
                ).fetchone()
                if row is not None:
                    if row[0] != idempotency.body_hash:
                        raise IdempotencyMismatch(idempotency.key)
                    return CreateResult(json.loads(row[1]), None, True)
            response = render(link)  # before the claim: nothing can fail after it commits
            cur = conn.execute(
                f"WITH claimed AS (INSERT INTO links ({COLUMNS}) VALUES"
                f" ({', '.join(['%s'] * 14)}, %s::jsonb, %s, %s, %s::jsonb)"
                " ON CONFLICT (key) DO NOTHING RETURNING key, long_url)"
                " INSERT INTO link_audit (key, at, actor, action, old_url, new_url)"
                " SELECT key, %s, %s, 'create', NULL, long_url FROM claimed",
                (
                    link.key,
                    link.id,
                    link.alias,
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
                    now,
                    actor,
                ),
            )
            if cur.rowcount != 1:
                raise KeyTaken(link.key)
            if idempotency is not None:
                conn.execute(
                    "INSERT INTO idempotency (scope, idem_key, body_hash, response, created_at)"
                    " VALUES (%s, %s, %s, %s, %s)"
                    " ON CONFLICT (scope, idem_key) DO UPDATE SET body_hash = excluded.body_hash,"
                    " response = excluded.response, created_at = excluded.created_at",
                    (
                        idempotency.scope,
                        idempotency.key,
                        idempotency.body_hash,
                        json.dumps(response),
                        now,
                    ),
                )
        return CreateResult(response, link, False)

    def find_replay(self, idempotency: IdempotencyClaim) -> dict[str, Any] | None:
        """The stored response of a live Idempotency-Key with the same body, None if unused;
        :class:`IdempotencyMismatch` if it was used with another body."""
        with self._pool.connection() as conn:
            row = conn.execute(
                "SELECT body_hash, response FROM idempotency"
                " WHERE scope = %s AND idem_key = %s AND created_at > %s",
                (idempotency.scope, idempotency.key, self.clock() - self.idempotency_ttl_s),
            ).fetchone()
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
        """Apply ``changes`` to one locked row and audit it; returns ``(old, new)``."""
        bad = set(changes) - UPDATABLE
        if bad:
            raise ValueError(f"cannot update {sorted(bad)}")
        now = self.clock()
        with self._pool.transaction() as conn:
            row = conn.execute(
                f"SELECT {_SELECT} FROM links WHERE key = %s FOR UPDATE", (key,)
            ).fetchone()
            if row is None:
                raise LinkMissing(key)
            old = row_to_link(row)
            if check_owner and (old.owner is None or old.owner != expected_owner):
                raise NotOwner(key)
            if old.is_tombstone and not allow_tombstone:
                raise Gone(key)
            if changes:
                assignments = ", ".join(_assign(c) for c in changes)
                values = [to_db(c, v) for c, v in changes.items()]
                row = conn.execute(
                    f"UPDATE links SET {assignments}, updated_at = %s WHERE key = %s"
                    f" RETURNING {_RETURNING}",
                    (*values, now, key),
                ).fetchone()
                assert row is not None  # the row is locked by this transaction
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
                " VALUES (%s, %s, %s, %s, %s, %s, %s)",
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
        """Admit one redirect of a budgeted link: one conditional UPDATE, or None."""
        with self._pool.connection() as conn:
            row = conn.execute(
                f"UPDATE links SET clicks = clicks + 1 WHERE key = %s AND status = 'ACTIVE'"
                f" AND max_clicks IS NOT NULL AND clicks < max_clicks"
                f" AND (expires_at IS NULL OR expires_at > %s) RETURNING {_RETURNING}",
                (key, now),
            ).fetchone()
        return None if row is None else row_to_link(row)

    def expire_due(self, now: float) -> list[str]:
        """Tombstone every link past its date or its click budget; returns their keys."""
        with self._pool.transaction() as conn:
            rows = conn.execute(
                "WITH due AS (SELECT key, long_url FROM links"
                " WHERE status IN ('ACTIVE', 'DISABLED') AND ("
                " (expires_at IS NOT NULL AND expires_at <= %s)"
                " OR (max_clicks IS NOT NULL AND clicks >= max_clicks)) FOR UPDATE)"
                " UPDATE links SET status = 'EXPIRED', long_url = '', password_hash = NULL,"
                " status_reason = 'expired', updated_at = %s FROM due WHERE links.key = due.key"
                " RETURNING links.key, due.long_url",
                (now, now),
            ).fetchall()
            if rows:
                with conn.cursor() as cur:
                    cur.executemany(
                        "INSERT INTO link_audit (key, at, actor, action, old_url, new_url)"
                        " VALUES (%s, %s, 'system', 'expire', %s, NULL)",
                        [(key, now, long_url) for key, long_url in rows],
                    )
        return [r[0] for r in rows]

    def purge_idempotency(self, now: float) -> int:
        """Forget Idempotency-Keys older than the retention window; returns how many."""
        with self._pool.connection() as conn:
            cur = conn.execute(
                "DELETE FROM idempotency WHERE created_at <= %s", (now - self.idempotency_ttl_s,)
            )
            return cur.rowcount

    # -- reads -------------------------------------------------------------------------

    def get(self, key: str) -> Link | None:
        """The link (or tombstone) for ``key``, or None if the key was never claimed."""
        with self._pool.connection() as conn:
            row = conn.execute(f"SELECT {_SELECT} FROM links WHERE key = %s", (key,)).fetchone()
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
        where = ["owner = %s"]
        params: list[Any] = [owner]
        if before is not None:
            where.append("(created_at < %s OR (created_at = %s AND key < %s))")
            params += [before[0], before[0], before[1]]
        if tag is not None:
            where.append("tags @> jsonb_build_array(%s::text)")
            params.append(tag)
        if status is not None:
            where.append("status = %s")
            params.append(status.value)
        with self._pool.connection() as conn:
            rows = conn.execute(
                f"SELECT {_SELECT} FROM links WHERE {' AND '.join(where)}"
                " ORDER BY created_at DESC, key DESC LIMIT %s",
                (*params, limit),
            ).fetchall()
        return [row_to_link(r) for r in rows]

    def iter_links(
        self, *, after: str = "", limit: int = 500, statuses: tuple[Status, ...] = (Status.ACTIVE,)
    ) -> list[Link]:
        """A page of links in key order after ``after`` (the scanner's sweep)."""
        with self._pool.connection() as conn:
            rows = conn.execute(
                f"SELECT {_SELECT} FROM links WHERE key > %s"
                " AND status = ANY(%s) ORDER BY key LIMIT %s",
                (after, [s.value for s in statuses], limit),
            ).fetchall()
        return [row_to_link(r) for r in rows]

    def audit(self, key: str) -> list[dict[str, Any]]:
        """The change history of one link, oldest first."""
        with self._pool.connection() as conn:
            rows = conn.execute(
                "SELECT seq, at, actor, action, old_url, new_url, detail FROM link_audit"
                " WHERE key = %s ORDER BY seq",
                (key,),
            ).fetchall()
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

    _REVOKE = (
        "INSERT INTO owner_tokens (token_hash, owner, created_at, revoked_at)"
        " VALUES (%s, %s, %s, %s) ON CONFLICT (token_hash) DO UPDATE"
        " SET revoked_at = EXCLUDED.revoked_at WHERE owner_tokens.revoked_at IS NULL"
    )

    def token_owner(self, token_hash: str) -> tuple[str, bool] | None:
        """``(owner, revoked)`` recorded for a token's hash, or None (never recorded)."""
        with self._pool.connection() as conn:
            row = conn.execute(
                "SELECT owner, revoked_at FROM owner_tokens WHERE token_hash = %s", (token_hash,)
            ).fetchone()
        return None if row is None else (str(row[0]), row[1] is not None)

    def revoke_token(self, token_hash: str, owner: str, now: float) -> bool:
        """Revoke a token (one conditional upsert); False if it was revoked already."""
        with self._pool.connection() as conn:
            return conn.execute(self._REVOKE, (token_hash, owner, now, now)).rowcount == 1

    def rotate_token(self, old_hash: str, new_hash: str, owner: str, now: float) -> bool:
        """Revoke ``old_hash`` and record ``new_hash`` for ``owner``, in one transaction
        (the conditional upsert's row lock makes exactly one concurrent rotation win)."""
        with self._pool.transaction() as conn:
            if conn.execute(self._REVOKE, (old_hash, owner, now, now)).rowcount != 1:
                return False
            conn.execute(
                "INSERT INTO owner_tokens (token_hash, owner, created_at) VALUES (%s, %s, %s)",
                (new_hash, owner, now),
            )
            return True

    # -- the cache tier's outbox (kit.cache.InvalidationOutbox) ------------------------

    def defer_invalidations(self, keys: Sequence[str]) -> None:
        """Keep ``keys`` for the cache tier to invalidate once Redis is reachable."""
        now = self.clock()
        with self._pool.transaction() as conn, conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO cache_outbox (key, at) VALUES (%s, %s)", [(k, now) for k in keys]
            )

    def deferred_invalidations(self, limit: int) -> list[tuple[int, str]]:
        """Up to ``limit`` kept invalidations, oldest first."""
        with self._pool.connection() as conn:
            rows = conn.execute(
                "SELECT id, key FROM cache_outbox ORDER BY id LIMIT %s", (limit,)
            ).fetchall()
        return [(int(i), str(k)) for i, k in rows]

    def forget_invalidations(self, ids: Sequence[int]) -> None:
        """Drop the kept invalidations ``ids`` (sent)."""
        if not ids:
            return
        with self._pool.connection() as conn:
            conn.execute("DELETE FROM cache_outbox WHERE id = ANY(%s)", (list(ids),))

    def ping(self) -> None:
        """Fail (Unavailable) if the database cannot be reached (for health checks)."""
        with self._pool.connection() as conn:
            conn.execute("SELECT 1").fetchall()

    def counts(self) -> dict[str, int]:
        """How many keys are in each status."""
        with self._pool.connection() as conn:
            rows = conn.execute("SELECT status, COUNT(*) FROM links GROUP BY status").fetchall()
        out = {s.value: 0 for s in Status}
        out.update({r[0]: int(r[1]) for r in rows})
        return out
