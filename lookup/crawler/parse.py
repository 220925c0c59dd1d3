"""Parse a fetched page: main text, title, links, canonical link, robots meta, feeds, refresh.

Parsing uses ``selectolax`` (the lexbor engine), which copes with any malformed
markup the web serves. The *main text* is what duplicate detection hashes: the
``<main>`` (or ``<article>``, or ``[role=main]``) element when the page marks one,
else the body, always without scripts, styles, navigation, headers, footers and
asides — so the same article with different chrome hashes the same.

Two more things a page can say: ``<link rel="alternate">`` to an RSS or Atom feed (a
discovery source, read like a sitemap), and ``<meta http-equiv="refresh">`` — a redirect
written into the page, read as the HTML standard's declarative refresh does
(:func:`parse_refresh`) and ignored inside ``<noscript>`` and ``<script>``, as Scrapy's
``MetaRefreshMiddleware`` ignores it there. A PDF answer becomes the same
:class:`ParsedPage` (:func:`parse_pdf`): its text and title, no links.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from selectolax.lexbor import LexborHTMLParser, LexborNode

from lookup.kit.pdftext import PdfError, pdf_text

__all__ = [
    "FEED_TYPES",
    "ParsedPage",
    "RobotsDirectives",
    "parse_html",
    "parse_pdf",
    "parse_refresh",
    "parse_robots_directives",
]

_CHROME = ["script", "style", "noscript", "template", "nav", "header", "footer", "aside"]
_WS = re.compile(r"\s+")
#: Names a page-level robots directive may be addressed to (``robots`` = everyone).
ROBOTS_META_NAMES = ("robots",)
#: ``<link rel="alternate" type=…>`` values that announce a feed.
FEED_TYPES = ("application/rss+xml", "application/atom+xml")
#: Elements a meta refresh inside is not acted on (it is for browsers without scripts).
_REFRESH_IGNORED = ("noscript", "script")
_HTML_SPACE = "\t\n\f\r "
_DELAY = re.compile(r"[\t\n\f\r ]*(\d+(?:\.\d*)?|\.\d+)[\d.]*")


@dataclass(frozen=True)
class RobotsDirectives:
    """What a page says about itself: ``noindex`` (do not index) and ``nofollow``."""

    noindex: bool = False
    nofollow: bool = False

    def merge(self, other: RobotsDirectives) -> RobotsDirectives:
        return RobotsDirectives(self.noindex or other.noindex, self.nofollow or other.nofollow)


@dataclass
class ParsedPage:
    """The parts of a page the crawler uses."""

    title: str
    text: str
    links: list[str] = field(default_factory=list)  # raw hrefs, resolved against base_url
    canonical: str | None = None
    base_url: str | None = None
    robots: RobotsDirectives = field(default_factory=RobotsDirectives)
    heading: str = ""  # the first <h1> (what the page says it is; soft-404 wording)
    feeds: list[str] = field(default_factory=list)  # RSS/Atom hrefs from <link rel=alternate>
    refresh: tuple[float, str] | None = None  # <meta http-equiv=refresh>: (delay s, raw URL)
    document_error: str | None = None  # a PDF whose text could not be read: why


def parse_robots_directives(value: str, agent: str) -> RobotsDirectives:
    """Parse a meta-robots or ``X-Robots-Tag`` value.

    ``X-Robots-Tag`` may address one crawler (``lookupbot: noindex``); a part
    addressed to another crawler is ignored. ``none`` means noindex + nofollow.
    """
    noindex = nofollow = False
    agent = agent.lower()
    for part in value.split(","):
        token = part.strip().lower()
        if ":" in token:
            target, _, rest = token.partition(":")
            target = target.strip()
            # "unavailable_after: <date>" is a directive, not an agent prefix.
            if target not in ("unavailable_after", "max-snippet", "max-image-preview",
                              "max-video-preview"):  # fmt: skip
                if target != agent:
                    continue
                token = rest.strip()
        for word in token.split():
            if word in ("noindex", "none"):
                noindex = True
            if word in ("nofollow", "none"):
                nofollow = True
    return RobotsDirectives(noindex, nofollow)


def _clean(text: str) -> str:
    return _WS.sub(" ", text.replace("\xa0", " ")).strip()


def parse_refresh(content: str) -> tuple[float, str] | None:
    """A refresh's ``content`` as ``(delay in seconds, URL as written)``; ``""`` is the page
    itself, None a value that is no refresh.

    The HTML standard's "shared declarative refresh steps": a number, then ``;`` or ``,``
    or space, then the URL, optionally after ``url=`` and inside quotes — so ``5;URL='/a'``,
    ``0, /a`` and ``0 ; url = /a`` are all ``/a``. (w3lib's ``get_meta_refresh``, which
    Scrapy uses, reads the ``url=`` form alone; on that form the two agree, a fractional
    delay kept as w3lib keeps it where the standard drops the fraction.)
    """
    m = _DELAY.match(content)
    if m is None:
        return None
    delay, rest = float(m.group(1)), content[m.end() :]
    if rest and rest[0] not in ";," + _HTML_SPACE:
        return None
    rest = rest.lstrip(_HTML_SPACE)
    if rest[:1] in (";", ","):
        rest = rest[1:].lstrip(_HTML_SPACE)
    # "url =", letter by letter: a partial match is consumed, as browsers do ("0; ufoo"
    # goes to "foo").
    for n, letter in enumerate("url"):
        if rest[n : n + 1].lower() != letter:
            rest = rest[n:]
            break
    else:
        rest = rest[3:].lstrip(_HTML_SPACE)
        if rest[:1] == "=":
            rest = rest[1:].lstrip(_HTML_SPACE)
    if rest[:1] in ("'", '"'):
        quote, rest = rest[0], rest[1:]
        rest = rest.split(quote, 1)[0]
    return delay, rest.strip(_HTML_SPACE)


def _inside(node: LexborNode, tags: tuple[str, ...]) -> bool:
    parent = node.parent
    while parent is not None:
        if parent.tag in tags:
            return True
        parent = parent.parent
    return False


def _refresh_of(tree: LexborHTMLParser) -> tuple[float, str] | None:
    """The page's first meta refresh outside ``<noscript>`` and ``<script>``."""
    for meta in tree.css("meta[http-equiv]"):
        if (meta.attributes.get("http-equiv") or "").strip().lower() != "refresh":
            continue
        if _inside(meta, _REFRESH_IGNORED):
            continue
        found = parse_refresh(meta.attributes.get("content") or "")
        if found is not None:
            return found
    return None


