"""What every host of the sandbox web shares: its config, the world, page and answer helpers.

Each site is a handler ``Request → Response`` plus its contribution to the
manifest — the ground truth (duplicates, traps, disallowed URLs, hostile
behaviour) that the tests judge a crawl against. The sites live one kind of host
to a module beside this one; :mod:`.registry` puts them together.
"""

from __future__ import annotations

import codecs
import contextlib
import html
import io
import ipaddress
import time
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from lookup.crawler.sandbox import content
from lookup.crawler.sandbox.web import Response

__all__ = [
    "ALLOW_ALL",
    "NOT_FOUND",
    "SandboxConfig",
    "World",
    "esc",
    "html_response",
    "page",
    "sitemap_xml",
    "text_response",
    "xml_response",
    "zen_lines",
]

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
        ("moved", "moved.sandbox.test", 12, "robots.txt redirects to www; a page goes away"),
        ("www-moved", "www.moved.sandbox.test", 12, "the moved site's new name: its robots.txt"),
        ("hub", "hub.sandbox.test", 19, "a directory: one link to every host (a seed)"),
        ("intl", "intl.sandbox.test", 13, "pages in Japanese and Hindi (CJK and Devanagari)"),
        ("app", "app.sandbox.test", 17, "a single-page app: its text appears only when rendered"),
        ("press", "press.sandbox.test", 16, "PDFs, RSS/Atom feeds, meta refresh, /sitemap.xml"),
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
    lang: str = "en",
) -> str:
    """A page: chrome (header, nav, footer) around a ``<main>`` that carries the content."""
    return (
        f'<!DOCTYPE html>\n<html lang="{lang}"><head><meta charset="utf-8">'
        f"<title>{esc(title)}</title>{head}</head>\n<body>\n"
        f"<header>{header}</header>\n<nav>{nav}</nav>\n<main>\n{main}\n</main>\n"
        f"<footer>{footer}</footer>\n</body></html>\n"
    )


def html_response(body: str, status: int = 200, **kw: Any) -> Response:
    return Response(status, body, "text/html; charset=utf-8", **kw)


def text_response(body: str, status: int = 200, **kw: Any) -> Response:
    return Response(status, body, "text/plain; charset=utf-8", **kw)


def xml_response(body: str) -> Response:
    return Response(200, body, "application/xml")


NOT_FOUND = Response(404, "<h1>404 Not Found</h1>", "text/html; charset=utf-8")

#: A robots.txt with no rules for anyone: crawl freely.
ALLOW_ALL = "User-agent: *\nDisallow:\n"


def sitemap_xml(entries: Iterable[tuple[str, str]]) -> str:
    """A sitemap ``<urlset>`` of ``(loc, lastmod)`` entries."""
    rows = "".join(
        f"<url><loc>{loc}</loc><lastmod>{lastmod}</lastmod></url>" for loc, lastmod in entries
    )
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{rows}</urlset>\n'
    )


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
