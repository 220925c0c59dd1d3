"""A Jepsen-style history of operations, and the checks run over it.

Every operation is recorded twice over: when it was *invoked* and when it *completed*,
with its outcome — ``ok``, ``fail`` (the store said no: no quorum) or ``info`` (no answer:
it may or may not have happened). Writes carry values that order themselves: the workload
writes ``"<key>#<seq>"`` with ``seq`` increasing per key, so "newer" needs no clock.

- a read is **stale** when it completed ``ok`` yet none of its siblings is as new as the
  newest write to its key acknowledged *before the read was invoked* (real-time order:
  what a client that saw the acknowledgement may expect);
- an acknowledged write is **lost** when, at the end, a replica that should hold the key
  holds nothing as new as it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = ["History", "Op", "lost_writes", "seq_of", "stale_reads", "summary"]


def seq_of(value: str | None) -> int:
    """The sequence number of a workload value ``"<key>#<seq>"`` (-1 for none)."""
    if value is None:
        return -1
    head, sep, tail = value.rpartition("#")
    return int(tail) if sep and tail.isdigit() else -1


@dataclass
class Op:
    """One invocation and its completion."""

    process: str
    kind: str  # "put" | "get"
    key: str
    value: str | None = None  # what a put wrote
    invoke: float = 0.0
    complete: float = 0.0
    outcome: str = ""  # "ok" | "fail" | "info"
    siblings: list[str] = field(default_factory=list)  # what a get returned
    coordinator: str = ""
    note: str = ""


class History:
    """An append-only log of operations (thread-safe; times are ``time.monotonic()``)."""

    def __init__(self) -> None:
        self.ops: list[Op] = []
        self._lock = threading.Lock()

    def invoke(self, process: str, kind: str, key: str, value: str | None = None) -> Op:
        op = Op(process, kind, key, value, invoke=time.monotonic())
        with self._lock:
            self.ops.append(op)
        return op

    @staticmethod
    def complete(
        op: Op, outcome: str, siblings: Iterable[str] = (), coordinator: str = "", note: str = ""
    ) -> Op:
        if outcome not in ("ok", "fail", "info"):
            raise ValueError(f"unknown outcome {outcome!r}")
        op.complete = time.monotonic()
        op.outcome = outcome
        op.siblings = list(siblings)
        op.coordinator = coordinator
        op.note = note
        return op

    def rows(self) -> list[dict[str, Any]]:
        return [asdict(op) for op in self.ops]


def stale_reads(ops: Iterable[Op], seq: Callable[[str | None], int] = seq_of) -> list[Op]:
    """The ``ok`` reads that missed a write acknowledged before they were invoked."""
    ops = list(ops)
    acked: dict[str, list[tuple[float, int]]] = {}
    for op in ops:
        if op.kind == "put" and op.outcome == "ok":
            acked.setdefault(op.key, []).append((op.complete, seq(op.value)))
    stale = []
    for op in ops:
        if op.kind != "get" or op.outcome != "ok":
            continue
        known = [s for done, s in acked.get(op.key, ()) if done < op.invoke]
        if not known:
            continue
        newest_seen = max((seq(v) for v in op.siblings), default=-1)
        if newest_seen < max(known):
            stale.append(op)
    return stale


def lost_writes(
    ops: Iterable[Op],
    final: Mapping[str, Iterable[str | None]],
    seq: Callable[[str | None], int] = seq_of,
) -> list[Op]:
    """Acknowledged writes nothing in ``final[key]`` (what a replica holds at the end) covers.

    Pass one ``final`` per replica to check every copy, not just one.
    """
    newest = {key: max((seq(v) for v in values), default=-1) for key, values in final.items()}
    return [
        op
        for op in ops
        if op.kind == "put" and op.outcome == "ok" and newest.get(op.key, -1) < seq(op.value)
    ]


def summary(ops: Iterable[Op], seq: Callable[[str | None], int] = seq_of) -> dict[str, Any]:
    """Counts by kind and outcome, and the stale-read rate among ``ok`` reads."""
    ops = list(ops)
    out: dict[str, Any] = {}
    for kind in ("put", "get"):
        mine = [o for o in ops if o.kind == kind]
        out[f"{kind}s"] = len(mine)
        out[f"{kind}s ok"] = sum(o.outcome == "ok" for o in mine)
        out[f"{kind} availability"] = round(out[f"{kind}s ok"] / len(mine), 3) if mine else None
    stale = stale_reads(ops, seq)
    out["stale reads"] = len(stale)
    out["stale-read rate"] = round(len(stale) / out["gets ok"], 4) if out["gets ok"] else 0.0
    out["reads with siblings"] = sum(len(o.siblings) > 1 for o in ops if o.kind == "get")
    return out
