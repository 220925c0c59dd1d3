"""The places database's read replica: where an API process reads its index from, and how
far behind the primary it is.

With ``LOOKUP_PLACES_READ_URL`` naming a streaming standby of the PostgreSQL places
database (``LOOKUP_PLACES_STORE_URL``), every API process builds its index from the
replica's snapshot and tails the change stream there, so the fleet's start-up loads and
once-a-second polls leave the primary to the writes; every write still goes to the
primary. The writing process applies its own write from the primary at once (it must
find what it just added); the others see it once the replica has replayed it and their
next poll ran — the replica's lag plus a poll.

A snapshot is only taken from a replica that holds the finished data set: a replica still
replaying the bulk load would give an index without the loaded places, and the change
stream does not carry a load. Until it does, loading raises
:class:`~lookup.errors.Unavailable`, and the tailer tries again on its next poll.

:meth:`PlacesReplica.status` is the ``replica`` section of the places health report:
bytes of WAL not replayed yet and seconds behind
(:func:`lookup.kit.engines.pgstandby.replication_lag`: 0 when caught up, even with an
idle primary), read at most once per :data:`LAG_TTL_S` so that health checks do not
each open two connections.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from lookup.errors import Unavailable
from lookup.geo.places import PlaceStore, open_place_store
from lookup.kit.engines.pgstandby import ReplicationLag, replication_lag
from lookup.kit.engines.postgres import describe_url

__all__ = ["LAG_TTL_S", "PlacesReplica"]

#: How long one reading of the replica's lag is reported again (seconds).
LAG_TTL_S = 1.0
_SCHEMES = ("postgresql", "postgres")


class PlacesReplica:
    """The read replica at ``read_url`` of the places primary at ``write_url``.

    Both must be PostgreSQL URLs: a SQLite file has no replica (``ValueError``, naming the
    settings, so a server misconfigured this way fails to start loudly).
    """

    def __init__(
        self,
        read_url: str,
        write_url: str,
        *,
        ttl_s: float = LAG_TTL_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if write_url.split(":", 1)[0].lower() not in _SCHEMES:
            raise ValueError(
                "LOOKUP_PLACES_READ_URL names a read replica of the places database on "
                "PostgreSQL: set LOOKUP_PLACES_STORE_URL=postgresql://… (the primary) too"
            )
        if read_url.split(":", 1)[0].lower() not in _SCHEMES:
            raise ValueError("LOOKUP_PLACES_READ_URL must be a postgresql:// URL")
        self.read_url = read_url
        self.write_url = write_url
        self.ttl_s = ttl_s
        self._clock = clock
        self._lock = threading.Lock()
        self._last: tuple[float, dict[str, Any]] | None = None

    def open(self) -> PlaceStore:
        """A places store over the replica, for reads only (a write through it would be
        refused by the server: a standby is read-only)."""
        return open_place_store(self.read_url)

    def require_loaded(self, reader: PlaceStore) -> None:
        """Raise :class:`~lookup.errors.Unavailable` while the replica does not hold the
        finished data set the primary holds (it has not replayed the load yet)."""
        loaded = getattr(reader, "loaded", None)
        if loaded is not None and not loaded():
            raise Unavailable(
                f"the places read replica ({describe_url(self.read_url)}) does not hold the "
                "loaded data set yet; the index loads from it once it has replayed the load"
            )

    def lag(self) -> ReplicationLag:
        """How far the replica is behind the primary now (two short connections)."""
        return replication_lag(self.read_url, self.write_url)

    def status(self) -> dict[str, Any]:
        """The replica's health: ``status`` ``ok`` with ``lagBytes``/``lagSeconds``, or
        ``UNAVAILABLE`` with the reason; one reading is reused for :attr:`ttl_s`."""
        with self._lock:
            now = self._clock()
            if self._last is not None and now - self._last[0] < self.ttl_s:
                return self._last[1]
            report: dict[str, Any] = {"url": describe_url(self.read_url)}
            try:
                report.update(status="ok", **self.lag().as_json())
            except Unavailable as exc:
                report.update(status=exc.code, message=str(exc))
            self._last = (now, report)
            return report
