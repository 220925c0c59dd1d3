"""Every host of the sandbox web, built from one world: host key → site."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from lookup.crawler.sandbox.sites.base import World
from lookup.crawler.sandbox.sites.calendar import CalendarSite
from lookup.crawler.sandbox.sites.changing import BlogSite, WikiSite
from lookup.crawler.sandbox.sites.closed import ClosedSite, HungSite
from lookup.crawler.sandbox.sites.docs import DocsSite
from lookup.crawler.sandbox.sites.hub import HubSite
from lookup.crawler.sandbox.sites.intl import IntlSite
from lookup.crawler.sandbox.sites.junk import JunkSite
from lookup.crawler.sandbox.sites.mirror import MirrorSite
from lookup.crawler.sandbox.sites.moved import MovedSite
from lookup.crawler.sandbox.sites.news import NewsSite
from lookup.crawler.sandbox.sites.overloaded import BusySite, SlowSite
from lookup.crawler.sandbox.sites.press import PressSite
from lookup.crawler.sandbox.sites.redirects import RedirectSite
from lookup.crawler.sandbox.sites.shop import ShopSite
from lookup.crawler.sandbox.sites.spa import SpaSite

__all__ = ["Sites", "build_sites"]


@dataclass
class Sites:
    """Every site object, by host key."""

    world: World
    handlers: dict[str, Any] = field(default_factory=dict)


def build_sites(world: World) -> Sites:
    """Instantiate every site of the sandbox web."""
    docs = DocsSite(world, "docs")
    moved = MovedSite(world)
    handlers: dict[str, Any] = {
        "docs": docs,
        "www": DocsSite(world, "www"),
        "mirror": MirrorSite(world, docs),
        "news": NewsSite(world),
        "shop": ShopSite(world),
        "calendar": CalendarSite(world),
        "blog": BlogSite(world),
        "wiki": WikiSite(world),
        "closed": ClosedSite(),
        "hung": HungSite(world),
        "slow": SlowSite(world),
        "busy": BusySite(world),
        "redirect": RedirectSite(world),
        "junk": JunkSite(world),
        "moved": moved,
        "www-moved": moved,
        "hub": HubSite(world),
        "intl": IntlSite(world),
        "app": SpaSite(world),
        "press": PressSite(world),
    }
    return Sites(world, handlers)
