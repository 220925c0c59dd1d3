"""The text and title of a PDF document, as the crawler fingerprints it and search indexes it.

Both sides read a PDF through this one function, so the title in the crawler's event and
the title in the index are the same string. The text comes from ``pypdf`` (pure Python,
no binary dependency), page by page, up to :data:`MAX_PAGES` pages and
:data:`MAX_TEXT_CHARS` characters, so a huge report cannot hold a crawl or an index build.
The title is the document's metadata ``/Title`` when it has a real one, else the first
line of text (what a reader sees at the top of page one). A body pypdf cannot read,
an encrypted document without an empty password, or one with no text layer at all (a
scan) raises :class:`PdfError` with the reason, so the caller can report it.
"""

from __future__ import annotations

import io
import logging
import re
from dataclasses import dataclass

__all__ = ["MAX_PAGES", "MAX_TEXT_CHARS", "PDF_TYPE", "PdfError", "PdfText", "is_pdf", "pdf_text"]

PDF_TYPE = "application/pdf"
#: Pages read from one document, and characters kept (as an HTML page's text is capped).
MAX_PAGES = 300
MAX_TEXT_CHARS = 100_000
MAX_TITLE_CHARS = 300

_SPACE = re.compile(r"[ \t\r\f\v\xa0]+")
#: Metadata titles that name the tool or the file rather than the document.
_PLACEHOLDER_TITLES = re.compile(r"^(untitled|microsoft word - .*|.*\.(docx?|pdf|tex|odt))$", re.I)


class PdfError(ValueError):
    """A PDF whose text cannot be read, and why."""


@dataclass(frozen=True)
class PdfText:
    """What a PDF holds for search: its title (and where it came from), text and page count."""

    title: str
    text: str
    pages: int
    title_source: str  # "metadata" | "first-line"


def is_pdf(body: bytes, content_type: str | None = None) -> bool:
    """Is this answer a PDF: by its media type, or (none given) by its ``%PDF-`` signature."""
    media = (content_type or "").split(";", 1)[0].strip().lower()
    if media:
        return media == PDF_TYPE
    return body.lstrip(b"\t\r\n ")[:5] == b"%PDF-"


def _clean_line(line: str) -> str:
    return _SPACE.sub(" ", line).strip()


def pdf_text(body: bytes) -> PdfText:
    """The title and text of the PDF in ``body``; :class:`PdfError` if it has none."""
    from pypdf import PdfReader

    logging.getLogger("pypdf").setLevel(logging.ERROR)  # a damaged file is our outcome
    try:
        reader = PdfReader(io.BytesIO(body), strict=False)
        if reader.is_encrypted and not reader.decrypt(""):
            raise PdfError("the document is encrypted")
        pages = len(reader.pages)
        lines: list[str] = []
        size = 0
        for page in reader.pages[:MAX_PAGES]:
            for raw in (page.extract_text() or "").splitlines():
                line = _clean_line(raw)
                if line:
                    lines.append(line)
                    size += len(line) + 1
            if size >= MAX_TEXT_CHARS:
                break
        meta = reader.metadata
        declared = _clean_line(str(meta.title or "")) if meta is not None else ""
    except PdfError:
        raise
    except Exception as exc:  # noqa: BLE001 - pypdf raises many kinds on a damaged file
        raise PdfError(f"not a readable PDF ({type(exc).__name__}: {exc})"[:300]) from None
    text = " ".join(lines)[:MAX_TEXT_CHARS]
    if not text:
        raise PdfError("no text layer (a scanned or image-only document?)")
    if declared and not _PLACEHOLDER_TITLES.match(declared):
        return PdfText(declared[:MAX_TITLE_CHARS], text, pages, "metadata")
    return PdfText(lines[0][:MAX_TITLE_CHARS], text, pages, "first-line")
