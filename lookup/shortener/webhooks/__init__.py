"""Webhooks: signed POSTs to endpoints an admin registers, when links change or are clicked.

This package is a seam, like :mod:`lookup.shortener.links`. Its ``__init__`` is the port
and imports no backend:

* the records — :class:`Endpoint` (URL, secret, events), :class:`OutboxEvent` (an event
  waiting for one endpoint) and :class:`Delivery` (one POST's worth of events and its
  log: state, attempts, last error, response code);
* :class:`WebhookStore`, the operations; three tables of their own (endpoints, outbox,
  deliveries) next to the links — never a column of the ``links`` table;
* :data:`BACKENDS` and :func:`open_webhook_store`, which imports the backend a URL names.

The backends: :mod:`.sqlite` (embedded, in the link store's file) and :mod:`.postgres`
(the fleet's database), both thin over :mod:`.sql`. The parts that use the store —
:mod:`.hub` (registration, events into the outbox), :mod:`.sender` (batching, signed
delivery with retries), :mod:`.signing`, :mod:`.api` (the admin routes) — are imported
where they are wired (:mod:`lookup.shortener.app`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeAlias, cast, runtime_checkable

from lookup.kit.registry import Backend as SeamBackend
from lookup.kit.registry import load_backend, open_backend

__all__ = [
    "BACKENDS",
    "CLICKED",
    "DELIVERY_STATES",
    "EVENTS",
    "Backend",
    "Delivery",
    "Endpoint",
    "OutboxEvent",
    "WebhookStore",
    "backend",
    "open_webhook_store",
]

#: Each URL scheme and the class that serves it, imported when a URL names the scheme.
BACKENDS: dict[str, str] = {
    "sqlite": "lookup.shortener.webhooks.sqlite:SqliteWebhookStore",
    "postgresql": "lookup.shortener.webhooks.postgres:PostgresWebhookStore",
}

#: The events an endpoint may ask for (Dub's names).
CLICKED = "link.clicked"
EVENTS = ("link.created", "link.updated", "link.deleted", CLICKED)
#: A delivery waits (``pending``, also between retries), or ended ``delivered`` or ``failed``.
DELIVERY_STATES = ("pending", "delivered", "failed")


@dataclass(frozen=True)
class Endpoint:
    """A registered receiver: where to POST, the HMAC secret, and which events it wants."""

    id: str
    url: str
    secret: str
    events: tuple[str, ...]
    description: str
    created_at: float


@dataclass(frozen=True)
class OutboxEvent:
    """One event waiting to be put into a delivery for one endpoint.

    ``event_id`` is the event's own id (the same for every endpoint; a click's is the
    click log's event id), so a receiver can drop a repeat.
    """

    endpoint_id: str
    event_id: str
    event: str
    payload: dict[str, Any]
    created_at: float


@dataclass(frozen=True)
class Delivery:
    """One POST to one endpoint (one event, or a batch of clicks) and what became of it."""

    id: str
    endpoint_id: str
    event: str
    #: The JSON envelope sent (without the per-attempt timestamp).
    payload: dict[str, Any]
    events: int
    state: str
    attempts: int
    next_attempt_at: float
    last_error: str | None
    response_code: int | None
    created_at: float
    updated_at: float
    delivered_at: float | None = field(default=None)

    @classmethod
    def new(
        cls,
        ident: str,
        endpoint_id: str,
        event: str,
        payload: dict[str, Any],
        events: int,
        now: float,
    ) -> Delivery:
        """A delivery due now, never tried."""
        return cls(
            ident, endpoint_id, event, payload, events, "pending", 0, now, None, None, now, now
        )


@runtime_checkable
class WebhookStore(Protocol):
    """What the registration API and the sender need of the store.

    Implementations must take an event once per endpoint however often it is offered
    (:meth:`enqueue`), turn an outbox batch into a delivery exactly once among racing
    senders (:meth:`make_delivery`), and hand a due delivery to exactly one sender
    (:meth:`claim_due`), counting the attempt at the claim.
    """

    def add_endpoint(self, endpoint: Endpoint) -> None:
        """Keep a new endpoint."""
        ...

    def endpoints(self) -> list[Endpoint]:
        """Every endpoint, oldest first."""
        ...

    def endpoint(self, ident: str) -> Endpoint | None:
        """One endpoint, or None."""
        ...

    def remove_endpoint(self, ident: str) -> bool:
        """Drop an endpoint with its outbox and delivery log; False if it was not there."""
        ...

    def enqueue(self, events: Sequence[OutboxEvent]) -> int:
        """Add events to the outbox, skipping ``(endpoint, event id)`` pairs already
        there; returns how many were new."""
        ...

    def pending_events(self, endpoint_id: str, limit: int) -> list[OutboxEvent]:
        """Up to ``limit`` of an endpoint's outbox events, oldest first."""
        ...

    def make_delivery(self, delivery: Delivery, event_ids: Sequence[str]) -> bool:
        """In one transaction: store ``delivery`` and take ``event_ids`` out of its
        endpoint's outbox. False (and nothing changed) when another sender got there first."""
        ...

    def claim_due(self, now: float, *, lease_s: float, limit: int) -> list[Delivery]:
        """Pending deliveries due at ``now``, each claimed for this caller alone: its
        attempts counted and its next attempt put ``lease_s`` ahead (a sender that dies
        mid-POST leaves it due again then)."""
        ...

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
        """What the last attempt of a delivery gave: its new state, the response code,
        the error (None on success), and when to try again (``pending`` only)."""
        ...

    def deliveries(self, endpoint_id: str, limit: int, state: str | None = None) -> list[Delivery]:
        """An endpoint's delivery log, newest first."""
        ...

    def counts(self) -> dict[str, int]:
        """Endpoints, outbox events, and deliveries by state."""
        ...

    def close(self) -> None:
        """Release connections; a later call reopens them."""
        ...


#: What :data:`BACKENDS` names: a class whose ``from_url(url, **options)`` opens a store.
Backend: TypeAlias = SeamBackend[WebhookStore]


def backend(scheme: str) -> Backend:
    """The class registered for ``scheme``, imported now."""
    return cast(Backend, load_backend(BACKENDS, scheme))


def open_webhook_store(url: str, **options: Any) -> WebhookStore:
    """The webhook store a URL names: ``sqlite:///path`` (the link store's file) or
    ``postgresql://…`` (the fleet's database); ValueError for another scheme."""
    return cast(WebhookStore, open_backend(BACKENDS, url, **options))
