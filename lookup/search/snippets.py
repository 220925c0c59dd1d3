"""Snippets: the short extract under each result, with matched words in ``<em>``.

Generated for the final page only (the coordinator calls this for ten documents,
never for every candidate): a window of words is chosen that covers the most
distinct query terms, then the most matches, and every other character is
HTML-escaped so a page's text can never inject markup.

Two ways to the same snippet:

* :func:`make_snippet` analyses the text at query time (tokenise the scanned text,
  stem the candidate words) — used for the real-time tier's few documents and for
  segments written before the forward index existed;
* :func:`snippet_from_forward` reads the **forward index** written at index time
  (:func:`forward_entries`): per word of the scanned text, a one-byte fingerprint of its
  index term (0 for stop words), where it starts and how long it is. A query finds its
  terms' fingerprints with ``bytes.find`` (no regular expression over the text), cuts
  out and stems only those few candidate words to confirm them (a fingerprint is one
  byte, so some are other words), then picks the window and escapes just the characters
  it shows.

Both tokenise the same scanned prefix (:func:`snippet_words`) and share the window
choice and the rendering, so they produce identical strings (the tests check it).
"""

from __future__ import annotations

import html
import re
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import regex

from lookup.search.analysis import (
    ASCII_TOKEN,
    ASCII_WORD,
    CJK_RUN,
    GRAM,
    MAX_TERM_CHARS,
    STOP_WORDS,
    THAI_RUN,
    WORD,
    WORD_TOKEN,
    fold,
    gram,
    normalize_word,
    stem,
    thai_spans,
)

#: Words shown in a snippet window.
WINDOW_WORDS = 32
#: Only this much of a page's text is scanned for the best window (cut back to a word
#: boundary, so the scan never ends inside a word; it fits the forward index's uint16 starts).
SCAN_CHARS = 20_000
#: Words before the first match that the window keeps as context.
LEAD_WORDS = 3

_WORD_CHAR = regex.compile(r"[\p{L}\p{M}\p{N}]")
#: :data:`ASCII_WORD` on text that is not lower-cased (same spans).
_ASCII_SPAN = re.compile(r"[A-Za-z0-9]+")
#: Characters :func:`html.escape` rewrites (a window without them is copied as it is).
_HTML_SPECIAL = re.compile(r"[&<>\"']")
_NON_SPACE = re.compile(r"\S")


@dataclass(frozen=True)
class SnippetWords:
    """The scanned prefix of a text, its words (normalised) and their character spans."""

    scan: str
    words: list[str]
    starts: list[int]
    ends: list[int]


#: Word → stem, for confirming candidates (a pure function: caching changes no result).
_STEMS: dict[str, str] = {}
_MAX_STEMS = 200_000


def _stems_of(words: list[str]) -> list[str]:
    """Snowball stems of normalised words, through a bounded cache."""
    cache = _STEMS
    get = cache.get
    out = [get(w) for w in words]
    if None not in out:
        return out  # type: ignore[return-value]
    missing = [w for w, t in zip(words, out, strict=True) if t is None]
    fresh = dict(zip(missing, stem(missing), strict=True))
    if len(cache) > _MAX_STEMS:
        cache.clear()
    cache.update(fresh)
    return [fresh[w] if t is None else t for w, t in zip(words, out, strict=True)]


def scan_prefix(text: str) -> str:
    """The part of ``text`` snippets look at: at most :data:`SCAN_CHARS`, ending between words."""
    if len(text) <= SCAN_CHARS:
        return text
    cut = SCAN_CHARS
    if _WORD_CHAR.match(text, cut):  # the scan would end inside a word: leave that word out
        while cut > 0 and _WORD_CHAR.match(text, cut - 1):
            cut -= 1
    return text[:cut]


def snippet_words(text: str) -> SnippetWords:
    """Tokenise the scanned prefix the way analysis does, keeping each word's span."""
    scan = scan_prefix(text)
    marked = "+" in scan or "#" in scan  # C++, C#: the analysis's token rule
    if scan.isascii():
        matches = list((ASCII_TOKEN if marked else ASCII_WORD).finditer(scan.lower()))
        words = [m.group() for m in matches]
    else:
        spans = [
            span
            for m in (WORD_TOKEN if marked else WORD).finditer(scan)
            for span in _pieces(m.group(), m.start())
        ]
        words = [normalize_word(scan[a:b]) for a, b in spans]
        return SnippetWords(scan, words, [a for a, _ in spans], [b for _, b in spans])
    return SnippetWords(scan, words, [m.start() for m in matches], [m.end() for m in matches])


def _pieces(word: str, at: int) -> list[tuple[int, int]]:
    """Spans of a word as analysis cuts it: Thai runs into dictionary words, then CJK runs."""
    if word.isascii() or not THAI_RUN.search(word):
        return _cjk_pieces(word, at)
    return [span for a, b in thai_spans(word) for span in _cjk_pieces(word[a:b], at + a)]


