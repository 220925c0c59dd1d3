"""The query language, checked against a brute-force evaluator over every document's tokens.

Hypothesis builds random query trees (words, prefixes, phrases, ``title:``, ``site:``,
``after:``/``before:``, AND, OR, NOT), writes each as the text a person would type, and
the engine's answer over both tiers (batch segments in two shards and the real-time
tier) must equal what a scan of every live document finds — the same set, and each
result's score the BM25 sum of the tree's positive terms.
"""

from __future__ import annotations

import datetime as dt
import math
import re
import shutil
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient

from lookup.search import SearchService, Signals, build_index
from lookup.search import query as q
from lookup.search.analysis import analyze, analyze_document, analyze_query
from lookup.search.bm25 import K1, B
from lookup.search.coordinator import QueryError
from lookup.search.expansion import MAX_PREFIX_TERMS
from lookup.server import create_app
from tests.search.corpus import BASE_TIME, CrawlWriter, stdlib_pages

DAY = 86400.0
NOW = BASE_TIME + 40 * DAY
LIMIT = 100
DATES = ["2026-02-28", "2026-03-01", "2026-03-02", "2026-03-11", "2026-03-12", "2026-03-22"]


# --- parser ------------------------------------------------------------------------------
def test_parse_operators() -> None:
    assert q.parse("json OR heapq") == q.Or((q.Term("json"), q.Term("heapq")))
    assert q.parse("json -decoder") == q.And((q.Term("json"), q.Not(q.Term("decod"))))
    assert q.parse("json NOT decoder") == q.parse("json -decoder")
    assert q.parse("json AND heapq") == q.parse("json heapq")
    assert q.parse("jso*") == q.Prefix("jso")
    assert q.parse("(json OR heapq) queue") == q.And(
        (q.Or((q.Term("json"), q.Term("heapq"))), q.Term("queue"))
    )
    # AND binds tighter than OR, as in Lucene
    assert q.parse("json heapq OR queue") == q.Or(
        (q.And((q.Term("json"), q.Term("heapq"))), q.Term("queue"))
    )
    assert q.parse("title:Heaps") == q.FieldTerm("title", "heap")
    assert q.parse('title:"priority queue"') == q.And(
        (q.FieldTerm("title", "prioriti"), q.FieldTerm("title", "queue"))
    )
    assert q.parse("site:https://Docs.Sandbox.test/x") == q.FieldTerm("site", "docs.sandbox.test")
    after = q.parse("after:2026-01-01")
    assert after == q.CrawledRange(after=dt.datetime(2026, 1, 1, tzinfo=dt.UTC).timestamp())
    assert isinstance(q.parse('"heap queue"'), q.PhraseNode)
    assert q.parse("json or heapq") == q.parse("json heapq")  # lower-case 'or' is a stop word
    assert q.parse("the of") is None  # nothing searchable
    assert q.parse("e-mail") == q.And((q.Term("e"), q.Term("mail")))  # a hyphen inside a word
    assert q.parse("url:thing") == q.And((q.Term("url"), q.Term("thing")))  # not a field
    # operators with nothing to join are the stop words they spell; so is a stray quote
    for text in ("OR json", "json OR", "json AND", "json NOT", "AND OR json", '"json', 'json"'):
        assert q.parse(text) == q.Term("json"), text
    assert q.parse("json OR OR heapq") == q.parse("json OR heapq")
    assert q.parse("json (OR heapq)") == q.parse("json heapq")


def test_an_exclusion_applies_to_its_whole_group() -> None:
    """``-term`` / ``NOT term`` is Lucene's MUST_NOT: it excludes from every alternative
    of the group it stands in, not only from the word next to it (issue 28 item 6)."""
    json, pickle, mirror = q.Term("json"), q.Term("pickl"), q.Term("mirror")
    assert q.parse("json OR pickle -mirror") == q.And((q.Or((json, pickle)), q.Not(mirror)))
    assert q.parse("json OR -mirror") == q.And((json, q.Not(mirror)))
    assert q.parse("-mirror json OR pickle") == q.parse("json OR pickle -mirror")
    # one alternative only: as before, in the order written
    assert q.parse("-mirror json") == q.And((q.Not(mirror), json))
    # parentheses make a group of their own: the exclusion stays inside them
    assert q.parse("json OR (pickle -mirror)") == q.Or((json, q.And((pickle, q.Not(mirror)))))
    assert q.parse("-json OR -mirror") == q.And((q.Not(json), q.Not(mirror)))


