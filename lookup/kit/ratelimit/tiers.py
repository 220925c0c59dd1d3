"""Tiered limits (free / pro / enterprise) whose change takes effect without a restart.

A :class:`TierTable` is a small JSON file, written whole and renamed into place
(:func:`write_tier_table`)::

    {"version": 3, "default": "free",
     "tiers": {"free": "10/60", "pro": "100/60", "enterprise": "1000/60:2000"},
     "members": {"alice": "pro", "acme": "enterprise"}}

Every process re-reads it when the file changes (its inode, size or mtime; looked at
no more often than ``recheck_s``), so a key moved to another tier, or a tier given a new
limit, is followed by the next check in every running process — nothing restarts. A file
that does not parse keeps the previous table (and is counted), so a bad edit cannot drop
every limit.

:class:`TieredRateLimiter` picks the identity's tier per check and asks that tier's
limiter (one per tier, opened from a URL with :func:`open_rate_limiter`, so ``redis://``
shares every tier across processes). A tier whose limit changes gets a new limiter under
the same name: on Redis its state carries over to the new limit; in-process it starts
afresh. An identity moved to another tier starts with that tier's full budget.
"""

from __future__ import annotations

import json
import os
import tempfile
import threading
import time
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from lookup.kit.ratelimit.bucket import RateDecision, RateLimiter, RatePolicy
from lookup.kit.ratelimit.factory import open_rate_limiter

__all__ = ["Tiers", "TierTable", "TieredRateLimiter", "write_tier_table"]

#: Seconds after a write during which the file's stamp alone is not trusted.
_RACY_S = 2.0


@dataclass(frozen=True)
class Tiers:
    """One version of the table: a policy per tier, each member's tier, the default tier."""

    version: int
    policies: Mapping[str, RatePolicy]
    members: Mapping[str, str] = field(default_factory=dict)
    default: str = "free"

    def __post_init__(self) -> None:
        if self.default not in self.policies:
            raise ValueError(f"the default tier {self.default!r} has no limit")
        unknown = sorted({t for t in self.members.values() if t not in self.policies})
        if unknown:
            raise ValueError(f"members name tiers with no limit: {unknown}")

    @classmethod
    def from_json(cls, text: str) -> Tiers:
        """Parse the file's JSON (limits as ``"COUNT/SECONDS[:BURST]"``)."""
        data = json.loads(text)
        if not isinstance(data, dict) or not isinstance(data.get("tiers"), dict):
            raise ValueError('a tier table is an object with "tiers"')
        return cls(
            version=int(data.get("version", 0)),
            policies={str(k): RatePolicy.parse(str(v)) for k, v in data["tiers"].items()},
            members={str(k): str(v) for k, v in dict(data.get("members", {})).items()},
            default=str(data.get("default", "free")),
        )

    def tier_of(self, identity: Hashable) -> str:
        """The tier ``identity`` (its ``str``) is in; the default tier for strangers."""
        return self.members.get(str(identity), self.default)


def write_tier_table(
    path: str | Path,
    tiers: Mapping[str, str],
    members: Mapping[str, str] | None = None,
    *,
    version: int,
    default: str = "free",
) -> None:
    """Write a tier table atomically (a temporary file renamed over ``path``)."""
    text = json.dumps({"version": version, "default": default, "tiers": dict(tiers),
                       "members": dict(members or {})}, indent=2)  # fmt: skip
    Tiers.from_json(text)  # refuse to write what no reader would accept
    target = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=".tiers-", dir=target.parent)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(text)
    os.replace(tmp, target)


