"""What the index keeps about a page besides its words: language, content type, site, file type.

Decided once, at index time, and kept per document in the segment (the columns of
segment format 4) and as field terms beside the text's terms, so a filter is a posting
list like ``site:`` and a facet is a count over a column:

* **language** — an ISO 639-1 code from ``py3langid`` (langid.py's model, shipped inside
  the package: 97 languages, a naive Bayes over byte n-grams; nothing is downloaded), on
  the title and the first :data:`DETECT_CHARS` characters of the text; ``und`` (ISO 639's
  "undetermined") for a page with fewer than :data:`MIN_WORDS` words;
* **content type** — the response's media type without parameters (``text/html``);
* **site** — the URL's host, lower-cased, without the port: the name ``site:`` takes;
* **file type** — the URL path's extension and the content type's usual one
  (``.../notes.txt`` served as ``text/plain`` is ``txt``; an HTML page at ``/docs/`` is
  ``html``), as Google's ``filetype:`` matches either;
* **URL words** — the URL's letters-and-digits runs, lower-cased and unstemmed, for
  ``inurl:`` (Google's operator matches words of the address, not substrings).
"""

from __future__ import annotations

import mimetypes
import re
import threading
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import urlsplit

import numpy as np

from lookup.search.analysis import Analyzed, analyze_document, site_terms

#: Language code of a page too short to tell (ISO 639-2's "undetermined").
UNDETERMINED = "und"
#: Fewer words than this and the language is not guessed.
MIN_WORDS = 3
#: How much of a page's text the language identifier reads (the start says enough): its
#: cost grows faster than the text (1.0 ms at 1,000 characters, 0.2 ms at 400 here), and
#: 400 characters are some 60 words, plenty for langid's byte n-grams.
DETECT_CHARS = 400
#: The content type of a stored page that came without one (read as HTML, as the indexer does).
DEFAULT_TYPE = "text/html"
#: URL words kept per page for ``inurl:`` (a long query string adds noise, not words).
MAX_URL_WORDS = 32
MAX_URL_WORD_CHARS = 40

_URL_WORD = re.compile(r"[^\W_]+")
_EXT = re.compile(r"^[a-z0-9]{1,5}$")
#: Usual extensions of the media types a crawl holds (others: :mod:`mimetypes`).
_TYPE_EXT = {
    "text/html": "html",
    "application/xhtml+xml": "xhtml",
    "text/plain": "txt",
    "text/markdown": "md",
    "text/csv": "csv",
    "application/pdf": "pdf",
}

_lock = threading.Lock()
_identifier: Any = None


def _langid() -> Any:
    """The language identifier, loaded once (its model takes about a second to read)."""
    global _identifier
    if _identifier is None:
        with _lock:
            if _identifier is None:
                from py3langid.langid import MODEL_FILE, LanguageIdentifier

                _identifier = LanguageIdentifier.from_model_file(MODEL_FILE)
    return _identifier


def detect_language(title: str, text: str) -> str:
    """The page's language as an ISO 639-1 code, or :data:`UNDETERMINED` if too short."""
    sample = f"{title}\n{text[:DETECT_CHARS]}"
    if len(_URL_WORD.findall(sample)) < MIN_WORDS:
        return UNDETERMINED
    code, _ = _langid().classify(sample)
    return str(code)


def media_type(content_type: str | None) -> str:
    """``text/html; charset=utf-8`` → ``text/html`` (:data:`DEFAULT_TYPE` when absent)."""
    base = (content_type or "").split(";", 1)[0].strip().lower()
    return base or DEFAULT_TYPE


def host_of(url: str) -> str:
    """The site a URL belongs to: its host as ``site:`` names it (lower case, no port)."""
    try:
        netloc = urlsplit(url).netloc.rsplit("@", 1)[-1]
    except ValueError:
        return ""
    names = site_terms(netloc)
    return names[0] if names else ""


