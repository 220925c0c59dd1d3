"""The redirect host: chains, a loop, a long chain, cross-host and relative Locations."""

from __future__ import annotations

import re
from typing import Any

from lookup.crawler.sandbox.sites.base import (
    ALLOW_ALL,
    NOT_FOUND,
    World,
    esc,
    html_response,
    page,
    text_response,
    zen_lines,
)
from lookup.crawler.sandbox.web import Request, Response

__all__ = ["RedirectSite"]


class RedirectSite:
    """Redirects of every kind, ending on pages that say where they were reached from."""

    CHAIN = 4
    LONG = 12

    def __init__(self, world: World) -> None:
        self.world = world

    @staticmethod
    def _to(location: str, status: int = 302) -> Response:
        return Response(status, b"", None, [("Location", location)])

    def handle(self, req: Request) -> Response:
        p = req.path
        w = self.world
        if p == "/robots.txt":
            return text_response(ALLOW_ALL)
        if p == "/":
            links = [
                ("/chain/1", "a redirect chain"),
                ("/loop/a", "a redirect loop"),
                ("/long/1", "a very long chain"),
                ("/away", "a redirect to another host"),
                ("/to-private", "a redirect to a disallowed page"),
                ("/moved.html", "a moved page"),
                ("/relative", "a relative Location"),
            ]
            items = "".join(f'<li><a href="{u}">{t}</a></li>' for u, t in links)
            return html_response(page("Redirects", f"<h1>Redirects</h1><ul>{items}</ul>"))
        m = re.fullmatch(r"/chain/(\d+)", p)
        if m:
            n = int(m.group(1))
            return self._to(f"/chain/{n + 1}" if n < self.CHAIN else "/final.html")
        if p == "/loop/a":
            return self._to("/loop/b")
        if p == "/loop/b":
            return self._to("/loop/a")
        m = re.fullmatch(r"/long/(\d+)", p)
        if m:
            n = int(m.group(1))
            return self._to(f"/long/{n + 1}" if n < self.LONG else "/long-end.html", 307)
        if p == "/away":
            return self._to(w.url("docs", f"/lib/{w.first_module}.html"), 301)
        if p == "/to-private":
            return self._to(w.url("docs", "/drafts/secret-plan.html"))
        if p == "/moved.html":
            return self._to("/final.html", 301)
        if p == "/relative":
            return self._to("final.html?from=relative", 303)
        if p in ("/final.html", "/long-end.html"):
            q = "?" + req.query if req.query else ""
            main = f"<h1>You arrived at {esc(p + q)}</h1><p>{esc(zen_lines()[12])}</p>"
            return html_response(page("Arrived", main))
        return NOT_FOUND

    def manifest(self) -> dict[str, Any]:
        u = lambda path: self.world.url("redirect", path)  # noqa: E731
        return {
            "chain": [u(f"/chain/{i}") for i in range(1, self.CHAIN + 1)] + [u("/final.html")],
            "loop": [u("/loop/a"), u("/loop/b")],
            "long": [u(f"/long/{i}") for i in range(1, self.LONG + 1)],
            "long_end": u("/long-end.html"),
            "cross_host": {
                "from": u("/away"),
                "to": self.world.url("docs", f"/lib/{self.world.first_module}.html"),
            },
            "to_disallowed": {
                "from": u("/to-private"),
                "to": self.world.url("docs", "/drafts/secret-plan.html"),
            },
        }
