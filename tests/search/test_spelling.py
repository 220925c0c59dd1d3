""" "Did you mean": the edit distance (rapidfuzz's OSA, the one search uses) against the
textbook table, the speller against a brute-force scan of its vocabulary, and ``hepq`` →
``heapq`` through the search service and HTTP."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient

from lookup.search import SearchService
from lookup.search.spelling import (
    MIN_GAIN,
    SUGGEST_BELOW,
    Speller,
    correct_query,
    edit_distance,
    max_edits,
)
from lookup.server import create_app
from tests.search.test_query_operators import osa

word = st.text(alphabet="abcde", max_size=9)


@settings(max_examples=400, deadline=None)
@given(word, word, st.integers(0, 4))
def test_edit_distance_is_the_textbook_osa(a: str, b: str, limit: int) -> None:
    exact = osa(a, b)
    assert edit_distance(a, b) == exact
    assert edit_distance(a, b, limit) == min(exact, limit + 1)


def _brute(vocab: dict[str, int], term: str) -> str | None:
    own = vocab.get(term, 0)
    if own >= SUGGEST_BELOW:
        return None
    k = max_edits(term)
    best = None
    for cand, df in vocab.items():
        d = osa(term, cand)
        if cand == term or d > k or (own and df < own * MIN_GAIN):
            continue
        key = (d, -df, cand)
        best = key if best is None or key < best else best
    return None if best is None else best[2]


@settings(max_examples=200, deadline=None)
@given(
    st.dictionaries(
        st.text(alphabet="abcdefg", min_size=1, max_size=8), st.integers(1, 50), min_size=1
    ),
    st.text(alphabet="abcdefgh", min_size=1, max_size=9),
)
def test_suggestions_equal_a_brute_force_scan(vocab: dict[str, int], typed: str) -> None:
    got = Speller(vocab.items()).suggest(typed)
    assert (got.term if got else None) == _brute(vocab, typed)


def test_corrections_keep_the_query_around_them() -> None:
    speller = Speller([("heapq", 40), ("json", 80), ("queue", 30), ("title:heapq", 40)])
    assert correct_query("hepq", speller) == "heapq"
    assert correct_query("jsno OR (hepq -queue)", speller) == "json OR (heapq -queue)"
    assert correct_query("heapq json", speller) is None  # nothing to correct
    assert correct_query("title:hepq jso*", speller) is None  # fields and prefixes as typed
    assert correct_query("(broken", speller) is None
    stems = Speller([("itertool", 30), ("queue", 30)])
    assert correct_query("itertols", stems) == "itertools"  # the typed ending goes back on
    assert correct_query("queus", stems) == "queue"


def test_hepq_means_heapq(index_1: Path) -> None:
    svc = SearchService(index_1, realtime=False)
    svc.reload()
    try:
        body = svc.search("hepq")
        assert body["estimatedTotal"] == 0
        assert body["didYouMean"]["query"] == "heapq"
        assert body["didYouMean"]["estimatedTotal"] == svc.search("heapq")["estimatedTotal"] > 0
        assert "didYouMean" not in svc.search("heapq")  # a query that finds enough
        # words the index knows are left alone even when the query finds nothing
        assert "didYouMean" not in svc.search("heapq zzyzxnotaword")
    finally:
        svc.close()


def test_did_you_mean_over_http(index_1: Path, tmp_path: Path) -> None:
    data = tmp_path / "data"
    shutil.copytree(index_1, data / "search")
    with TestClient(create_app(data, subsystems=["lookup.search.http:mount"])) as c:
        body = c.get("/search", params={"q": "hepq"}).json()
        assert body["didYouMean"]["query"] == "heapq"


@pytest.mark.parametrize(("typed", "expected"), [("hepq", "heapq"), ("bisct", "bisect")])
def test_typos_of_module_names(index_1: Path, typed: str, expected: str) -> None:
    svc = SearchService(index_1, realtime=False)
    svc.reload()
    try:
        assert svc.search(typed)["didYouMean"]["query"] == expected
    finally:
        svc.close()


@settings(max_examples=200, deadline=None)
@given(
    st.dictionaries(
        st.text(alphabet="abcdefg", min_size=1, max_size=8), st.integers(1, 50), min_size=1
    ),
    st.text(alphabet="abcdefgh", min_size=1, max_size=9),
    st.integers(0, 2),
)
def test_near_lists_every_term_within_k(vocab: dict[str, int], typed: str, k: int) -> None:
    """What fuzzy words and typo tolerance expand to: every term within k edits."""
    got = sorted(Speller(vocab.items()).near(typed, k))
    assert got == sorted((t, osa(typed, t)) for t in vocab if osa(typed, t) <= k)
