"""Text that is not English: CJK bigrams, Hindi stems and stop words — in the analysis, and
end to end through the real crawler's output from the sandbox web's Japanese and Hindi pages."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from lookup.crawler import CrawlConfig, Sandbox, SandboxConfig, TrapPolicy, crawl
from lookup.crawler.sandbox.sites.intl import INTL_PAGES
from lookup.search import SearchService, build_index
from lookup.search.analysis import analyze, analyze_document, analyze_query


def test_cjk_runs_become_overlapping_bigrams() -> None:
    assert analyze_query("日本語の検索") == ["日本", "本語", "語の", "の検", "検索"]
    a = analyze("東京 駅 abc東京")
    assert a.terms == ["東京", "駅", "abc", "東京"]
    assert a.positions == [0, 1, 2, 3]  # each bigram one position: phrases still line up
    assert analyze_query("カタカナ") == ["カタ", "タカ", "カナ"]
    assert analyze_query("한국어") == ["한국", "국어"]


def test_hindi_words_take_hindi_stems_and_stop_words() -> None:
    # inflected forms meet at one stem; postpositions are stop words
    assert analyze_query("भाषा") == analyze_query("भाषाओं")
    assert analyze_query("का की के है में") == []
    assert analyze_query("हिन्दी का परिचय") == analyze_query("हिन्दी परिचय")
    # English beside Hindi keeps its own stemmer
    assert analyze_query("running भाषाओं") == ["run", analyze_query("भाषा")[0]]


def test_documents_of_each_script_are_analysed_alike() -> None:
    doc = analyze_document(
        "東京の電車", "山手線は環状線です。", "http://intl.sandbox.test/ja/t.html"
    )
    assert "title:東京" in doc.fields and "site:intl.sandbox.test" in doc.fields
    assert "環状" in doc.terms and "山手" in doc.terms


@pytest.fixture(scope="module")
def intl(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SearchService]:
    """The sandbox's international host, crawled by the real crawler and indexed."""
    web = Sandbox(SandboxConfig.small()).start()
    out = tmp_path_factory.mktemp("intlcrawl")
    try:
        urls = {path: web.url("intl", path) for path in [*INTL_PAGES, "/"]}
        crawl(
            CrawlConfig(
                out, seeds=[web.url("intl", "/")], hosts=web.hosts(), strict_hosts=True,
                min_delay=0.01, delay_factor=1.0, timeout=1.5, connect_timeout=1.0, max_pages=10,
                max_seconds=60, traps=TrapPolicy(host_budget=10, max_depth=2), concurrency=4,
            )
        )  # fmt: skip
    finally:
        web.stop()
    build_index(out, out / "index", shards=2)
    svc = SearchService(out / "index", realtime=False)
    svc.reload()
    svc.urls = urls  # type: ignore[attr-defined]
    yield svc
    svc.close()


@pytest.mark.parametrize(
    ("query", "path"),
    [
        ("日本語の検索", "/ja/search.html"),
        ("検索エンジン", "/ja/search.html"),
        ("東京の電車", "/ja/trains.html"),
        ("山手線", "/ja/trains.html"),
        ("हिन्दी भाषाओं", "/hi/language.html"),  # an inflected form meets the page's भाषा
        ("देवनागरी लिपि", "/hi/language.html"),
        ("भारतीय रेलवे", "/hi/railways.html"),
        ("यात्री", "/hi/railways.html"),
    ],
)
def test_each_page_is_found_by_its_own_words(intl: SearchService, query: str, path: str) -> None:
    results = intl.search(query)["results"]
    assert results and results[0]["url"] == intl.urls[path], query  # type: ignore[attr-defined]


def test_operators_work_on_other_scripts(intl: SearchService) -> None:
    urls = intl.urls  # type: ignore[attr-defined]
    both = {r["url"] for r in intl.search("東京 OR यात्री")["results"]}
    # the front page lists the titles, 東京の電車 among them
    assert both == {urls["/ja/trains.html"], urls["/hi/railways.html"], urls["/"]}
    assert {r["url"] for r in intl.search("東京 -site:intl.sandbox.test")["results"]} == set()
    assert {r["url"] for r in intl.search("東京 -電車")["results"]} == set()
    phrase = intl.search('"日本語の検索"')["results"]  # the page, and the front page's link to it
    assert [r["url"] for r in phrase] == [urls["/ja/search.html"], urls["/"]]
    assert intl.search('"検索の日本語"')["estimatedTotal"] == 0  # the bigrams out of order
    titled = {r["url"] for r in intl.search("title:भारतीय")["results"]}
    assert titled == {urls["/hi/railways.html"]}
    assert intl.search("का है")["results"] == []  # only Hindi stop words: nothing to search


def test_snippets_mark_cjk_and_hindi_matches(intl: SearchService) -> None:
    ja = intl.search("日本語の検索")["results"][0]["snippet"]
    # overlapping bigrams join into one mark: the heading's whole run, then the text's words
    assert ja.startswith("<em>日本語の検索</em>") and "<em>日本語の</em>文章" in ja
    hi = intl.search("यात्री ट्रेनों")["results"][0]["snippet"]
    assert "<em>यात्री</em>" in hi and "<em>ट्रेनों</em>" in hi
