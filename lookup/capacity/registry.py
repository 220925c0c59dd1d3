"""Every system's planner by the name the CLI, the dashboard and the notebooks use."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import fields
from typing import Any

from lookup.capacity.cache import CacheAssumptions, cache
from lookup.capacity.crawler import CrawlerAssumptions, crawler
from lookup.capacity.ids import IdsAssumptions, ids
from lookup.capacity.proximity import ProximityAssumptions, proximity
from lookup.capacity.search import SearchAssumptions, search
from lookup.capacity.shortener import ShortenerAssumptions, shortener
from lookup.capacity.typeahead import TypeaheadAssumptions, typeahead

#: Every system's assumptions class and planner, by the name the CLI and dashboard use.
PLANNERS: dict[str, tuple[type, Callable[..., Any]]] = {
    "shortener": (ShortenerAssumptions, shortener),
    "typeahead": (TypeaheadAssumptions, typeahead),
    "proximity": (ProximityAssumptions, proximity),
    "crawler": (CrawlerAssumptions, crawler),
    "search": (SearchAssumptions, search),
    "ids": (IdsAssumptions, ids),
    "cache": (CacheAssumptions, cache),
}


def plan(system: str, **overrides: float) -> Any:
    """Plan ``system`` from the seed's assumptions with ``overrides`` applied.

    Raises ``ValueError`` for an unknown system, an unknown assumption or a bad value.
    """
    if system not in PLANNERS:
        raise ValueError(f"unknown system {system!r}; choose from {', '.join(PLANNERS)}")
    cls, planner = PLANNERS[system]
    names = {f.name for f in fields(cls)}
    unknown = sorted(set(overrides) - names)
    if unknown:
        raise ValueError(f"unknown {system} assumption(s): {', '.join(unknown)}")
    return planner(cls(**overrides))


def figures(p: Any) -> dict[str, float]:
    """A plan's numeric fields by name (everything but its assumptions)."""
    return {f.name: getattr(p, f.name) for f in fields(p) if f.name != "assumptions"}
