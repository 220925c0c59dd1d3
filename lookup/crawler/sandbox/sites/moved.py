"""The moved host: its robots.txt redirects to another host, and one page goes away.

``moved.sandbox.test/robots.txt`` answers ``301`` to ``www.moved.sandbox.test/robots.txt``
(a site that moved to its ``www`` name, on the same address): RFC 9309 §2.3.1.2 says
to follow the redirect, across hosts, and obey the file found there. Both names serve
the same pages. ``/ephemeral.html`` answers 200 the first time it is asked for (on each name) and
``410 Gone`` ever after: a page that disappears between two crawl cycles.
"""

from __future__ import annotations

import threading
from typing import Any

from lookup.crawler.sandbox.sites.base import (
    NOT_FOUND,
    World,
    esc,
    html_response,
    page,
    text_response,
    zen_lines,
)
from lookup.crawler.sandbox.web import Request, Response

__all__ = ["MovedSite"]

ROBOTS = "User-agent: *\nDisallow: /private/\n"


class MovedSite:
    """Both names of the moved site (one handler); robots.txt lives on the ``www`` name."""

    def __init__(self, world: World) -> None:
        self.world = world
        self._lock = threading.Lock()
        self._ephemeral_served: set[str] = set()  # per name: each serves its copy once

    def handle(self, req: Request) -> Response:
        p = req.path
        w = self.world
        if p == "/robots.txt":
            if req.host == w.names["moved"]:
                return Response(301, b"", None, [("Location", w.url("www-moved", "/robots.txt"))])
            return text_response(ROBOTS)
        if p == "/":
            links = [
                ("/about.html", "about the move"),
                ("/private/notes.html", "private notes (disallowed by the moved robots.txt)"),
                ("/ephemeral.html", "a page that goes away"),
            ]
            items = "".join(f'<li><a href="{u}">{t}</a></li>' for u, t in links)
            return html_response(page("Moved", f"<h1>We moved</h1><ul>{items}</ul>"))
        if p == "/about.html":
            main = f"<h1>About the move</h1><p>{esc(zen_lines()[3])}</p>"
            return html_response(page("About the move", main))
        if p.startswith("/private/"):
            return html_response(page("Private", f"<h1>Private</h1><p>{esc(zen_lines()[4])}</p>"))
        if p == "/ephemeral.html":
            with self._lock:
                served = req.host in self._ephemeral_served
                self._ephemeral_served.add(req.host)
            if served:
                return html_response(page("Gone", "<h1>Gone</h1>"), status=410)
            main = "<h1>Ephemeral</h1><p>A transient marmoset notice, here today only.</p>"
            return html_response(page("Ephemeral marmoset notice", main))
        return NOT_FOUND

    def manifest(self) -> dict[str, Any]:
        w = self.world
        return {
            "robots_redirect": {
                "from": w.url("moved", "/robots.txt"),
                "to": w.url("www-moved", "/robots.txt"),
            },
            "disallowed": [w.url("moved", "/private/notes.html")],
            "allowed": [w.url("moved", "/about.html")],
            "ephemeral": w.url("moved", "/ephemeral.html"),
        }
