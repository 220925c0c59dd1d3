"""What every scenario drill shares: the servers it may need, and how an outcome is built.

A drill needing a server (``redis``, ``postgres``, ``etcd``) starts its own throw-away
one on a free loopback port from the installed binary, and stops it when done; when
the binary is not installed, :func:`need` raises :class:`~lookup.errors.Unavailable`
naming the server and how to install it — never a silent skip.
"""

from __future__ import annotations

import math
import statistics
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path

from lookup import settings
from lookup.errors import Unavailable
from lookup.study.measure import DrillOutcome

__all__ = [
    "SERVERS",
    "median",
    "need",
    "outcome",
    "path_in",
    "percentile",
    "scratch_dir",
    "server_available",
]

#: The servers a drill may need: how to tell whether one is installed, and how to get it.
SERVERS: dict[str, str] = {
    "redis": "redis-server (apt-get install redis-server)",
    "postgres": "PostgreSQL (apt-get install postgresql)",
    "etcd": "etcd (apt-get install etcd-server)",
}


def server_available(name: str) -> bool:
    """Whether the binary throw-away ``name`` servers are started from is installed."""
    if name == "redis":
        from lookup.kit.engines.redisserver import redis_available

        return redis_available()
    if name == "postgres":
        from lookup.kit.engines.pgserver import postgres_available

        return postgres_available()
    if name == "etcd":
        from lookup.kit.engines.etcdserver import etcd_available

        return etcd_available()
    raise ValueError(f"unknown server {name!r}; drills know {', '.join(SERVERS)}")


def _where(name: str) -> str:
    if name == "redis":
        return str(settings.get("redis_bin"))
    if name == "etcd":
        return str(settings.get("etcd_bin"))
    return str(settings.get("postgres_bin") or "/usr/lib/postgresql/*/bin")


def need(*names: str, drill: str = "") -> None:
    """Raise :class:`Unavailable` naming the first of ``names`` that is not installed."""
    for name in names:
        if not server_available(name):
            what = f"the drill {drill!r}" if drill else "this drill"
            raise Unavailable(
                f"{what} needs {SERVERS[name]}; it is not installed here (looked for "
                f"{_where(name)}). The drill starts its own throw-away server once it is.",
                code="SERVER_MISSING",
                extra={"server": name},
            )


def scratch_dir(prefix: str) -> tempfile.TemporaryDirectory[str]:
    """A temporary directory for one run (removed when the ``with`` block ends)."""
    return tempfile.TemporaryDirectory(prefix=f"lookup-drill-{prefix}-")


def outcome(choices: Mapping[str, str], choice: str, figures: Mapping[str, float],
            summary: str, chain: Iterable[str]) -> DrillOutcome:  # fmt: skip
    """A :class:`DrillOutcome`, checking that ``choice`` is one of the drill's choices."""
    if choice not in choices:
        raise AssertionError(f"measured choice {choice!r} is not one of {sorted(choices)}")
    clean = {k: float(v) for k, v in figures.items()}
    return DrillOutcome(choice=choice, figures=clean, summary=summary, chain=tuple(chain))


def percentile(values: list[float], q: float) -> float:
    """The ``q``-th percentile (0–100, nearest rank) of ``values`` (0.0 when empty)."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = max(1, min(len(ordered), math.ceil(q / 100 * len(ordered))))
    return float(ordered[rank - 1])


def median(values: list[float]) -> float:
    """The median of ``values`` (0.0 when empty)."""
    return float(statistics.median(values)) if values else 0.0


def path_in(directory: str, name: str) -> Path:
    """``directory / name`` as a :class:`Path`."""
    return Path(directory) / name
