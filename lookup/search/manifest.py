"""Versioned index manifests: which segments and tombstones make up the live index.

The index directory holds immutable files only. A manifest names, per shard, the
segments and their tombstone files, plus the **watermark** (how far into the crawl's
event log the index goes). ``CURRENT`` names the live manifest and is replaced
atomically (``os.replace``), so a reader sees either the old index or the new one,
never a mixture, and the real-time tier's handoff happens with the swap.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from lookup.errors import Damaged
from lookup.kit.integrity import checksum_bytes, checksum_file

FORMAT = 1
CURRENT = "CURRENT"
#: fsync every file before it is published (crash safety). Tests that write many tiny
#: indexes may switch it off; nothing else about the write path changes.
DURABLE = True
DELETIONS_LOG = "deletions.jsonl"
#: The file name of a manifest version.
MANIFEST = re.compile(r"^manifest-(\d{6})\.json$")


@dataclass
class SegmentEntry:
    """One segment of one shard as of one manifest version."""

    name: str
    docs: int
    deleted: int = 0
    tombstones: str | None = None  # file name beside the segment, sorted deleted doc ids
    bytes: int = 0
    #: ``crc32:…`` of the segment's ``meta.json`` (which holds the checksum of every other
    #: file of the segment) and of the tombstone file; None in indexes written before them
    meta_checksum: str | None = None
    tombstones_checksum: str | None = None


@dataclass
class SourceState:
    """The crawl an index was built from and how far into its event log it goes."""

    crawl_dir: str
    fingerprint: str
    offset: int = 0  # bytes of events.jsonl consumed
    seq: int = 0  # lines consumed: the watermark
    max_fetched_at: float = 0.0
    deletions_offset: int = 0  # bytes of the index's own deletions log consumed


@dataclass
class Manifest:
    """One version of the index."""

    version: int
    shards: int
    created_at: float
    source: SourceState
    segments: list[list[SegmentEntry]] = field(default_factory=list)
    next_segment: int = 1
    format: int = FORMAT

    @property
    def watermark(self) -> int:
        """The newest event sequence number the batch index covers."""
        return self.source.seq

    @property
    def live_docs(self) -> int:
        """Documents not tombstoned, over all shards."""
        return sum(s.docs - s.deleted for shard in self.segments for s in shard)

    def to_json(self) -> dict[str, Any]:
        """The manifest as JSON-ready data."""
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Manifest:
        """Parse a manifest written by :meth:`to_json` (ValueError if its checksum, when it
        has one, does not match its content)."""
        recorded = data.get("checksum")
        if recorded is not None:
            body = {k: v for k, v in data.items() if k != "checksum"}
            if _manifest_checksum(body) != recorded:
                raise ValueError("checksum mismatch (the manifest changed after it was written)")
        if data.get("format") != FORMAT:
            raise ValueError(f"unsupported index manifest format {data.get('format')}")
        return cls(
            version=int(data["version"]),
            shards=int(data["shards"]),
            created_at=float(data["created_at"]),
            source=SourceState(**data["source"]),
            segments=[[SegmentEntry(**s) for s in shard] for shard in data["segments"]],
            next_segment=int(data["next_segment"]),
        )


def _manifest_checksum(data: dict[str, Any]) -> str:
    return checksum_bytes(json.dumps(data, sort_keys=True, separators=(",", ":")).encode())


def rebuild_remedy(index_dir: str | Path, crawl_dir: str | None = None) -> str:
    """What to do about a damaged index: rebuild it from its crawl (named when known)."""
    crawl = crawl_dir or "CRAWL_DIR"
    where = "" if crawl_dir else " (the crawl it was built from, under DATA_DIR/crawls)"
    return (
        f"rebuild the index with `lookup index {crawl} --rebuild --out {index_dir}`{where}; "
        "the server serves the new version within a second"
    )


def damaged(
    file: str | Path, problem: str, index_dir: str | Path, crawl_dir: str | None = None
) -> Damaged:
    """The :class:`~lookup.errors.Damaged` error for a file of the search index."""
    return Damaged(
        f"the search index file {file} is damaged ({problem}); web search answers 503 "
        "until the index is rebuilt",
        file=str(file),
        remedy=rebuild_remedy(index_dir, crawl_dir),
    )


def read_manifest(path: str | Path, index_dir: str | Path | None = None) -> Manifest:
    """Read and check one manifest file; :class:`~lookup.errors.Damaged` naming it if it is
    unreadable, malformed or fails its checksum (``FileNotFoundError`` if it is missing)."""
    path = Path(path)
    try:
        data = json.loads(path.read_bytes().decode("utf-8"))
        if not isinstance(data, dict):
            raise ValueError("not a JSON object")
        return Manifest.from_json(data)
    except FileNotFoundError:
        raise
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise damaged(path, str(exc), index_dir or path.parent) from None


def sync(fd: int) -> None:
    """``os.fsync`` unless :data:`DURABLE` is off."""
    if DURABLE:
        os.fsync(fd)


def shard_dir(index_dir: Path, shard: int) -> Path:
    """Where a shard's segments live."""
    return Path(index_dir) / f"shard-{shard:02d}"


def manifest_name(version: int) -> str:
    """File name of a manifest version."""
    return f"manifest-{version:06d}.json"


