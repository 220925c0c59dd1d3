"""The radix trie with the answers stored inside: builder (write path) and walker (read path).

Every key (a query, or an extra key such as a learned misspelling or another
spelling of a Hindi phrase) leads to a *target*: an integer id into one shared
string table. Ids are assigned in rank order — id 0 is the most popular suggestion —
so "best" is simply "smallest id", ties are broken once and deterministically, and
a node's top 10 is the 10 smallest distinct ids in its subtree.

The builder makes the trie from sorted keys in one pass (single-child chains
collapsed into one edge labelled with a substring), lays the nodes out breadth-first
so that each node's children are contiguous and sorted by first code point, and
fills every node's top 10 bottom-up in one pass: a node's list is the best 10 of its
own target and its children's lists. ``complete`` marks a subtree holding ≤ 10
targets, all reached through their own spelling — then the list is every completion
and a client may filter it locally for longer prefixes.

The walker reads those arrays through ``memoryview`` (zero-copy over a memory-mapped
snapshot file). Two small structures derived when a reader is made keep the walk
short: a dict from every prefix of up to a few code points (as many levels as fit a
budget of entries, ~1/8 of the node count) to where it ends in the trie — so a short
prefix costs one dict lookup and a longer one starts its walk there — and a string of
every node's first code point, so that finding a child among its contiguous siblings
is one C-level ``str.find`` over their slice. Below that, per node: one ``find`` and
one label comparison (none for one-code-point labels, which the ``find`` matched).
"""

from __future__ import annotations

import heapq
from bisect import bisect_left
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

#: How many suggestions every node stores.
K = 10

FLAG_COMPLETE = 1
FLAG_TERMINAL = 2

# the reader's shortcut dict: at most n_nodes // _SHORTCUT_DIVISOR entries (or the minimum)
_SHORTCUT_DIVISOR = 8
_SHORTCUT_MIN = 1024
_NODE_MASK = (1 << 32) - 1


@dataclass
class TrieArrays:
    """A built trie as flat arrays (node 0 is the root, breadth-first order)."""

    first_child: np.ndarray  # uint32[N+1]: children of n are first_child[n] .. first_child[n+1]-1
    first_cp: np.ndarray  # uint32[N]: first code point of each node's edge label
    label_off: np.ndarray  # uint32[N+1]: edge label of n is labels[label_off[n]:label_off[n+1]]
    labels: str
    top_off: np.ndarray  # uint32[N+1]: stored top-k of n is top_ids[top_off[n]:top_off[n+1]]
    top_ids: np.ndarray  # uint32[T]: target ids, ascending (= best first)
    flags: np.ndarray  # uint8[N]: FLAG_COMPLETE | FLAG_TERMINAL
    terminal: np.ndarray  # int32[N]: the target of the key ending exactly here, or -1
    k: int = K

    @property
    def n_nodes(self) -> int:
        """Nodes in the radix trie (root included)."""
        return len(self.first_cp)

    @property
    def plain_nodes(self) -> int:
        """Nodes a plain (uncompressed, one code point per edge) trie of the same keys has."""
        return len(self.labels) + 1

    def nbytes(self) -> int:
        """Bytes of the arrays plus the labels (as UTF-8)."""
        arrays = (
            self.first_child,
            self.first_cp,
            self.label_off,
            self.top_off,
            self.top_ids,
            self.flags,
            self.terminal,
        )
        return sum(a.nbytes for a in arrays) + len(self.labels.encode())


