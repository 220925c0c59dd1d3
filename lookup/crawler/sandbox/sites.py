"""The hosts of the sandbox web and what each one throws at a crawler.

Each site is a handler ``Request → Response`` plus its contribution to the
manifest — the ground truth (duplicates, traps, disallowed URLs, hostile
behaviour) that the tests judge a crawl against.
"""

from __future__ import annotations

import codecs
import contextlib
import hashlib
import html
import io
import ipaddress
import random
import re
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.utils import format_datetime, parsedate_to_datetime
from functools import lru_cache
from typing import Any
from urllib.parse import urlencode

from lookup.crawler.sandbox import content
from lookup.crawler.sandbox.web import Request, Response

__all__ = ["SandboxConfig", "World", "build_sites"]

esc = html.escape


@dataclass
class SandboxConfig:
    """Size and behaviour of the sandbox web. Times are seconds."""

    port: int = 8600
    base_address: str = "127.0.0.2"
    control_address: str = "127.0.0.1"
    doc_modules: int = 60
    stories: int = 20
    products: int = 30
    blog_posts: int = 12
    wiki_pages: int = 8
    agent: str = "LookupBot"
    crawl_delay: float = 1.0  # robots.txt Crawl-delay on docs and wiki for our agent
    slow_seconds: float = 1.0  # every answer from the slow host waits this long
    hang_seconds: float = 40.0  # robots.txt of the hung host, and the stall page
    retry_after: int = 1  # seconds in Retry-After on 429/503 from the busy host
    oversize_bytes: int = 12 * 1024 * 1024  # larger than the crawler's 10 MB cap
    time_scale: float = 1.0  # >1 makes pages change faster (freshness tests)
    calendar_year: int = 2026
    seed: int = 7
    tls_hosts: tuple[str, ...] = ("docs",)  # hosts also served over https (none: no TLS)
    tls_port: int = 0  # the https port on those hosts' addresses (0: any free port)

    @classmethod
    def small(cls, **overrides: Any) -> SandboxConfig:
        """A sandbox for tests: few pages, tiny delays."""
        base: dict[str, Any] = dict(
            port=0,
            doc_modules=6,
            stories=3,
            products=6,
            blog_posts=4,
            wiki_pages=3,
            crawl_delay=0.05,
            slow_seconds=0.1,
            hang_seconds=2.0,
            oversize_bytes=600 * 1024,
        )
        base.update(overrides)
        return cls(**base)


class World:
    """What every site knows: the config, the clock and every host's name and URL."""

    HOSTS = (
        # (key, name, address index, role)
        ("docs", "docs.sandbox.test", 0, "documentation: robots groups and wildcards"),
        ("www", "www.docs.sandbox.test", 0, "www twin of docs on the same address"),
        ("mirror", "mirror.sandbox.test", 1, "mirror of the documentation (exact dups)"),
        ("news", "news.sandbox.test", 2, "stories with near-duplicate variants"),
        ("shop", "shop.sandbox.test", 3, "faceted navigation and session ids (traps)"),
        ("calendar", "calendar.sandbox.test", 4, "infinite calendar, ../ loop, soft 404s"),
        ("blog", "blog.sandbox.test", 5, "robots.txt 404; pages change; ETag and 304"),
        ("wiki", "wiki.sandbox.test", 5, "shared address with blog; sitemap with lastmod"),
        ("closed", "closed.sandbox.test", 6, "robots.txt answers 503: crawl nothing"),
        ("hung", "hung.sandbox.test", 7, "robots.txt never answers in time: crawl nothing"),
        ("slow", "slow.sandbox.test", 8, "answers slowly; one page stalls"),
        ("busy", "busy.sandbox.test", 9, "429 and 503 with Retry-After"),
        ("redirect", "redirect.sandbox.test", 10, "redirect chains, a loop, a long chain"),
        ("junk", "junk.sandbox.test", 11, "oversize, binary, malformed, non-HTML"),
    )

    def __init__(self, config: SandboxConfig) -> None:
        self.config = config
        base = ipaddress.IPv4Address(config.base_address)
        self.names = {key: name for key, name, _, _ in self.HOSTS}
        self.addresses = {key: str(base + idx) for key, _, idx, _ in self.HOSTS}
        self.roles = {key: role for key, _, _, role in self.HOSTS}
        self.started = time.time()

    @property
    def port(self) -> int:
        return self.config.port

    def origin(self, key: str) -> str:
        return f"http://{self.names[key]}:{self.port}"

    def url(self, key: str, path: str) -> str:
        return self.origin(key) + path

    def tls(self, key: str) -> bool:
        """Is host ``key`` also served over https?"""
        return key in self.config.tls_hosts

    def https_url(self, key: str, path: str) -> str:
        """The https URL of ``path`` on host ``key`` (on the TLS port)."""
        return f"https://{self.names[key]}:{self.config.tls_port}{path}"

    @property
    def first_module(self) -> str:
        """The first documented module (a page every sandbox size has)."""
        return content.doc_modules(max(1, self.config.doc_modules))[0]

    def clock(self) -> float:
        """Seconds since the sandbox started, on the scaled freshness clock."""
        return (time.time() - self.started) * self.config.time_scale

    def wall_at(self, clock: float) -> float:
        """The wall time at which the freshness clock read ``clock``."""
        return self.started + clock / self.config.time_scale