@pytest.mark.parametrize(
    ("text", "position", "words"),
    [
        ("(json", 0, "never closed"),
        ("json)", 4, "closes no"),
        ("after:2026-13-01", 6, "date like"),
        ("before:yesterday", 7, "date like"),
        ("x*", 0, "prefix"),
        ("json ()", 5, "empty"),
        ("title: heap", 6, "value right after"),
        ("(" * 40 + "json" + ")" * 40, 32, "deeper"),
        # a suffix of the classic syntax with nothing before it is refused where it
        # stands, never searched for as another word (issue 28 item 5; the rest:
        # test_query_operators.py)
        ("json ^2", 5, "right before"),
        ("json^", 4, "boost"),
    ],
)
def test_syntax_errors_say_where(text: str, position: int, words: str) -> None:
    with pytest.raises(q.QuerySyntaxError) as err:
        q.parse(text)
    assert err.value.position == position
    assert words in err.value.message


PIECES = [*'ab c()"-*:\u201c', " OR ", " NOT ", "title:", "after:"]


@given(st.lists(st.sampled_from(PIECES), max_size=20))
@settings(max_examples=300, deadline=None)
def test_any_text_parses_or_fails_cleanly(pieces: list[str]) -> None:
    text = "".join(pieces)
    try:
        q.parse(text)
    except q.QuerySyntaxError as exc:
        assert 0 <= exc.position <= len(text)


# --- the corpus both tiers serve -------------------------------------------------------
@dataclass
class Doc:
    url: str
    host: str
    title_terms: set[str]
    terms: Counter[str]
    stream: dict[int, str]
    length: int
    crawled: float


@dataclass
class World:
    svc: SearchService
    index: Path
    docs: list[Doc]
    words: list[str]
    hosts: list[str]

    def df(self, term: str) -> int:
        return sum(1 for d in self.docs if term in d.terms)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    yield from query_world(tmp_path_factory)


def query_world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    """The 150-page world over both tiers (a module fixture of every query-language test)."""
    root = tmp_path_factory.mktemp("query")
    pages = stdlib_pages(150)
    crawl = CrawlWriter(root / "crawl")
    crawl.fetch(pages[:60], at=BASE_TIME)
    crawl.fetch(pages[60:120], at=BASE_TIME + 10 * DAY + 600)
    build_index(root / "crawl", root / "idx", shards=2, segment_docs=25)
    svc = SearchService(root / "idx")
    svc.reload()
    crawl.fetch(pages[120:], at=BASE_TIME + 20 * DAY)  # the real-time tier's pages
    assert svc.tier is not None and svc.tier.poll() == 30
    snap = svc.snapshot()
    stored = []
    for shard in snap.shards:
        for view in shard.segments:
            stored += [view.reader.stored(int(d)) for d in view.live.nonzero()[0]]
    rt = snap.realtime
    for s, mi in enumerate(rt.indexes):
        dead = set(rt.state.dead[s].tolist())
        stored += [mi.docs[i].stored for i in range(rt.state.counts[s]) if i not in dead]
    docs = []
    for rec in stored:
        a = analyze_document(rec["title"], rec["text"])
        docs.append(
            Doc(
                rec["url"],
                urlsplit(rec["url"]).hostname or "",
                set(analyze(rec["title"]).terms),
                Counter(a.terms),
                dict(zip(a.positions, a.terms, strict=True)),
                len(a.terms),
                float(rec["crawledAt"]),
            )
        )
    assert len(docs) == 150
    vocab = Counter(w.lower() for p in pages for w in re.findall(r"[A-Za-z]{3,}", p.text))
    words = sorted(w for w, n in vocab.items() if n >= 2 and len(analyze_query(w)) == 1)
    yield World(svc, root / "idx", docs, words, sorted({d.host for d in docs}))
    svc.close()


