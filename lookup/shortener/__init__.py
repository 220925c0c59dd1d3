"""URL shortener: seven-character keys that redirect, with the read and write paths apart.

Public API (what the dashboard, notebooks and other systems use):

* :class:`ShortenerService` / :class:`ShortenerConfig` — create, read, change and
  delete links over one data directory (``<data_dir>/shortener/``);
* :class:`Resolver` — the read path (in-process LRU + TTL → shared tier → store,
  single-flight, negative caching) and its per-layer counters;
* :class:`LinkStore` — the SQLite link store (the write path's atomic operations);
* :class:`KeyMinter`, :func:`validate_alias`, :class:`UrlPolicy` — keys and checks;
* :class:`Link`, :class:`Status`, :class:`ClickContext`, :func:`verdict` — records;
* :class:`ClickAnalytics` (and its parts in :mod:`lookup.shortener.analytics`) — clicks
  off the redirect path: bounded buffer → shipper → click log → aggregator;
* :class:`Scanner`, :func:`assess` — the safety scanner (queue + worker, rescans);
* :func:`simulate_traffic` — realistic traffic through the real HTTP redirect path;
* :func:`mount` — plugs the HTTP API into :func:`lookup.server.create_app`.

Seams: ``service.on_click`` receives a :class:`ClickContext` per redirect (no-op by
default; must not block), ``service.listeners`` hear about created/retargeted/
deleted/disabled links, and ``service.disable`` / ``service.set_scan_verdict`` let a
scanner take a link down and purge it from every cache layer. In the server the
service is ``app.state.shortener`` on the FastAPI app (``mounts.api.state.shortener``).
"""

from lookup.shortener.analytics import ClickAnalytics
from lookup.shortener.http import mount
from lookup.shortener.keys import KEY_LENGTH, KEY_SPACE, KeyMinter, ReservedWords, validate_alias
from lookup.shortener.model import ClickContext, Link, Outcome, Status, verdict
from lookup.shortener.resolver import Resolver
from lookup.shortener.scanner import Assessment, Scanner, assess
from lookup.shortener.service import (
    Limits,
    ShortenerConfig,
    ShortenerError,
    ShortenerService,
    owner_id,
)
from lookup.shortener.simulate import SimulationResult, TrafficPlan, simulate_traffic
from lookup.shortener.store import LinkStore
from lookup.shortener.urls import Blocklist, UrlPolicy, UrlRejected

__all__ = [
    "KEY_LENGTH",
    "KEY_SPACE",
    "Assessment",
    "Blocklist",
    "ClickAnalytics",
    "ClickContext",
    "KeyMinter",
    "Limits",
    "Link",
    "LinkStore",
    "Outcome",
    "ReservedWords",
    "Resolver",
    "Scanner",
    "SimulationResult",
    "ShortenerConfig",
    "ShortenerError",
    "ShortenerService",
    "Status",
    "TrafficPlan",
    "UrlPolicy",
    "UrlRejected",
    "assess",
    "mount",
    "owner_id",
    "simulate_traffic",
    "validate_alias",
    "verdict",
]