def _cjk_pieces(word: str, at: int) -> list[tuple[int, int]]:
    """Spans of a word as analysis cuts it: its CJK runs as overlapping bigrams (one span each)."""
    if not CJK_RUN.search(word):
        return [(at, at + len(word))]
    out: list[tuple[int, int]] = []
    done = 0
    for m in CJK_RUN.finditer(word):
        if m.start() > done:
            out.append((at + done, at + m.start()))
        a, b = m.start(), m.end()
        if b - a > 1:
            out.extend((at + i, at + i + 2) for i in range(a, b - 1))
        else:
            out.append((at + a, at + b))
        done = b
    if done < len(word):
        out.append((at + done, at + len(word)))
    return out


def fingerprint(term: str) -> int:
    """A term's one-byte fingerprint, 1..255 (0 marks a word that is no index term)."""
    return zlib.crc32(term.encode("utf-8")) % 255 + 1


def forward_entries(text: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One document's forward index: per scanned word, its term's fingerprint, start, length.

    Returns ``(fingerprints uint8, starts uint16, lengths uint8)``; stop words and
    overlong words get fingerprint 0, so they are never candidates; a word longer than
    255 characters gets length 0 (its end is found by matching it).
    """
    sw = snippet_words(text)
    keep = [w for w in sw.words if w not in STOP_WORDS and len(w) <= MAX_TERM_CHARS]
    prints = iter([fingerprint(t) for t in stem(keep)])
    fps = np.fromiter(
        (0 if (w in STOP_WORDS or len(w) > MAX_TERM_CHARS) else next(prints) for w in sw.words),
        dtype=np.uint8,
        count=len(sw.words),
    )
    starts = np.asarray(sw.starts, dtype=np.int64)
    lengths = np.asarray(sw.ends, dtype=np.int64) - starts
    lengths[lengths > 255] = 0
    return fps, starts.astype(np.uint16), lengths.astype(np.uint8)


@dataclass(frozen=True)
class ForwardQuery:
    """A query's terms as the forward index sees them (built once per query)."""

    terms: frozenset[str]
    prints: tuple[bytes, ...]  # the distinct fingerprints, one byte each
    grams: bool = False  # a stop-word pair among the terms (``gram:the who``)

    @classmethod
    def of(cls, terms: Iterable[str]) -> ForwardQuery:
        """The terms and their distinct fingerprints."""
        ts = frozenset(terms)
        prints = tuple(bytes([p]) for p in sorted({fingerprint(t) for t in ts}))
        return cls(ts, prints, any(t.startswith(GRAM) for t in ts))


def best_window_start(matches: Sequence[int], keys: Sequence[object], window: int) -> int:
    """First word of the window covering the most distinct keys, then the most matches.

    ``matches`` are ascending word indices, ``keys`` the query term each one matched.
    A sliding window over the matches: O(matches), ties go to the earliest window.
    """
    best = (-1, -1)
    best_start = 0
    left = 0
    counts: dict[object, int] = {}
    for right, (pos, key) in enumerate(zip(matches, keys, strict=True)):
        counts[key] = counts.get(key, 0) + 1
        while pos - matches[left] >= window:
            gone = keys[left]
            c = counts[gone] - 1
            if c:
                counts[gone] = c
            else:
                del counts[gone]
            left += 1
        cand = (len(counts), right - left + 1)
        if cand > best:
            best = cand
            best_start = max(0, matches[left] - LEAD_WORDS)
    return best_start


def _merged(spans: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """Marked spans with overlapping ones joined (CJK bigrams overlap by a character)."""
    out: list[tuple[int, int]] = []
    for s, e in spans:
        if out and s < out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], e))
        else:
            out.append((s, e))
    return out


def _verbatim(s: str) -> str:
    return s


def render(text: str, start_char: int, end_char: int, marked: Sequence[tuple[int, int]]) -> str:
    """Escape ``text[start_char:end_char]``, wrapping the ``marked`` spans in ``<em>``."""
    special = _HTML_SPECIAL.search(text, start_char, end_char) is not None
    escape = html.escape if special else _verbatim
    pieces: list[str] = ["… "] if start_char > 0 else []
    cursor = start_char
    for s, e in _merged(marked):
        pieces.append(escape(text[cursor:s]))
        pieces.append("<em>" + escape(text[s:e]) + "</em>")
        cursor = e
    pieces.append(escape(text[cursor:end_char]))
    if _NON_SPACE.search(text, end_char):  # more text after the window than trailing space
        pieces.append(" …")
    return "".join(pieces)