def page(
    title: str,
    main: str,
    *,
    nav: str = "",
    head: str = "",
    footer: str = "",
    header: str = '<a href="/">Home</a>',
) -> str:
    """A page: chrome (header, nav, footer) around a ``<main>`` that carries the content."""
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{esc(title)}</title>{head}</head>\n<body>\n"
        f"<header>{header}</header>\n<nav>{nav}</nav>\n<main>\n{main}\n</main>\n"
        f"<footer>{footer}</footer>\n</body></html>\n"
    )


def html_response(body: str, status: int = 200, **kw: Any) -> Response:
    return Response(status, body, "text/html; charset=utf-8", **kw)


def text_response(body: str, status: int = 200, **kw: Any) -> Response:
    return Response(status, body, "text/plain; charset=utf-8", **kw)


NOT_FOUND = Response(404, "<h1>404 Not Found</h1>", "text/html; charset=utf-8")


@lru_cache(maxsize=1)
def zen_lines() -> list[str]:
    """The Zen of Python, from the ``this`` module's own (rot13) text."""
    with contextlib.redirect_stdout(io.StringIO()):  # importing ``this`` prints it
        import this

    return [
        line
        for line in codecs.decode(this.s, "rot13").splitlines()
        if line.strip() and "Zen" not in line
    ]


def _token(*parts: object, n: int = 12) -> str:
    return hashlib.sha256("/".join(map(str, parts)).encode()).hexdigest()[:n]


# ---------------------------------------------------------------------------------
# docs + www: robots groups, wildcards and $, print views, noindex, nofollow, sitemap
# ---------------------------------------------------------------------------------
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
        urls = "".join(
            f"<url><loc>{w.url(self.key, f'/lib/{m}.html')}</loc><lastmod>{day}</lastmod></url>"
            for m in self.modules
        )
        return (
            '<?xml version="1.0" encoding="UTF-8"?>\n'
            f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{urls}</urlset>\n'
        )

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
            return Response(200, self.sitemap(), "application/xml")
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


# ---------------------------------------------------------------------------------
# news: near-duplicates (timestamp, advert, session id) and session/tracking links
# ---------------------------------------------------------------------------------
ADVERT = (
    "Advertisement: upgrade to the sandbox premium plan today and get two months "
    "free, unlimited downloads and priority support."
)


