"""The hub host: a directory of the sandbox web, one link to every other host's front page.

Why it exists: a real crawl starts from seeds that fan out (a portal, a directory, a
list of popular sites), so the frontier has many hosts to serve in parallel from its
first seconds. Seeded with the docs host alone, a crawl met the other hosts only when
docs' link to them — the last of about sixty, behind a one-second Crawl-delay — came
up, a minute and a half in. The hub lists the interesting hosts first (the ones whose
lessons take many requests: traps, near-duplicates, failing robots.txt) and allows
everything in its robots.txt; it has no Crawl-delay, so the crawler's own pause applies.
"""

from __future__ import annotations

from lookup.crawler.sandbox.sites.base import (
    ALLOW_ALL,
    NOT_FOUND,
    World,
    esc,
    html_response,
    page,
    text_response,
)
from lookup.crawler.sandbox.web import Request, Response

__all__ = ["HubSite"]


class HubSite:
    """The sandbox web's directory: a front page linking every other host."""

    #: Hosts listed first: each needs many requests (or a long wait) before it shows its lesson.
    FIRST = ("hung", "closed", "calendar", "shop", "news", "mirror", "www")

    def __init__(self, world: World, key: str = "hub") -> None:
        self.world = world
        self.key = key

    def listed(self) -> list[str]:
        """The host keys the front page links to, in link order."""
        others = [k for k in self.world.names if k != self.key]
        first = [k for k in self.FIRST if k in others]
        return first + [k for k in others if k not in first]

    def front(self) -> str:
        w = self.world
        items = "".join(
            f'<li><a href="{esc(w.url(k, "/"))}">{esc(w.names[k])}</a> — {esc(w.roles[k])}</li>'
            for k in self.listed()
        )
        main = (
            "<h1>The sandbox web: a directory</h1>\n"
            "<p>Every host of this small web, each built to teach a crawler one lesson "
            "of the real web: politeness, duplicates, traps and hostile servers.</p>\n"
            f"<ul>{items}</ul>"
        )
        return page("The sandbox web — directory", main)

    def handle(self, req: Request) -> Response:
        if req.path == "/robots.txt":
            return text_response(ALLOW_ALL)
        if req.path in ("/", "/index.html"):
            return html_response(self.front())
        return NOT_FOUND
