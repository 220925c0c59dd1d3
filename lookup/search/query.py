"""The web-search query language: a tokenizer and a recursive-descent parser to an AST.

Grammar (Lucene's classic query syntax, the parts a search box needs)::

    query   := or EOF
    or      := and ("OR" and)*
    and     := unary (["AND"] unary)*          -- juxtaposition is AND
    unary   := ("NOT" | "-") unary | primary
    primary := atom ["^" NUMBER]                -- a boost
    atom    := "(" or ")" | PHRASE ["~" INT] | FIELD ":" value | WORD ["~" [INT]] | WORD "*"
    FIELD   := title | site | after | before

An exclusion (``-x`` or ``NOT x``) written in a group applies to the whole group, as
Lucene's MUST_NOT does: ``json OR pickle -mirror`` is ``(json OR pickle) AND NOT mirror``;
parentheses make a group of their own.

Suffixes, written against what they modify (Lucene's): ``term^2`` multiplies the score
of a word, phrase, prefix, field term or ``(group)`` (a number from 0 to
:data:`MAX_BOOST`); ``term~`` / ``term~N`` is a fuzzy word (index terms within N edits,
0-2, default 2: Lucene's FuzzyQuery); ``"a b"~N`` is a phrase whose words may stand up
to N moves out of place (at most :data:`MAX_SLOP`). ``~`` and ``^`` may come in either
order; a suffix with nothing before it, a fuzzy prefix or field, or a number out of
range is a syntax error at the suffix — never searched for as another word.

``OR``, ``AND`` and ``NOT`` are operators only in capitals (``or`` is a word). ``title:``
takes a word, a prefix or a quoted phrase (every word in the title); ``site:`` a host
(``site:docs.example`` also matches its subdomains); ``after:``/``before:`` a date
``YYYY-MM-DD`` (crawl time, UTC; ``after`` includes its day, ``before`` excludes it).

A word goes through the same analysis as documents, so one typed word may become
several index terms (``state-of-the-art``, a CJK run's bigrams): they are ANDed. A word
that is only a stop word vanishes, and so does an operator around nothing. Errors are
:class:`QuerySyntaxError` with the character position the problem starts at.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from dataclasses import field as dc_field
from typing import Union

from lookup.search.analysis import Phrase, analyze, normalize_prefix, site_terms, stop_phrase
from lookup.search.docfields import url_words

#: Shortest prefix a ``term*`` may have (one letter would expand to a large part of the vocabulary).
MIN_PREFIX_CHARS = 2
#: Deepest nesting of parentheses and NOTs accepted (keeps recursion bounded).
MAX_DEPTH = 32
#: Largest boost ``^N`` accepted, largest phrase slop ``"a b"~N``, most edits of ``word~N``
#: (Lucene's Levenshtein automata stop at 2 too).
MAX_BOOST = 1000.0
MAX_SLOP = 100
MAX_FUZZY_EDITS = 2
FIELDS = ("title", "site", "after", "before")
#: Google's field operators (:meth:`_Parser.operator_field`): ``lang:en`` (the language
#: detected at index time), ``inurl:word`` (a word of the address), ``intitle:`` (the same
#: as ``title:``), ``filetype:pdf`` (the URL's extension or the media type's).
OPERATOR_FIELDS = ("lang", "inurl", "intitle", "filetype")
_LANG_CODE = re.compile(r"^[a-z]{2,3}$")
_FILE_EXT = re.compile(r"^[a-z0-9]{1,5}$")
_QUOTES = '"\u201c\u201d\u201e\u00ab\u00bb'
_SPECIAL = "()" + _QUOTES


class QuerySyntaxError(ValueError):
    """A query the parser cannot read: ``position`` is the 0-based character it starts at."""

    def __init__(self, position: int, message: str) -> None:
        super().__init__(f"{message} (at character {position + 1})")
        self.position = position
        self.message = message


# --- AST ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Term:
    """Documents with this index term anywhere (title or body).

    ``word`` and ``pos`` say where a typed word came from (typo tolerance measures the
    word and reports its correction there); empty for terms the query did not spell out.
    """

    term: str
    word: str = dc_field(default="", compare=False)
    pos: int = dc_field(default=-1, compare=False)


@dataclass(frozen=True)
class Prefix:
    """Documents with any index term starting with ``prefix`` (expanded against the index)."""

    prefix: str


@dataclass(frozen=True)
class PhraseNode:
    """Documents with these terms word after word (``slop`` > 0: up to that many moves)."""

    phrase: Phrase
    slop: int = 0


@dataclass(frozen=True)
class Fuzzy:
    """Documents with an index term within ``edits`` of ``term`` (expanded against the index)."""

    term: str
    edits: int
    word: str = dc_field(default="", compare=False)


@dataclass(frozen=True)
class Boost:
    """``child`` with every score it adds multiplied by ``factor``."""

    child: Node
    factor: float


@dataclass(frozen=True)
class AnyOf:
    """Documents with any of these index keys, scoring a constant: an expanded prefix
    (Lucene's constant-score rewrite). ``source`` is the prefix as written: two prefixes
    are two clauses (``ap* app*`` scores 2 on a page both match, as in Lucene) even when
    they expand to the same keys; one written twice is one."""

    keys: tuple[str, ...]
    source: str = ""


@dataclass(frozen=True)
class FieldTerm:
    """Documents whose ``field`` holds ``term`` (``title:heap`` → field ``title``)."""

    field: str
    term: str

    @property
    def key(self) -> str:
        """The index term the field is stored under (``title:heap``, ``site:docs.test``)."""
        return f"{self.field}:{self.term}"


@dataclass(frozen=True)
class FieldPrefix:
    """Documents whose ``field`` holds a term starting with ``prefix``."""

    field: str
    prefix: str


@dataclass(frozen=True)
class CrawledRange:
    """Documents crawled at or after ``after`` and before ``before`` (epoch seconds)."""

    after: float | None = None
    before: float | None = None


@dataclass(frozen=True)
class And:
    """Every child matches."""

    children: tuple[Node, ...]


@dataclass(frozen=True)
class Or:
    """At least one child matches."""

    children: tuple[Node, ...]


@dataclass(frozen=True)
class Not:
    """The child does not match."""

    child: Node


Node = Union[  # noqa: UP007
    Term,
    Prefix,
    PhraseNode,
    FieldTerm,
    FieldPrefix,
    CrawledRange,
    And,
    Or,
    Not,
    Fuzzy,
    Boost,
    AnyOf,
]


# --- tokenizer ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Token:
    """One lexical token: ``kind`` is word, phrase, lparen, rparen, or, and, not, minus."""

    kind: str
    text: str
    pos: int


def tokenize(text: str) -> list[Token]:
    """Split a query into tokens (an unmatched quote mark is dropped, as before operators)."""
    out: list[Token] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c.isspace():
            i += 1
        elif c in "()":
            out.append(Token("lparen" if c == "(" else "rparen", c, i))
            i += 1
        elif c in _QUOTES:
            j = i + 1
            while j < n and text[j] not in _QUOTES:
                j += 1
            if j >= n:  # an unmatched quote mark is ignored (the words after it stay)
                i += 1
                continue
            out.append(Token("phrase", text[i + 1 : j], i))
            i = j + 1
        elif c == "-" and i + 1 < n and not text[i + 1].isspace() and text[i + 1] not in ")-":
            out.append(Token("minus", c, i))
            i += 1
        else:
            j = i
            while j < n and not text[j].isspace() and text[j] not in _SPECIAL:
                j += 1
            if j == i:  # a lone '-' before a space: punctuation, not an operator
                j = i + 1
            word = text[i:j]
            kind = {"OR": "or", "AND": "and", "NOT": "not"}.get(word, "word")
            out.append(Token(kind, word, i))
            i = j
    return out


# --- parser ------------------------------------------------------------------------------
class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = tokenize(text)
        self.i = 0
        self.depth = 0

    def peek(self) -> Token | None:
        return self.tokens[self.i] if self.i < len(self.tokens) else None

    def take(self) -> Token:
        tok = self.tokens[self.i]
        self.i += 1
        return tok

    def parse(self) -> Node | None:
        node = self.or_expr()
        tok = self.peek()
        if tok is not None:  # only a stray ')' stops or_expr early
            raise QuerySyntaxError(tok.pos, "this ')' closes no '('")
        return node

    def _skip_dangling(self) -> None:
        """Drop operators with nothing to join: ``OR json``, ``json OR``, ``json AND )``.

        Typed text often has them (a capitalised word in pasted prose); read as the stop
        words they are, the query means what it meant before operators existed.
        """
        while (tok := self.peek()) is not None and tok.kind in ("or", "and"):
            nxt = self.tokens[self.i + 1] if self.i + 1 < len(self.tokens) else None
            if nxt is None or nxt.kind in ("or", "and", "rparen") or not self._has_left(tok):
                self.take()
            else:
                break

    def _has_left(self, tok: Token) -> bool:
        j = self.tokens.index(tok)
        return j > 0 and self.tokens[j - 1].kind not in ("lparen", "or", "and", "not", "minus")

    def or_expr(self) -> Node | None:
        """One group: its alternatives, with every exclusion written in the group applied
        to all of them (Lucene's MUST_NOT; Google reads ``a OR b -c`` the same way)."""
        self._skip_dangling()
        branches = [self.and_expr()]
        while (tok := self.peek()) is not None and tok.kind == "or":
            self.take()
            self._skip_dangling()
            branches.append(self.and_expr())
        if len(branches) == 1:
            return _join(And, branches[0][0])
        positives: list[Node | None] = []
        excluded: list[Node | None] = []
        for parts, negated in branches:
            positives.append(_join(And, [p for p, n in zip(parts, negated, strict=True) if not n]))
            excluded += [p for p, n in zip(parts, negated, strict=True) if n]
        if not any(excluded):
            return _join(Or, positives)
        return _join(And, [_join(Or, positives), *excluded])

    def and_expr(self) -> tuple[list[Node | None], list[bool]]:
        """One alternative's parts, each flagged when it is a written ``-x``/``NOT x``."""
        self._skip_dangling()
        tok = self.peek()
        if tok is None or tok.kind == "rparen":
            return [], []  # nothing here (only dangling operators): the caller decides
        parts: list[Node | None] = []
        negated: list[bool] = []
        while (tok := self.peek()) is not None and tok.kind not in ("or", "rparen"):
            if tok.kind == "and" and parts:
                self.take()
                self._skip_dangling()
                if (nxt := self.peek()) is None or nxt.kind in ("or", "rparen"):
                    break
                tok = nxt
            node = self.unary()
            parts.append(node)
            negated.append(tok.kind in ("not", "minus") and isinstance(node, Not))
        return parts, negated

    def unary(self) -> Node | None:
        tok = self.peek()
        if tok is not None and tok.kind in ("not", "minus"):
            self.take()
            nxt = self.peek()
            if nxt is None or nxt.kind in ("or", "and", "rparen"):
                return None  # a NOT with nothing after it is the word "not": a stop word
            self._enter(tok)
            child = self.unary()
            self.depth -= 1
            return None if child is None else Not(child)
        return self.primary()

    def _enter(self, tok: Token) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise QuerySyntaxError(tok.pos, f"nesting is deeper than {MAX_DEPTH}")

    def primary(self) -> Node | None:
        tok = self.take()
        if tok.kind == "lparen":
            nxt = self.peek()
            if nxt is not None and nxt.kind == "rparen":
                raise QuerySyntaxError(tok.pos, "these parentheses are empty")
            if nxt is None:
                raise QuerySyntaxError(tok.pos, "this '(' is never closed")
            self._enter(tok)
            node = self.or_expr()
            self.depth -= 1
            close = self.peek()
            if close is None or close.kind != "rparen":
                raise QuerySyntaxError(tok.pos, "this '(' is never closed")
            self.take()
            tilde, boost = self._trailing(close.pos + 1)
            if tilde is not None:
                raise QuerySyntaxError(tilde[0], "'~' goes after a word or a phrase, not a group")
            return _boosted(node, boost)
        if tok.kind == "phrase":
            tilde, boost = self._trailing(tok.pos + len(tok.text) + 2)
            slop = 0
            if tilde is not None:
                at, slop_or_none = tilde
                if slop_or_none is None:
                    raise QuerySyntaxError(at, 'phrase slop needs a number: "a b"~2')
                if slop_or_none > MAX_SLOP:
                    raise QuerySyntaxError(at, f"phrase slop is at most {MAX_SLOP}")
                slop = slop_or_none
            return _boosted(_phrase(tok.text, slop), boost)
        if tok.kind == "word":
            return self.suffixed_word(tok)
        raise QuerySyntaxError(tok.pos, f"unexpected {tok.text!r}")  # pragma: no cover

    def _trailing(self, end: int) -> tuple[tuple[int, int | None] | None, tuple[int, float] | None]:
        """The ``~N`` / ``^N`` written right at ``end`` (after a phrase or a group), taken."""
        nxt = self.peek()
        if nxt is None or nxt.kind != "word" or nxt.pos != end or nxt.text[:1] not in "~^":
            return None, None
        self.take()
        m = _SUFFIX.fullmatch(nxt.text)
        if m is None:  # "^abc": a suffix sign before something that is not a number
            raise QuerySyntaxError(nxt.pos, "a boost takes a number (term^2), a slop a whole one")
        return _suffix_parts(nxt.text, nxt.pos)

    def suffixed_word(self, tok: Token) -> Node | None:
        """A word with its ``~N`` (fuzzy) and ``^N`` (boost) suffixes, if any."""
        m = _SUFFIX.search(tok.text)
        if m is None:
            return self.word(tok)
        if m.start() == 0:
            sign = tok.text[0]
            raise QuerySyntaxError(
                tok.pos, f"'{sign}' needs a word, phrase or group right before it"
            )
        core = tok.text[: m.start()]
        tilde, boost = _suffix_parts(m.group(0), tok.pos + m.start())
        if tilde is None:
            return _boosted(self.word(Token(tok.kind, core, tok.pos)), boost)
        at, edits = tilde
        field, sep, _ = core.partition(":")
        if core.endswith("*"):
            raise QuerySyntaxError(at, "a prefix (word*) cannot be fuzzy (word~) too")
        if sep and field.lower() in (*FIELDS, *OPERATOR_FIELDS):
            raise QuerySyntaxError(at, f"fuzzy terms are plain words, not {field.lower()}: values")
        if edits is not None and edits > MAX_FUZZY_EDITS:
            raise QuerySyntaxError(at, f"a fuzzy term allows at most {MAX_FUZZY_EDITS} edits")
        return _boosted(_fuzzy(core, MAX_FUZZY_EDITS if edits is None else edits), boost)

    def word(self, tok: Token) -> Node | None:
        field, sep, value = tok.text.partition(":")
        if sep and field.lower() in OPERATOR_FIELDS:
            return self.operator_field(field.lower(), value, tok)
        if sep and field.lower() in FIELDS:
            return self.field(field.lower(), value, tok)
        return _word(tok.text, tok.pos)

    def operator_field(self, field: str, value: str, tok: Token) -> Node | None:
        """``lang:``, ``inurl:``, ``intitle:`` and ``filetype:`` (field terms the indexer
        writes from :mod:`~lookup.search.docfields`)."""
        if field == "intitle":  # title: read at the value's own position
            return self.field("title", value, Token(tok.kind, "title:" + value, tok.pos + 2))
        at = tok.pos + len(field) + 1
        if not value:
            raise QuerySyntaxError(at, f"{field}: needs a value right after the colon")
        if field == "lang":
            code = value.lower()
            if not _LANG_CODE.match(code):
                raise QuerySyntaxError(at, "lang: takes a language code such as en or ja")
            return FieldTerm("lang", code)
        if field == "filetype":
            ext = value.lower().lstrip(".")
            if not _FILE_EXT.match(ext):
                raise QuerySyntaxError(at, "filetype: takes an extension such as html or txt")
            return FieldTerm("filetype", ext)
        if value.endswith("*"):  # inurl:tut*
            words = url_words(value.rstrip("*"))
            if len(words) != 1 or len(words[0]) < MIN_PREFIX_CHARS:
                raise QuerySyntaxError(
                    at, f"a prefix needs one word of at least {MIN_PREFIX_CHARS} characters"
                )
            return FieldPrefix("inurl", words[0])
        words = url_words(value)
        if not words:
            raise QuerySyntaxError(at, "inurl: takes a word of the address, such as tutorial")
        return _join(And, [FieldTerm("inurl", w) for w in words])

    def field(self, field: str, value: str, tok: Token) -> Node | None:
        at = tok.pos + len(field) + 1
        if not value:
            nxt = self.peek()
            if field == "title" and nxt is not None and nxt.kind == "phrase" and nxt.pos == at:
                self.take()
                tilde, boost = self._trailing(nxt.pos + len(nxt.text) + 2)
                if tilde is not None:  # title terms carry no positions
                    raise QuerySyntaxError(tilde[0], "title: phrases take no slop")
                terms = analyze(nxt.text).terms
                node = _join(And, [FieldTerm("title", t) for t in dict.fromkeys(terms)])
                return _boosted(node, boost)
            raise QuerySyntaxError(at, f"{field}: needs a value right after the colon")
        if field in ("after", "before"):
            try:
                day = dt.date.fromisoformat(value)
            except ValueError:
                raise QuerySyntaxError(at, f"{field}: takes a date like 2026-01-31") from None
            t = dt.datetime(day.year, day.month, day.day, tzinfo=dt.UTC).timestamp()
            return CrawledRange(after=t) if field == "after" else CrawledRange(before=t)
        if field == "site":
            host = value.strip("/").lower()
            if host.startswith(("http://", "https://")):
                host = host.split("://", 1)[1]
            host = host.split("/", 1)[0]
            keys = site_terms(host)
            if not keys:
                raise QuerySyntaxError(at, "site: takes a host name such as docs.example")
            return FieldTerm("site", keys[0])
        # title:
        if value.endswith("*"):
            stem = _prefix_text(value, at)
            return FieldPrefix("title", stem)
        terms = analyze(value).terms
        return _join(And, [FieldTerm("title", t) for t in dict.fromkeys(terms)])


#: The classic syntax's suffixes at the end of a word: ``~``, ``~N``, ``^N`` (either order).
_SUFFIX = re.compile(r"(?:[~^][0-9.]*)+$")


def _suffix_parts(
    text: str, pos: int
) -> tuple[tuple[int, int | None] | None, tuple[int, float] | None]:
    """``((position, N or None), (position, factor))`` of a suffix's ``~`` and ``^``."""
    tilde: tuple[int, int | None] | None = None
    boost: tuple[int, float] | None = None
    for m in re.finditer(r"([~^])([0-9.]*)", text):
        at, (sign, number) = pos + m.start(), m.groups()
        if (tilde if sign == "~" else boost) is not None:
            raise QuerySyntaxError(at, f"one '{sign}' per term")
        if sign == "~":
            if number and not re.fullmatch(r"[0-9]{1,6}", number):
                raise QuerySyntaxError(at, "'~' takes a whole number: word~1, \"a b\"~3")
            tilde = (at, int(number) if number else None)
            continue
        if not re.fullmatch(r"[0-9]{1,12}(?:\.[0-9]{1,12})?", number):
            raise QuerySyntaxError(at, "a boost takes a number: term^2, term^0.5")
        if float(number) > MAX_BOOST:
            raise QuerySyntaxError(at, f"a boost is at most {MAX_BOOST:g}")
        boost = (at, float(number))
    return tilde, boost


def _boosted(node: Node | None, boost: tuple[int, float] | None) -> Node | None:
    """``node`` with its scores times the boost (no wrapper for none, or for ``^1``)."""
    if node is None or boost is None or boost[1] == 1.0:
        return node
    return Boost(node, boost[1])


def _fuzzy(text: str, edits: int) -> Node | None:
    """``word~N``: each of the word's terms within N edits (``~0``: the terms themselves)."""
    terms = list(dict.fromkeys(analyze(text).terms))
    if edits == 0:
        return _join(And, [Term(t) for t in terms])
    word = text if len(terms) == 1 else ""
    return _join(And, [Fuzzy(t, edits, word) for t in terms])


def _prefix_text(word: str, pos: int) -> str:
    """The normalised prefix of ``word*`` (lower-cased, as terms are), checked for length."""
    prefix = normalize_prefix(word.rstrip("*"))
    if prefix is None or len(prefix) < MIN_PREFIX_CHARS:
        raise QuerySyntaxError(
            pos, f"a prefix needs one word of at least {MIN_PREFIX_CHARS} characters before '*'"
        )
    return prefix


def _word(text: str, pos: int) -> Node | None:
    if text.endswith("*") and text.rstrip("*"):
        return Prefix(_prefix_text(text, pos))
    terms = list(dict.fromkeys(analyze(text).terms))
    if len(terms) == 1:  # one typed word: typo tolerance may correct it (coordinator)
        return Term(terms[0], text, pos)
    return _join(And, [Term(t) for t in terms])


def _phrase(text: str, slop: int = 0) -> Node | None:
    a = analyze(text)
    if not a.terms:  # stop words only: the phrase of their pairs (analysis.stop_phrase)
        grams = stop_phrase(text)
        if grams is None:
            return None
        return Term(grams.terms[0]) if len(grams.terms) == 1 else PhraseNode(grams)
    if len(a.terms) == 1:
        return Term(a.terms[0])
    first = a.positions[0]
    return PhraseNode(Phrase(tuple(a.terms), tuple(p - first for p in a.positions)), slop)


def _join(kind: type[And] | type[Or], parts: list[Node | None]) -> Node | None:
    kept: list[Node] = []
    for p in parts:
        if p is None:
            continue
        if isinstance(p, kind):  # flatten (a b) c into one And
            kept.extend(p.children)
        elif p not in kept:
            kept.append(p)
    if not kept:
        return None
    if len(kept) == 1:
        return kept[0]
    return kind(tuple(kept))


#: Characters and words that make a query more than words: without one, the parse is
#: the plain words themselves (checked with one regex search, not a parse).
_OPERATORS = re.compile(r'[()*:^~"\u201c\u201d\u201e\u00ab\u00bb]|(?:^|\s)-|\b(?:OR|AND|NOT)\b')


def has_operators(text: str) -> bool:
    """Could ``text`` hold an operator, a phrase or a field? False: it is plain words."""
    return _OPERATORS.search(text) is not None


def parse(text: str) -> Node | None:
    """The AST of a query, or None when nothing in it is searchable (only stop words)."""
    return _Parser(text).parse()


# --- questions about an AST ----------------------------------------------------------------
def positive_terms(node: Node | None) -> list[str]:
    """Index terms that score: those not under a NOT, in first-seen order (prefixes excluded)."""
    out: dict[str, None] = {}

    def walk(n: Node, neg: bool) -> None:
        if isinstance(n, Term) and not neg:
            out.setdefault(n.term, None)
        elif isinstance(n, PhraseNode) and not neg:
            for t in n.phrase.terms:
                out.setdefault(t, None)
        elif isinstance(n, FieldTerm) and n.field == "title" and not neg:
            out.setdefault(n.term, None)
        elif isinstance(n, (And, Or)):
            for c in n.children:
                walk(c, neg)
        elif isinstance(n, Not):
            walk(n.child, not neg)
        elif isinstance(n, Boost):
            walk(n.child, neg)
        elif isinstance(n, AnyOf) and not neg:  # an expanded prefix: highlighted, not scored
            for key in highlighted(n):
                out.setdefault(key, None)

    if node is not None:
        walk(node, False)
    return list(out)


#: An expanded prefix's commonest terms that snippets highlight (and plans carry, unscored).
HIGHLIGHT_EXPANSIONS = 16


def highlighted(node: AnyOf) -> list[str]:
    """The text terms of an expanded prefix worth highlighting (``title:`` keys as words)."""
    out = []
    for key in node.keys[:HIGHLIGHT_EXPANSIONS]:
        field, sep, value = key.partition(":")
        if not sep:
            out.append(key)
        elif field == "title":
            out.append(value)
    return out


def written_terms(node: Node | None) -> int:
    """Distinct scoring terms as the user wrote them, each ``prefix*`` and ``word~``
    counted once (their expansions are bounded separately): what the query-length limit
    counts."""
    prefixes: set[str] = set()

    def walk(n: Node) -> None:
        if isinstance(n, Prefix):
            prefixes.add(n.prefix)
        elif isinstance(n, FieldPrefix) and n.field == "title":
            prefixes.add(f"title:{n.prefix}")
        elif isinstance(n, Fuzzy):
            prefixes.add(f"{n.term}~{n.edits}")
        elif isinstance(n, (And, Or)):
            for c in n.children:
                walk(c)
        elif isinstance(n, Boost):
            walk(n.child)

    if node is not None:
        walk(node)
    return len(positive_terms(node)) + len(prefixes)


def has_positive(node: Node | None, negated: bool = False) -> bool:
    """Are the query's matches bounded by what its leaves find? ``-foo`` alone is not.

    By De Morgan, under a NOT an AND acts as an OR and an OR as an AND.
    """
    if node is None:
        return False
    if isinstance(node, Not):
        return has_positive(node.child, not negated)
    if isinstance(node, Boost):
        return has_positive(node.child, negated)
    if isinstance(node, (And, Or)):
        every = isinstance(node, Or) != negated
        found = [has_positive(c, negated) for c in node.children]
        return all(found) if every else any(found)
    return not negated


def is_plain(node: Node | None) -> bool:
    """Only terms and exact phrases joined by AND: the classic fast path answers it as before."""
    if node is None or isinstance(node, Term) or (isinstance(node, PhraseNode) and not node.slop):
        return True
    if isinstance(node, And):
        return all(
            isinstance(c, Term) or (isinstance(c, PhraseNode) and not c.slop) for c in node.children
        )
    return False


def map_nodes(node: Node, fn) -> Node:  # type: ignore[no-untyped-def]
    """Rebuild ``node`` bottom-up with ``fn`` applied to every leaf (prefix expansion)."""
    if isinstance(node, And):
        return And(tuple(map_nodes(c, fn) for c in node.children))
    if isinstance(node, Or):
        return Or(tuple(map_nodes(c, fn) for c in node.children))
    if isinstance(node, Not):
        return Not(map_nodes(node.child, fn))
    if isinstance(node, Boost):
        return Boost(map_nodes(node.child, fn), node.factor)
    return fn(node)
