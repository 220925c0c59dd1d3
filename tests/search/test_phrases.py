"""Quoted phrase queries, checked against a brute-force scan of every document's token stream."""

from __future__ import annotations

import random
import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lookup.search import SearchService, Signals, analyze_document, build_index
from lookup.search.analysis import Phrase, parse_query
from lookup.search.postings import BLOCK, encode_postings
from tests.search.corpus import BASE_TIME, CrawlWriter, Page
from tests.search.test_postings import _encode, term_postings

NOW = BASE_TIME + 40 * 86400
LIMIT = 100


def _streams(svc: SearchService) -> dict[str, dict[int, set[str]]]:
    """Every live batch document's token stream (position → terms: a word's, and what is
    stacked there — a stop-word pair, a folded word's original), by URL: the oracle's input."""
    snap = svc.snapshot()
    out: dict[str, dict[int, set[str]]] = {}
    for shard in snap.shards:
        for view in shard.segments:
            for d in np.flatnonzero(view.live):
                stored = view.reader.stored(int(d))
                a = analyze_document(stored["title"], stored["text"])
                stream: dict[int, set[str]] = {}
                for term, pos in a.positioned():
                    stream.setdefault(pos, set()).add(term)
                out[stored["url"]] = stream
    return out


def _brute_force(streams: dict[str, dict[int, set[str]]], query: str) -> set[str]:
    """URLs holding every query term and every phrase, word after word (stop words keep gaps)."""
    parsed = parse_query(query)
    hits: set[str] = set()
    if not parsed.terms:  # only stop words: nothing is searchable
        return hits
    for url, stream in streams.items():
        present = set().union(*stream.values())
        if not all(t in present for t in parsed.terms):
            continue
        if all(_has(stream, ph) for ph in parsed.phrases):
            hits.add(url)
    return hits


def _has(stream: dict[int, set[str]], phrase: Phrase) -> bool:
    return any(
        all(
            term in stream.get(p + off, ())
            for term, off in zip(phrase.terms, phrase.offsets, strict=True)
        )
        for p, ts in stream.items()
        if phrase.terms[0] in ts
    )


