"""Snapshots: binary round trip, corruption, validation and the store."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lookup.typeahead.filters import TermBlocklist
from lookup.typeahead.snapshot import (
    Snapshot,
    SnapshotError,
    TrieSnapshotStore,
    ValidationPolicy,
    open_snapshot_store,
    publish_validated,
    validate,
    write_snapshot,
)
from lookup.typeahead.trie import RadixTrie, brute_force_top


def make(path: Path, strings: list[str], market: str = "en-IN", version: str | None = None) -> Path:
    """A snapshot whose suggestions are ``strings`` (best first), each its own key."""
    trie = RadixTrie()
    for i, s in enumerate(strings):
        trie.add(s, i)
    scores = np.arange(len(strings), 0, -1, dtype=float)
    return write_snapshot(
        path, market, trie.build(), strings, scores, {"note": "test"}, version=version
    )


strings_st = st.lists(st.text(alphabet="abcक्ष ", min_size=1, max_size=8), min_size=1,
                      max_size=40, unique=True)  # fmt: skip


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(strings_st)
def test_round_trip(tmp_path: Path, strings: list[str]) -> None:
    path = make(tmp_path / "s.trie", strings)
    snap = Snapshot(path)
    assert snap.strings() == strings
    assert snap.meta == {"note": "test"} and snap.market == "en-IN"
    entries = [(s, i) for i, s in enumerate(strings)]
    for s in strings:
        for n in range(len(s) + 1):
            assert snap.find(s[:n]).ids == brute_force_top(entries, s[:n])
        assert snap.exact(s) == strings.index(s)
    assert snap.score(0) == len(strings)


def test_loading_is_zero_copy(tmp_path: Path) -> None:
    snap = Snapshot(make(tmp_path / "s.trie", [f"q{i}" for i in range(500)]))
    arrays = snap.arrays()
    assert not arrays["top_ids"].flags.owndata  # a view over the mapped file


def test_corruption_is_detected(tmp_path: Path) -> None:
    path = make(tmp_path / "s.trie", ["ipl", "iphone", "india"])
    data = bytearray(path.read_bytes())
    data[-3] ^= 0xFF
    bad = tmp_path / "bad.trie"
    bad.write_bytes(bytes(data))
    with pytest.raises(SnapshotError, match="checksum"):
        Snapshot(bad)
    (tmp_path / "short.trie").write_bytes(path.read_bytes()[:10])
    with pytest.raises(SnapshotError):
        Snapshot(tmp_path / "short.trie")
    (tmp_path / "magic.trie").write_bytes(b"NOTATRIE" + path.read_bytes()[8:])
    with pytest.raises(SnapshotError, match="magic"):
        Snapshot(tmp_path / "magic.trie")
    with pytest.raises(SnapshotError, match="no snapshot"):
        Snapshot(tmp_path / "absent.trie")


HEAD = [f"query {w}" for w in "abcdefghijklmnopqrstuvwxyz"] + [f"other {i}" for i in range(74)]


def test_validation_passes_a_similar_snapshot(tmp_path: Path) -> None:
    old = Snapshot(make(tmp_path / "a.trie", HEAD))
    new = Snapshot(make(tmp_path / "b.trie", HEAD[:95] + ["fresh one", "fresh two"]))
    report = validate(new, old, TermBlocklist(["make a bomb"]))
    assert report.ok, report.to_dict()
    assert {c.name for c in report.checks} >= {"structure", "blocklist", "size", "probes"}


def test_validation_refuses_size_jumps_blocked_and_broken_probes(tmp_path: Path) -> None:
    old = Snapshot(make(tmp_path / "a.trie", HEAD))
    tiny = Snapshot(make(tmp_path / "b.trie", HEAD[:50]))
    assert [c.name for c in validate(tiny, old, TermBlocklist()).failures()] == ["size"]
    blocked = Snapshot(make(tmp_path / "c.trie", HEAD[:99] + ["how to make a bomb"]))
    assert [c.name for c in validate(blocked, old, TermBlocklist(["make a bomb"])).failures()] == [
        "blocklist"
    ]
    private = Snapshot(make(tmp_path / "p.trie", HEAD[:99] + ["priya 9840012345"]))
    assert [c.name for c in validate(private, old, TermBlocklist()).failures()] == ["private"]
    shuffled = Snapshot(make(tmp_path / "d.trie", [f"zz {i}" for i in range(100)]))
    assert "probes" in [c.name for c in validate(shuffled, old, TermBlocklist()).failures()]
    assert validate(shuffled, None, TermBlocklist()).ok  # nothing to compare with
    loose = ValidationPolicy(size_tolerance=0.6)
    assert validate(tiny, old, TermBlocklist(), loose).ok


def test_store_publishes_refuses_and_prunes(tmp_path: Path) -> None:
    store = TrieSnapshotStore(tmp_path / "snaps", keep=3)
    staging = tmp_path / "staging"
    staging.mkdir()
    first = make(staging / "x.trie", HEAD, version="20260101T000000Z-aaaaaa")
    assert publish_validated(store, first, TermBlocklist()).ok
    assert store.current("en-IN") == "20260101T000000Z-aaaaaa"
    bad = make(staging / "y.trie", HEAD[:10], version="20260102T000000Z-bbbbbb")
    report = publish_validated(store, bad, TermBlocklist())
    assert not report.ok
    assert store.current("en-IN") == "20260101T000000Z-aaaaaa"  # the old one keeps serving
    assert (tmp_path / "snaps" / "en-IN" / "rejected" / "20260102T000000Z-bbbbbb.json").exists()
    for day in range(3, 8):
        v = f"202601{day:02d}T000000Z-cccccc"
        candidate = make(staging / "z.trie", HEAD, version=v)
        assert publish_validated(store, candidate, TermBlocklist()).ok
    assert store.versions("en-IN") == [f"202601{d:02d}T000000Z-cccccc" for d in (5, 6, 7)]
    opened = store.open("en-IN")
    assert opened is not None and opened.version == "20260107T000000Z-cccccc"
    with pytest.raises(ValueError):
        store.path("en-IN", "../../etc/passwd")
    with pytest.raises(ValueError):
        store.market_dir("../x")


def test_the_store_opens_from_a_url(tmp_path: Path) -> None:
    url = (tmp_path / "snaps").as_uri()
    assert url.startswith("file:///")
    assert open_snapshot_store(url).root == tmp_path / "snaps"
    assert open_snapshot_store(str(tmp_path / "snaps")).root == tmp_path / "snaps"
    for bad in ("sqlite:///x.db", "memory:", "s3://bucket/x", "file://host/x", ""):
        with pytest.raises(ValueError, match="snapshot store URL|file URL|local directory"):
            open_snapshot_store(bad)


def test_file_is_compact(tmp_path: Path) -> None:
    strings = [f"query number {i}" for i in range(2000)]
    path = make(tmp_path / "s.trie", strings)
    assert os.path.getsize(path) / len(strings) < 150
