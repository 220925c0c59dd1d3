"""The webhook store's statements, written once for SQLite and PostgreSQL, and its operations.

Three tables of their own: ``webhook_endpoints``, ``webhook_outbox`` (events not yet in a
delivery, unique per endpoint and event id) and ``webhook_deliveries`` (one POST each,
with its log). The backends say how to connect (:meth:`SqlWebhookStore._read`,
:meth:`_transaction`) and how their dialect spells a few things (:class:`WebhookDialect`).
No driver is imported here.

Every decision two senders could race on is one conditional write: an outbox insert
``ON CONFLICT DO NOTHING``; a delivery made by inserting it and deleting exactly its
events in one transaction (a short count rolls it back); a claim by one ``UPDATE …
RETURNING`` whose ``WHERE`` still holds only for the first (PostgreSQL re-checks it on the
row a concurrent claimer changed, and skips rows locked by another claim).
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Protocol

from lookup.shortener.webhooks import Delivery, Endpoint, OutboxEvent

__all__ = ["Connection", "SqlWebhookStore", "WebhookDialect", "schema"]


class Connection(Protocol):
    """What the operations need of a DB-API connection (sqlite3 and psycopg alike)."""

    def execute(self, sql: Any, params: Any = ...) -> Any: ...

    def cursor(self) -> Any: ...


@dataclass(frozen=True)
class WebhookDialect:
    """How one engine spells the few things that differ."""

    name: str
    serial: str
    real: str
    #: Placeholder of the driver (``?`` for sqlite3, ``%s`` for psycopg).
    placeholder: str
    #: Appended to the claim's inner ``SELECT`` (row locks on PostgreSQL).
    skip_locked: str


def schema(d: WebhookDialect) -> str:
    """The tables and indexes, ``IF NOT EXISTS``."""
    return f"""
CREATE TABLE IF NOT EXISTS webhook_endpoints (
    id TEXT PRIMARY KEY,
    url TEXT NOT NULL,
    secret TEXT NOT NULL,
    events TEXT NOT NULL,
    description TEXT NOT NULL DEFAULT '',
    created_at {d.real} NOT NULL
);
CREATE TABLE IF NOT EXISTS webhook_outbox (
    seq {d.serial},
    endpoint_id TEXT NOT NULL,
    event_id TEXT NOT NULL,
    event TEXT NOT NULL,
    payload TEXT NOT NULL,
    created_at {d.real} NOT NULL,
    UNIQUE (endpoint_id, event_id)
);
CREATE INDEX IF NOT EXISTS webhook_outbox_due ON webhook_outbox (endpoint_id, created_at, seq);
CREATE TABLE IF NOT EXISTS webhook_deliveries (
    id TEXT PRIMARY KEY,
    endpoint_id TEXT NOT NULL,
    event TEXT NOT NULL,
    payload TEXT NOT NULL,
    events INTEGER NOT NULL,
    state TEXT NOT NULL,
    attempts INTEGER NOT NULL,
    next_attempt_at {d.real} NOT NULL,
    last_error TEXT,
    response_code INTEGER,
    created_at {d.real} NOT NULL,
    updated_at {d.real} NOT NULL,
    delivered_at {d.real}
);
CREATE INDEX IF NOT EXISTS webhook_deliveries_due ON webhook_deliveries (state, next_attempt_at);
CREATE INDEX IF NOT EXISTS webhook_deliveries_log
    ON webhook_deliveries (endpoint_id, created_at);
