"""Canary rollout of a typeahead snapshot: validate → canary → promote (or roll back).

The seed's rollout ("roll it out to one node, then to all") on one server: a new
snapshot that passed validation first answers a small, deterministic share of clients
— a client is in the canary when the hash of (canary version, its identity) falls below
``share``, so one client sees one version for the whole canary and a new canary picks a
different slice — while everyone else keeps the current snapshot.

Validation checks a snapshot's structure; the canary checks its *behaviour* on live
traffic. Every canary request is answered from the candidate and, in the shadow (not
sent), from the current snapshot for the same prefix, so the two are compared on the
very same requests:

* **empty-answer rate** — prefixes the candidate answers with nothing, against the
  current snapshot's rate on the same prefixes;
* **error rate** — a candidate that raises; that request is answered from the current
  snapshot, so a user never sees the failure;
* **latency** — the candidate's p95 lookup time against the current one's;
* **overlap of top results** — the mean share of the current top 5 the candidate keeps.

Once ``min_requests`` canary requests are in, :meth:`Canary.verdict` promotes the
candidate when every figure is within its bound and rolls it back when one is not;
errors roll it back early (at ``early_requests``). The service (:mod:`~lookup.typeahead.
serving`) applies the verdict on its poll, once a second.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Canary", "CanaryPolicy", "in_canary", "overlap_at"]

TOP = 5


@dataclass(frozen=True)
class CanaryPolicy:
    """How big the canary is and what counts as healthy."""

    share: float = 0.1
    min_requests: int = 200
    early_requests: int = 20
    #: The candidate's empty-answer rate may exceed the current one's by this much.
    max_empty_increase: float = 0.05
    max_error_rate: float = 0.01
    #: Candidate p95 ≤ max(current p95 × ratio, current p95 + slack): a loaded machine
    #: jitters by milliseconds, a broken index by orders of magnitude.
    max_latency_ratio: float = 3.0
    latency_slack_ms: float = 2.0
    min_overlap: float = 0.6

    def __post_init__(self) -> None:
        if not 0.0 < self.share < 1.0:
            raise ValueError("share must be between 0 and 1 (exclusive)")
        if self.min_requests < 1 or self.early_requests < 1:
            raise ValueError("min_requests and early_requests must be at least 1")
        for name in ("max_empty_increase", "max_error_rate", "min_overlap"):
            if not 0.0 <= getattr(self, name) <= 1.0:  # NaN fails too
                raise ValueError(f"{name} must be between 0 and 1")


def in_canary(identity: str, salt: str, share: float) -> bool:
    """Whether a client is in the canary: a stable hash of (salt, identity) below ``share``."""
    digest = hashlib.sha256(f"{salt}\x00{identity}".encode()).digest()
    return int.from_bytes(digest[:8], "big") < share * 2**64


def overlap_at(candidate: list[str], current: list[str], k: int = TOP) -> float:
    """The share of the current top ``k`` the candidate's top ``k`` keeps (1.0 when the
    current answer is empty and so is the candidate's; 0.0 when only it is)."""
    ours, theirs = candidate[:k], current[:k]
    if not theirs:
        return 1.0 if not ours else 0.0
    return len(set(ours) & set(theirs)) / len(theirs)


def _p95(samples: deque[float]) -> float:
    if not samples:
        return 0.0
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]


