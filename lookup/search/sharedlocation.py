"""A search index's versions in a shared version store (``postgresql://…``): no shared disk.

:class:`SharedIndexLocation` is an :class:`~lookup.search.location.IndexLocation` over a
:class:`~lookup.kit.versionstore.VersionStore`. A published index version is the
version ``vNNNNNN`` of the line ``search/index``: its files are the segment files and
tombstones its manifest names (under ``shard-NN/…``, stored as content-addressed chunks
with their SHA-256, so a segment two versions share is stored once), and its metadata
holds the manifest itself (with its checksum). Publishing stores the files and swaps the
line's ``current`` pointer in one transaction (PostgreSQL announces it by ``NOTIFY``);
the pointer's ``previous`` is the rollback target. A candidate refused by validation is
kept on the line ``search/index-rejected`` (its record and manifest, no files), never
activated.

``path`` is this process's **local copy**, laid out like an index directory
(``shard-NN/seg-…``): the indexer writes new segments there before it publishes them,
and :meth:`~SharedIndexLocation.open` fetches the live version's missing files into it
(every chunk checked against its checksum, through the store's local cache in
``path/.versions``, hard-linked when it can be) and maps them from there. The one-writer
lock is a PostgreSQL advisory lock (a file lock for a store that is a directory).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from lookup.errors import Conflict, NotBuilt
from lookup.kit.versionstore import ChecksumError, Pointer, VersionStore, open_version_store
from lookup.kit.versionstore.cache import LocalCache, place_file
from lookup.search import manifest as manifests
from lookup.search.analysis import ANALYSIS_VERSION
from lookup.search.manifest import Manifest, shard_dir
from lookup.search.shard import IndexVersion

__all__ = ["LINE", "SharedIndexLocation", "default_cache_dir"]

#: The version-store line of the served index (refused candidates: ``LINE + "-rejected"``).
LINE = "search/index"
#: The local version cache inside ``path`` (the store's chunks and assembled versions).
CACHE = ".versions"


def default_cache_dir(url: str) -> Path:
    """A local copy of this user's under the system's temporary directory, one per store."""
    key = hashlib.sha256(url.encode()).hexdigest()[:12]
    return Path(tempfile.gettempdir()) / f"lookup-index-cache-{os.getuid()}" / key


def _name(version: int) -> str:
    return f"v{version:06d}"


def _number(name: str | None) -> int | None:
    if name is None or not name.startswith("v") or not name[1:].isdigit():
        return None
    return int(name[1:])


def _token(name: str | None) -> str | None:
    number = _number(name)
    return manifests.manifest_name(number) if number is not None else None


class SharedIndexLocation:
    """Index versions in a version store, served from a local copy (module docstring)."""

    def __init__(
        self,
        store: VersionStore,
        path: str | os.PathLike[str],
        *,
        line: str = LINE,
        lock_url: str | None = None,
    ) -> None:
        self.store = store
        self.path = Path(path)
        self.line = line
        self.rejected_line = f"{line}-rejected"
        #: A ``postgresql://`` URL whose advisory lock is the writer lock (None: a file lock
        #: in ``path``, for a store only this machine writes).
        self.lock_url = lock_url

    @classmethod
    def from_url(
        cls, url: str, *, cache_dir: str | os.PathLike[str] | None = None, line: str = LINE
    ) -> SharedIndexLocation:
        """The index in the version store ``url`` names, copied into ``cache_dir``."""
        scheme = url.split(":", 1)[0].lower()
        pg = scheme in ("postgresql", "postgres")
        local = Path(cache_dir) if cache_dir is not None else default_cache_dir(url)
        return cls(open_version_store(url), local, line=line, lock_url=url if pg else None)

    def __repr__(self) -> str:
        return f"SharedIndexLocation({self.store.describe()!r}, {str(self.path)!r})"

    # -- pointers and manifests

    def _pointer(self) -> Pointer:
        return self.store.pointer(self.line)

    def current_token(self) -> str | None:
        """``manifest-NNNNNN.json`` of the live version (one pointer read)."""
        return _token(self._pointer().current)

    def previous_token(self) -> str | None:
        """``manifest-NNNNNN.json`` of the rollback target."""
        return _token(self._pointer().previous)

    def wait(self, seen: str | None, timeout: float) -> str | None:
        """The live token as soon as it differs from ``seen`` (``LISTEN`` on PostgreSQL),
        or after ``timeout`` seconds as it is then."""
        pointer = self.store.wait(self.line, None, 0)
        while _token(pointer.current) == seen and timeout > 0:
            step = min(timeout, 5.0)
            timeout -= step
            pointer = self.store.wait(self.line, pointer.serial, step)
        return _token(pointer.current)

    def versions(self) -> list[int]:
        """The stored versions, oldest first."""
        return sorted(n for v in self.store.versions(self.line) if (n := _number(v)) is not None)

    def manifest(self, version: int) -> Manifest:
        """A stored version's manifest (from its metadata; checksum checked)."""
        try:
            info = self.store.info(self.line, _name(version))
        except LookupError:
            raise KeyError(f"version {version} is not kept in {self.store.describe()}") from None
        return self._parse(info.meta.get("manifest"), version)

    def _parse(self, data: Any, version: int) -> Manifest:
        where = f"{self.store.describe()} {self.line} {_name(version)}"
        try:
            if not isinstance(data, dict):
                raise ValueError("the version has no manifest")
            return Manifest.from_json(data)
        except (ValueError, KeyError, TypeError) as exc:
            raise manifests.damaged(Path(where), str(exc), self.path) from None

    def current(self) -> Manifest | None:
        """The live manifest, its files fetched into ``path`` (so a build can read them)."""
        number = _number(self._pointer().current)
        if number is None:
            return None
        manifest = self.manifest(number)
        self._materialize(manifest)
        return manifest

    # -- the local copy

    def _files(self, manifest: Manifest) -> dict[str, Path]:
        """Relative path → local path of every file the manifest names."""
        out: dict[str, Path] = {}
        for shard, entries in enumerate(manifest.segments):
            folder = shard_dir(self.path, shard)
            for e in entries:
                names = [e.name] + ([e.tombstones] if e.tombstones else [])
                for name in names:
                    local = folder / name
                    if not local.exists():
                        raise FileNotFoundError(f"{local} is named by version {manifest.version}")
                    found = sorted(p for p in local.rglob("*") if p.is_file())
                    for p in found if local.is_dir() else [local]:
                        out[p.relative_to(self.path).as_posix()] = p
        return out

    def materialize(self, manifest: Manifest) -> None:
        """Fetch one version's files into ``path`` (checked), so any kept version — not
        only the current one — can be opened there (a rolling activation's canary)."""
        self._materialize(manifest)

    def _materialize(self, manifest: Manifest) -> None:
        """Fetch the files of ``manifest`` that ``path`` lacks (checked) and link them in."""
        name = _name(manifest.version)
        files = self.store.info(self.line, name).files
        missing = tuple(
            rel
            for rel, entry in files.items()
            if not ((self.path / rel).is_file() and (self.path / rel).stat().st_size == entry.size)
        )
        if not missing:
            return
        try:
            fetched = self.store.fetch(self.line, name, self.path / CACHE, only=missing)
        except ChecksumError as exc:
            where = f"{self.store.describe()} {self.line} {name}"
            raise manifests.damaged(where, str(exc), self.path) from None
        for rel in missing:
            place_file(fetched / rel, self.path / rel)

    # -- writing

    def publish(self, manifest: Manifest) -> None:
        """Store the manifest's files from ``path`` and make it live in one step."""
        body = manifests.manifest_bytes(manifest)
        self.store.publish(
            self.line,
            _name(manifest.version),
            self._files(manifest),
            {"manifest": json.loads(body)},
            activate=True,
        )

    def rollback(self) -> tuple[int, int]:
        """Point ``current`` back at ``previous`` (refused while a writer works)."""
        try:
            with self.writer():
                pointer = self._pointer()
                live = _number(pointer.current)
                if live is None:
                    raise NotBuilt(
                        f"no search index in {self.store.describe()}; build one with "
                        "`lookup index CRAWL_DIR`",
                        command="lookup index CRAWL_DIR",
                    )
                target = _number(pointer.previous)
                if target is None or target == live:
                    raise Conflict(
                        f"index version {live} is live and there is no previous version to "
                        "roll back to (a rollback needs a version published before it)",
                        code="NO_PREVIOUS",
                    )
                try:
                    self.store.activate(self.line, _name(target))
                except LookupError:
                    raise Conflict(
                        f"the previous index version {target} is no longer kept in "
                        f"{self.store.describe()}",
                        code="NO_PREVIOUS",
                    ) from None
                return target, live
        except RuntimeError as exc:
            if isinstance(exc, NotBuilt):
                raise
            raise Conflict(f"{exc}; roll back after it", code="INDEX_BUSY") from None

    def reject(self, manifest: Manifest, reason: dict[str, Any]) -> None:
        """Keep the record on the rejected line (newest ``REJECTED_KEEP``); never live."""
        record = {"version": manifest.version, **reason}
        body = json.loads(manifests.manifest_bytes(manifest))
        meta = {"record": json.loads(json.dumps(record, default=str)), "manifest": body}
        name = _name(manifest.version)
        if name not in self.store.versions(self.rejected_line):
            self.store.publish(self.rejected_line, name, {}, meta)
        self.store.gc(self.rejected_line, manifests.REJECTED_KEEP)

    def rejected(self) -> list[int]:
        """Refused versions whose record is kept, oldest first."""
        found = self.store.versions(self.rejected_line)
        return sorted(n for v in found if (n := _number(v)) is not None)

    def rejection(self, version: int) -> dict[str, Any]:
        """A refused version's record (without its manifest)."""
        try:
            info = self.store.info(self.rejected_line, _name(version))
        except LookupError:
            raise KeyError(f"no rejected version {version}") from None
        record = info.meta.get("record")
        return dict(record) if isinstance(record, dict) else {"version": version, "checks": []}

    def collect_garbage(self, keep_versions: int = 2) -> list[str]:
        """Drop stored versions beyond the newest ``keep_versions`` (never the live one nor,
        keeping more than one, the rollback target — so the versions between them stay
        too), the chunks nothing names, and the local files no kept version names."""
        pointer = self._pointer()
        stored = self.store.versions(self.line)
        pinned = {pointer.current} | ({pointer.previous} if keep_versions > 1 else set())
        oldest = min((stored.index(v) for v in pinned if v in stored), default=len(stored))
        keep = max(1, keep_versions, len(stored) - oldest)
        removed = [
            manifests.manifest_name(n)
            for v in self.store.gc(self.line, keep)
            if (n := _number(v)) is not None
        ]
        kept = self.store.versions(self.line)
        wanted: set[Path] = set()
        for v in kept:
            try:
                files = self.store.info(self.line, v).files
            except LookupError:
                continue
            wanted.update(self.path / rel for rel in files)
        for sdir in self.path.glob("shard-*"):
            if not sdir.is_dir():
                continue
            for p in sorted(sdir.iterdir()):
                inner = [f for f in p.rglob("*") if f.is_file()] if p.is_dir() else [p]
                if any(f in wanted for f in inner):
                    continue
                if p.is_dir():
                    shutil.rmtree(p, ignore_errors=True)
                else:
                    p.unlink(missing_ok=True)
                removed.append(str(p.relative_to(self.path)))
            if not any(sdir.iterdir()):
                sdir.rmdir()
        LocalCache(self.path / CACHE, self.store.describe()).evict(self.line, kept)
        return removed

    @contextmanager
    def writer(self) -> Iterator[None]:
        """The one-writer lock: a session advisory lock on PostgreSQL (a file lock in
        ``path`` otherwise); ``RuntimeError`` when another writer holds it."""
        busy = RuntimeError(
            f"another `lookup index` is writing {self.store.describe()} {self.line}; "
            "wait for it to finish"
        )
        if self.lock_url is None:
            self.path.mkdir(parents=True, exist_ok=True)
            with (self.path / "write.lock").open("a") as f:
                try:
                    fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    raise busy from None
                try:
                    yield
                finally:
                    fcntl.flock(f.fileno(), fcntl.LOCK_UN)
            return
        from lookup.kit.engines.postgres import connect

        key = f"lookup.search.writer:{self.line}"
        with connect(self.lock_url, autocommit=True) as conn:
            row = conn.execute(
                "SELECT pg_try_advisory_lock(hashtextextended(%s, 0))", (key,)
            ).fetchone()
            if not row or not row[0]:
                raise busy
            try:
                yield
            finally:
                conn.execute("SELECT pg_advisory_unlock(hashtextextended(%s, 0))", (key,))

    # -- serving

    def open(self) -> IndexVersion | None:
        """The live version, its files fetched (checked) into ``path`` and mapped."""
        manifest = self.current()
        if manifest is None:
            return None
        if manifest.analysis != ANALYSIS_VERSION:
            raise manifests.outdated(manifest, self.path)
        return IndexVersion(self.path, manifest)

    def close(self) -> None:
        """Let go of the store's connections."""
        self.store.close()
