"""Text analysis shared by the write path and the read path.

Documents and queries go through the same steps so that a query term meets the
same index term: split into words (letters, combining marks and digits — so
Devanagari vowel signs stay inside their word — plus a ``++`` or ``#`` right after
letters, so ``C++`` and ``C#`` stay tokens of their own), Unicode-normalise (NFKC) and
case-fold, drop stop words, fold Latin diacritics to ASCII (``café`` → ``cafe``,
Elasticsearch's ``asciifolding``) and reduce each word to its Snowball stem
("running", "runs" → "run").

The language of a word is told by its script, so a query (which has no ``lang``)
meets the page's terms: Devanagari words use Hindi stop words and the Snowball Hindi
stemmer; Han, Hiragana, Katakana and Hangul runs, written without spaces, become
overlapping character bigrams (``日本語`` → ``日本``, ``本語``; Lucene's CJKBigramFilter);
Thai runs, also written without spaces, are cut into dictionary words by PyThaiNLP's
``newmm`` (maximal matching over the word list the package ships); everything else is
English.

Positions count every word (each bigram one), stop words included, so a phrase keeps
its gaps. Beside each position's term a document may hold **stacked** terms, at the
same position and adding nothing to its length (Lucene's position increment 0 with
``discountOverlaps``): a folded word's original form (``café`` is indexed as ``cafe``
and as ``café``: ``asciifolding`` with ``preserve_original``, so an exact spelling can
be preferred), and a **stop-word phrase index** — each pair of adjacent stop words as
one term (``gram:to be``; Lucene's CommonGrams, restricted to pairs of stop words), so a
query made only of stop words (``"to be or not to be"``, ``the who``) is answered as the
phrase of its pairs instead of finding nothing. :data:`ANALYSIS_VERSION` names this
analysis; an index built by another is refused until rebuilt.
"""

from __future__ import annotations

import functools
import re
import threading
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass
from urllib.parse import urlsplit

import regex
import Stemmer

#: The version of the analysis an index was built with (kept in its manifest). 2: Latin
#: diacritics folded (originals stacked), Thai segmented, ``C++``/``C#`` tokens, the
#: stop-word phrase index. An index of another version is refused, never misread.
ANALYSIS_VERSION = 2

#: A word: letters, combining marks and digits (``regex`` knows Unicode properties).
WORD = regex.compile(r"[\p{L}\p{N}][\p{L}\p{M}\p{N}]*")
#: The same pattern for lower-cased ASCII text, where the stdlib engine is faster.
ASCII_WORD = re.compile(r"[a-z0-9]+")
#: :data:`WORD` and :data:`ASCII_WORD` that keep a ``++`` or ``#`` right after a letter
#: (``c++``, ``c#``, ``f#``) when no word character follows: used only on text that
#: holds a ``+`` or a ``#``, so other text pays nothing for the rule.
WORD_TOKEN = regex.compile(
    r"[\p{L}\p{N}][\p{L}\p{M}\p{N}]*(?:(?<=\p{L})(?:\+\+|#)(?![\p{L}\p{N}+#]))?"
)
ASCII_TOKEN = re.compile(r"[a-z0-9]+(?:(?<=[a-z])(?:\+\+|#)(?![a-z0-9+#]))?")
#: The prefix of a stop-word pair's index term (``gram:to be``): a colon, as field terms
#: have, keeps it out of prefix expansion and spelling suggestions.
GRAM = "gram:"

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
#: A run of Thai, also written without spaces (segmented with a dictionary instead).
THAI_RUN = regex.compile(r"[\p{Thai}]+")
#: A word that ASCII folding may change: Latin letters (with marks), digits, ``+``/``#``.
_LATIN_WORD = regex.compile(r"^[\p{Latin}\p{M}\p{N}+#]+$")
#: Latin letters with no decomposition, folded as Elasticsearch's ``asciifolding`` does
#: (``ß`` needs no entry: case folding has made it ``ss``).
_FOLD_LETTERS = str.maketrans(
    {
        "æ": "ae",
        "œ": "oe",
        "ø": "o",
        "ł": "l",
        "đ": "d",
        "ð": "d",
        "þ": "th",
        "ħ": "h",
        "ŧ": "t",
        "ı": "i",
        "ŀ": "l",
        "ŋ": "n",
        "ƀ": "b",
        "ƒ": "f",
        "ǥ": "g",
        "ɨ": "i",
    }
)

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


@functools.lru_cache(maxsize=8192)
def _thai_words(run: str) -> tuple[str, ...]:
    """A run of Thai cut into dictionary words (``newmm``; the pieces join back to ``run``)."""
    from pythainlp.tokenize import word_tokenize  # loaded on the first Thai text only

    pieces = tuple(p for p in word_tokenize(run, engine="newmm", keep_whitespace=False) if p)
    return pieces if "".join(pieces) == run else (run,)


