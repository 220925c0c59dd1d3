"""The documentation host, served twice (``docs.`` and its ``www.`` twin).

What it throws at a crawler: robots.txt groups with wildcards and ``$``, a
``Crawl-delay``, print views and ``?print=`` spellings of every page (canonical
links name the original), URL spellings that normalise to one page, ``noindex`` and
``nofollow`` (meta tags and ``X-Robots-Tag``), a sitemap, and links to every other host
(and, when docs speaks TLS, to its own pages over https: http/https duplicates).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
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

__all__ = ["DocsSite"]


class DocsSite:
    """The documentation host (served twice: ``docs.`` and its ``www.`` twin)."""

    def __init__(self, world: World, key: str) -> None:
        self.world = world
        self.key = key
        self.modules = content.doc_modules(world.config.doc_modules)
        self.known = frozenset(self.modules)

    def robots(self) -> str:
        c = self.world.config
        return (
            f"# robots.txt for {self.world.names[self.key]}\n"
            "User-agent: *\nDisallow: /lib/\nDisallow: /print/\n\n"
            f"User-agent: {c.agent}\n"
            "Allow: /drafts/published-*.html\n"
            "Disallow: /drafts/\n"
            "Disallow: /search\n"
            "Disallow: /*.txt$\n"
            "Disallow: /*?print=\n"
            f"Crawl-delay: {c.crawl_delay:g}\n\n"
            "User-agent: BadBot\nDisallow: /\n\n"
            f"Sitemap: {self.world.url(self.key, '/sitemap.xml')}\n"
        )

    def _canonical(self, path: str) -> str:
        return f'<link rel="canonical" href="{self.world.url("docs", path)}">'

    def _lib_page(self, mod: str, *, printable: bool) -> str:
        body = content.module_doc_html(mod, self.known, "/lib/")
        path = f"/lib/{mod}.html"
        if printable:
            return page(
                f"{mod} (print view)",
                body,
                head=self._canonical(path),
                header="Python standard library — print view",
            )
        i = self.modules.index(mod)
        prev_mod = self.modules[i - 1]
        next_mod = self.modules[(i + 1) % len(self.modules)]
        nav = (
            f'<a href="/lib/{prev_mod}.html">previous: {prev_mod}</a> '
            f'<a href="/lib/{next_mod}.html">next: {next_mod}</a> '
            f'<a href="/print/lib/{mod}.html">print view</a> '
            f'<a href="/lib/{mod}.html?print=1">printer-friendly</a> '
            f'<a href="/lib/{mod}.html?utm_source=share&amp;utm_medium=nav#top">share</a>'
        )
        head = self._canonical(path) if self.key == "www" else ""
        return page(f"{mod} — Python standard library", body, nav=nav, head=head)

    def variants(self, mod: str) -> list[tuple[str, str]]:
        """Spellings of one module page found in links, with the URL they normalise to."""
        w = self.world
        canonical = w.url(self.key, f"/lib/{mod}.html")
        raw = [
            f"/lib/{mod}.html?utm_source=index&utm_medium=web&utm_campaign=docs",
            f"/lib/{mod}.html#contents",
            f"/lib/{mod}.html;jsessionid=0A1B2C3D4E",
            f"/LIB/../lib/./{mod}.html",
            f"HTTP://{w.names[self.key].upper()}:{w.port}/lib/{mod}.html",
            f"http://{w.names[self.key]}:{w.port}/lib/%7E/../{mod}.html",
        ]
        return [(r, canonical) for r in raw]

    def index(self) -> str:
        items = []
        for n, mod in enumerate(self.modules):
            variant, _ = self.variants(mod)[n % 6]
            items.append(f'<li><a href="{esc(variant)}">{esc(mod)}</a></li>')
        main = (
            "<h1>The Python standard library</h1>\n"
            "<p>Documentation rendered by pydoc from the interpreter that serves it.</p>\n"
            f"<ul>{''.join(items)}</ul>\n"
            "<h2>More</h2><ul>"
            '<li><a href="/about.html">About these pages</a></li>'
            '<li><a href="/links.html">Link collection</a></li>'
            '<li><a href="/legal.html">Legal notice</a></li>'
            '<li><a href="/drafts/published-intro.html">Introduction (draft, published)</a></li>'
            '<li><a href="/drafts/secret-plan.html">Plans (draft)</a></li>'
            '<li><a href="/feed.txt">Feed (text)</a></li>'
            '<li><a href="/feed.txt?format=html">Feed (html)</a></li>'
            '<li><a href="/search?q=json">Search for json</a></li>'
            '<li><a href="/elsewhere.html">Elsewhere on the sandbox web</a></li>'
            "</ul>"
        )
        return page("Python standard library", main)

    def elsewhere(self) -> str:
        w = self.world
        links = [
            (w.url("www", f"/lib/{w.first_module}.html"), "a module on www"),
            (w.url("mirror", "/"), "the mirror"),
            (w.url("news", "/"), "news"),
            (w.url("shop", "/"), "the shop"),
            (w.url("calendar", "/"), "the calendar"),
            (w.url("blog", "/"), "the blog"),
            (w.url("wiki", "/"), "the wiki"),
            (w.url("closed", "/"), "a closed site"),
            (w.url("closed", "/members.html"), "its members' page"),
            (w.url("hung", "/"), "a hung site"),
            (w.url("slow", "/"), "a slow site"),
            (w.url("busy", "/"), "a busy site"),
            (w.url("redirect", "/"), "redirects"),
            (w.url("junk", "/"), "junk"),
            ("http://external.example/", "a site outside the sandbox"),
            ("https://docs.python.org/3/", "the real documentation (outside)"),
        ]
        if w.tls("docs"):  # the same pages again over https: http/https duplicates
            links += [
                (w.https_url("docs", "/"), "these pages over https"),
                (w.https_url("docs", f"/lib/{w.first_module}.html"), "a module over https"),
            ]
        items = "".join(f'<li><a href="{esc(u)}">{esc(t)}</a></li>' for u, t in links)
        return page("Elsewhere", f"<h1>Elsewhere on the sandbox web</h1><ul>{items}</ul>")

    def sitemap(self) -> str:
        w = self.world
        day = datetime.fromtimestamp(w.started, UTC).date().isoformat()
        return sitemap_xml((w.url(self.key, f"/lib/{m}.html"), day) for m in self.modules)

    def handle(self, req: Request) -> Response:
        p = req.path
        if p == "/robots.txt":
            return text_response(self.robots())
        if p in ("/", "/index.html"):
            return html_response(self.index())
        m = re.fullmatch(r"/(print/)?lib/([\w.]+)\.html", p)
        if m and m.group(2) in self.known:
            printable = bool(m.group(1)) or req.params().get("print") == "1"
            return html_response(self._lib_page(m.group(2), printable=printable))
        zen = zen_lines()
        if p == "/about.html":
            main = "<h1>About</h1>" + "".join(f"<p>{esc(z)}</p>" for z in zen[:6])
            head = '<meta name="robots" content="noindex">'
            return html_response(page("About", main, head=head))
        if p == "/links.html":
            items = "".join(
                f'<li><a href="/hidden/page-{i}.html">hidden {i}</a></li>' for i in (1, 2)
            )
            main = f"<h1>Links</h1><p>{esc(zen[6])}</p><ul>{items}</ul>"
            head = '<meta name="ROBOTS" content="NOFOLLOW">'
            return html_response(page("Links", main, head=head))
        if p == "/legal.html":
            main = (
                f"<h1>Legal</h1><p>{esc(zen[7])}</p>"
                '<p><a href="/hidden/legal-terms.html">full terms</a></p>'
            )
            return html_response(
                page("Legal", main),
                headers=[("X-Robots-Tag", f"{self.world.config.agent.lower()}: noindex, nofollow")],
            )
        if p.startswith("/hidden/") or p.startswith("/drafts/"):
            return html_response(page("Hidden", f"<h1>{esc(p)}</h1><p>{esc(zen[8])}</p>"))
        if p == "/feed.txt":
            if req.params().get("format") == "html":
                items = "".join(
                    f'<li><a href="/lib/{m}.html">{m}</a></li>' for m in self.modules[:5]
                )
                return html_response(page("Feed", f"<h1>Recent changes</h1><ul>{items}</ul>"))
            return text_response("\n".join(self.modules))
        if p == "/search":
            return html_response(page("Search", "<h1>Search results</h1>"))
        if p == "/elsewhere.html":
            return html_response(self.elsewhere())
        if p == "/sitemap.xml":
            return xml_response(self.sitemap())
        return NOT_FOUND

    def manifest(self) -> dict[str, Any]:
        w = self.world
        out: dict[str, Any] = {}
        if self.key == "docs":
            out["seeds"] = [w.url("docs", "/")]
            out["url_variants"] = [
                {"raw": r, "normal": n} for m in self.modules for r, n in self.variants(m)
            ]
            u = lambda path: w.url("docs", path)  # noqa: E731
            out["disallowed"] = [
                u("/drafts/secret-plan.html"), u("/feed.txt"), u("/search?q=json"),
            ] + [u(f"/lib/{m}.html?print=1") for m in self.modules]  # fmt: skip
            out["allowed_by_wildcard"] = [
                u("/drafts/published-intro.html"), u("/feed.txt?format=html"),
            ]  # fmt: skip
            out["noindex"] = [u("/about.html"), u("/legal.html")]
            out["nofollow_only"] = [
                u("/hidden/page-1.html"), u("/hidden/page-2.html"), u("/hidden/legal-terms.html"),
            ]  # fmt: skip
            out["outside"] = ["http://external.example/", "https://docs.python.org/3/"]
            out["sitemaps"] = [u("/sitemap.xml")]
            out["canonical"] = {
                w.url(k, f"{pre}/lib/{m}.html"): u(f"/lib/{m}.html")
                for m in self.modules
                for k, pre in (("docs", "/print"), ("www", ""), ("www", "/print"))
            }
        return out
