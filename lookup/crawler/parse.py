"""Parse a fetched HTML page: main text, title, links, canonical link and robots meta.

Parsing uses ``selectolax`` (the lexbor engine), which copes with any malformed
markup the web serves. The *main text* is what duplicate detection hashes: the
``<main>`` (or ``<article>``, or ``[role=main]``) element when the page marks one,
else the body, always without scripts, styles, navigation, headers, footers and
asides — so the same article with different chrome hashes the same.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from selectolax.lexbor import LexborHTMLParser

__all__ = ["ParsedPage", "RobotsDirectives", "parse_html", "parse_robots_directives"]

_CHROME = ["script", "style", "noscript", "template", "nav", "header", "footer", "aside"]
_WS = re.compile(r"\s+")
#: Names a page-level robots directive may be addressed to (``robots`` = everyone).
ROBOTS_META_NAMES = ("robots",)


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
    for link in tree.css("link[rel][href]"):
        rels = (link.attributes.get("rel") or "").lower().split()
        if "canonical" in rels:
            canonical = (link.attributes.get("href") or "").strip() or None
            break

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
    return ParsedPage(title, text, links, canonical, base_url, robots, heading[:300])
