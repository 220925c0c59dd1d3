"""The web search page's cluster as a lab: shard servers as processes and a coordinator.

:class:`SearchClusterLab` starts ``shards × replicas`` ``lookup search serve-shard``
processes over the data directory's index (:class:`~lookup.search.shard_server.ShardFleet`)
and a coordinator over them (:func:`~lookup.search.remote.remote_coordinator`) inside a
read-only :class:`~lookup.search.service.SearchService`, so the page can stop, continue or
kill one replica and send a burst of queries through the coordinator to watch the hedges
and the partial answers. The per-replica latency figures are computed here, from the
fan-out trace of the lab's own queries (which replica answered each shard, and how fast).
"""

from __future__ import annotations

import signal
import time
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import httpx
import numpy as np

from lookup.errors import NotBuilt
from lookup.labs.core import Lab
from lookup.search.coordinator import QueryError
from lookup.search.manifest import current_manifest
from lookup.search.remote import RemoteShards, remote_coordinator
from lookup.search.service import SearchService
from lookup.search.shard_server import ShardFleet

__all__ = ["DEADLINE_MS", "REPLICAS", "SIGNALS", "Burst", "SearchClusterLab", "tally"]

#: Replicas per shard the page starts.
REPLICAS = 2
#: The coordinator's deadline per query: long enough for a healthy shard on a loaded
#: two-core machine, short enough that a stopped replica shows as a partial answer.
DEADLINE_MS = 1500.0
#: The signals a page may send, by name, with the state each leaves the replica in.
SIGNALS: dict[str, tuple[int, str]] = {
    "SIGSTOP": (signal.SIGSTOP, "stopped"),
    "SIGCONT": (signal.SIGCONT, "running"),
    "SIGKILL": (signal.SIGKILL, "killed"),
}
#: Latencies kept per replica for its p50/p99.
WINDOW = 512
#: How long a health probe of one replica may take (a stopped one never answers).
PROBE_S = 0.5


def _pct(values: Sequence[float], q: float) -> float | None:
    """The ``q``-th percentile of ``values`` (None when there are none)."""
    return round(float(np.percentile(np.asarray(values, float), q)), 3) if values else None


@dataclass
class Burst:
    """What one burst of queries through the coordinator saw."""

    queries: int
    hedging: bool
    p50_ms: float | None
    p99_ms: float | None
    hedges_fired: int
    hedges_won: int
    partial: int  # answers with shardsAnswered < shardsQueried
    failed: int  # queries that raised (none expected: a partial answer is still an answer)
    shards: int
    at: float

    def to_json(self) -> dict[str, Any]:
        """JSON form (the page keeps the latest bursts)."""
        return asdict(self)


def tally(
    bodies: Sequence[dict[str, Any]], *, hedging: bool, failed: int = 0
) -> tuple[Burst, list[tuple[tuple[int, int], float]]]:
    """Count a burst from its answers (each with its ``fanout`` trace): latency, hedges
    fired, hedges won by a replica other than the primary (replica 0), partial answers;
    and each shard answer's ``((shard, replica), latency ms)``, for per-replica figures."""
    took = [float(b["tookMs"]) for b in bodies]
    fired = won = partial = shards = 0
    answered: list[tuple[tuple[int, int], float]] = []
    for body in bodies:
        shards = max(shards, int(body.get("shardsQueried") or 0))
        if int(body.get("shardsAnswered", 0)) < int(body.get("shardsQueried", 0)):
            partial += 1
        for t in (body.get("fanout") or {}).get("shards", []):
            fired += bool(t["hedged"])
            if t["replica"] is None:
                continue
            won += bool(t["hedged"] and t["replica"] != 0)
            if t["latencyMs"] is not None:
                answered.append(((int(t["shard"]), int(t["replica"])), float(t["latencyMs"])))
    burst = Burst(
        queries=len(bodies) + failed,
        hedging=hedging,
        p50_ms=_pct(took, 50),
        p99_ms=_pct(took, 99),
        hedges_fired=fired,
        hedges_won=won,
        partial=partial,
        failed=failed,
        shards=shards,
        at=time.time(),
    )
    return burst, answered


