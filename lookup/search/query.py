"""The web-search query language: a tokenizer and a recursive-descent parser to an AST.

Grammar (Lucene's classic query syntax, the parts a search box needs)::

    query   := or EOF
    or      := and ("OR" and)*
    and     := unary (["AND"] unary)*          -- juxtaposition is AND
    unary   := ("NOT" | "-") unary | primary
    primary := "(" or ")" | PHRASE | FIELD ":" value | WORD | WORD "*"
    FIELD   := title | site | after | before

An exclusion (``-x`` or ``NOT x``) written in a group applies to the whole group, as
Lucene's MUST_NOT does: ``json OR pickle -mirror`` is ``(json OR pickle) AND NOT mirror``;
parentheses make a group of their own. Boosts (``term^2``), fuzzy terms (``term~1``) and
phrase slop (``"a b"~3``) are refused at their position rather than read as other words.

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
from typing import Union

from lookup.search.analysis import Phrase, analyze, normalize_prefix, site_terms

#: Shortest prefix a ``term*`` may have (one letter would expand to a large part of the vocabulary).
MIN_PREFIX_CHARS = 2
#: Deepest nesting of parentheses and NOTs accepted (keeps recursion bounded).
MAX_DEPTH = 32
FIELDS = ("title", "site", "after", "before")
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
    """Documents with this index term anywhere (title or body)."""

    term: str


@dataclass(frozen=True)
class Prefix:
    """Documents with any index term starting with ``prefix`` (expanded against the index)."""

    prefix: str


@dataclass(frozen=True)
class PhraseNode:
    """Documents with these terms word after word."""

    phrase: Phrase


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


Node = Union[Term, Prefix, PhraseNode, FieldTerm, FieldPrefix, CrawledRange, And, Or, Not]  # noqa: UP007


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
            return node
        if tok.kind == "phrase":
            nxt = self.peek()
            if nxt is not None and nxt.kind == "word" and nxt.text.startswith("~"):
                if nxt.pos == tok.pos + len(tok.text) + 2:
                    raise QuerySyntaxError(nxt.pos, 'phrase slop ("a b"~N) is not supported')
            return _phrase(tok.text)
        if tok.kind == "word":
            _refuse_unsupported(tok)
            return self.word(tok)
        raise QuerySyntaxError(tok.pos, f"unexpected {tok.text!r}")  # pragma: no cover

    def word(self, tok: Token) -> Node | None:
        field, sep, value = tok.text.partition(":")
        if sep and field.lower() in FIELDS:
            return self.field(field.lower(), value, tok)
        return _word(tok.text, tok.pos)

    def field(self, field: str, value: str, tok: Token) -> Node | None:
        at = tok.pos + len(field) + 1
        if not value:
            nxt = self.peek()
            if field == "title" and nxt is not None and nxt.kind == "phrase" and nxt.pos == at:
                self.take()
                terms = analyze(nxt.text).terms
                return _join(And, [FieldTerm("title", t) for t in dict.fromkeys(terms)])
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


#: Classic-syntax suffixes the engine does not run: a boost ``term^2`` and a fuzzy
#: ``term~`` / ``term~1``. Read as words they would search for something else.
_UNSUPPORTED = re.compile(r"(\^[\d.]*|~\d*)$")


def _refuse_unsupported(tok: Token) -> None:
    """Refuse ``term^N`` and ``term~N`` where they start (a 400 naming the operator)."""
    m = _UNSUPPORTED.search(tok.text)
    if m is None or m.start() == 0:
        return
    what = "boosts (term^N)" if m.group(1).startswith("^") else "fuzzy terms (term~N)"
    raise QuerySyntaxError(tok.pos + m.start(), f"{what} are not supported")


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
    terms = analyze(text).terms
    return _join(And, [Term(t) for t in dict.fromkeys(terms)])


def _phrase(text: str) -> Node | None:
    a = analyze(text)
    if not a.terms:
        return None
    if len(a.terms) == 1:
        return Term(a.terms[0])
    first = a.positions[0]
    return PhraseNode(Phrase(tuple(a.terms), tuple(p - first for p in a.positions)))


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

    if node is not None:
        walk(node, False)
    return list(out)


def written_terms(node: Node | None) -> int:
    """Distinct scoring terms as the user wrote them, each ``prefix*`` counted once (its
    expansions are bounded separately): what the query-length limit counts."""
    prefixes: set[str] = set()

    def walk(n: Node) -> None:
        if isinstance(n, Prefix):
            prefixes.add(n.prefix)
        elif isinstance(n, FieldPrefix) and n.field == "title":
            prefixes.add(f"title:{n.prefix}")
        elif isinstance(n, (And, Or)):
            for c in n.children:
                walk(c)

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
    if isinstance(node, (And, Or)):
        every = isinstance(node, Or) != negated
        found = [has_positive(c, negated) for c in node.children]
        return all(found) if every else any(found)
    return not negated


def is_plain(node: Node | None) -> bool:
    """Only terms and phrases joined by AND: the classic fast path answers it as before."""
    if node is None or isinstance(node, (Term, PhraseNode)):
        return True
    if isinstance(node, And):
        return all(isinstance(c, (Term, PhraseNode)) for c in node.children)
    return False


def map_nodes(node: Node, fn) -> Node:  # type: ignore[no-untyped-def]
    """Rebuild ``node`` bottom-up with ``fn`` applied to every leaf (prefix expansion)."""
    if isinstance(node, And):
        return And(tuple(map_nodes(c, fn) for c in node.children))
    if isinstance(node, Or):
        return Or(tuple(map_nodes(c, fn) for c in node.children))
    if isinstance(node, Not):
        return Not(map_nodes(node.child, fn))
    return fn(node)