# --- the oracle: random trees, their text, their brute-force answer ------------------------
def trees(world: World) -> st.SearchStrategy:
    word = st.sampled_from(world.words)
    leaf = st.one_of(
        word.map(lambda w: ("word", w)),
        word.filter(lambda w: len(w) >= 4).flatmap(
            lambda w: st.integers(2, len(w) - 1).map(lambda k: ("prefix", w[:k]))
        ),
        st.tuples(word, word).map(lambda p: ("phrase", p)),
        word.map(lambda w: ("title", w)),
        st.sampled_from(world.hosts).map(lambda h: ("site", h)),
        st.tuples(st.sampled_from(["after", "before"]), st.sampled_from(DATES)),
    )
    tree = st.recursive(
        leaf,
        lambda kids: st.one_of(
            st.lists(kids, min_size=2, max_size=3).map(lambda c: ("and", c)),
            st.lists(kids, min_size=2, max_size=3).map(lambda c: ("or", c)),
            kids.map(lambda c: ("not", c)),
        ),
        max_leaves=6,
    )
    # half the trees are ANDed to a leaf, so most queries have something to find
    return st.one_of(tree, st.tuples(leaf, tree).map(lambda p: ("and", list(p))))


def render(tree: tuple, dash: bool = True) -> str:
    kind, arg = tree
    if kind == "word":
        return arg
    if kind == "prefix":
        return arg + "*"
    if kind == "phrase":
        return '"' + " ".join(arg) + '"'
    if kind in ("title", "site", "after", "before"):
        return f"{kind}:{arg}"
    if kind == "not":
        inner = render(arg)
        if arg[0] in ("and", "or"):
            inner = f"({inner})"
        return ("-" if dash and arg[0] != "not" else "NOT ") + inner
    parts = [f"({render(c)})" if c[0] in ("and", "or") else render(c) for c in arg]
    return (" OR " if kind == "or" else " ").join(parts)


def _day(date: str) -> float:
    return dt.datetime.fromisoformat(date).replace(tzinfo=dt.UTC).timestamp()


def expansions(world: World, prefix: str) -> list[str]:
    counts: Counter[str] = Counter()
    for d in world.docs:
        counts.update(t for t in d.terms if t.startswith(prefix))
    return [t for t, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))][:MAX_PREFIX_TERMS]


def grouped(tree: tuple) -> tuple:
    """The tree as the query language reads its text: a NOT standing directly in an OR
    group (``a OR -b``, rendered without parentheses) excludes from the whole group."""
    kind, arg = tree
    if kind == "not":
        return ("not", grouped(arg))
    if kind not in ("and", "or"):
        return tree
    kids = [grouped(c) for c in arg]
    if kind == "or" and any(c[0] == "not" for c in kids):
        pos = [c for c in kids if c[0] != "not"]
        nots = [c for c in kids if c[0] == "not"]
        return ("and", ([("or", pos)] if pos else []) + nots)
    return (kind, kids)


def matches(world: World, tree: tuple, d: Doc) -> bool:
    kind, arg = tree
    if kind == "word":
        return analyze_query(arg)[0] in d.terms
    if kind == "term":
        return arg in d.terms
    if kind == "prefix":
        return any(t in d.terms for t in expansions(world, arg.lower()))
    if kind == "phrase":
        a = analyze(" ".join(arg))
        if len(a.terms) == 1:
            return a.terms[0] in d.terms
        offs = [p - a.positions[0] for p in a.positions]
        return any(
            all(d.stream.get(p + o) == t for t, o in zip(a.terms, offs, strict=True))
            for p in d.stream
        )
    if kind == "title":
        return analyze_query(arg)[0] in d.title_terms
    if kind == "site":
        return d.host == arg or d.host.endswith("." + arg)
    if kind == "after":
        return d.crawled >= _day(arg)
    if kind == "before":
        return d.crawled < _day(arg)
    if kind == "and":
        return all(matches(world, c, d) for c in arg)
    if kind == "or":
        return any(matches(world, c, d) for c in arg)
    return not matches(world, arg, d)


