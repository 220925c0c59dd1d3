"""The blog and the wiki (one shared address): pages that change, with ETag, 304 and lastmod.

The blog has no robots.txt (404: crawl freely); the wiki has one, with a sitemap whose
``lastmod`` follows each page's versions. Both answer conditional requests.
"""

from __future__ import annotations

import hashlib
import re
from datetime import UTC, datetime
from email.utils import format_datetime, parsedate_to_datetime
from typing import Any

from lookup.crawler.sandbox import content
from lookup.crawler.sandbox.sites.base import (
    NOT_FOUND,
    World,
    esc,
    html_response,
    page,
    sitemap_xml,
    text_response,
    xml_response,
    zen_lines,
)
from lookup.crawler.sandbox.web import Request, Response

__all__ = ["CHANGE_PERIODS", "BlogSite", "ChangingPage", "WikiSite"]


CHANGE_PERIODS = (30.0, 300.0, 3600.0, 86400.0, None)


def _http_date(ts: float) -> str:
    return format_datetime(datetime.fromtimestamp(int(ts), UTC), usegmt=True)


class ChangingPage:
    """Versioning shared by blog and wiki pages: version k holds from k·period on."""

    def __init__(self, world: World, period: float | None) -> None:
        self.world = world
        self.period = period

    def version(self) -> int:
        return 0 if self.period is None else int(self.world.clock() // self.period)

    def modified_at(self) -> float:
        """Wall time at which the current version appeared (for Last-Modified)."""
        if self.period is None:
            return self.world.started
        return self.world.wall_at(self.version() * self.period)

    def conditional(self, req: Request, body: str) -> Response:
        """200 with validators, or 304 when the client's validator still holds."""
        etag = '"' + hashlib.sha256(body.encode()).hexdigest()[:20] + '"'
        modified = self.modified_at()
        headers = [("ETag", etag), ("Last-Modified", _http_date(modified))]
        inm = req.headers.get("if-none-match")
        ims = req.headers.get("if-modified-since")
        if inm is not None:
            if etag in [t.strip() for t in inm.split(",")] or inm.strip() == "*":
                return Response(304, b"", None, headers)
        elif ims is not None:
            try:
                since = parsedate_to_datetime(ims).timestamp()
            except (TypeError, ValueError):
                since = None
            if since is not None and int(modified) <= since:
                return Response(304, b"", None, headers)
        return html_response(body, headers=headers)


class BlogSite:
    """Posts from class docstrings whose comments grow as the freshness clock runs."""

    def __init__(self, world: World) -> None:
        self.world = world
        self.posts = content.blog_texts(world.config.blog_posts)
        self.pages = {
            slug: ChangingPage(world, CHANGE_PERIODS[i % len(CHANGE_PERIODS)])
            for i, (slug, _, _) in enumerate(self.posts)
        }

    def handle(self, req: Request) -> Response:
        p = req.path
        if p == "/":
            items = "".join(
                f'<li><a href="/post/{slug}.html">{esc(title)}</a></li>'
                for slug, title, _ in self.posts
            )
            return html_response(page("Blog", f"<h1>Field notes</h1><ul>{items}</ul>"))
        m = re.fullmatch(r"/post/([\w-]+)\.html", p)
        if m and m.group(1) in self.pages:
            slug = m.group(1)
            title, paras = next((t, ps) for s, t, ps in self.posts if s == slug)
            cp = self.pages[slug]
            v = cp.version()
            body = "".join(f"<p>{esc(x)}</p>" for x in paras)
            comments = f"<h2>Comments ({v})</h2>" + "".join(
                f"<p>Comment {i}: {esc(zen_lines()[i % 19])}</p>" for i in range(min(v, 3))
            )
            return cp.conditional(req, page(title, f"<h1>{esc(title)}</h1>{body}{comments}"))
        return NOT_FOUND  # including /robots.txt: no rules, crawl freely

    def changing(self) -> list[dict[str, Any]]:
        return [
            {"url": self.world.url("blog", f"/post/{slug}.html"), "period": cp.period}
            for slug, cp in self.pages.items()
        ]


class WikiSite:
    """Pages from ``pydoc`` text with revisions, an edit area robots.txt closes, a sitemap."""

    def __init__(self, world: World) -> None:
        self.world = world
        self.entries = content.wiki_pages(world.config.wiki_pages)
        self.pages = {
            title: ChangingPage(world, CHANGE_PERIODS[(i + 2) % len(CHANGE_PERIODS)])
            for i, (title, _) in enumerate(self.entries)
        }

    def robots(self) -> str:
        c = self.world.config
        return (
            f"User-agent: *\nDisallow: /w/\nCrawl-delay: {c.crawl_delay:g}\n\n"
            f"Sitemap: {self.world.url('wiki', '/sitemap.xml')}\n"
        )

    def sitemap(self) -> str:
        return sitemap_xml(
            (
                self.world.url("wiki", f"/wiki/{t}"),
                datetime.fromtimestamp(cp.modified_at(), UTC).isoformat(),
            )
            for t, cp in self.pages.items()
        )

    def handle(self, req: Request) -> Response:
        p = req.path
        if p == "/robots.txt":
            return text_response(self.robots())
        if p == "/sitemap.xml":
            return xml_response(self.sitemap())
        if p == "/":
            items = "".join(f'<li><a href="/wiki/{t}">{esc(t)}</a></li>' for t, _ in self.entries)
            return html_response(page("Wiki", f"<h1>Module wiki</h1><ul>{items}</ul>"))
        m = re.fullmatch(r"/wiki/([\w.]+)", p)
        if m and m.group(1) in self.pages:
            title = m.group(1)
            text = next(t for n, t in self.entries if n == title)
            cp = self.pages[title]
            main = (
                f"<h1>{esc(title)}</h1><p>Revision {cp.version()}</p><pre>{text}</pre>"
                f'<p><a href="/w/index.php?title={title}&amp;action=edit">edit</a></p>'
            )
            return cp.conditional(req, page(title, main))
        if p.startswith("/w/"):
            return html_response(page("Edit", "<h1>Editing</h1>"))
        return NOT_FOUND

    def changing(self) -> list[dict[str, Any]]:
        return [
            {"url": self.world.url("wiki", f"/wiki/{t}"), "period": cp.period}
            for t, cp in self.pages.items()
        ]
