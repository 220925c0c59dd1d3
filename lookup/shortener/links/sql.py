"""The link store in SQL, written once for every engine: the tables, the statements, and
the operations over them in :class:`SqlLinkStore`.

Every uniqueness decision is taken by one conditional write, never read-then-write:

* a key (generated or alias) is claimed by ``INSERT ... ON CONFLICT DO NOTHING`` and its
  row count — of many concurrent claims exactly one inserts a row; the key and its
  case-insensitive ``fold`` are both unique, so ``IPL-Final`` loses to ``ipl-final``
  (:mod:`lookup.shortener.links.sqldomains`);
* a click on a link with ``max_clicks`` is admitted by one conditional ``UPDATE``
  (``clicks < max_clicks``), so exactly ``max_clicks`` redirects succeed;
* keys are never deleted: deletion and expiry leave a tombstone (status DELETED or
  EXPIRED, no URL) and the key stays taken forever.

Tables: ``links``; ``idempotency`` (replayed create responses); ``link_audit`` (who
changed what, when — retargets keep old and new URL); ``owner_tokens`` (the hash of each
rotated or revoked owner token, the owner it stands for and when it was revoked: a token
never seen here is its own owner); ``cache_outbox`` (invalidations the cache tier could
not send yet).

The statements are written with ``?`` for a parameter; a :class:`Dialect` says how its
engine spells what differs (the placeholder, column types, JSON, row locks, "any of a
list", and whether one statement can do what takes two elsewhere), and
:class:`LinkSql` renders every statement for it once. A backend subclasses
:class:`SqlLinkStore` with its statements and its connections, nothing else.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import Any, ClassVar

from lookup.kit.engines.dialects import Connection, SqlDialect, executemany
from lookup.shortener.links import (
    UPDATABLE,
    CreateResult,
    Gone,
    IdempotencyClaim,
    IdempotencyMismatch,
    KeyTaken,
    LinkMissing,
    LinkQuery,
    NotOwner,
)
from lookup.shortener.links.sqldomains import DomainSql, FoldedLinks, pick
from lookup.shortener.model import Link, Status

__all__ = [
    "COLUMNS",
    "Connection",
    "Dialect",
    "LinkSql",
    "SqlLinkStore",
    "link_values",
    "row_to_link",
    "to_db",
]

#: The ``links`` columns in the order :func:`row_to_link` reads them.
COLUMNS = (
    "key, id, alias, long_url, owner, created_at, updated_at, expires_at, max_clicks, clicks, "
    "status, redirect_type, max_age, password_hash, tags, scan_verdict, status_reason, "
    "scan_reasons, forward_query, forward_path"
)
#: The columns that hold a JSON list.
JSON_COLUMNS = ("tags", "scan_reasons")

#: Every table, with the column types an engine spells its own way in braces:
#: ``key`` (byte-ordered text), ``bigint``, ``boolean``/``false``/``true``, ``real``, ``json``
#: and ``serial`` (an increasing integer primary key).
SCHEMA = """
CREATE TABLE IF NOT EXISTS links (
    key            {key} PRIMARY KEY,
    id             {bigint} UNIQUE,
    alias          {boolean} NOT NULL DEFAULT {false},
    long_url       TEXT NOT NULL,
    owner          TEXT,
    created_at     {real} NOT NULL,
    updated_at     {real} NOT NULL,
    expires_at     {real},
    max_clicks     {bigint},
    clicks         {bigint} NOT NULL DEFAULT 0,
    status         TEXT NOT NULL DEFAULT 'ACTIVE'
                   CHECK (status IN ('ACTIVE', 'DISABLED', 'DELETED', 'EXPIRED')),
    redirect_type  INTEGER NOT NULL DEFAULT 302 CHECK (redirect_type IN (301, 302)),
    max_age        INTEGER,
    password_hash  TEXT,
    tags           {json} NOT NULL DEFAULT '[]',
    scan_verdict   TEXT NOT NULL DEFAULT 'PENDING',
    status_reason  TEXT,
    scan_reasons   {json} NOT NULL DEFAULT '[]',
    forward_query  {boolean} NOT NULL DEFAULT {true},
    forward_path   {boolean} NOT NULL DEFAULT {false},
    fold           TEXT,
    domain         TEXT NOT NULL DEFAULT ''
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
    created_at  {real} NOT NULL,
    PRIMARY KEY (scope, idem_key)
);
CREATE TABLE IF NOT EXISTS link_audit (
    seq      {serial},
    key      TEXT NOT NULL,
    at       {real} NOT NULL,
    actor    TEXT,
    action   TEXT NOT NULL,
    old_url  TEXT,
    new_url  TEXT,
    detail   TEXT NOT NULL DEFAULT '{{}}'
);
CREATE INDEX IF NOT EXISTS link_audit_by_key ON link_audit(key, seq);
CREATE TABLE IF NOT EXISTS owner_tokens (
    token_hash  TEXT PRIMARY KEY,
    owner       TEXT NOT NULL,
    created_at  {real} NOT NULL,
    revoked_at  {real}
);
CREATE TABLE IF NOT EXISTS cache_outbox (
    id   {serial},
    key  TEXT NOT NULL,
    at   {real} NOT NULL
);
"""

#: Links past their date or their click budget, still ACTIVE or DISABLED (one parameter).
_DUE = (
    "status IN ('ACTIVE', 'DISABLED') AND ((expires_at IS NOT NULL AND expires_at <= ?)"
    " OR (max_clicks IS NOT NULL AND clicks >= max_clicks))"
)
#: What expiry does to a link (one parameter, the time).
_EXPIRE = (
    "status = 'EXPIRED', long_url = '', password_hash = NULL, status_reason = 'expired',"
    " updated_at = ?"
)


@dataclass(frozen=True)
class Dialect(SqlDialect):
    """How one SQL engine spells what differs; the statements themselves are shared
    (the engine's name, its placeholder and "any of a list" are :class:`SqlDialect`'s)."""

    #: The column types of :data:`SCHEMA`.
    types: Mapping[str, str]
    #: A JSON list given as text, where a value goes (``?`` or ``?::jsonb``).
    json_value: str
    #: A JSON column read back as text (``{column}`` or ``{column}::text``).
    json_text: str
    #: What a SELECT adds to lock its rows until the transaction ends (or nothing).
    lock_rows: str
    #: "the ``tags`` list of ``links`` holds ``?``".
    has_tag: str
    #: The claim and its audit row in one statement (a data-modifying WITH).
    claim_with_audit: bool
    #: Expiry in one statement that returns each link's old URL (UPDATE ... FROM).
    expire_in_one: bool


def _column(dialect: Dialect, name: str) -> str:
    return dialect.json_text.format(column=name) if name in JSON_COLUMNS else name


class LinkSql:
    """Every statement of the link store, rendered once for one :class:`Dialect`."""

    def __init__(self, dialect: Dialect) -> None:
        self.dialect = dialect
        b = dialect.bind
        cols = ", ".join(_column(dialect, c) for c in COLUMNS.split(", "))
        self.columns = cols
        self.schema = SCHEMA.format(**dialect.types)
        self.get = b(f"SELECT {cols} FROM links WHERE key = ?")
        self.get_locked = self.get + dialect.lock_rows
        self.domains = DomainSql(dialect, cols)
        json_value = dialect.json_value
        values = ", ".join(json_value if c in JSON_COLUMNS else "?" for c in COLUMNS.split(", "))
        claim = (
            f"INSERT INTO links ({COLUMNS}, fold, domain) VALUES ({values}, ?, ?)"
            " ON CONFLICT DO NOTHING"
        )
        self.claim = b(claim)
        # What an engine cannot say in one statement it is never handed ("").
        claim_audited = (
            f"WITH claimed AS ({claim} RETURNING key, long_url)"
            " INSERT INTO link_audit (key, at, actor, action, old_url, new_url)"
            " SELECT key, ?, ?, 'create', NULL, long_url FROM claimed"
        )
        self.claim_audited = b(claim_audited) if dialect.claim_with_audit else ""
        self.audit_create = b(
            "INSERT INTO link_audit (key, at, actor, action, old_url, new_url)"
            " VALUES (?, ?, ?, 'create', NULL, ?)"
        )
        self.replay = b(
            "SELECT body_hash, response FROM idempotency"
            " WHERE scope = ? AND idem_key = ? AND created_at > ?"
        )
        self.remember = b(
            "INSERT INTO idempotency (scope, idem_key, body_hash, response, created_at)"
            " VALUES (?, ?, ?, ?, ?)"
            " ON CONFLICT (scope, idem_key) DO UPDATE SET body_hash = excluded.body_hash,"
            " response = excluded.response, created_at = excluded.created_at"
        )
        self.audit_change = b(
            "INSERT INTO link_audit (key, at, actor, action, old_url, new_url, detail)"
            " VALUES (?, ?, ?, ?, ?, ?, ?)"
        )
        self.consume_click = b(
            "UPDATE links SET clicks = clicks + 1 WHERE key = ? AND status = 'ACTIVE'"
            " AND max_clicks IS NOT NULL AND clicks < max_clicks"
            f" AND (expires_at IS NULL OR expires_at > ?) RETURNING {cols}"
        )
        due = f"SELECT key, long_url FROM links WHERE {_DUE}{dialect.lock_rows}"
        self.select_due = b(due)
        self.expire_one = b(f"UPDATE links SET {_EXPIRE} WHERE key = ?")
        expire_due = (
            f"WITH due AS ({due}) UPDATE links SET {_EXPIRE} FROM due"
            " WHERE links.key = due.key RETURNING links.key, due.long_url"
        )
        self.expire_due = b(expire_due) if dialect.expire_in_one else ""
        self.audit_expire = b(
            "INSERT INTO link_audit (key, at, actor, action, old_url, new_url)"
            " VALUES (?, ?, 'system', 'expire', ?, NULL)"
        )
        self.purge_idempotency = b("DELETE FROM idempotency WHERE created_at <= ?")
        self.iter_links = b(
            f"SELECT {cols} FROM links WHERE key > ?"
            f" AND {dialect.any_of.format(column='status')} ORDER BY key LIMIT ?"
        )
        self.audit = b(
            "SELECT seq, at, actor, action, old_url, new_url, detail FROM link_audit"
            " WHERE key = ? ORDER BY seq"
        )
        self.token_owner = b("SELECT owner, revoked_at FROM owner_tokens WHERE token_hash = ?")
        self.revoke_token = b(
            "INSERT INTO owner_tokens (token_hash, owner, created_at, revoked_at)"
            " VALUES (?, ?, ?, ?) ON CONFLICT (token_hash) DO UPDATE"
            " SET revoked_at = excluded.revoked_at WHERE owner_tokens.revoked_at IS NULL"
        )
        self.record_token = b(
            "INSERT INTO owner_tokens (token_hash, owner, created_at) VALUES (?, ?, ?)"
        )
        self.defer = b("INSERT INTO cache_outbox (key, at) VALUES (?, ?)")
        self.deferred = b("SELECT id, key FROM cache_outbox ORDER BY id LIMIT ?")
        self.forget = b(f"DELETE FROM cache_outbox WHERE {dialect.any_of.format(column='id')}")
        self.ping = "SELECT 1"
        self.counts = "SELECT status, COUNT(*) FROM links GROUP BY status"

    def update(self, changes: Iterable[str]) -> str:
        """Set ``changes`` (column names) and ``updated_at`` of one key, returning the row."""
        json_value = self.dialect.json_value
        assignments = ", ".join(
            f"{c} = {json_value if c in JSON_COLUMNS else '?'}" for c in changes
        )
        return self.dialect.bind(
            f"UPDATE links SET {assignments}, updated_at = ? WHERE key = ? RETURNING {self.columns}"
        )

    def list_owner(self, *, before: bool, tag: bool, status: bool) -> str:
        """An owner's links, newest first: the owner, then the filters asked for, then
        the limit (a ``before`` cursor takes ``created_at`` twice, then the key)."""
        where = ["owner = ?"]
        if before:
            where.append("(created_at < ? OR (created_at = ? AND key < ?))")
        if tag:
            where.append(self.dialect.has_tag)
        if status:
            where.append("status = ?")
        return self.dialect.bind(
            f"SELECT {self.columns} FROM links WHERE {' AND '.join(where)}"
            " ORDER BY created_at DESC, key DESC LIMIT ?"
        )

    def owner_query(
        self, owner: str, query: LinkQuery, after: tuple[float, str] | None, *, keys_only: bool
    ) -> tuple[str, list[Any]]:
        """The statement and parameters of an owner's links matching ``query`` (all
        columns, or only ``key, created_at``), ordered by ``(created_at, key)`` in the
        query's direction, after the ``after`` position; a ``LIMIT ?`` follows unless
        ``keys_only``. A search term matches the key or the destination, lower-cased, as
        a ``LIKE`` pattern with ``!`` escaping its wildcards."""
        where: list[str] = ["owner = ?"]
        params: list[Any] = [owner]
        if query.tag is not None:
            where.append(self.dialect.has_tag)
            params.append(query.tag)
        if query.status is not None:
            where.append("status = ?")
            params.append(query.status.value)
        if query.terms:
            either = "lower(key) LIKE ? ESCAPE '!' OR lower(long_url) LIKE ? ESCAPE '!'"
            where.append("(" + " OR ".join([either] * len(query.terms)) + ")")
            for term in query.terms:
                pattern = "%" + _like_escape(term) + "%"
                params += [pattern, pattern]
        if query.domain is not None:
            where.append("domain = ?")
            params.append(query.domain)
        if query.created_from is not None:
            where.append("created_at >= ?")
            params.append(query.created_from)
        if query.created_to is not None:
            where.append("created_at < ?")
            params.append(query.created_to)
        direction, beyond = ("ASC", ">") if query.ascending else ("DESC", "<")
        if after is not None:
            where.append(f"(created_at {beyond} ? OR (created_at = ? AND key {beyond} ?))")
            params += [after[0], after[0], after[1]]
        columns = "key, created_at" if keys_only else self.columns
        statement = (
            f"SELECT {columns} FROM links WHERE {' AND '.join(where)}"
            f" ORDER BY created_at {direction}, key {direction}"
        )
        return self.dialect.bind(statement if keys_only else statement + " LIMIT ?"), params

    def get_many(self) -> str:
        """The links stored under any of a list of keys."""
        any_key = self.dialect.any_of.format(column="key")
        return self.dialect.bind(f"SELECT {self.columns} FROM links WHERE {any_key}")


def _like_escape(text: str) -> str:
    """``text`` as a literal inside a ``LIKE`` pattern that escapes with ``!``."""
    return text.replace("!", "!!").replace("%", "!%").replace("_", "!_")


def row_to_link(row: Sequence[Any]) -> Link:
    """The link a row of :data:`COLUMNS` holds (tags and scan reasons as JSON text)."""
    return Link(
        key=row[0],
        id=row[1],
        alias=bool(row[2]),
        long_url=row[3],
        owner=row[4],
        created_at=row[5],
        updated_at=row[6],
        expires_at=row[7],
        max_clicks=row[8],
        clicks=row[9],
        status=Status(row[10]),
        redirect_type=row[11],
        max_age=row[12],
        password_hash=row[13],
        tags=tuple(json.loads(row[14] or "[]")),
        scan_verdict=row[15],
        status_reason=row[16],
        scan_reasons=tuple(json.loads(row[17] or "[]")),
        forward_query=bool(row[18]),
        forward_path=bool(row[19]),
    )


def link_values(link: Link) -> tuple[Any, ...]:
    """The values of a new row, in the order of :data:`COLUMNS`."""
    return (
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
        link.forward_query,
        link.forward_path,
    )


def to_db(column: str, value: Any) -> Any:
    """The value to store in ``column`` (JSON text for tuples, the name of a status)."""
    if column in JSON_COLUMNS:
        return json.dumps(list(value))
    if column == "status" and isinstance(value, Status):
        return value.value
    return value


class SqlLinkStore(FoldedLinks, ABC):
    """Every operation of :class:`~lookup.shortener.links.LinkStore`, over :class:`LinkSql`.

    A backend gives its statements (:attr:`sql`) and three ways to get a connection:
    :meth:`_read` (reads), :meth:`_write` (one statement that commits on its own) and
    :meth:`_transaction` (several statements, committed together or not at all).
    """

    sql: ClassVar[LinkSql]

    def __init__(self, *, idempotency_ttl_s: float, clock: Callable[[], float]) -> None:
        self.idempotency_ttl_s = idempotency_ttl_s
        self.clock = clock
        self.domain_sql = self.sql.domains

    # -- what a backend provides ---------------------------------------------------------

    @abstractmethod
    def _read(self) -> AbstractContextManager[Connection]:
        """A connection for reads."""

    @abstractmethod
    def _write(self) -> AbstractContextManager[Connection]:
        """A connection for one write statement, committed when it completes."""

    @abstractmethod
    def _transaction(self) -> AbstractContextManager[Connection]:
        """A connection inside one write transaction (rolled back on an exception)."""

    def _lock_claim(self, conn: Connection, idempotency: IdempotencyClaim) -> None:
        """Make concurrent creates with one Idempotency-Key take turns, until the end of
        the transaction (nothing to do for an engine with a single writer)."""
        return None

    @abstractmethod
    def close(self) -> None:
        """Release connections; a later call reopens them."""

    # -- the write path ----------------------------------------------------------------

    def create(
        self,
        link: Link,
        *,
        idempotency: IdempotencyClaim | None = None,
        render: Callable[[Link], dict[str, Any]],
        actor: str | None = None,
    ) -> CreateResult:
        """Claim ``link.key`` and store the link, atomically.

        With an Idempotency-Key: a live record with the same body digest returns the
        original response (``replayed=True``); a different digest raises
        :class:`IdempotencyMismatch`. Otherwise the key is claimed with a conditional
        insert; if anybody holds it already, :class:`KeyTaken`.
        """
        now = self.clock()
        with self._claiming(idempotency) as conn:
            if idempotency is not None:
                replay = self._replay(conn, idempotency, now)
                if replay is not None:
                    return CreateResult(replay, None, True)
            response = render(link)  # before the claim: nothing can fail after it commits
            if not self._claim(conn, link, now, actor):
                raise KeyTaken(link.key)
            if idempotency is not None:
                conn.execute(
                    self.sql.remember,
                    (
                        idempotency.scope,
                        idempotency.key,
                        idempotency.body_hash,
                        json.dumps(response),
                        now,
                    ),
                )
        return CreateResult(response, link, False)

    @contextmanager
    def _claiming(self, idempotency: IdempotencyClaim | None) -> Iterator[Connection]:
        # Where the claim and its audit row are one statement, a create without an
        # Idempotency-Key needs no transaction; with one, the key's turn, the replay
        # check and the record join the claim's transaction.
        if idempotency is None and self.sql.dialect.claim_with_audit:
            with self._write() as conn:
                yield conn
            return
        with self._transaction() as conn:
            if idempotency is not None:
                self._lock_claim(conn, idempotency)
            yield conn

    def _claim(self, conn: Connection, link: Link, now: float, actor: str | None) -> bool:
        values = (*link_values(link), link.key.lower(), link.domain)
        if self.sql.dialect.claim_with_audit:
            return conn.execute(self.sql.claim_audited, (*values, now, actor)).rowcount == 1
        if conn.execute(self.sql.claim, values).rowcount != 1:
            return False
        conn.execute(self.sql.audit_create, (link.key, now, actor, link.long_url))
        return True

    def _replay(
        self, conn: Connection, idempotency: IdempotencyClaim, now: float
    ) -> dict[str, Any] | None:
        row = conn.execute(
            self.sql.replay,
            (idempotency.scope, idempotency.key, now - self.idempotency_ttl_s),
        ).fetchone()
        if row is None:
            return None
        if row[0] != idempotency.body_hash:
            raise IdempotencyMismatch(idempotency.key)
        return json.loads(row[1])  # type: ignore[no-any-return]

    def find_replay(self, idempotency: IdempotencyClaim) -> dict[str, Any] | None:
        """The stored response for a live Idempotency-Key with the same body digest, None if
        the key is unused; :class:`IdempotencyMismatch` if it was used with another body.

        A fast path before validation (a replay must not fail because, say, the expiry
        it asked for has passed since); :meth:`create` re-checks inside its transaction.
        """
        with self._read() as conn:
            return self._replay(conn, idempotency, self.clock())

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
        """Apply ``changes`` to one locked row atomically and audit it; returns ``(old, new)``.

        With ``check_owner``, the link's owner must equal ``expected_owner``
        (:class:`NotOwner` otherwise). Tombstones cannot change (:class:`Gone`).
        """
        bad = set(changes) - UPDATABLE
        if bad:
            raise ValueError(f"cannot update {sorted(bad)}")
        now = self.clock()
        with self._transaction() as conn:
            row = conn.execute(self.sql.get_locked, (key,)).fetchone()
            if row is None:
                raise LinkMissing(key)
            old = row_to_link(row)
            if check_owner and (old.owner is None or old.owner != expected_owner):
                raise NotOwner(key)
            if old.is_tombstone and not allow_tombstone:
                raise Gone(key)
            if changes:
                values = [to_db(c, v) for c, v in changes.items()]
                row = conn.execute(self.sql.update(changes), (*values, now, key)).fetchall()[
                    0
                ]  # step to the end, so the statement completes
            new = row_to_link(row)
            detail = {
                c: to_db(c, v) for c, v in changes.items() if c not in ("long_url", "password_hash")
            }
            if "password_hash" in changes:
                detail["password"] = "set" if changes["password_hash"] else "removed"
            conn.execute(
                self.sql.audit_change,
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
        with self._write() as conn:
            # step to the end, so the statement completes (and, alone, commits)
            rows = conn.execute(self.sql.consume_click, (key, now)).fetchall()
        return row_to_link(rows[0]) if rows else None

    def expire_due(self, now: float) -> list[str]:
        """Tombstone every link past its date or its click budget; returns their keys.

        Redirects never need this (expiry is checked on every read); it reclaims the
        URLs' storage and makes the state visible in listings.
        """
        with self._transaction() as conn:
            if self.sql.dialect.expire_in_one:
                rows = conn.execute(self.sql.expire_due, (now, now)).fetchall()
            else:
                rows = conn.execute(self.sql.select_due, (now,)).fetchall()
                if rows:
                    executemany(conn, self.sql.expire_one, [(now, key) for key, _ in rows])
            if rows:
                executemany(conn, self.sql.audit_expire, [(key, now, url) for key, url in rows])
        return [r[0] for r in rows]

    def purge_idempotency(self, now: float) -> int:
        """Forget Idempotency-Keys older than the retention window; returns how many."""
        with self._write() as conn:
            return conn.execute(
                self.sql.purge_idempotency, (now - self.idempotency_ttl_s,)
            ).rowcount

    # -- reads -------------------------------------------------------------------------

    def get(self, key: str) -> Link | None:
        """The link (or tombstone) stored as ``key`` or, failing that, the one ``key``
        folds to (keys are case-insensitive); None if neither was ever claimed."""
        with self._read() as conn:
            rows = conn.execute(self.sql.domains.by_key_or_fold, (key, key.lower())).fetchall()
        row = pick(rows, key)
        return None if row is None else row_to_link(row)

    def get_folded(self, folded: str) -> Link | None:
        """The link whose fold is ``folded`` (what the resolver asks for), or None."""
        with self._read() as conn:
            row = conn.execute(self.sql.domains.by_fold, (folded,)).fetchone()
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
        params: list[Any] = [owner]
        if before is not None:
            params += [before[0], before[0], before[1]]
        if tag is not None:
            params.append(tag)
        if status is not None:
            params.append(status.value)
        statement = self.sql.list_owner(
            before=before is not None, tag=tag is not None, status=status is not None
        )
        with self._read() as conn:
            rows = conn.execute(statement, (*params, limit)).fetchall()
        return [row_to_link(r) for r in rows]

    def iter_links(
        self, *, after: str = "", limit: int = 500, statuses: tuple[Status, ...] = (Status.ACTIVE,)
    ) -> list[Link]:
        """A page of links in key order after ``after`` (the scanner's sweep)."""
        wanted = self.sql.dialect.array([s.value for s in statuses])
        with self._read() as conn:
            rows = conn.execute(self.sql.iter_links, (after, wanted, limit)).fetchall()
        return [row_to_link(r) for r in rows]

    def query_owner(
        self,
        owner: str,
        query: LinkQuery,
        *,
        limit: int = 50,
        after: tuple[float, str] | None = None,
    ) -> list[Link]:
        """An owner's links matching ``query``, keyset-paged by ``(created_at, key)``."""
        statement, params = self.sql.owner_query(owner, query, after, keys_only=False)
        with self._read() as conn:
            rows = conn.execute(statement, (*params, limit)).fetchall()
        return [row_to_link(r) for r in rows]

    def owner_keys(self, owner: str, query: LinkQuery) -> list[tuple[str, float]]:
        """``(key, created_at)`` of every link of ``owner`` matching ``query``."""
        statement, params = self.sql.owner_query(owner, query, None, keys_only=True)
        with self._read() as conn:
            rows = conn.execute(statement, params).fetchall()
        return [(str(k), float(c)) for k, c in rows]

    def get_many(self, keys: Sequence[str]) -> list[Link]:
        """The links stored under ``keys`` (unknown keys left out), in chunks of 500."""
        out: list[Link] = []
        statement = self.sql.get_many()
        with self._read() as conn:
            for start in range(0, len(keys), 500):
                wanted = self.sql.dialect.array(list(keys[start : start + 500]))
                out += [row_to_link(r) for r in conn.execute(statement, (wanted,)).fetchall()]
        return out

    def audit(self, key: str) -> list[dict[str, Any]]:
        """The change history of one link, oldest first."""
        with self._read() as conn:
            rows = conn.execute(self.sql.audit, (key,)).fetchall()
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
        with self._read() as conn:
            row = conn.execute(self.sql.token_owner, (token_hash,)).fetchone()
        return None if row is None else (str(row[0]), row[1] is not None)

    def revoke_token(self, token_hash: str, owner: str, now: float) -> bool:
        """Revoke a token (one conditional upsert); False if it was revoked already."""
        with self._write() as conn:
            return conn.execute(self.sql.revoke_token, (token_hash, owner, now, now)).rowcount == 1

    def rotate_token(self, old_hash: str, new_hash: str, owner: str, now: float) -> bool:
        """Revoke ``old_hash`` and record ``new_hash`` for ``owner``, in one transaction
        (the conditional upsert's row lock makes exactly one concurrent rotation win)."""
        with self._transaction() as conn:
            if conn.execute(self.sql.revoke_token, (old_hash, owner, now, now)).rowcount != 1:
                return False
            conn.execute(self.sql.record_token, (new_hash, owner, now))
            return True

    # -- the cache tier's outbox (kit.cache.InvalidationOutbox) ------------------------

    def defer_invalidations(self, keys: Sequence[str]) -> None:
        """Keep ``keys`` for the cache tier to invalidate once Redis is reachable."""
        now = self.clock()
        with self._transaction() as conn:
            executemany(conn, self.sql.defer, [(k, now) for k in keys])

    def deferred_invalidations(self, limit: int) -> list[tuple[int, str]]:
        """Up to ``limit`` kept invalidations, oldest first."""
        with self._read() as conn:
            rows = conn.execute(self.sql.deferred, (limit,)).fetchall()
        return [(int(i), str(k)) for i, k in rows]

    def forget_invalidations(self, ids: Sequence[int]) -> None:
        """Drop the kept invalidations ``ids`` (sent)."""
        if not ids:
            return
        with self._write() as conn:
            conn.execute(self.sql.forget, (self.sql.dialect.array(list(ids)),))

    def ping(self) -> None:
        """Fail loudly if the database cannot be reached (for health checks)."""
        with self._read() as conn:
            conn.execute(self.sql.ping).fetchall()

    def counts(self) -> dict[str, int]:
        """How many keys are in each status."""
        with self._read() as conn:
            rows = conn.execute(self.sql.counts).fetchall()
        out = {s.value: 0 for s in Status}
        out.update({r[0]: int(r[1]) for r in rows})
        return out
