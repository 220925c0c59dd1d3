"""The index-location contract, run against every implementation behind ``open_index_location``.

A location holds a search index's published versions: nothing is live until the first
publish, each publish swaps the live version atomically, kept versions can be listed and
read back, garbage collection keeps the newest versions and the files they name, there
is one writer at a time, and the live version opens for queries. A local implementation
joins by adding a factory to :data:`LOCATIONS`, a shared store (PostgreSQL) by adding
the fixture that gives a fresh server and a factory to :data:`SHARED`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from lookup.search import manifest as manifests
from lookup.search.analysis import analyze_document
from lookup.search.location import DirectoryIndexLocation, IndexLocation, open_index_location
from lookup.search.manifest import Manifest, SegmentEntry, SourceState, shard_dir
from lookup.search.segment import DocRecord, SegmentWriter
from lookup.search.shard import IndexVersion


def _directory(tmp_path: Path) -> IndexLocation:
    return open_index_location(tmp_path / "index")


def _file_url(tmp_path: Path) -> IndexLocation:
    return open_index_location((tmp_path / "index-by-url").as_uri())


def _postgresql(tmp_path: Path, url: str) -> IndexLocation:
    return open_index_location(url, cache_dir=tmp_path / "local-copy")


#: name → factory(tmp_path) for every implementation.
LOCATIONS: dict[str, Callable[[Path], IndexLocation]] = {
    "directory": _directory,
    "file-url": _file_url,
}
#: name → (fixture giving a fresh server URL, factory(tmp_path, url)) for the shared stores.
SHARED: dict[str, tuple[str, Callable[[Path, str], IndexLocation]]] = {
    "postgresql": ("postgres_db", _postgresql),
}


@pytest.fixture(autouse=True)
def _no_fsync(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tiny files need no crash safety; fsync on a loaded machine costs seconds."""
    monkeypatch.setattr(manifests, "DURABLE", False)


@pytest.fixture(
    params=[
        *sorted(LOCATIONS),
        *(pytest.param(n, marks=[pytest.mark.postgres, pytest.mark.slow]) for n in SHARED),
    ]
)
def location(request: pytest.FixtureRequest, tmp_path: Path) -> IndexLocation:
    if request.param in SHARED:
        fixture, factory = SHARED[request.param]
        return factory(tmp_path, str(request.getfixturevalue(fixture)))
    return LOCATIONS[request.param](tmp_path)


def _version(location: IndexLocation, version: int, words: str) -> Manifest:
    """Write one segment of one document for ``version`` and return its manifest."""
    writer = SegmentWriter()
    text = f"{words} version{version}"
    writer.add(
        DocRecord(f"http://v.test/{version}", str(version), f"h{version}", "", text, 1.0e9, 1),
        analyze_document("", text),
    )
    name = f"seg-{version:06d}"
    info = writer.write(shard_dir(location.path, 0) / name)
    return Manifest(
        version=version,
        shards=1,
        created_at=1.0e9 + version,
        source=SourceState("crawl", "fp", seq=version),
        segments=[[SegmentEntry(name, info.docs)]],
        next_segment=version + 1,
    )


def test_it_is_an_index_location(location: IndexLocation) -> None:
    assert isinstance(location, IndexLocation)
    assert open_index_location(location) is location


def test_nothing_is_live_before_the_first_publish(location: IndexLocation) -> None:
    assert location.current_token() is None and location.current() is None
    assert location.versions() == [] and location.open() is None
    with pytest.raises(KeyError):
        location.manifest(1)


def test_publish_makes_a_version_live(location: IndexLocation) -> None:
    with location.writer():
        location.publish(_version(location, 1, "alpha"))
    token = location.current_token()
    current = location.current()
    assert token is not None and current is not None
    assert current.version == 1 and current.watermark == 1
    assert location.versions() == [1] and location.manifest(1).to_json() == current.to_json()
    snap = location.open()
    assert isinstance(snap, IndexVersion) and snap.version == 1 and snap.live_docs == 1


