"""One decoder for fetched HTML, shared by the crawler, the page inspector and the indexer.

It follows the order the WHATWG encoding-sniffing algorithm gives a browser:

1. a byte-order mark (UTF-8, UTF-16 LE/BE) wins over everything;
2. the ``charset`` of the HTTP ``Content-Type``;
3. a ``<meta charset>`` / ``<meta http-equiv>`` near the top of the body;
4. detection: bytes that are valid UTF-8 are UTF-8; a multi-byte legacy encoding
   (Shift_JIS, EUC-JP, GB18030, Big5, EUC-KR) is taken from ``charset_normalizer``'s
   guess; anything else is windows-1252, the default the standard gives most locales.

Labels are resolved as browsers resolve them: ``iso-8859-1``, ``latin1`` and ``ascii``
mean windows-1252, ``shift_jis`` means cp932, ``gb2312``/``gbk`` mean GB18030
(``w3lib.encoding`` holds that table and the BOM and ``<meta>`` readers). Single-byte
Latin code pages are not guessed: on a short page a detector cannot tell them apart
(``charset_normalizer`` calls a windows-1252 page cp1250), and a wrong guess changes
letters silently, while windows-1252 is right for the common case.
"""

from __future__ import annotations

import codecs
from dataclasses import dataclass

import charset_normalizer
from w3lib.encoding import (
    html_body_declared_encoding,
    http_content_type_encoding,
    read_bom,
    resolve_encoding,
)

__all__ = ["Decoded", "decode_html", "has_bom"]

#: Legacy encodings a detector may choose: multi-byte, so their byte patterns are
#: distinctive enough to be recognised on a short page.
_DETECTABLE = {"cp932", "shift_jis", "euc_jp", "gb18030", "gb2312", "big5", "euc_kr", "cp949"}
#: The fallback for bytes that are neither declared nor UTF-8.
FALLBACK = "cp1252"
#: Bytes given to the detector (enough for a paragraph, cheap on a large page).
_DETECT_BYTES = 32 * 1024


@dataclass(frozen=True)
class Decoded:
    """A page's text, the Python codec that produced it, and where that choice came from:
    ``bom``, ``header``, ``meta``, ``utf-8`` (valid UTF-8 undeclared), ``detected``
    or ``fallback``."""

    text: str
    encoding: str
    source: str


def has_bom(body: bytes) -> bool:
    """Does ``body`` start with a byte-order mark (UTF-8 or UTF-16)?"""
    return read_bom(body)[0] is not None


def _codec(label: str | None) -> str | None:
    """The Python codec a browser would use for ``label``, or None if it names none."""
    if not label:
        return None
    resolved = resolve_encoding(label)
    if resolved is None:
        return None
    return codecs.lookup(resolved).name


def decode_html(body: bytes, content_type: str | None = None) -> Decoded:
    """Decode page bytes as a browser would (see the module docstring for the order)."""
    bom, mark = read_bom(body)
    if bom is not None and mark is not None:
        codec = codecs.lookup(bom).name
        return Decoded(body[len(mark) :].decode(codec, errors="replace"), codec, "bom")
    declared: tuple[tuple[str, str | None], ...] = (
        ("header", http_content_type_encoding(content_type) if content_type else None),
        ("meta", html_body_declared_encoding(body)),
    )
    for source, label in declared:
        found = _codec(label)
        if found is not None:
            if source == "meta" and found.startswith("utf-16"):
                found = "utf-8"  # a page cannot declare UTF-16 from inside itself
            return Decoded(body.decode(found, errors="replace"), found, source)
    try:
        return Decoded(body.decode("utf-8"), "utf-8", "utf-8")
    except UnicodeDecodeError:
        pass
    best = charset_normalizer.from_bytes(body[:_DETECT_BYTES]).best()
    guess = _codec(best.encoding) if best is not None else None
    if guess is not None and guess in _DETECTABLE:
        return Decoded(body.decode(guess, errors="replace"), guess, "detected")
    return Decoded(body.decode(FALLBACK, errors="replace"), FALLBACK, "fallback")