class SearchClusterLab(Lab):
    """``shards × replicas`` shard servers over one index and a coordinator over them."""

    kind = "search-cluster"

    def __init__(
        self,
        key: str = "",
        *,
        index: str | Path,
        replicas: int = REPLICAS,
        deadline_ms: float = DEADLINE_MS,
        start_timeout_s: float = 120.0,
    ) -> None:
        super().__init__(key)
        if replicas < 1:
            raise ValueError("a cluster needs at least one replica per shard")
        self.index = Path(index)
        self.replicas = replicas
        self.deadline_ms = deadline_ms
        self.start_timeout_s = start_timeout_s
        self.fleet: ShardFleet | None = None
        self.service: SearchService | None = None
        self.members: RemoteShards | None = None
        self.states: dict[tuple[int, int], str] = {}
        self.latencies: dict[tuple[int, int], deque[float]] = {}
        self.bursts: list[Burst] = []

    # -- the Lab interface -------------------------------------------------------------
    def start(self) -> None:
        manifest = current_manifest(self.index)
        if manifest is None:
            raise NotBuilt(f"no index version in {self.index}: build one first")
        self.fleet = ShardFleet(self.index, manifest.shards, self.replicas, realtime=False)
        self.fleet.start()
        self.fleet.wait_ready(timeout=self.start_timeout_s)
        coordinator, self.members = remote_coordinator(
            self.fleet.members(), deadline_ms=self.deadline_ms, replicas=self.replicas
        )
        self.service = SearchService(self.index, realtime=False, coordinator=coordinator)
        self.service.reload()
        self.states = {key: "running" for key in self.fleet.procs}
        self.latencies = {key: deque(maxlen=WINDOW) for key in self.fleet.procs}
        self.started_at = time.time()

    def close(self) -> None:
        if self.service is not None:
            self.service.close()  # the coordinator and its HTTP clients too
        if self.fleet is not None:
            self.fleet.stop()

    def pids(self) -> list[int]:
        if self.fleet is None:
            return []
        return [p.pid for p in self.fleet.procs.values() if p.poll() is None]

    def alive(self) -> bool:
        # alive while any replica runs: a killed one is a row the page shows as killed
        return bool(self.pids())

    def addresses(self) -> dict[str, str]:
        if self.fleet is None:
            return {}
        return {f"shard {s} replica {r}": a for (s, r), a in sorted(self.fleet.addresses.items())}

    # -- what the page asks ------------------------------------------------------------
    def signal(self, shard: int, replica: int, name: str) -> None:
        """Send ``name`` (a key of :data:`SIGNALS`) to one of this lab's replicas."""
        if name not in SIGNALS:
            raise ValueError(f"signal must be one of {', '.join(SIGNALS)}, not {name!r}")
        if self.fleet is None or (shard, replica) not in self.fleet.procs:
            raise KeyError(f"no replica {replica} of shard {shard} in this cluster")
        if self.states.get((shard, replica)) == "killed":
            return
        sig, state = SIGNALS[name]
        self.fleet.signal(shard, replica, sig)
        self.states[(shard, replica)] = state
        if sig == signal.SIGKILL:
            self.fleet.procs[(shard, replica)].wait(timeout=10.0)

    def state(self, shard: int, replica: int) -> str:
        """``running``, ``stopped`` (SIGSTOP), ``killed`` or ``exited`` (by itself)."""
        if self.fleet is None:
            return "stopped"
        known = self.states.get((shard, replica), "running")
        if known != "killed" and self.fleet.procs[(shard, replica)].poll() is not None:
            return "exited"
        return known

    def _probe(self, client: httpx.Client, address: str) -> dict[str, Any]:
        try:
            reply = client.get(f"{address}/healthz")
            report = reply.json().get("systems", {}).get("search-shard", {})
            return dict(report) if isinstance(report, dict) else {}
        except (httpx.HTTPError, ValueError):
            return {}

    def cluster(self) -> dict[str, Any]:
        """Each replica's figures and the coordinator's latest queries.

        ``members``: ``{shard, replica, address, pid, state, version, health, requests,
        errors, hedges, wins, p50Ms, p99Ms, samples}`` — version and health from the
        replica's own ``/healthz`` (a stopped or killed one does not answer: ``health``
        says so), the counters from the coordinator, the latencies from this lab's
        queries that the replica answered. ``recent``: the latest queries' fan-out.
        """
        if self.fleet is None or self.service is None or self.members is None:
            return {"members": [], "recent": [], "deadlineMs": self.deadline_ms}
        status = self.service.coordinator.status()
        counters: dict[tuple[int, int], dict[str, Any]] = {}
        for group in status["shards"]:
            for r in group["replicas"]:
                counters[(group["shard"], r["replica"])] = r
        errors = {(m["shard"], m["replica"]): m["errors"] for m in self.members.members()}
        rows = []
        with httpx.Client(trust_env=False, timeout=PROBE_S) as client:
            for (s, r), address in sorted(self.fleet.addresses.items()):
                state = self.state(s, r)
                report = self._probe(client, address) if state == "running" else {}
                seen = counters.get((s, r), {})
                lat = list(self.latencies.get((s, r), ()))
                rows.append(
                    {
                        "shard": s,
                        "replica": r,
                        "address": address,
                        "pid": self.fleet.pid(s, r),
                        "state": state,
                        "version": report.get("version"),
                        "health": report.get("status") or "no answer",
                        "requests": int(seen.get("requests", 0)),
                        "errors": int(errors.get((s, r), 0)),
                        "hedges": int(seen.get("hedgeRequests", 0)),
                        "wins": int(seen.get("wins", 0)),
                        "p50Ms": _pct(lat, 50),
                        "p99Ms": _pct(lat, 99),
                        "samples": len(lat),
                    }
                )
        return {"members": rows, "recent": status["recent"], "deadlineMs": self.deadline_ms}

    def run_queries(
        self, queries: Iterable[str], *, rounds: int = 1, hedging: bool = True
    ) -> Burst:
        """Send ``queries`` (``rounds`` times over) through the coordinator, one after
        another, and count what happened: latency, hedges fired and won, partial answers."""
        if self.service is None:
            raise RuntimeError("the cluster is not running")
        words = [q for q in queries if q.strip()]
        if not words:
            raise ValueError("a burst needs at least one query")
        bodies: list[dict[str, Any]] = []
        failed = 0
        for _ in range(max(1, rounds)):
            for q in words:
                try:
                    bodies.append(self.service.search(q, trace=True, suggest=False, hedge=hedging))
                except (QueryError, NotBuilt):
                    failed += 1
        burst, answered = tally(bodies, hedging=hedging, failed=failed)
        for key, ms in answered:
            if key in self.latencies:
                self.latencies[key].append(ms)
        self.bursts.append(burst)
        return burst
