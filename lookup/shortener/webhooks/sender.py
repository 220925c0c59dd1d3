"""The background sender: outbox → deliveries (clicks batched) → signed POSTs with retries.

One round (:meth:`WebhookSender.round`, a :class:`~lookup.kit.background.BackgroundTask`
every ``poll_s``) does two things, both safe with several processes on one store:

1. **batch** — for each endpoint, each non-click event becomes a delivery of its own (its
   id derived from the endpoint's and the event's); clicks wait until ``batch_size`` of
   them are there or the oldest is ``batch_interval_s`` old, then up to ``batch_size`` go
   out in one delivery. A delivery is made and its events leave the outbox in one
   transaction.
2. **send** — due deliveries are claimed (one sender each; the attempt counted and a lease
   taken), POSTed, and the outcome recorded: 2xx is ``delivered``; anything else (a
   timeout, a refused address, a redirect — never followed — or another status) is
   retried after an exponential back-off with jitter, until ``max_attempts``, then
   ``failed``. A sender killed mid-POST leaves the delivery claimed; it comes due again
   when the lease ends, so every event is delivered at least once (receivers drop repeats
   by ``id``).

Every POST goes through the :class:`AddressGuard`: the URL is checked as link destinations
are (:meth:`~lookup.shortener.urls.UrlPolicy.check`: private and reserved addresses in any
spelling, this server, the blocklist), its name resolved and every answer checked, and the
connection made to the checked address (``Host`` and TLS name kept), so a DNS answer that
changes between the check and the connection cannot lead it inside.
"""

from __future__ import annotations

import hashlib
import ipaddress
import logging
import random
import secrets
import time
from collections.abc import Callable
from typing import Any

import httpx

from lookup.shortener.urls import UrlPolicy, UrlRejected, system_resolver
from lookup.shortener.webhooks import CLICKED, Delivery, Endpoint, WebhookStore
from lookup.shortener.webhooks.options import SenderOptions
from lookup.shortener.webhooks.signing import (
    DELIVERY_HEADER,
    EVENT_HEADER,
    SIGNATURE_HEADER,
    TIMESTAMP_HEADER,
    body_of,
    signature,
)

__all__ = ["AddressGuard", "WebhookSender", "backoff_s", "delivery_id"]

log = logging.getLogger("lookup.shortener.webhooks")

#: Longest error text kept in the log.
MAX_ERROR = 300


def backoff_s(attempt: int, base_s: float, cap_s: float, rand: Callable[[], float]) -> float:
    """The wait after failed attempt ``attempt`` (1, 2, …): ``base·2^(attempt-1)``, capped,
    with "equal jitter" — half of it fixed, half random — so retries of many deliveries
    spread out, yet none comes back sooner than half the nominal wait."""
    nominal = min(cap_s, base_s * 2 ** min(attempt - 1, 40))
    return nominal / 2 + rand() * nominal / 2


def delivery_id(endpoint_id: str, event_id: str) -> str:
    """The id of the delivery of one event to one endpoint: the same in every sender, so
    two that batch the same event race on one row (the envelope keeps the event's id)."""
    digest = hashlib.sha256(f"{endpoint_id}\x00{event_id}".encode()).hexdigest()
    return "dlv_" + digest[:24]


class AddressGuard:
    """The SSRF check of a webhook URL, at registration and before every POST."""

    def __init__(self, urls: UrlPolicy, resolve: Callable[[str], list[str]] | None = None) -> None:
        self.urls = urls
        self.resolve = resolve or system_resolver

    def check(self, url: str) -> str:
        """The normalised URL, or :class:`~lookup.shortener.urls.UrlRejected`."""
        return self.urls.check(url)

    def pinned(self, url: str) -> tuple[httpx.URL, dict[str, str], dict[str, Any]]:
        """Where to connect for ``url`` now: the URL with a checked address for its host,
        the ``Host`` header and httpx extensions (the TLS name); UrlRejected when the URL
        or any address its name has now is refused."""
        checked = httpx.URL(self.urls.check(url))
        host = checked.host
        try:
            ipaddress.ip_address(host)
            literal = True
        except ValueError:
            literal = False
        if literal or host == "localhost" or host.endswith(".localhost"):
            return checked, {}, {}
        answers = self.resolve(host)
        if not answers:
            raise UrlRejected("UNRESOLVABLE", f"{host} does not resolve")
        why = self.urls.addresses.refusal_of_answers(host, answers)
        if why is not None:
            raise UrlRejected("PRIVATE_ADDRESS", f"{host} resolves to a {why} address")
        address = answers[0]
        host_header = host if checked.port is None else f"{host}:{checked.port}"
        extensions = {"sni_hostname": host} if checked.scheme == "https" else {}
        return checked.copy_with(host=address), {"Host": host_header}, extensions


