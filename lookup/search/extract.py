"""Turn a fetched page into what the index needs: title, main text and links.

A real HTML parser (selectolax's lexbor engine) does the parsing; this module only
decides what counts as the page's content: boilerplate containers (scripts, styles,
navigation, headers, footers, sidebars, forms) are removed, and ``<main>`` or
``<article>`` is preferred over the whole ``<body>`` when the page marks one.
A PDF (:func:`extract_pdf`) gives its text and title — the metadata title, else its
first line — read by the same function the crawler fingerprints it with.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from urllib.parse import urljoin, urlsplit, urlunsplit

from selectolax.lexbor import LexborHTMLParser

from lookup.kit.pdftext import PdfError, pdf_text
from lookup.kit.urlnorm import normalize_url

#: Elements whose text is never part of a page's main content.
BOILERPLATE = [
    "script",
    "style",
    "noscript",
    "template",
    "svg",
    "nav",
    "header",
    "footer",
    "aside",
    "form",
    "iframe",
    "button",
    "select",
]

#: Stored and indexed text is capped per page (giant pages would dominate memory).
MAX_TEXT_CHARS = 100_000
MAX_TITLE_CHARS = 300

_SPACE = re.compile(r"\s+")


@dataclass
class ExtractedPage:
    """The parts of a page the index keeps."""

    title: str
    text: str
    links: list[str] = field(default_factory=list)
    noindex: bool = False


def _clean(text: str) -> str:
    return _SPACE.sub(" ", text).strip()


@lru_cache(maxsize=1 << 18)
def comparable_url(url: str) -> str:
    """A URL's comparable form, exactly as the crawler normalises the URLs it fetches.

    Pages and the links pointing at them must meet on the same string for in-link
    counts, so this is the crawler's normaliser (lower-case scheme and host, no
    default port or fragment, sorted query without tracking parameters); a URL it
    rejects keeps a minimal normal form. Cached: the same links recur on page after page.
    """
    normal = normalize_url(url)
    if normal is not None:
        return normal
    try:
        parts = urlsplit(url.strip())
        return urlunsplit(
            (parts.scheme.lower(), parts.netloc.lower(), parts.path or "/", parts.query, "")
        )
    except ValueError:
        return url.strip()


def extract_page(html: str, url: str = "", with_links: bool = True) -> ExtractedPage:
    """Title, main text and (unless ``with_links`` is off) normalised outgoing links."""
    tree = LexborHTMLParser(html)
    title = ""
    node = tree.css_first("title")
    if node is not None:
        title = _clean(node.text())
    if not title:
        og = tree.css_first('meta[property="og:title"]')
        if og is not None:
            title = _clean(og.attributes.get("content") or "")
    noindex = False
    for meta in tree.css("meta[name]"):
        if (meta.attributes.get("name") or "").lower() == "robots":
            if "noindex" in (meta.attributes.get("content") or "").lower():
                noindex = True

    links: list[str] = []
    seen: set[str] = set()
    for a in tree.css("a[href]") if with_links else ():
        href = (a.attributes.get("href") or "").strip()
        if not href or href.startswith(("#", "javascript:", "mailto:", "tel:", "data:")):
            continue
        if "nofollow" in (a.attributes.get("rel") or "").lower():
            continue
        try:
            absolute = comparable_url(urljoin(url, href)) if url else comparable_url(href)
        except ValueError:
            continue
        if absolute.startswith(("http://", "https://")) and absolute not in seen:
            seen.add(absolute)
            links.append(absolute)

    tree.strip_tags(BOILERPLATE)
    root = tree.css_first("main") or tree.css_first("article") or tree.body or tree.root
    text = _clean(root.text(separator=" ")) if root is not None else ""
    if not title:
        h1 = tree.css_first("h1")
        if h1 is not None:
            title = _clean(h1.text())
    return ExtractedPage(
        title=title[:MAX_TITLE_CHARS], text=text[:MAX_TEXT_CHARS], links=links, noindex=noindex
    )


def extract_pdf(body: bytes) -> ExtractedPage | None:
    """A PDF's title and text (no links: they are not followed); None if it has no text."""
    try:
        doc = pdf_text(body)
    except PdfError:
        return None
    return ExtractedPage(title=doc.title[:MAX_TITLE_CHARS], text=doc.text[:MAX_TEXT_CHARS])