def thai_spans(word: str) -> list[tuple[int, int]]:
    """Spans of a word as analysis cuts it before normalising: each Thai run into its
    dictionary words, the rest whole (one span for a word without Thai)."""
    if word.isascii() or not THAI_RUN.search(word):
        return [(0, len(word))]
    out: list[tuple[int, int]] = []
    at = 0
    for m in THAI_RUN.finditer(word):
        if m.start() > at:
            out.append((at, m.start()))
        a = m.start()
        for piece in _thai_words(m.group()):
            out.append((a, a + len(piece)))
            a += len(piece)
        at = m.end()
    if at < len(word):
        out.append((at, len(word)))
    return out


def normalize_word(word: str) -> str:
    """NFKC-normalise and case-fold one word (ASCII words only need lower-casing)."""
    if word.isascii():
        return word.lower()
    return unicodedata.normalize("NFKC", word).casefold()


@functools.lru_cache(maxsize=65_536)
def fold(word: str) -> str:
    """ASCII folding of a normalised word written in Latin letters (``café`` → ``cafe``,
    ``naïve`` → ``naive``, ``søren`` → ``soren``): its marks dropped, letters without a
    decomposition mapped as Elasticsearch's ``asciifolding``. Other scripts (Devanagari's
    vowel signs are marks too) and mixed words are returned unchanged."""
    if word.isascii() or not _LATIN_WORD.match(word):
        return word
    bare = "".join(c for c in unicodedata.normalize("NFD", word) if not unicodedata.combining(c))
    return unicodedata.normalize("NFC", bare.translate(_FOLD_LETTERS))


def _stem_as_written(words: list[str]) -> list[str]:
    """Snowball stems of normalised words as they are (no folding), each in its script's
    language: CJK bigrams are left as they are; Devanagari words get the Hindi stemmer."""
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


def stem(words: list[str]) -> list[str]:
    """The index term of each already-normalised word: folded to ASCII, then stemmed.

    CJK bigrams are left as they are; Devanagari words get the Hindi stemmer.
    """
    if all(w.isascii() for w in words):
        return _stemmer().stemWords(words)
    return _stem_as_written([fold(w) for w in words])


def exact_terms(words: list[str]) -> dict[str, str]:
    """For each normalised word that folding changes: its index term → the term of the word
    as written (``cafe`` → ``café``), the stacked original an exact spelling also matches."""
    changed = [w for w in dict.fromkeys(words) if not w.isascii() and fold(w) != w]
    if not changed:
        return {}
    folded = stem(changed)
    written = _stem_as_written(changed)
    return {f: o for f, o in zip(folded, written, strict=True) if f != o}


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
    its length or of any phrase. ``stacked`` are ``(term, position)`` pairs indexed at a
    word's position beside its term and adding nothing to the length: folded words'
    originals and the stop-word pairs (``gram:to be``).
    """

    terms: list[str]
    positions: list[int]
    words: int
    fields: tuple[str, ...] = ()
    stacked: tuple[tuple[str, int], ...] = ()

    def positioned(self) -> Iterator[tuple[str, int]]:
        """Every positioned index term: the words' terms, then the stacked ones."""
        yield from zip(self.terms, self.positions, strict=True)
        yield from self.stacked

    def all_terms(self) -> frozenset[str]:
        """Every distinct index term of the document (words', stacked and field terms)."""
        return frozenset(self.terms) | frozenset(self.fields) | {t for t, _ in self.stacked}


def gram(first: str, second: str) -> str:
    """The phrase-index term of two adjacent stop words (``gram:to be``)."""
    return f"{GRAM}{first} {second}"


def words_of(text: str) -> list[str]:
    """Normalised words of ``text``, CJK runs already cut into bigrams and Thai runs into words."""
    if text.isascii():
        return (ASCII_TOKEN if "+" in text or "#" in text else ASCII_WORD).findall(text.lower())
    pattern = WORD_TOKEN if "+" in text or "#" in text else WORD
    out: list[str] = []
    for w in pattern.findall(text):
        if THAI_RUN.search(w):
            for a, b in thai_spans(w):
                out.extend(split_cjk(normalize_word(w[a:b])))
        else:
            out.extend(split_cjk(normalize_word(w)))
    return out


def analyze(text: str, first_position: int = 0) -> Analyzed:
    """Terms and positions of ``text``; positions start at ``first_position``.

    A word is a stop word, and joins a stop-word pair, by its folded form (``à`` is ``a``),
    so a text has the terms of its ASCII spelling.
    """
    raw = words_of(text)
    ascii_text = text.isascii()
    kept: list[str] = []
    positions: list[int] = []
    stacked: list[tuple[str, int]] = []
    before: str | None = None  # the previous word when it is a stop word
    for i, word in enumerate(raw):
        key = word if ascii_text else fold(word)
        if len(word) > MAX_TERM_CHARS:
            before = None
        elif key in STOP_WORDS if ascii_text else is_stop_word(key):
            if before is not None:
                stacked.append((f"{GRAM}{before} {key}", first_position + i - 1))
            before = key
        else:
            before = None
            kept.append(word)
            positions.append(first_position + i)
    if ascii_text:
        return Analyzed(_stemmer().stemWords(kept), positions, len(raw), (), tuple(stacked))
    terms = stem(kept)
    changed = [i for i, w in enumerate(kept) if not w.isascii() and fold(w) != w]
    if changed:  # each folded word's own spelling, stacked at its position
        written = _stem_as_written([kept[i] for i in changed])
        stacked += [
            (o, positions[i]) for i, o in zip(changed, written, strict=True) if o != terms[i]
        ]
    return Analyzed(terms, positions, len(raw), (), tuple(stacked))


