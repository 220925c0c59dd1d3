"""The contract of :class:`lookup.kit.versionstore.VersionStore`, over every registered backend.

Parametrised over the registry (:data:`lookup.kit.versionstore.BACKENDS`); ``FRESH`` says
how to get an empty store of each scheme. Besides the pointer and retention rules: any
set of files comes back byte-identical (a property test), a damaged chunk in the store
is caught on fetch (the test flips a byte of it, in the file or in the table), and a
waiter hears of a swap made through another instance.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lookup.kit import versionstore
from lookup.kit.versionstore import ChecksumError, VersionStore, open_version_store
from tests.contracts.seams import (
    Fresh,
    check_port_imports_no_backend,
    check_registered,
    fresh_url,
)

#: scheme -> how to get the URL of a fresh, empty store.
FRESH: dict[str, Fresh] = {
    "file": lambda tmp: (tmp / "versions").as_uri(),
    "postgresql": "postgres_db",
}


def _flip_file_chunk(store: Any, sha: str) -> None:
    path = store.root / "chunks" / sha[:2] / sha
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))


def _flip_pg_chunk(store: Any, sha: str) -> None:
    with store.pool.connection() as conn:
        conn.execute(
            "UPDATE vs_chunks SET data = overlay(data placing "
            "set_byte(substring(data from length(data) / 2 + 1 for 1), 0, "
            "get_byte(substring(data from length(data) / 2 + 1 for 1), 0) # 1) "
            "from length(data) / 2 + 1 for 1) WHERE sha256 = %s",
            (sha,),
        )


#: scheme -> how a test damages one stored chunk (a byte flipped where the backend keeps it).
DAMAGE = {"file": _flip_file_chunk, "postgresql": _flip_pg_chunk}


#: A server's backend is marked as such (``pytest -m "not slow"`` leaves it out).
_MARKED = [pytest.mark.postgres, pytest.mark.slow]


@pytest.fixture(
    params=[
        pytest.param(s, marks=_MARKED) if isinstance(FRESH.get(s), str) else s
        for s in versionstore.BACKENDS
    ]
)
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return fresh_url(request, tmp_path, FRESH)


@pytest.fixture
def store(url: str) -> Iterator[VersionStore]:
    s = open_version_store(url, chunk_size=64)
    yield s
    s.close()


def test_every_registered_backend_is_a_version_store() -> None:
    check_registered(versionstore.BACKENDS, versionstore.backend, VersionStore)
    assert set(DAMAGE) == set(versionstore.BACKENDS)


def test_the_port_imports_no_backend() -> None:
    check_port_imports_no_backend("lookup.kit.versionstore")


def test_an_unknown_scheme_is_refused_naming_the_accepted_ones(tmp_path: Path) -> None:
    assert isinstance(open_version_store(tmp_path / "plain"), VersionStore)
    for bad in ("memory:", "redis://localhost/0", ""):
        with pytest.raises(ValueError, match="file:///"):
            open_version_store(bad)


def test_an_empty_store(store: VersionStore) -> None:
    assert store.lines() == []
    assert store.versions("a/line") == []
    assert store.current("a/line") is None
    assert store.pointer("a/line").serial == 0
    with pytest.raises(LookupError):
        store.activate("a/line", "v1")
    with pytest.raises(LookupError):
        store.info("a/line", "v1")


def test_publish_activate_and_the_previous_pointer(store: VersionStore, tmp_path: Path) -> None:
    src = tmp_path / "big.bin"
    src.write_bytes(bytes(range(256)) * 3)
    info = store.publish("idx/en", "v1", {"a.bin": src, "meta/b.json": b"{}"}, {"n": 1})
    assert info.files["a.bin"].size == 768 and len(info.files["a.bin"].chunks) == 12
    assert store.current("idx/en") is None  # stored, not served
    assert store.activate("idx/en", "v1") is None
    store.publish("idx/en", "v2", {"a.bin": b"x"}, activate=True)
    assert store.lines() == ["idx/en"]
    assert store.versions("idx/en") == ["v1", "v2"]
    assert store.pointer("idx/en")[:2] == ("v2", "v1")
    assert store.info("idx/en", "v1").meta == {"n": 1}
    assert store.activate("idx/en", "v1") == "v2"
    assert store.pointer("idx/en")[:2] == ("v1", "v2")
    with pytest.raises(ValueError, match="never reused"):
        store.publish("idx/en", "v1", {"a.bin": b"y"})
    for bad_path in ("../x", "/abs", "a//b", ""):
        with pytest.raises(ValueError):
            store.publish("idx/en", "v9", {bad_path: b"y"})
    with pytest.raises(ValueError):
        store.publish("bad line!", "v9", {"a": b"y"})


def test_fetch_reuses_cached_chunks_and_fetches_only_what_is_asked(
    store: VersionStore, tmp_path: Path
) -> None:
    shared = bytes(range(200))
    store.publish("l", "v1", {"same.bin": shared, "x.bin": b"one"}, activate=True)
    store.publish("l", "v2", {"same.bin": shared, "x.bin": b"two"}, activate=True)
    cache = tmp_path / "cache"
    d1 = store.fetch("l", "v1", cache)
    assert (d1 / "same.bin").read_bytes() == shared and (d1 / "x.bin").read_bytes() == b"one"
    calls: list[list[str]] = []
    inner = store._read_chunks  # type: ignore[attr-defined]

    def counted(shas: list[str]) -> Any:
        calls.append(list(shas))
        return inner(shas)

    store._read_chunks = counted  # type: ignore[attr-defined]
    d2 = store.fetch("l", "v2", cache, only=("x.bin",))
    assert (d2 / "x.bin").read_bytes() == b"two" and not (d2 / "same.bin").exists()
    store.fetch("l", "v2", cache)  # same.bin's chunks are cached from v1: nothing to read
    assert calls == [[store.info("l", "v2").files["x.bin"].chunks[0]]]
    with pytest.raises(LookupError):
        store.fetch("l", "v2", cache, only=("nope",))


def test_gc_keeps_the_newest_and_the_current_and_drops_orphan_chunks(
    store: VersionStore, tmp_path: Path
) -> None:
    for i in range(5):
        store.publish("l", f"v{i}", {"f": f"payload {i}".encode() * 10}, activate=True)
    store.activate("l", "v0")
    assert store.gc("l", keep=2) == ["v1", "v2"]
    assert store.versions("l") == ["v0", "v3", "v4"]
    assert store.current("l") == "v0"
    gone = tmp_path / "fresh-cache"
    for v in ("v0", "v3", "v4"):
        assert (store.fetch("l", v, gone) / "f").read_bytes() == f"payload {v[1]}".encode() * 10
    dropped_chunk = (b"payload 1" * 10)[:64]
    from lookup.kit.versionstore.cache import sha256_of

    assert sha256_of(dropped_chunk) not in store._read_chunks([sha256_of(dropped_chunk)])  # type: ignore[attr-defined]


def test_a_damaged_chunk_is_detected_and_nothing_is_cached(
    store: VersionStore, url: str, tmp_path: Path
) -> None:
    store.publish("l", "v1", {"f": bytes(range(150))}, activate=True)
    sha = store.info("l", "v1").files["f"].chunks[1]
    scheme = "postgresql" if url.startswith("postgresql") else "file"
    DAMAGE[scheme](store, sha)
    with pytest.raises(ChecksumError, match="checksum"):
        store.fetch("l", "v1", tmp_path / "cache")
    assert not (tmp_path / "cache" / "chunks" / sha[:2] / sha).exists()
    assert not list((tmp_path / "cache").glob("versions/*/*/v1/f"))


def test_a_waiter_hears_a_swap_made_through_another_instance(store: VersionStore, url: str) -> None:
    store.publish("l", "v1", {"f": b"1"}, activate=True)
    seen = store.pointer("l").serial
    assert store.wait("l", seen, timeout=0.05).serial == seen  # nothing moved: times out
    other = open_version_store(url)
    other.publish("l", "v2", {"f": b"2"})
    heard: list[Any] = []
    t = threading.Thread(target=lambda: heard.append(store.wait("l", seen, timeout=60)))
    t.start()
    other.activate("l", "v2")
    t.join(60)
    other.close()
    assert heard and heard[0].current == "v2" and heard[0].serial > seen


@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    files=st.dictionaries(
        st.from_regex(r"[a-z][a-z0-9_]{0,6}(/[a-z0-9_]{1,6})?", fullmatch=True),
        st.binary(max_size=300),
        min_size=1,
        max_size=4,
    )
)
def test_any_set_of_files_round_trips_byte_identical(
    store: VersionStore, tmp_path: Path, files: dict[str, bytes]
) -> None:
    # a file and a directory of the same name cannot both exist on disk
    if any(a != b and b.startswith(a + "/") for a in files for b in files):
        return
    n = len(store.versions("prop"))
    version = f"p{n}"
    store.publish("prop", version, files)
    out = store.fetch("prop", version, tmp_path / "prop-cache")
    for path, data in files.items():
        assert (out / path).read_bytes() == data
    info = store.info("prop", version)
    assert set(info.files) == set(files)
    assert info.size == sum(map(len, files.values()))
