"""The write path: segments, idempotent events, tombstones, merges, manifests."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np

from lookup.search import SearchService, build_index, current_manifest
from lookup.search.analysis import analyze_document
from lookup.search.docfields import DocFields, analyze_page
from lookup.search.extract import extract_page
from lookup.search.manifest import read_tombstones, shard_dir
from lookup.search.segment import SegmentReader, merge_segments
from tests.search.corpus import BASE_TIME, CrawlWriter, Page, url_hash


def _segments(index: Path) -> list[tuple[int, SegmentReader, np.ndarray]]:
    m = current_manifest(index)
    assert m is not None
    out = []
    for s, entries in enumerate(m.segments):
        for e in entries:
            r = SegmentReader(shard_dir(index, s) / e.name)
            live = np.ones(r.n_docs, dtype=bool)
            live[read_tombstones(index, s, e)] = False
            out.append((s, r, live))
    return out


def _live_urls(index: Path) -> Counter[str]:
    return Counter(
        r.stored(int(d))["url"] for _, r, live in _segments(index) for d in np.flatnonzero(live)
    )


def test_segments_hold_exactly_the_analysed_pages(index_4: Path, pages: list[Page]) -> None:
    by_url = {p.url: p for p in pages}
    segs = _segments(index_4)
    assert sum(r.n_docs for _, r, _ in segs) == len(pages)
    assert len(segs) > 4  # small segment size: several per shard
    for _, r, _ in segs[:3]:
        for d in range(r.n_docs):
            stored = r.stored(d)
            page = extract_page(by_url[stored["url"]].html(), stored["url"])
            assert (stored["title"], stored["text"]) == (page.title, page.text)
            expected = analyze_document(page.title, page.text)
            assert r.doclen[d] == len(expected.terms)
            # brute force: every term's postings carry this doc with the right tf and positions
            for term, tf in Counter(expected.terms).items():
                pl = r.postings(term)
                assert pl is not None
                docs, tfs = pl.decode()
                i = int(np.searchsorted(docs, d))
                assert docs[i] == d and tfs[i] == tf
                want = [
                    p for t, p in zip(expected.terms, expected.positions, strict=True) if t == term
                ]
                assert pl.positions()[i].tolist() == want


def test_every_page_lands_in_exactly_one_shard(index_4: Path, pages: list[Page]) -> None:
    from lookup.search.indexer import shard_of

    urls = _live_urls(index_4)
    assert urls == Counter(p.url for p in pages)
    for s, r, _ in _segments(index_4):
        assert all(shard_of(h, 4) == s for h in r.url_hashes)


def test_resubmitted_event_does_not_duplicate(
    crawl: CrawlWriter, tmp_path: Path, pages: list[Page]
) -> None:
    out = tmp_path / "idx"
    build_index(crawl.root, out, shards=2)
    events = [json.loads(x) for x in crawl.events.read_text().splitlines()]
    for ev in events[:25]:
        crawl.resubmit(ev)  # a crawler retry: same (urlHash, contentHash)
    report = build_index(crawl.root, out)
    assert report.incremental and report.events_read == 25
    assert report.unchanged == 25 and report.added == 0 and report.updated == 0
    assert _live_urls(out) == Counter(p.url for p in pages)
    # a retry inside one batch is collapsed too
    out2 = tmp_path / "idx2"
    build_index(crawl.root, out2, shards=2)
    assert _live_urls(out2) == Counter(p.url for p in pages)


def test_changed_page_replaces_old_version_and_gone_page_is_deleted(
    crawl: CrawlWriter, tmp_path: Path, pages: list[Page]
) -> None:
    out = tmp_path / "idx"
    build_index(crawl.root, out, shards=2)
    v1 = current_manifest(out)
    changed = Page(pages[3].url, "Rewritten page", "zebracorn appears only here now")
    crawl.fetch([changed], at=BASE_TIME + 10 * 86400)
    crawl.gone(pages[5].url, at=BASE_TIME + 11 * 86400)
    crawl.gone(pages[6].url, at=BASE_TIME + 11 * 86400, status=410)
    report = build_index(crawl.root, out)
    assert (report.updated, report.deleted, report.added) == (1, 2, 0)
    v2 = current_manifest(out)
    assert v1 is not None and v2 is not None and v2.version == v1.version + 1
    assert v2.watermark == v1.watermark + 3
    urls = _live_urls(out)
    assert pages[5].url not in urls and pages[6].url not in urls
    assert urls[pages[3].url] == 1
    assert sum(urls.values()) == len(pages) - 2
    # old segments were not rewritten: deletions are tombstone files named by the manifest
    assert any(e.tombstones for shard in v2.segments for e in shard)
    svc = SearchService(out, realtime=False)
    hits = svc.search("zebracorn")["results"]
    assert [h["url"] for h in hits] == [pages[3].url]
    assert svc.search(pages[5].title)["results"] == [] or all(
        h["url"] != pages[5].url for h in svc.search(pages[5].title)["results"]
    )
    svc.close()


def test_merge_drops_deleted_documents_and_keeps_postings(tmp_path: Path, index_4: Path) -> None:
    s, reader, _ = _segments(index_4)[0]
    live = np.ones(reader.n_docs, dtype=bool)
    live[::3] = False
    other = _segments(index_4)[1][1]
    merged_path = tmp_path / "merged"
    info = merge_segments([(reader, live), (other, np.ones(other.n_docs, bool))], merged_path)
    merged = SegmentReader(merged_path)
    assert info.docs == merged.n_docs == int(live.sum()) + other.n_docs
    expected_urls = [reader.stored(int(d))["url"] for d in np.flatnonzero(live)] + [
        other.stored(d)["url"] for d in range(other.n_docs)
    ]
    assert [merged.stored(d)["url"] for d in range(merged.n_docs)] == expected_urls
    # oracle: postings of the merged segment == brute-force postings of the kept documents
    brute: dict[str, list[tuple[int, int]]] = {}
    for new_id, url_doc in enumerate(expected_urls):
        st = merged.stored(new_id)
        assert st["url"] == url_doc
        a = analyze_page(st["title"], st["text"], st["url"], DocFields.from_stored(st))
        stacked = Counter(t for t, _ in a.stacked)  # stop-word pairs, folded words' originals
        for term, tf in (Counter(a.terms) + stacked + Counter(set(a.fields))).items():
            brute.setdefault(term, []).append((new_id, tf))
    assert set(merged.terms) == set(brute)
    for term in list(brute)[:300]:
        docs, tfs = merged.postings(term).decode()
        assert list(zip(docs.tolist(), tfs.tolist(), strict=True)) == brute[term]


def test_incremental_segments_merge_policy_and_garbage_collection(
    crawl: CrawlWriter, tmp_path: Path, pages: list[Page]
) -> None:
    out = tmp_path / "idx"
    build_index(crawl.root, out, shards=1, segment_docs=100)
    first = current_manifest(out)
    assert first is not None and len(first.segments[0]) == 4
    for i in range(4):  # four more small batches → more segments than allowed → merge
        batch = [
            Page(
                f"http://new{i}.test/p{j}.html",
                f"new page {i} {j}",
                f"fresh words batch{i} item{j} heap",
            )
            for j in range(5)
        ]
        crawl.fetch(batch, at=BASE_TIME + (i + 1) * 86400)
        report = build_index(crawl.root, out, segment_docs=100, max_segments=6)
        assert report.incremental and report.added == 5
    m = current_manifest(out)
    assert m is not None and len(m.segments[0]) <= 6
    assert m.live_docs == len(pages) + 20
    # only the live and the previous version's files remain
    manifests = sorted(p.name for p in out.glob("manifest-*.json"))
    assert len(manifests) == 2
    names = {e.name for e in m.segments[0]}
    on_disk = {p.name for p in shard_dir(out, 0).iterdir() if p.is_dir()}
    assert names <= on_disk
    # optimize: one segment, deleted documents gone
    crawl.gone(pages[0].url, at=BASE_TIME + 30 * 86400)
    report = build_index(crawl.root, out, optimize=True)
    m = current_manifest(out)
    assert m is not None and len(m.segments[0]) == 1 and m.segments[0][0].deleted == 0
    assert m.segments[0][0].docs == len(pages) + 19
    assert report.merges >= 1


def test_progress_is_reported_and_bad_records_do_not_stop_the_build(
    crawl: CrawlWriter, tmp_path: Path
) -> None:
    crawl._event(
        {
            "type": "PageFetched",
            "url": "http://bad.test/",
            "urlHash": url_hash("http://bad.test/"),
            "fetchedAt": "2026-03-02T00:00:00Z",
            "httpStatus": 200,
            "contentHash": "sha256:" + "0" * 64,
            "simhash": "0x0",
            "storageKey": "warc/missing.warc.gz",
            "outLinks": 0,
            "changed": True,
            "title": "",
        }
    )
    with crawl.events.open("a") as f:
        f.write("{not json}\n")
        f.write('{"type": "PageFetched", "url": "http://half')  # being written: no newline
    seen: list[tuple[str, int, int]] = []
    report = build_index(
        crawl.root, tmp_path / "idx", shards=2, progress=lambda s, d, t: seen.append((s, d, t))
    )
    assert report.failed == 1 and "missing.warc.gz" in report.errors[0]
    stages = {s for s, _, _ in seen}
    assert {"reading events", "indexing pages"} <= stages
    assert ("indexing pages", report.added + 1, report.added + 1) in seen


def test_storage_key_without_offset_is_found_by_url(tmp_path: Path) -> None:
    c = CrawlWriter(tmp_path / "crawl")
    pages = [Page(f"http://k.test/{i}", f"title {i}", f"body words number{i}") for i in range(5)]
    c.fetch(pages, key_style="file")
    c.fetch(
        [Page("http://k.test/2", "title 2 again", "changed body number2 version2")],
        key_style="file",
    )
    report = build_index(c.root, tmp_path / "idx", shards=1)
    assert report.failed == 0 and report.live_docs == 5
    svc = SearchService(tmp_path / "idx", realtime=False)
    assert [r["url"] for r in svc.search("version2")["results"]] == ["http://k.test/2"]
    svc.close()


def test_tombstoned_index_scores_like_a_fresh_rebuild(
    crawl: CrawlWriter, tmp_path: Path, pages: list[Page]
) -> None:
    """Corpus statistics skip deleted documents: an updated index equals a clean rebuild."""
    from tests.search.conftest import sample_queries

    out = tmp_path / "idx"
    build_index(crawl.root, out, shards=3, segment_docs=60)
    crawl.fetch(
        [Page(p.url, p.title, p.text + " heap heap") for p in pages[20:40]], at=BASE_TIME + 86400
    )
    for p in pages[40:60]:
        crawl.gone(p.url, at=BASE_TIME + 2 * 86400)
    build_index(crawl.root, out)
    m = current_manifest(out)
    assert m is not None and sum(e.deleted for s in m.segments for e in s) == 40
    clean = tmp_path / "clean"
    build_index(crawl.root, clean, shards=3, rebuild=True)
    a, b = SearchService(out, realtime=False), SearchService(clean, realtime=False)
    assert a.snapshot().live_docs == b.snapshot().live_docs == len(pages) - 20
    for q in sample_queries(pages, 80, seed=21) + ["heap"]:
        ra = a.search(q, now=BASE_TIME + 9e6)
        rb = b.search(q, now=BASE_TIME + 9e6)
        assert [r["url"] for r in ra["results"]] == [r["url"] for r in rb["results"]]
        assert [r["score"] for r in ra["results"]] == [r["score"] for r in rb["results"]]
        assert ra["estimatedTotal"] == rb["estimatedTotal"]
    a.close()
    b.close()
