"""The snapshot's read path: decoded head of the string table, and the blocked-ids fast path."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lookup.typeahead import snapshot as snapshot_mod
from lookup.typeahead.snapshot import Snapshot, SnapshotError, write_snapshot
from lookup.typeahead.trie import RadixTrie, TrieArrays, brute_force_top


def make(path: Path, strings: list[str]) -> Path:
    """A snapshot whose suggestions are ``strings`` (best first), each its own key."""
    trie = RadixTrie()
    for i, s in enumerate(strings):
        trie.add(s, i)
    scores = np.arange(len(strings), 0, -1, dtype=float)
    return write_snapshot(path, "en-IN", trie.build(), strings, scores)


strings_st = st.lists(st.text(alphabet="abक्ष ", min_size=1, max_size=6), min_size=1,
                      max_size=40, unique=True)  # fmt: skip


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(strings_st, st.integers(0, 45))
def test_texts_agree_across_the_decoded_head(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, strings: list[str], head: int
) -> None:
    monkeypatch.setattr(snapshot_mod, "_HEAD_MIN", head)
    monkeypatch.setattr(snapshot_mod, "_HEAD_DIVISOR", 10**9)
    snap = Snapshot(make(tmp_path / "s.trie", strings))
    assert len(snap._head) == min(head, len(strings))
    ids = list(range(len(strings)))
    assert snap.texts(ids) == strings
    assert snap.texts(ids[::-1]) == strings[::-1]
    assert [snap.string(i) for i in ids] == strings


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(strings_st, st.sets(st.integers(0, 40), max_size=8), st.integers(1, 14))
def test_find_with_blocked_ids_matches_brute_force(
    tmp_path: Path, strings: list[str], excluded: set[int], limit: int
) -> None:
    snap = Snapshot(make(tmp_path / "s.trie", strings))
    entries = [(s, i) for i, s in enumerate(strings)]
    blocked = frozenset(excluded)
    for prefix in {s[:n] for s in strings for n in range(len(s) + 1)}:
        got = snap.find(prefix, limit, blocked)
        everything = {t for s, t in entries if s.startswith(prefix)}
        if limit <= snap.k:  # beyond k the stored list is the answer without blocked ids
            assert got.ids == sorted(everything - blocked)[:limit], prefix
        elif blocked:  # beyond k with blocked ids: the refill from the children, as before
            assert got.ids == snap.reader.top_excluding(got.node, limit, blocked), prefix
        else:  # beyond k, nothing blocked: the stored list
            assert got.ids == brute_force_top(entries, prefix, snap.k), prefix


def test_a_malformed_trie_is_refused_not_crashed(tmp_path: Path) -> None:
    trie = RadixTrie()
    for i, s in enumerate(["ab", "ac", "b"]):
        trie.add(s, i)
    a = trie.build()
    broken = TrieArrays(
        first_child=np.array([1, 99, 99, 99, 99], np.uint32),  # children past the end
        first_cp=a.first_cp, label_off=a.label_off, labels=a.labels, top_off=a.top_off,
        top_ids=a.top_ids, flags=a.flags, terminal=a.terminal, k=a.k,
    )  # fmt: skip
    path = write_snapshot(tmp_path / "b.trie", "en-IN", broken, ["ab", "ac", "b"], [3.0, 2.0, 1.0])
    with pytest.raises(SnapshotError, match="malformed"):
        Snapshot(path)
