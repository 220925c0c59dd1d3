"""Duplicate detection against oracles: the ``simhash`` package, brute force, exact Jaccard."""

from __future__ import annotations

import hashlib
import pydoc
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from simhash import Simhash

from lookup.crawler.dedup import (
    DuplicateDetector,
    SimHashIndex,
    content_hash,
    hamming,
    jaccard,
    minhash,
    shingles,
    simhash,
)
from lookup.crawler.parse import parse_html


def _blake64(data: bytes) -> bytes:
    return hashlib.blake2b(data, digest_size=8).digest()


def real_text(module: str) -> str:
    """The main text of a real pydoc page."""
    mod = __import__(module, fromlist=["_"])
    return parse_html(pydoc.HTMLDoc().page(module, pydoc.HTMLDoc().document(mod))).text


@pytest.mark.parametrize("module", ["json", "heapq", "textwrap", "colorsys"])
def test_simhash_equals_the_simhash_package(module: str) -> None:
    text = real_text(module)
    oracle = Simhash(shingles(text), f=64, hashfunc=_blake64)
    assert simhash(text) == oracle.value


@settings(max_examples=100, deadline=None)
@given(st.text(alphabet="ab cd ef\n", min_size=0, max_size=200))
def test_simhash_equals_the_package_on_any_text(text: str) -> None:
    feats = shingles(text)
    if not feats:
        assert simhash(text) == 0
        return
    assert simhash(text) == Simhash(feats, f=64, hashfunc=_blake64).value


@st.composite
def fingerprint_sets(draw: st.DrawFn) -> tuple[list[int], int]:
    rng = random.Random(draw(st.integers(0, 2**32)))
    base = rng.getrandbits(64)
    fps = []
    for _ in range(draw(st.integers(1, 60))):
        fp = base if rng.random() < 0.7 else rng.getrandbits(64)
        for _ in range(rng.randint(0, 6)):
            fp ^= 1 << rng.randrange(64)
        fps.append(fp)
    query = base
    for _ in range(rng.randint(0, 4)):
        query ^= 1 << rng.randrange(64)
    return fps, query


@settings(max_examples=200, deadline=None)
@given(fingerprint_sets())
def test_block_tables_find_exactly_what_a_brute_force_scan_finds(
    data: tuple[list[int], int],
) -> None:
    fps, query = data
    index = SimHashIndex(3)
    for i, fp in enumerate(fps):
        index.add(f"k{i}", fp)
    expected = sorted((hamming(query, fp), f"k{i}") for i, fp in enumerate(fps)
                      if hamming(query, fp) <= 3)  # fmt: skip
    assert index.near(query) == expected


def test_index_remove_and_replace() -> None:
    index = SimHashIndex()
    index.add("a", 0b1011)
    index.add("a", 1 << 63)  # replaces
    assert index.near(0b1011) == [] and index.near(1 << 63) == [(0, "a")]
    index.remove("a")
    assert len(index) == 0 and index.candidates(1 << 63) == set()
    with pytest.raises(ValueError):
        SimHashIndex(4)


def test_minhash_estimates_jaccard() -> None:
    a, b = shingles(real_text("json")), shingles(real_text("json").replace("JSON", "YAML", 40))
    est = minhash(a).jaccard(minhash(b))
    assert est == pytest.approx(jaccard(a, b), abs=0.1)


def test_content_hash_ignores_whitespace_only() -> None:
    assert content_hash("a  b\n c") == content_hash("a b c")
    assert content_hash("a b c") != content_hash("a b d")


def test_detector_names_the_kind_and_the_original() -> None:
    text = real_text("json")
    d = DuplicateDetector()
    assert not d.check("orig", text).is_duplicate
    exact = d.check("mirror", "  " + text.replace(" ", "  "))
    assert (exact.kind, exact.of) == ("exact", "orig")
    stamp = text.replace("JSON", "JSON (updated Sunday 29 November 2026, 21:33:49 UTC)", 1)
    near = d.check("live", stamp)
    assert near.kind in ("simhash", "minhash") and near.of == "orig"
    ad = text[:3000] + " Advertisement: upgrade to premium today and save. " + text[3000:]
    assert d.check("promo", ad).of == "orig"
    other = d.check("other", real_text("heapq"))
    assert not other.is_duplicate
    assert len(d) == 2  # only originals are indexed


def test_a_page_is_not_a_duplicate_of_its_own_earlier_version() -> None:
    d = DuplicateDetector()
    text = real_text("textwrap")
    d.check("p", text)
    again = d.check("p", text + " One more comment.")
    assert not again.is_duplicate
    d.forget("p")
    assert not d.check("q", text).is_duplicate


def test_short_pages_are_only_checked_exactly() -> None:
    d = DuplicateDetector()
    d.check("a", "Sorry, that page was not found.")
    assert d.check("b", "Sorry, that page was not found.").kind == "exact"
    assert not d.check("c", "Sorry, this page was not found.").is_duplicate
