"""Queries made only of stop words (issue 28 item 4): answered from the stop-word phrase
index (each pair of adjacent stop words indexed as one term, ``gram:to be``), never an
unexplained 0.

``"to be or not to be"`` and ``the who`` find exactly the pages holding those words in
that order — checked against a brute force over each page's words — whether quoted,
loose, mixed with other words or under operators; one stop word alone answers 0 with a
``notice`` saying why. Pages' lengths, and so every other query's BM25, are unchanged.
"""

from __future__ import annotations

import random
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient

from lookup.search import SearchService, build_index
from lookup.search.analysis import analyze, analyze_document, words_of
from lookup.search.extract import extract_page
from lookup.server import create_app
from tests.search.corpus import CrawlWriter, Page

SEARCH = ["lookup.search.http:mount"]
STOPS = ["to", "be", "or", "not", "the", "who", "is", "it", "of", "a"]
OTHERS = ["band", "question", "river", "lost", "human", "kind"]

NAMED = [
    Page("http://p.test/hamlet.html", "Hamlet", "To be, or not to be, that is the question."),
    Page(
        "http://p.test/band.html", "Rock history", "The Who are an English rock band from London."
    ),
    Page(
        "http://p.test/scatter.html",
        "Proverbs",
        "Not all who wander are lost; to err is human, be kind or be gone, the end.",
    ),
    Page("http://p.test/quiz.html", "A quiz", "Who is the band? Ask the who question later."),
]


def _random_pages(n: int = 40, seed: int = 11) -> list[Page]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        words = [rng.choice(STOPS if rng.random() < 0.7 else OTHERS) for _ in range(12)]
        out.append(Page(f"http://r{i % 3}.test/{i}.html", f"random {i}", " ".join(words)))
    return out


PAGES = NAMED + _random_pages()


def _sequences() -> list[tuple[str, list[list[str]]]]:
    """Each page's title and text as word lists (what the crawler's extraction keeps)."""
    out = []
    for p in PAGES:
        page = extract_page(p.html(), p.url)
        out.append((p.url, [words_of(page.title), words_of(page.text)]))
    return out


SEQUENCES = _sequences()


def _phrase_pages(words: list[str]) -> set[str]:
    """Brute force: pages whose title or text has ``words`` one after another."""
    k = len(words)
    return {
        url
        for url, parts in SEQUENCES
        if any(seq[i : i + k] == words for seq in parts for i in range(len(seq) - k + 1))
    }


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("stopwords")
    CrawlWriter(root / "crawl").fetch(PAGES)
    build_index(root / "crawl", root / "index", shards=2)
    return root


@pytest.fixture(scope="module")
def service(built: Path) -> Iterator[SearchService]:
    svc = SearchService(built / "index", realtime=False)
    svc.reload()
    yield svc
    svc.close()


@pytest.fixture
def client(built: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[TestClient]:
    shutil.copytree(built / "index", tmp_path / "data" / "search")
    monkeypatch.setenv("LOOKUP_SEARCH_SYNONYMS", "off")
    with TestClient(create_app(tmp_path / "data", subsystems=SEARCH)) as c:
        yield c


def _get(client: TestClient, q: str) -> dict:  # type: ignore[type-arg]
    r = client.get("/search", params={"q": q, "limit": 100})
    assert r.status_code == 200, r.text
    return r.json()


def _urls(body: dict) -> set[str]:  # type: ignore[type-arg]
    return {r["url"] for r in body["results"]}


@pytest.mark.parametrize(
    "query", ["to be or not to be", "To be, or not to be", '"to be or not to be"', "the who"]
)
def test_a_stop_word_query_is_its_phrase(client: TestClient, query: str) -> None:
    body = _get(client, query)
    want = _phrase_pages(words_of(query))
    assert want and _urls(body) == want and body["estimatedTotal"] == len(want)
    if "not" in query:
        assert _urls(body) == {"http://p.test/hamlet.html"}  # not the scattered proverbs
        snippet = body["results"][0]["snippet"]  # the phrase is marked word by word
        assert "<em>or</em> <em>not</em> <em>to</em> <em>be</em>" in snippet
    assert "notice" not in body


def test_stop_word_phrases_mix_with_other_words_and_operators(client: TestClient) -> None:
    band = "http://p.test/band.html"
    assert _urls(_get(client, '"the who" rock')) == {band}
    assert _urls(_get(client, '"the who" -rock')) == _phrase_pages(["the", "who"]) - {band}
    assert band in _urls(_get(client, '"the who" OR hamlet'))


def test_one_stop_word_answers_0_and_says_why(client: TestClient) -> None:
    for q in ("the", "Who?", "(the)"):
        body = _get(client, q)
        assert body["results"] == [] and body["estimatedTotal"] == 0
        assert body["notice"]["code"] == "ONLY_STOP_WORDS"
        assert "stop word" in body["notice"]["message"]
    assert "notice" not in _get(client, "?!")  # punctuation: nothing to explain


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(st.sampled_from(STOPS), min_size=2, max_size=5))
def test_any_run_of_stop_words_finds_exactly_its_pages(
    service: SearchService, words: list[str]
) -> None:
    body = service.coordinator.search(service.snapshot(), " ".join(words), limit=100, suggest=False)
    assert _urls(body) == _phrase_pages(words)
    assert body["estimatedTotal"] == len(_phrase_pages(words))


def test_pairs_add_nothing_to_a_pages_length() -> None:
    a = analyze_document("To be or not", "to be, that is the question of it")
    assert len(a.terms) == 1  # "question": the rest are stop words
    assert {t for t, _ in a.stacked} >= {"gram:to be", "gram:be or", "gram:or not", "gram:of it"}
    # the pairs sit at the first word's position, title copies apart
    assert ("gram:to be", 0) in a.stacked and ("gram:to be", 5) in a.stacked
    assert analyze("the question").stacked == ()  # a pair needs two stop words


def test_the_real_time_tier_answers_stop_words_and_accents_too(built: Path, tmp_path: Path) -> None:
    """Pages the tier holds (not yet in a segment) are found the same way."""
    crawl = tmp_path / "crawl"
    shutil.copytree(built / "crawl", crawl)
    writer = CrawlWriter(crawl)
    writer.warc_no = len(list((crawl / "warc").iterdir()))
    index = tmp_path / "idx"
    build_index(crawl, index, shards=2)
    svc = SearchService(index)
    svc.reload()
    try:
        writer.fetch(
            [
                Page("http://fresh.test/a.html", "Fresh a", "Whether or not, let it be."),
                Page("http://fresh.test/b.html", "Fresh b", "A naïve café owner said it be so."),
            ]
        )
        assert svc.tier is not None and svc.tier.poll() == 2
        fresh = {"http://fresh.test/a.html", "http://fresh.test/b.html"}
        assert _urls(svc.search("or not", limit=100)) & fresh == {"http://fresh.test/a.html"}
        assert _urls(svc.search('"it be so"', limit=100)) & fresh == {"http://fresh.test/b.html"}
        assert _urls(svc.search("it be", limit=100)) & fresh == fresh
        assert _urls(svc.search("naive cafe", limit=100)) == {"http://fresh.test/b.html"}
        exact = svc.search("café", limit=100)["results"]
        assert exact[0]["url"] == "http://fresh.test/b.html"
    finally:
        svc.close()
