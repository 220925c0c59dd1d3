"""Boosts ``^N``, fuzzy words ``~N``, phrase slop ``"a b"~N`` and constant-score prefixes
(issue 28 items 5 and 7), checked like every other operator: hypothesis writes random
query trees with them, and the engine's answer over both tiers (batch segments in two
shards and the real-time tier) must equal a brute-force scan of every live document —
the same set and each result's score, computed here from the documents' own tokens:

* a term: ``boost × BM25`` (a term in several places counts once, at its largest boost);
* a fuzzy word: its expansions — every term of the live documents within N edits
  (a textbook optimal-string-alignment table, not the engine's rapidfuzz), the most
  similar first, then the commonest, at most 50 — each at ``boost × (1 - d / min len)``;
* a sloppy phrase: ``boost × Σidf × f / (f + norm)`` with ``f = Σ 1 / (1 + moves)``
  over the anchors (positions of its first word) whose words sit within the slop;
* a prefix: ``boost × 1.0`` for a document holding any of its 50 commonest expansions.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterator

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from lookup.search import SearchService, Signals, build_index
from lookup.search import query as q
from lookup.search.analysis import Phrase, analyze, analyze_query
from lookup.search.bm25 import K1, B, sloppy_freq
from lookup.search.coordinator import QueryError
from lookup.search.expansion import MAX_FUZZY_TERMS, MAX_PREFIX_TERMS
from tests.search.corpus import CrawlWriter, Page
from tests.search.test_query import (
    DATES,
    LIMIT,
    NOW,
    Doc,
    World,
    _and_leaves,
    _day,
    _normal,
    query_world,
)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    yield from query_world(tmp_path_factory)


BOOSTS = [0.5, 2.0, 3.5]


# --- the parser --------------------------------------------------------------------------
def test_suffixes_parse_to_their_nodes() -> None:
    json = q.Term("json")
    assert q.parse("json^2") == q.Boost(json, 2.0)
    assert q.parse("json^1") == json  # a boost of one is no boost
    assert q.parse("json^0.5 heapq") == q.And((q.Boost(json, 0.5), q.Term("heapq")))
    assert q.parse("pickle~") == q.Fuzzy("pickl", 2)  # Lucene's default: two edits
    assert q.parse("pickle~1") == q.Fuzzy("pickl", 1)
    assert q.parse("pickle~0") == q.Term("pickl")  # no edits: the word itself
    assert q.parse("pickle~1^3") == q.parse("pickle^3~1") == q.Boost(q.Fuzzy("pickl", 1), 3.0)
    slop = q.parse('"python library"~3')
    assert isinstance(slop, q.PhraseNode) and slop.slop == 3
    assert q.parse('"python library"~0') == q.parse('"python library"')
    assert q.parse('"python library"~2^2') == q.Boost(slop.__class__(slop.phrase, 2), 2.0)
    assert q.parse("(json OR heapq)^2") == q.Boost(q.Or((json, q.Term("heapq"))), 2.0)
    assert q.parse("pick*^2") == q.Boost(q.Prefix("pick"), 2.0)
    assert q.parse("title:heap^2") == q.Boost(q.FieldTerm("title", "heap"), 2.0)
    assert q.parse('title:"heap queue"^2') == q.Boost(
        q.And((q.FieldTerm("title", "heap"), q.FieldTerm("title", "queue"))), 2.0
    )
    # a word with a ^ or ~ inside is still a word
    assert q.parse("a~b") == q.parse("a b")


@pytest.mark.parametrize(
    ("text", "position", "words"),
    [
        ("json ^2", 5, "right before"),
        ("json^", 4, "number"),
        ("json^2000", 4, "at most"),
        ("json^2^3", 6, "one '^'"),
        ("json~3", 4, "at most 2 edits"),
        ("json~1.5", 4, "whole number"),
        ("pick*~", 5, "prefix"),
        ("title:heap~1", 10, "plain words"),
        ('"a b"~', 5, "needs a number"),
        ('"heap queue"~500', 12, "at most"),
        ("(json heapq)~2", 12, "not a group"),
        ('title:"heap queue"~2', 18, "no slop"),
        ("~", 0, "right before"),
    ],
)
def test_suffix_errors_say_where(text: str, position: int, words: str) -> None:
    with pytest.raises(q.QuerySyntaxError) as err:
        q.parse(text)
    assert err.value.position == position, err.value.message
    assert words in err.value.message


SUFFIX_PIECES = [*'ab c()"-*:^~2.', "json", " OR ", " NOT ", "title:", "^2", "~1", "~", "0.5"]


@given(st.lists(st.sampled_from(SUFFIX_PIECES), max_size=16))
@settings(max_examples=400, deadline=None)
def test_any_text_with_suffixes_parses_or_fails_where_it_says(pieces: list[str]) -> None:
    text = "".join(pieces)
    try:
        q.parse(text)
    except q.QuerySyntaxError as exc:
        assert 0 <= exc.position <= len(text)
        if any(w in exc.message for w in ("boost", "fuzzy", "slop", "'~'", "'^'", "one '")):
            assert text[exc.position] in "~^", (text, exc.message)  # at the suffix itself


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(pieces=st.lists(st.sampled_from(SUFFIX_PIECES), min_size=1, max_size=12))
def test_the_engine_answers_any_suffix_text_or_refuses_it(
    issue_web: SearchService, pieces: list[str]
) -> None:
    """Whatever the suffixes, the service answers or says QUERY_SYNTAX (never another error)."""
    text = "".join(pieces).strip()
    assume(text)
    try:
        body = issue_web.search(text, now=NOW)
    except QueryError as exc:
        assert exc.code in ("QUERY_SYNTAX", "ONLY_NEGATIVE", "QUERY_TOO_LONG"), exc.code
    else:
        assert body["estimatedTotal"] >= 0


# --- sloppy frequency against its definition -----------------------------------------------
def _sloppy_brute(stream: dict[int, str], phrase: Phrase, slop: int) -> float:
    where: dict[str, list[int]] = {}
    for p, t in stream.items():
        where.setdefault(t, []).append(p)
    freq = 0.0
    first, o0 = phrase.terms[0], phrase.offsets[0]
    for p0 in where.get(first, []):
        moves = 0
        for t, o in zip(phrase.terms[1:], phrase.offsets[1:], strict=True):
            gaps = [
                abs((p - o) - (p0 - o0)) for p in where.get(t, []) if not (t == first and p == p0)
            ]
            if not gaps:
                moves = slop + 1
                break
            moves += min(gaps)
        if moves <= slop:
            freq += 1.0 / (1.0 + moves)
    return freq


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.lists(st.sampled_from("abcd"), max_size=12), min_size=1, max_size=4),
    st.lists(st.sampled_from("abc"), min_size=2, max_size=3),
    st.integers(0, 5),
)
def test_sloppy_freq_is_its_definition(docs: list[list[str]], words: list[str], slop: int) -> None:
    phrase = Phrase(tuple(words), tuple(range(len(words))))
    streams = [dict(enumerate(d)) for d in docs]

    def positions_of(term: str) -> tuple[np.ndarray, np.ndarray]:
        pairs = [(i, p) for i, s in enumerate(streams) for p, t in s.items() if t == term]
        return np.array([i for i, _ in pairs], np.int64), np.array([p for _, p in pairs], np.int64)

    got = sloppy_freq(phrase, slop, len(docs), positions_of)
    want = [_sloppy_brute(s, phrase, slop) for s in streams]
    assert got.tolist() == pytest.approx(want)
    if slop == 0:  # the exact phrase count
        exact = [
            sum(all(s.get(p + k) == w for k, w in enumerate(words)) for p in s) for s in streams
        ]
        assert got.tolist() == pytest.approx(exact)


def test_a_swap_costs_two_moves_as_in_lucene() -> None:
    phrase = Phrase(("a", "b"), (0, 1))
    doc = {0: "b", 1: "a"}
    positions = {"a": (np.array([0]), np.array([1])), "b": (np.array([0]), np.array([0]))}
    assert sloppy_freq(phrase, 1, 1, positions.__getitem__)[0] == 0.0
    assert sloppy_freq(phrase, 2, 1, positions.__getitem__)[0] == pytest.approx(1 / 3)
    assert _sloppy_brute(doc, phrase, 2) == pytest.approx(1 / 3)


# --- the oracle ----------------------------------------------------------------------------
def osa(a: str, b: str) -> int:
    """Optimal string alignment, the textbook table (the oracle of rapidfuzz's OSA)."""
    d = [[i + j if i * j == 0 else 0 for j in range(len(b) + 1)] for i in range(len(a) + 1)]
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            d[i][j] = min(
                d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] != b[j - 1])
            )
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                d[i][j] = min(d[i][j], d[i - 2][j - 2] + 1)
    return d[len(a)][len(b)]


