"""Rolling activation of a new index version across shard server processes.

A coordinator over shard servers (:mod:`.remote`) serves one *live* index version; the
shard servers are told which version to serve (``POST /v1/search/shard/activate``,
:mod:`.shard_server`), so a version published to the location does not go live by
itself. :class:`Rollout` moves the fleet to a new version the way the typeahead's canary
does (validate → canary → promote or roll back), across processes:

1. **load on the canary set** — one replica of every shard (replica 0 by default) loads
   the candidate; it checks the files' checksums as it opens them, so a damaged version
   is refused here and rolled back at once (the other replicas never saw it);
2. **canary** — a deterministic share of queries (a hash of the candidate version and
   the query's identity, as in typeahead) runs on the candidate *and* on the live
   version — the same query both ways — and the two are compared: the mean overlap of
   the top 10, the empty-result rate, the share of failed or partial answers, and the
   p95 latency. The candidate's answer is served when it is complete; a failed or
   partial one is replaced by the live answer, so the user never sees the failure;
3. **verdict** — after ``min_queries`` canary queries every figure within its bound
   promotes the candidate (every replica loads it; the coordinator's live version is
   swapped in one reference assignment), one out of bounds rolls it back (the canary
   replicas return to the live version, which they still hold); a version rolled back
   is not tried again.

**No query ever mixes versions.** Each query is run on one version, and every shard
request carries it (``?version=V``); a replica holds the version it serves and the one
before it, and refuses others with ``409 VERSION_NOT_HELD``. While replicas switch one
by one a query pinned to the old version is still answered by all of them; a query that
came back partial anyway is retried once, pinned to the other version this coordinator
holds, and the complete answer is served (``version`` in the body says which).

The comparison follows :mod:`lookup.typeahead.canary` (systems do not import each other:
the figures are computed here, over search results' URLs).
"""

from __future__ import annotations

import hashlib
import itertools
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

import httpx

from lookup.errors import Conflict, Damaged, NotBuilt
from lookup.search import manifest as manifests
from lookup.search.coordinator import Coordinator
from lookup.search.location import IndexLocation
from lookup.search.remote import RemoteShards
from lookup.search.shard import IndexVersion
from lookup.search.shard_server import ACTIVATE_PATH, open_version

__all__ = ["CanaryFigures", "Rollout", "RolloutPolicy", "in_canary", "overlap_at"]

#: How many results the overlap compares (the first page).
TOP = 10


@dataclass(frozen=True)
class RolloutPolicy:
    """How big the canary is and what counts as healthy (the typeahead canary's bounds)."""

    share: float = 0.2
    min_queries: int = 30
    #: The mean share of the live top 10 the candidate keeps.
    min_overlap: float = 0.6
    #: The candidate's empty-result rate may exceed the live one's by this much.
    max_empty_increase: float = 0.1
    #: Failed or partial candidate answers, as a share of canary queries.
    max_failure_rate: float = 0.05
    #: Candidate p95 ≤ max(live p95 × ratio, live p95 + slack): a loaded machine jitters by
    #: milliseconds, a broken index by orders of magnitude.
    max_latency_ratio: float = 3.0
    latency_slack_ms: float = 250.0
    #: Canary queries whose times are not counted: a version just loaded reads its files
    #: from disk on its first queries (cold pages), which is not how it will run.
    warmup_queries: int = 5

    def __post_init__(self) -> None:
        if not 0.0 < self.share <= 1.0:
            raise ValueError("share must be in (0, 1]")
        if self.min_queries < 1 or self.warmup_queries < 0:
            raise ValueError("min_queries must be at least 1, warmup_queries at least 0")
        for name in ("min_overlap", "max_empty_increase", "max_failure_rate"):
            if not 0.0 <= getattr(self, name) <= 1.0:  # NaN fails too
                raise ValueError(f"{name} must be between 0 and 1")


def in_canary(identity: str, salt: str, share: float) -> bool:
    """Whether a query is in the canary: a stable hash of (salt, identity) below ``share``."""
    digest = hashlib.sha256(f"{salt}\x00{identity}".encode()).digest()
    return int.from_bytes(digest[:8], "big") < share * 2**64