def _wanted(words: list[str], terms: set[str] | frozenset[str]) -> dict[str, str]:
    """The distinct words whose stem is a query term, with that term.

    Snowball rewrites a word's ending, never its first letter, so only words sharing a
    term's first letter (once folded: ``é`` is ``e``) need stemming.
    """
    heads = {t[:1] for t in terms}
    uniq = sorted(
        {
            w
            for w in words
            if (w[:1] in heads or (not w.isascii() and fold(w)[:1] in heads))
            and w not in STOP_WORDS
            and len(w) <= MAX_TERM_CHARS
        }
    )
    return {w: t for w, t in zip(uniq, stem(uniq), strict=True) if t in terms}


def make_snippet(text: str, terms: set[str] | frozenset[str], window: int = WINDOW_WORDS) -> str:
    """An HTML-safe extract of ``text`` around the query ``terms`` (index terms)."""
    sw = snippet_words(text)
    words = sw.words
    if not words:
        return html.escape(sw.scan[:200])
    wanted = _wanted(words, terms)
    matches = [i for i, w in enumerate(words) if w in wanted]
    keys = [wanted[words[i]] for i in matches]
    if any(t.startswith(GRAM) for t in terms):  # stop-word pairs: both words, side by side
        by_word = dict(zip(matches, keys, strict=True))
        folded = [fold(w) for w in words]
        for i in range(len(words) - 1):
            pair = gram(folded[i], folded[i + 1])
            if pair in terms:
                by_word.setdefault(i, pair)
                by_word.setdefault(i + 1, pair)
        matches = sorted(by_word)
        keys = [by_word[i] for i in matches]
    start = best_window_start(matches, keys, window)
    end = min(len(words), start + window)
    marked = [(sw.starts[i], sw.ends[i]) for i in matches if start <= i < end]
    return render(text, sw.starts[start], sw.ends[end - 1], marked)


def snippet_from_forward(
    text: str,
    prints: bytes,
    starts: Sequence[int],
    lengths: bytes,
    query: ForwardQuery,
    window: int = WINDOW_WORDS,
) -> str:
    """The same snippet as :func:`make_snippet`, from a document's forward index.

    ``prints``, ``starts`` and ``lengths`` are the document's entries (see
    :func:`forward_entries`); candidates are found with ``bytes.find``, so the cost is
    about the number of candidate words, not the length of the text.
    """
    n = len(prints)
    if n == 0:
        return html.escape(scan_prefix(text)[:200])
    if query.grams:  # stop words have no fingerprint: pairs are found by reading the words
        return make_snippet(text, query.terms, window)
    ascii_text = (text if len(text) <= SCAN_CHARS else scan_prefix(text)).isascii()
    cand: list[int] = []
    for p in query.prints:
        i = prints.find(p)
        while i >= 0:
            cand.append(i)
            i = prints.find(p, i + 1)
    matches: list[int] = []
    keys: list[str] = []
    spans: list[tuple[int, int]] = []
    if cand:
        if len(query.prints) > 1:
            cand.sort()
        # confirm each candidate: cut the word out and stem it (a fingerprint is one byte)
        terms = query.terms
        get = _STEMS.get
        unknown: list[tuple[int, int, int, str]] = []
        for i in cand:
            s = starts[i]
            e = s + lengths[i] if lengths[i] else _word_end(text, s, ascii_text)
            word = text[s:e].lower() if ascii_text else normalize_word(text[s:e])
            term = get(word)
            if term is None:
                unknown.append((i, s, e, word))
            elif term in terms:
                matches.append(i)
                keys.append(term)
                spans.append((s, e))
        if unknown:  # words not stemmed before: stem them together, then merge in order
            stems = _stems_of([u[3] for u in unknown])
            found = [(u[0], term, (u[1], u[2])) for u, term in zip(unknown, stems, strict=True)]
            found = [f for f in found if f[1] in terms]
            if found:
                merged = sorted([*zip(matches, keys, spans, strict=True), *found])
                matches = [m[0] for m in merged]
                keys = [m[1] for m in merged]
                spans = [m[2] for m in merged]
    if not matches:
        start = 0
    elif len(matches) == 1:
        start = max(0, matches[0] - LEAD_WORDS)
    else:
        start = best_window_start(matches, keys, window)
    end = min(n, start + window)
    marked = [span for i, span in zip(matches, spans, strict=True) if start <= i < end]
    last = end - 1
    end_char = (
        starts[last] + lengths[last] if lengths[last] else _word_end(text, starts[last], ascii_text)
    )
    return render(text, starts[start], end_char, marked)


def _word_end(text: str, start: int, ascii_text: bool) -> int:
    """Where the word starting at ``start`` ends (for words too long for the length byte)."""
    m = (_ASCII_SPAN if ascii_text else WORD).match(text, start)
    return m.end()  # type: ignore[union-attr]