_ORACLES: dict[int, Oracle] = {}


class Oracle:
    """Brute-force answers over the world's live documents."""

    def __init__(self, world: World) -> None:
        self.world = world
        self.df = Counter(t for d in world.docs for t in d.terms)
        self.n = len(world.docs)
        self.avgdl = sum(d.length for d in world.docs) / self.n
        self._fuzzy: dict[tuple[str, int], list[tuple[str, float]]] = {}
        self._prefix: dict[str, list[str]] = {}

    @classmethod
    def of(cls, world: World) -> Oracle:
        """One oracle per world (its fuzzy expansions are remembered across examples)."""
        found = _ORACLES.get(id(world))
        if found is None or found.world is not world:
            found = _ORACLES[id(world)] = cls(world)
        return found

    def within(self, term: str, edits: int) -> list[tuple[str, int]]:
        """Every live term within ``edits`` of ``term`` and its distance (brute force)."""
        return [
            (t, dist)
            for t in self.df
            if abs(len(t) - len(term)) <= edits and (dist := osa(term, t)) <= edits
        ]

    def idf(self, term: str) -> float:
        df = self.df.get(term, 0)
        return math.log(1.0 + (self.n - df + 0.5) / (df + 0.5))

    def norm(self, d: Doc) -> float:
        return K1 * (1 - B + B * d.length / self.avgdl)

    def prefix(self, p: str) -> list[str]:
        if p not in self._prefix:
            ranked = sorted((t for t in self.df if t.startswith(p)), key=lambda t: (-self.df[t], t))
            self._prefix[p] = ranked[:MAX_PREFIX_TERMS]
        return self._prefix[p]

    def fuzzy(self, word: str, edits: int) -> list[tuple[str, float]]:
        term = analyze_query(word)[0]
        if (term, edits) not in self._fuzzy:
            found = []
            for t, dist in self.within(term, edits):
                sim = 1 - dist / min(len(term), len(t))
                if sim > 0:
                    found.append((-sim, -self.df[t], t))
            ranked = [(t, -s) for s, _, t in sorted(found)[:MAX_FUZZY_TERMS]]
            self._fuzzy[(term, edits)] = ranked
        return self._fuzzy[(term, edits)]

    def phrase(self, words: tuple[str, str]) -> Phrase:
        a = analyze(" ".join(words))
        return Phrase(tuple(a.terms), tuple(p - a.positions[0] for p in a.positions))

    def matches(self, tree: tuple, d: Doc) -> bool:
        kind, arg = tree
        if kind == "term":
            return arg in d.terms
        if kind == "word" or kind == "title":
            term = analyze_query(arg)[0]
            return term in (d.title_terms if kind == "title" else d.terms)
        if kind == "prefix":
            return any(t in d.terms for t in self.prefix(arg))
        if kind == "fuzzy":
            word, edits = arg
            return any(t in d.terms for t, _ in self.fuzzy(word, 2 if edits is None else edits))
        if kind in ("phrase", "slop"):
            words, slop = (arg, 0) if kind == "phrase" else arg
            p = self.phrase(words)
            if len(p.terms) == 1:
                return p.terms[0] in d.terms
            return _sloppy_brute(d.stream, p, slop) > 0
        if kind == "site":
            return d.host == arg or d.host.endswith("." + arg)
        if kind == "after":
            return d.crawled >= _day(arg)
        if kind == "before":
            return d.crawled < _day(arg)
        if kind == "boost":
            return self.matches(arg[0], d)
        if kind == "and":
            return all(self.matches(c, d) for c in arg)
        if kind == "or":
            return any(self.matches(c, d) for c in arg)
        return not self.matches(arg, d)

    def score(self, tree: tuple, d: Doc) -> float:
        weights: dict[str, float] = {}
        sloppy: dict[tuple, float] = {}
        prefixes: dict[str, float] = {}

        def term(t: str, w: float) -> None:
            weights[t] = max(weights.get(t, 0.0), w)

        def walk(x: tuple, neg: bool, w: float) -> None:
            kind, arg = x
            if kind == "not":
                walk(arg, not neg, w)
            elif kind in ("and", "or"):
                for c in arg:
                    walk(c, neg, w)
            elif kind == "boost":
                walk(arg[0], neg, w * arg[1])
            elif neg:
                return
            elif kind == "term":
                term(arg, w)
            elif kind in ("word", "title"):
                term(analyze_query(arg)[0], w)
            elif kind == "fuzzy":
                for t, sim in self.fuzzy(arg[0], 2 if arg[1] is None else arg[1]):
                    term(t, w * sim)
            elif kind in ("phrase", "slop"):
                words, slop = (arg, 0) if kind == "phrase" else arg
                p = self.phrase(words)
                for t in p.terms:
                    term(t, 0.0 if slop and len(p.terms) > 1 else w)
                if slop and len(p.terms) > 1:
                    sloppy[(p, slop)] = max(sloppy.get((p, slop), 0.0), w)
            elif kind == "prefix":
                prefixes[arg] = max(prefixes.get(arg, 0.0), w)

        walk(tree, False, 1.0)
        norm = self.norm(d)
        total = 0.0
        for t, w in weights.items():
            tf = d.terms.get(t, 0)
            total += w * self.idf(t) * tf / (tf + norm) if tf else 0.0
        for (p, slop), w in sloppy.items():
            f = _sloppy_brute(d.stream, p, slop)
            total += w * sum(self.idf(t) for t in p.terms) * f / (f + norm) if f else 0.0
        for p, w in prefixes.items():
            total += w if any(t in d.terms for t in self.prefix(p)) else 0.0
        return total


