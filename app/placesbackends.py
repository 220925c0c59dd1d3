"""The places page's backend panel: which database serves places, and how far the PostgreSQL
standby the API reads places from is behind the primary it writes to (issue 26).

Both come from ``GET /healthz``, which the page asks anyway for its status line:
``systems.places.backend`` names the engine (the data set's SQLite file, or PostgreSQL +
PostGIS with its address, never a user or password) and ``systems.places.replica`` gives
WAL bytes the standby has not replayed yet and seconds behind (0 when it has replayed
everything, even while the primary is idle). The replica figures are left out when the API
reads places from the primary alone.
"""

from __future__ import annotations

from typing import Any

import streamlit as st
from common import api_url, cached_health, metric_row

from lookup.labs import redact

#: How the panel names each engine the places store may run on (``backend.engine``).
ENGINES = {"sqlite": "SQLite file", "postgresql": "PostgreSQL + PostGIS"}

#: How the page names the replica's lag; what each figure means, for the hover help.
HELP_BYTES = (
    "Write-ahead log the primary has written that the replica has not replayed yet: "
    "changes a search served from the replica cannot see."
)
HELP_SECONDS = (
    "How old the newest change the replica has replayed was when it fell behind; 0 when it "
    "has replayed everything the primary wrote (an idle primary does not count as lag)."
)


def fmt_bytes(n: int) -> str:
    """``0 B``, ``812 B``, ``3.4 KiB``, ``12.0 MiB``: a lag in the unit a person reads."""
    if n < 1024:
        return f"{n} B"
    size = n / 1024
    for unit in ("KiB", "MiB"):
        if size < 1024:
            return f"{size:,.1f} {unit}"
        size /= 1024
    return f"{size:,.1f} GiB"


def fmt_seconds(seconds: Any) -> str:
    """A lag in seconds as shown: ``0 s``, ``0.42 s``, ``3 min 5 s``; ``unknown`` for None."""
    if seconds is None:
        return "unknown"
    s = float(seconds)
    if s < 10:
        return f"{s:.2f} s".replace(".00 s", " s")
    if s < 120:
        return f"{s:.0f} s"
    return f"{int(s // 60)} min {int(s % 60)} s"


def backend_of(systems: dict[str, Any] | None) -> tuple[str, str] | None:
    """``(engine as shown, where)`` for the places store the API reports, or None.

    ``where`` is the address without a password (the API leaves the user out too; an older
    API reports only ``store``, the engine, and then ``where`` is empty).
    """
    places = (systems or {}).get("places")
    if not isinstance(places, dict):
        return None
    backend = places.get("backend")
    if isinstance(backend, dict):
        engine = str(backend.get("engine") or "")
        name = str(backend.get("name") or ENGINES.get(engine, engine))
        return (name, redact(str(backend.get("where") or ""))) if name else None
    store = places.get("store")
    return (ENGINES.get(store, str(store)), "") if isinstance(store, str) and store else None


def replica_report(systems: dict[str, Any] | None) -> dict[str, Any] | None:
    """The ``replica`` section of the places health report, or None without one."""
    places = (systems or {}).get("places")
    replica = places.get("replica") if isinstance(places, dict) else None
    return replica if isinstance(replica, dict) else None


def backends_panel() -> None:
    """One line naming the database that serves places, then the read replica's lag."""
    health = cached_health(api_url())
    if not health.up:
        return
    backend = backend_of(health.systems)
    if backend is not None:
        name, where = backend
        with st.container(key="places-backend"):
            st.caption(
                f"Places are stored in: **{name}**" + (f" at `{where}`" if where else "") + ". "
                "The search index is each API process's in-memory copy of it."
            )
    replica_panel(replica_report(health.systems))


def replica_panel(replica: dict[str, Any] | None) -> None:
    """One row of figures for the read replica's lag, or a warning when it cannot be read."""
    if replica is None:
        return
    where = replica.get("url", "a read replica")
    with st.container(key="places-replica"):
        if replica.get("status") != "ok":
            st.warning(
                f"The read replica at {where} cannot be read: {replica.get('message', '')}. "
                "Searches keep answering from memory; new places reach this server once it "
                "is back (or point LOOKUP_PLACES_READ_URL at the primary).",
                icon=":material/sync_problem:",
            )
            return
        st.caption(
            f"Places are read from the replica at {where}"
            + (", which has caught up" if replica.get("caughtUp") else ", which is behind")
            + "; writes go to the primary."
        )
        metric_row(
            st.columns(3),
            [
                ("Replica lag (bytes)", fmt_bytes(int(replica.get("lagBytes") or 0)), HELP_BYTES),
                ("Replica lag (seconds)", fmt_seconds(replica.get("lagSeconds")), HELP_SECONDS),
                ("Replayed up to", str(replica.get("replayLsn") or "–"), None),
            ],
        )