class RadixTrie:
    """Collects ``key → target`` entries and builds :class:`TrieArrays`.

    ``alias=True`` marks a key that is not the target's own spelling (a misspelling
    or transliteration key); a subtree holding one is never ``complete``, because a
    client filtering the list by the displayed strings would miss it.
    """

    def __init__(self, k: int = K) -> None:
        if k < 1:
            raise ValueError("k must be at least 1")
        self.k = k
        self._entries: dict[str, tuple[int, bool]] = {}

    def __len__(self) -> int:
        return len(self._entries)

    def add(self, key: str, target: int, *, alias: bool = False) -> None:
        """Add a key; if the key exists, the better (smaller) target wins."""
        if not key:
            raise ValueError("keys must be non-empty")
        if target < 0:
            raise ValueError("targets are non-negative ids")
        old = self._entries.get(key)
        if old is None or target < old[0] or (target == old[0] and old[1] and not alias):
            self._entries[key] = (target, alias)

    def add_many(self, entries: Iterable[tuple[str, int]]) -> None:
        """Add ``(key, target)`` pairs that are the targets' own spellings."""
        for key, target in entries:
            self.add(key, target)

    def build(self) -> TrieArrays:
        """Build the radix trie and every node's top-k (see the module docstring)."""
        label: list[str] = [""]
        children: list[list[int]] = [[]]
        target: list[int] = [-1]
        alias: list[bool] = [False]
        end: list[int] = [0]  # string depth at the end of each node's label
        stack = [0]
        prev = ""
        entries = self._entries
        for key in sorted(entries):
            lcp = common_prefix_len(prev, key)
            while end[stack[-1]] > lcp:
                top = stack[-1]
                parent = stack[-2]
                if end[parent] >= lcp:
                    stack.pop()
                    continue
                # the new key leaves the previous key's path inside ``top``'s label: split it
                cut = lcp - end[parent]
                mid = len(label)
                label.append(label[top][:cut])
                children.append([top])
                target.append(-1)
                alias.append(False)
                end.append(lcp)
                label[top] = label[top][cut:]
                children[parent][-1] = mid
                stack[-1] = mid
            leaf = len(label)
            t, a = entries[key]
            label.append(key[lcp:])
            children.append([])
            target.append(t)
            alias.append(a)
            end.append(len(key))
            children[stack[-1]].append(leaf)
            stack.append(leaf)
            prev = key
        return self._layout(label, children, target, alias)

    def _layout(
        self, label: list[str], children: list[list[int]], target: list[int], alias: list[bool]
    ) -> TrieArrays:
        order = [0]
        for n in order:  # breadth-first: the list grows while we walk it
            order.extend(children[n])
        n_nodes = len(order)
        counts = np.fromiter((len(children[n]) for n in order), np.int64, n_nodes)
        first_child = np.concatenate([[1], 1 + np.cumsum(counts)]).astype(np.uint32)
        labels_bfs = [label[n] for n in order]
        label_off = _offsets(map(len, labels_bfs), n_nodes)
        first_cp = np.fromiter((ord(s[0]) if s else 0 for s in labels_bfs), np.uint32, n_nodes)
        term = np.fromiter((target[n] for n in order), np.int32, n_nodes)
        k = self.k
        tops: list[list[int]] = [[]] * n_nodes
        complete = np.zeros(n_nodes, bool)
        fc = first_child.tolist()
        for i in range(n_nodes - 1, -1, -1):
            n = order[i]
            lo, hi = fc[i], fc[i + 1]
            own = target[n]
            pure = not alias[n]
            if lo == hi:
                tops[i] = [own]
                complete[i] = pure
                continue
            cand: set[int] = set()
            if own >= 0:
                cand.add(own)
            all_complete = pure
            for c in range(lo, hi):
                cand.update(tops[c])
                all_complete = all_complete and bool(complete[c])
            if len(cand) <= k:
                tops[i] = sorted(cand)
                complete[i] = all_complete
            else:
                tops[i] = heapq.nsmallest(k, cand)
        top_off = _offsets(map(len, tops), n_nodes)
        top_ids = np.fromiter((x for t in tops for x in t), np.uint32, int(top_off[-1]))
        flags = (
            complete.astype(np.uint8) * FLAG_COMPLETE | (term >= 0).astype(np.uint8) * FLAG_TERMINAL
        )
        return TrieArrays(
            first_child=first_child,
            first_cp=first_cp,
            label_off=label_off,
            labels="".join(labels_bfs),
            top_off=top_off,
            top_ids=top_ids,
            flags=flags.astype(np.uint8),
            terminal=term,
            k=k,
        )


def _offsets(lengths: Iterable[int], n: int) -> np.ndarray:
    """``[0, l0, l0+l1, ...]`` as uint32 (n + 1 entries)."""
    return np.concatenate([[0], np.cumsum(np.fromiter(lengths, np.int64, n))]).astype(np.uint32)


def _code_points_str(cps: Sequence[int]) -> str:
    """The code points as one string (one character per node; decoded in bulk)."""
    arr = np.asarray(cps, dtype=np.uint32)
    if not len(arr) or int(arr.max()) < 128:
        return arr.astype(np.uint8).tobytes().decode("ascii")
    try:
        return arr.astype("<u4").tobytes().decode("utf-32-le")
    except UnicodeDecodeError:  # a lone surrogate: no codec takes it, chr does
        return "".join(map(chr, arr.tolist()))


def common_prefix_len(a: str, b: str) -> int:
    """Length of the longest common prefix (binary search on slices: C-speed compares)."""
    lo, hi = 0, min(len(a), len(b))
    if a[:hi] == b[:hi]:
        return hi
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


