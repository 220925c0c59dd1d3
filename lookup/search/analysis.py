"""Text analysis shared by the write path and the read path.

Documents and queries go through the same steps so that a query term meets the
same index term: split into words (letters, combining marks and digits — so
Devanagari vowel signs stay inside their word), Unicode-normalise (NFKC) and
case-fold, drop stop words, and reduce each word to its Snowball stem
("running", "runs" → "run").

The language of a word is told by its script, so a query (which has no ``lang``)
meets the page's terms: Devanagari words use Hindi stop words and the Snowball Hindi
stemmer; Han, Hiragana, Katakana and Hangul runs, written without spaces, become
overlapping character bigrams (``日本語`` → ``日本``, ``本語``; Lucene's CJKBigramFilter);
everything else is English.

Positions count every word (each bigram one), stop words included, so a phrase keeps
its gaps.
"""

from __future__ import annotations

import re
import threading
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass
from urllib.parse import urlsplit

import regex
import Stemmer

#: A word: letters, combining marks and digits (``regex`` knows Unicode properties).
WORD = regex.compile(r"[\p{L}\p{N}][\p{L}\p{M}\p{N}]*")
#: The same pattern for lower-cased ASCII text, where the stdlib engine is faster.
ASCII_WORD = re.compile(r"[a-z0-9]+")

#: Words longer than this are dropped (base64 blobs, run-together garbage).
MAX_TERM_CHARS = 40

#: The Snowball project's English stop-word list (snowballstem.org, english/stop.txt).
STOP_WORDS: frozenset[str] = frozenset(
    """
    i me my myself we our ours ourselves you your yours yourself yourselves he him his
    himself she her hers herself it its itself they them their theirs themselves what
    which who whom this that these those am is are was were be been being have has had
    having do does did doing would should could ought i'm you're he's she's it's we're
    they're i've you've we've they've i'd you'd he'd she'd we'd they'd i'll you'll he'll
    she'll we'll they'll isn't aren't wasn't weren't hasn't haven't hadn't doesn't don't
    didn't won't wouldn't shan't shouldn't can't cannot couldn't mustn't let's that's
    who's what's here's there's when's where's why's how's a an the and but if or because
    as until while of at by for with about against between into through during before
    after above below to from up down in out on off over under again further then once
    here there when where why how all any both each few more most other some such no nor
    not only own same so than too very s t don can will just
    """.split()
)

#: Common Hindi function words (postpositions, auxiliaries, pronouns, conjunctions).
HINDI_STOP_WORDS: frozenset[str] = frozenset(
    """
    का की के है हैं में और से को पर यह वह था थे थी हो होता होती होते एक ने भी तो ही
    या लिए कि जो इस उस इन उन तक कर गया गई रहा रही रहे वे ये हम आप मैं तुम नहीं
    """.split()
)

#: A run of characters of a script written without spaces between words.
CJK_RUN = regex.compile(r"[\p{Han}\p{Hiragana}\p{Katakana}\p{Hangul}]+")

_local = threading.local()


def _stemmer(language: str = "english") -> Stemmer.Stemmer:
    # PyStemmer objects keep a cache and are not safe to share between threads.
    stemmers = getattr(_local, "stemmers", None)
    if stemmers is None:
        stemmers = _local.stemmers = {}
    stemmer = stemmers.get(language)
    if stemmer is None:
        stemmer = stemmers[language] = Stemmer.Stemmer(language)
    return stemmer


def is_devanagari(word: str) -> bool:
    """Is the word written in Devanagari (Hindi here)? Its first letter decides."""
    return "\u0900" <= word[0] <= "\u097f"


def is_stop_word(word: str) -> bool:
    """Stop word of the word's own language (English or Hindi; CJK bigrams have none)."""
    return word in STOP_WORDS or word in HINDI_STOP_WORDS