def current_manifest(index_dir: str | Path) -> Manifest | None:
    """The live manifest of an index directory, or None if none was published.

    A ``CURRENT`` that names no manifest, or a manifest that is missing, unreadable or
    fails its checksum, raises :class:`~lookup.errors.Damaged` naming the file: the index
    was built, and "not built" would be the wrong thing to say."""
    index_dir = Path(index_dir)
    pointer = index_dir / CURRENT
    try:
        raw = pointer.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise damaged(pointer, exc.strerror or str(exc), index_dir) from None
    name = raw.decode("utf-8", "replace").strip()
    if not MANIFEST.match(name):
        raise damaged(pointer, f"it names {name[:60]!r}, not a manifest", index_dir)
    try:
        return read_manifest(index_dir / name, index_dir)
    except FileNotFoundError:
        missing = f"{CURRENT} names it but it is missing"
        raise damaged(index_dir / name, missing, index_dir) from None


def current_token(index_dir: str | Path) -> str | None:
    """The name of the live manifest (cheap to poll), or None."""
    try:
        return (Path(index_dir) / CURRENT).read_text(encoding="utf-8").strip() or None
    except OSError:
        return None


def _write_file_atomic(path: Path, data: bytes) -> None:
    tmp = path.with_name(path.name + f".tmp-{os.getpid()}")
    with tmp.open("wb") as f:
        f.write(data)
        f.flush()
        sync(f.fileno())
    os.replace(tmp, path)


def write_tombstones(
    index_dir: Path, shard: int, segment: str, version: int, deleted: np.ndarray
) -> str:
    """Write a new tombstone file (sorted deleted doc ids) for a segment; returns its name."""
    name = f"{segment}.del-{version:06d}.npy"
    path = shard_dir(index_dir, shard) / name
    tmp = path.with_name(name + f".tmp-{os.getpid()}.npy")
    np.save(tmp, np.unique(np.asarray(deleted, dtype=np.int64)), allow_pickle=False)
    with tmp.open("rb") as f:
        sync(f.fileno())
    os.replace(tmp, path)
    return name


def read_tombstones(index_dir: Path, shard: int, entry: SegmentEntry) -> np.ndarray:
    """Deleted doc ids of a segment as of a manifest (empty if none); checked against the
    manifest's checksum when it has one (:class:`~lookup.errors.Damaged` otherwise)."""
    if not entry.tombstones:
        return np.zeros(0, dtype=np.int64)
    path = shard_dir(index_dir, shard) / entry.tombstones
    try:
        if entry.tombstones_checksum and checksum_file(path) != entry.tombstones_checksum:
            raise ValueError("checksum mismatch")
        return np.load(path, allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise damaged(path, str(exc), index_dir) from None


def next_free_segment(index_dir: str | Path) -> int:
    """One past the highest segment number on disk (a rebuild over a damaged manifest must
    not reuse a name still present)."""
    numbers = [
        int(p.name[4:10]) for p in Path(index_dir).glob("shard-*/seg-*") if p.name[4:10].isdigit()
    ]
    return max(numbers, default=0) + 1


def publish(index_dir: Path, manifest: Manifest) -> None:
    """Write the manifest (with the checksum of its content), then atomically point
    ``CURRENT`` at it."""
    index_dir = Path(index_dir)
    data = manifest.to_json()
    data["checksum"] = _manifest_checksum(data)
    body = json.dumps(data, indent=1).encode("utf-8")
    _write_file_atomic(index_dir / manifest_name(manifest.version), body)
    _write_file_atomic(index_dir / CURRENT, (manifest_name(manifest.version) + "\n").encode())


def collect_garbage(index_dir: Path, keep_versions: int = 2) -> list[str]:
    """Delete files no longer named by the newest ``keep_versions`` manifests.

    Readers that still map a deleted file keep working (the inode lives on until
    unmapped); a reader that opens a manifest this old simply retries on the newer one.
    """
    index_dir = Path(index_dir)
    versions = sorted(int(m.group(1)) for p in index_dir.iterdir() if (m := MANIFEST.match(p.name)))
    keep = versions[-keep_versions:]
    wanted: set[Path] = set()
    for v in keep:
        try:
            kept = read_manifest(index_dir / manifest_name(v), index_dir)
        except (Damaged, FileNotFoundError):
            continue  # a damaged version names nothing worth keeping
        for shard, entries in enumerate(kept.segments):
            for e in entries:
                wanted.add(shard_dir(index_dir, shard) / e.name)
                if e.tombstones:
                    wanted.add(shard_dir(index_dir, shard) / e.tombstones)
    removed: list[str] = []
    for v in versions[:-keep_versions]:
        (index_dir / manifest_name(v)).unlink(missing_ok=True)
        removed.append(manifest_name(v))
    for sdir in index_dir.glob("shard-*"):
        if not sdir.is_dir():
            continue
        for p in sdir.iterdir():
            if p in wanted:
                continue
            if p.is_dir():
                shutil.rmtree(p, ignore_errors=True)
            else:
                p.unlink(missing_ok=True)
            removed.append(str(p.relative_to(index_dir)))
        if not any(sdir.iterdir()):
            sdir.rmdir()
    return removed


@contextmanager
def writer_lock(index_dir: Path) -> Iterator[None]:
    """Exclusive lock for the one writer of an index directory (readers never take it)."""
    index_dir.mkdir(parents=True, exist_ok=True)
    with (index_dir / "write.lock").open("a") as f:
        try:
            fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise RuntimeError(
                f"another `lookup index` is writing {index_dir}; wait for it to finish"
            ) from None
        try:
            yield
        finally:
            fcntl.flock(f.fileno(), fcntl.LOCK_UN)
