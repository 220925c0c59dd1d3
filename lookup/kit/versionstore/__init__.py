"""Versions in a shared store: named sets of files, one version current per line, local caches.

A build (a typeahead snapshot, a search index) is a set of named files plus a little
metadata. A **version store** keeps such sets as immutable **versions** of a **line**
(a name such as ``typeahead/en-IN``): :meth:`VersionStore.publish` stores the files as
content-addressed chunks (SHA-256 of each chunk is its key, so a file that did not
change between two versions costs nothing the second time), :meth:`~VersionStore.activate`
swaps the line's ``current`` pointer in one step (remembering the one before it, for a
rollback), and :meth:`~VersionStore.wait` returns when a line's pointer moves, so a
server can load a new version without a restart. A server never reads from the store
in place: :meth:`~VersionStore.fetch` copies a version's files into a local cache
directory, checking every chunk against its checksum and reusing the chunks that are
there already. :meth:`~VersionStore.gc` keeps the newest N versions and the current one,
and drops the chunks nothing refers to any more.

This package is the seam. Its ``__init__`` is the port and imports no backend:
:class:`VersionStore`, :class:`VersionInfo`, :class:`FileEntry`, :class:`ChecksumError`,
:data:`BACKENDS` (the registry ``scheme → "module:Class"``) and
:func:`open_version_store`. The backends:

* :mod:`.directory` — ``file:///path`` or a plain path: the embedded store, a directory
  of chunk files and JSON manifests; pointer swaps are atomic renames and
  :meth:`~VersionStore.wait` polls the pointer;
* :mod:`.postgres` — ``postgresql://…``: tables of versions, chunks (``bytea``) and
  version files, the pointer swapped in one transaction that also sends
  ``NOTIFY lookup_versions``; :meth:`~VersionStore.wait` ``LISTEN``\\ s.

:mod:`.cache` holds what both share: chunking a file, and the local cache
(:class:`~.cache.LocalCache`). Adding a backend is one file with a class that has
``from_url`` plus one line in :data:`BACKENDS`; ``tests/contracts/
test_version_store_contract.py`` then runs against it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple, Protocol, TypeAlias, cast, runtime_checkable

from lookup.kit.registry import Backend as SeamBackend
from lookup.kit.registry import load_backend

__all__ = [
    "BACKENDS",
    "Backend",
    "ChecksumError",
    "FileEntry",
    "FileSource",
    "Pointer",
    "VersionInfo",
    "VersionStore",
    "backend",
    "check_line",
    "check_path",
    "check_version",
    "open_version_store",
]

#: Each URL scheme and the class that serves it, imported when a URL names the scheme; a
#: plain directory path counts as ``file``.
BACKENDS: dict[str, str] = {
    "file": "lookup.kit.versionstore.directory:DirectoryVersionStore",
    "postgresql": "lookup.kit.versionstore.postgres:PgVersionStore",
}

#: What a file of a new version may be given as: its bytes, or the path of a file to read.
FileSource: TypeAlias = bytes | str | os.PathLike[str]

_LINE_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/-]{0,199}")
_VERSION_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
_PART_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]{0,99}")


class ChecksumError(ValueError):
    """A chunk read from the store (or a file put together from chunks) does not hash to
    the checksum it is stored under: the stored copy is damaged, nothing was cached."""


@dataclass(frozen=True)
class FileEntry:
    """One file of a version: its size, the SHA-256 of the whole file, and its chunks'
    SHA-256s in order (the file is their concatenation)."""

    size: int
    sha256: str
    chunks: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able form (what manifests hold)."""
        return {"size": self.size, "sha256": self.sha256, "chunks": list(self.chunks)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> FileEntry:
        """The entry a manifest holds."""
        return cls(int(data["size"]), str(data["sha256"]), tuple(data["chunks"]))


@dataclass(frozen=True)
class VersionInfo:
    """A stored version: its line, name, when it was published, its metadata and files."""

    line: str
    version: str
    created: float
    meta: dict[str, Any] = field(default_factory=dict)
    files: dict[str, FileEntry] = field(default_factory=dict)

    @property
    def size(self) -> int:
        """Bytes of all its files together."""
        return sum(f.size for f in self.files.values())


class Pointer(NamedTuple):
    """A line's pointers: the version served, the one served before the last swap, and a
    serial that grows with every swap (so a watcher sees a swap back and forth too)."""

    current: str | None
    previous: str | None
    serial: int


@runtime_checkable
class VersionStore(Protocol):
    """Immutable versions of named lines, one current per line; see the module docstring.

    Missing lines or versions raise ``LookupError``; malformed names ``ValueError``; a
    server that cannot be reached :class:`lookup.errors.Unavailable`.
    """

    def lines(self) -> list[str]:
        """The lines with at least one stored version, sorted."""
        ...

    def versions(self, line: str) -> list[str]:
        """The stored versions of ``line``, oldest (first published) first."""
        ...

    def info(self, line: str, version: str) -> VersionInfo:
        """One stored version's metadata and file list (``LookupError`` if not stored)."""
        ...

    def pointer(self, line: str) -> Pointer:
        """The line's current and previous versions and its swap serial."""
        ...

    def current(self, line: str) -> str | None:
        """The version served for ``line``, or None before the first activation."""
        ...

    def publish(
        self,
        line: str,
        version: str,
        files: Mapping[str, FileSource],
        meta: Mapping[str, Any] | None = None,
        *,
        activate: bool = False,
    ) -> VersionInfo:
        """Store ``files`` (relative path → bytes or a file to read) as a new version of
        ``line``, chunk by chunk; with ``activate``, make it current in the same step.
        ``ValueError`` if ``version`` is stored already (versions are never reused)."""
        ...

    def activate(self, line: str, version: str) -> str | None:
        """Make a stored version current in one transaction and tell every waiter;
        returns the version current before (``LookupError`` if not stored)."""
        ...

    def fetch(
        self,
        line: str,
        version: str,
        cache_dir: str | os.PathLike[str],
        only: tuple[str, ...] | None = None,
    ) -> Path:
        """Copy a version's files (or ``only`` those) into ``cache_dir``, verifying every
        chunk and reusing chunks cached before; returns the directory holding them under
        their relative paths. :class:`ChecksumError` when a stored chunk is damaged."""
        ...

    def gc(self, line: str, keep: int) -> list[str]:
        """Drop the versions of ``line`` beyond the newest ``keep``, never the current one,
        and every chunk no version refers to; returns the dropped versions."""
        ...

    def wait(self, line: str, seen: int | None, timeout: float) -> Pointer:
        """The line's pointer as soon as its serial differs from ``seen`` (at once if it
        does already), or after ``timeout`` seconds as it is then."""
        ...

    def describe(self) -> str:
        """What the store is, for status pages (never a password)."""
        ...

    def close(self) -> None:
        """Let go of connections (the next call opens new ones)."""
        ...


#: What :data:`BACKENDS` names: a class whose ``from_url(url)`` opens a version store.
Backend: TypeAlias = SeamBackend[VersionStore]


def backend(scheme: str) -> Backend:
    """The class registered for ``scheme`` in :data:`BACKENDS`, imported now (ValueError
    naming the registered schemes for another)."""
    return cast(Backend, load_backend(BACKENDS, scheme))


def check_line(line: str) -> str:
    """``line`` if it is a valid line name (letters, digits, ``._/-``; ValueError if not)."""
    if not isinstance(line, str) or not _LINE_RE.fullmatch(line) or "//" in line:
        raise ValueError(f"not a line name: {line!r} (letters, digits and ._/- only)")
    return line


def check_version(version: str) -> str:
    """``version`` if it is a valid version name (ValueError if not)."""
    if not isinstance(version, str) or not _VERSION_RE.fullmatch(version):
        raise ValueError(f"not a version name: {version!r} (letters, digits and ._- only)")
    return version


def check_path(path: str) -> str:
    """``path`` if it is a safe relative file path (no ``..``, no absolute path)."""
    parts = path.split("/") if isinstance(path, str) else []
    if not parts or not all(_PART_RE.fullmatch(p) and p not in (".", "..") for p in parts):
        raise ValueError(f"not a relative file path: {path!r}")
    return path


def open_version_store(url: str | os.PathLike[str], **options: Any) -> VersionStore:
    """The version store ``url`` names: ``file:///dir`` or a plain directory path (the
    embedded :class:`~.directory.DirectoryVersionStore`), or ``postgresql://…``
    (:class:`~.postgres.PgVersionStore`). ``ValueError`` names the accepted spellings for
    anything else."""
    from lookup.kit.engines.storeurl import StoreUrl, spellings

    text = os.fspath(url).strip()
    accepted = spellings(tuple(BACKENDS))
    head = text.split("/")[0]
    if not text:
        raise ValueError(f"empty version store URL; expected one of: {accepted}")
    if "://" not in text and ":" not in head:
        scheme = "file"
    else:
        scheme = text.split(":", 1)[0].lower()
        scheme = "postgresql" if scheme == "postgres" else scheme
    if scheme not in BACKENDS:
        raise ValueError(f"unsupported version store URL {text!r}; expected one of: {accepted}")
    return cast(VersionStore, backend(scheme).from_url(StoreUrl(scheme, text), **options))