def _phrase_queries(pages: list[Page], n: int, seed: int) -> list[str]:
    """Runs of 2-4 consecutive words from real pages (some with stop words inside), some
    reversed (rarely a phrase), some with a loose word beside the phrase."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        page = rng.choice(pages)
        words = re.findall(r"[A-Za-z]+", page.text)
        if len(words) < 5:
            continue
        k = rng.choice([2, 2, 3, 4])
        at = rng.randrange(len(words) - k)
        run = words[at : at + k]
        if i % 5 == 0:
            run = run[::-1]
        q = '"' + " ".join(run) + '"'
        if i % 4 == 0:
            q = rng.choice(words) + " " + q
        out.append(q)
    return out


@pytest.fixture(scope="module")
def streams_1(index_1: Path) -> dict[str, dict[int, str]]:
    svc = SearchService(index_1, realtime=False)
    svc.reload()
    try:
        return _streams(svc)
    finally:
        svc.close()


def test_parse_query_phrases_and_gaps() -> None:
    q = parse_query('heap "state of the art" “priority queue” "the" "')
    assert q.terms == ["heap", "state", "art", "prioriti", "queue"]
    assert q.phrases == (Phrase(("state", "art"), (0, 3)), Phrase(("prioriti", "queue"), (0, 1)))
    assert parse_query('"heap"').phrases == ()  # one word is not a phrase
    assert parse_query('a "b c').phrases == ()  # an unmatched quote is ignored


def test_phrase_results_equal_a_brute_force_scan(
    service_1: SearchService, service_4: SearchService, streams_1: dict, pages: list[Page]
) -> None:
    queries = _phrase_queries(pages, 160, seed=5)
    matched_some = 0
    for q in queries:
        expected = _brute_force(streams_1, q)
        for svc in (service_1, service_4):
            body = svc.search(q, limit=LIMIT, now=NOW)
            urls = {r["url"] for r in body["results"]}
            assert body["estimatedTotal"] == len(expected), q
            if len(expected) <= LIMIT:
                assert urls == expected, q
            else:
                assert urls <= expected, q
        matched_some += bool(expected)
    assert matched_some > 80  # most runs of real text are found; the reversed ones mostly not


def test_phrase_is_the_and_ranking_filtered(service_4: SearchService, pages: list[Page]) -> None:
    """Scores are BM25 over the terms: a phrase query ranks its documents exactly like the
    same words without quotes, minus the documents without the phrase."""
    checked = 0
    for q in _phrase_queries(pages, 60, seed=9):
        if any(t.startswith("gram:") for t in parse_query(q).terms):
            continue  # a quoted run of stop words is its pairs' term (test_stopword_queries)
        loose = q.replace('"', " ")
        phrase_body = service_4.search(q, limit=LIMIT, now=NOW)
        loose_body = service_4.search(loose, limit=LIMIT, now=NOW)
        if loose_body["estimatedTotal"] > LIMIT:
            continue
        keep = {r["url"] for r in phrase_body["results"]}
        expect = [(r["url"], r["score"]) for r in loose_body["results"] if r["url"] in keep]
        assert [(r["url"], r["score"]) for r in phrase_body["results"]] == expect
        checked += 1
    assert checked > 20


def test_a_missing_phrase_never_falls_back_to_or(service_1: SearchService) -> None:
    body = service_1.search('"return value"', trace=True, now=NOW)
    assert body["results"] and body["fanout"]["mode"] == "and"
    assert "<em>" in body["results"][0]["snippet"]
    # both words occur, never in this order: no results, not an OR list
    swapped = service_1.search('"value return"', trace=True, now=NOW)
    loose = service_1.search("value return", now=NOW)
    assert loose["estimatedTotal"] > swapped["estimatedTotal"]
    absent = service_1.search('"zzyzxnotaword return"', trace=True, now=NOW)
    assert absent["results"] == [] and absent["estimatedTotal"] == 0
    assert absent["fanout"]["mode"] == "and"


@pytest.mark.parametrize("codec", ["packed", "varint"])
@settings(max_examples=40, deadline=None)
@given(term_postings(), st.lists(st.integers(0, 3100), max_size=80))
def test_positions_for_decodes_only_what_it_returns(
    codec: str, terms: list[dict[int, list[int]]], probes: list[int]
) -> None:
    targets = np.array(sorted(set(probes)), dtype=np.int64)
    for plist, pl in zip(terms, _encode(terms, codec), strict=True):
        for with_skip_positions in (True, False):
            if not with_skip_positions:
                pl.block_pos = None  # a format-1 list: the whole list is decoded
            found, owner, pos = pl.positions_for(targets)
            assert targets[found].tolist() == [t for t in targets.tolist() if t in plist]
            got: dict[int, list[int]] = {}
            for o, p in zip(owner.tolist(), pos.tolist(), strict=True):
                got.setdefault(int(targets[o]), []).append(p)
            assert got == {t: plist[t] for t in targets.tolist() if t in plist}


def test_block_position_offsets_point_at_each_blocks_first_position() -> None:
    rng = np.random.default_rng(4)
    docs = np.sort(rng.choice(5000, 3 * BLOCK + 7, replace=False))
    tfs = rng.integers(1, 4, docs.size)
    pos = np.concatenate([np.sort(rng.choice(300, t, replace=False)) for t in tfs])
    enc = encode_postings(1, np.zeros(docs.size, np.int64), docs, tfs, pos)
    first_of_block = np.cumsum(tfs) - tfs
    for b, at in enumerate(enc.block_pos.tolist()):
        # the first position of a block's first posting is stored as itself (no gap)
        value = int(pos[first_of_block[b * BLOCK]])
        assert int(enc.positions[at]) == (value if value < 128 else (value & 0x7F) | 0x80)


def test_phrases_in_the_real_time_tier(crawl: CrawlWriter, tmp_path: Path) -> None:
    index = tmp_path / "idx"
    build_index(crawl.root, index, shards=2)
    svc = SearchService(index)
    svc.reload()
    try:
        crawl.fetch(
            [
                Page("http://fresh.test/a.html", "Fresh a", "quokka sandwich recipes for you"),
                Page("http://fresh.test/b.html", "Fresh b", "sandwich of quokka is rude"),
            ],
            at=NOW,
        )
        assert svc.tier is not None and svc.tier.poll() == 2
        urls = [r["url"] for r in svc.search('"quokka sandwich"', now=NOW)["results"]]
        assert urls == ["http://fresh.test/a.html"]
        assert len(svc.search("quokka sandwich", now=NOW)["results"]) == 2
        pure = svc.search('"sandwich of quokka"', now=NOW, signals=Signals.off())
        assert [r["url"] for r in pure["results"]] == ["http://fresh.test/b.html"]
    finally:
        svc.close()