def file_types(url: str, content_type: str) -> list[str]:
    """``filetype:`` values of a page: the URL path's extension, then the media type's."""
    out: list[str] = []
    try:
        last = urlsplit(url).path.rsplit("/", 1)[-1]
    except ValueError:
        last = ""
    if "." in last:
        own = last.rsplit(".", 1)[1].lower()
        if _EXT.match(own):
            out.append(own)
    ext = _TYPE_EXT.get(content_type)
    if ext is None:
        guessed = mimetypes.guess_extension(content_type, strict=False)
        ext = guessed.lstrip(".") if guessed else None
    if ext and ext not in out:
        out.append(ext)
    return out


def url_words(url: str) -> list[str]:
    """The words of a URL for ``inurl:``: letter-and-digit runs, lower-cased, first seen first."""
    words = dict.fromkeys(
        w for w in _URL_WORD.findall(url.casefold()) if len(w) <= MAX_URL_WORD_CHARS
    )
    words.pop("http", None)
    words.pop("https", None)
    return list(words)[:MAX_URL_WORDS]


@dataclass(frozen=True)
class DocFields:
    """A page's language, media type and site, as stored per document."""

    lang: str
    content_type: str
    host: str

    @classmethod
    def of(cls, url: str, title: str, text: str, content_type: str | None) -> DocFields:
        """Detect and normalise the fields of a page about to be indexed."""
        return cls(detect_language(title, text), media_type(content_type), host_of(url))

    @classmethod
    def from_stored(cls, stored: dict[str, Any]) -> DocFields:
        """The fields of a stored record (a segment written before format 4 has no language
        or type: ``und`` and the default type)."""
        return cls(
            str(stored.get("lang") or UNDETERMINED),
            str(stored.get("contentType") or DEFAULT_TYPE),
            host_of(str(stored.get("url") or "")),
        )

    def terms(self, url: str) -> list[str]:
        """Field terms indexed beside the text: ``lang:``, ``type:``, ``filetype:``, ``inurl:``."""
        out = [f"lang:{self.lang}", f"type:{self.content_type}"]
        out += [f"filetype:{e}" for e in file_types(url, self.content_type)]
        out += [f"inurl:{w}" for w in url_words(url)]
        return out


#: The per-document columns of a segment (format 4), in the order of ``columns.npy``'s
#: columns; the crawl month comes from the crawl times every format keeps.
COLUMNS = ("host", "lang", "type")


class ColumnBuilder:
    """Dictionary-encodes the columns of the documents of a segment being written."""

    def __init__(self) -> None:
        self.values: dict[str, dict[str, int]] = {name: {} for name in COLUMNS}
        self.rows: list[tuple[int, int, int]] = []

    def add(self, fields: DocFields) -> None:
        """Append one document's fields (in document order)."""
        row = []
        for name, value in zip(
            COLUMNS, (fields.host, fields.lang, fields.content_type), strict=True
        ):
            codes = self.values[name]
            code = codes.get(value)
            if code is None:
                code = codes[value] = len(codes)
            row.append(code)
        self.rows.append((row[0], row[1], row[2]))

    def finish(self) -> tuple[np.ndarray, dict[str, list[str]]]:
        """``(codes, values)``: an int32 row per document, and each column's values by code."""
        codes = np.asarray(self.rows, dtype=np.int32).reshape(len(self.rows), len(COLUMNS))
        return codes, {name: list(self.values[name]) for name in COLUMNS}


@dataclass(frozen=True)
class Column:
    """One column of a segment: a code per document and the value of each code."""

    codes: np.ndarray
    values: list[str]

    def value(self, doc: int) -> str:
        """The value of one document."""
        return self.values[int(self.codes[doc])]


def columns_of(records: list[DocFields]) -> dict[str, Column]:
    """Columns built from documents' fields (old segments' stored records, the tier's pages)."""
    builder = ColumnBuilder()
    for fields in records:
        builder.add(fields)
    codes, values = builder.finish()
    return {name: Column(codes[:, i], values[name]) for i, name in enumerate(COLUMNS)}


def analyze_page(title: str, text: str, url: str, fields: DocFields | None) -> Analyzed:
    """A page's index terms: :func:`~.analysis.analyze_document`'s, plus the field terms of
    its language, type, file types and URL words (:meth:`DocFields.terms`: the filters;
    none for ``fields`` None, a page indexed before segment format 4)."""
    a = analyze_document(title, text, url)
    return a if fields is None else replace(a, fields=a.fields + tuple(fields.terms(url)))
