"""Leadership: which one process of a fleet runs a job that must run once, not N times.

A :class:`Leadership` answers :meth:`~Leadership.hold` — "am I the leader now?" — trying
to become it when nobody is, and keeping it while this process lives:

* :class:`SoloLeadership` — the embedded default: a process that owns its data directory
  always leads;
* :class:`~lookup.kit.leader_pg.PostgresLeadership` — a session-level advisory lock in the
  fleet's shared database, held on a connection of its own. When the leader dies (even
  ``kill -9``), its connection closes, PostgreSQL releases the lock, and the next process
  to ask takes over; a leader whose connection broke learns it at its next ``hold`` and
  stops leading.

:func:`open_leadership` picks one from a URL (``solo:`` or ``postgresql://…``).
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from lookup.kit.storeurl import parse_store_url

__all__ = ["Leadership", "SoloLeadership", "open_leadership"]


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


class SoloLeadership:
    """Always the leader: the one process over its own data directory."""

    def __init__(self, name: str) -> None:
        self.name = name

    def describe(self) -> str:
        return "solo"

    def hold(self) -> bool:
        return True

    def release(self) -> None:
        pass


def open_leadership(url: str, name: str) -> Leadership:
    """The leadership a URL names: ``solo:`` or ``postgresql://…`` (an advisory lock)."""
    parsed = parse_store_url(url, ("solo", "postgresql"))
    if parsed.scheme == "postgresql":
        from lookup.kit.leader_pg import PostgresLeadership

        return PostgresLeadership(parsed.url, name)
    return SoloLeadership(name)