_TREES: dict[int, tuple[World, st.SearchStrategy]] = {}


def trees(world: World) -> st.SearchStrategy:
    """Random query trees over the world's words (built once per world: building and
    validating the strategy costs more than running the query)."""
    cached = _TREES.get(id(world))
    if cached is None or cached[0] is not world:
        cached = _TREES[id(world)] = (world, _trees(world))
    return cached[1]


def _trees(world: World) -> st.SearchStrategy:
    word = st.sampled_from(world.words)
    plain = st.one_of(
        word.map(lambda w: ("word", w)),
        word.filter(lambda w: len(w) >= 4).flatmap(
            lambda w: st.integers(2, len(w) - 1).map(lambda k: ("prefix", w[:k]))
        ),
        st.tuples(word, word).map(lambda p: ("phrase", p)),
        word.map(lambda w: ("title", w)),
        st.tuples(st.tuples(word, word), st.integers(1, 4)).map(lambda p: ("slop", p)),
        st.tuples(word, st.sampled_from([None, 1, 2])).map(lambda p: ("fuzzy", p)),
    )
    leaf = st.one_of(
        plain,
        st.tuples(plain, st.sampled_from(BOOSTS)).map(lambda p: ("boost", p)),
        st.sampled_from(world.hosts).map(lambda h: ("site", h)),
        st.tuples(st.sampled_from(["after", "before"]), st.sampled_from(DATES)),
    )
    tree = st.recursive(
        leaf,
        lambda kids: st.one_of(
            st.lists(kids, min_size=2, max_size=3).map(lambda c: ("and", c)),
            st.lists(kids, min_size=2, max_size=3).map(lambda c: ("or", c)),
            st.tuples(
                st.lists(kids, min_size=2, max_size=3).map(lambda c: ("or", c)),
                st.sampled_from(BOOSTS),
            ).map(lambda p: ("boost", p)),
            kids.map(lambda c: ("not", c)),
        ),
        max_leaves=5,
    )
    return st.one_of(tree, st.tuples(plain, tree).map(lambda p: ("and", list(p))))


