"""Where immutable, versioned snapshots live: the seam every snapshot location sits behind.

"Rebuild indexes offline as immutable versioned snapshots and swap them atomically":
a build **publishes** a new version, the serving side **opens** the **current** one, an
operator **activates** a stored version or **rolls back** the last swap, and a
candidate a check refused is **rejected** — kept aside with the reason, never served.
A store holds one line of versions per *name* (the typeahead keeps one per market; a
search index could keep one per index). Versions are strings the system chooses,
unique per name and never reused; what a snapshot is (a trie file, a manifest) is the
system's business, so the store is generic in what :meth:`SnapshotStore.open` returns.

The embedded implementation is a directory per store (``file:///path`` or a plain
path, see :func:`snapshot_directory`); a shared object store or a database table of
pointers can implement the same protocol later and join the contract tests in
``tests/contracts/test_snapshot_store_contract.py``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol, TypeVar
from urllib.parse import unquote, urlsplit

__all__ = ["SCHEMES", "SnapshotStore", "snapshot_directory"]

T_co = TypeVar("T_co", covariant=True)

#: The URL spellings a snapshot-store factory accepts today.
SCHEMES = ("file:///absolute/path", "a plain directory path")


class SnapshotStore(Protocol[T_co]):
    """Immutable versions per name, one of them current; swaps are atomic.

    Arguments are positional, so an implementation names them in its own vocabulary
    (the typeahead's ``market``).
    """

    def names(self) -> list[str]:
        """The names with at least one stored version, sorted."""
        ...

    def versions(self, name: str, /) -> list[str]:
        """The stored versions of ``name``, oldest first (empty if none)."""
        ...

    def current(self, name: str, /) -> str | None:
        """The version served for ``name``, or None before the first publish."""
        ...

    def open(self, name: str, version: str | None = None, /) -> T_co | None:
        """A stored version (default: the current one), integrity-checked; None if there
        is no current one. ``LookupError`` for a version that is not stored."""
        ...

    def publish(self, name: str, version: str, source: str | os.PathLike[str], /) -> None:
        """Take a built (and already checked) snapshot into the store as ``version`` and
        make it current. ``source`` is moved in; the store may then drop its oldest
        versions beyond its retention, never the current one or anything newer."""
        ...

    def activate(self, name: str, version: str, /) -> None:
        """Make a stored version current (atomically); ``LookupError`` if not stored."""
        ...

    def rollback(self, name: str, /) -> str:
        """Undo the last swap: make current again the version current before it, and
        return it. ``LookupError`` when there is none (or it is no longer stored)."""
        ...

    def reject(
        self,
        name: str,
        version: str,
        source: str | os.PathLike[str],
        reason: Mapping[str, Any],
        /,
    ) -> None:
        """Keep a refused candidate aside with the reason it was refused; never served."""
        ...


def snapshot_directory(url: str | os.PathLike[str]) -> Path:
    """The directory a directory-backed store URL names: ``file:///abs/path`` or a path.

    Any other scheme raises ValueError naming the accepted spellings.
    """
    text = os.fspath(url).strip()
    if not text:
        raise ValueError(f"empty snapshot store URL; expected {' or '.join(SCHEMES)}")
    if "://" not in text:
        if ":" in text.split("/")[0]:  # memory:, sqlite:... — a scheme, not a directory
            raise ValueError(
                f"unsupported snapshot store URL {text!r}; expected {' or '.join(SCHEMES)}"
            )
        return Path(text).expanduser()
    parts = urlsplit(text)
    if parts.scheme.lower() != "file":
        raise ValueError(
            f"unsupported snapshot store URL {text!r}; expected {' or '.join(SCHEMES)}"
        )
    if parts.netloc not in ("", "localhost"):
        raise ValueError(f"a file URL names a local directory, not host {parts.netloc!r}")
    path = unquote(parts.path)
    if not path or path == "/":
        raise ValueError(f"file URL {text!r} names no directory (file:///path/to/dir)")
    return Path(path)