def normalize_prefix(text: str) -> str | None:
    """The one normalised (unstemmed) word of a ``prefix*`` query, folded as index terms are
    (``café*`` expands as ``cafe*``: every spelling), or None if not one word."""
    words = words_of(text)
    return fold(words[0]) if len(words) == 1 else None


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
    stacked: list[tuple[str, int]] = []
    start = 0
    for _ in range(TITLE_WEIGHT):
        head = analyze(title, first_position=start)
        terms += head.terms
        positions += head.positions
        stacked += head.stacked
        start += head.words + 1
    body = analyze(text, first_position=start)
    fields = [f"title:{t}" for t in dict.fromkeys(terms)]
    if url:
        host = urlsplit(url).netloc.rsplit("@", 1)[-1]
        fields += [f"site:{h}" for h in site_terms(host)]
    return Analyzed(
        terms + body.terms,
        positions + body.positions,
        start + body.words,
        tuple(fields),
        tuple(stacked) + body.stacked,
    )


def analyze_query(query: str) -> list[str]:
    """The distinct index terms of a query, in first-seen order.

    An ASCII query (most are) takes :func:`analyze`'s steps without the positions and
    the result object a query has no use for: the same terms, on every query's path.
    """
    if query.isascii() and "+" not in query and "#" not in query:
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


def stop_phrase(text: str) -> Phrase | None:
    """The stop-word phrase index's form of a text made only of stop words (two or more):
    the terms of its adjacent pairs at offsets 0, 1, … (``to be or`` → ``gram:to be`` at 0,
    ``gram:be or`` at 1). None when the text holds any other word, or fewer than two."""
    words = [fold(w) for w in words_of(text)]
    if len(words) < 2 or not all(len(w) <= MAX_TERM_CHARS and is_stop_word(w) for w in words):
        return None
    grams = tuple(gram(a, b) for a, b in zip(words, words[1:], strict=False))
    return Phrase(grams, tuple(range(len(grams))))


#: Why a query of one stop word finds nothing (``GET /search``'s ``notice``).
STOP_WORD_ALONE = (
    "a stop word alone is on nearly every page, so it is not searched: add a word, or "
    "search two or more stop words together (they are found as a phrase: the who)"
)


def only_stop_words(text: str) -> bool:
    """Does ``text`` have words, every one a stop word (nothing else to search for)?"""
    words = words_of(text)
    return bool(words) and all(is_stop_word(fold(w)) for w in words)


@dataclass(frozen=True)
class ParsedQuery:
    """A query's distinct terms (first-seen order) and its quoted phrases."""

    terms: list[str]
    phrases: tuple[Phrase, ...]


def parse_query(query: str) -> ParsedQuery:
    """Terms and phrases of a query: text in double quotes is a phrase, the rest loose words.

    A quoted part with fewer than two index terms is only its words; an unmatched quote
    mark is ignored. Stop words alone are searched through the stop-word phrase index:
    a quoted part of stop words only is the phrase of its pairs, and so is the whole query
    when it has no other word (:func:`stop_phrase`; one pair is a plain term).
    """
    phrases: list[Phrase] = []
    extra: list[str] = []
    for m in _PHRASE.finditer(query):
        a = analyze(m.group(1))
        if len(a.terms) > 1:
            first = a.positions[0]
            phrase = Phrase(tuple(a.terms), tuple(p - first for p in a.positions))
            if phrase not in phrases:
                phrases.append(phrase)
        elif not a.terms and (grams := stop_phrase(m.group(1))) is not None:
            extra += grams.terms
            if len(grams.terms) > 1 and grams not in phrases:
                phrases.append(grams)
    terms = analyze_query(query)
    if not terms and not extra and (grams := stop_phrase(query)) is not None:
        extra = list(grams.terms)
        if len(grams.terms) > 1:
            phrases.append(grams)
    return ParsedQuery(list(dict.fromkeys(terms + extra)), tuple(phrases))


def iter_words(text: str) -> Iterator[tuple[int, int, str | None]]:
    """``(start, end, term)`` for every word of ``text``; ``term`` is None for stop words.

    Offsets point into the original text, which is what snippet highlighting needs.
    """
    pattern = WORD_TOKEN if "+" in text or "#" in text else WORD
    spans = [
        (m.start() + a, m.start() + b, normalize_word(m.group()[a:b]))
        for m in pattern.finditer(text)
        for a, b in thai_spans(m.group())
    ]
    keep = [w for _, _, w in spans if not is_stop_word(fold(w)) and len(w) <= MAX_TERM_CHARS]
    stems = iter(stem(keep))
    for start, end, word in spans:
        if is_stop_word(fold(word)) or len(word) > MAX_TERM_CHARS:
            yield start, end, None
        else:
            yield start, end, next(stems)