class NewsSite:
    #: Dead links on the front page: stories that are gone, answered "200 OK, not found".
    ARCHIVE = ("budget-talks-collapse-2019", "tram-line-opening-2021")

    def __init__(self, world: World) -> None:
        self.world = world
        self.stories = content.stories(world.config.stories)
        self.by_slug = {s.slug: s for s in self.stories}
        self._rng = random.Random(world.config.seed)
        self._rng_lock = threading.Lock()

    def _sid(self) -> str:
        with self._rng_lock:
            return f"{self._rng.getrandbits(128):032x}"

    @staticmethod
    def session_token(slug: str) -> str:
        return _token("news-session", slug)

    def _story(self, story: Any, extra: str = "", advert: bool = False) -> str:
        paras = [f"<p>{esc(p)}</p>" for p in story.paragraphs]
        if advert:
            paras.insert(1, f'<p class="ad">{esc(ADVERT)}</p>')
        nav = (
            f'<a href="/live/{story.slug}.html">live coverage</a> '
            f'<a href="/promo/{story.slug}.html">sponsored edition</a> '
            f'<a href="/s/{self.session_token(story.slug)}/{story.slug}.html">continue reading</a> '
            f'<a href="/story/{story.slug}.html?sessionid={self._sid()}">permalink</a>'
        )
        main = f"<h1>{esc(story.title)}</h1>{extra}{''.join(paras)}"
        return page(story.title, main, nav=nav)

    def handle(self, req: Request) -> Response:
        p = req.path
        if p == "/robots.txt":
            return text_response("User-agent: *\nAllow: /\n")
        if p == "/":
            items = "".join(
                f'<li><a href="/story/{s.slug}.html?sessionid={self._sid()}'
                f'&amp;utm_source=frontpage">{esc(s.title)}</a></li>'
                for s in self.stories
            )
            archive = "".join(
                f'<li><a href="/story/{slug}.html">{esc(slug.replace("-", " "))}</a></li>'
                for slug in self.ARCHIVE
            )
            main = (
                f"<h1>Today's stories</h1><ul>{items}</ul>"
                f"<h2>From the archive</h2><ul>{archive}</ul>"
            )
            return html_response(page("News", main))
        m = re.fullmatch(r"/(story|live|promo)/([\w-]+)\.html", p) or re.fullmatch(
            r"/s/(\w+)/([\w-]+)\.html", p
        )
        if m and m.group(1) in ("story", "live", "promo") and m.group(2) not in self.by_slug:
            return self.missing_story(m.group(2))
        if not m or m.group(2) not in self.by_slug:
            return NOT_FOUND
        story = self.by_slug[m.group(2)]
        kind = m.group(1)
        if kind == "story":
            return html_response(self._story(story))
        if kind == "live":
            stamp = datetime.now(UTC).strftime("%A %d %B %Y, %H:%M:%S UTC")
            return html_response(self._story(story, f"<p>Last updated {stamp}</p>"))
        if kind == "promo":
            return html_response(self._story(story, advert=True))
        if kind != self.session_token(story.slug):
            return NOT_FOUND
        return html_response(self._story(story, f"<p>Welcome back, session {kind}.</p>"))

    @staticmethod
    def missing_story(slug: str) -> Response:
        """A story that is gone: 200 OK saying so, and echoing what was asked for."""
        words = esc(slug.replace("-", " "))
        main = (
            "<h1>Story not found</h1>"
            f"<p>We looked everywhere for “{words}”, but it is not in our archive. It may "
            "have been retracted, renamed or never published.</p>"
            '<p>Try <a href="/">today\'s stories</a> instead.</p>'
        )
        return html_response(page("Story not found — Sandbox News", main), soft_404=True)

    def soft_404s(self) -> list[str]:
        return [self.world.url("news", f"/story/{slug}.html") for slug in self.ARCHIVE]

    def clusters(self) -> list[dict[str, Any]]:
        w = self.world
        out = []
        for s in self.stories:
            members = [
                {"url": w.url("news", f"/story/{s.slug}.html"), "reason": "original"},
                {"url": w.url("news", f"/live/{s.slug}.html"), "reason": "timestamp"},
                {"url": w.url("news", f"/promo/{s.slug}.html"), "reason": "advert"},
                {
                    "url": w.url("news", f"/s/{self.session_token(s.slug)}/{s.slug}.html"),
                    "reason": "session-id",
                },
            ]
            out.append({"kind": "near", "members": members})
        return out


