"""The contract of :class:`lookup.kit.snapshots.SnapshotStore`, run against every implementation.

Written once; an implementation joins by adding a :class:`Harness` factory to
``IMPLEMENTATIONS`` (the typeahead's directory of trie files, and every backend of the
model store). A harness knows how to build a candidate snapshot for its system, which
names and versions are valid there, and how to open the store again from its URL.

The model store's backends come from its registry (:data:`lookup.kit.modelstore.BACKENDS`):
a new backend registers its scheme there, says in ``MODEL_FRESH`` how to get a fresh,
empty store of it, and must pass this contract and the model half at the end unchanged.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from lookup.kit import modelstore
from lookup.kit.snapshots import SnapshotStore
from tests.contracts.seams import (
    Fresh,
    check_port_imports_no_backend,
    check_registered,
    fresh_url,
)


@dataclass
class Harness:
    """One implementation under test."""

    store: SnapshotStore[Any]
    #: build a candidate snapshot file of ``name`` at ``version`` (outside the store)
    candidate: Callable[[str, str], Path]
    #: the version an opened snapshot is
    version_of: Callable[[Any], str]
    #: the same store opened again from its URL (a new instance, same location)
    reopen: Callable[[], SnapshotStore[Any]]
    names: tuple[str, str]
    versions: tuple[str, ...]  # valid versions, ascending, at least six


#: How an implementation's harness is made: from the test's request (for the fixtures of a
#: real server) and a temp dir.
MakeHarness = Callable[[pytest.FixtureRequest, Path], Harness]


def typeahead_directory(request: pytest.FixtureRequest, tmp_path: Path) -> Harness:
    from lookup.typeahead.snapshot import Snapshot, open_snapshot_store, write_snapshot
    from lookup.typeahead.trie import RadixTrie

    staging = tmp_path / "staging"
    staging.mkdir()
    url = (tmp_path / "snapshots").as_uri()

    def candidate(name: str, version: str) -> Path:
        strings = [f"{version[-6:]} query {i}" for i in range(20)]
        trie = RadixTrie()
        for i, s in enumerate(strings):
            trie.add(s, i)
        scores = np.arange(len(strings), 0, -1, dtype=float)
        return write_snapshot(
            staging / f"{name}-{version}.trie", name, trie.build(), strings, scores,
            version=version,
        )  # fmt: skip

    def version_of(snap: Snapshot) -> str:
        return snap.version

    return Harness(
        store=open_snapshot_store(url, keep=3),
        candidate=candidate,
        version_of=version_of,
        reopen=lambda: open_snapshot_store(url, keep=3),
        names=("en-IN", "hi-IN"),
        versions=tuple(f"202601{d:02d}T000000Z-{d:06x}" for d in range(1, 9)),
    )


def typeahead_shared(request: pytest.FixtureRequest, tmp_path: Path) -> Harness:
    """The typeahead's snapshots in the shared version store (``postgresql://``)."""
    from dataclasses import replace

    from lookup.typeahead.snapshot import open_snapshot_store

    url = str(request.getfixturevalue("postgres_db"))
    return replace(
        typeahead_directory(request, tmp_path),
        store=open_snapshot_store(url, keep=3),
        reopen=lambda: open_snapshot_store(url, keep=3),
    )


#: scheme -> how to get the URL of a fresh, empty model store: a function of a temp dir,
#: or the name of the fixture that gives one on a real server.
MODEL_FRESH: dict[str, Fresh] = {"file": lambda tmp: (tmp / "models").as_uri()}


def model_store(scheme: str) -> MakeHarness:
    """The harness of the model store's ``scheme`` backend: one JSON file per version."""

    def harness(request: pytest.FixtureRequest, tmp_path: Path) -> Harness:
        import json

        recipe = MODEL_FRESH.get(scheme)
        if recipe is None:
            pytest.fail(f"{scheme!r} is registered: say in MODEL_FRESH how to get a fresh one")
        url = str(request.getfixturevalue(recipe)) if isinstance(recipe, str) else recipe(tmp_path)
        staging = tmp_path / "staging"
        staging.mkdir()

        def candidate(name: str, version: str) -> Path:
            path = staging / f"{name}-{version}.json"
            path.write_text(json.dumps({"version": version}))
            return path

        return Harness(
            store=modelstore.open_model_store(url),
            candidate=candidate,
            version_of=lambda data: data["version"],
            reopen=lambda: modelstore.open_model_store(url),
            names=("places", "search"),
            versions=tuple(f"v{d:06d}" for d in range(1, 9)),
        )

    return harness


