"""How uvicorn serves the API, decided in one place: proxy trust, header and body limits,
read timeouts, and the JSON errors uvicorn itself answers.

Every command that serves the API with uvicorn (``lookup serve``, which ``lookup up`` and
the fleet start; ``lookup typeahead serve-shards`` and its shard servers) passes
:func:`uvicorn_options`. What they set and why:

* **Proxy trust.** uvicorn rewrites the client address from ``X-Forwarded-For`` for any
  loopback peer by default, which let any local client (or a proxy that appends) choose its
  rate-limit identity. Here ``proxy_headers`` and ``forwarded_allow_ips`` follow the one
  setting ``LOOKUP_TRUST_FORWARDED_FOR`` (default: no proxy), as ``kit/clients.py`` does.
* **Request heads.** uvicorn picks httptools (llhttp), which has no size limit and no read
  timeout: a 200 MB header was buffered, and a slow-drip connection stayed open for ever.
  :class:`HttpProtocol` — uvicorn's own httptools protocol, named by uvicorn's documented
  ``http=`` option, not a patch — refuses a head over ``LOOKUP_HTTP_MAX_HEADER_BYTES`` with
  431, and closes a connection whose head does not arrive within
  ``LOOKUP_HTTP_HEADER_TIMEOUT`` or whose body does not within ``LOOKUP_HTTP_BODY_TIMEOUT``
  (408). uvicorn's own 400 for a request it cannot parse is the project's JSON error.
  After refusing, the connection lingers a moment reading and discarding what the client
  still sends (as nginx's ``lingering_close``), so the client reads the answer instead of a
  reset.

``uvicorn --factory lookup.server:app_factory`` runs with uvicorn's options, not these:
add ``--http lookup.kit.serving:HttpProtocol`` for the limits (the factory itself checks
the proxy and bind options it can see, see ``lookup/server.py``).
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from lookup import settings
from lookup.kit.http import error_body

#: Seconds a refused connection keeps reading (and discarding) before it closes.
LINGER_S = 2.0


def uvicorn_options() -> dict[str, Any]:
    """Keyword arguments for ``uvicorn.run`` / ``uvicorn.Config`` from the settings."""
    trusted: tuple[str, ...] = settings.get("trust_forwarded_for")
    return {
        "http": HttpProtocol,
        "proxy_headers": bool(trusted),
        "forwarded_allow_ips": ",".join(trusted) if trusted else "",
        "timeout_keep_alive": settings.get("http_keep_alive"),
    }


@dataclass(frozen=True)
class Limits:
    """What a connection may send, and how slowly (from the settings)."""

    max_header_bytes: int
    header_timeout_s: float
    body_timeout_s: float

    @classmethod
    def from_settings(cls) -> Limits:
        """The limits the ``LOOKUP_HTTP_*`` settings name."""
        return cls(
            settings.get("http_max_header_bytes"),
            settings.get("http_header_timeout"),
            settings.get("http_body_timeout"),
        )


def raw_error(status: int, code: str, message: str) -> bytes:
    """A whole HTTP/1.1 error response with the app-wide JSON body, ``Connection: close``."""
    from http import HTTPStatus

    body = json.dumps(error_body(status, code, message)).encode()
    head = (
        f"HTTP/1.1 {status} {HTTPStatus(status).phrase}\r\n"
        "content-type: application/json\r\n"
        f"content-length: {len(body)}\r\n"
        "connection: close\r\n\r\n"
    )
    return head.encode("ascii") + body


async def send_error(send: Any, status: int, code: str, message: str) -> None:
    """Answer an ASGI request from middleware with the app-wide JSON error."""
    body = json.dumps(error_body(status, code, message)).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class PublicBindGuard:
    """ASGI middleware for a server whose bind address it was not told (the app factory
    under ``uvicorn --workers``, ``uvicorn.run(..., factory=True)``): without an admin token
    configured, a request that arrived on a non-loopback local address (the ``server`` of
    its scope) gets 503 — the check ``lookup serve`` makes before it binds, made per address."""

    def __init__(self, app: Any, admin_token: str) -> None:
        self.app = app
        self.admin_token = admin_token
        self._verdicts: dict[str, bool] = {}

    def _allowed(self, scope: dict[str, Any]) -> bool:
        server = scope.get("server")
        if self.admin_token or not server:
            return True  # a token is configured, or a unix socket
        host = str(server[0])
        verdict = self._verdicts.get(host)
        if verdict is None:
            from lookup.kit.admin import is_loopback_host

            verdict = self._verdicts[host] = is_loopback_host(host)
            if not verdict:
                import logging

                logging.getLogger("lookup.server").error(
                    "refusing requests that arrive on %s (not a loopback address): no "
                    "admin token is configured (set LOOKUP_ADMIN_TOKEN)",
                    host,
                )
        return verdict

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] in ("http", "websocket") and not self._allowed(scope):
            if scope["type"] == "websocket":
                await send({"type": "websocket.close", "code": 1008})
                return
            await send_error(
                send,
                503,
                "ADMIN_TOKEN_REQUIRED",
                "this server answers on a public address only with an admin token "
                "configured (LOOKUP_ADMIN_TOKEN); the server log says more",
            )
            return
        await self.app(scope, receive, send)


class HttpProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with a head size limit, head and body read timeouts,
    and JSON for the errors the server answers itself (see the module docstring)."""

    _limits: Limits | None = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if HttpProtocol._limits is None:
            HttpProtocol._limits = Limits.from_settings()
        self.limits = HttpProtocol._limits
        self._in_head = True  # a request head has begun (or the connection is new)
        self._head_bytes = 0
        self._timer: asyncio.TimerHandle | None = None
        self._refused = False

    # -- timers ---------------------------------------------------------------------------

    def _arm(self, seconds: float, callback: Any) -> None:
        self._disarm()
        self._timer = self.loop.call_later(seconds, callback)

    def _disarm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _head_timed_out(self) -> None:
        self._timer = None
        if self._head_bytes == 0 and (self.cycle is None or self.cycle.response_complete):
            self.transport.close()  # nothing asked: close quietly, as an idle keep-alive
            return
        seconds = self.limits.header_timeout_s
        self.refuse(408, "REQUEST_TIMEOUT", f"the request head did not arrive within {seconds:g} s")

    def _body_timed_out(self) -> None:
        self._timer = None
        seconds = self.limits.body_timeout_s
        self.refuse(408, "REQUEST_TIMEOUT", f"the request body did not arrive within {seconds:g} s")

    # -- refusing -------------------------------------------------------------------------

    def refuse(self, status: int, code: str, message: str) -> None:
        """Answer ``status`` with the JSON error (unless a response began), stop reading
        requests, and close after :data:`LINGER_S` of discarding what still arrives."""
        if self._refused or self.transport.is_closing():
            return
        self._refused = True
        self._disarm()
        cycle = self.cycle
        if cycle is None or not cycle.response_started:
            self.transport.write(raw_error(status, code, message))
        if cycle is not None and not cycle.response_complete:
            # the app's receive() now sees a disconnect, and its send() is dropped
            cycle.disconnected = True
            cycle.message_event.set()
        try:
            self.transport.resume_reading()
            if self.transport.can_write_eof():
                self.transport.write_eof()
        except (OSError, RuntimeError):  # pragma: no cover - transport already gone
            pass
        self.loop.call_later(LINGER_S, self.transport.close)

    def send_400_response(self, msg: str) -> None:
        """uvicorn's answer to a request it cannot parse, as the project's JSON error."""
        self.refuse(400, "BAD_REQUEST", msg)

    # -- the protocol ---------------------------------------------------------------------

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm(self.limits.header_timeout_s, self._head_timed_out)

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._refused:
            return  # lingering: discard
        HttpToolsProtocol.data_received(self, data)
        if not self._in_head and self._timer is None:
            # the common case, a whole request in one read: nothing to time (a body still
            # to come is timed below)
            cycle = self.cycle
            if cycle is None or not cycle.more_body or self._refused:
                return
        if self._refused or self.transport.is_closing():
            return
        if self._in_head:
            self._head_bytes += len(data)
            if self._head_bytes > self.limits.max_header_bytes:
                self.refuse(
                    431,
                    "HEADERS_TOO_LARGE",
                    f"the request line and headers are limited to "
                    f"{self.limits.max_header_bytes} bytes",
                )
            elif self._timer is None and self._head_bytes:
                self._arm(self.limits.header_timeout_s, self._head_timed_out)
        elif self.cycle is not None and self.cycle.more_body and self._timer is None:
            self._arm(self.limits.body_timeout_s, self._body_timed_out)

    def on_message_begin(self) -> None:
        HttpToolsProtocol.on_message_begin(self)
        self._in_head = True
        self._head_bytes = 0

    def on_headers_complete(self) -> None:
        self._in_head = False
        self._head_bytes = 0
        if self._timer is not None:
            self._disarm()
        HttpToolsProtocol.on_headers_complete(self)

    def on_message_complete(self) -> None:
        HttpToolsProtocol.on_message_complete(self)
        if self._timer is not None:
            self._disarm()  # until the next head begins, uvicorn's keep-alive timeout applies

    def handle_websocket_upgrade(self) -> None:
        self._disarm()
        super().handle_websocket_upgrade()


__all__ = ["LINGER_S", "HttpProtocol", "Limits", "PublicBindGuard", "raw_error", "uvicorn_options"]
