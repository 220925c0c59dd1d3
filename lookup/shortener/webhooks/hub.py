"""Webhooks wired into the shortener: registration, and events into the outbox.

:class:`Webhooks` is built by the composition root (:mod:`lookup.shortener.app`) and
listens twice, never on the redirect path:

* :meth:`Webhooks.on_link_event` subscribes to the service's link events (``created``,
  ``updated``, ``retargeted``, ``disabled``, ``enabled``, ``deleted``, ``expired``), called
  in the request's worker thread right after the link's commit; it writes one outbox row
  per endpoint that asked for the event before the API answers;
* :meth:`Webhooks.on_clicks` is the click shipper's hook: after a batch of clicks reached
  the click log (in the shipper's thread), the clicks go into the outbox of every endpoint
  that asked for ``link.clicked``, each with the click log's event id.

Both first look at the endpoints (read from the store at most every ``refresh_s``, at once
after a change made here): with none registered, a notification costs one list check
and nothing is written. The :class:`~.sender.WebhookSender` does the rest in its own thread.
"""

from __future__ import annotations

import logging
import re
import secrets
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from typing import Any

from lookup import errors
from lookup.kit.background import BackgroundTask
from lookup.shortener.model import Link, format_time
from lookup.shortener.urls import UrlPolicy, UrlRejected
from lookup.shortener.webhooks import (
    CLICKED,
    DELIVERY_STATES,
    EVENTS,
    Delivery,
    Endpoint,
    OutboxEvent,
    WebhookStore,
    open_webhook_store,
)
from lookup.shortener.webhooks.options import SenderOptions
from lookup.shortener.webhooks.sender import AddressGuard, WebhookSender
from lookup.shortener.webhooks.signing import new_secret

__all__ = ["LINK_EVENTS", "MAX_ENDPOINTS", "Webhooks", "open_webhooks"]

log = logging.getLogger("lookup.shortener.webhooks")

#: The service's link events and the webhook event each becomes (Dub's names).
LINK_EVENTS = {
    "created": "link.created",
    "updated": "link.updated",
    "retargeted": "link.updated",
    "disabled": "link.updated",
    "enabled": "link.updated",
    "deleted": "link.deleted",
    "expired": "link.deleted",
}
#: Endpoints one shortener keeps (each event is written once per endpoint).
MAX_ENDPOINTS = 20
REGISTER_FIELDS = frozenset({"url", "events", "secret", "description"})
_SECRET_SHAPE = re.compile(r"[\x21-\x7e]{16,128}")


def _bad(code: str, message: str) -> errors.InvalidInput:
    return errors.InvalidInput(message, code=code)


