"""Sharding by prefix range, for when the trie outgrows one machine.

Two problems come with splitting a trie across shards, and this module solves both:

* **Uneven ranges.** Queries do not start evenly across the alphabet, so the planner
  draws boundaries from *measured* size (keys per two-character prefix) and traffic
  (the popularity of the queries under it), not from letters.
* **Short prefixes span shards.** Boundaries fall only between two-character
  prefixes, so every prefix of two or more characters lives in exactly one shard;
  the top 10 for the empty and every one-character prefix go into a small *head
  table* that the builder copies to every suggest-service instance.

:class:`ShardedSuggest` routes a prefix to the head table or to the one shard that
owns it, and answers exactly what the unsharded trie answers.
"""

from __future__ import annotations

import json
import os
from bisect import bisect_right
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from lookup.typeahead.normalize import normalize_prefix
from lookup.typeahead.pipeline import MarketBuild
from lookup.typeahead.snapshot import Snapshot, write_snapshot
from lookup.typeahead.trie import RadixTrie, TrieReader


def bucket_of(key: str) -> str:
    """The unit the planner moves between shards: a key's first two code points."""
    return key[:2]


@dataclass
class ShardPlan:
    """Shard ``i`` owns the keys whose bucket ``b`` has ``starts[i] <= b < starts[i+1]``."""

    starts: list[str]  # starts[0] == "" (everything below the second boundary)
    cost: list[float] = field(default_factory=list)  # the planner's share per shard
    keys: list[int] = field(default_factory=list)
    traffic: list[float] = field(default_factory=list)

    @property
    def n(self) -> int:
        """Number of shards."""
        return len(self.starts)

    def shard_of(self, prefix: str) -> int:
        """The shard owning a prefix of two or more code points (or a one-character key)."""
        return bisect_right(self.starts, bucket_of(prefix)) - 1

    def ranges(self) -> list[tuple[str, str | None]]:
        """``(first bucket, first bucket of the next shard)`` per shard, for display."""
        return [
            (self.starts[i], self.starts[i + 1] if i + 1 < self.n else None) for i in range(self.n)
        ]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able form."""
        return {"starts": self.starts, "cost": self.cost, "keys": self.keys,
                "traffic": self.traffic}  # fmt: skip


def plan_shards(
    keys: Sequence[str],
    weights: Sequence[float],
    n_shards: int,
    *,
    size_weight: float = 0.5,
) -> ShardPlan:
    """Cut the sorted two-character buckets into ``n_shards`` ranges of near-equal cost.

    A bucket's cost is ``size_weight × its share of keys + (1 − size_weight) × its
    share of traffic`` (``weights`` are the keys' popularity). Boundaries always fall
    between buckets, never inside one, so no two-character prefix is split.
    """
    if n_shards < 1:
        raise ValueError("n_shards must be at least 1")
    if len(keys) != len(weights):
        raise ValueError("one weight per key")
    size: dict[str, int] = defaultdict(int)
    traffic: dict[str, float] = defaultdict(float)
    for k, w in zip(keys, weights, strict=True):
        b = bucket_of(k)
        size[b] += 1
        traffic[b] += float(w)
    buckets = sorted(size)
    total_n = sum(size.values()) or 1
    total_t = sum(traffic.values())
    if total_t <= 0:  # no traffic measured: plan by size alone
        size_weight, total_t = 1.0, 1.0
    cost = np.array(
        [
            size_weight * (size[b] / total_n) + (1 - size_weight) * (traffic[b] / total_t)
            for b in buckets
        ]
    )
    cum = np.cumsum(cost)
    starts = [""]
    for i in range(1, n_shards):
        target = cum[-1] * i / n_shards
        j = int(np.searchsorted(cum, target))  # first bucket past the target share
        # cut before or after the bucket that crosses the target, whichever is closer
        if j < len(buckets) and j > 0 and abs(cum[j - 1] - target) < abs(cum[j] - target):
            cut = j
        else:
            cut = j + 1
        if cut < len(buckets) and buckets[cut] > starts[-1]:
            starts.append(buckets[cut])
    plan = ShardPlan(starts)
    shard_cost = [0.0] * plan.n
    shard_keys = [0] * plan.n
    shard_traffic = [0.0] * plan.n
    for b, c in zip(buckets, cost, strict=True):
        s = plan.shard_of(b)
        shard_cost[s] += float(c)
        shard_keys[s] += size[b]
        shard_traffic[s] += traffic[b] / total_t
    plan.cost, plan.keys, plan.traffic = shard_cost, shard_keys, shard_traffic
    return plan


def shard_market(
    build: MarketBuild,
    n_shards: int,
    directory: str | os.PathLike[str],
    *,
    size_weight: float = 0.5,
) -> ShardPlan:
    """Plan shards from the build's measured key counts and scores, and write them.

    Writes one snapshot per shard (``shard-00.trie`` ...) and ``plan.json`` holding the
    boundaries and the head table. Each shard keeps the global rank order (its local
    ids are the global ids renumbered in order), so "best" means the same everywhere.
    The head table is read from the unsharded trie, which the builder has anyway.
    """
    keys = [k for k, _, _ in build.keys]
    weights = [float(build.scores[t]) for _, t, _ in build.keys]
    plan = plan_shards(keys, weights, n_shards, size_weight=size_weight)
    per_shard: list[list[tuple[str, int, bool]]] = [[] for _ in range(plan.n)]
    for key, t, alias in build.keys:
        per_shard[plan.shard_of(key)].append((key, t, alias))
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    for i, entries in enumerate(per_shard):
        used = sorted({t for _, t, _ in entries})
        local = {t: j for j, t in enumerate(used)}
        trie = RadixTrie(build.trie.k)
        for key, t, alias in entries:
            trie.add(key, local[t], alias=alias)
        write_snapshot(
            d / f"shard-{i:02d}.trie",
            build.market,
            trie.build(),
            [build.strings[t] for t in used],
            build.scores[used],
            {"shard": i, "range": plan.ranges()[i]},
        )
    full = TrieReader.from_arrays(build.trie)
    head: dict[str, dict[str, Any]] = {}
    for prefix in ["", *sorted({k[0] for k in keys})]:
        node = full.locate(prefix)
        head[prefix] = {
            "suggestions": [build.strings[t] for t in full.top(node)] if node >= 0 else [],
            "complete": node < 0 or full.is_complete(node),
        }
    body = {"market": build.market, "plan": plan.to_dict(), "head": head}
    (d / "plan.json").write_text(json.dumps(body, ensure_ascii=False), encoding="utf-8")
    return plan


class ShardedSuggest:
    """The router in front of the shards: the head table for short prefixes, one shard otherwise.

    In production each shard is a group of machines and the router is the suggest
    service; here the shards are snapshots loaded side by side, which is enough to
    show that the split answers exactly what the whole trie answers.
    """

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        d = Path(directory)
        body = json.loads((d / "plan.json").read_text(encoding="utf-8"))
        self.market: str = body["market"]
        self.plan = ShardPlan(**body["plan"])
        self.head: dict[str, dict[str, Any]] = body["head"]
        self.shards = [Snapshot(d / f"shard-{i:02d}.trie") for i in range(self.plan.n)]
        self.calls = [0] * self.plan.n

    def lookup(self, prefix: str, limit: int = 10) -> tuple[list[str], bool, int | None]:
        """``(suggestions, complete, shard)``; ``shard`` is None when the head table answered."""
        p = normalize_prefix(prefix)
        if len(p) <= 1:
            entry = self.head.get(p)
            if entry is None:
                return [], True, None
            top = entry["suggestions"]
            return top[:limit], entry["complete"] and len(top) <= limit, None
        s = self.plan.shard_of(p)
        self.calls[s] += 1
        snap = self.shards[s]
        found = snap.find(p, limit)
        return snap.texts(found.ids), found.complete, s


__all__ = ["ShardPlan", "ShardedSuggest", "bucket_of", "plan_shards", "shard_market"]
