"""The mirror host: the documentation again under another path, every page an exact duplicate."""

from __future__ import annotations

import re
from typing import Any

from lookup.crawler.sandbox import content
from lookup.crawler.sandbox.sites.base import NOT_FOUND, World, html_response, page, text_response
from lookup.crawler.sandbox.sites.docs import DocsSite
from lookup.crawler.sandbox.web import Request, Response

__all__ = ["MirrorSite"]


class MirrorSite:
    """A mirror of the documentation under another path: every page an exact duplicate."""

    PREFIX = "/python/3/lib/"

    def __init__(self, world: World, docs: DocsSite) -> None:
        self.world = world
        self.docs = docs

    def handle(self, req: Request) -> Response:
        p = req.path
        if p == "/robots.txt":
            return text_response("User-agent: *\nDisallow: /cgi-bin/\n")
        if p == "/":
            items = "".join(
                f'<li><a href="{self.PREFIX}{m}.html">{m}</a></li>' for m in self.docs.modules
            )
            return html_response(page("Mirror", f"<h1>Python docs mirror</h1><ul>{items}</ul>"))
        m = re.fullmatch(r"/python/3/lib/([\w.]+)\.html", p)
        if m and m.group(1) in self.docs.known:
            body = content.module_doc_html(m.group(1), self.docs.known, self.PREFIX)
            return html_response(
                page(f"{m.group(1)} (mirror)", body, header="Mirrored with permission")
            )
        return NOT_FOUND

    def clusters(self) -> list[dict[str, Any]]:
        """Exact-duplicate clusters: each module page on docs, www, print views and mirror."""
        w = self.world
        out = []
        for m in self.docs.modules:
            members = [
                {"url": w.url("docs", f"/lib/{m}.html"), "reason": "original"},
                {"url": w.url("docs", f"/print/lib/{m}.html"), "reason": "print-view"},
                {"url": w.url("www", f"/lib/{m}.html"), "reason": "www"},
                {"url": w.url("www", f"/print/lib/{m}.html"), "reason": "www print-view"},
                {"url": w.url("mirror", f"{self.PREFIX}{m}.html"), "reason": "mirror"},
            ]
            if w.tls("docs"):
                members += [
                    {"url": w.https_url("docs", f"/lib/{m}.html"), "reason": "https"},
                    {"url": w.https_url("docs", f"/print/lib/{m}.html"), "reason": "https print"},
                ]
            out.append({"kind": "exact", "members": members})
        return out
