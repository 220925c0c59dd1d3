"""Id blocks: range leases of ids from one shared counter, so minting an id needs no
coordination per id.

An :class:`IdAllocator` takes **blocks** of consecutive ids (:class:`IdBlock`) from one
counter row with a single atomic statement, and spends its block in memory; a process
that dies leaves a gap, never a duplicate. The shortener mints its keys from these ids
(through the keyed permutation of :mod:`lookup.kit.ids`).

This package is the seam. Its ``__init__`` is the port and imports no backend:
:class:`IdAllocator`, :class:`IdBlock`, :data:`BACKENDS` (the registry
``scheme → "module:Class"``) and :func:`open_id_allocator`, which imports the backend a
URL names when it is called. The backends:

* :mod:`.sqlite` — the ``id_allocator`` row of a SQLite file (the link store's): the
  embedded default;
* :mod:`.postgres` — the design notes' ``id_blocks`` row in the fleet's shared database.

Adding a backend is one file with a class that has ``from_url`` plus one line in
:data:`BACKENDS`; ``tests/contracts/test_id_allocator_contract.py`` then runs against it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, cast, runtime_checkable

from lookup.kit.registry import backend_for, load_backend
from lookup.kit.storeurl import StoreUrl

__all__ = ["BACKENDS", "Backend", "IdAllocator", "IdBlock", "backend", "open_id_allocator"]

#: Each URL scheme and the class that serves it, imported when a URL names the scheme.
BACKENDS: dict[str, str] = {
    "sqlite": "lookup.kit.idblocks.sqlite:SqliteIdAllocator",
    "postgresql": "lookup.kit.idblocks.postgres:PostgresIdAllocator",
}


@dataclass(frozen=True)
class IdBlock:
    """A block of ids ``[start, end)`` taken from the allocator row."""

    start: int
    end: int


@runtime_checkable
class IdAllocator(Protocol):
    """What a key minter needs from an id source: blocks of ids no other allocator gets.

    ``lease()`` takes the next block from the shared counter; ``next_id()`` spends the
    current block (leasing another when it runs out); ``leases_taken`` counts leases for
    the metrics; ``close()`` lets go of the connection (the next lease reopens it).
    """

    leases_taken: int

    def lease(self) -> IdBlock:
        """Take the next block ``[start, end)``; two allocators never get overlapping ones."""
        ...

    def next_id(self) -> int:
        """The next unused id; raises ``OverflowError`` past the allocator's limit."""
        ...

    def close(self) -> None:
        """Release the connection; a later lease reopens it."""
        ...


class Backend(Protocol):
    """What :data:`BACKENDS` names: a class that opens its allocator from a parsed URL."""

    def from_url(self, url: StoreUrl, name: str = "default", **options: Any) -> IdAllocator:
        """The allocator of the counter ``name`` in the store ``url`` names."""
        ...


def backend(scheme: str) -> Backend:
    """The class registered for ``scheme`` in :data:`BACKENDS`, imported now (ValueError
    naming the registered schemes for another)."""
    return cast(Backend, load_backend(BACKENDS, scheme))


def open_id_allocator(url: str, name: str = "default", **options: Any) -> IdAllocator:
    """The id allocator a URL names: ``sqlite:///path`` (the row ``name`` in that file) or
    ``postgresql://…`` (the ``id_blocks`` row ``name``).

    ``options`` go to the backend (``block_size``, ``limit``, ``start``; PostgreSQL's
    ``pool_timeout_s``). An unknown scheme raises ValueError naming the registered ones.
    """
    found, parsed = backend_for(BACKENDS, url)
    return cast(Backend, found).from_url(parsed, name, **options)