@dataclass(frozen=True)
class WalkStep:
    """One node visited by a walk (for explaining a lookup)."""

    node: int
    label: str
    depth: int  # code points matched once this node is reached
    probes: int  # children compared by the binary search to find it


class TrieReader:
    """Walks a trie stored as flat buffers; what the server runs on every keystroke."""

    def __init__(
        self,
        first_child: Sequence[int],
        first_cp: Sequence[int],
        label_off: Sequence[int],
        labels: str,
        top_off: Sequence[int],
        top_ids: Sequence[int],
        flags: Sequence[int],
        terminal: Sequence[int],
        k: int = K,
        *,
        shortcut_budget: int | None = None,
    ) -> None:
        self._fc = first_child
        self._cp = first_cp
        self._lo = label_off
        self._labels = labels
        self._to = top_off
        self._ti = top_ids
        self._flags = flags
        self._term = terminal
        self.k = k
        self.n_nodes = len(first_cp)
        self._firsts = _code_points_str(first_cp)
        if shortcut_budget is None:
            shortcut_budget = max(_SHORTCUT_MIN, self.n_nodes // _SHORTCUT_DIVISOR)
        self._short, self._short_depth = self._shortcuts(shortcut_budget)

    def _shortcuts(self, budget: int) -> tuple[dict[str, int], int]:
        """Every prefix of up to ``depth`` code points → where it ends, level by level.

        The value packs the locus node (low 32 bits) and how many code points of that
        node's label are still unmatched (the prefix ends inside the edge; high bits).
        A level is added only if the total stays within ``budget`` entries (its size is
        counted before anything is allocated, so nothing is built and thrown away).
        """
        fc, lo_, labels = self._fc, self._lo, self._labels
        short: dict[str, int] = {"": 0}
        level = [""]
        depth = 0
        while level:
            size = 0
            for key in level:
                v = short[key]
                node = v & _NODE_MASK
                size += 1 if v >> 32 else fc[node + 1] - fc[node]
            if not size or len(short) + size > budget:
                break
            nxt: list[str] = []
            for key in level:
                v = short[key]
                node = v & _NODE_MASK
                rem = v >> 32
                if rem:
                    b = lo_[node + 1]
                    ext = key + labels[b - rem]
                    short[ext] = node | (rem - 1) << 32
                    nxt.append(ext)
                    continue
                for j in range(fc[node], fc[node + 1]):
                    a, b = lo_[j], lo_[j + 1]
                    ext = key + labels[a]
                    short[ext] = j | (b - a - 1) << 32
                    nxt.append(ext)
            level = nxt
            depth += 1
        return short, depth

    @classmethod
    def from_arrays(cls, arrays: TrieArrays, *, shortcut_budget: int | None = None) -> TrieReader:
        """A reader over freshly built arrays (memoryviews over the numpy buffers)."""
        # numpy's stubs declare the buffer protocol only for Python >= 3.12
        return cls(
            memoryview(arrays.first_child),  # type: ignore[arg-type]
            memoryview(arrays.first_cp),  # type: ignore[arg-type]
            memoryview(arrays.label_off),  # type: ignore[arg-type]
            arrays.labels,
            memoryview(arrays.top_off),  # type: ignore[arg-type]
            memoryview(arrays.top_ids),  # type: ignore[arg-type]
            memoryview(arrays.flags),  # type: ignore[arg-type]
            memoryview(arrays.terminal),  # type: ignore[arg-type]
            arrays.k,
            shortcut_budget=shortcut_budget,
        )

    def locate(self, prefix: str) -> int:
        """The node whose subtree holds exactly the keys starting with ``prefix``; -1 if none."""
        n = len(prefix)
        d = self._short_depth
        if n <= d:
            v = self._short.get(prefix)
            return -1 if v is None else v & _NODE_MASK
        v = self._short.get(prefix[:d])
        if v is None:
            return -1
        node = v & _NODE_MASK
        rem = v >> 32
        lo_, labels = self._lo, self._labels
        i = d
        if rem:  # the first d code points end inside the edge into ``node``
            b = lo_[node + 1]
            if n - i < rem:
                return node if labels.startswith(prefix[i:], b - rem) else -1
            if not prefix.startswith(labels[b - rem : b], i):
                return -1
            i += rem
        fc, firsts = self._fc, self._firsts
        while i < n:
            j = firsts.find(prefix[i], fc[node], fc[node + 1])
            if j < 0:
                return -1
            a = lo_[j]
            m = lo_[j + 1] - a
            if m == 1:  # the find matched the whole label
                i += 1
            elif n - i >= m:
                if not prefix.startswith(labels[a : a + m], i):
                    return -1
                i += m
            else:
                return j if labels.startswith(prefix[i:], a) else -1
            node = j
        return node

    def exact(self, key: str) -> int:
        """The target of ``key`` if it is a key of the trie, else -1."""
        fc, firsts, lo_, labels = self._fc, self._firsts, self._lo, self._labels
        node = 0
        i = 0
        n = len(key)
        while i < n:
            j = firsts.find(key[i], fc[node], fc[node + 1])
            if j < 0:
                return -1
            a, b = lo_[j], lo_[j + 1]
            if n - i < b - a or not key.startswith(labels[a:b], i):
                return -1
            i += b - a
            node = j
        return self._term[node] if node else -1

    def top(self, node: int) -> memoryview | Sequence[int]:
        """The stored best-first target ids of a node."""
        return self._ti[self._to[node] : self._to[node + 1]]

    def is_complete(self, node: int) -> bool:
        """True if the node's stored list holds every completion of its prefix."""
        return bool(self._flags[node] & FLAG_COMPLETE)

    def labels_of(self) -> tuple[str, Sequence[int], Sequence[int]]:
        """``(labels, label offsets, first child)``: the raw buffers, for walks that visit
        many nodes (the typo-tolerant fallback) and cannot pay a method call per node."""
        return self._labels, self._lo, self._fc

    def children(self, node: int) -> range:
        """The node ids of a node's children."""
        return range(self._fc[node], self._fc[node + 1])

    def label(self, node: int) -> str:
        """The edge label leading into a node."""
        return self._labels[self._lo[node] : self._lo[node + 1]]

    def terminal(self, node: int) -> int:
        """The target of the key ending exactly at this node, or -1."""
        return self._term[node]

    def top_excluding(
        self, node: int, limit: int, excluded: set[int] | frozenset[int]
    ) -> list[int]:
        """The best ``limit`` (≤ k) targets under ``node`` that are not in ``excluded``.

        Reads the stored list; only where excluded ids leave it short does it descend
        into the children (exactly: each child's list is its subtree's best k).
        """
        ids = self.top(node)
        good = [t for t in ids if t not in excluded]
        if len(good) >= limit or len(ids) < self.k:
            return good[:limit]
        cand: set[int] = set()
        own = self._term[node]
        if own >= 0 and own not in excluded:
            cand.add(own)
        for child in self.children(node):
            cand.update(self.top_excluding(child, limit, excluded))
        return heapq.nsmallest(limit, cand)

    def walk(self, prefix: str) -> tuple[int, list[WalkStep]]:
        """Like :meth:`locate`, recording every node visited (slow path, for explanations)."""
        fc, cp, lo_, labels = self._fc, self._cp, self._lo, self._labels
        steps = [WalkStep(0, "", 0, 0)]
        node, i, n = 0, 0, len(prefix)
        while i < n:
            lo, hi = fc[node], fc[node + 1]
            if lo == hi:
                return -1, steps
            c = ord(prefix[i])
            j = bisect_left(cp, c, lo, hi)
            probes = max(1, (hi - lo).bit_length())
            if j == hi or cp[j] != c:
                return -1, steps
            a, b = lo_[j], lo_[j + 1]
            lab = labels[a:b]
            take = min(b - a, n - i)
            if prefix[i : i + take] != lab[:take]:
                return -1, steps
            i += take
            node = j
            steps.append(WalkStep(j, lab, i, probes))
        return node, steps

    def iter_keys(self, node: int = 0, path: str = "") -> Iterable[tuple[str, int]]:
        """Every ``(key, target)`` below a node, in key order (for checks and tools)."""
        stack = [(node, path + (self.label(node) if node else ""))]
        while stack:
            n, p = stack.pop()
            t = self._term[n]
            if t >= 0:
                yield p, t
            for c in reversed(self.children(n)):
                stack.append((c, p + self.label(c)))


def brute_force_top(entries: Iterable[tuple[str, int]], prefix: str, k: int = K) -> list[int]:
    """The oracle: the k smallest distinct targets of all keys starting with ``prefix``."""
    return sorted({t for key, t in entries if key.startswith(prefix)})[:k]


__all__ = ["K", "RadixTrie", "TrieArrays", "TrieReader", "WalkStep", "brute_force_top"]