def split_cjk(word: str) -> list[str]:
    """A normalised word with its CJK runs cut into character bigrams (others kept whole)."""
    if word.isascii() or not CJK_RUN.search(word):
        return [word]
    out: list[str] = []
    at = 0
    for m in CJK_RUN.finditer(word):
        if m.start() > at:
            out.append(word[at : m.start()])
        run = m.group()
        if len(run) == 1:
            out.append(run)
        else:
            out.extend(run[i : i + 2] for i in range(len(run) - 1))
        at = m.end()
    if at < len(word):
        out.append(word[at:])
    return out


def normalize_word(word: str) -> str:
    """NFKC-normalise and case-fold one word (ASCII words only need lower-casing)."""
    if word.isascii():
        return word.lower()
    return unicodedata.normalize("NFKC", word).casefold()


def stem(words: list[str]) -> list[str]:
    """Snowball stems of already-normalised words, each in its script's language.

    CJK bigrams are left as they are; Devanagari words get the Hindi stemmer.
    """
    if all(w.isascii() for w in words):
        return _stemmer().stemWords(words)
    out = list(words)
    hindi = [i for i, w in enumerate(words) if not w.isascii() and is_devanagari(w)]
    english = [
        i for i, w in enumerate(words) if w.isascii() or not (is_devanagari(w) or CJK_RUN.match(w))
    ]
    for idx, lang in ((english, "english"), (hindi, "hindi")):
        if idx:
            for i, s in zip(idx, _stemmer(lang).stemWords([words[i] for i in idx]), strict=True):
                out[i] = s
    return out


def site_terms(host: str) -> list[str]:
    """The names a ``site:`` query may give for a host: the host, then each parent domain.

    ``a.docs.example`` → ``a.docs.example``, ``docs.example`` (a bare top-level name is
    not a site); an IP address or a one-label name is only itself. The port is dropped.
    """
    host = host.strip().lower().rstrip(".")
    if host.startswith("["):
        host = host.split("]", 1)[0] + "]"
    else:
        host = host.rsplit(":", 1)[0] if host.count(":") == 1 else host
    if not host:
        return []
    labels = host.split(".")
    if len(labels) < 3 or all(p.isdigit() for p in labels):
        return [host]
    return [".".join(labels[i:]) for i in range(len(labels) - 1)]


@dataclass(frozen=True)
class Analyzed:
    """Index terms of a text with their word positions, and how many words it had.

    ``fields`` are a document's field terms (``title:heap``, ``site:docs.example``):
    indexed beside the text's terms for ``title:`` and ``site:`` queries, but no part of
    its length or of any phrase.
    """

    terms: list[str]
    positions: list[int]
    words: int
    fields: tuple[str, ...] = ()


def words_of(text: str) -> list[str]:
    """Normalised words of ``text``, CJK runs already cut into bigrams."""
    if text.isascii():
        return ASCII_WORD.findall(text.lower())
    return [piece for w in WORD.findall(text) for piece in split_cjk(normalize_word(w))]


def analyze(text: str, first_position: int = 0) -> Analyzed:
    """Terms and positions of ``text``; positions start at ``first_position``."""
    if text.isascii():
        raw = ASCII_WORD.findall(text.lower())
        stop: frozenset[str] | None = STOP_WORDS
    else:
        raw = words_of(text)
        stop = None
    kept: list[str] = []
    positions: list[int] = []
    for i, word in enumerate(raw):
        if len(word) > MAX_TERM_CHARS or (word in stop if stop is not None else is_stop_word(word)):
            continue
        kept.append(word)
        positions.append(first_position + i)
    return Analyzed(stem(kept), positions, len(raw))


def normalize_prefix(text: str) -> str | None:
    """The one normalised (unstemmed) word of a ``prefix*`` query, or None if not one word."""
    words = words_of(text)
    return words[0] if len(words) == 1 else None


