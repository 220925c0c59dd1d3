"""Where submitted searches go, and where the trending windows they feed live.

This package is the seam. Its ``__init__`` is the port and imports no backend:

* :class:`SearchFeed`, what ``POST /v1/searches`` appends to (after the trending count) and
  what the next ``lookup typeahead build`` reads back through ``<data-dir>/typeahead/
  searches.csv``;
* :data:`BACKENDS`, the registry ``scheme → "module:Class"``, and :func:`open_search_feed`,
  which imports the backend a URL names when it is called;
* :func:`open_trending`, the trending tracker that goes with the same URL.

The backends: :mod:`.file` (``file:///path/searches.csv`` or no URL, the embedded default:
the CSV itself, trending in each process's memory) and :mod:`.redis`
(``redis://host:port/db``: a Redis Stream every API process appends to, copied by a
consumer group to the CSV, and the trending windows with their distinct-user and network
gates in Redis, so a fleet trends as one server would). Adding a backend is one file with a
class that has ``from_url`` plus one line in :data:`BACKENDS`.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol, cast, runtime_checkable

from lookup.kit.engines.storeurl import parse_store_url
from lookup.kit.registry import load_backend
from lookup.typeahead.filters import TermBlocklist
from lookup.typeahead.trending import (
    Baseline,
    Clock,
    Pick,
    TrendingPolicy,
    TrendingTracker,
)

__all__ = [
    "BACKENDS",
    "SearchFeed",
    "open_search_feed",
    "open_trending",
    "policy_from_settings",
    "scheme_of",
]

#: Each URL scheme and the class that serves it, imported when a URL names the scheme.
BACKENDS: dict[str, str] = {
    "file": "lookup.typeahead.searchfeed.file:FileSearchFeed",
    "redis": "lookup.typeahead.searchfeed.redis:RedisSearchFeed",
}

#: The trending tracker of each scheme whose windows do not live in each process's memory.
TRACKERS: dict[str, str] = {
    "redis": "lookup.typeahead.searchfeed.trending_redis:RedisTrendingTracker",
}


@runtime_checkable
class SearchFeed(Protocol):
    """Submitted searches on their way to the next offline build."""

    def append(
        self,
        query: str,
        market: str,
        user: str | None,
        is_bot: bool = False,
        pick: Pick | None = None,
    ) -> None:
        """Record one search durably (the user id is hashed first); raises
        :class:`~lookup.errors.Unavailable` when the feed cannot take it."""
        ...

    def start(self) -> None:
        """Start background work (a stream backend's copier)."""
        ...

    def close(self) -> None:
        """Stop background work and let go of connections."""
        ...

    def status(self) -> dict[str, Any]:
        """What the feed is and how far its copy got, for ``/healthz``."""
        ...


def policy_from_settings(base: TrendingPolicy = TrendingPolicy()) -> TrendingPolicy:
    """``base`` with the gates of setting ``typeahead_trending_gates`` (floor, distinct
    users, distinct networks)."""
    from dataclasses import replace

    from lookup import settings

    floor, users, networks = settings.get("typeahead_trending_gates")
    return replace(base, floor=floor, min_users=users, min_networks=networks)


def scheme_of(url: str) -> str:
    """The scheme of a searches URL (``file`` for no URL or a bare path)."""
    text = url.strip()
    if not text or "://" not in text:
        return "file"
    return parse_store_url(text, tuple(BACKENDS)).scheme


def open_search_feed(
    url: str, data_dir: str | os.PathLike[str], *, clock: Clock = time.time
) -> SearchFeed:
    """The feed ``url`` names; ``data_dir`` holds ``typeahead/searches.csv``, the file the
    build reads (the embedded feed itself, a stream's durable copy). An unknown scheme
    raises ValueError naming the registered ones."""
    from lookup.typeahead.pipeline import searches_path

    scheme = scheme_of(url)
    found = load_backend(BACKENDS, scheme)
    target = searches_path(data_dir)
    if scheme == "file" and url.strip():
        target = Path(url.strip().split("://", 1)[1])
    return cast(SearchFeed, found.from_url(url.strip(), copy_to=target, clock=clock))


def open_trending(
    url: str,
    policy: TrendingPolicy,
    *,
    clock: Clock = time.time,
    baseline: Baseline | None = None,
    blocklist: Callable[[], TermBlocklist] | None = None,
) -> TrendingTracker:
    """The trending tracker that goes with a searches URL: in Redis for ``redis://`` (the
    windows a fleet shares), else in this process's memory."""
    scheme = scheme_of(url)
    if scheme not in TRACKERS:
        return TrendingTracker(policy, clock=clock, baseline=baseline, blocklist=blocklist)
    found = load_backend(TRACKERS, scheme)
    return cast(
        TrendingTracker,
        found.from_url(url.strip(), policy, clock=clock, baseline=baseline, blocklist=blocklist),
    )