def render(tree: tuple) -> str:
    kind, arg = tree
    if kind == "word":
        return arg
    if kind == "prefix":
        return arg + "*"
    if kind == "phrase":
        return '"' + " ".join(arg) + '"'
    if kind == "slop":
        return '"' + " ".join(arg[0]) + f'"~{arg[1]}'
    if kind == "fuzzy":
        return f"{arg[0]}~" + ("" if arg[1] is None else str(arg[1]))
    if kind == "boost":
        inner = render(arg[0])
        if arg[0][0] in ("and", "or"):
            inner = f"({inner})"
        return f"{inner}^{arg[1]:g}"
    if kind in ("title", "site", "after", "before"):
        return f"{kind}:{arg}"
    if kind == "not":
        inner = render(arg)
        return ("NOT " if arg[0] == "not" else "-") + (
            f"({inner})" if arg[0] in ("and", "or") else inner
        )
    parts = [f"({render(c)})" if c[0] in ("and", "or") else render(c) for c in arg]
    return (" OR " if kind == "or" else " ").join(parts)


def grouped(tree: tuple) -> tuple:
    """A NOT written directly in an OR group excludes from the whole group (Lucene)."""
    kind, arg = tree
    if kind == "not":
        return ("not", grouped(arg))
    if kind == "boost":
        return ("boost", (grouped(arg[0]), arg[1]))
    if kind not in ("and", "or"):
        return tree
    kids = [grouped(c) for c in arg]
    if kind == "or" and any(c[0] == "not" for c in kids):
        pos = [c for c in kids if c[0] != "not"]
        nots = [c for c in kids if c[0] == "not"]
        return ("and", ([("or", pos)] if pos else []) + nots)
    return (kind, kids)


