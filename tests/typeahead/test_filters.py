"""Safety: the blocklist, the private-data check, the hot list and the build filter."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lookup.typeahead.filters import (
    DEFAULT_BLOCKLIST,
    FilterConfig,
    HotBlocklist,
    TermBlocklist,
    looks_private,
    private_ids,
    select_queries,
)


def test_phrases_match_at_word_boundaries() -> None:
    bl = TermBlocklist(["fake aadhaar", "नकली नोट"])
    assert bl.blocks("buy fake aadhaar card online")
    assert bl.blocks("fake aadhaar")
    assert not bl.blocks("fake aadhaarx")
    assert not bl.blocks("xfake aadhaar")
    assert bl.blocks("नकली नोट कैसे बनाएं")
    assert "FAKE   Aadhaar" in bl  # terms are normalised


words = st.sampled_from(["fake", "aadhaar", "card", "bomb", "make", "a", "x", "नकली", "नोट"])
phrases = st.lists(words, min_size=1, max_size=3).map(" ".join)


@settings(max_examples=100, deadline=None)
@given(st.lists(phrases, min_size=1, max_size=4), st.lists(phrases, min_size=1, max_size=25))
def test_one_regex_pass_agrees_with_the_per_query_check(terms, strings) -> None:  # type: ignore[no-untyped-def]
    bl = TermBlocklist(terms)
    joined = "".join(s + "\n" for s in strings)
    offsets, pos = [], 0
    for s in strings:
        offsets.append(pos)
        pos += len(s) + 1
    assert bl.blocked_ids(joined, offsets) == {i for i, s in enumerate(strings) if bl.blocks(s)}


def test_private_data_is_recognised() -> None:
    assert looks_private("priya raghavan 9840012345")
    assert looks_private("call +91 98400 12345")
    assert looks_private("mail me at a.b@example.com")
    assert looks_private("aadhaar 1234 5678 9012")
    assert not looks_private("iphone 17 price")
    assert not looks_private("ipl 2026 schedule")


def test_bad_terms_are_refused() -> None:
    bl = TermBlocklist()
    for bad in ("", "   ", "a\x00b", "x" * 101):
        with pytest.raises(ValueError):
            bl.add(bad)


def test_hot_blocklist_persists_and_reloads(tmp_path: Path) -> None:
    path = tmp_path / "blocklist.txt"
    hot = HotBlocklist(path)
    assert hot.blocks("how to make a bomb at home")  # built-in terms always apply
    v0 = hot.version
    hot.add(["Some Phrase"])
    assert hot.version > v0 and hot.blocks("about some phrase here")
    assert "some phrase" in path.read_text()
    # another process edits the file: the next refresh picks it up
    other = HotBlocklist(path)
    assert other.hot_terms == ["some phrase"]
    path.write_text("# comment\nnew term\n\n")
    future = time.time() + 5
    os.utime(path, (future, future))
    assert other.refresh() is True
    assert other.hot_terms == ["new term"] and not other.blocks("some phrase")
    assert other.refresh() is False
    with pytest.raises(ValueError, match="built-in"):
        other.remove(DEFAULT_BLOCKLIST[0])
    assert other.remove("new term") is True and other.remove("new term") is False


def test_select_queries_reports_each_rule() -> None:
    queries = ["ipl", "rare", "fake aadhaar card", "priya 9840012345", "zero"]
    scores = [10.0, 5.0, 9.0, 8.0, 0.0]
    users = [50, 2, 50, 50, 50]
    kept, report = select_queries(
        queries, scores, users, TermBlocklist(DEFAULT_BLOCKLIST), FilterConfig(min_users=5)
    )
    assert [queries[i] for i in kept] == ["ipl"]
    assert (report.too_few_users, report.blocked, report.private, report.no_score) == (1, 1, 1, 1)


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.lists(st.sampled_from(["call", "98400", "12345", "9840012345", "a@b.in", "1234", "x"]),
                 min_size=1, max_size=4).map(" ".join),
        min_size=1, max_size=20,
    )
)  # fmt: skip
def test_private_scan_of_a_table_agrees_with_the_per_query_check(strings: list[str]) -> None:
    joined = "".join(s + "\n" for s in strings)
    offsets, pos = [], 0
    for s in strings:
        offsets.append(pos)
        pos += len(s) + 1
    assert private_ids(joined, offsets) == {i for i, s in enumerate(strings) if looks_private(s)}
