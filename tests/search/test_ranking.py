"""Query execution against independent oracles: brute-force BM25, bm25s, and itself sharded."""

from __future__ import annotations

import math
from collections import Counter
from pathlib import Path

import bm25s
import numpy as np
import pytest

from lookup.search import SearchService, Signals, analyze_query
from lookup.search.analysis import STOP_WORDS, analyze, words_of
from lookup.search.extract import extract_page
from lookup.search.segment import url_key
from tests.search.conftest import sample_queries
from tests.search.corpus import BASE_TIME, Page

NOW = BASE_TIME + 40 * 86400


def _pairs(words: list[str]) -> list[tuple[str, str]]:
    """Adjacent words that are both stop words."""
    pairs = zip(words, words[1:], strict=False)
    return [(a, b) for a, b in pairs if a in STOP_WORDS and b in STOP_WORDS]


def _gram(pair: tuple[str, str]) -> str:
    return f"gram:{pair[0]} {pair[1]}"


class BruteForce:
    """Textbook BM25 (Lucene variant) over token lists, with AND → OR fallback."""

    def __init__(self, pages: list[Page]) -> None:
        self.urls = [p.url for p in pages]
        self.docs = []
        self.pairs: list[Counter[str]] = []
        self.words: list[tuple[list[str], list[str]]] = []
        for p in pages:
            page = extract_page(p.html(), p.url)
            # BM25F with the title weighted three times (written out, not imported)
            title, body = Counter(analyze(page.title).terms), Counter(analyze(page.text).terms)
            self.docs.append(title + title + title + body)
            # adjacent stop words, paired (``gram:to be``): beside the words, outside the length
            tp = Counter(_gram(pair) for pair in _pairs(words_of(page.title)))
            bp = Counter(_gram(pair) for pair in _pairs(words_of(page.text)))
            self.pairs.append(tp + tp + tp + bp)
            self.words.append((words_of(page.title), words_of(page.text)))
        self.lens = [sum(c.values()) for c in self.docs]
        self.n = len(self.docs)
        self.avgdl = sum(self.lens) / self.n
        self.df = Counter(t for c in self.docs + self.pairs for t in c)

    def score(self, terms: list[str], d: int, k1: float = 1.2, b: float = 0.75) -> float:
        total = 0.0
        for t in terms:
            tf = self.docs[d].get(t, 0) or self.pairs[d].get(t, 0)
            if tf:
                idf = math.log(1 + (self.n - self.df[t] + 0.5) / (self.df[t] + 0.5))
                total += idf * tf / (tf + k1 * (1 - b + b * self.lens[d] / self.avgdl))
        return total

    def terms_of(self, query: str) -> list[str]:
        """The scoring terms: the words' stems; for stop words only, their adjacent pairs."""
        terms = analyze_query(query)
        if terms:
            return terms
        return list(dict.fromkeys(_gram(p) for p in _pairs(words_of(query))))

    def search(self, query: str) -> tuple[list[tuple[str, float]], int]:
        terms = self.terms_of(query)
        if not terms:
            return [], 0
        if terms[0].startswith("gram:"):  # stop words only: the run itself, word after word
            words, k = words_of(query), len(words_of(query))
            match = [
                d
                for d in range(self.n)
                if any(seq[i : i + k] == words for seq in self.words[d] for i in range(len(seq)))
            ]
        else:
            match = [d for d in range(self.n) if all(t in self.docs[d] for t in terms)]
        if not match and not terms[0].startswith("gram:"):
            match = [d for d in range(self.n) if any(t in self.docs[d] for t in terms)]
        scored = sorted(
            ((self.score(terms, d), d) for d in match),
            key=lambda x: (-x[0], url_key(self.urls[x[1]])),
        )
        return [(self.urls[d], s) for s, d in scored], len(match)


@pytest.fixture(scope="module")
def brute(pages: list[Page]) -> BruteForce:
    return BruteForce(pages)