@dataclass
class Canary:
    """One canary of ``version`` against ``baseline`` for a market, and its figures."""

    market: str
    version: str
    baseline: str
    policy: CanaryPolicy = field(default_factory=CanaryPolicy)
    started_at: float = field(default_factory=time.time)
    state: str = "RUNNING"  # then PROMOTED, ROLLED_BACK or ABORTED
    reason: str = ""
    decided_at: float | None = None
    requests: int = 0
    control_requests: int = 0
    errors: int = 0
    empty: int = 0
    baseline_empty: int = 0
    overlap_sum: float = 0.0
    _latency: deque[float] = field(default_factory=lambda: deque(maxlen=2000), repr=False)
    _baseline_latency: deque[float] = field(default_factory=lambda: deque(maxlen=2000), repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def running(self) -> bool:
        return self.state == "RUNNING"

    def takes(self, identity: str) -> bool:
        """Whether this client is answered by the candidate."""
        return self.running and in_canary(identity, self.version, self.policy.share)

    def record(
        self,
        candidate: list[str] | None,
        current: list[str],
        candidate_ms: float,
        current_ms: float,
    ) -> None:
        """One canary request: the candidate's answer (None when it failed) and the
        current snapshot's for the same prefix, with their lookup times."""
        with self._lock:
            self.requests += 1
            self._baseline_latency.append(current_ms)
            self.baseline_empty += not current
            if candidate is None:
                self.errors += 1
                return
            self._latency.append(candidate_ms)
            self.empty += not candidate
            self.overlap_sum += overlap_at(candidate, current)

    def record_control(self) -> None:
        """A request outside the canary (counted, for the share actually seen)."""
        self.control_requests += 1

    def figures(self) -> dict[str, Any]:
        """The comparison so far (rates over canary requests)."""
        with self._lock:
            n = self.requests
            answered = n - self.errors
            return {
                "requests": n,
                "controlRequests": self.control_requests,
                "errorRate": self.errors / n if n else 0.0,
                "emptyRate": self.empty / answered if answered else 0.0,
                "baselineEmptyRate": self.baseline_empty / n if n else 0.0,
                "p95Ms": round(_p95(self._latency), 4),
                "baselineP95Ms": round(_p95(self._baseline_latency), 4),
                "overlap": self.overlap_sum / answered if answered else 1.0,
            }

    def verdict(self) -> tuple[str, str] | None:
        """``("promote" | "rollback", why)`` once the figures decide, else None."""
        if not self.running:
            return None
        f = self.figures()
        p = self.policy
        n = f["requests"]
        if n >= p.early_requests and f["errorRate"] > p.max_error_rate:
            return "rollback", f"error rate {f['errorRate']:.1%} > {p.max_error_rate:.1%}"
        if n < p.min_requests:
            return None
        bad = []
        if f["emptyRate"] > f["baselineEmptyRate"] + p.max_empty_increase:
            bad.append(f"empty answers {f['emptyRate']:.1%} vs {f['baselineEmptyRate']:.1%} now")
        now_p95 = f["baselineP95Ms"]
        bound = max(now_p95 * p.max_latency_ratio, now_p95 + p.latency_slack_ms)
        if f["p95Ms"] > bound:
            bad.append(f"p95 {f['p95Ms']:.3f} ms > {bound:.3f} ms")
        if f["overlap"] < p.min_overlap:
            bad.append(f"top-{TOP} overlap {f['overlap']:.2f} < {p.min_overlap:.2f}")
        if bad:
            return "rollback", "; ".join(bad)
        return "promote", (
            f"{n} requests: empty {f['emptyRate']:.1%} (now {f['baselineEmptyRate']:.1%}), "
            f"errors {f['errorRate']:.1%}, overlap {f['overlap']:.2f}, "
            f"p95 {f['p95Ms']:.3f} ms (now {f['baselineP95Ms']:.3f} ms)"
        )

    def decide(self, state: str, reason: str) -> None:
        """Record the outcome (PROMOTED, ROLLED_BACK, ABORTED)."""
        self.state, self.reason, self.decided_at = state, reason, time.time()

    def to_dict(self) -> dict[str, Any]:
        """The canary's state for the API and the dashboard."""
        p = self.policy
        return {
            "market": self.market,
            "version": self.version,
            "baseline": self.baseline,
            "state": self.state,
            "reason": self.reason,
            "startedAt": self.started_at,
            "decidedAt": self.decided_at,
            "share": p.share,
            "minRequests": p.min_requests,
            "thresholds": {
                "maxEmptyIncrease": p.max_empty_increase,
                "maxErrorRate": p.max_error_rate,
                "maxLatencyRatio": p.max_latency_ratio,
                "minOverlap": p.min_overlap,
            },
            **self.figures(),
        }