#: A title term counts this many times a body term: the title field's weight of BM25F
#: (Robertson et al.), done by indexing the title that often; 3 is Elasticsearch's own
#: example boost (``"fields": ["title^3", ...]``) and holds the known-item figure (95 %).
TITLE_WEIGHT = 3


def analyze_document(title: str, text: str, url: str = "") -> Analyzed:
    """A page's index terms: its title ``TITLE_WEIGHT`` times, then its main text.

    One position stream with a gap after each copy, so a phrase never spans two copies
    or the title and the text; a page's length counts every copy (BM25F's weighted length).
    Field terms: ``title:`` + each distinct title term, ``site:`` + each name of the
    URL's host (:func:`site_terms`).
    """
    terms: list[str] = []
    positions: list[int] = []
    start = 0
    for _ in range(TITLE_WEIGHT):
        head = analyze(title, first_position=start)
        terms += head.terms
        positions += head.positions
        start += head.words + 1
    body = analyze(text, first_position=start)
    fields = [f"title:{t}" for t in dict.fromkeys(terms)]
    if url:
        host = urlsplit(url).netloc.rsplit("@", 1)[-1]
        fields += [f"site:{h}" for h in site_terms(host)]
    return Analyzed(
        terms + body.terms, positions + body.positions, start + body.words, tuple(fields)
    )


def analyze_query(query: str) -> list[str]:
    """The distinct index terms of a query, in first-seen order.

    An ASCII query (most are) takes :func:`analyze`'s steps without the positions and
    the result object a query has no use for: the same terms, on every query's path.
    """
    if query.isascii():
        words = [
            w
            for w in ASCII_WORD.findall(query.lower())
            if len(w) <= MAX_TERM_CHARS and w not in STOP_WORDS
        ]
        return list(dict.fromkeys(_stemmer().stemWords(words)))
    return list(dict.fromkeys(analyze(query).terms))


#: Quotation marks that open and close a phrase (straight and typographic).
_PHRASE = re.compile(
    r'["\u201c\u201d\u201e\u00ab\u00bb]([^"\u201c\u201d\u201e\u00ab\u00bb]*)["\u201c\u201d\u201e\u00ab\u00bb]'
)


@dataclass(frozen=True)
class Phrase:
    """A quoted phrase: its index terms and each one's word offset from the first.

    Stop words are not indexed but keep their place, so ``"state of the art"`` is
    ``state`` at 0 and ``art`` at 3.
    """

    terms: tuple[str, ...]
    offsets: tuple[int, ...]


@dataclass(frozen=True)
class ParsedQuery:
    """A query's distinct terms (first-seen order) and its quoted phrases."""

    terms: list[str]
    phrases: tuple[Phrase, ...]


def parse_query(query: str) -> ParsedQuery:
    """Terms and phrases of a query: text in double quotes is a phrase, the rest loose words.

    A quoted part with fewer than two index terms is only its words; an unmatched quote
    mark is ignored.
    """
    phrases: list[Phrase] = []
    for m in _PHRASE.finditer(query):
        a = analyze(m.group(1))
        if len(a.terms) > 1:
            first = a.positions[0]
            phrase = Phrase(tuple(a.terms), tuple(p - first for p in a.positions))
            if phrase not in phrases:
                phrases.append(phrase)
    return ParsedQuery(analyze_query(query), tuple(phrases))


def iter_words(text: str) -> Iterator[tuple[int, int, str | None]]:
    """``(start, end, term)`` for every word of ``text``; ``term`` is None for stop words.

    Offsets point into the original text, which is what snippet highlighting needs.
    """
    spans = [(m.start(), m.end(), normalize_word(m.group())) for m in WORD.finditer(text)]
    keep = [w for _, _, w in spans if not is_stop_word(w) and len(w) <= MAX_TERM_CHARS]
    stems = iter(stem(keep))
    for start, end, word in spans:
        if is_stop_word(word) or len(word) > MAX_TERM_CHARS:
            yield start, end, None
        else:
            yield start, end, next(stems)