IMPLEMENTATIONS: dict[str, MakeHarness] = {
    "typeahead-directory": typeahead_directory,
    "typeahead-postgresql": typeahead_shared,
    **{f"model-{scheme}": model_store(scheme) for scheme in modelstore.BACKENDS},
}


@pytest.fixture(params=sorted(IMPLEMENTATIONS))
def h(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Harness]:
    yield IMPLEMENTATIONS[request.param](request, tmp_path)


def publish(h: Harness, name: str, version: str) -> None:
    h.store.publish(name, version, h.candidate(name, version))


def test_an_empty_store_has_nothing_to_serve(h: Harness) -> None:
    a = h.names[0]
    assert h.store.names() == []
    assert h.store.versions(a) == []
    assert h.store.current(a) is None
    assert h.store.open(a) is None
    with pytest.raises(LookupError):
        h.store.rollback(a)
    with pytest.raises(LookupError):
        h.store.activate(a, h.versions[0])


def test_publish_makes_a_version_current(h: Harness) -> None:
    a, v = h.names[0], h.versions[0]
    source = h.candidate(a, v)
    h.store.publish(a, v, source)
    assert not source.exists()  # moved in, not copied
    assert h.store.names() == [a]
    assert h.store.versions(a) == [v]
    assert h.store.current(a) == v
    assert h.version_of(h.store.open(a)) == v


def test_versions_are_listed_oldest_first_and_the_newest_publish_is_current(h: Harness) -> None:
    a = h.names[0]
    for v in h.versions[:3]:
        publish(h, a, v)
    assert h.store.versions(a) == list(h.versions[:3])
    assert h.store.current(a) == h.versions[2]
    for v in h.versions[:3]:
        assert h.version_of(h.store.open(a, v)) == v


def test_activate_swaps_to_a_stored_version(h: Harness) -> None:
    a = h.names[0]
    for v in h.versions[:2]:
        publish(h, a, v)
    h.store.activate(a, h.versions[0])
    assert h.store.current(a) == h.versions[0]
    assert h.version_of(h.store.open(a)) == h.versions[0]
    with pytest.raises(LookupError):
        h.store.activate(a, h.versions[5])  # never stored
    assert h.store.current(a) == h.versions[0]
    with pytest.raises(LookupError):
        h.store.open(a, h.versions[5])


def test_rollback_undoes_the_last_swap(h: Harness) -> None:
    a = h.names[0]
    publish(h, a, h.versions[0])
    with pytest.raises(LookupError):
        h.store.rollback(a)  # one version: nothing to go back to
    publish(h, a, h.versions[1])
    assert h.store.rollback(a) == h.versions[0]
    assert h.store.current(a) == h.versions[0]
    assert h.store.rollback(a) == h.versions[1]  # undoing the rollback
    h.store.activate(a, h.versions[0])
    publish(h, a, h.versions[2])
    assert h.store.rollback(a) == h.versions[0]  # the one current before, not the one below


def test_names_are_independent(h: Harness) -> None:
    a, b = h.names
    publish(h, a, h.versions[0])
    publish(h, a, h.versions[1])
    publish(h, b, h.versions[2])
    assert h.store.names() == sorted([a, b])
    h.store.activate(a, h.versions[0])
    assert h.store.current(b) == h.versions[2]
    assert h.store.versions(b) == [h.versions[2]]
    with pytest.raises(LookupError):
        h.store.rollback(b)


def test_a_rejected_candidate_is_never_served(h: Harness) -> None:
    a = h.names[0]
    publish(h, a, h.versions[0])
    source = h.candidate(a, h.versions[1])
    h.store.reject(a, h.versions[1], source, {"ok": False, "checks": ["size"]})
    assert not source.exists()
    assert h.store.versions(a) == [h.versions[0]]
    assert h.store.current(a) == h.versions[0]
    with pytest.raises(LookupError):
        h.store.activate(a, h.versions[1])


