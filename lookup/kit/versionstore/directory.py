"""The embedded version store: a directory of chunk files and JSON manifests.

Layout under the root::

    chunks/<sha[:2]>/<sha256>               every stored chunk, named by its content
    lines/<line, quoted>/<version>.json     a version's manifest (files, metadata, order)
    lines/<line, quoted>/POINTER            {"current", "previous", "serial"}

Every file is written to a temporary name and renamed into place, so a reader sees a
whole manifest or none, and the old pointer or the new one. A swap reads and rewrites
the pointer under an exclusive ``flock`` of the line; publishing holds a shared lock
of the store and :meth:`~DirectoryVersionStore.gc` an exclusive one, so a collection
never deletes a chunk a publish is about to refer to. :meth:`~DirectoryVersionStore.wait`
polls the pointer.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

from lookup.kit.engines.storeurl import StoreUrl
from lookup.kit.snapshots import snapshot_directory
from lookup.kit.versionstore import (
    FileEntry,
    FileSource,
    Pointer,
    VersionInfo,
    check_line,
    check_path,
    check_version,
)
from lookup.kit.versionstore.cache import CHUNK_SIZE, LocalCache, chunked, entry_of

__all__ = ["DirectoryVersionStore"]

#: Seconds between two reads of a pointer while :meth:`DirectoryVersionStore.wait` waits.
POLL_S = 0.1


def _write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class DirectoryVersionStore:
    """Versions as chunk files and manifests under one directory (see the module docstring)."""

    def __init__(self, root: str | os.PathLike[str], *, chunk_size: int = CHUNK_SIZE) -> None:
        self.root = Path(root)
        self.chunk_size = chunk_size

    @classmethod
    def from_url(cls, url: StoreUrl, **options: Any) -> DirectoryVersionStore:
        """The store at ``file:///dir`` (or a plain path)."""
        return cls(snapshot_directory(url.url), **options)

    # -- layout

    def _line_dir(self, line: str) -> Path:
        return self.root / "lines" / quote(check_line(line), safe="")

    def _manifest(self, line: str, version: str) -> Path:
        return self._line_dir(line) / f"{check_version(version)}.json"

    def _chunk(self, sha: str) -> Path:
        return self.root / "chunks" / sha[:2] / sha

    @contextmanager
    def _lock(self, path: Path, mode: int) -> Iterator[None]:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a+b") as f:
            fcntl.flock(f.fileno(), mode)
            try:
                yield
            finally:
                fcntl.flock(f.fileno(), fcntl.LOCK_UN)

    # -- reading

    def lines(self) -> list[str]:
        """Lines with at least one stored version."""
        base = self.root / "lines"
        if not base.is_dir():
            return []
        return sorted(
            unquote(d.name) for d in base.iterdir() if d.is_dir() and any(d.glob("*.json"))
        )

    def _load(self, line: str, version: str) -> dict[str, Any]:
        try:
            body: dict[str, Any] = json.loads(self._manifest(line, version).read_text())
        except FileNotFoundError:
            raise LookupError(f"{line} has no version {version}") from None
        return body

    def versions(self, line: str) -> list[str]:
        """Stored versions, first published first."""
        d = self._line_dir(line)
        if not d.is_dir():
            return []
        found = []
        for f in d.glob("*.json"):
            try:
                found.append((int(json.loads(f.read_text())["seq"]), f.name[:-5]))
            except (OSError, ValueError, KeyError):
                continue  # dropped while listing
        return [v for _, v in sorted(found)]

    def info(self, line: str, version: str) -> VersionInfo:
        """A stored version's manifest."""
        body = self._load(line, version)
        files = {p: FileEntry.from_dict(e) for p, e in body["files"].items()}
        return VersionInfo(line, version, float(body["created"]), dict(body["meta"]), files)

    def pointer(self, line: str) -> Pointer:
        """The line's pointer file, or an empty pointer."""
        try:
            body = json.loads((self._line_dir(line) / "POINTER").read_text())
        except FileNotFoundError:
            return Pointer(None, None, 0)
        return Pointer(body.get("current"), body.get("previous"), int(body.get("serial", 0)))

    def current(self, line: str) -> str | None:
        """The version served for ``line``."""
        return self.pointer(line).current

    # -- writing

    def publish(
        self,
        line: str,
        version: str,
        files: Mapping[str, FileSource],
        meta: Mapping[str, Any] | None = None,
        *,
        activate: bool = False,
    ) -> VersionInfo:
        """Write the chunks not stored yet, then the manifest (then swap, if asked)."""
        manifest = self._manifest(line, version)
        entries: dict[str, FileEntry] = {}
        with self._lock(self.root / ".gc.lock", fcntl.LOCK_SH):
            if manifest.exists():
                raise ValueError(f"{line} {version} is stored already; versions are never reused")
            for path, source in files.items():
                check_path(path)
                whole = hashlib.sha256()
                parts: list[tuple[str, int]] = []
                for sha, data in chunked(source, self.chunk_size):
                    whole.update(data)
                    parts.append((sha, len(data)))
                    if not self._chunk(sha).exists():
                        _write(self._chunk(sha), data)
                entries[path] = entry_of(parts, whole.hexdigest())
            created = time.time()
            body = {"version": version, "seq": time.time_ns(), "created": created,
                    "meta": dict(meta or {}),
                    "files": {p: e.to_dict() for p, e in entries.items()}}  # fmt: skip
            _write(manifest, json.dumps(body).encode())
        if activate:
            self.activate(line, version)
        return VersionInfo(line, version, created, dict(meta or {}), entries)

    def activate(self, line: str, version: str) -> str | None:
        """Rewrite the pointer under the line's lock."""
        with self._lock(self._line_dir(line) / ".lock", fcntl.LOCK_EX):
            if not self._manifest(line, version).exists():
                raise LookupError(f"{line} has no version {version}")
            before = self.pointer(line)
            previous = before.current if before.current != version else before.previous
            body = {"current": version, "previous": previous, "serial": before.serial + 1}
            _write(self._line_dir(line) / "POINTER", json.dumps(body).encode())
        return before.current

    def fetch(
        self,
        line: str,
        version: str,
        cache_dir: str | os.PathLike[str],
        only: tuple[str, ...] | None = None,
    ) -> Path:
        """Put the version together in ``cache_dir`` from verified chunks."""
        files = self.info(line, version).files
        cache = LocalCache(cache_dir, self.describe())
        return cache.assemble(line, version, files, self._read_chunks, only)

    def _read_chunks(self, shas: Sequence[str]) -> dict[str, bytes]:
        out = {}
        for sha in shas:
            try:
                out[sha] = self._chunk(sha).read_bytes()
            except FileNotFoundError:
                continue
        return out

    def gc(self, line: str, keep: int) -> list[str]:
        """Drop old manifests of ``line``, then unreferenced chunks of the whole store."""
        with self._lock(self.root / ".gc.lock", fcntl.LOCK_EX):
            current = self.current(line)
            stored = self.versions(line)
            newest = set(stored[-max(1, keep) :])
            dropped = [v for v in stored if v not in newest and v != current]
            for v in dropped:
                self._manifest(line, v).unlink(missing_ok=True)
            used: set[str] = set()
            for f in (self.root / "lines").glob("*/*.json"):
                for entry in json.loads(f.read_text())["files"].values():
                    used.update(entry["chunks"])
            for f in (self.root / "chunks").glob("*/*"):
                if f.name not in used and not f.name.startswith("."):
                    f.unlink(missing_ok=True)
        return dropped

    def wait(self, line: str, seen: int | None, timeout: float) -> Pointer:
        """Poll the pointer until its serial differs from ``seen`` or time is up."""
        deadline = time.monotonic() + max(0.0, timeout)
        while True:
            found = self.pointer(line)
            left = deadline - time.monotonic()
            if found.serial != seen or left <= 0:
                return found
            time.sleep(min(POLL_S, left))

    def describe(self) -> str:
        """``file://`` and the root."""
        return self.root.resolve().as_uri()

    def close(self) -> None:
        """Nothing is held open."""
