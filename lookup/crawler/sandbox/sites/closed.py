"""Hosts whose robots.txt fails: one answers 503, one never answers in time — crawl nothing."""

from __future__ import annotations

from lookup.crawler.sandbox.sites.base import ALLOW_ALL, World, html_response, page, text_response
from lookup.crawler.sandbox.web import Request, Response

__all__ = ["ClosedSite", "HungSite"]


class ClosedSite:
    """robots.txt answers 503: a crawler must fetch nothing else."""

    def handle(self, req: Request) -> Response:
        if req.path == "/robots.txt":
            return text_response("Service unavailable", 503, headers=[("Retry-After", "3600")])
        return html_response(page("Closed", "<h1>Members only</h1><p>Nothing to see.</p>"))


class HungSite:
    """robots.txt takes longer than any crawler waits: a crawler must fetch nothing else."""

    def __init__(self, world: World) -> None:
        self.world = world

    def handle(self, req: Request) -> Response:
        if req.path == "/robots.txt":
            return text_response(ALLOW_ALL, delay=self.world.config.hang_seconds)
        return html_response(page("Hung", "<h1>You waited</h1>"))