def assert_same_ranking(got: list[tuple[str, float]], want: list[tuple[str, float]]) -> None:
    """Same scores to 1e-6 in the same order; documents may swap only within exact ties."""
    assert len(got) == len(want)
    for (gu, gs), (wu, ws) in zip(got, want, strict=True):
        assert gs == pytest.approx(ws, abs=1e-6)
        if gu != wu:  # allowed only when both orders see a tie
            assert abs(gs - ws) < 1e-9 and any(u == gu for u, s in want if abs(s - gs) < 1e-9)


def test_scores_and_top10_equal_brute_force_bm25(
    service_1: SearchService, brute: BruteForce, pages: list[Page]
) -> None:
    queries = sample_queries(pages, 300)
    nonempty = 0
    for q in queries:
        body = service_1.search(q, limit=10, signals=Signals.off(), now=NOW)
        want, total = brute.search(q)
        got = [(r["url"], r["score"]) for r in body["results"]]
        assert_same_ranking(got, want[:10])
        assert body["estimatedTotal"] == total  # every shard answered: the count is exact
        nonempty += bool(got)
    assert nonempty > 200


def test_scores_equal_bm25s_lucene(
    service_1: SearchService, brute: BruteForce, pages: list[Page]
) -> None:
    corpus = [[t for t, c in doc.items() for _ in range(c)] for doc in brute.docs]
    retriever = bm25s.BM25(method="lucene", k1=1.2, b=0.75, dtype="float64")
    retriever.index(corpus, show_progress=False)
    checked = 0
    for q in sample_queries(pages, 120, seed=11):
        terms = analyze_query(q)
        if not terms or any(t not in brute.df for t in terms):
            continue
        ref = np.asarray(retriever.get_scores(terms))
        body = service_1.search(q, limit=10, signals=Signals.off(), now=NOW, explain=True)
        for r in body["results"]:
            d = brute.urls.index(r["url"])
            assert r["score"] == pytest.approx(float(ref[d]), abs=1e-6)
            assert r["explain"]["bm25"] == pytest.approx(float(ref[d]), abs=1e-6)
            checked += 1
    assert checked > 300


def test_sharded_index_ranks_like_the_unsharded_one(
    service_1: SearchService, service_4: SearchService, pages: list[Page]
) -> None:
    assert len(service_4.snapshot().shards) == 4
    for q in sample_queries(pages, 200, seed=5):
        one = service_1.search(q, now=NOW)
        four = service_4.search(q, now=NOW)
        assert [r["url"] for r in four["results"]] == [r["url"] for r in one["results"]]
        assert [r["score"] for r in four["results"]] == pytest.approx(
            [r["score"] for r in one["results"]], abs=1e-9
        )
        assert four["estimatedTotal"] == one["estimatedTotal"]
        searched = 4 if analyze_query(q) or len(words_of(q)) > 1 else 0  # stop words: pairs
        assert four["shardsAnswered"] == four["shardsQueried"] == searched


#: "Signals only break near-ties": a page may rise above another whose BM25 is at most
#: this factor higher, never above a clearly more relevant one.
NEAR_TIE = 1.25


def test_signals_blend_in_links_and_freshness(
    service_4: SearchService, brute: BruteForce, pages: list[Page]
) -> None:
    """Judged by what the blend must do, not by re-deriving it: the boosts grow with links
    and freshness, never lower a score, and never override a clear relevance lead."""
    inlinks = Counter(u for p in pages for u in set(p.links) if u != p.url)
    crawled = {p.url: BASE_TIME + i * 60.0 for i, p in enumerate(pages)}
    by_links: dict[float, set[float]] = {}
    by_age: dict[float, set[float]] = {}
    lifted = 0
    for q in sample_queries(pages, 60, seed=9):
        body = service_4.search(q, now=NOW, explain=True, limit=20)
        bms = []
        for r in body["results"]:
            bm = brute.score(brute.terms_of(q), brute.urls.index(r["url"]))
            ex = r["explain"]
            assert ex["bm25"] == pytest.approx(bm, abs=1e-6)
            assert ex["signals"]["inLinks"] == inlinks[r["url"]]
            assert ex["signals"]["ageDays"] == pytest.approx((NOW - crawled[r["url"]]) / 86400)
            assert bm - 1e-9 <= r["score"] <= bm * NEAR_TIE + 1e-9
            lifted += r["score"] > bm + 1e-9
            assert bm + ex["signals"]["linkBoost"] + ex["signals"]["freshBoost"] == (
                pytest.approx(r["score"], abs=1e-6)
            )  # the explanation adds up to the score
            by_links.setdefault(ex["signals"]["inLinks"], set()).add(
                round(ex["signals"]["linkBoost"] / bm, 6)
            )
            by_age.setdefault(ex["signals"]["ageDays"], set()).add(
                round(ex["signals"]["freshBoost"] / bm, 6)
            )
            bms.append(bm)
        for hi, lo in zip(bms, bms[1:], strict=False):  # ranked above: never clearly worse
            assert lo <= hi * NEAR_TIE + 1e-9, (q, hi, lo)
    assert lifted > 100
    # one lift (a fraction of BM25) per link count and per age, growing with links and
    # with freshness
    assert all(len(v) == 1 for v in (*by_links.values(), *by_age.values()))
    links = [next(iter(by_links[k])) for k in sorted(by_links)]
    fresh = [next(iter(by_age[k])) for k in sorted(by_age)]
    assert links == sorted(links) and links[0] < links[-1]
    assert fresh == sorted(fresh, reverse=True) and fresh[0] > fresh[-1]


