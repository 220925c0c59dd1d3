"""Word-anywhere suggestions: the infix index built with a snapshot (issue 27 item 8).

The trie answers what a suggestion *starts* with; this index answers the words inside
it, so ``score`` finds "ind vs pak live score" and ``live ipl`` finds every suggestion
holding the word "live" and a word starting with "ipl". It is written into the same
snapshot file as extra sections (old snapshots simply have none: the fallback is off):

* ``infix_words`` — every distinct word of the suggestions, sorted, one per line;
* ``infix_post_off`` / ``infix_post`` — per word its posting list, the ids of the
  suggestions holding it in ascending order. Ids are in rank order (id 0 is the best
  score), so ascending ids are best first, and the lists of a range of words (all words
  starting with one prefix) are one contiguous slice;
* ``infix_fwd_off`` / ``infix_fwd`` — per suggestion the indexes of its words, so the
  candidates of a several-word query are checked against the last word's prefix by
  their own few words (one vectorised pass), never by reading every list of "s…";
* ``infix_tree_off`` / ``infix_tree`` — a segment tree over the sorted words whose every
  node keeps the best :data:`TREE_K` ids of the union of its words' lists, so the best
  answers for a word prefix are read from O(log n) short lists, not from a scan of
  every posting of "s…".

A query's words before the last one must be whole words of the suggestion (their lists
are intersected); the last one is a word prefix unless the query ends with a space.
The suggest service asks this index only when the prefix answer has room left, and
appends what it finds after the prefix answers (deduplicated), marked as infix matches.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

#: Ids kept per segment-tree node: a full answer (10) plus room for the ids the prefix
#: answer already shows or the hot blocklist removes.
TREE_K = 32
#: The snapshot sections this index writes (all or none).
SECTIONS = (
    "infix_words",
    "infix_post_off",
    "infix_post",
    "infix_tree_off",
    "infix_tree",
    "infix_fwd_off",
    "infix_fwd",
)


def words_of(text: str) -> list[str]:
    """The distinct words of a normalised suggestion, in order."""
    return list(dict.fromkeys(text.split()))


@dataclass
class InfixArrays:
    """A freshly built index (what :func:`sections` writes)."""

    words: list[str]
    post_off: np.ndarray
    post: np.ndarray
    tree_off: np.ndarray
    tree: np.ndarray
    fwd_off: np.ndarray
    fwd: np.ndarray


def build(strings: Sequence[str], k: int = TREE_K) -> InfixArrays:
    """The infix index of suggestions given best first (id = position)."""
    postings: dict[str, list[int]] = {}
    for i, s in enumerate(strings):
        for w in words_of(s):
            postings.setdefault(w, []).append(i)  # ids arrive ascending
    words = sorted(postings)
    lists = [postings[w] for w in words]
    post_off = np.zeros(len(words) + 1, np.uint32)
    if lists:
        post_off[1:] = np.cumsum([len(x) for x in lists])
    post = np.fromiter((i for x in lists for i in x), np.uint32, int(post_off[-1]))
    size = 1
    while size < max(1, len(words)):
        size *= 2
    nodes: list[list[int]] = [[] for _ in range(2 * size)]
    for j, x in enumerate(lists):
        nodes[size + j] = x[:k]
    for v in range(size - 1, 0, -1):
        a, b = nodes[2 * v], nodes[2 * v + 1]
        nodes[v] = sorted(set(a) | set(b))[:k] if a and b else (a or b)
    tree_off = np.zeros(2 * size + 1, np.uint32)
    tree_off[1:] = np.cumsum([len(x) for x in nodes])
    tree = np.fromiter((i for x in nodes for i in x), np.uint32, int(tree_off[-1]))
    index = {w: j for j, w in enumerate(words)}
    per_string = [sorted(index[w] for w in words_of(s)) for s in strings]
    fwd_off = np.zeros(len(strings) + 1, np.uint32)
    if per_string:
        fwd_off[1:] = np.cumsum([len(x) for x in per_string])
    fwd = np.fromiter((j for x in per_string for j in x), np.uint32, int(fwd_off[-1]))
    return InfixArrays(words, post_off, post, tree_off, tree, fwd_off, fwd)


def sections(arrays: InfixArrays) -> list[tuple[str, str, bytes]]:
    """The snapshot sections ``(name, type, data)`` of a built index."""
    if any("\n" in w for w in arrays.words):  # pragma: no cover - split() removes them
        raise ValueError("a word may not contain a newline")
    return [
        ("infix_words", "utf8", "\n".join(arrays.words).encode()),
        ("infix_post_off", "u4", arrays.post_off.astype("<u4").tobytes()),
        ("infix_post", "u4", arrays.post.astype("<u4").tobytes()),
        ("infix_tree_off", "u4", arrays.tree_off.astype("<u4").tobytes()),
        ("infix_tree", "u4", arrays.tree.astype("<u4").tobytes()),
        ("infix_fwd_off", "u4", arrays.fwd_off.astype("<u4").tobytes()),
        ("infix_fwd", "u4", arrays.fwd.astype("<u4").tobytes()),
    ]


def parse_query(p: str) -> tuple[list[str], str | None]:
    """``(whole words, last word prefix or None)`` of a normalised prefix: a trailing
    space makes the last word whole."""
    tokens = p.split()
    if not tokens:
        return [], None
    if p.endswith(" "):
        return list(dict.fromkeys(tokens)), None
    return list(dict.fromkeys(tokens[:-1])), tokens[-1]


def matches(text: str, p: str) -> bool:
    """Whether suggestion ``text`` matches prefix ``p`` word-anywhere (the oracle's rule)."""
    whole, last = parse_query(p)
    if not whole and last is None:
        return False
    have = set(text.split())
    if not all(w in have for w in whole):
        return False
    return last is None or any(w.startswith(last) for w in have)


class InfixIndex:
    """A loaded infix index over a snapshot's sections (zero-copy, words decoded once)."""

    def __init__(self, views: Mapping[str, Any], k: int = TREE_K) -> None:
        text: str = views["infix_words"]
        self.words: list[str] = text.split("\n") if text else []
        self._post_off = np.frombuffer(views["infix_post_off"], "<u4")
        self._post = np.frombuffer(views["infix_post"], "<u4")
        self._tree_off = np.frombuffer(views["infix_tree_off"], "<u4")
        self._tree = np.frombuffer(views["infix_tree"], "<u4")
        self._fwd_off = np.frombuffer(views["infix_fwd_off"], "<u4")
        self._fwd = np.frombuffer(views["infix_fwd"], "<u4")
        self._size = (len(self._tree_off) - 1) // 2
        self.k = k  # ids per tree node the file was built with (its header says)
        if len(self._post_off) != len(self.words) + 1 or self._size < len(self.words):
            raise ValueError("infix sections disagree in length")
        self.nbytes = (
            len(text.encode())
            + self._post_off.nbytes
            + self._post.nbytes
            + self._tree_off.nbytes
            + self._tree.nbytes
            + self._fwd_off.nbytes
            + self._fwd.nbytes
        )

    @classmethod
    def of(cls, views: Mapping[str, Any], k: int = TREE_K) -> InfixIndex | None:
        """The index in a snapshot's sections, or None for a snapshot written without one."""
        return cls(views, k) if all(name in views for name in SECTIONS) else None

    def _word_range(self, prefix: str) -> tuple[int, int]:
        n = len(prefix)
        lo = bisect_left(self.words, prefix)
        return lo, bisect_right(self.words, prefix, lo=lo, key=lambda w: w[:n])

    def _postings(self, word: str) -> np.ndarray | None:
        j = bisect_left(self.words, word)
        if j == len(self.words) or self.words[j] != word:
            return None
        return self._post[self._post_off[j] : self._post_off[j + 1]]

    def find(self, p: str, need: int, skip: Iterable[int] = ()) -> list[int]:
        """The best ``need`` ids matching normalised prefix ``p`` word-anywhere, best
        first, leaving out ``skip`` (ids already shown, blocked ids)."""
        whole, last = parse_query(p)
        if need <= 0 or (not whole and last is None):
            return []
        left_out = skip if isinstance(skip, (set, frozenset)) else set(skip)
        if not whole:
            assert last is not None
            return self._best_in_range(*self._word_range(last), need, left_out)
        lists = []
        for w in whole:
            got = self._postings(w)
            if got is None:
                return []
            lists.append(got)
        lists.sort(key=len)
        cand = lists[0]
        for other in lists[1:]:
            cand = np.intersect1d(cand, other, assume_unique=True)
            if not len(cand):
                return []
        lo = hi = 0
        if last is not None:
            lo, hi = self._word_range(last)
            if lo == hi:
                return []
        out: list[int] = []
        start, chunk = 0, 64  # best first: check a few candidates, more only if needed
        while start < len(cand) and len(out) < need:
            part = cand[start : start + chunk]
            if last is not None:
                part = part[self._has_word_in(part, lo, hi)]
            out += [i for i in part.tolist() if i not in left_out]
            start, chunk = start + chunk, chunk * 4
        return out[:need]

    def _has_word_in(self, cand: np.ndarray, lo: int, hi: int) -> np.ndarray:
        """Per candidate suggestion, whether one of its words is among words ``lo..hi-1``
        (read from the forward index: the candidates' own words, not the range's lists)."""
        if not len(cand):
            return np.zeros(0, bool)
        starts = self._fwd_off[cand].astype(np.int64)
        lengths = self._fwd_off[cand + 1].astype(np.int64) - starts
        firsts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
        at = np.repeat(starts - firsts, lengths) + np.arange(int(lengths.sum()))
        words = self._fwd[at]
        inside = (words >= lo) & (words < hi)
        return np.logical_or.reduceat(inside, firsts)

    def _best_in_range(
        self, lo: int, hi: int, need: int, left_out: set[int] | frozenset[int]
    ) -> list[int]:
        """The best ids in the union of the lists of words ``lo..hi-1``: from the tree's
        nodes covering the range, else (too many left out) from the postings slice."""
        if lo >= hi:
            return []
        off, tree = self._tree_off, self._tree
        parts = []
        bound = None  # every id of the range up to ``bound`` is among the parts
        a, b = lo + self._size, hi + self._size
        nodes = []
        while a < b:
            if a & 1:
                nodes.append(a)
                a += 1
            if b & 1:
                b -= 1
                nodes.append(b)
            a, b = a >> 1, b >> 1
        for v in nodes:
            part = tree[off[v] : off[v + 1]]
            parts.append(part)
            if len(part) >= self.k:
                bound = int(part[-1]) if bound is None else min(bound, int(part[-1]))
        merged = np.unique(np.concatenate(parts)).tolist() if parts else []
        out = []
        for i in merged:
            if bound is not None and i > bound:
                break
            if i not in left_out:
                out.append(i)
                if len(out) == need:
                    return out
        if bound is None:
            return out
        every = np.unique(self._post[self._post_off[lo] : self._post_off[hi]]).tolist()
        return [i for i in every if i not in left_out][:need]


__all__ = [
    "SECTIONS",
    "TREE_K",
    "InfixArrays",
    "InfixIndex",
    "build",
    "matches",
    "parse_query",
    "sections",
    "words_of",
]