def findable(tree: tuple, neg: bool = False) -> bool:
    kind, arg = tree
    if kind == "not":
        return findable(arg, not neg)
    if kind == "boost":
        return findable(arg[0], neg)
    if kind in ("and", "or"):
        every = (kind == "or") != neg
        found = [findable(c, neg) for c in arg]
        return all(found) if every else any(found)
    return not neg


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_every_operator_scores_as_a_brute_force_scan(world: World, data: st.DataObject) -> None:
    written = data.draw(trees(world))
    text = render(written)
    assume(len(text) <= 500)
    tree = grouped(written)
    oracle = Oracle.of(world)
    if not findable(tree):
        with pytest.raises(QueryError) as err:
            world.svc.search(text, limit=LIMIT, now=NOW, typos=False)
        assert err.value.code == "ONLY_NEGATIVE"
        return
    expected = {d.url: d for d in world.docs if oracle.matches(tree, d)}
    kids = _and_leaves(_normal(tree))
    if not expected and len(kids) > 1 and all(k[0] == "word" for k in kids):  # OR fallback
        alts = ("or", [("term", k[1]) for k in kids])
        expected = {d.url: d for d in world.docs if oracle.matches(alts, d)}
        tree = alts
    body = world.svc.search(text, limit=LIMIT, now=NOW, signals=Signals.off(), typos=False)
    assert body["estimatedTotal"] == len(expected), text
    got = {r["url"]: r["score"] for r in body["results"]}
    assert len(got) == min(LIMIT, len(expected)), text
    assert set(got) <= set(expected), text
    for url, score in got.items():
        assert score == pytest.approx(oracle.score(tree, expected[url]), abs=1e-5), (text, url)


# --- the issue's own cases ----------------------------------------------------------------
#: A small web with the issue's words (the stdlib world has no pickle page).
ISSUE_PAGES = [
    Page(
        "https://docs.sandbox.test/library/pickle.html",
        "pickle - Python object serialization",
        "The pickle module implements binary protocols for serializing and de-serializing a "
        "Python object structure. Unlike json, pickle can represent recursive structures.",
    ),
    Page(
        "https://docs.sandbox.test/library/json.html",
        "json - JSON encoder and decoder",
        "json exposes an API familiar to users of the standard library marshal and pickle "
        "modules. Compared with pickle, json output is text a person can read.",
    ),
    Page(
        "https://docs.sandbox.test/library/marshal.html",
        "marshal - Internal Python object serialization",
        "This module contains functions that can read and write Python values in a binary "
        "format. Most people should use pickle or json instead.",
    ),
    Page(
        "https://docs.sandbox.test/library/index.html",
        "The Python Standard Library",
        "While the reference manual describes the exact syntax of the language, this library "
        "reference manual describes the standard library distributed with Python.",
    ),
    Page(
        "https://docs.sandbox.test/tutorial/stdlib.html",
        "Brief Tour of the Standard Library",
        "A tour of the standard library: operating system interface, file wildcards, "
        "command line arguments and the json module for data interchange.",
    ),
    Page(
        "https://docs.sandbox.test/library/csv.html",
        "csv - CSV File Reading and Writing",
        "The csv module implements classes to read and write tabular data in CSV format.",
    ),
]


@pytest.fixture(scope="module")
def issue_web(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SearchService]:
    yield from issue_service(tmp_path_factory)


def issue_service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SearchService]:
    """The issue's small web, indexed into one shard (a module fixture here and in test_typos)."""
    root = tmp_path_factory.mktemp("typos")
    CrawlWriter(root / "crawl").fetch(ISSUE_PAGES)
    build_index(root / "crawl", root / "idx", shards=1)
    svc = SearchService(root / "idx", realtime=False)
    svc.reload()
    yield svc
    svc.close()


