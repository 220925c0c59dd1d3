"""Where a search index's published versions live: the ``CURRENT`` token, the manifests.

:class:`IndexLocation` names what the indexer and the live service ask of it: which
version is live (cheap to poll), every published version, publishing a new one
(an atomic swap of ``CURRENT``), rolling back to the version live before (``PREVIOUS``),
keeping a refused candidate's record aside, dropping files no kept version names, the
one-writer lock, and opening the live version for queries. :class:`DirectoryIndexLocation` is the
embedded implementation (a directory of immutable files, see
:mod:`lookup.search.manifest`); :func:`open_index_location` picks one from a path, a
``file:///`` URL or a shared store's URL (:data:`BACKENDS`: ``postgresql://…`` is
:class:`~lookup.search.sharedlocation.SharedIndexLocation`).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any, Protocol, cast, runtime_checkable
from urllib.parse import unquote, urlsplit

from lookup.errors import Damaged
from lookup.kit.registry import load_backend
from lookup.search import manifest as manifests
from lookup.search.manifest import Manifest
from lookup.search.shard import IndexVersion

__all__ = [
    "BACKENDS",
    "DirectoryIndexLocation",
    "IndexLocation",
    "describe_versions",
    "index_location",
    "open_index_location",
]


@runtime_checkable
class IndexLocation(Protocol):
    """The published versions of one search index."""

    #: The directory the segment files of every version live in (the readers map them).
    path: Path

    def current_token(self) -> str | None:
        """A short name of the live version (changes on every publish), or None."""
        ...

    def current(self) -> Manifest | None:
        """The live version's manifest, or None if nothing is published."""
        ...

    def versions(self) -> list[int]:
        """Every published version still kept, oldest first."""
        ...

    def manifest(self, version: int) -> Manifest:
        """The manifest of a kept version (``KeyError`` when it is not kept)."""
        ...

    def publish(self, manifest: Manifest) -> None:
        """Store ``manifest`` and make it the live version in one atomic step."""
        ...

    def previous_token(self) -> str | None:
        """The short name of the version live before the last swap (the rollback target)."""
        ...

    def rollback(self) -> tuple[int, int]:
        """Make the previous version live again in one atomic step; ``(now live, was live)``
        (``Conflict`` ``NO_PREVIOUS`` / ``INDEX_BUSY``, ``NotBuilt``)."""
        ...

    def reject(self, manifest: Manifest, reason: dict[str, Any]) -> None:
        """Keep a candidate refused by validation aside with the reasons (never live)."""
        ...

    def rejected(self) -> list[int]:
        """Versions refused by validation whose record is kept, oldest first."""
        ...

    def rejection(self, version: int) -> dict[str, Any]:
        """The record of a refused version: when, why, each check (``KeyError`` if none)."""
        ...

    def collect_garbage(self, keep_versions: int = 2) -> list[str]:
        """Drop the versions and files that the newest ``keep_versions`` do not name."""
        ...

    def writer(self) -> AbstractContextManager[None]:
        """Hold the one-writer lock (``RuntimeError`` when another writer holds it)."""
        ...

    def open(self) -> IndexVersion | None:
        """The live version opened for queries, or None if nothing is published."""
        ...


class DirectoryIndexLocation:
    """An index directory: ``manifest-NNNNNN.json`` files, ``CURRENT`` and ``shard-NN/``."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)

    def __repr__(self) -> str:
        return f"DirectoryIndexLocation({str(self.path)!r})"

    def current_token(self) -> str | None:
        """The name of the live manifest (one small file read)."""
        return manifests.current_token(self.path)

    def current(self) -> Manifest | None:
        """The live manifest, or None."""
        return manifests.current_manifest(self.path)

    def versions(self) -> list[int]:
        """The versions whose manifest files are present, oldest first."""
        if not self.path.is_dir():
            return []
        return sorted(
            int(m.group(1)) for p in self.path.iterdir() if (m := manifests.MANIFEST.match(p.name))
        )

    def manifest(self, version: int) -> Manifest:
        """Read a kept version's manifest."""
        try:
            return manifests.read_manifest(self.path / manifests.manifest_name(version), self.path)
        except FileNotFoundError:
            raise KeyError(f"version {version} is not kept in {self.path}") from None

    def publish(self, manifest: Manifest) -> None:
        """Write the manifest, then point ``CURRENT`` at it (``os.replace``)."""
        self.path.mkdir(parents=True, exist_ok=True)
        manifests.publish(self.path, manifest)

    def previous_token(self) -> str | None:
        """The name of the manifest ``PREVIOUS`` points at."""
        return manifests.previous_token(self.path)

    def rollback(self) -> tuple[int, int]:
        """Swap ``CURRENT`` back to ``PREVIOUS`` (and ``PREVIOUS`` to what was live)."""
        return manifests.rollback(self.path)

    def reject(self, manifest: Manifest, reason: dict[str, Any]) -> None:
        """Write ``rejected/version-NNNNNN.json``."""
        manifests.reject(self.path, manifest, reason)

    def rejected(self) -> list[int]:
        """The versions with a record in ``rejected/``."""
        return manifests.rejected_versions(self.path)

    def rejection(self, version: int) -> dict[str, Any]:
        """Read ``rejected/version-NNNNNN.json`` (without the manifest)."""
        return manifests.rejection(self.path, version)

    def collect_garbage(self, keep_versions: int = 2) -> list[str]:
        """Delete manifests and segment files the newest ``keep_versions`` do not name."""
        return manifests.collect_garbage(self.path, keep_versions)

    @contextmanager
    def writer(self) -> Iterator[None]:
        """The directory's exclusive writer lock (``flock``; readers never take it)."""
        with manifests.writer_lock(self.path):
            yield

    def open(self) -> IndexVersion | None:
        """The live version mapped for queries."""
        return IndexVersion.open(self.path)


