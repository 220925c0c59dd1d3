"""The version store's shared parts: chunking (against hashlib) and the local cache's eviction."""

from __future__ import annotations

import hashlib
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from lookup.kit.versionstore import open_version_store
from lookup.kit.versionstore.cache import LocalCache, chunked


@given(data=st.binary(max_size=2000), size=st.integers(1, 300))
def test_chunks_concatenate_to_the_file_and_are_named_by_their_sha256(
    data: bytes, size: int
) -> None:
    parts = list(chunked(data, size))
    assert b"".join(p for _, p in parts) == data
    assert all(len(p) <= size for _, p in parts) and len(parts) >= 1
    assert all(sha == hashlib.sha256(p).hexdigest() for sha, p in parts)


def test_a_path_chunks_as_its_bytes(tmp_path: Path) -> None:
    f = tmp_path / "f"
    for n in (0, 1, 63, 64, 65, 640):
        f.write_bytes(bytes(range(256)) * 3 + b"x")
        f.write_bytes(f.read_bytes()[:n])
        assert list(chunked(f, 64)) == list(chunked(f.read_bytes(), 64))


def test_evict_drops_other_versions_and_their_chunks_only(tmp_path: Path) -> None:
    store = open_version_store(tmp_path / "store", chunk_size=16)
    shared = b"s" * 16
    store.publish("l", "v1", {"f": shared + b"only in v1......"})
    store.publish("l", "v2", {"f": shared + b"only in v2......"})
    cache_dir = tmp_path / "cache"
    store.fetch("l", "v1", cache_dir)
    store.fetch("l", "v2", cache_dir)
    cache = LocalCache(cache_dir, store.describe())
    assert cache.evict("l", ["v2"], grace_s=0.0) == ["v1"]
    assert not cache.version_dir("l", "v1").exists()
    assert (cache.version_dir("l", "v2") / "f").read_bytes() == shared + b"only in v2......"
    kept = {p.name for p in (cache_dir / "chunks").glob("*/*")}
    assert kept == set(store.info("l", "v2").files["f"].chunks)
    # a fresh chunk is kept through the grace period even if no version names it yet
    cache.evict("l", [], grace_s=3600.0)
    assert {p.name for p in (cache_dir / "chunks").glob("*/*")} == kept


def test_the_shared_snapshot_cache_holds_only_what_the_store_holds(tmp_path: Path) -> None:
    from lookup.typeahead.snapshot_shared import SharedSnapshotStore
    from tests.contracts.test_snapshot_store_contract import typeahead_directory

    h = typeahead_directory(None, tmp_path)  # type: ignore[arg-type]  # needs no fixture
    store = SharedSnapshotStore(
        open_version_store(tmp_path / "versions"), keep=2, cache_dir=tmp_path / "cache"
    )
    for v in h.versions[:5]:
        store.publish("en-IN", v, h.candidate("en-IN", v))
        snap = store.open("en-IN")
        assert snap is not None and snap.version == v
    cached = sorted(p.name for p in tmp_path.glob("cache/versions/*/*/*"))
    assert cached == store.versions("en-IN") == list(h.versions[3:5])
