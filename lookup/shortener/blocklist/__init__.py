"""Where the shortener's domain blocklist is kept: the seam a fleet shares it through.

The :class:`~lookup.shortener.urls.Blocklist` the URL policy and the scanner consult is
a cache of a :class:`BlocklistSource` — the edited domains, with a cheap ``stamp`` that
changes whenever they may have.

This package is the seam. Its ``__init__`` is the port and imports no backend:
:class:`BlocklistSource`, the rule type :data:`Clean`, :data:`BACKENDS` (the registry
``scheme → "module:Class"``) and :func:`open_blocklist_source`, which imports the backend
a URL names when it is called. The backends:

* :mod:`.file` — ``file:///…/blocklist.txt``, the embedded default: a text file in the
  data directory, one domain per line with ``#`` comments, editable by hand (the stamp
  is its mtime); edits through the API keep the comments and are serialised across
  processes by an ``flock`` on a lock file beside it;
* :mod:`.postgres` — ``postgresql://…`` (the shortener store's URL when the links live
  there): a table plus a revision counter bumped in the same transaction as every edit,
  so API processes with different data directories enforce one list; each polls the
  counter (one indexed row) at most every ``recheck_s`` seconds.

Adding a backend is one file with a class that has ``from_url`` plus one line in
:data:`BACKENDS`; ``tests/contracts/test_blocklist_source_contract.py`` then runs against
it. This package was the module ``lookup/shortener/blocklist.py``: every name it had is
still here, :class:`~.file.FileBlocklistSource` and ``TEMPLATE`` (now in :mod:`.file`)
imported on first use, for one release.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Protocol, TypeAlias, cast, runtime_checkable

from lookup.kit.lazy import lazy_exports
from lookup.kit.registry import Backend as SeamBackend
from lookup.kit.registry import load_backend, open_backend

__all__ = [
    "BACKENDS",
    "Backend",
    "BlocklistSource",
    "Clean",
    "backend",
    "open_blocklist_source",
]

#: Each URL scheme and the class that serves it, imported when a URL names the scheme.
BACKENDS: dict[str, str] = {
    "file": "lookup.shortener.blocklist.file:FileBlocklistSource",
    "postgresql": "lookup.shortener.blocklist.postgres:PostgresBlocklistSource",
}

#: Names this module had before it was a package, now in a backend's module: imported
#: the first time they are used (kept for one release).
_MOVED = {
    "FileBlocklistSource": "lookup.shortener.blocklist.file",
    "TEMPLATE": "lookup.shortener.blocklist.file",
}
__getattr__, __dir__ = lazy_exports(__name__, _MOVED)

#: Normalises one line or entry to a domain ("" when it is none), the Blocklist's rule.
Clean = Callable[[str], str]


@runtime_checkable
class BlocklistSource(Protocol):
    """The edited blocked domains of one shortener (or one fleet)."""

    def describe(self) -> str:
        """Where the list lives (a file's URL, a server without its credentials)."""
        ...

    def stamp(self) -> object:
        """A value that changes whenever the entries may have changed (cheap to read)."""
        ...

    def entries(self, clean: Clean) -> frozenset[str]:
        """The stored domains, each passed through ``clean`` (empty results dropped)."""
        ...

    def edit(
        self, add: Iterable[str], remove: Iterable[str], clean: Clean
    ) -> tuple[list[str], list[str]]:
        """Add and remove (already clean) domains atomically; ``(added, removed)``, the
        domains that were actually absent / present."""
        ...

    def close(self) -> None:
        """Let go of connections (the next call reopens)."""
        ...


#: What :data:`BACKENDS` names: a class whose ``from_url(url)`` opens a
#: :class:`BlocklistSource`.
Backend: TypeAlias = SeamBackend[BlocklistSource]


def backend(scheme: str) -> Backend:
    """The class registered for ``scheme`` in :data:`BACKENDS`, imported now (ValueError
    naming the registered schemes for another)."""
    return cast(Backend, load_backend(BACKENDS, scheme))


def open_blocklist_source(url: str) -> BlocklistSource:
    """The source a URL names: ``file:///path/blocklist.txt`` or ``postgresql://…``.

    An unknown scheme raises ValueError naming the registered ones.
    """
    return cast(BlocklistSource, open_backend(BACKENDS, url))
