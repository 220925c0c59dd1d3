"""A directory tree as versions of a line: publish what one machine wrote, mirror it elsewhere.

A crawl's output (``events.jsonl`` and ``warc/*.warc.gz``) is written on the machine
that crawled; the indexer may run on another. :func:`publish_tree` stores the tree's
files as a new version of a line (``crawl/warc``) and makes it current — chunks the store
holds already (a WARC file published before) cost nothing but their hashes — and
:func:`mirror_current` puts the line's current version together in a **stable** local
directory (every chunk checked against its checksum), so a reader of that directory
(the indexer, reading the log incrementally by byte offset) sees one directory that
grows, as if the crawler had written it there.

Files named in ``first`` (the event log) are read before the others: a log line is only
written after the record it names, so a log read first never names a record the
published WARC files lack.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
from collections.abc import Sequence
from pathlib import Path

from lookup.kit.versionstore import FileSource, VersionInfo, VersionStore
from lookup.kit.versionstore.cache import place_file

__all__ = ["MIRROR_RECORD", "mirror_current", "publish_tree", "tree_files"]

#: Inside a mirror: the SHA-256 of each file the mirror wrote (so an unchanged file is
#: neither fetched nor hashed again), and the store's local chunk cache.
MIRROR_RECORD = ".mirror.json"
_CACHE = ".versions"
_VERSION = re.compile(r"^t(\d{6,})$")
_SKIP = re.compile(r"(^\.|\.tmp$|\.lock$|-journal$|-wal$|-shm$)")


def tree_files(root: Path, include: Sequence[str]) -> dict[str, Path]:
    """Relative path → file of every regular file under ``root`` matching one of the glob
    patterns ``include`` (hidden, temporary and lock files left out), sorted."""
    out: dict[str, Path] = {}
    for pattern in include:
        for p in sorted(root.glob(pattern)):
            rel = p.relative_to(root)
            if p.is_file() and not any(_SKIP.search(part) for part in rel.parts):
                out[rel.as_posix()] = p
    return dict(sorted(out.items()))


def _sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def publish_tree(
    store: VersionStore,
    line: str,
    root: str | os.PathLike[str],
    *,
    include: Sequence[str] = ("**/*",),
    first: Sequence[str] = (),
    keep: int | None = None,
) -> VersionInfo | None:
    """Store the files under ``root`` (``include`` globs) as the next version ``tNNNNNN``
    of ``line`` and make it current; None when they equal the current version's (nothing
    is stored then). ``keep``: versions kept afterwards (``gc``), None keeps all.
    ``FileNotFoundError`` when ``root`` holds no such file."""
    base = Path(root)
    found = tree_files(base, include)
    if not found:
        raise FileNotFoundError(f"{base} holds no file to publish (looked for {list(include)})")
    files: dict[str, FileSource] = {rel: found[rel].read_bytes() for rel in first if rel in found}
    files.update((rel, p) for rel, p in found.items() if rel not in files)
    current = store.current(line)
    if current is not None:
        stored = store.info(line, current).files
        same = set(stored) == set(files) and all(
            stored[rel].sha256
            == (
                hashlib.sha256(src).hexdigest()
                if isinstance(src, bytes)
                else _sha256_file(found[rel])
            )
            for rel, src in files.items()
        )
        if same:
            return None
    numbers = [int(m.group(1)) for v in store.versions(line) if (m := _VERSION.match(v))]
    version = f"t{max(numbers, default=0) + 1:06d}"
    info = store.publish(line, version, files, {"root": str(base)}, activate=True)
    if keep is not None:
        store.gc(line, keep)
    return info


def mirror_current(
    store: VersionStore, line: str, target: str | os.PathLike[str]
) -> tuple[str, Path] | None:
    """Bring ``target`` up to the current version of ``line``: fetch (checked) only the
    files that changed since the mirror last wrote them, and swap each in atomically.
    Returns ``(version, target)``, or None when the line has no current version.
    :class:`~lookup.kit.versionstore.ChecksumError` when a stored chunk is damaged."""
    out = Path(target)
    version = store.current(line)
    if version is None:
        return None
    files = store.info(line, version).files
    record_path = out / MIRROR_RECORD
    try:
        record: dict[str, str] = json.loads(record_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        record = {}
    stale = tuple(
        rel
        for rel, entry in files.items()
        if record.get(rel) != entry.sha256
        or not (out / rel).is_file()
        or (out / rel).stat().st_size != entry.size
    )
    if stale:
        fetched = store.fetch(line, version, out / _CACHE, only=stale)
        for rel in stale:
            place_file(fetched / rel, out / rel)
            record[rel] = files[rel].sha256
        tmp_record = record_path.with_name(f".{MIRROR_RECORD}.{os.getpid()}.tmp")
        tmp_record.write_text(json.dumps(record, sort_keys=True), encoding="utf-8")
        os.replace(tmp_record, record_path)
        shutil.rmtree(out / _CACHE, ignore_errors=True)  # the files are linked out of it
    return version, out