# ---------------------------------------------------------------------------------
# shop: faceted navigation, session ids in URLs
# ---------------------------------------------------------------------------------
class ShopSite:
    #: Links on the shop's front page to paths it does not have (its catch-all answers).
    DEAD = ("/gift-cards", "/clearance/2019")
    DEPARTMENTS = ("Home and garden", "Electronics", "Books", "Clothing", "Toys and games")
    PER_PAGE = 4
    SORTS = ("price", "name", "newest")
    MAX_PAGE = 40

    def __init__(self, world: World) -> None:
        self.world = world
        self.products = content.products(world.config.products)
        self._rng = random.Random(world.config.seed + 1)
        self._rng_lock = threading.Lock()

    def _visit(self) -> str:
        with self._rng_lock:
            return f"{self._rng.getrandbits(96):024x}"

    def _listing_url(self, facets: dict[str, str]) -> str:
        q = {k: v for k, v in facets.items() if v}
        return "/products" + ("?" + urlencode(q) if q else "")

    def listing(self, params: dict[str, str]) -> str:
        colour, size = params.get("colour", ""), params.get("size", "")
        sort = params.get("sort", "") or "price"
        try:
            pageno = max(1, min(int(params.get("page", "1") or 1), 10_000))
        except ValueError:
            pageno = 1
        items = [
            p
            for p in self.products
            if (not colour or p.colour == colour) and (not size or p.size == size)
        ]
        key = {"price": lambda p: p.price, "name": lambda p: p.name, "newest": lambda p: -p.sku}
        items.sort(key=key.get(sort, key["price"]))
        shown = items[(pageno - 1) * self.PER_PAGE : pageno * self.PER_PAGE]
        facets = {"colour": colour, "size": size, "sort": params.get("sort", ""), "page": ""}
        links = []
        for name, values in (
            ("colour", content.COLOURS),
            ("size", content.SIZES),
            ("sort", self.SORTS),
        ):
            for v in values:
                f = dict(facets, **{name: v})
                links.append(f'<a href="{esc(self._listing_url(f))}">{name}: {v}</a>')
        if pageno < self.MAX_PAGE:
            f = dict(facets, page=str(pageno + 1))
            links.append(f'<a href="{esc(self._listing_url(f))}">next page</a>')
        rows = "".join(
            f'<li><a href="/product/{p.sku}?sid={self._visit()}">{esc(p.name)}</a> — '
            f"{p.colour}, size {p.size.upper()}, {p.price} EUR</li>"
            for p in shown
        )
        main = (
            f"<h1>Products</h1><p>{len(items)} products match.</p>"
            f"<ul>{rows or '<li>No products match these filters.</li>'}</ul>"
        )
        nav = " ".join(links) + f' <a href="/?visit={self._visit()}">shop home</a>'
        return page("Products", main, nav=nav)

    def handle(self, req: Request) -> Response:
        p = req.path
        if p == "/robots.txt":
            return text_response("User-agent: *\nDisallow: /cart\nDisallow: /checkout\n")
        if p == "/":
            dead = "".join(f' <a href="{u}">{u.strip("/")}</a>' for u in self.DEAD)
            main = (
                "<h1>The sandbox shop</h1><p>Functions of the standard library, for sale.</p>"
                f'<p><a href="/products">All products</a>{dead}</p>'
            )
            nav = f'<a href="/?visit={self._visit()}">home</a> <a href="/cart">cart</a>'
            return html_response(page("Shop", main, nav=nav))
        if p == "/products":
            return html_response(self.listing(req.params()))
        m = re.fullmatch(r"/product/(\d+)", p)
        if m and 1 <= int(m.group(1)) <= len(self.products):
            prod = self.products[int(m.group(1)) - 1]
            related = [self.products[(prod.sku + k) % len(self.products)] for k in (0, 1, 2)]
            rel = " ".join(f'<a href="/product/{r.sku}">{esc(r.name)}</a>' for r in related)
            main = (
                f"<h1>{esc(prod.name)}</h1><pre>{esc(prod.description)}</pre>"
                f"<p>{prod.price} EUR — {prod.colour}, size {prod.size.upper()}</p>"
                f'<p><a href="/cart/add?sku={prod.sku}">add to cart</a></p>'
            )
            return html_response(page(prod.name, main, nav=f"Related: {rel}"))
        if p.startswith("/cart") or p.startswith("/checkout"):
            return html_response(page("Cart", "<h1>Your cart is empty</h1>"))
        return self.catch_all(p)

    def catch_all(self, path: str) -> Response:
        """Any other path: a generic landing page with 200 OK — a soft 404 with no
        "not found" wording anywhere, which only a comparison with a probe reveals."""
        departments = "".join(f"<li>{d}</li>" for d in self.DEPARTMENTS)
        main = (
            f"<h1>Shop the sandbox</h1><p>Browse <code>{esc(path)}</code> and more in our "
            f"departments:</p><ul>{departments}</ul>"
            "<p>Free delivery on orders over 50 EUR. Returns within 30 days, no questions "
            "asked. Our team answers every message within one working day.</p>"
        )
        return html_response(page("Sandbox shop", main), soft_404=True)

    def soft_404s(self) -> list[str]:
        return [self.world.url("shop", u) for u in self.DEAD]