class TierTable:
    """The tier table in a file, re-read whenever the file changes."""

    def __init__(
        self,
        path: str | Path,
        *,
        recheck_s: float = 0.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.path = Path(path)
        self.recheck_s = recheck_s
        self._clock = clock
        self._lock = threading.Lock()
        self._seen: tuple[int, int, int] | None = None
        self._text = ""
        self._checked = clock()
        self.reloads = 0
        self.bad_reads = 0
        tiers = self._read()
        if tiers is None:
            raise ValueError(f"{self.path} is not a tier table")
        self._tiers: Tiers = tiers

    def _stamp(self) -> tuple[int, int, int]:
        st = os.stat(self.path)
        return (st.st_ino, st.st_size, st.st_mtime_ns)

    def _read(self) -> Tiers | None:
        try:
            stamp = self._stamp()
            text = self.path.read_text(encoding="utf-8")
            tiers = Tiers.from_json(text)
        except (OSError, ValueError):
            self.bad_reads += 1
            return None
        self._seen, self._text = stamp, text
        return tiers

    def _changed(self) -> bool:
        """Whether the file differs from the table in force. A file modified within the
        last :data:`_RACY_S` is compared by content too (as git does for "racy" files): a
        rewrite within one timestamp tick may keep the inode number, size and mtime."""
        stamp = self._stamp()
        if stamp != self._seen:
            return True
        if time.time() - stamp[2] / 1e9 < _RACY_S:
            return self.path.read_text(encoding="utf-8") != self._text
        return False

    def current(self) -> Tiers:
        """The table as the file has it now (re-read if it changed since last looked at)."""
        with self._lock:
            now = self._clock()
            if now - self._checked >= self.recheck_s:
                self._checked = now
                try:
                    changed = self._changed()
                except OSError:
                    changed = False
                    self.bad_reads += 1
                if changed:
                    fresh = self._read()
                    if fresh is not None:
                        self._tiers = fresh
                        self.reloads += 1
            return self._tiers

    @property
    def version(self) -> int:
        """The version of the table in force."""
        return self.current().version


class TieredRateLimiter:
    """A :class:`RateLimiter` whose limit is the identity's tier's, looked up per check."""

    def __init__(
        self,
        table: TierTable,
        url: str = "memory:",
        *,
        name: str = "",
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.table = table
        self.url = url
        self.name = name
        self._clock = clock
        self._lock = threading.Lock()
        self._limiters: dict[str, RateLimiter] = {}

    @property
    def policy(self) -> RatePolicy:
        """The default tier's policy (what a stranger gets)."""
        tiers = self.table.current()
        return tiers.policies[tiers.default]

    def tier_of(self, identity: Hashable) -> str:
        """The tier ``identity`` is in now."""
        return self.table.current().tier_of(identity)

    def limiter(self, identity: Hashable) -> tuple[str, RateLimiter]:
        """``identity``'s tier and that tier's limiter under the table in force."""
        tiers = self.table.current()
        tier = tiers.tier_of(identity)
        policy = tiers.policies[tier]
        with self._lock:
            limiter = self._limiters.get(tier)
            if limiter is None or limiter.policy != policy:
                if limiter is not None and hasattr(limiter, "close"):
                    limiter.close()
                limiter = open_rate_limiter(
                    self.url, policy, name=f"{self.name}:{tier}", clock=self._clock
                )
                self._limiters[tier] = limiter
            return tier, limiter

    def check(self, identity: Hashable, cost: float = 1.0) -> RateDecision:
        """Check ``identity`` against its tier's limit."""
        return self.limiter(identity)[1].check(identity, cost)

    def peek(self, identity: Hashable, cost: float = 1.0) -> RateDecision:
        """Whether ``identity`` could spend ``cost`` under its tier's limit now."""
        return self.limiter(identity)[1].peek(identity, cost)

    def charge(self, identity: Hashable, cost: float = 1.0) -> None:
        """Take ``cost`` after the fact from ``identity``'s tier."""
        self.limiter(identity)[1].charge(identity, cost)

    def refund(self, identity: Hashable, cost: float = 1.0) -> None:
        """Give ``cost`` back to ``identity``'s tier."""
        self.limiter(identity)[1].refund(identity, cost)

    def reset(self) -> None:
        """Forget every identity in every tier."""
        with self._lock:
            limiters = list(self._limiters.values())
        for limiter in limiters:
            limiter.reset()

    def stats(self) -> dict[str, object]:
        """The table's version, reload counts, and each tier's limiter's stats."""
        tiers = self.table.current()
        with self._lock:
            per_tier = {t: dict(lim.stats()) for t, lim in self._limiters.items()}
        return {
            "policy": self.policy.describe(),
            "version": tiers.version,
            "tiers": {t: p.describe() for t, p in tiers.policies.items()},
            "reloads": self.table.reloads,
            "bad_reads": self.table.bad_reads,
            "per_tier": per_tier,
        }

    def close(self) -> None:
        """Let go of every tier's limiter."""
        with self._lock:
            limiters, self._limiters = list(self._limiters.values()), {}
        for limiter in limiters:
            close = getattr(limiter, "close", None)
            if close is not None:
                close()