def test_and_semantics_with_or_fallback(service_4: SearchService, brute: BruteForce) -> None:
    body = service_4.search("heap zzyzxnotaword", now=NOW, signals=Signals.off(), trace=True)
    assert body["results"], "AND finds nothing, so OR must answer"
    assert body["fanout"]["mode"] == "or"
    want, total = brute.search("heap zzyzxnotaword")
    assert body["estimatedTotal"] == total
    assert_same_ranking([(r["url"], r["score"]) for r in body["results"]], want[:10])
    # a two-term query whose AND is smaller than its OR: only documents with both come back
    common = [t for t, n in brute.df.most_common(60)]
    pair = next(
        (a, b)
        for a in common
        for b in common
        if a < b and 0 < sum(1 for d in brute.docs if d[a] and d[b]) < brute.df[a]
    )
    body = service_4.search(" ".join(pair), limit=50, trace=True)
    assert body["fanout"]["mode"] == "and"
    assert body["estimatedTotal"] == sum(1 for d in brute.docs if d[pair[0]] and d[pair[1]])
    for r in body["results"]:
        d = brute.urls.index(r["url"])
        assert brute.docs[d][pair[0]] and brute.docs[d][pair[1]]


def test_pagination_walks_the_same_ranking(service_4: SearchService) -> None:
    full = service_4.search("return value", limit=50, now=NOW)["results"]
    paged = []
    for page in range(1, 6):
        paged += service_4.search("return value", page=page, limit=10, now=NOW)["results"]
    assert [r["url"] for r in paged] == [r["url"] for r in full]
    assert len({r["url"] for r in full}) == len(full)


def test_snippets_highlight_query_terms(service_4: SearchService) -> None:
    body = service_4.search("sorted list", now=NOW)
    assert body["results"]
    for r in body["results"]:
        assert "<em>" in r["snippet"] or r["title"]
    assert any("<em>" in r["snippet"] for r in body["results"])


def test_queries_with_nothing_searchable(service_4: SearchService) -> None:
    for q in ("the of and", "!!! ???", "\u200b\u200f", "🙂🙂"):
        body = service_4.search(q)
        assert body["results"] == [] and body["estimatedTotal"] == 0
    assert service_4.search("zzyzxnotaword")["results"] == []


