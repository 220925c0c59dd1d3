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

import threading
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, Protocol, cast, runtime_checkable

from lookup.kit.engines.storeurl import StoreUrl
from lookup.kit.registry import load_backend, open_backend

__all__ = [
    "BACKENDS",
    "Backend",
    "BlockSpender",
    "IdAllocator",
    "IdBlock",
    "backend",
    "open_id_allocator",
]

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


class BlockSpender(ABC):
    """What every backend shares: its options, and spending the current block in memory.

    A backend gives :meth:`lease` (one atomic statement on its counter row, ending with
    :meth:`_leased`); :meth:`next_id` spends the block it returned and leases the next.
    """

    def __init__(self, name: str, *, block_size: int, limit: int | None) -> None:
        if block_size < 1:
            raise ValueError("block_size must be at least 1")
        self.name = name
        self.block_size = block_size
        self.limit = limit
        self.leases_taken = 0
        self._lock = threading.Lock()  # the block being spent
        self._count_lock = threading.Lock()
        self._next = 0
        self._end = 0

    @abstractmethod
    def lease(self) -> IdBlock:
        """Take the next block ``[start, end)``; two allocators never get overlapping ones."""

    def _leased(self, end: int) -> IdBlock:
        """The block of ``block_size`` ids the counter row moved past to ``end``, counted."""
        with self._count_lock:
            self.leases_taken += 1
        return IdBlock(end - self.block_size, end)

    def next_id(self) -> int:
        """The next unused id; thread-safe. Raises ``OverflowError`` past ``limit``."""
        with self._lock:
            if self._next >= self._end:
                lease = self.lease()
                self._next, self._end = lease.start, lease.end
            value = self._next
            if self.limit is not None and value >= self.limit:
                raise OverflowError(f"id space exhausted: {value} >= {self.limit}")
            self._next += 1
            return value

    def remaining_in_block(self) -> int:
        """How many ids of the current lease are still unspent in this process."""
        with self._lock:
            return max(0, self._end - self._next)


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
    return cast(IdAllocator, open_backend(BACKENDS, url, name, **options))
