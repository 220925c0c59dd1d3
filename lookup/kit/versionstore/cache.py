"""What every version store backend shares: cutting files into chunks, and the local cache.

A file is stored as the concatenation of chunks of at most ``chunk_size`` bytes, each
kept under its SHA-256 (:func:`chunked`). A server copies a version into a
:class:`LocalCache`: ``chunks/<sha256>`` for every chunk it has ever verified (written
atomically, so a chunk file that exists is a verified one) and ``<store>/<line>/<version>/
<path>`` for the files put together from them, also written atomically and checked
against the whole file's SHA-256. Two versions sharing a file or a chunk share the
download.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

from lookup.kit.versionstore import ChecksumError, FileEntry, FileSource, check_path

__all__ = ["CHUNK_SIZE", "LocalCache", "chunked", "place_file", "sha256_of"]

#: Bytes per chunk unless a store is told otherwise (a PostgreSQL ``bytea`` of 1 MiB is
#: one cheap row; a file that changes in one place re-sends one chunk).
CHUNK_SIZE = 1 << 20
#: Chunks read from a store per call while a file is put together.
_BATCH = 16
#: Seconds a cached chunk no version refers to is kept before :meth:`LocalCache.evict`
#: drops it (another process may be putting a version together from it).
_EVICT_GRACE_S = 60.0

#: ``fetch_chunks(shas) -> {sha: bytes}``: how a backend reads stored chunks (a missing
#: one is left out of the answer).
ChunkReader = Callable[[Sequence[str]], Mapping[str, bytes]]


def sha256_of(data: bytes) -> str:
    """The hex SHA-256 of ``data``."""
    return hashlib.sha256(data).hexdigest()


def chunked(source: FileSource, chunk_size: int = CHUNK_SIZE) -> Iterator[tuple[str, bytes]]:
    """``(sha256, bytes)`` of each chunk of a file given as bytes or a path, in order (one
    empty chunk for an empty file, so every file has at least one)."""
    if chunk_size < 1:
        raise ValueError("chunk_size must be positive")
    if isinstance(source, bytes | bytearray | memoryview):
        data = bytes(source)
        if not data:
            yield sha256_of(b""), b""
        for i in range(0, len(data), chunk_size):
            part = data[i : i + chunk_size]
            yield sha256_of(part), part
        return
    with open(source, "rb") as f:
        first = True
        while True:
            part = f.read(chunk_size)
            if not part and not first:
                return
            first = False
            yield sha256_of(part), part
            if len(part) < chunk_size:
                return


def entry_of(chunks: Sequence[tuple[str, int]], whole_sha256: str) -> FileEntry:
    """The :class:`FileEntry` of a file from its ``(sha256, size)`` chunks and its hash."""
    return FileEntry(sum(n for _, n in chunks), whole_sha256, tuple(s for s, _ in chunks))


def place_file(fetched: Path, dest: Path) -> None:
    """Put a fetched (checked, immutable) cache file at ``dest`` in one rename: a hard link
    where the file system allows it, a copy where it does not; a reader sees the old file or
    the whole new one."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(f".{dest.name}.{os.getpid()}.tmp")
    tmp.unlink(missing_ok=True)
    try:
        os.link(fetched, tmp)
    except OSError:
        shutil.copyfile(fetched, tmp)
    os.replace(tmp, dest)