"""


_DELIVERY_COLUMNS = (
    "id, endpoint_id, event, payload, events, state, attempts, next_attempt_at, "
    "last_error, response_code, created_at, updated_at, delivered_at"
)


class _Lost(Exception):
    """Another sender took the events first: roll the delivery back."""


def _delivery(row: Sequence[Any]) -> Delivery:
    return Delivery(
        id=row[0],
        endpoint_id=row[1],
        event=row[2],
        payload=json.loads(row[3]),
        events=int(row[4]),
        state=row[5],
        attempts=int(row[6]),
        next_attempt_at=float(row[7]),
        last_error=row[8],
        response_code=None if row[9] is None else int(row[9]),
        created_at=float(row[10]),
        updated_at=float(row[11]),
        delivered_at=None if row[12] is None else float(row[12]),
    )


def _endpoint(row: Sequence[Any]) -> Endpoint:
    return Endpoint(
        id=row[0],
        url=row[1],
        secret=row[2],
        events=tuple(json.loads(row[3])),
        description=row[4],
        created_at=float(row[5]),
    )


def _chunks(items: Sequence[str], size: int = 500) -> Iterator[Sequence[str]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]


class SqlWebhookStore(ABC):
    """The operations of :class:`~lookup.shortener.webhooks.WebhookStore` over SQL."""

    dialect: WebhookDialect

    # -- what a backend provides -------------------------------------------------------

    @abstractmethod
    def _read(self) -> AbstractContextManager[Connection]:
        """A connection for reads."""

    @abstractmethod
    def _transaction(self) -> AbstractContextManager[Connection]:
        """A connection inside one write transaction, committed on leaving."""

    @abstractmethod
    def close(self) -> None:
        """Release connections (a backend's)."""

    def _q(self, sql: str) -> str:
        return sql if self.dialect.placeholder == "?" else sql.replace("?", "%s")

    # -- endpoints ---------------------------------------------------------------------

    def add_endpoint(self, endpoint: Endpoint) -> None:
        """Keep a new endpoint."""
        with self._transaction() as conn:
            conn.execute(
                self._q(
                    "INSERT INTO webhook_endpoints (id, url, secret, events, description, "
                    "created_at) VALUES (?, ?, ?, ?, ?, ?)"
                ),
                (
                    endpoint.id,
                    endpoint.url,
                    endpoint.secret,
                    json.dumps(list(endpoint.events)),
                    endpoint.description,
                    endpoint.created_at,
                ),
            )

    def endpoints(self) -> list[Endpoint]:
        """Every endpoint, oldest first."""
        with self._read() as conn:
            rows = conn.execute(
                "SELECT id, url, secret, events, description, created_at FROM webhook_endpoints "
                "ORDER BY created_at, id"
            ).fetchall()
        return [_endpoint(row) for row in rows]

    def endpoint(self, ident: str) -> Endpoint | None:
        """One endpoint, or None."""
        with self._read() as conn:
            row = conn.execute(
                self._q(
                    "SELECT id, url, secret, events, description, created_at "
                    "FROM webhook_endpoints WHERE id = ?"
                ),
                (ident,),
            ).fetchone()
        return None if row is None else _endpoint(row)

    def remove_endpoint(self, ident: str) -> bool:
        """Drop an endpoint, its outbox and its delivery log in one transaction."""
        with self._transaction() as conn:
            gone = conn.execute(self._q("DELETE FROM webhook_endpoints WHERE id = ?"), (ident,))
            conn.execute(self._q("DELETE FROM webhook_outbox WHERE endpoint_id = ?"), (ident,))
            conn.execute(self._q("DELETE FROM webhook_deliveries WHERE endpoint_id = ?"), (ident,))
            return bool(gone.rowcount)

    # -- the outbox --------------------------------------------------------------------

    def enqueue(self, events: Sequence[OutboxEvent]) -> int:
        """Add events, skipping pairs already there; returns how many were new."""
        if not events:
            return 0
        sql = self._q(
            "INSERT INTO webhook_outbox (endpoint_id, event_id, event, payload, created_at) "
            "VALUES (?, ?, ?, ?, ?) ON CONFLICT (endpoint_id, event_id) DO NOTHING"
        )
        rows = [
            (e.endpoint_id, e.event_id, e.event, json.dumps(e.payload), e.created_at)
            for e in events
        ]
        with self._transaction() as conn:
            cur = conn.cursor()
            cur.executemany(sql, rows)  # one call for a shipped batch of clicks
            return max(int(cur.rowcount), 0)

    def pending_events(self, endpoint_id: str, limit: int) -> list[OutboxEvent]:
        """Up to ``limit`` of an endpoint's outbox events, oldest first."""
        with self._read() as conn:
            rows = conn.execute(
                self._q(
                    "SELECT endpoint_id, event_id, event, payload, created_at FROM webhook_outbox "
                    "WHERE endpoint_id = ? ORDER BY created_at, seq LIMIT ?"
                ),
                (endpoint_id, limit),
            ).fetchall()
        return [OutboxEvent(r[0], r[1], r[2], json.loads(r[3]), float(r[4])) for r in rows]

    def make_delivery(self, delivery: Delivery, event_ids: Sequence[str]) -> bool:
        """Store ``delivery`` and take exactly ``event_ids`` out of the outbox, or nothing."""
        wanted = list(dict.fromkeys(event_ids))
        d = delivery
        try:
            with self._transaction() as conn:
                cur = conn.execute(
                    self._q(
                        f"INSERT INTO webhook_deliveries ({_DELIVERY_COLUMNS}) VALUES "
                        "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING"
                    ),
                    (
                        d.id,
                        d.endpoint_id,
                        d.event,
                        json.dumps(d.payload, separators=(",", ":")),
                        d.events,
                        d.state,
                        d.attempts,
                        d.next_attempt_at,
                        d.last_error,
                        d.response_code,
                        d.created_at,
                        d.updated_at,
                        d.delivered_at,
                    ),
                )
                if cur.rowcount != 1:
                    raise _Lost
                taken = 0
                for chunk in _chunks(wanted):
                    marks = ", ".join("?" * len(chunk))
                    cur = conn.execute(
                        self._q(
                            "DELETE FROM webhook_outbox WHERE endpoint_id = ? "
                            f"AND event_id IN ({marks})"
                        ),
                        (d.endpoint_id, *chunk),
                    )
                    taken += cur.rowcount
                if taken != len(wanted):
                    raise _Lost
        except _Lost:
            return False
        return True

    # -- deliveries --------------------------------------------------------------------

    def claim_due(self, now: float, *, lease_s: float, limit: int) -> list[Delivery]:
        """Due pending deliveries, claimed for this caller alone (see the module docstring)."""
        with self._read() as conn:  # nothing due (the usual poll): no write transaction
            due = conn.execute(
                self._q(
                    "SELECT 1 FROM webhook_deliveries WHERE state = 'pending' "
                    "AND next_attempt_at <= ? LIMIT 1"
                ),
                (now,),
            ).fetchone()
        if due is None:
            return []
        with self._transaction() as conn:
            rows = conn.execute(
                self._q(
                    "UPDATE webhook_deliveries SET attempts = attempts + 1, "
                    "next_attempt_at = ?, updated_at = ? "
                    "WHERE state = 'pending' AND next_attempt_at <= ? AND id IN ("
                    "SELECT id FROM webhook_deliveries WHERE state = 'pending' "
                    "AND next_attempt_at <= ? ORDER BY next_attempt_at LIMIT ?"
                    f"{self.dialect.skip_locked}) RETURNING {_DELIVERY_COLUMNS}"
                ),
                (now + lease_s, now, now, now, limit),
            ).fetchall()
        return sorted((_delivery(row) for row in rows), key=lambda d: (d.created_at, d.id))

    def record_attempt(
        self,
        ident: str,
        *,
        now: float,
        state: str,
        code: int | None,
        error: str | None,
        next_at: float | None = None,
    ) -> None:
        """The outcome of a delivery's last attempt."""
        with self._transaction() as conn:
            conn.execute(
                self._q(
                    "UPDATE webhook_deliveries SET state = ?, response_code = ?, last_error = ?, "
                    "next_attempt_at = ?, updated_at = ?, delivered_at = ? WHERE id = ?"
                ),
                (
                    state,
                    code,
                    error,
                    now if next_at is None else next_at,
                    now,
                    now if state == "delivered" else None,
                    ident,
                ),
            )

    def deliveries(self, endpoint_id: str, limit: int, state: str | None = None) -> list[Delivery]:
        """An endpoint's delivery log, newest first."""
        where = "endpoint_id = ?" + (" AND state = ?" if state else "")
        params: tuple[Any, ...] = (endpoint_id, state) if state else (endpoint_id,)
        with self._read() as conn:
            rows = conn.execute(
                self._q(
                    f"SELECT {_DELIVERY_COLUMNS} FROM webhook_deliveries WHERE {where} "
                    "ORDER BY created_at DESC, id DESC LIMIT ?"
                ),
                (*params, limit),
            ).fetchall()
        return [_delivery(row) for row in rows]

    def counts(self) -> dict[str, int]:
        """Endpoints, outbox events, and deliveries by state."""
        out = {"endpoints": 0, "outbox": 0, "pending": 0, "delivered": 0, "failed": 0}
        with self._read() as conn:
            out["endpoints"] = int(
                conn.execute("SELECT COUNT(*) FROM webhook_endpoints").fetchone()[0]
            )
            out["outbox"] = int(conn.execute("SELECT COUNT(*) FROM webhook_outbox").fetchone()[0])
            for state, n in conn.execute(
                "SELECT state, COUNT(*) FROM webhook_deliveries GROUP BY state"
            ).fetchall():
                out[state] = int(n)
        return out