class WebhookSender:
    """Batching and delivery (see the module docstring); one per process."""

    def __init__(
        self,
        store: WebhookStore,
        guard: AddressGuard,
        endpoints: Callable[[], list[Endpoint]],
        *,
        options: SenderOptions | None = None,
        clock: Callable[[], float] = time.time,
        rand: Callable[[], float] = random.random,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.store = store
        self.guard = guard
        self.endpoints = endpoints
        self.options = options or SenderOptions()
        self.clock = clock
        self.rand = rand
        self._transport = transport
        self._client: httpx.Client | None = None
        self.sent = 0
        self.delivered = 0
        self.retried = 0
        self.failed = 0

    def _http(self) -> httpx.Client:
        if self._client is None:
            self._client = httpx.Client(
                timeout=self.options.timeout_s,
                follow_redirects=False,
                trust_env=False,  # never through a proxy from the environment
                transport=self._transport,
                headers={"User-Agent": "lookup-webhooks/1", "Content-Type": "application/json"},
            )
        return self._client

    def close(self) -> None:
        """Close the HTTP connections."""
        if self._client is not None:
            self._client.close()
            self._client = None

    # -- one round ---------------------------------------------------------------------

    def round(self) -> int:
        """Batch, then send what is due; returns how many POSTs were made (a full claim
        makes the background loop go again at once)."""
        endpoints = self.endpoints()
        if not endpoints:
            return 0
        now = self.clock()
        for endpoint in endpoints:
            self.batch(endpoint, now)
        return self.send_due({e.id: e for e in endpoints})

    def batch(self, endpoint: Endpoint, now: float) -> int:
        """Turn an endpoint's outbox into deliveries; returns how many were made."""
        opts = self.options
        events = self.store.pending_events(endpoint.id, max(opts.batch_size * 4, 100))
        made = 0
        clicks = []
        for e in events:
            if e.event == CLICKED:
                clicks.append(e)
                continue
            ident = delivery_id(endpoint.id, e.event_id)
            delivery = Delivery.new(ident, endpoint.id, e.event, e.payload, 1, now)
            made += self.store.make_delivery(delivery, [e.event_id])
        while clicks and (
            len(clicks) >= opts.batch_size or now - clicks[0].created_at >= opts.batch_interval_s
        ):
            chunk, clicks = clicks[: opts.batch_size], clicks[opts.batch_size :]
            ident = "dlv_" + secrets.token_hex(12)
            envelope = {
                "id": ident,
                "event": CLICKED,
                "createdAt": chunk[0].payload.get("timestamp"),
                "data": {"clicks": [e.payload for e in chunk]},
            }
            delivery = Delivery.new(ident, endpoint.id, CLICKED, envelope, len(chunk), now)
            made += self.store.make_delivery(delivery, [e.event_id for e in chunk])
        return made

    def send_due(self, endpoints: dict[str, Endpoint]) -> int:
        """Claim due deliveries one at a time (so none waits out its lease in this
        sender's queue while another could send it) and POST each, up to ``claim_limit``
        a round; returns how many were tried when the limit was reached, else 0."""
        opts = self.options
        tried = 0
        while tried < opts.claim_limit:
            claimed = self.store.claim_due(self.clock(), lease_s=opts.lease_s, limit=1)
            if not claimed:
                return 0
            delivery = claimed[0]
            tried += 1
            endpoint = endpoints.get(delivery.endpoint_id) or self.store.endpoint(
                delivery.endpoint_id
            )
            if endpoint is None:  # removed a moment ago: its log went with it
                continue
            self._attempt(endpoint, delivery)
        return tried

    def _attempt(self, endpoint: Endpoint, delivery: Delivery) -> None:
        code, error = self.post(endpoint, delivery)
        now = self.clock()
        self.sent += 1
        if error is None:
            self.delivered += 1
            self.store.record_attempt(
                delivery.id, now=now, state="delivered", code=code, error=None
            )
            return
        if delivery.attempts >= self.options.max_attempts:
            self.failed += 1
            self.store.record_attempt(delivery.id, now=now, state="failed", code=code, error=error)
            return
        self.retried += 1
        wait = backoff_s(
            delivery.attempts, self.options.backoff_base_s, self.options.backoff_cap_s, self.rand
        )
        self.store.record_attempt(
            delivery.id, now=now, state="pending", code=code, error=error, next_at=now + wait
        )

    def post(self, endpoint: Endpoint, delivery: Delivery) -> tuple[int | None, str | None]:
        """One signed POST: ``(status code or None, error or None)``."""
        stamp = int(self.clock())
        body = body_of(delivery.payload, stamp)
        try:
            url, host, extensions = self.guard.pinned(endpoint.url)
        except UrlRejected as exc:
            return None, f"refused: {exc.message}"[:MAX_ERROR]
        headers = {
            **host,
            SIGNATURE_HEADER: signature(endpoint.secret, body),
            TIMESTAMP_HEADER: str(stamp),
            EVENT_HEADER: delivery.event,
            DELIVERY_HEADER: delivery.id,
        }
        try:
            response = self._http().post(url, content=body, headers=headers, extensions=extensions)
        except httpx.TimeoutException:
            return None, f"timed out after {self.options.timeout_s:g} s"
        except httpx.HTTPError as exc:
            return None, f"{type(exc).__name__}: {exc}"[:MAX_ERROR]
        code = response.status_code
        if 200 <= code < 300:
            return code, None
        if 300 <= code < 400:
            return code, f"HTTP {code}: redirects are not followed"
        return code, f"HTTP {code}"

    def stats(self) -> dict[str, int]:
        """POSTs made, delivered, retried and given up by this process."""
        return {
            "sent": self.sent,
            "delivered": self.delivered,
            "retried": self.retried,
            "failed": self.failed,
        }
