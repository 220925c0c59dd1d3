"""Leadership: which one process of a fleet runs a job that must run once, not N times.

A :class:`Leadership` answers :meth:`~Leadership.hold` — "am I the leader now?" — trying
to become it when nobody is, and keeping it while this process lives.

This package is the seam. Its ``__init__`` is the port and imports no backend:
:class:`Leadership`, :data:`BACKENDS` (the registry ``scheme → "module:Class"``) and
:func:`open_leadership`, which imports the backend a URL names when it is called. The
backends:

* :mod:`.solo` (``solo:``) — the embedded default: a process that owns its data
  directory always leads;
* :mod:`.postgres` (``postgresql://…``) — a session-level advisory lock in the fleet's
  shared database, held on a connection of its own. When the leader dies (even
  ``kill -9``), its connection closes, PostgreSQL releases the lock, and the next process
  to ask takes over; a leader whose connection broke learns it at its next ``hold`` and
  stops leading.

Adding a backend is one file with a class that has ``from_url`` plus one line in
:data:`BACKENDS`; ``tests/contracts/test_leadership_contract.py`` then runs against it.
"""

from __future__ import annotations

from typing import Protocol, cast, runtime_checkable

from lookup.kit.engines.storeurl import StoreUrl
from lookup.kit.registry import load_backend, open_backend

__all__ = ["BACKENDS", "Backend", "Leadership", "backend", "open_leadership"]

#: Each URL scheme and the class that serves it, imported when a URL names the scheme.
BACKENDS: dict[str, str] = {
    "solo": "lookup.kit.leadership.solo:SoloLeadership",
    "postgresql": "lookup.kit.leadership.postgres:PostgresLeadership",
}


@runtime_checkable
class Leadership(Protocol):
    """One leader per name among every process that asks."""

    name: str

    def describe(self) -> str:
        """Where the election happens (never credentials)."""
        ...

    def hold(self) -> bool:
        """True while this process leads; tries to take the lead when it does not."""
        ...

    def release(self) -> None:
        """Stop leading (another process may take over at once)."""
        ...


class Backend(Protocol):
    """What :data:`BACKENDS` names: a class that opens an election from a parsed URL."""

    def from_url(self, url: StoreUrl, name: str) -> Leadership:
        """The leadership of ``name`` where ``url`` says."""
        ...


def backend(scheme: str) -> Backend:
    """The class registered for ``scheme`` in :data:`BACKENDS`, imported now (ValueError
    naming the registered schemes for another)."""
    return cast(Backend, load_backend(BACKENDS, scheme))


def open_leadership(url: str, name: str) -> Leadership:
    """The leadership a URL names: ``solo:`` or ``postgresql://…`` (an advisory lock).

    An unknown scheme raises ValueError naming the registered ones.
    """
    return cast(Leadership, open_backend(BACKENDS, url, name))
