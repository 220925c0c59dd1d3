"""Snippets: the short extract under each result, with matched words in ``<em>``.

Generated for the final page only (the coordinator calls this for ten documents,
never for every candidate): a window of words is chosen that covers the most
distinct query terms, then the most matches, and every other character is
HTML-escaped so a page's text can never inject markup.
"""

from __future__ import annotations

import html
from itertools import islice

from lookup.search.analysis import (
    ASCII_WORD,
    MAX_TERM_CHARS,
    STOP_WORDS,
    WORD,
    normalize_word,
    stem,
)

#: Words shown in a snippet window.
WINDOW_WORDS = 32
#: Only this much of a page's text is scanned for the best window.
SCAN_CHARS = 20_000


def _wanted(words: list[str], terms: set[str] | frozenset[str]) -> set[str]:
    """The distinct words whose stem is a query term.

    Snowball rewrites a word's ending, never its first letter, so only words sharing a
    term's first letter need stemming.
    """
    heads = {t[:1] for t in terms}
    uniq = sorted(
        {w for w in words if w[:1] in heads and w not in STOP_WORDS and len(w) <= MAX_TERM_CHARS}
    )
    return {w for w, t in zip(uniq, stem(uniq), strict=True) if t in terms}


def make_snippet(text: str, terms: set[str] | frozenset[str], window: int = WINDOW_WORDS) -> str:
    """An HTML-safe extract of ``text`` around the query ``terms`` (index terms)."""
    scan = text[:SCAN_CHARS]
    folded = scan.lower() if scan.isascii() else None
    pattern = ASCII_WORD if folded is not None else WORD
    if folded is not None:
        words = ASCII_WORD.findall(folded)
    else:
        words = [normalize_word(w) for w in WORD.findall(scan)]
    if not words:
        return html.escape(scan[:200])
    wanted = _wanted(words, terms)
    matches = [i for i, w in enumerate(words) if w in wanted]
    best_start = 0
    if matches:
        best_key = (-1, -1)
        left = 0
        for right in range(len(matches)):
            while matches[right] - matches[left] >= window:
                left += 1
            group = matches[left : right + 1]
            key = (len({words[i] for i in group}), len(group))
            if key > best_key:
                best_key = key
                best_start = max(0, matches[left] - 3)
    end_word = min(len(words), best_start + window)
    spans = [
        (m.start(), m.end(), i)
        for i, m in enumerate(islice(pattern.finditer(folded or scan), end_word))
        if i >= best_start
    ]
    start_char = spans[0][0]
    end_char = spans[-1][1]
    pieces: list[str] = []
    cursor = start_char
    for s, e, i in spans:
        if words[i] in wanted:
            pieces.append(html.escape(scan[cursor:s]))
            pieces.append("<em>" + html.escape(scan[s:e]) + "</em>")
            cursor = e
    pieces.append(html.escape(scan[cursor:end_char]))
    prefix = "… " if start_char > 0 else ""
    suffix = " …" if end_char < len(text.rstrip()) else ""
    return prefix + "".join(pieces) + suffix
