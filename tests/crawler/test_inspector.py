"""The dedup inspector's pair measurements and word diff, against brute-force oracles."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from lookup.crawler.inspector import DiffSegment, compare_texts, word_diff

WORDS = st.lists(st.sampled_from(["a", "b", "c", "d", "e", "f"]), max_size=40)


def _shingle_set(text: str) -> set[tuple[str, ...]]:
    """Word 3-shingles, written independently of ``lookup.crawler.dedup``."""
    words = re.findall(r"\w+", text.lower())
    if len(words) < 3:
        return {tuple(words)} if words else set()
    return {tuple(words[i : i + 3]) for i in range(len(words) - 2)}


def _words(segments: list[DiffSegment]) -> list[str]:
    return [w for s in segments for w in s.words]


@settings(max_examples=200, deadline=None)
@given(WORDS, WORDS, st.integers(min_value=0, max_value=5))
def test_each_side_of_the_diff_adds_up_to_its_text(a: list[str], b: list[str], ctx: int) -> None:
    left, right = word_diff(" ".join(a), " ".join(b), context=ctx)
    assert _words(left) == a
    assert _words(right) == b
    # Deletions only on the left, insertions only on the right; the unchanged runs are
    # the same words in the same order on both sides.
    assert all(s.op in ("equal", "delete", "replace") for s in left)
    assert all(s.op in ("equal", "insert", "replace") for s in right)
    assert [s.words for s in left if s.op == "equal"] == [s.words for s in right if s.op == "equal"]
    assert all(s.op == "equal" for s in left + right if s.collapsed)


def test_long_unchanged_runs_fold_but_keep_context() -> None:
    common = [f"w{i}" for i in range(100)]
    a = " ".join([*common, "old", *common])
    b = " ".join([*common, "new", *common])
    left, right = word_diff(a, b, context=5)
    assert [s.op for s in left] == ["equal", "equal", "replace", "equal", "equal"]
    assert [s.collapsed for s in left] == [True, False, False, False, True]
    assert left[1].words == tuple(common[-5:]) and left[3].words == tuple(common[:5])
    assert left[2].words == ("old",) and right[2].words == ("new",)


def test_identical_texts() -> None:
    text = "The quick brown fox jumps over the lazy dog " * 10
    r = compare_texts(text, "  " + text.replace(" ", "\n"))  # whitespace does not count
    assert r.identical and r.hamming == 0
    assert r.jaccard == 1.0 and r.minhash_jaccard == 1.0
    assert r.words_changed_left == r.words_changed_right == 0


def test_measures_match_brute_force() -> None:
    base = (
        "Configuration file parser. A configuration file consists of sections, lead by a "
        "section header, and followed by name value entries, with continuations and such "
        "in the style of RFC 822. Intrinsic defaults can be specified by passing them into "
        "the constructor as a dictionary."
    ).split()
    edited = [*base[:10], "Advertisement:", "buy", "now", *base[10:30], *base[32:]]
    a, b = " ".join(base), " ".join(edited)
    r = compare_texts(a, b)
    sa, sb = _shingle_set(a), _shingle_set(b)
    assert r.jaccard == len(sa & sb) / len(sa | sb)
    assert r.hamming == bin(r.simhash_left ^ r.simhash_right).count("1")
    assert abs(r.minhash_jaccard - r.jaccard) < 0.2  # 128 permutations: σ ≈ 0.04
    assert not r.identical
    assert r.shingles_left == len(sa) and r.shingles_right == len(sb)
    # 3 words inserted on the right, 2 deleted on the left.
    assert (r.words_changed_left, r.words_changed_right) == (2, 3)


def test_unrelated_texts_are_far_apart() -> None:
    a = " ".join(f"alpha{i}" for i in range(200))
    b = " ".join(f"omega{i}" for i in range(200))
    r = compare_texts(a, b)
    assert r.jaccard == 0.0 and r.minhash_jaccard < 0.1
    assert r.hamming > 10 and not r.simhash_near


@settings(max_examples=100, deadline=None)
@given(WORDS, WORDS)
def test_the_fast_path_for_long_texts_still_adds_up(a: list[str], b: list[str]) -> None:
    from lookup.crawler import inspector

    saved = inspector.EXACT_DIFF_WORDS
    inspector.EXACT_DIFF_WORDS = 3  # difflib's popular-word heuristic on
    try:
        left, right = word_diff(" ".join(a), " ".join(b), context=2)
    finally:
        inspector.EXACT_DIFF_WORDS = saved
    assert _words(left) == a and _words(right) == b


def test_a_huge_repetitive_page_diffs_to_its_one_change() -> None:
    """Exact alignment is quadratic on repetitive text; the common head and tail go first."""
    text = " ".join(["Beautiful is better than ugly. Explicit is better than implicit."] * 6000)
    other = text.replace("ugly", "pretty", 1)
    left, right = word_diff(text, other)
    assert _words(left) == text.split() and _words(right) == other.split()
    assert [s.words for s in left if s.op != "equal"] == [("ugly.",)]
