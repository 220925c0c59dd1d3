"""The press host: what a site serves besides HTML links — PDFs, feeds, meta refresh, a
sitemap nobody names.

- ``robots.txt`` names no sitemap, yet ``/sitemap.xml`` exists and lists a page no page
  links (found only by trying ``/sitemap.xml``) and one robots.txt disallows;
- the front page declares an RSS and an Atom feed in ``<link rel="alternate">``; each
  lists a release no page links (found only through the feed);
- ``/reports/`` holds real PDFs, written here byte by byte (objects, content streams,
  cross-reference table): one with a metadata ``/Title``, one without (its first line is
  its title), and one cut short (a damaged file);
- ``/refresh/`` pages leave by ``<meta http-equiv="refresh">``: at once, after ten
  minutes (too long to be a redirect), only inside ``<noscript>`` (ignored, as Scrapy
  does), in a chain longer than the redirect limit, to a page robots.txt disallows and to
  another host (the hub: out of scope for a crawl limited to this host).
"""

from __future__ import annotations

import re
from typing import Any

from lookup.crawler.sandbox.sites.base import (
    NOT_FOUND,
    World,
    esc,
    html_response,
    page,
    sitemap_xml,
    text_response,
)
from lookup.crawler.sandbox.web import Request, Response

__all__ = ["PDF_REPORTS", "PressSite", "pdf_document"]

#: path → (metadata title or None, lines of text). The words are the reports' own.
PDF_REPORTS: dict[str, tuple[str | None, tuple[str, ...]]] = {
    "/reports/annual-report.pdf": (
        "Harbour Authority Annual Report",
        (
            "Harbour Authority: the year in review",
            "Tidal turbines under the breakwater supplied a third of the quay's power.",
            "Dredging of the northern channel finished two months early.",
            "Cormorant numbers on the outer mole doubled after the lighting change.",
        ),
    ),
    "/reports/field-notes.pdf": (
        None,
        (
            "Field Notes from the Salt Marsh",
            "Samphire grows thickest where the creek floods twice a day.",
            "A curlew was ringed near the sluice gate on the first of March.",
        ),
    ),
}
DAMAGED_PDF = "/reports/damaged.pdf"

#: path → (title, text) of the HTML pages only a feed, the sitemap or a refresh leads to.
PAGES: dict[str, tuple[str, str]] = {
    "/releases/new-home.html": (
        "Our new home",
        "The press office moved to the old customs house by the ferry ramp.",
    ),
    "/releases/rss-only.html": (
        "Ferry timetable changes",
        "From April the morning ferry leaves at a quarter past seven, announced by the RSS feed.",
    ),
    "/releases/atom-only.html": (
        "Lighthouse open days",
        "The lighthouse opens its lantern room to visitors on summer weekends.",
    ),
    "/archive/2019-annual.html": (
        "Archive: the 2019 season",
        "In 2019 the harbour welcomed its first electric pilot boat, the Kittiwake.",
    ),
    "/releases/chain-end.html": (
        "End of the chain",
        "This page closes a long chain of refreshing pages.",
    ),
}

CHAIN = 8  # refresh pages in the chain: longer than the crawler's redirect limit (5)


def _pdf_string(text: str) -> bytes:
    """A PDF literal string in WinAnsi bytes, ``\\``, ``(`` and ``)`` escaped."""
    raw = text.encode("cp1252", errors="replace")
    return b"(" + raw.replace(b"\\", b"\\\\").replace(b"(", b"\\(").replace(b")", b"\\)") + b")"


def pdf_document(title: str | None, lines: tuple[str, ...] | list[str]) -> bytes:
    """A one-page PDF 1.4 of ``lines`` in Helvetica (the first one larger, as a heading),
    with ``title`` as its metadata ``/Title`` (UTF-16, any script) when given."""
    ops = [b"BT /F1 18 Tf 72 740 Td 24 TL"]
    for n, line in enumerate(lines):
        if n == 1:
            ops.append(b"/F1 11 Tf 16 TL")
        ops.append(_pdf_string(line) + (b" Tj" if n == 0 else b" '"))
    ops.append(b"ET")
    stream = b"\n".join(ops)
    info = b"<< /Producer (Lookup sandbox web)"
    if title is not None:
        info += b" /Title <FEFF" + title.encode("utf-16-be").hex().upper().encode() + b">"
    info += b" >>"
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
        b"/Resources << /Font << /F1 4 0 R >> >> /Contents 5 0 R >>",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
        b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream",
        info,
    ]
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R /Info 6 0 R >>\n" % (len(objects) + 1)
    out += b"startxref\n%d\n%%%%EOF\n" % xref
    return bytes(out)


def _refresh_page(title: str, content: str, *, noscript: bool = False) -> str:
    meta = f'<meta http-equiv="refresh" content="{esc(content)}">'
    head = f"<noscript>{meta}</noscript>" if noscript else meta
    main = f"<h1>{esc(title)}</h1><p>This page moves on by itself: {esc(content)}.</p>"
    return page(title, main, head=head)