def overlap_at(candidate: list[str], live: list[str], k: int = TOP) -> float:
    """The share of the live top ``k`` the candidate's top ``k`` keeps (1.0 when both are
    empty, 0.0 when only the live one has results)."""
    ours, theirs = candidate[:k], live[:k]
    if not theirs:
        return 1.0 if not ours else 0.0
    return len(set(ours) & set(theirs)) / len(theirs)


def _p95(samples: list[float]) -> float:
    if not samples:
        return 0.0
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]


@dataclass
class CanaryFigures:
    """The comparison of a candidate with the live version on the same queries."""

    queries: int = 0
    failed: int = 0
    empty_candidate: int = 0
    empty_live: int = 0
    overlap_sum: float = 0.0
    candidate_ms: deque[float] = field(default_factory=lambda: deque(maxlen=1000))
    live_ms: deque[float] = field(default_factory=lambda: deque(maxlen=1000))

    def record(
        self,
        candidate: dict[str, Any] | None,
        live: dict[str, Any] | None,
        candidate_ms: float,
        live_ms: float,
        *,
        timed: bool = True,
    ) -> None:
        """One canary query: its two answers (None: failed or partial) and their times
        (not counted when ``timed`` is false: the warm-up)."""
        self.queries += 1
        if candidate is None:
            self.failed += 1
            return
        ours = _urls(candidate)
        theirs = _urls(live) if live is not None else ours
        self.empty_candidate += not ours
        self.empty_live += not theirs
        self.overlap_sum += overlap_at(ours, theirs)
        if timed:
            self.candidate_ms.append(candidate_ms)
            self.live_ms.append(live_ms)

    def to_dict(self) -> dict[str, Any]:
        """The figures as rates (JSON-able)."""
        answered = max(1, self.queries - self.failed)
        return {
            "queries": self.queries,
            "failureRate": self.failed / max(1, self.queries),
            "emptyRateCandidate": self.empty_candidate / answered,
            "emptyRateLive": self.empty_live / answered,
            "overlapAt10": self.overlap_sum / answered,
            "p95MsCandidate": round(_p95(list(self.candidate_ms)), 3),
            "p95MsLive": round(_p95(list(self.live_ms)), 3),
        }

    def verdict(self, policy: RolloutPolicy) -> tuple[str, str] | None:
        """``("promote"|"rollback", reason)`` once enough queries are in, else None."""
        if self.queries < policy.min_queries:
            return None
        f = self.to_dict()
        if f["failureRate"] > policy.max_failure_rate:
            return "rollback", f"{f['failureRate']:.0%} of canary queries failed or were partial"
        if f["emptyRateCandidate"] - f["emptyRateLive"] > policy.max_empty_increase:
            return "rollback", (
                f"empty results on {f['emptyRateCandidate']:.0%} of canary queries against "
                f"{f['emptyRateLive']:.0%} on the live version"
            )
        if f["overlapAt10"] < policy.min_overlap:
            return "rollback", f"top-10 overlap {f['overlapAt10']:.2f} < {policy.min_overlap}"
        bound = max(
            f["p95MsLive"] * policy.max_latency_ratio, f["p95MsLive"] + policy.latency_slack_ms
        )
        if f["p95MsCandidate"] > bound:
            return "rollback", f"p95 {f['p95MsCandidate']:.1f} ms > {bound:.1f} ms"
        return "promote", (
            f"{f['queries']} canary queries: overlap {f['overlapAt10']:.2f}, empty "
            f"{f['emptyRateCandidate']:.0%} vs {f['emptyRateLive']:.0%}, p95 "
            f"{f['p95MsCandidate']:.1f} vs {f['p95MsLive']:.1f} ms"
        )


def _urls(body: dict[str, Any]) -> list[str]:
    return [str(r["url"]) for r in body.get("results", ())]


def _complete(body: dict[str, Any]) -> bool:
    return bool(body.get("shardsAnswered") == body.get("shardsQueried"))


class ActivationFailed(RuntimeError):
    """A replica did not load the version it was told to (damaged, missing, away)."""