# ---------------------------------------------------------------------------------
# calendar: an infinite calendar, a relative-link loop, soft 404s
# ---------------------------------------------------------------------------------
MONTHS = (
    "January February March April May June July August September October November December"
).split()


class CalendarSite:
    def __init__(self, world: World) -> None:
        self.world = world
        self.zen = zen_lines()

    def month(self, year: int, month: int) -> str:
        prev_y, prev_m = (year, month - 1) if month > 1 else (year - 1, 12)
        next_y, next_m = (year, month + 1) if month < 12 else (year + 1, 1)
        event = self.zen[(year * 12 + month) % len(self.zen)]
        nav = (
            f'<a href="/cal/{prev_y}/{prev_m:02d}.html">previous month</a> '
            f'<a href="/cal/{next_y}/{next_m:02d}.html">next month</a> '
            f'<a href="/cal/{year + 1}/{month:02d}.html">next year</a>'
        )
        main = (
            f"<h1>{MONTHS[month - 1]} {year}</h1>"
            f'<p>Meetup: <a href="/events/{year}-{month:02d}-meetup">{esc(event)}</a></p>'
        )
        return page(f"{MONTHS[month - 1]} {year}", main, nav=nav)

    def guide(self, depth: int) -> str:
        main = (
            f"<h1>Guide</h1><p>{esc(self.zen[3])}</p>"
            '<p><a href="guide/">Read the guide</a> '
            '<a href="../guide/intro/">Introduction</a></p>'
        )
        return page("Guide", main)

    def soft_404(self, path: str) -> str:
        slug = path.rstrip("/").rsplit("/", 1)[-1]
        suggestions = "".join(
            f'<a href="/events/{esc(slug)}-{i}">{esc(slug)} {i}</a> ' for i in (1, 2)
        )
        main = (
            "<h1>Sorry, we couldn't find that page</h1>"
            f"<p>Nothing on the calendar matches <code>{esc(path)}</code>. The event you are "
            "looking for does not exist or has moved.</p>"
        )
        return page("Events", main + f"<aside>Did you mean: {suggestions}</aside>")

    def handle(self, req: Request) -> Response:
        p = req.path
        y0 = self.world.config.calendar_year
        if p == "/robots.txt":
            return text_response("User-agent: *\nDisallow:\n")
        if p == "/":
            main = (
                "<h1>Community calendar</h1>"
                f'<p><a href="/cal/{y0}/11.html">This month</a> '
                '<a href="/guide/">The guide</a> '
                '<a href="/events/launch-party">Launch party</a></p>'
            )
            return html_response(page("Calendar", main))
        m = re.fullmatch(r"/cal/(\d{1,4})/(\d{2})\.html", p)
        if m and 1 <= int(m.group(1)) <= 9999 and 1 <= int(m.group(2)) <= 12:
            return html_response(self.month(int(m.group(1)), int(m.group(2))))
        if re.fullmatch(r"/guide/((guide|intro)/)*", p):
            return html_response(self.guide(p.count("/")))
        # Everything else, /events/... included: 200 OK with "not found" content.
        return html_response(self.soft_404(p), soft_404=True)

    def traps(self) -> list[dict[str, str]]:
        h = self.world.names["calendar"]
        return [
            {"host": h, "kind": "infinite-calendar", "prefix": "/cal/"},
            {"host": h, "kind": "relative-link-loop", "prefix": "/guide/"},
            {"host": h, "kind": "soft-404", "prefix": "/events/"},
        ]

    def soft_404s(self) -> list[str]:
        return [self.world.url("calendar", "/events/launch-party")]