def test_a_prefix_scores_a_constant_and_reports_its_limit(world: World) -> None:
    """``pick*`` no longer sums the BM25 of its expansions (13.9 against 2 in the issue):
    every page holding one scores the same, and the answer says what it expanded to."""
    body = world.svc.search("ite*", limit=LIMIT, now=NOW, signals=Signals.off(), typos=False)
    assert body["estimatedTotal"] > 1
    assert {r["score"] for r in body["results"]} == {1.0}
    [note] = body["expansions"]
    oracle = Oracle.of(world)
    matching = [t for t in oracle.df if t.startswith("ite")]
    assert note == {
        "operator": "prefix",
        "text": "ite*",
        "terms": min(len(matching), MAX_PREFIX_TERMS),
        "matching": len(matching),
        "limit": MAX_PREFIX_TERMS,
        "truncated": len(matching) > MAX_PREFIX_TERMS,
    }
    # a word beside it still ranks by relevance: the prefix adds the same to every page
    both = world.svc.search("iterator ite*", limit=LIMIT, now=NOW, signals=Signals.off())
    alone = world.svc.search("iterator", limit=LIMIT, now=NOW, signals=Signals.off())
    assert [r["url"] for r in both["results"]] == [r["url"] for r in alone["results"]]
    for a, b in zip(both["results"], alone["results"], strict=True):
        assert a["score"] == pytest.approx(b["score"] + 1.0)


def test_boost_slop_and_fuzzy_as_people_type_them(issue_web: SearchService) -> None:
    """The issue's examples: ``"python library"~3`` finds the page whose title has both
    words a move apart (it found nothing), ``json^2`` searches json twice as strong (it
    searched the digit 2 too), ``pikle~1`` finds pickle."""
    svc, off = issue_web, Signals.off()
    assert svc.search('"python library"', now=NOW, typos=False)["estimatedTotal"] == 0
    near = svc.search('"python library"~3', limit=LIMIT, now=NOW, signals=off)
    assert [r["title"] for r in near["results"]] == ["The Python Standard Library"]
    exact = svc.search('"standard library"', limit=LIMIT, now=NOW)
    assert exact["estimatedTotal"] == 3
    assert svc.search('"library standard"~1', now=NOW)["estimatedTotal"] == 0
    swapped = svc.search('"library standard"~2', limit=LIMIT, now=NOW)  # a swap: two moves
    assert {r["url"] for r in swapped["results"]} == {r["url"] for r in exact["results"]}
    plain = svc.search("json", limit=LIMIT, now=NOW, signals=off)
    boosted = svc.search("json^2", limit=LIMIT, now=NOW, signals=off)
    assert boosted["estimatedTotal"] == plain["estimatedTotal"] == 4
    for a, b in zip(boosted["results"], plain["results"], strict=True):
        assert a["url"] == b["url"] and a["score"] == pytest.approx(2 * b["score"], abs=2e-6)
    fuzzy = svc.search("pikle~1", limit=LIMIT, now=NOW, signals=off)
    pickle = svc.search("pickle", limit=LIMIT, now=NOW, signals=off)
    assert {r["url"] for r in fuzzy["results"]} == {r["url"] for r in pickle["results"]}
    assert fuzzy["expansions"] == [
        {
            "operator": "fuzzy",
            "text": "pikle~1",
            "terms": 1,
            "matching": 1,
            "limit": 50,
            "truncated": False,
        }
    ]
    for a, b in zip(fuzzy["results"], pickle["results"], strict=True):  # 1 - 1/4 of pickle's
        assert a["score"] == pytest.approx(0.75 * b["score"], abs=2e-6)


def test_two_prefixes_with_the_same_expansion_are_two_clauses() -> None:
    """``ap* app*`` where both expand to the same index terms: two constant-score clauses,
    2.0 on a page both match (Lucene's BooleanQuery of two ConstantScoreQuery); the same
    prefix written twice stays one clause (as a repeated word). Found by the brute-force
    test above on a clean-clone run."""
    from lookup.search.matching import expand_prefixes, scoring_of

    def expanded(text: str) -> q.Node:
        node = q.parse(text)
        assert node is not None
        return expand_prefixes(node, lambda p: ["apple"])

    assert len(scoring_of(expanded("ap* app*")).constants) == 2
    assert len(scoring_of(expanded("ap* ap*")).constants) == 1