class Rollout:
    """The live index version of a coordinator over shard servers, and its canary rollout.

    ``start()`` tells every replica to serve the location's current version and opens it
    here; ``begin()`` starts a canary of a newer published version; queries go through
    :meth:`search`, which also applies the canary's verdict once it is due.
    """

    def __init__(
        self,
        location: IndexLocation,
        coordinator: Coordinator,
        shards: RemoteShards,
        *,
        admin_token: str,
        policy: RolloutPolicy | None = None,
        canary_replica: int = 0,
        timeout_s: float = 120.0,
    ) -> None:
        self.location = location
        self.coordinator = coordinator
        self.shards = shards
        self.policy = policy or RolloutPolicy()
        self.canary_replica = canary_replica
        self.timeout_s = timeout_s
        self._token = admin_token
        self.live: IndexVersion | None = None
        self.previous: IndexVersion | None = None  # kept for the retry of a partial answer
        self.candidate: IndexVersion | None = None
        self.figures = CanaryFigures()
        self.state = "idle"  # idle | canary | promoted | rolled-back
        self.reason = ""
        self.history: list[dict[str, Any]] = []
        self.rejected: set[int] = set()
        self.retries = 0
        self._counter = itertools.count()
        self._lock = threading.Lock()  # one transition at a time
        self._client = httpx.Client(trust_env=False, timeout=timeout_s)

    # --- telling replicas what to serve ---------------------------------------------------
    def _activate(self, members: list[dict[str, Any]], version: int) -> None:
        """Tell each member to serve ``version``; ActivationFailed names the first refusal."""
        for m in members:
            try:
                reply = self._client.post(
                    f"{m['address']}{ACTIVATE_PATH}",
                    json={"version": version},
                    headers={"authorization": f"Bearer {self._token}"},
                )
            except httpx.HTTPError as exc:
                raise ActivationFailed(
                    f"shard {m['shard']} replica {m['replica']} unreachable: {exc}"
                ) from None
            if reply.status_code != 200:
                try:
                    body = reply.json()
                except ValueError:
                    body = {}
                code = body.get("error", "") if isinstance(body, dict) else ""
                message = body.get("message", "") if isinstance(body, dict) else reply.text
                raise ActivationFailed(
                    f"shard {m['shard']} replica {m['replica']} refused version {version}: "
                    f"{reply.status_code} {code} {str(message)[:300]}"
                )

    def _canary_members(self) -> list[dict[str, Any]]:
        return [m for m in self.shards.members() if m["replica"] == self.canary_replica]

    def _other_members(self) -> list[dict[str, Any]]:
        return [m for m in self.shards.members() if m["replica"] != self.canary_replica]

    # --- transitions ----------------------------------------------------------------------
    def start(self) -> IndexVersion:
        """Serve the location's current version on every replica and here."""
        manifest = self.location.current()
        if manifest is None:
            raise LookupError(f"nothing published in {self.location!r}")
        with self._lock:
            snap = open_version(self.location, manifest.version)
            self.coordinator.ensure_shards(len(snap.shards))
            self._activate(self.shards.members(), snap.version)
            self.live = snap
            self.state = "idle"
        return snap

    def begin(self, version: int | None = None) -> str:
        """Start a canary of ``version`` (default: the location's current one); returns the
        state — ``canary``, or ``rolled-back`` when the canary replicas refused to load it."""
        if version is None:
            manifest = self.location.current()
            if manifest is None:
                raise LookupError(f"nothing published in {self.location!r}")
            version = manifest.version
        with self._lock:
            if self.live is None:
                raise RuntimeError("start() first")
            if self.candidate is not None:
                raise RuntimeError(f"a canary of version {self.candidate.version} is running")
            if version == self.live.version or version in self.rejected:
                return self.state
            canaries = self._canary_members()
            try:
                self._activate(canaries, version)
                candidate = open_version(self.location, version)
            except (ActivationFailed, Damaged, KeyError, OSError, ValueError) as exc:
                self._back_out(canaries, version, f"not loaded: {exc}")
                return self.state
            self.figures = CanaryFigures()
            self.candidate = candidate
            self.state, self.reason = "canary", ""
            self._log("canary", version, "")
            return self.state

    def _back_out(self, canaries: list[dict[str, Any]], version: int, reason: str) -> None:
        """Canary replicas back to the live version; the candidate is not tried again."""
        assert self.live is not None
        self._activate(canaries, self.live.version)
        reason += self._restore_current(version)
        self.rejected.add(version)
        self.candidate = None
        self.state, self.reason = "rolled-back", reason
        self._log("rolled-back", version, reason)

    def _restore_current(self, version: int) -> str:
        """Point the location's ``CURRENT`` back at the live version when it names the
        version rolled back (so a replica that restarts, or follows, serves the live one);
        a location changed meanwhile is left as it is. Returns a note if it failed."""
        assert self.live is not None
        current = manifests.version_of(self.location.current_token())
        previous = manifests.version_of(self.location.previous_token())
        if current == version and previous == self.live.version:
            try:
                self.location.rollback()
            except (Conflict, NotBuilt) as exc:
                return f"; CURRENT not restored: {exc}"
        return ""

    def step(self) -> str:
        """Apply the canary's verdict if it is due; returns the state."""
        if not self._lock.acquire(blocking=False):
            return self.state  # another thread is applying it
        try:
            candidate = self.candidate
            if candidate is None:
                return self.state
            verdict = self.figures.verdict(self.policy)
            if verdict is None:
                return self.state
            decision, reason = verdict
            if decision == "rollback":
                self._back_out(self._canary_members(), candidate.version, reason)
                return self.state
            try:
                self._activate(self._other_members(), candidate.version)
            except ActivationFailed as exc:
                self._activate(self._other_members(), self._live_version())
                self._back_out(self._canary_members(), candidate.version, f"promotion: {exc}")
                return self.state
            self.previous, self.live = self.live, candidate  # the swap
            self.candidate = None
            self.state, self.reason = "promoted", reason
            self._log("promoted", candidate.version, reason)
            return self.state
        finally:
            self._lock.release()

    def _live_version(self) -> int:
        assert self.live is not None
        return self.live.version

    def _log(self, state: str, version: int, reason: str) -> None:
        self.history.append({"at": time.time(), "state": state, "version": version,
                             "reason": reason, "figures": self.figures.to_dict()})  # fmt: skip

    # --- queries --------------------------------------------------------------------------
    def _run(self, snap: IndexVersion, query: str, options: dict[str, Any]) -> dict[str, Any]:
        body = self.coordinator.search(snap, query, **options)
        body["version"] = str(snap.version)
        return body

    def _live_answer(
        self, live: IndexVersion, query: str, options: dict[str, Any]
    ) -> dict[str, Any]:
        """The live version's answer; a partial one is retried once on the version before."""
        body = self._run(live, query, options)
        other = self.previous
        if not _complete(body) and other is not None and other is not live:
            self.retries += 1
            again = self._run(other, query, options)
            if _complete(again):
                return again
        return body

    def search(self, query: str, identity: str | None = None, **options: Any) -> dict[str, Any]:
        """Answer a query on one version (:meth:`Coordinator.search`'s options), comparing
        the candidate with the live version when the query is in the canary."""
        live, candidate = self.live, self.candidate
        if live is None:
            raise RuntimeError("start() first")
        who = identity if identity is not None else str(next(self._counter))
        if candidate is None or not in_canary(who, str(candidate.version), self.policy.share):
            return self._live_answer(live, query, options)
        t0 = time.perf_counter()
        ours: dict[str, Any] | None = self._run(candidate, query, options)
        t1 = time.perf_counter()
        theirs = self._live_answer(live, query, options)
        t2 = time.perf_counter()
        if ours is not None and not _complete(ours):
            ours = None
        timed = self.figures.queries >= self.policy.warmup_queries
        self.figures.record(ours, theirs, (t1 - t0) * 1000.0, (t2 - t1) * 1000.0, timed=timed)
        self.step()
        return ours if ours is not None else theirs

    def status(self) -> dict[str, Any]:
        """The live version, the canary and its figures, the decisions so far."""
        candidate = self.candidate
        return {
            "state": self.state,
            "live": None if self.live is None else self.live.version,
            "candidate": None if candidate is None else candidate.version,
            "reason": self.reason,
            "figures": self.figures.to_dict(),
            "rejected": sorted(self.rejected),
            "retries": self.retries,
            "history": list(self.history),
        }

    def close(self) -> None:
        """Let go of the HTTP client."""
        self._client.close()
