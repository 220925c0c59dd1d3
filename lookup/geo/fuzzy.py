"""Prefixes with typos over a sorted list of keys: a trie walk without a trie.

The keys of the place-name index are one sorted list; the keys that start with a given
path are a contiguous slice, and its children are the distinct next characters, each
found by one binary search. A depth-first walk carries one row of the edit-distance
table per depth (optimal string alignment: an insertion, a deletion, a substitution or a
swap of two neighbouring letters costs one, as Meilisearch and Typesense count typos),
stops where every entry of the row exceeds the allowance, and takes a whole slice the
moment the query is within the allowance of the path — every key below starts with a
prefix that close. The first letter must be typed right (Elasticsearch's fuzzy
``prefix_length: 1``), so a walk starts in one letter's slice; and it is bounded
(:data:`MAX_NODES`), so a short, vague query costs at most that.
"""

from __future__ import annotations

import bisect

#: Trie nodes one walk may visit at most.
MAX_NODES = 20_000


def typos_allowed(query: str) -> int:
    """Edits tolerated for a query of this many characters: none below 5, one from 5, two
    from 9 (Meilisearch's defaults, ``minWordSizeForTypos``)."""
    n = len(query)
    return 0 if n < 5 else (1 if n < 9 else 2)


def near_prefixes(keys: list[str], query: str, edits: int) -> dict[int, int]:
    """Key position → typos, for each key that starts with something within ``edits`` of
    ``query`` (the fewest typos found for it)."""
    found: dict[int, int] = {}
    if edits <= 0 or not query:
        return found
    n = len(query)
    # the first letter as typed (Elasticsearch's fuzzy prefix_length 1): people rarely
    # miss it, and the walk then starts in one letter's slice, not the whole list
    lo = bisect.bisect_left(keys, query[0])
    hi = bisect.bisect_left(keys, chr(ord(query[0]) + 1), lo)
    over = edits + 1  # entries are capped here: "too many" is all the walk needs to know
    first = [min(v, over) for v in (1, *range(n))]  # after the first letter, query[0]
    # (lo, hi, path, row, row before, previous char)
    stack: list[tuple[int, int, str, list[int], list[int], str]] = [
        (lo, hi, query[0], first, [min(v, over) for v in range(n + 1)], query[0])
    ]
    visited = 0
    while stack and visited < MAX_NODES:
        lo, hi, path, row, before, prev = stack.pop()
        visited += 1
        if row[n] <= edits:
            for j in range(lo, hi):
                if found.get(j, edits + 1) > row[n]:
                    found[j] = row[n]
            if min(row) >= row[n]:
                continue  # going deeper cannot need fewer typos
        depth = len(path)
        i = lo
        while i < hi:
            key = keys[i]
            if len(key) <= depth:
                i += 1
                continue
            ch = key[depth]
            end = bisect.bisect_left(keys, path + chr(ord(ch) + 1), i, hi)
            # only the band |depth + 1 - j| <= edits can stay within the allowance
            new = [over] * (n + 1)
            new[0] = min(depth + 1, over)
            for j in range(max(1, depth + 1 - edits), min(n, depth + 1 + edits) + 1):
                best = row[j - 1] + (query[j - 1] != ch)
                if new[j - 1] + 1 < best:
                    best = new[j - 1] + 1
                if row[j] + 1 < best:
                    best = row[j] + 1
                if (
                    j > 1
                    and query[j - 1] == prev
                    and query[j - 2] == ch
                    and before[j - 2] + 1 < best
                ):
                    best = before[j - 2] + 1
                new[j] = best if best < over else over
            if min(new) <= edits:
                stack.append((i, end, path + ch, new, row, ch))
            i = end
    return found


__all__ = ["MAX_NODES", "near_prefixes", "typos_allowed"]