def _atomic_write(path: Path, parts: Iterator[bytes] | Sequence[bytes]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            for part in parts:
                f.write(part)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class LocalCache:
    """A directory of verified chunks and of versions put together from them.

    ``store`` names the store the versions came from (its description), so two stores
    with a line and version of the same name never share a directory; chunks are shared
    by every store, being named by their content.
    """

    def __init__(self, root: str | os.PathLike[str], store: str) -> None:
        self.root = Path(root)
        self.store_key = hashlib.sha256(store.encode()).hexdigest()[:16]

    def chunk_path(self, sha: str) -> Path:
        """Where a verified chunk is kept."""
        return self.root / "chunks" / sha[:2] / sha

    def version_dir(self, line: str, version: str) -> Path:
        """The directory holding a version's files."""
        return self.root / "versions" / self.store_key / quote(line, safe="") / version

    def assemble(
        self,
        line: str,
        version: str,
        files: Mapping[str, FileEntry],
        read_chunks: ChunkReader,
        only: Sequence[str] | None = None,
    ) -> Path:
        """Put ``files`` (or ``only`` those) of a version together in the cache, reading
        the chunks not cached yet with ``read_chunks`` and verifying each; returns the
        version's directory. ``LookupError`` for a file ``only`` names that the version
        lacks, :class:`ChecksumError` for a damaged or missing chunk."""
        wanted = list(files) if only is None else list(only)
        missing_files = [p for p in wanted if p not in files]
        if missing_files:
            raise LookupError(f"{line} {version} has no file {missing_files[0]!r}")
        target = self.version_dir(line, version)
        for path in wanted:
            entry = files[check_path(path)]
            out = target / path
            if out.is_file() and out.stat().st_size == entry.size:
                continue  # put together (and checked) before
            need = [s for s in dict.fromkeys(entry.chunks) if not self.chunk_path(s).is_file()]
            for i in range(0, len(need), _BATCH):  # a few chunks in memory at a time
                batch = need[i : i + _BATCH]
                got = read_chunks(batch)
                for sha in batch:
                    data = got.get(sha)
                    if data is None:
                        raise ChecksumError(
                            f"{line} {version}: chunk {sha[:12]}… of {path} is missing from "
                            "the store"
                        )
                    if sha256_of(data) != sha:
                        raise ChecksumError(
                            f"{line} {version}: chunk {sha[:12]}… of {path} fails its checksum "
                            "(the stored copy is damaged)"
                        )
                    _atomic_write(self.chunk_path(sha), [data])
            whole = hashlib.sha256()
            _atomic_write(out, self._parts(entry, whole))
            if whole.hexdigest() != entry.sha256 or out.stat().st_size != entry.size:
                out.unlink(missing_ok=True)
                raise ChecksumError(f"{line} {version}: {path} fails its whole-file checksum")
        manifest = target / ".manifest.json"
        if not manifest.exists():
            body = {p: e.to_dict() for p, e in files.items()}
            _atomic_write(manifest, [json.dumps(body).encode()])
        return target

    def _parts(self, entry: FileEntry, whole: Any) -> Iterator[bytes]:
        """The cached chunks of ``entry`` in order, each also fed to the hash ``whole``."""
        for sha in entry.chunks:
            data = self.chunk_path(sha).read_bytes()
            whole.update(data)
            yield data

    def evict(
        self, line: str, keep: Sequence[str], *, grace_s: float = _EVICT_GRACE_S
    ) -> list[str]:
        """Drop the cached versions of ``line`` not in ``keep``, then every chunk no cached
        version of any line refers to and older than ``grace_s`` seconds (another process
        may be putting a version together from a newer one); returns the versions dropped.
        A process that mapped a dropped file keeps reading it (the file lives on until
        it is unmapped)."""
        line_dir = self.version_dir(line, "x").parent
        dropped: list[str] = []
        if line_dir.is_dir():
            for d in sorted(line_dir.iterdir()):
                if d.is_dir() and d.name not in keep:
                    shutil.rmtree(d, ignore_errors=True)
                    dropped.append(d.name)
        used: set[str] = set()
        for manifest in (self.root / "versions").glob("*/*/*/.manifest.json"):
            try:
                for entry in json.loads(manifest.read_text()).values():
                    used.update(entry["chunks"])
            except (OSError, ValueError, KeyError, TypeError):
                return dropped  # unsure what is in use: keep every chunk
        chunks = self.root / "chunks"
        if chunks.is_dir():
            for f in chunks.glob("*/*"):
                if f.name in used or f.name.startswith("."):
                    continue
                try:  # a chunk written just now may belong to a version being put together
                    if time.time() - f.stat().st_mtime >= grace_s:
                        f.unlink(missing_ok=True)
                except FileNotFoundError:
                    continue
        return dropped
