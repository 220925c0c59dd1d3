"""Versioned index manifests: which segments and tombstones make up the live index.

The index directory holds immutable files only. A manifest names, per shard, the
segments and their tombstone files, plus the **watermark** (how far into the crawl's
event log the index goes). ``CURRENT`` names the live manifest and is replaced
atomically (``os.replace``), so a reader sees either the old index or the new one,
never a mixture, and the real-time tier's handoff happens with the swap.

``PREVIOUS`` names the version that was live before the last swap: the target of a
rollback (:func:`point`), kept by garbage collection. A candidate version that failed
validation (:mod:`lookup.search.canary`) is never pointed at; its manifest and the
reasons are kept in ``rejected/`` (:func:`reject`) and its files are collected.
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

from lookup.errors import Conflict, Damaged, NotBuilt
from lookup.kit.integrity import checksum_bytes, checksum_file
from lookup.search.analysis import ANALYSIS_VERSION

FORMAT = 1
CURRENT = "CURRENT"
#: The pointer to the version live before the last swap (the rollback target).
PREVIOUS = "PREVIOUS"
#: Where rejected candidates' manifests and reasons are kept (``version-NNNNNN.json``).
REJECTED = "rejected"
#: Rejection records kept (the oldest go first).
REJECTED_KEEP = 20
#: fsync every file before it is published (crash safety). Tests that write many tiny
#: indexes may switch it off; nothing else about the write path changes.
DURABLE = True
DELETIONS_LOG = "deletions.jsonl"
#: The file name of a manifest version.
MANIFEST = re.compile(r"^manifest-(\d{6})\.json$")
#: The file name of a rejection record.
REJECTION = re.compile(r"^version-(\d{6})\.json$")


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
    #: Known-item queries taken from this version when it went live, each with the page
    #: its top result was (``{"query", "url", "urlHash"}``): a later candidate must still
    #: find those pages (:mod:`lookup.search.canary`). Empty in older manifests.
    canaries: list[dict[str, str]] = field(default_factory=list)
    #: The text analysis the index was built with (:data:`~lookup.search.analysis.ANALYSIS_VERSION`;
    #: 1 in manifests written before it was recorded): another one is refused, not misread.
    analysis: int = ANALYSIS_VERSION

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
            analysis=int(data.get("analysis", 1)),
            canaries=[
                {str(k): str(v) for k, v in c.items()}
                for c in data.get("canaries") or []
                if isinstance(c, dict)
            ],
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


def outdated(manifest: Manifest, index_dir: str | Path) -> Damaged:
    """The error for an index built with another text analysis (503 ``INDEX_OUTDATED``): its
    terms are not the ones queries are analysed into, so it is refused until rebuilt."""
    return Damaged(
        f"the search index (version {manifest.version}) was built with text analysis "
        f"{manifest.analysis} and this server analyses with {ANALYSIS_VERSION} (accents "
        "folded, Thai segmented, C++/C# kept, stop-word phrases): its terms would be "
        "misread, so web search answers 503 until the index is rebuilt",
        code="INDEX_OUTDATED",
        file=str(Path(index_dir) / manifest_name(manifest.version)),
        remedy=rebuild_remedy(index_dir, manifest.source.crawl_dir or None),
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
    return _pointer(index_dir, CURRENT)


def previous_token(index_dir: str | Path) -> str | None:
    """The name of the manifest live before the last swap (the rollback target), or None."""
    return _pointer(index_dir, PREVIOUS)


def _pointer(index_dir: str | Path, which: str) -> str | None:
    try:
        return (Path(index_dir) / which).read_text(encoding="utf-8").strip() or None
    except OSError:
        return None


def version_of(token: str | None) -> int | None:
    """The version number a pointer names (None for no pointer or a malformed one)."""
    m = MANIFEST.match(token or "")
    return int(m.group(1)) if m else None


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


def manifest_bytes(manifest: Manifest) -> bytes:
    """The manifest as stored: its JSON with the checksum of its content."""
    data = manifest.to_json()
    data["checksum"] = _manifest_checksum(data)
    return json.dumps(data, indent=1).encode("utf-8")


def publish(index_dir: Path, manifest: Manifest) -> None:
    """Write the manifest (with the checksum of its content), then atomically point
    ``CURRENT`` at it; the version it named before becomes ``PREVIOUS``."""
    index_dir = Path(index_dir)
    _write_file_atomic(index_dir / manifest_name(manifest.version), manifest_bytes(manifest))
    point(index_dir, manifest.version)


def point(index_dir: Path, version: int) -> int | None:
    """Make a stored version live: ``PREVIOUS`` gets what ``CURRENT`` named (if another
    version), then ``CURRENT`` is swapped (``os.replace``). Returns the version live before.

    ``PREVIOUS`` is written first: a crash between the two leaves ``PREVIOUS`` naming the
    live version, which a rollback refuses as "no previous version" — never a pointer to
    a version garbage collection may have dropped."""
    index_dir = Path(index_dir)
    before = version_of(current_token(index_dir))
    if before is not None and before != version:
        _write_file_atomic(index_dir / PREVIOUS, (manifest_name(before) + "\n").encode())
    _write_file_atomic(index_dir / CURRENT, (manifest_name(version) + "\n").encode())
    return before


def rollback(index_dir: Path) -> tuple[int, int]:
    """Make the version live before the last swap live again; ``(now live, was live)``.

    One pointer swap under the writer lock, so a rollback never races a build (which
    would publish a version built on the one rolled away from). :class:`~lookup.errors.Conflict`
    ``NO_PREVIOUS`` when there is no such version (or its manifest was collected),
    ``INDEX_BUSY`` while ``lookup index`` writes; ``NotBuilt`` when nothing is live."""
    index_dir = Path(index_dir)
    try:
        with writer_lock(index_dir):
            live = version_of(current_token(index_dir))
            if live is None:
                raise NotBuilt(
                    f"no search index in {index_dir}; build one with `lookup index CRAWL_DIR`",
                    command="lookup index CRAWL_DIR",
                )
            target = version_of(previous_token(index_dir))
            if target is None or target == live:
                raise Conflict(
                    f"index version {live} is live and there is no previous version to roll "
                    "back to (a rollback needs a version published before it)",
                    code="NO_PREVIOUS",
                )
            try:
                read_manifest(index_dir / manifest_name(target), index_dir)
            except FileNotFoundError:
                raise Conflict(
                    f"the previous index version {target} is no longer kept in {index_dir}",
                    code="NO_PREVIOUS",
                ) from None
            point(index_dir, target)
            return target, live
    except RuntimeError as exc:
        if isinstance(exc, NotBuilt):
            raise
        raise Conflict(f"{exc}; roll back after it", code="INDEX_BUSY") from None


def reject(index_dir: Path, manifest: Manifest, reason: dict[str, Any]) -> Path:
    """Keep a refused candidate's manifest and the reasons in ``rejected/`` (``CURRENT`` is
    not touched); the oldest records beyond :data:`REJECTED_KEEP` are dropped."""
    folder = Path(index_dir) / REJECTED
    folder.mkdir(parents=True, exist_ok=True)
    record = {"version": manifest.version, **reason, "manifest": manifest.to_json()}
    path = folder / f"version-{manifest.version:06d}.json"
    _write_file_atomic(path, json.dumps(record, indent=1).encode("utf-8"))
    for old in rejected_versions(index_dir)[:-REJECTED_KEEP]:
        (folder / f"version-{old:06d}.json").unlink(missing_ok=True)
    return path


def rejected_versions(index_dir: str | Path) -> list[int]:
    """Versions refused by validation whose record is kept, oldest first."""
    folder = Path(index_dir) / REJECTED
    if not folder.is_dir():
        return []
    return sorted(int(m.group(1)) for p in folder.iterdir() if (m := REJECTION.match(p.name)))


def rejection(index_dir: str | Path, version: int) -> dict[str, Any]:
    """The kept record of a rejected version (``KeyError`` if none; the manifest left out)."""
    path = Path(index_dir) / REJECTED / f"version-{version:06d}.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise KeyError(f"no rejected version {version}") from None
    except (OSError, ValueError) as exc:
        return {"version": version, "reason": f"the record is unreadable: {exc}", "checks": []}
    if not isinstance(data, dict):
        return {"version": version, "reason": "the record is not a JSON object", "checks": []}
    data.pop("manifest", None)
    return data


def collect_garbage(index_dir: Path, keep_versions: int = 2) -> list[str]:
    """Delete files no longer named by the newest ``keep_versions`` manifests, the live
    one (``CURRENT``) and — when more than one version is kept — the rollback target
    (``PREVIOUS``), whatever their numbers (after a rollback the live version is older).

    Readers that still map a deleted file keep working (the inode lives on until
    unmapped); a reader that opens a manifest this old simply retries on the newer one.
    """
    index_dir = Path(index_dir)
    versions = sorted(int(m.group(1)) for p in index_dir.iterdir() if (m := MANIFEST.match(p.name)))
    pinned = {version_of(current_token(index_dir))}
    if keep_versions > 1:
        pinned.add(version_of(previous_token(index_dir)))
    keep = sorted(set(versions[-keep_versions:]) | {v for v in versions if v in pinned})
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
    for v in versions:
        if v in keep:
            continue
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