def test_each_publish_swaps_the_live_version_and_its_token(location: IndexLocation) -> None:
    tokens = []
    for v in (1, 2, 3):
        location.publish(_version(location, v, "beta"))
        tokens.append(location.current_token())
        current = location.current()
        assert current is not None and current.version == v
    assert len(set(tokens)) == 3 and location.current_token() == tokens[-1]
    assert location.versions() == [1, 2, 3]
    assert location.manifest(2).version == 2


def test_garbage_collection_keeps_the_newest_versions_and_their_files(
    location: IndexLocation,
) -> None:
    for v in (1, 2, 3, 4):
        location.publish(_version(location, v, "gamma"))
    removed = location.collect_garbage(keep_versions=2)
    assert removed and location.versions() == [3, 4]
    for v in (3, 4):
        entry = location.manifest(v).segments[0][0]
        assert (shard_dir(location.path, 0) / entry.name).exists()
    assert not (shard_dir(location.path, 0) / "seg-000001").exists()
    snap = location.open()
    assert snap is not None and snap.version == 4
    assert location.collect_garbage(keep_versions=2) == []


def test_there_is_one_writer_at_a_time(location: IndexLocation) -> None:
    with location.writer():
        with pytest.raises(RuntimeError):
            with location.writer():
                pass
    with location.writer():  # released
        pass


def test_a_reader_that_opened_a_version_keeps_it_through_a_swap(location: IndexLocation) -> None:
    location.publish(_version(location, 1, "delta"))
    old = location.open()
    location.publish(_version(location, 2, "delta"))
    location.collect_garbage(keep_versions=1)
    assert old is not None and old.version == 1 and old.live_docs == 1
    new = location.open()
    assert new is not None and new.version == 2


def test_the_factory_accepts_paths_and_file_urls_only(tmp_path: Path) -> None:
    assert isinstance(open_index_location(tmp_path), DirectoryIndexLocation)
    assert open_index_location(str(tmp_path)).path == tmp_path
    assert open_index_location(tmp_path.as_uri()).path == tmp_path
    with pytest.raises(ValueError, match="file:///"):
        open_index_location("s3://bucket/index")


def test_rollback_swaps_back_to_the_previous_version_and_is_kept(location: IndexLocation) -> None:
    from lookup.errors import Conflict, NotBuilt

    with pytest.raises(NotBuilt):
        location.rollback()
    location.publish(_version(location, 1, "eps"))
    with pytest.raises(Conflict) as none:
        location.rollback()
    assert none.value.code == "NO_PREVIOUS"
    location.publish(_version(location, 2, "eps"))
    assert location.rollback() == (1, 2)
    current = location.current()
    assert current is not None and current.version == 1
    assert location.previous_token() is not None and "000002" in location.previous_token()
    # a newer version published after the rollback: the live-before (1) is the target and
    # survives garbage collection although it is the oldest
    location.publish(_version(location, 3, "eps"))
    location.collect_garbage(keep_versions=2)
    assert location.versions() == [1, 2, 3]
    assert location.rollback() == (1, 3)
    snap = location.open()
    assert snap is not None and snap.version == 1
    with location.writer(), pytest.raises(Conflict) as busy:
        location.rollback()
    assert busy.value.code == "INDEX_BUSY"


def test_a_rejected_version_is_kept_aside_and_never_live(location: IndexLocation) -> None:
    location.publish(_version(location, 1, "zeta"))
    candidate = _version(location, 2, "zeta")
    location.reject(candidate, {"reason": "docs: too few", "checks": []})
    assert location.rejected() == [2]
    assert location.rejection(2)["reason"] == "docs: too few"
    assert "manifest" not in location.rejection(2)
    current = location.current()
    assert current is not None and current.version == 1 and location.versions() == [1]
    with pytest.raises(KeyError):
        location.rejection(7)