def parse_pdf(body: bytes) -> ParsedPage:
    """A PDF as a page: its title and text (no links); ``document_error`` if unreadable."""
    try:
        doc = pdf_text(body)
    except PdfError as exc:
        return ParsedPage("", "", document_error=str(exc))
    return ParsedPage(doc.title, doc.text)


def parse_html(html: str, agent: str = "lookupbot") -> ParsedPage:
    """Extract title, main text, links, canonical link and robots meta from ``html``."""
    tree = LexborHTMLParser(html)
    title_node = tree.css_first("title")
    title = _clean(title_node.text()) if title_node is not None else ""

    robots = RobotsDirectives()
    for meta in tree.css("meta[name]"):
        name = (meta.attributes.get("name") or "").strip().lower()
        if name in ROBOTS_META_NAMES or name == agent.lower():
            robots = robots.merge(
                parse_robots_directives(meta.attributes.get("content") or "", agent)
            )

    canonical = None
    feeds: list[str] = []
    for link in tree.css("link[rel][href]"):
        rels = (link.attributes.get("rel") or "").lower().split()
        linked = (link.attributes.get("href") or "").strip()
        if "canonical" in rels and canonical is None:
            canonical = linked or None
        kind = (link.attributes.get("type") or "").split(";")[0].strip().lower()
        if "alternate" in rels and kind in FEED_TYPES and linked:
            feeds.append(linked)
    refresh = _refresh_of(tree)

    h1 = tree.css_first("h1")
    heading = _clean(h1.text()) if h1 is not None else ""

    base_node = tree.css_first("base[href]")
    base_url = (base_node.attributes.get("href") or "").strip() or None if base_node else None

    links: list[str] = []
    if not robots.nofollow:
        for a in tree.css("a[href], area[href]"):
            rels = (a.attributes.get("rel") or "").lower().split()
            if "nofollow" in rels:
                continue
            href = a.attributes.get("href")
            if href:
                links.append(href)

    root = (
        tree.css_first("main")
        or tree.css_first("article")
        or tree.css_first("[role=main]")
        or tree.body
    )
    text = ""
    if root is not None:
        for tag in _CHROME:
            for node in root.css(tag):
                node.decompose()
        text = _clean(root.text(separator=" "))
    return ParsedPage(
        title, text, links, canonical, base_url, robots, heading[:300], feeds, refresh
    )