class Webhooks:
    """Registration, the outbox writers and the sender of one shortener."""

    def __init__(
        self,
        store: WebhookStore,
        guard: AddressGuard,
        *,
        render: Callable[[Link], dict[str, Any]],
        short_url: Callable[[str], str],
        options: SenderOptions | None = None,
        clock: Callable[[], float] = time.time,
        mono: Callable[[], float] = time.monotonic,
        refresh_s: float = 1.0,
    ) -> None:
        self.store = store
        self.guard = guard
        self.render = render
        self.short_url = short_url
        self.options = options or SenderOptions()
        self.clock = clock
        self.mono = mono
        self.refresh_s = refresh_s
        self.sender = WebhookSender(store, guard, self.endpoints, options=self.options, clock=clock)
        self._cached: tuple[float, list[Endpoint]] | None = None
        #: Bumped by every change made here: a read that overlapped one is not cached.
        self._generation = 0
        self._lock = threading.Lock()
        self._task: BackgroundTask | None = None
        self.queued = 0
        self.write_errors = 0

    # -- endpoints ---------------------------------------------------------------------

    def endpoints(self) -> list[Endpoint]:
        """The registered endpoints, as read from the store at most ``refresh_s`` ago.

        A read that began before a registration here and ended after it (the shipper's
        thread, say) is returned but not cached: caching it would hide the new endpoint
        from this process's next events for up to ``refresh_s``."""
        cached = self._cached
        now = self.mono()
        if cached is not None and now - cached[0] < self.refresh_s:
            return cached[1]
        generation = self._generation
        fresh = self.store.endpoints()
        if generation == self._generation:
            self._cached = (now, fresh)
        return fresh

    def register(self, body: dict[str, Any]) -> Endpoint:
        """Check and keep a new endpoint from a JSON body (``url``; ``events``, default all;
        ``secret``, default a new one; ``description``). Blocking."""
        unknown = set(body) - REGISTER_FIELDS
        if unknown:
            raise _bad(
                "UNKNOWN_FIELD",
                f"unknown field(s): {sorted(unknown)}; accepted: {sorted(REGISTER_FIELDS)}",
            )
        raw_url = body.get("url")
        if raw_url is None:
            raise _bad("INVALID_URL", "url is required")
        try:
            url = self.guard.check(raw_url)
        except UrlRejected as exc:
            raise _bad(exc.code, exc.message.replace("longUrl", "url")) from None
        events = body.get("events", list(EVENTS))
        if (
            not isinstance(events, list)
            or not events
            or not all(isinstance(e, str) and e in EVENTS for e in events)
        ):
            raise _bad("INVALID_EVENTS", f"events must be a non-empty list of {list(EVENTS)}")
        secret = body.get("secret")
        if secret is None:
            secret = new_secret()
        elif not isinstance(secret, str) or not _SECRET_SHAPE.fullmatch(secret):
            raise _bad(
                "INVALID_SECRET", "secret must be 16 to 128 printable ASCII characters, no spaces"
            )
        description = body.get("description", "")
        if not isinstance(description, str) or len(description) > 200:
            raise _bad("INVALID_DESCRIPTION", "description must be text of at most 200 characters")
        with self._lock:
            if len(self.store.endpoints()) >= MAX_ENDPOINTS:
                raise errors.Conflict(
                    f"at most {MAX_ENDPOINTS} webhooks; delete one first", code="TOO_MANY_WEBHOOKS"
                )
            endpoint = Endpoint(
                id="wh_" + secrets.token_hex(8),
                url=url,
                secret=secret,
                events=tuple(e for e in EVENTS if e in events),
                description=description,
                created_at=self.clock(),
            )
            self.store.add_endpoint(endpoint)
            self._generation += 1
            self._cached = None
        return endpoint

    def get(self, ident: str) -> Endpoint:
        """One endpoint; 404 ``WEBHOOK_NOT_FOUND``."""
        endpoint = self.store.endpoint(ident)
        if endpoint is None:
            raise errors.NotFound(f"no webhook has the id {ident!r}", code="WEBHOOK_NOT_FOUND")
        return endpoint

    def remove(self, ident: str) -> None:
        """Delete an endpoint with its outbox and log; 404 if unknown."""
        if not self.store.remove_endpoint(ident):
            raise errors.NotFound(f"no webhook has the id {ident!r}", code="WEBHOOK_NOT_FOUND")
        self._generation += 1
        self._cached = None

    def deliveries(self, ident: str, limit: int, state: str | None) -> list[Delivery]:
        """An endpoint's delivery log, newest first."""
        if state is not None and state not in DELIVERY_STATES:
            raise _bad("INVALID_STATE", f"state must be one of {list(DELIVERY_STATES)}")
        self.get(ident)
        return self.store.deliveries(ident, limit, state)

    # -- events into the outbox -------------------------------------------------------------

    def _subscribed(self, event: str) -> list[Endpoint]:
        return [e for e in self.endpoints() if event in e.events]

    def on_link_event(self, change: str, link: Link) -> None:
        """The service's notification: the event into each subscribed endpoint's outbox."""
        event = LINK_EVENTS.get(change)
        if event is None:
            return
        targets = self._subscribed(event)
        if not targets:
            return
        now = self.clock()
        ident = "evt_" + uuid.uuid4().hex
        envelope = {
            "id": ident,
            "event": event,
            "change": change,
            "createdAt": format_time(now),
            "data": self.render(link),
        }
        self._write([OutboxEvent(e.id, ident, event, envelope, now) for e in targets])

    def on_clicks(self, clicks: Iterable[Any]) -> None:
        """The shipper's hook: a shipped batch of clicks (:class:`~lookup.shortener.
        analytics.events.RawClick` s) into each endpoint that asked for ``link.clicked``."""
        targets = self._subscribed(CLICKED)
        if not targets:
            return
        now = self.clock()
        rows: list[OutboxEvent] = []
        for click in clicks:  # as shipped: no user-agent parsing in the redirect's process
            record = {
                "id": click.event_id,
                "key": click.key,
                "shortUrl": self.short_url(click.key),
                "timestamp": format_time(click.ts),
                "country": click.country,
                "referer": click.referer,
                "userAgent": click.user_agent,
            }
            rows.extend(OutboxEvent(e.id, click.event_id, CLICKED, record, now) for e in targets)
        self._write(rows)

    def _write(self, rows: list[OutboxEvent]) -> None:
        try:
            self.queued += self.store.enqueue(rows)
        except Exception:
            self.write_errors += 1
            raise

    # -- lifecycle ---------------------------------------------------------------------

    def start(self) -> None:
        """Start the sender's loop (idempotent)."""
        if self._task is None:
            self._task = BackgroundTask(
                "webhook-sender", self.sender.round, self.options.poll_s, logger=log, drain=True
            )
        self._task.start()

    def stop(self) -> None:
        """Stop the sender's loop (a POST under way finishes first)."""
        if self._task is not None:
            self._task.stop()

    def close(self) -> None:
        """Stop, and let go of connections."""
        self.stop()
        self.sender.close()
        self.store.close()

    def stats(self) -> dict[str, Any]:
        """Outbox writes and this process's POSTs, and the store's counts."""
        return {
            "queued": self.queued,
            "writeErrors": self.write_errors,
            **self.sender.stats(),
            "store": self.store.counts(),
            "loopErrors": 0 if self._task is None else self._task.failures,
        }


def open_webhooks(
    store_url: str,
    urls: UrlPolicy,
    *,
    render: Callable[[Link], dict[str, Any]],
    short_url: Callable[[str], str],
    options: SenderOptions,
    clock: Callable[[], float] = time.time,
    resolve: Callable[[str], list[str]] | None = None,
) -> Webhooks:
    """Webhooks over the store at ``store_url`` (the links' database), URLs checked by
    ``urls`` — the link destinations' policy, so ``LOOKUP_SHORTENER_ALLOWED_RANGES``
    lets loopback receivers in for tests and nothing else does."""
    return Webhooks(
        open_webhook_store(store_url),
        AddressGuard(urls, resolve),
        render=render,
        short_url=short_url,
        options=options,
        clock=clock,
    )