# ---------------------------------------------------------------------------------
# blog (robots.txt 404) and wiki (same address): pages that change; ETag, 304, sitemap
# ---------------------------------------------------------------------------------
#: How often pages change, in seconds of the freshness clock (None: never).
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
        rows = "".join(
            f"<url><loc>{self.world.url('wiki', f'/wiki/{t}')}</loc>"
            f"<lastmod>{datetime.fromtimestamp(cp.modified_at(), UTC).isoformat()}"
            "</lastmod></url>"
            for t, cp in self.pages.items()
        )
        return (
            '<?xml version="1.0" encoding="UTF-8"?>\n'
            f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{rows}</urlset>\n'
        )

    def handle(self, req: Request) -> Response:
        p = req.path
        if p == "/robots.txt":
            return text_response(self.robots())
        if p == "/sitemap.xml":
            return Response(200, self.sitemap(), "application/xml")
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


# ---------------------------------------------------------------------------------
# hostile hosts
# ---------------------------------------------------------------------------------
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
            return text_response("User-agent: *\nDisallow:\n", delay=self.world.config.hang_seconds)
        return html_response(page("Hung", "<h1>You waited</h1>"))


class SlowSite:
    """Every answer waits; ``/stall.html`` waits longer than the crawler's timeout."""

    PAGES = 5

    def __init__(self, world: World) -> None:
        self.world = world
        self.zen = zen_lines()

    def handle(self, req: Request) -> Response:
        c = self.world.config
        p = req.path
        if p == "/robots.txt":
            return text_response("User-agent: *\nDisallow:\n", delay=c.slow_seconds)
        if p == "/stall.html":
            return html_response(page("Stall", "<h1>Finally</h1>"), delay=c.hang_seconds)
        if p == "/":
            items = "".join(
                f'<li><a href="/page/{i}.html">page {i}</a></li>' for i in range(1, self.PAGES + 1)
            )
            main = f'<h1>Slow site</h1><ul>{items}<li><a href="/stall.html">stall</a></li></ul>'
            return html_response(page("Slow", main), delay=c.slow_seconds)
        m = re.fullmatch(r"/page/(\d+)\.html", p)
        if m and 1 <= int(m.group(1)) <= self.PAGES:
            i = int(m.group(1))
            main = f"<h1>Slow page {i}</h1><p>{esc(self.zen[i])}</p><p>{esc(self.zen[i + 5])}</p>"
            return html_response(page(f"Slow {i}", main), delay=c.slow_seconds)
        return NOT_FOUND


class BusySite:
    """Answers 429 twice, then 503, then mostly 200 (every 7th request another 503)."""

    PAGES = 6

    def __init__(self, world: World) -> None:
        self.world = world
        self.count = 0
        self._lock = threading.Lock()
        self.zen = zen_lines()

    def handle(self, req: Request) -> Response:
        if req.path == "/robots.txt":
            return text_response("User-agent: *\nDisallow:\n")
        with self._lock:
            self.count += 1
            n = self.count
        retry = [("Retry-After", str(self.world.config.retry_after))]
        if n <= 2:
            return text_response("Too many requests", 429, headers=retry)
        if n == 3 or n % 7 == 0:
            return text_response("Service unavailable", 503, headers=retry)
        if req.path == "/":
            items = "".join(
                f'<li><a href="/item/{i}.html">item {i}</a></li>' for i in range(1, self.PAGES + 1)
            )
            return html_response(page("Busy", f"<h1>Busy site</h1><ul>{items}</ul>"))
        m = re.fullmatch(r"/item/(\d+)\.html", req.path)
        if m and 1 <= int(m.group(1)) <= self.PAGES:
            i = int(m.group(1))
            main = f"<h1>Item {i}</h1><p>{esc(self.zen[i + 10])}</p>"
            return html_response(page(f"Item {i}", main))
        return NOT_FOUND


class RedirectSite:
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
            return text_response("User-agent: *\nDisallow:\n")
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


