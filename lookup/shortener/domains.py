"""Short domains (issue 27 item 3, as Shlink does): a link lives on one domain, the
same alias may exist on two, and ``GET /{key}`` is resolved by the ``Host`` header.

* The **default domain** is the host of the public base URL; the setting
  ``shortener_domains`` (``LOOKUP_SHORTENER_DOMAINS``) lists the others a link may
  choose. A request whose ``Host`` is not one of them is served as the default domain
  (Shlink does the same), so a server reached by its address keeps working.
* A link on another domain is stored under ``key@domain``
  (:func:`~lookup.shortener.keys.storage_key`); its short URL is
  ``<scheme>://<domain>/<key>``. The management API names it by its key and
  ``?domain=`` (or by ``key@domain`` itself).
* **Fallback redirect per domain** (Shlink's "invalid short URL redirect"): the admin
  sets, per domain, where a visitor goes for a key that is missing, expired or deleted
  there; without one the visitor gets today's answer (an HTML page for a browser, JSON
  for an API client). The redirect path reads the table only on such a miss, and at most
  once per :data:`REFRESH_S` per process.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any
from urllib.parse import urlsplit

from lookup import errors
from lookup.shortener.keys import storage_key
from lookup.shortener.links import LinkStore
from lookup.shortener.resolver import STORE_LANE

log = logging.getLogger("lookup.shortener.domains")

#: How old a process's copy of the fallback redirects may get (they change rarely, by hand).
REFRESH_S = 1.0


def host_of(authority: str) -> str:
    """``Sh.Example:8080`` → ``sh.example`` (an IPv6 literal keeps its brackets)."""
    text = authority.strip().lower()
    if text.startswith("["):
        return text.split("]", 1)[0] + "]"
    return text.rsplit(":", 1)[0] if text.count(":") == 1 else text


class Domains:
    """The short domains of one server: which one a request is for, which one a new link
    may choose, each link's short URL, and the per-domain fallback redirects."""

    def __init__(
        self,
        base_url: str,
        extra: Iterable[str],
        store: LinkStore,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        parts = urlsplit(base_url)
        self.scheme = parts.scheme or "http"
        self.base_url = base_url.rstrip("/")
        #: The default domain as people write it (the base URL's host, port included).
        self.default = (parts.netloc or "localhost").lower()
        self._default_host = host_of(self.default)
        names = [d.strip().lower() for d in extra if d.strip()]
        #: The other domains, by their host (a request's ``Host`` may add a port).
        self.extra: dict[str, str] = {
            host_of(d): d for d in names if host_of(d) != self._default_host
        }
        self.store = store
        self.clock = clock
        self._lock = threading.Lock()
        self._redirects: dict[str, str] = {}
        self._read_at = float("-inf")

    # -- requests ------------------------------------------------------------------------

    def of_scope(self, scope: Any) -> str:
        """The domain an ASGI request is for: one of :attr:`extra` by its ``Host``,
        else ``""`` (the default domain). Only called when there are other domains."""
        for name, value in scope.get("headers", ()):
            if name == b"host":
                return self.extra.get(host_of(value.decode("latin-1")), "")
        return ""

    def check(self, value: object) -> str:
        """The domain a create or a lookup names (``""`` for the default one), or
        ``InvalidInput("INVALID_DOMAIN")`` naming the domains there are."""
        if value is None:
            return ""
        if not isinstance(value, str) or len(value) > 253:
            raise self._unknown(value)
        name = value.strip().lower()
        host = host_of(name)
        if not name or name == self.default or host == self._default_host:
            return ""
        if host in self.extra:
            return self.extra[host]
        raise self._unknown(value)

    def _unknown(self, value: object) -> errors.InvalidInput:
        known = ", ".join([self.default, *sorted(self.extra.values())])
        return errors.InvalidInput(
            f"domain {value!r} is not one of this server's short domains ({known})",
            code="INVALID_DOMAIN",
        )

    def stored(self, key: str, domain: str | None) -> str:
        """The stored key the management API's ``{key}`` and ``?domain=`` name."""
        return storage_key(key, self.check(domain)) if domain is not None else key

    def short_url(self, stored: str) -> str:
        """The public short URL of a stored key (``key`` or ``key@domain``)."""
        key, _, domain = stored.partition("@")
        if not domain:
            return f"{self.base_url}/{key}"
        return f"{self.scheme}://{domain}/{key}"

    def api_path(self, body: dict[str, Any]) -> str:
        """The management API's path of a link from its JSON (``?domain=`` when the link
        is not on the default domain)."""
        domain = body.get("domain")
        query = f"?domain={domain}" if domain and domain != self.default else ""
        return f"/v1/links/{body['key']}{query}"

    def name(self, domain: str) -> str:
        """A link's domain as the API shows it (the default one by its name)."""
        return domain or self.default

    # -- fallback redirects ----------------------------------------------------------------

    def fallback_now(self, domain: str) -> str | None:
        """The fallback redirect of ``domain`` from this process's copy, read again from the
        store when older than :data:`REFRESH_S` (blocking: call it in a worker thread)."""
        now = self.clock()
        if now - self._read_at >= REFRESH_S:
            try:
                redirects = self.store.domain_redirects()
            except Exception as exc:  # the store is away: the last copy, asked again later
                log.warning("could not read the domains' fallback redirects: %s", exc)
                redirects = self._redirects
            with self._lock:
                self._redirects, self._read_at = redirects, now
        return self._redirects.get(domain)

    async def fallback(self, domain: str) -> str | None:
        """:meth:`fallback_now` for the event loop: a fresh copy answers in place, a stale
        one is read again in :data:`STORE_LANE`."""
        if self.clock() - self._read_at < REFRESH_S:
            return self._redirects.get(domain)
        return await STORE_LANE.run(self.fallback_now, domain)

    def listing(self) -> list[dict[str, Any]]:
        """Every domain with its fallback redirect (blocking: reads the store)."""
        redirects = self.store.domain_redirects()
        rows = [("", self.default)] + sorted((d, d) for d in self.extra.values())
        return [
            {
                "domain": name,
                "isDefault": not stored,
                "invalidShortUrlRedirect": redirects.get(stored),
            }
            for stored, name in rows
        ]

    def set_fallback(self, domain: str, url: str | None) -> None:
        """Set or remove a domain's fallback redirect (blocking); this process sees it at
        once, the others within :data:`REFRESH_S`."""
        self.store.set_domain_redirect(domain, url)
        with self._lock:
            self._read_at = float("-inf")


async def send_fallback(send: Any, location: str) -> None:
    """A domain's fallback redirect: 302 to ``location`` (checked ASCII when it was set),
    never cached (the key may be created a moment later)."""
    await send(
        {
            "type": "http.response.start",
            "status": 302,
            "headers": [
                (b"location", location.encode("ascii")),
                (b"cache-control", b"no-store"),
                (b"content-length", b"0"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": b""})


__all__ = ["REFRESH_S", "Domains", "host_of", "send_fallback"]