def positive(world: World, tree: tuple, neg: bool = False) -> set[str]:
    kind, arg = tree
    if kind == "not":
        return positive(world, arg, not neg)
    if kind in ("and", "or"):
        return set().union(*(positive(world, c, neg) for c in arg))
    if neg:
        return set()
    if kind in ("word", "title"):
        return set(analyze_query(arg))
    if kind == "phrase":
        return set(analyze(" ".join(arg)).terms)
    return set()


def prefixes(tree: tuple, neg: bool = False) -> set[str]:
    """The distinct prefixes not under a NOT: each adds a constant to the pages it matches."""
    kind, arg = tree
    if kind == "not":
        return prefixes(arg, not neg)
    if kind in ("and", "or"):
        return set().union(*(prefixes(c, neg) for c in arg))
    return {arg.lower()} if kind == "prefix" and not neg else set()


def findable(tree: tuple, neg: bool = False) -> bool:
    """Are the tree's matches bounded by positive leaves (not "everything except …")?"""
    kind, arg = tree
    if kind == "not":
        return findable(arg, not neg)
    if kind in ("and", "or"):
        every = (kind == "or") != neg  # NOT (a AND b) is NOT a OR NOT b
        found = [findable(c, neg) for c in arg]
        return all(found) if every else any(found)
    return not neg


def _or_fallback(tree: tuple) -> bool:
    """Words only, ANDed: the classic path that falls back to OR when nothing has them all."""
    kids = _and_leaves(_normal(tree))
    return all(k[0] == "word" for k in kids) and len(kids) > 1


def _normal(tree: tuple) -> tuple:
    """The tree as the parser simplifies it: words as their terms, AND/OR flattened and
    deduplicated, one-child groups dissolved (only what the OR fallback depends on)."""
    kind, arg = tree
    if kind == "word":
        return ("word", analyze_query(arg)[0])
    if kind == "not":
        return ("not", _normal(arg))
    if kind not in ("and", "or"):
        return tree
    kids: list[tuple] = []
    for c in (_normal(c) for c in arg):
        for x in c[1] if c[0] == kind else [c]:
            if x not in kids:
                kids.append(x)
    return kids[0] if len(kids) == 1 else (kind, kids)


def _and_leaves(tree: tuple) -> list[tuple]:
    return [x for c in tree[1] for x in _and_leaves(c)] if tree[0] == "and" else [tree]


def bm25(world: World, terms: set[str], d: Doc) -> float:
    n = len(world.docs)
    avgdl = sum(x.length for x in world.docs) / n
    score = 0.0
    for t in terms:
        tf = d.terms.get(t, 0)
        if tf:
            df = world.df(t)
            idf = math.log(1.0 + (n - df + 0.5) / (df + 0.5))
            score += idf * tf / (tf + K1 * (1 - B + B * d.length / avgdl))
    return score