MALFORMED = """<html><head><title>Broken <b>page</title>
<body><div><p>This page is broken in many ways. <a href="/target-1.html">valid link
<a href="http://[::1">bad ipv6</a> <a href="javascript:alert(1)">js</a>
<a href="mailto:someone@sandbox.test">mail</a> <a href="  /target-2.html  ">spaces</a>
<table><tr><td>cell<td>cell two</table></div></div></span>
<a href='/target-3.html'>single quotes</a> <a href=/target-4.html>no quotes</a>
<script>document.write("<a href='/scripted.html'>x</a>")</script>
<!-- <a href="/commented.html">commented out</a> -->
<a href="http://junk.sandbox.test:99999/x">bad port</a> <a href="">empty</a> <a>no href</a>
&nbsp;&amp &lt; &#xZZ; text after entities <p><p><p><li>orphan item
<a href="/target-5.html"><div>block in link</div></a>
"""


class JunkSite:
    def __init__(self, world: World) -> None:
        self.world = world
        self.zen = zen_lines()

    def handle(self, req: Request) -> Response:
        p = req.path
        c = self.world.config
        if p == "/robots.txt":
            return text_response("User-agent: *\nDisallow:\n")
        if p == "/":
            links = [
                "/huge.html", "/huge-chunked.html", "/binary.html", "/image.png",
                "/report.pdf", "/broken.html",
                "/latin1.html", "/empty.html", "/no-type.html",
            ]  # fmt: skip
            items = "".join(f'<li><a href="{u}">{u}</a></li>' for u in links)
            return html_response(page("Junk", f"<h1>Junk</h1><ul>{items}</ul>"))
        if p in ("/huge.html", "/huge-chunked.html"):
            chunk = (("<p>" + " ".join(self.zen) + "</p>\n") * 8).encode()
            count = c.oversize_bytes // len(chunk) + 1
            return Response(200, stream=(chunk, count), chunked=p == "/huge-chunked.html")
        if p == "/binary.html":
            rng = random.Random(c.seed)
            return Response(200, bytes(rng.getrandbits(8) for _ in range(4096)))
        if p == "/image.png":
            png = bytes.fromhex(
                "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
                "1f15c4890000000d4944415478da63f8cfc0f01f0005000201a5f1b5a60000000049454e44ae426082"
            )
            return Response(200, png, "image/png")
        if p == "/report.pdf":
            pdf = b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n1 0 obj<<>>endobj\n%%EOF\n"
            return Response(200, pdf, "application/pdf")
        if p == "/broken.html":
            return html_response(MALFORMED)
        if p == "/latin1.html":
            main = "<h1>Caf\xe9 cr\xe8me br\xfbl\xe9e</h1><p>" + self.zen[2] + "</p>"
            body = page("Caf\xe9", main)
            return Response(200, body.encode("latin-1"), "text/html; charset=utf-8")
        if p == "/empty.html":
            return html_response("")
        if p == "/no-type.html":
            main = f"<h1>No content type</h1><p>{esc(self.zen[4])}</p>"
            return Response(200, page("No type", main).encode(), None)
        m = re.fullmatch(r"/target-(\d)\.html", p)
        if m:
            main = f"<h1>Target {m.group(1)}</h1><p>{esc(self.zen[int(m.group(1)) + 13])}</p>"
            return html_response(page("Target", main))
        return NOT_FOUND

    def manifest(self) -> dict[str, Any]:
        u = lambda path: self.world.url("junk", path)  # noqa: E731
        return {
            "oversize": [u("/huge.html"), u("/huge-chunked.html")],
            "binary_as_html": u("/binary.html"),
            "non_html": [u("/image.png"), u("/report.pdf")],
            "malformed": u("/broken.html"),
            "malformed_links": [u(f"/target-{i}.html") for i in range(1, 6)],
            "never_linked": [u("/scripted.html"), u("/commented.html")],
        }


@dataclass
class Sites:
    """Every site object, by host key."""

    world: World
    handlers: dict[str, Any] = field(default_factory=dict)


def build_sites(world: World) -> Sites:
    """Instantiate every site of the sandbox web."""
    docs = DocsSite(world, "docs")
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
    }
    return Sites(world, handlers)