def test_bounded_or_work_scores_its_candidates_exactly(
    service_1: SearchService, brute: BruteForce
) -> None:
    """With a small candidate budget the commonest terms only score existing candidates."""
    from dataclasses import replace

    from lookup.search.bm25 import make_plan

    snap = service_1.snapshot()
    common = [t for t, _ in brute.df.most_common(3)]
    rare = next(t for t, n in brute.df.items() if 5 <= n <= 15 and t not in common)
    terms = [rare, *common]
    plan = make_plan(
        terms, [snap.df(t) for t in terms], snap.live_docs, snap.live_length, k=1000, now=NOW
    )
    plan = replace(plan, conjunctive=False, signals=Signals.off(), max_candidates=brute.df[rare])
    answer = snap.shards[0].search(plan)
    got = {h.doc: h.bm25 for h in answer.hits}
    view = snap.shards[0].segments[0]
    urls = {view.reader.stored(d)["url"]: d for d in got}
    # candidates: exactly the documents with the rare term (the budget admitted only it)
    assert sorted(urls) == sorted(brute.urls[d] for d in range(brute.n) if brute.docs[d][rare])
    for url, d in urls.items():  # ...each scored on every query term, as brute force does
        assert got[d] == pytest.approx(brute.score(terms, brute.urls.index(url)), abs=1e-6)
    assert answer.matched >= max(brute.df[t] for t in common)
    full = snap.shards[0].search(replace(plan, max_candidates=10**9))
    assert full.matched == sum(1 for d in brute.docs if any(d[t] for t in terms))


def test_vocabulary_document_frequencies(service_4: SearchService, brute: BruteForce) -> None:
    vocab = service_4.snapshot().vocabulary()
    assert dict(vocab) == {t: n for t, n in brute.df.items() if ":" not in t}  # no pairs
    assert [n for _, n in vocab] == sorted((n for _, n in vocab), reverse=True)


class _BarePage(Page):
    """A page whose title appears only in ``<title>`` (no heading repeats it)."""

    def html(self) -> str:
        return (
            f"<!doctype html><html><head><title>{self.title}</title></head>"
            f"<body><main><p>{self.text}</p></main></body></html>"
        )


def test_a_word_in_the_title_outranks_the_same_word_in_the_body(tmp_path: Path) -> None:
    """BM25F's title field: equal tf and length, but one page is *about* the word."""
    from lookup.search import build_index
    from tests.search.corpus import CrawlWriter

    filler = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu"
    about = _BarePage("http://t.test/about", "quokka habits", f"{filler} notes")
    mentions = _BarePage("http://t.test/mentions", "field notes", f"{filler} quokka")
    others = [_BarePage(f"http://t.test/o{i}", f"page {i}", filler) for i in range(20)]
    CrawlWriter(tmp_path / "crawl").fetch([mentions, about, *others], at=BASE_TIME)
    build_index(tmp_path / "crawl", tmp_path / "idx", shards=1)
    svc = SearchService(tmp_path / "idx", realtime=False)
    try:
        results = svc.search("quokka", now=NOW, signals=Signals.off())["results"]
    finally:
        svc.close()
    assert [r["url"] for r in results] == [about.url, mentions.url]
    assert results[0]["score"] > results[1]["score"]


def test_make_plan_builds_the_plan_the_dataclass_would() -> None:
    """``make_plan`` fills the frozen plan in one step (issue 24: a plan per query on
    the hot path); it is the plan ``QueryPlan(...)`` makes, terms sorted with their dfs,
    as immutable and as strict about its inputs."""
    import dataclasses

    from lookup.search.bm25 import QueryPlan, idf, make_plan

    plan = make_plan(
        ["zeta", "alpha"], [3, 7], 100, 1000, 20, 5.0, Signals.off(), conjunctive=False, prune=False
    )
    want = QueryPlan(
        terms=("alpha", "zeta"),
        idfs=(idf(7, 100), idf(3, 100)),
        dfs=(7, 3),
        n_docs=100,
        avgdl=10.0,
        k=20,
        now=5.0,
        signals=Signals.off(),
        conjunctive=False,
        prune=False,
    )
    assert plan == want and vars(plan) == vars(want) and hash(plan) == hash(want)
    one = make_plan(["solo"], [2], 0, 0, 10, 5.0)
    assert one.terms == ("solo",) and one.dfs == (2,) and one.avgdl == 1.0
    assert one.signals == Signals() and one.or_fallback
    with pytest.raises(dataclasses.FrozenInstanceError):
        plan.k = 5  # type: ignore[misc]
    with pytest.raises(TypeError, match="no QueryPlan field"):
        make_plan(["a"], [1], 10, 10, 10, 0.0, bogus=1)
    with pytest.raises(ValueError, match="one df per term"):
        make_plan(["a", "b"], [1], 10, 10, 10, 0.0)