class PressSite:
    """A press office: PDF reports, RSS and Atom feeds, meta refreshes, an unnamed sitemap."""

    def __init__(self, world: World, key: str = "press") -> None:
        self.world = world
        self.key = key

    def _url(self, path: str) -> str:
        return self.world.url(self.key, path)

    def front(self) -> str:
        head = (
            '<link rel="alternate" type="application/rss+xml" title="Releases" href="/feed.rss">'
            '<link rel="alternate" type="application/atom+xml" title="Releases" href="/feed.atom">'
        )
        links = [
            *PDF_REPORTS, DAMAGED_PDF, "/refresh/now", "/refresh/later", "/refresh/noscript",
            "/refresh/chain/1", "/refresh/to-internal", "/refresh/elsewhere",
        ]  # fmt: skip
        items = "".join(f'<li><a href="{esc(u)}">{esc(u)}</a></li>' for u in links)
        main = (
            "<h1>Press office</h1><p>Reports as PDF, releases by feed, and pages that have"
            f" moved on.</p><ul>{items}</ul>"
        )
        return page("Press office", main, head=head)

    def rss(self) -> str:
        link = esc(self._url("/releases/rss-only.html"))
        return (
            '<?xml version="1.0" encoding="UTF-8"?>\n<rss version="2.0"><channel>'
            f"<title>Releases</title><link>{esc(self._url('/'))}</link>"
            f"<item><title>Ferry timetable changes</title><link>{link}</link>"
            "<pubDate>Mon, 05 Jan 2026 10:00:00 GMT</pubDate></item></channel></rss>\n"
        )

    def atom(self) -> str:
        link = esc(self._url("/releases/atom-only.html"))
        return (
            '<?xml version="1.0" encoding="utf-8"?>\n'
            '<feed xmlns="http://www.w3.org/2005/Atom"><title>Releases</title>'
            f"<id>{esc(self._url('/'))}</id><updated>2026-01-05T10:00:00Z</updated>"
            f'<entry><title>Lighthouse open days</title><link href="{link}"/>'
            f"<id>{link}</id><updated>2026-01-05T10:00:00Z</updated></entry></feed>\n"
        )

    def handle(self, req: Request) -> Response:
        p = req.path
        if p == "/robots.txt":  # no Sitemap line: the crawler has to try /sitemap.xml
            return text_response("User-agent: *\nDisallow: /internal/\n")
        if p in ("/", "/index.html"):
            return html_response(self.front())
        if p == "/sitemap.xml":
            day = "2026-01-05"
            entries = [(self._url("/archive/2019-annual.html"), day)]
            entries.append((self._url("/internal/draft.html"), day))
            return Response(200, sitemap_xml(entries), "application/xml")
        if p == "/feed.rss":
            return Response(200, self.rss(), "application/rss+xml")
        if p == "/feed.atom":
            return Response(200, self.atom(), "application/atom+xml")
        if p in PDF_REPORTS:
            title, lines = PDF_REPORTS[p]
            return Response(200, pdf_document(title, lines), "application/pdf")
        if p == "/reports/untyped":  # linked from nowhere: a PDF sent without a type
            title, lines = PDF_REPORTS["/reports/field-notes.pdf"]
            return Response(200, pdf_document(title, lines), None)
        if p == DAMAGED_PDF:
            whole = pdf_document("Damaged", ("This file was cut short in transit.",))
            return Response(200, whole[: len(whole) // 3], "application/pdf")
        if p in PAGES:
            title, text = PAGES[p]
            return html_response(page(title, f"<h1>{esc(title)}</h1><p>{esc(text)}</p>"))
        return self._refresh(p) or NOT_FOUND

    def _refresh(self, p: str) -> Response | None:
        if p == "/refresh/now":
            return html_response(_refresh_page("Moved", "0; url=/releases/new-home.html"))
        if p == "/refresh/later":
            return html_response(_refresh_page("Come back later", "600; url=/"))
        if p == "/refresh/noscript":
            return html_response(
                _refresh_page("Without scripts", "0; url=/releases/new-home.html", noscript=True)
            )
        if p == "/refresh/to-internal":
            return html_response(_refresh_page("Internal", "0;URL='/internal/secret.html'"))
        if p == "/refresh/elsewhere":
            hub = self.world.url("hub", "/")
            return html_response(_refresh_page("Elsewhere", f"0; url={hub}"))
        m = re.fullmatch(r"/refresh/chain/(\d+)", p)
        if m and 1 <= int(m.group(1)) <= CHAIN:
            n = int(m.group(1))
            to = f"/refresh/chain/{n + 1}" if n < CHAIN else "/releases/chain-end.html"
            return html_response(_refresh_page(f"Chain {n}", f"0; url={to}"))
        return None

    def manifest(self) -> dict[str, Any]:
        """Ground truth for the tests: what only the probe or a feed finds, and each case."""
        u = self._url
        return {
            "host": self.world.names[self.key],
            "sitemap_probe": u("/sitemap.xml"),
            "only_in_sitemap": u("/archive/2019-annual.html"),
            "disallowed_in_sitemap": u("/internal/draft.html"),
            "feeds": [u("/feed.rss"), u("/feed.atom")],
            "only_in_feeds": [u("/releases/rss-only.html"), u("/releases/atom-only.html")],
            "pdfs": {u(p): title or lines[0] for p, (title, lines) in PDF_REPORTS.items()},
            "damaged_pdf": u(DAMAGED_PDF),
            "refresh": {
                "now": {"from": u("/refresh/now"), "to": u("/releases/new-home.html")},
                "later": u("/refresh/later"),
                "noscript": u("/refresh/noscript"),
                "chain": [u(f"/refresh/chain/{i}") for i in range(1, CHAIN + 1)],
                "to_disallowed": {
                    "from": u("/refresh/to-internal"),
                    "to": u("/internal/secret.html"),
                },
                "to_other_host": {
                    "from": u("/refresh/elsewhere"),
                    "to": self.world.url("hub", "/"),
                },
            },
        }