def test_retention_never_drops_the_current_version(h: Harness) -> None:
    a = h.names[0]
    for v in h.versions:
        publish(h, a, v)
        kept = h.store.versions(a)
        assert h.store.current(a) == v and v in kept
        for w in kept:
            assert h.version_of(h.store.open(a, w)) == w
    assert h.store.versions(a)[-1] == h.versions[-1]


def test_an_opened_snapshot_outlives_a_swap(h: Harness) -> None:
    a = h.names[0]
    publish(h, a, h.versions[0])
    before = h.store.open(a)
    publish(h, a, h.versions[1])
    assert h.version_of(before) == h.versions[0]  # immutable: readers finish on theirs
    assert h.version_of(h.store.open(a)) == h.versions[1]


def test_the_state_is_durable_across_instances(h: Harness) -> None:
    a = h.names[0]
    publish(h, a, h.versions[0])
    publish(h, a, h.versions[1])
    again = h.reopen()
    assert again.current(a) == h.versions[1]
    assert again.versions(a) == h.store.versions(a)
    assert again.rollback(a) == h.versions[0]
    assert h.store.current(a) == h.versions[0]


def test_an_unknown_url_scheme_is_refused_naming_the_accepted_ones(tmp_path: Path) -> None:
    from lookup.kit.snapshots import snapshot_directory

    assert snapshot_directory((tmp_path / "x").as_uri()) == tmp_path / "x"
    assert snapshot_directory(os.fspath(tmp_path / "x")) == tmp_path / "x"
    for bad in ("memory:", "sqlite:///x.db", "redis://localhost/0", "file:///"):
        with pytest.raises(ValueError, match="file:///"):
            snapshot_directory(bad)


# -- the model store: its registry, and what it adds to the snapshot store ----------------


@pytest.fixture(params=list(modelstore.BACKENDS))
def models(request: pytest.FixtureRequest, tmp_path: Path) -> modelstore.ModelStore:
    return modelstore.open_model_store(fresh_url(request, tmp_path, MODEL_FRESH))


def test_every_registered_backend_is_a_model_store() -> None:
    check_registered(modelstore.BACKENDS, modelstore.backend, modelstore.ModelStore)


def test_the_model_store_port_imports_no_backend() -> None:
    """``lookup.kit.modelstore`` names its backends; it imports one only when a URL asks
    (nor the learner, numpy with it)."""
    check_port_imports_no_backend("lookup.kit.modelstore", ("lookup.kit.ltr", "numpy"))


def test_the_model_store_factory_takes_a_plain_path_and_refuses_other_schemes(
    tmp_path: Path,
) -> None:
    store = modelstore.open_model_store(tmp_path / "models")
    assert isinstance(store, modelstore.ModelStore)
    for bad in ("memory:", "redis://localhost/0"):
        with pytest.raises(ValueError, match="file:///"):
            modelstore.open_model_store(bad)


def _model_file(tmp_path: Path, version: str) -> Path:
    import json

    path = tmp_path / f"candidate-{version}.json"
    path.write_text(json.dumps({"version": version}))
    return path


def test_the_current_token_names_the_served_version_after_every_swap(
    models: modelstore.ModelStore, tmp_path: Path
) -> None:
    assert models.current_token("places") is None
    for v in ("v000001", "v000002"):
        models.publish("places", v, _model_file(tmp_path, v))
        token = models.current_token("places")
        assert token is not None and token[0] == v
    assert models.rollback("places") == "v000001"
    token = models.current_token("places")
    assert token is not None and token[0] == "v000001"
    models.activate("places", "v000002")
    token = models.current_token("places")
    assert token is not None and token[0] == "v000002"


def test_the_next_version_follows_every_stored_and_rejected_one(
    models: modelstore.ModelStore, tmp_path: Path
) -> None:
    assert models.next_version("search") == "v000001"
    models.publish("search", "v000001", _model_file(tmp_path, "v000001"))
    assert models.next_version("search") == "v000002"
    models.reject("search", "v000002", _model_file(tmp_path, "v000002"), {"why": "worse"})
    assert models.next_version("search") == "v000003"
    assert models.current("search") == "v000001"
