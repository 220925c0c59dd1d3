"""Where the typeahead hot blocklist is kept: the seam the processes of a fleet share it through.

:class:`~lookup.typeahead.filters.HotBlocklist` (what every answer is checked against)
is a cache of a :class:`HotTermSource` — the phrases added at run time, with a cheap
``stamp`` that changes whenever they may have. Every edit goes to the source, which
applies it to what is stored *now* (never to one process's memory of it), so no process
can drop another's acknowledged edit.

This package is the seam. Its ``__init__`` is the port and imports no backend:
:class:`HotTermSource`, the phrase rule (:func:`clean_term`), :data:`BACKENDS` (the
registry ``scheme → "module:Class"``) and :func:`open_hot_term_source` (the setting
``typeahead_blocklist``), which imports the backend a URL names when it is called. The
backends:

* :mod:`.file` — ``file:///…/blocklist.txt`` (or a plain path), the embedded default
  ``<data-dir>/typeahead/blocklist.txt``: one phrase per line, ``#`` comments, editable
  by hand. An edit is a locked read-merge-write: an ``flock`` on a lock file beside it
  serialises editors across processes, the file is re-read under the lock, the change
  applied to what it holds (comments and other lines kept), written to a temporary file
  of this process's own, flushed to disk and renamed over the list. The stamp is the
  file's modification time, size and inode.
* :mod:`.postgres` — ``postgresql://…`` (what ``lookup up --backend postgres`` sets): a
  table plus a revision counter bumped in the edit's transaction, so processes with
  different data directories serve one list.

Each process re-reads the list when the stamp moved, checked by its poller every second
(:data:`lookup.typeahead.http.POLL_SECONDS`), and at once after an edit of its own.

Adding a backend is one file with a class that has ``from_url`` plus one line in
:data:`BACKENDS`; ``tests/contracts/test_typeahead_blocklist_contract.py`` then runs
against it. This package was the module ``lookup/typeahead/blocklist.py``: every name it
had is still here, :class:`~.file.FileHotTermSource` and ``HEADER`` (now in :mod:`.file`)
imported on first use, for one release.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Protocol, TypeAlias, cast, runtime_checkable

from lookup.kit.engines.storeurl import StoreUrl
from lookup.kit.lazy import lazy_exports
from lookup.kit.registry import Backend as SeamBackend
from lookup.kit.registry import load_backend, open_backend
from lookup.typeahead.normalize import MAX_QUERY_CHARS, has_control_chars, normalize_query

__all__ = [
    "BACKENDS",
    "Backend",
    "HotTermSource",
    "backend",
    "clean_term",
    "open_hot_term_source",
]

#: Each URL scheme and the class that serves it, imported when a URL names the scheme.
BACKENDS: dict[str, str] = {
    "file": "lookup.typeahead.blocklist.file:FileHotTermSource",
    "postgresql": "lookup.typeahead.blocklist.postgres:PostgresHotTermSource",
}

#: Names this module had before it was a package, now in a backend's module: imported
#: the first time they are used (kept for one release).
_MOVED = {
    "FileHotTermSource": "lookup.typeahead.blocklist.file",
    "HEADER": "lookup.typeahead.blocklist.file",
}
__getattr__, __dir__ = lazy_exports(__name__, _MOVED)


def clean_term(term: str) -> str:
    """The normalised form of a blocklist phrase, or ``ValueError`` if it cannot be one."""
    if not isinstance(term, str):
        raise ValueError("a blocklist term must be a string")
    if has_control_chars(term):
        raise ValueError("a blocklist term may not contain control characters")
    t = normalize_query(term)
    if not t:
        raise ValueError("a blocklist term may not be empty")
    if len(t) > MAX_QUERY_CHARS:
        raise ValueError(f"a blocklist term is at most {MAX_QUERY_CHARS} characters")
    return t


@runtime_checkable
class HotTermSource(Protocol):
    """The hot blocklist's phrases of one server (or one fleet)."""

    def describe(self) -> str:
        """Where the list lives (a file's URL, a server without its credentials)."""
        ...

    def stamp(self) -> object:
        """A value that changes whenever the phrases may have changed (cheap to read)."""
        ...

    def terms(self) -> list[str]:
        """The stored phrases, normalised, sorted, each once (unusable lines skipped)."""
        ...

    def edit(self, add: Iterable[str], remove: Iterable[str]) -> tuple[list[str], list[str]]:
        """Add and remove (already clean) phrases atomically; ``(added, removed)``: the
        phrases that were actually absent / present. A phrase in both is only removed."""
        ...

    def close(self) -> None:
        """Let go of connections (the next call reopens)."""
        ...


#: What :data:`BACKENDS` names: a class whose ``from_url(url)`` opens a
#: :class:`HotTermSource`.
Backend: TypeAlias = SeamBackend[HotTermSource]


def backend(scheme: str) -> Backend:
    """The class registered for ``scheme`` in :data:`BACKENDS`, imported now (ValueError
    naming the registered schemes for another)."""
    return cast(Backend, load_backend(BACKENDS, scheme))


def open_hot_term_source(url: str | os.PathLike[str]) -> HotTermSource:
    """The source ``url`` names: ``file:///path/blocklist.txt`` (or a plain path) or
    ``postgresql://…``; ValueError for anything else, naming what is accepted."""
    text = str(url).strip()
    if text and "://" not in text:  # a plain path: the file backend, the path as given
        return backend("file").from_url(StoreUrl("file", text, Path(text)))
    return cast(HotTermSource, open_backend(BACKENDS, text))