@settings(max_examples=250, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_every_operator_equals_a_brute_force_scan(world: World, data: st.DataObject) -> None:
    written = data.draw(trees(world))
    text = render(written, dash=data.draw(st.booleans()))
    assume(len(text) <= 500)
    tree = grouped(written)
    if not findable(tree):
        with pytest.raises(QueryError) as err:
            world.svc.search(text, limit=LIMIT, now=NOW)
        assert err.value.code == "ONLY_NEGATIVE"
        return
    expected = {d.url: d for d in world.docs if matches(world, tree, d)}
    if not expected and _or_fallback(tree):  # plain words: no page has all, so any of them
        alts = ("or", [("term", k[1]) for k in _and_leaves(_normal(tree))])
        expected = {d.url: d for d in world.docs if matches(world, alts, d)}
    body = world.svc.search(text, limit=LIMIT, now=NOW, signals=Signals.off(), typos=False)
    assert body["estimatedTotal"] == len(expected), text
    got = {r["url"]: r["score"] for r in body["results"]}
    assert len(got) == min(LIMIT, len(expected))
    assert set(got) <= set(expected), text
    terms = positive(world, tree)
    constant = prefixes(tree)  # a prefix scores 1.0 where it matches (constant-score rewrite)
    for url, score in got.items():
        doc = expected[url]
        want = bm25(world, terms, doc) + sum(matches(world, ("prefix", p), doc) for p in constant)
        assert score == pytest.approx(want, abs=1e-5), (text, url)
    scores = [r["score"] for r in body["results"]]
    assert scores == sorted(scores, reverse=True)


def test_operators_people_type(world: World) -> None:
    """The issue's own examples: OR is an OR, ``-`` excludes, a prefix expands."""
    svc = world.svc
    a, b = "itertools", "iterable"
    n_a = svc.search(a, limit=1, now=NOW)["estimatedTotal"]
    n_b = svc.search(b, limit=1, now=NOW)["estimatedTotal"]
    both = svc.search(f"{a} {b}", limit=1, now=NOW)["estimatedTotal"]
    assert 0 < both < min(n_a, n_b)
    either = svc.search(f"{a} OR {b}", limit=1, now=NOW)["estimatedTotal"]
    assert n_a > 0 and n_b > 0 and either == n_a + n_b - both
    without = svc.search(f"{a} -{b}", limit=LIMIT, now=NOW)
    assert without["estimatedTotal"] == n_a - both
    # the exclusion reaches every alternative of its group (Lucene's MUST_NOT)
    grouped_out = svc.search(f"{a} OR {b} -{b}", limit=LIMIT, now=NOW)
    assert grouped_out["estimatedTotal"] == n_a - both
    prefix = svc.search("iterto*", limit=LIMIT, now=NOW)
    assert prefix["estimatedTotal"] >= n_a
    assert svc.search("jso*", limit=1, now=NOW)["estimatedTotal"] > 0
    for r in svc.search(f"title:{a}", limit=LIMIT, now=NOW)["results"]:
        assert a in r["title"].lower()


def test_the_term_limit_counts_what_was_written_not_prefix_expansions(world: World) -> None:
    """Three short prefixes expand past 32 index terms (a CI run's hypothesis case): the
    query is still answered; 33 written terms are refused."""
    text = "abc co* pa* st*"
    assert sum(len(expansions(world, p)) for p in ("co", "pa", "st")) > 32
    world.svc.search(f"{text} OR xy*", limit=LIMIT, now=NOW)  # answered, not refused
    with pytest.raises(QueryError) as err:
        world.svc.search(" OR ".join(f"w{i}x" for i in range(33)), limit=LIMIT, now=NOW)
    assert err.value.code == "QUERY_TOO_LONG"


def test_parse_errors_answer_400_with_position(world: World, tmp_path: Path) -> None:
    """Through the real app: a syntax error is a 400 naming the character, never a 500."""
    data = tmp_path / "data"
    shutil.copytree(world.index, data / "search")
    app = create_app(data, subsystems=["lookup.search.http:mount"])
    with TestClient(app, raise_server_exceptions=False) as c:
        r = c.get("/search", params={"q": "(heap OR json"})  # an unclosed parenthesis
        assert r.status_code == 400
        body = r.json()
        assert body["error"] == "QUERY_SYNTAX" and body["position"] == 0
        assert "never closed" in body["message"]
        r = c.get("/search", params={"q": "json after:2026-02-30"})
        assert r.status_code == 400 and r.json()["position"] == 11
        r = c.get("/search", params={"q": "json ^2"})  # a boost of nothing, not the digit 2
        assert r.status_code == 400 and r.json()["position"] == 5
        r = c.get("/search", params={"q": "json^2"})  # json, twice as strong
        assert r.status_code == 200 and r.json()["estimatedTotal"] > 0
        r = c.get("/search", params={"q": "-json"})
        assert r.status_code == 400 and r.json()["error"] == "ONLY_NEGATIVE"
        r = c.get("/search", params={"q": "itertools OR chainmap"})
        assert r.status_code == 200 and r.json()["estimatedTotal"] > 0
