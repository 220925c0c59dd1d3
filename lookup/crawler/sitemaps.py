"""Sitemaps as real sites serve them: XML, gzip, plain text, indexes, RSS and Atom feeds.

:func:`parse_sitemap` reads one fetched body (the crawler fetched it through the
frontier, under the host's politeness) and returns the URLs it lists with their
``lastmod`` hints:

- a gzip body (``sitemap.xml.gz``, whatever its content type) is unpacked first, at most
  50 MB unpacked (the sitemaps.org limit), so a small bomb cannot fill memory;
- ``<urlset>`` lists pages, ``<sitemapindex>`` lists more sitemaps (of any kind);
- RSS 2.0 (``<item><link>``, ``<pubDate>``) and Atom (``<entry><link href>``,
  ``<updated>``) feeds are read as sitemaps of pages, as search engines accept them;
- a text sitemap is one absolute ``http(s)`` URL per line (sitemaps.org §"Text file");
- at most 50,000 entries are read from one file (the same limit).

XML is parsed with ``defusedxml``: a sitemap may not declare entities or a DTD (no
"billion laughs", no external entities). A body that is none of these raises
:class:`SitemapError` with the reason; the crawler counts it as a
``sitemap-unparseable`` outcome instead of silently finding nothing.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from xml.etree.ElementTree import Element

import defusedxml.ElementTree as SafeET
from defusedxml import DefusedXmlException

__all__ = [
    "MAX_ENTRIES",
    "MAX_UNPACKED_BYTES",
    "SitemapDoc",
    "SitemapError",
    "parse_sitemap",
    "sitemap_sources",
]

#: sitemaps.org: at most 50,000 URLs and 50 MB (uncompressed) per sitemap file.
MAX_ENTRIES = 50_000
MAX_UNPACKED_BYTES = 50 * 1024 * 1024


class SitemapError(ValueError):
    """A body that is not a sitemap this crawler can read, and why."""


@dataclass(frozen=True)
class SitemapDoc:
    """What one sitemap lists. ``kind``: urlset, index, text, rss or atom; an index lists
    sitemaps, the others pages. ``entries`` are ``(url as written, lastmod or None)``."""

    kind: str
    entries: list[tuple[str, float | None]] = field(default_factory=list)

    @property
    def lists_sitemaps(self) -> bool:
        return self.kind == "index"


def parse_sitemap(body: bytes) -> SitemapDoc:
    """The URLs ``body`` lists (see the module docstring); :class:`SitemapError` if none."""
    raw = _gunzip(body) if body[:2] == b"\x1f\x8b" else body
    head = raw.lstrip(b"\xef\xbb\xbf \t\r\n")
    if not head:
        raise SitemapError("the sitemap is empty")
    if head[:1] == b"<":
        return _xml(raw)
    return _text(raw)


def sitemap_sources(robots_state: str, named: list[str], origin: str) -> list[tuple[str, str]]:
    """The sitemaps to read for a host once its robots.txt is known, each with its kind:
    the ones robots.txt names (``sitemap``), else ``ORIGIN/sitemap.xml`` tried
    (``sitemap-probe``: its 404 is the usual answer, not an error) — when robots.txt lets
    the crawler in at all (a rules file, or none: a 4xx). The URLs go through admission
    like any link: scope, robots.txt, the host's turn."""
    if robots_state == "rules" and named:
        return [(url, "sitemap") for url in named]
    if robots_state in ("rules", "allow-all"):
        return [(f"{origin}/sitemap.xml", "sitemap-probe")]
    return []


def _gunzip(body: bytes) -> bytes:
    unpacker = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        out = unpacker.decompress(body, MAX_UNPACKED_BYTES)
    except zlib.error as exc:
        raise SitemapError(f"the gzip data is damaged ({exc})") from None
    if unpacker.unconsumed_tail:
        raise SitemapError(f"unpacked, it is larger than {MAX_UNPACKED_BYTES // 2**20} MB")
    if not unpacker.eof:
        raise SitemapError("the gzip data is cut short")
    return out


def _local(tag: object) -> str:
    """An element's name without its namespace (``{http://…}url`` → ``url``)."""
    return str(tag).rsplit("}", 1)[-1].lower()


def _children(node: Element, name: str) -> list[Element]:
    return [c for c in node if _local(c.tag) == name]


def _first_text(node: Element, *names: str) -> str | None:
    for name in names:
        for child in _children(node, name):
            if child.text and child.text.strip():
                return child.text.strip()
    return None


def _iso_time(text: str | None) -> float | None:
    """A W3C datetime (``2026-01-31``, ``2026-01-31T10:00:00Z``) as epoch seconds."""
    if not text:
        return None
    try:
        stamp = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    if stamp.tzinfo is None:
        stamp = stamp.replace(tzinfo=UTC)
    return stamp.timestamp()


def _rfc822_time(text: str | None) -> float | None:
    """An RSS ``pubDate`` (``Mon, 05 Jan 2026 10:00:00 GMT``) as epoch seconds."""
    if not text:
        return None
    try:
        stamp = parsedate_to_datetime(text)
    except (TypeError, ValueError):
        return None
    if stamp.tzinfo is None:
        stamp = stamp.replace(tzinfo=UTC)
    return stamp.timestamp()


def _xml(raw: bytes) -> SitemapDoc:
    try:
        root = SafeET.fromstring(raw, forbid_dtd=True)
    except DefusedXmlException as exc:
        what = type(exc).__name__
        raise SitemapError(f"the XML declares what a sitemap may not ({what})") from None
    except SafeET.ParseError as exc:
        raise SitemapError(f"not well-formed XML ({exc})") from None
    tag = _local(root.tag)
    entries: list[tuple[str, float | None]] = []
    if tag in ("urlset", "sitemapindex"):
        item = "url" if tag == "urlset" else "sitemap"
        for node in _children(root, item)[:MAX_ENTRIES]:
            loc = _first_text(node, "loc")
            if loc:
                entries.append((loc, _iso_time(_first_text(node, "lastmod"))))
        return SitemapDoc("urlset" if tag == "urlset" else "index", entries)
    if tag == "rss":
        for channel in _children(root, "channel"):
            for node in _children(channel, "item")[: MAX_ENTRIES - len(entries)]:
                link = _first_text(node, "link")
                if link:
                    entries.append((link, _rfc822_time(_first_text(node, "pubdate"))))
        return SitemapDoc("rss", entries)
    if tag == "feed":
        for node in _children(root, "entry")[:MAX_ENTRIES]:
            links = _children(node, "link")
            chosen = [x for x in links if x.get("rel", "alternate") == "alternate"] or links
            href = (chosen[0].get("href") or "").strip() if chosen else ""
            if href:
                when = _first_text(node, "updated", "published")
                entries.append((href, _iso_time(when)))
        return SitemapDoc("atom", entries)
    raise SitemapError(f"the root element <{tag}> is not a sitemap, an index or a feed")


def _text(raw: bytes) -> SitemapDoc:
    text = raw.decode("utf-8", errors="replace")
    entries: list[tuple[str, float | None]] = []
    for line in text.splitlines():
        url = line.strip()
        if url.lower().startswith(("http://", "https://")) and " " not in url:
            entries.append((url, None))
            if len(entries) >= MAX_ENTRIES:
                break
    if not entries:
        raise SitemapError("neither XML nor a text sitemap (no http or https URL on any line)")
    return SitemapDoc("text", entries)
