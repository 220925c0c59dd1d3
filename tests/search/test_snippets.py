"""Snippets from the forward index equal snippets made by re-analysing the text."""

from __future__ import annotations

import random
import re
from pathlib import Path

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from lookup.search import SearchService, analyze_query
from lookup.search.segment import SegmentReader, merge_segments
from lookup.search.snippets import (
    SCAN_CHARS,
    ForwardQuery,
    forward_entries,
    make_snippet,
    scan_prefix,
    snippet_from_forward,
)
from tests.search.corpus import BASE_TIME, Page

NOW = BASE_TIME + 40 * 86400


def _fast(text: str, terms: frozenset[str]) -> str:
    prints, starts, lengths = forward_entries(text)
    return snippet_from_forward(
        text, prints.tobytes(), memoryview(starts), lengths.tobytes(), ForwardQuery.of(terms)
    )


def test_forward_snippets_equal_reanalysed_ones_on_real_pages(pages: list[Page]) -> None:
    rng = random.Random(2)
    for page in pages:
        words = re.findall(r"[A-Za-z]+", page.text)
        for k in (1, 2, 3):
            picked = rng.sample(words, min(k, len(words))) + ["zzyzxnotaword"] * (k == 3)
            terms = frozenset(analyze_query(" ".join(picked)))
            assert _fast(page.text, terms) == make_snippet(page.text, terms)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.sampled_from(list("ab cé.<>&\"'\u0301ñ1 ") + ["हि", "ﬁ", "ß", "Σ", "\n", "  "]),
        max_size=150,
    ).map("".join),
    st.lists(st.sampled_from(["a", "ab", "ca", "b", "cé", "ñ", "ss", "file", "1"]), max_size=3),
)
def test_forward_snippets_equal_reanalysed_ones_on_any_text(text: str, words: list[str]) -> None:
    terms = frozenset(analyze_query(" ".join(words)) + analyze_query(text)[:2])
    assert _fast(text, terms) == make_snippet(text, terms)


def test_long_texts_scan_a_prefix_that_ends_between_words() -> None:
    word = "lorem "
    text = word * (SCAN_CHARS // len(word) + 50) + "needle"
    scan = scan_prefix(text)
    assert len(scan) <= SCAN_CHARS and scan.endswith(" ")
    glued = "x" * (SCAN_CHARS - 3) + " abcdefgh tail needle"
    assert scan_prefix(glued).endswith(" ") and "abc" not in scan_prefix(glued)
    terms = frozenset(analyze_query("lorem needle"))
    assert _fast(text, terms) == make_snippet(text, terms)
    assert "needle" not in make_snippet(text, terms)  # past the scanned prefix
    huge = "w" * 300 + " lorem"  # a word longer than its one-byte length field
    assert _fast(huge, terms) == make_snippet(huge, terms)


def _readers(index: Path) -> list[SegmentReader]:
    return [SegmentReader(p) for p in sorted(index.glob("shard-*/seg-*"))]


def test_the_segment_forward_index_is_the_texts_and_survives_a_merge(
    index_4: Path, tmp_path: Path
) -> None:
    readers = _readers(index_4)
    assert len(readers) > 4  # several segments per shard
    for r in readers:
        for d in range(r.n_docs):
            prints, starts, lengths = r.forward_of(d)  # type: ignore[misc]
            want = forward_entries(r.stored(d)["text"])
            assert prints == want[0].tobytes()
            assert list(starts) == want[1].tolist()
            assert lengths == want[2].tobytes()
    # merge two segments, dropping every third document of the first
    a, b = readers[0], readers[1]
    live_a = np.ones(a.n_docs, dtype=bool)
    live_a[::3] = False
    merge_segments([(a, live_a), (b, np.ones(b.n_docs, dtype=bool))], tmp_path / "seg-merged")
    merged = SegmentReader(tmp_path / "seg-merged")
    kept = [(a, d) for d in np.flatnonzero(live_a)] + [(b, d) for d in range(b.n_docs)]
    assert merged.n_docs == len(kept)
    for new, (r, d) in enumerate(kept):
        assert merged.stored(new) == r.stored(int(d))
        assert merged.forward_of(new)[0] == r.forward_of(int(d))[0]  # type: ignore[index]


def test_results_are_the_same_with_and_without_the_forward_index(
    service_4: SearchService,
) -> None:
    queries = ["regular expression", "heap queue", "return value", "thread lock timeout"]
    with_forward = [service_4.search(q, now=NOW)["results"] for q in queries]
    snap = service_4.snapshot()
    saved = [(v.reader, v.reader.forward) for s in snap.shards for v in s.segments]
    try:
        for reader, _ in saved:
            reader.forward = None  # as a format-1 segment: snippets re-analyse the text
        without = [service_4.search(q, now=NOW)["results"] for q in queries]
    finally:
        for reader, fwd in saved:
            reader.forward = fwd
    assert with_forward == without
    assert all(r["snippet"] for results in with_forward for r in results)
