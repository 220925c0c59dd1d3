"""Which ``Host`` a request may name: the answer to DNS rebinding and to links that point
the API's short links at somebody else's name.

A server on 127.0.0.1 is not out of a browser's reach: a page on ``evil.example`` can make
its name resolve to 127.0.0.1 a moment later and then read the API as its own origin — the
browser sends ``Host: evil.example``. :class:`HostGuard` answers such a request with
``400 HOST_NOT_ALLOWED`` (the app-wide JSON error) before any route sees it, as Django's
``ALLOWED_HOSTS`` and Starlette's ``TrustedHostMiddleware`` do.

The loopback names (``localhost``, ``*.localhost``, ``127.0.0.0/8``, ``[::1]``) are always
allowed: a rebinding page cannot make a browser send them, and local probes and health
checks use them. Beside them, ``LOOKUP_ALLOWED_HOSTS`` lists names (``sh.example``), a
domain with its subdomains (``.example.com``) and addresses, or ``*`` for any host; empty
(the default) allows the address the server listens on and the host of
``LOOKUP_PUBLIC_URL``. A request without a ``Host`` (HTTP/1.0) carries no name to check
and passes.
"""

from __future__ import annotations

import ipaddress
import logging
from collections.abc import Iterable
from typing import Any
from urllib.parse import urlsplit

from lookup import settings
from lookup.kit.serving import send_error

log = logging.getLogger("lookup.server")


def host_name(header: str) -> str:
    """The name in a ``Host`` header, lower-case, without port or IPv6 brackets
    (``""`` for a header that names nothing valid)."""
    value = header.strip().lower()
    if value.startswith("["):
        end = value.find("]")
        return value[1:end] if end > 0 else ""
    name, _, port = value.partition(":")
    if port and not port.isdigit():
        return ""
    return name.rstrip(".")


def _is_loopback(name: str) -> bool:
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


class AllowedHosts:
    """The names a request's ``Host`` may carry (see the module docstring)."""

    def __init__(self, patterns: Iterable[str]) -> None:
        self.any = False
        self.exact: set[str] = set()
        self.suffixes: list[str] = []
        for raw in patterns:
            pattern = raw.strip().lower()
            if not pattern:
                continue
            if pattern == "*":
                self.any = True
            elif pattern.startswith("."):
                self.suffixes.append(pattern)
            else:
                self.exact.add(host_name(pattern) or pattern)

    @classmethod
    def from_settings(
        cls, bind_host: str | None = None, public_url: str | None = None
    ) -> AllowedHosts:
        """From ``LOOKUP_ALLOWED_HOSTS``; when empty, loopback names, ``bind_host``, the
        host of ``public_url`` (default: ``LOOKUP_PUBLIC_URL``) and the short domains
        (``LOOKUP_SHORTENER_DOMAINS``: names the operator already said this server answers)."""
        configured: tuple[str, ...] = settings.get("allowed_hosts")
        if configured:
            return cls(configured)
        names = [bind_host or ""]
        public = public_url or settings.get("public_url")
        if public:
            names.append(urlsplit(public).hostname or "")
        names += [host_name(domain) for domain in settings.get("shortener_domains")]
        wildcard = {"0.0.0.0", "::", ""}
        return cls([n for n in names if n not in wildcard])

    def allows(self, name: str) -> bool:
        """Whether a request naming ``name`` (from :func:`host_name`) is served."""
        if self.any:
            return True
        if not name:
            return False
        if name in self.exact or _is_loopback(name):
            return True
        return any(name.endswith(s) or name == s[1:] for s in self.suffixes)

    def describe(self) -> str:
        """The rule in words, for the error message and the log."""
        if self.any:
            return "any host"
        return ", ".join(["loopback names", *sorted(self.exact), *(f"*{s}" for s in self.suffixes)])


class HostGuard:
    """ASGI middleware: a request whose ``Host`` is not allowed gets 400 ``HOST_NOT_ALLOWED``
    (a websocket is closed with 1008); each refused name is logged once."""

    def __init__(self, app: Any, allowed: AllowedHosts) -> None:
        self.app = app
        self.allowed = allowed
        self._logged: set[str] = set()
        # raw Host header → allowed: every request asks, and a server hears few names
        self._verdicts: dict[bytes, bool] = {}

    def _allows(self, header: bytes) -> bool:
        verdict = self._verdicts.get(header)
        if verdict is None:
            verdict = self.allowed.allows(host_name(header.decode("latin-1")))
            if len(self._verdicts) < 256:  # names made up by clients are not all kept
                self._verdicts[header] = verdict
        return verdict

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] in ("http", "websocket") and not self.allowed.any:
            for key, header in scope.get("headers", ()):
                if key == b"host":
                    if not self._allows(header):
                        await self._refuse(scope, send, header.decode("latin-1"))
                        return
                    break
        await self.app(scope, receive, send)

    async def _refuse(self, scope: Any, send: Any, header: str) -> None:
        shown = header[:100]
        if shown not in self._logged and len(self._logged) < 100:
            self._logged.add(shown)
            log.warning("refused a request for host %r (allowed: %s; LOOKUP_ALLOWED_HOSTS "
                        "adds names)", shown, self.allowed.describe())  # fmt: skip
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
            return
        await send_error(
            send,
            400,
            "HOST_NOT_ALLOWED",
            f"this server does not answer for host {shown!r}; it answers for "
            f"{self.allowed.describe()} (the operator adds names in LOOKUP_ALLOWED_HOSTS)",
        )
