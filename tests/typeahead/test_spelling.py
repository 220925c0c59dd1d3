"""Misspellings: the edit distance and typo → retype pairs from the log."""

from __future__ import annotations

from functools import cache

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from lookup.typeahead.spelling import edit_distance, retype_pairs


def osa_oracle(a: str, b: str) -> int:
    """Optimal string alignment by its recursive definition (the independent oracle)."""

    @cache
    def d(i: int, j: int) -> int:
        if i == 0:
            return j
        if j == 0:
            return i
        best = min(d(i - 1, j) + 1, d(i, j - 1) + 1, d(i - 1, j - 1) + (a[i - 1] != b[j - 1]))
        if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
            best = min(best, d(i - 2, j - 2) + 1)
        return best

    return d(len(a), len(b))


@given(st.text("abcd", max_size=8), st.text("abcd", max_size=8))
def test_edit_distance_matches_the_definition(a: str, b: str) -> None:
    assert edit_distance(a, b) == osa_oracle(a, b)
    limit = 2
    capped = edit_distance(a, b, limit)
    assert capped == min(osa_oracle(a, b), limit + 1)


def test_swap_is_one_edit() -> None:
    assert edit_distance("iphnoe", "iphone") == 1


def test_retype_pairs_need_same_user_short_gap_and_close_spelling() -> None:
    strings = ["iphnoe", "iphone", "weather", "iphoen"]
    # user 1: typo then retype after 5 s; user 2: same after 300 s (too late);
    # user 3: typo then an unrelated query; user 4: typo, retype 10 s later
    user = np.array([1, 1, 2, 2, 3, 3, 4, 4])
    ts = np.array([100, 105, 100, 400, 100, 103, 50, 60])
    query = np.array([0, 1, 0, 1, 0, 2, 3, 1])
    pairs = retype_pairs(user, ts, query, strings)
    assert pairs == {(0, 1): {1}, (3, 1): {4}}