#: Index locations in a shared store, by URL scheme (``"module:Class"`` with a
#: ``from_url(url, cache_dir=…)``), imported when a URL names the scheme; a plain path and
#: ``file:///`` are the embedded :class:`DirectoryIndexLocation`.
BACKENDS: dict[str, str] = {
    "postgresql": "lookup.search.sharedlocation:SharedIndexLocation",
}


def open_index_location(
    where: str | os.PathLike[str] | IndexLocation,
    *,
    cache_dir: str | os.PathLike[str] | None = None,
) -> IndexLocation:
    """The index location ``where`` names: a directory path, a ``file:///`` URL, or a
    shared store (``postgresql://…``) whose versions are copied into ``cache_dir`` (the
    local directory the segments are written to and mapped from; default: one under the
    system's temporary directory).

    A location passes through unchanged. An unknown scheme raises ValueError naming
    the accepted ones.
    """
    if isinstance(where, IndexLocation):
        return where
    text = os.fspath(where)
    head = text.split("/", 1)[0]
    if "://" not in text and ":" not in head:
        return DirectoryIndexLocation(text)
    parts = urlsplit(text)
    scheme = parts.scheme.lower()
    if scheme == "file" and parts.path and parts.netloc in ("", "localhost"):
        return DirectoryIndexLocation(unquote(parts.path))
    scheme = "postgresql" if scheme == "postgres" else scheme
    if scheme in BACKENDS:
        found = load_backend(BACKENDS, scheme)
        return cast(IndexLocation, found.from_url(text, cache_dir=cache_dir))
    raise ValueError(
        f"unsupported index location {text!r}; expected one of: a directory path, "
        "file:///path/to/dir, postgresql://USER@HOST/DB"
    )


def index_location(local_dir: str | os.PathLike[str], store: str | None = None) -> IndexLocation:
    """Where an index lives for a process whose own index directory is ``local_dir``: the
    shared ``store`` (``search_index_store``) copied into ``local_dir`` when one is set,
    else ``local_dir`` itself."""
    chosen = (store or "").strip()
    if not chosen:
        return DirectoryIndexLocation(local_dir)
    return open_index_location(chosen, cache_dir=local_dir)


def describe_versions(location: IndexLocation) -> dict[str, Any]:
    """The live version, the rollback target, every kept version and the rejected ones
    with their reasons — what ``GET /search/versions`` and ``lookup index versions`` show."""
    live = manifests.version_of(location.current_token())
    previous = manifests.version_of(location.previous_token())
    kept = []
    for v in location.versions():
        try:
            m = location.manifest(v)
        except (KeyError, Damaged) as exc:
            kept.append({"version": v, "state": "damaged", "problem": str(exc)})
            continue
        state = "live" if v == live else "previous" if v == previous else "kept"
        kept.append(
            {
                "version": v,
                "state": state,
                "liveDocs": m.live_docs,
                "shards": m.shards,
                "createdAt": m.created_at,
                "watermark": m.watermark,
                "canaries": [c.get("query", "") for c in m.canaries],
            }
        )
    rejected = []
    for v in reversed(location.rejected()):
        try:
            record = location.rejection(v)
        except KeyError:
            continue
        rejected.append(
            {
                "version": v,
                "rejectedAt": record.get("rejectedAt"),
                "live": record.get("live"),
                "reason": record.get("reason", ""),
                "checks": record.get("checks", []),
            }
        )
    return {"live": live, "previous": previous, "versions": kept, "rejected": rejected}
