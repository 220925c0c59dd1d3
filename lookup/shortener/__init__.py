"""URL shortener: seven-character keys that redirect, with the read and write paths apart.

Public API (what the dashboard, notebooks and other systems use):

* :class:`Shortener` / :class:`ShortenerConfig` — the composition root: every part
  below built and wired over one data directory (``<data_dir>/shortener/``);
* :class:`ShortenerService` — the domain operations (create, read, change, delete,
  admit a click) on typed commands, raising :mod:`lookup.errors`;
* :class:`LinkApi` — the same in the API's terms (JSON bodies in, views out);
* :class:`Resolver` — the read path (in-process LRU + TTL → shared tier → store,
  single-flight, negative caching) and its per-layer counters;
* :class:`LinkStore` — the link store's interface (the write path's atomic operations),
  :class:`SqliteLinkStore` its embedded implementation, :func:`open_link_store` the factory;
* :class:`KeyMinter`, :func:`validate_alias`, :class:`UrlPolicy` — keys and checks;
* :class:`Link`, :class:`Status`, :class:`ClickContext`, :func:`verdict` — records;
* :class:`ClickAnalytics` (and its parts in :mod:`lookup.shortener.analytics`) — clicks
  off the redirect path: bounded buffer → shipper → click log → aggregator;
* :class:`Scanner`, :func:`assess` — the safety scanner (queue + worker, rescans);
* :func:`simulate_traffic` — realistic traffic through the real HTTP redirect path;
* :func:`mount` — plugs the HTTP API into :func:`lookup.server.create_app`.

Seams, all passed in at construction by :class:`Shortener`: the service's ``on_click``
receives a :class:`ClickContext` per redirect (no-op by default; must not block), its
``notify`` tells :class:`LinkEvents` subscribers about created/retargeted/deleted/
disabled links, and ``service.set_scan_verdict`` / ``service.enable`` let the scanner
take a link down and purge it from every cache layer. In the server the composition
root is ``app.state.shortener`` on the FastAPI app (``mounts.api.state.shortener``).

Names are imported on first use, so ``import lookup.shortener.keys`` loads no web
framework and no analytics.
"""

from __future__ import annotations

from lookup.kit.lazy import lazy_exports

#: Each public name and the module it lives in, imported on first use.
_EXPORTS = {
    "KEY_LENGTH": "lookup.shortener.keys",
    "KEY_SPACE": "lookup.shortener.keys",
    "KeyMinter": "lookup.shortener.keys",
    "ReservedWords": "lookup.shortener.keys",
    "validate_alias": "lookup.shortener.keys",
    "ClickContext": "lookup.shortener.model",
    "Link": "lookup.shortener.model",
    "Outcome": "lookup.shortener.model",
    "Status": "lookup.shortener.model",
    "verdict": "lookup.shortener.model",
    "Resolver": "lookup.shortener.resolver",
    "Assessment": "lookup.shortener.scanner",
    "Scanner": "lookup.shortener.scanner",
    "assess": "lookup.shortener.scanner",
    "CreateRequest": "lookup.shortener.service",
    "Created": "lookup.shortener.service",
    "LinkPatch": "lookup.shortener.service",
    "ShortenerService": "lookup.shortener.service",
    "LinkApi": "lookup.shortener.api",
    "owner_id": "lookup.shortener.parse",
    "LinkEvents": "lookup.shortener.app",
    "Limits": "lookup.shortener.app",
    "Shortener": "lookup.shortener.app",
    "ShortenerConfig": "lookup.shortener.app",
    "ClickAnalytics": "lookup.shortener.analytics",
    "mount": "lookup.shortener.http",
    "SimulationResult": "lookup.shortener.simulate",
    "TrafficPlan": "lookup.shortener.simulate",
    "simulate_traffic": "lookup.shortener.simulate",
    "LinkStore": "lookup.shortener.links",
    "SqliteLinkStore": "lookup.shortener.links.sqlite",
    "open_link_store": "lookup.shortener.links",
    "Blocklist": "lookup.shortener.urls",
    "UrlPolicy": "lookup.shortener.urls",
    "UrlRejected": "lookup.shortener.urls",
}

__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
