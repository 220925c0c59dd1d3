"""Query normalisation: one function used by the builder, the server and the client.

Builder and server must agree byte for byte, or a prefix typed on one keyboard would
miss the queries stored from another. The rules (from the design): Unicode NFC,
case-folded (Devanagari has no case, so this touches Latin text), trimmed, runs of
whitespace collapsed to one space. The trie works on code points, so a Devanagari
conjunct such as क्ष (क + ् + ष) is three steps, not one.
"""

from __future__ import annotations

import re
import unicodedata

#: The longest query (in code points, after normalisation) the system stores or serves.
MAX_QUERY_CHARS = 100

_WS = re.compile(r"\s+")
_DEVANAGARI = re.compile("[\u0900-\u097f\ua8e0-\ua8ff]")
_LATIN = re.compile("[A-Za-z\u00c0-\u024f]")


def normalize_query(text: str) -> str:
    """The canonical form of a whole query: NFC, case-folded, trimmed, whitespace collapsed."""
    text = unicodedata.normalize("NFC", unicodedata.normalize("NFC", text).casefold())
    return _WS.sub(" ", text).strip()


def normalize_prefix(text: str) -> str:
    """The canonical form of a prefix being typed.

    Like :func:`normalize_query`, except that one trailing space survives: ``"ipl "`` asks
    for completions of the word ``ipl`` followed by more words, not of ``ipl`` itself.
    """
    if text.isascii():  # the common case on every keystroke: no Unicode work needed
        text = text.lower()
        if "  " not in text and text.isprintable():
            return text.lstrip()
    else:
        text = unicodedata.normalize("NFC", unicodedata.normalize("NFC", text).casefold())
    return _WS.sub(" ", text).lstrip()


def has_control_chars(text: str) -> bool:
    """True if ``text`` holds a control or format character other than whitespace and ZWJ/ZWNJ.

    ZWJ and ZWNJ (U+200D, U+200C) are kept: they change how Devanagari renders.
    """
    for ch in text:
        cat = unicodedata.category(ch)
        if cat == "Cc" and not ch.isspace():
            return True
        if cat in ("Cs", "Co", "Cn"):
            return True
        if cat == "Cf" and ch not in "\u200c\u200d":
            return True
    return False


def script_of(text: str) -> str:
    """``"deva"`` if the text holds Devanagari, ``"latn"`` if a Latin letter, else ``"other"``."""
    if _DEVANAGARI.search(text):
        return "deva"
    if _LATIN.search(text):
        return "latn"
    return "other"


def code_points(text: str) -> list[str]:
    """The code points the trie steps through (``क्ष`` → ``['क', '्', 'ष']``)."""
    return list(text)


__all__ = [
    "MAX_QUERY_CHARS",
    "code_points",
    "has_control_chars",
    "normalize_query",
    "normalize_prefix",
    "script_of",
]
