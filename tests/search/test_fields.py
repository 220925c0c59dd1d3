"""Fields: ``title:`` and ``site:`` match their field only, the title weighs three times the
body in the score (BM25F with field weights), and field terms change no document's length."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from lookup.search import SearchService, Signals, build_index
from lookup.search.analysis import TITLE_WEIGHT, analyze, analyze_document, site_terms
from tests.search.corpus import BASE_TIME, CrawlWriter, Page, url_hash

NOW = BASE_TIME + 10 * 86400


def test_site_names_are_the_host_and_its_parent_domains() -> None:
    assert site_terms("a.docs.example") == ["a.docs.example", "docs.example"]
    assert site_terms("docs.example:8080") == ["docs.example"]
    assert site_terms("WWW.Example.COM.") == ["www.example.com", "example.com"]
    assert site_terms("127.0.0.1") == ["127.0.0.1"]
    assert site_terms("localhost") == ["localhost"]
    assert site_terms("") == []


def _service(tmp_path: Path, pages: list[Page]) -> SearchService:
    CrawlWriter(tmp_path / "crawl").fetch(pages)
    build_index(tmp_path / "crawl", tmp_path / "idx", shards=2)
    svc = SearchService(tmp_path / "idx", realtime=False)
    svc.reload()
    return svc


PAGES = [
    Page("http://a.docs.example/heap.html", "Heap basics", "a priority structure for sorting"),
    Page("http://b.docs.example/sort.html", "Sorting", "sorting with a heap of numbers here"),
    Page("http://other.example/heap.html", "Queues", "heap heap heap in the body only"),
    Page("http://docs.example/index.html", "Docs index", "every docs page listed once"),
]


def test_title_and_site_match_only_their_field(tmp_path: Path) -> None:
    svc = _service(tmp_path, PAGES)
    try:

        def urls(q: str) -> set[str]:
            return {r["url"] for r in svc.search(q, limit=50, now=NOW)["results"]}

        assert urls("heap") == {p.url for p in PAGES[:3]}
        assert urls("title:heap") == {PAGES[0].url}  # the body's heaps do not count
        assert urls("title:heap*") == {PAGES[0].url}
        assert urls("site:a.docs.example") == {PAGES[0].url}
        assert urls("site:docs.example") == {PAGES[0].url, PAGES[1].url, PAGES[3].url}
        assert urls("heap -site:docs.example") == {PAGES[2].url}
        assert urls("heap site:other.example") == {PAGES[2].url}
        assert urls('title:"heap basics"') == {PAGES[0].url}
        assert urls("sorting OR title:docs") == {PAGES[0].url, PAGES[1].url, PAGES[3].url}
    finally:
        svc.close()


def test_the_title_weighs_three_times_the_body(tmp_path: Path) -> None:
    svc = _service(tmp_path, PAGES)
    try:
        body = svc.search("heap", limit=10, now=NOW, explain=True, signals=Signals.off())
        by_url = {r["url"]: r for r in body["results"]}
        snap = svc.snapshot()
        for page in PAGES[:3]:
            st = snap.stored(*snap.locations[url_hash(page.url)])  # as the crawl extracted it
            a = analyze_document(st["title"], st["text"])
            in_title = analyze(st["title"]).terms.count("heap")
            in_body = analyze(st["text"]).terms.count("heap")
            (term,) = by_url[page.url]["explain"]["terms"]
            assert term["tf"] == TITLE_WEIGHT * in_title + in_body
            assert by_url[page.url]["explain"]["docLength"] == len(a.terms)  # no field terms
        # one heap in a short title beats one heap in a longer body
        assert body["results"][0]["url"] == PAGES[0].url
    finally:
        svc.close()


def test_field_terms_are_indexed_beside_the_text(tmp_path: Path) -> None:
    svc = _service(tmp_path, PAGES)
    try:
        snap = svc.snapshot()
        for shard in snap.shards:
            for view in shard.segments:
                r = view.reader
                for d in range(r.n_docs):
                    st = r.stored(d)
                    a = analyze_document(st["title"], st["text"], st["url"])
                    assert r.doclen[d] == len(a.terms)
                    for key in a.fields:
                        docs, _ = r.postings(key).decode()
                        assert d in docs.tolist()
        vocab = dict(snap.vocabulary())
        assert not [t for t in vocab if ":" in t]  # field terms stay out of the vocabulary
        fields = dict(snap.vocabulary(fields=True))
        assert fields["site:docs.example"] == 3 and fields["title:heap"] == 1
        assert np.all(np.asarray(list(vocab.values())) > 0)
    finally:
        svc.close()
