"""Misspellings learned from the log: a typo followed by the same user's retype.

Fuzzy matching inside the trie is expensive (the walk branches at every possible
edit), so the cheap win is offline: people type ``iphnoe``, get nothing useful and
retype ``iphone`` a few seconds later. Pairs seen from enough distinct users become
extra trie keys leading to the right suggestions.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def edit_distance(a: str, b: str, limit: int | None = None) -> int:
    """Optimal-string-alignment (Damerau) distance: insert, delete, substitute, swap neighbours.

    With ``limit``, stops early and returns ``limit + 1`` once the distance must exceed it.
    """
    if a == b:
        return 0
    if limit is not None and abs(len(a) - len(b)) > limit:
        return limit + 1
    prev2: list[int] = []
    prev = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        cur = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            best = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                best = min(best, prev2[j - 2] + 1)
            cur[j] = best
        if limit is not None and min(cur) > limit:
            return limit + 1
        prev2, prev = prev, cur
    return prev[-1] if limit is None else min(prev[-1], limit + 1)


def retype_pairs(
    user: np.ndarray,
    ts: np.ndarray,
    query: np.ndarray,
    strings: Sequence[str],
    *,
    max_gap_s: int = 120,
    max_distance: int = 2,
) -> dict[tuple[int, int], set[int]]:
    """``(typo id, retyped id) → users`` for every query followed by a close variant.

    Inputs are parallel arrays of one market's human events; a pair counts when the
    same user searched ``a`` and then, within ``max_gap_s`` seconds and with no search
    in between, a different query within ``max_distance`` edits of it (and at least
    as long as three characters). Vectorised up to the distance check, which runs
    once per distinct candidate pair.
    """
    if len(ts) < 2:
        return {}
    order = np.lexsort((ts, user))
    u, t, q = user[order], ts[order], query[order]
    nxt = (u[1:] == u[:-1]) & (t[1:] - t[:-1] <= max_gap_s) & (q[1:] != q[:-1])
    idx = np.nonzero(nxt)[0]
    a, b, who = q[idx], q[idx + 1], u[idx]
    out: dict[tuple[int, int], set[int]] = {}
    verdict: dict[tuple[int, int], bool] = {}
    for x, y, w in zip(a.tolist(), b.tolist(), who.tolist(), strict=True):
        key = (x, y)
        ok = verdict.get(key)
        if ok is None:
            sa, sb = strings[x], strings[y]
            ok = min(len(sa), len(sb)) >= 3 and edit_distance(sa, sb, max_distance) <= max_distance
            verdict[key] = ok
        if ok:
            out.setdefault(key, set()).add(w)
    return out


__all__ = ["edit_distance", "retype_pairs"]
