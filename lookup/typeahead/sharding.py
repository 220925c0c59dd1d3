"""Sharding by prefix range, for when the trie outgrows one machine.

Two problems come with splitting a trie across shards, and this module solves both:

* **Uneven ranges.** Queries do not start evenly across the alphabet, so the planner
  draws boundaries from *measured* size (keys per two-character prefix) and traffic
  (the popularity of the queries under it), not from letters.
* **Short prefixes span shards.** Boundaries fall only between two-character
  prefixes, so every prefix of two or more characters lives in exactly one shard;
  the top 10 for the empty and every one-character prefix go into a small *head
  table* that the builder copies to every suggest-service instance.

:func:`shard_snapshot` cuts a published snapshot into one snapshot file per shard plus
``plan.json`` (boundaries and head table); :func:`ensure_shard_sets` does it for every
market under the data directory, again only when a market's snapshot changed.
:class:`ShardedSuggest` routes a prefix to the head table or to the one shard that
owns it in one process; :mod:`~lookup.typeahead.shard_server` serves the same files as
separate shard servers behind an HTTP router. Both answer exactly what the unsharded
trie answers.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import tempfile
from bisect import bisect_right
from collections import defaultdict
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from lookup.typeahead.normalize import normalize_prefix
from lookup.typeahead.pipeline import MarketBuild, snapshot_store_url, typeahead_dir
from lookup.typeahead.snapshot import Snapshot, open_snapshot_store, write_snapshot
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


#: The file in a market's shard directory that holds the plan and the head table.
PLAN_FILE = "plan.json"
#: The shard-set format: 2 adds global ranks to the shard files and scores to the head
#: table (what the router needs to filter and blend); older sets are cut again.
SHARD_FORMAT = 2
#: The source snapshot's metadata a router needs for the trending baseline.
SOURCE_META_KEYS = ("decay", "hour_share")

#: ``head(prefix) -> (suggestions, complete, scores)``: the unsharded trie's answer for a
#: short prefix, with each suggestion's score.
HeadSource = Callable[[str], tuple[list[str], bool, list[float]]]


def shard_file(directory: str | os.PathLike[str], shard: int) -> Path:
    """The snapshot file of one shard in a market's shard directory."""
    return Path(directory) / f"shard-{shard:02d}.trie"


def in_range(prefix: str, lo: str, hi: str | None) -> bool:
    """True if a prefix of two or more code points falls in the bucket range ``[lo, hi)``."""
    b = bucket_of(prefix)
    return lo <= b and (hi is None or b < hi)


def describe_range(lo: str, hi: str | None) -> str:
    """A bucket range for messages: ``'ka' to 'pa'`` or ``'ka' onwards``."""
    first = repr(lo) if lo else "the start"
    return f"{first} to {hi!r}" if hi is not None else f"{first} onwards"


def write_shards(
    market: str,
    entries: Sequence[tuple[str, int, bool]],
    strings: Sequence[str],
    scores: np.ndarray,
    head: HeadSource,
    n_shards: int,
    directory: str | os.PathLike[str],
    *,
    k: int = 10,
    size_weight: float = 0.5,
    source_version: str | None = None,
    source_meta: dict[str, Any] | None = None,
    only: Collection[int] | None = None,
) -> ShardPlan:
    """Plan shards from ``(key, id, is_alias)`` entries and write one snapshot per shard
    (or only the shards ``only`` names: a shard server cutting its own; the plan is the
    same whichever are written).

    Ids are global ranks (0 is the best suggestion). Each shard keeps the global rank
    order — its local ids are the global ids renumbered in order — so "best" means the
    same everywhere, and its metadata keeps the global ranks themselves (``ranks``, base64
    little-endian u4) so answers from several shards merge exactly. Each shard's file
    holds only its range's keys and the strings they lead to. ``plan.json`` holds the
    boundaries and the head table (the empty prefix and every one-character prefix,
    answered by ``head`` from the unsharded trie, with scores).
    """
    keys = [key for key, _, _ in entries]
    weights = [float(scores[t]) for _, t, _ in entries]
    plan = plan_shards(keys, weights, n_shards, size_weight=size_weight)
    per_shard: list[list[tuple[str, int, bool]]] = [[] for _ in range(plan.n)]
    for key, t, alias in entries:
        per_shard[plan.shard_of(key)].append((key, t, alias))
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    ranges = plan.ranges()
    for i, part in enumerate(per_shard):
        if only is not None and i not in only:
            continue
        used = sorted({t for _, t, _ in part})
        local = {t: j for j, t in enumerate(used)}
        trie = RadixTrie(k)
        for key, t, alias in part:
            trie.add(key, local[t], alias=alias)
        ranks = base64.b64encode(np.asarray(used, dtype="<u4").tobytes()).decode("ascii")
        meta = {"shard": i, "of": plan.n, "range": list(ranges[i]),
                "source_version": source_version, "ranks": ranks}  # fmt: skip
        write_snapshot(  # no word-anywhere index: it would cover only this shard's range
            shard_file(d, i), market, trie.build(), [strings[t] for t in used], scores[used], meta,
            infix=False,
        )  # fmt: skip
    table: dict[str, dict[str, Any]] = {}
    for prefix in ["", *sorted({key[0] for key in keys})]:
        suggestions, complete, head_scores = head(prefix)
        table[prefix] = {"suggestions": suggestions, "complete": complete,
                         "scores": head_scores}  # fmt: skip
    body = {"market": market, "source_version": source_version, "format": SHARD_FORMAT,
            "k": k, "source_meta": source_meta or {}, "plan": plan.to_dict(),
            "head": table}  # fmt: skip
    (d / PLAN_FILE).write_text(json.dumps(body, ensure_ascii=False), encoding="utf-8")
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
    boundaries and the head table, read from the unsharded trie the builder has anyway.
    """
    full = TrieReader.from_arrays(build.trie)

    def head(prefix: str) -> tuple[list[str], bool, list[float]]:
        node = full.locate(prefix)
        if node < 0:
            return [], True, []
        ids = list(full.top(node))
        scores = [float(np.float32(build.scores[t])) for t in ids]
        return [build.strings[t] for t in ids], full.is_complete(node), scores

    return write_shards(build.market, build.keys, build.strings, np.asarray(build.scores),
                        head, n_shards, directory, k=build.trie.k,
                        size_weight=size_weight)  # fmt: skip


def shard_snapshot(
    snap: Snapshot,
    n_shards: int,
    directory: str | os.PathLike[str],
    *,
    size_weight: float = 0.5,
    only: Collection[int] | None = None,
) -> ShardPlan:
    """Cut a published (unsharded) snapshot into ``n_shards`` prefix-range shards (all, or
    only the shard files ``only`` names; ``plan.json`` always).

    The keys come from walking the snapshot's trie; a key is an alias (a misspelling
    or another spelling) when it is not the spelling of the suggestion it leads to,
    exactly as the pipeline marks it. The shards remember ``snap.version`` as their
    ``source_version``, which the router answers as the ``version`` of every response.
    """
    strings = snap.strings()
    entries = [(key, t, key != strings[t]) for key, t in snap.reader.iter_keys()]
    scores = np.asarray(snap.arrays()["scores"], dtype=np.float64)

    def head(prefix: str) -> tuple[list[str], bool, list[float]]:
        found = snap.find(prefix, snap.k)
        return snap.texts(found.ids), found.complete, [snap.score(i) for i in found.ids]

    meta = {key: snap.meta[key] for key in SOURCE_META_KEYS if key in snap.meta}
    return write_shards(snap.market, entries, strings, scores, head, n_shards, directory,
                        k=snap.k, size_weight=size_weight, source_version=snap.version,
                        source_meta=meta, only=only)  # fmt: skip


@dataclass
class ShardLayout:
    """A market's shard directory as the router sees it: the plan and the head table only."""

    directory: Path
    market: str
    plan: ShardPlan
    head: dict[str, dict[str, Any]]
    source_version: str | None
    format: int = 1
    k: int = 10
    source_meta: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def load(cls, directory: str | os.PathLike[str]) -> ShardLayout:
        """Read ``plan.json`` (the shard snapshots themselves are not opened)."""
        d = Path(directory)
        body = json.loads((d / PLAN_FILE).read_text(encoding="utf-8"))
        return cls(d, body["market"], ShardPlan(**body["plan"]), body["head"],
                   body.get("source_version"), int(body.get("format", 1)),
                   int(body.get("k", 10)), dict(body.get("source_meta") or {}))  # fmt: skip

    def head_answer(self, prefix: str, limit: int = 10) -> tuple[list[str], bool]:
        """The head table's answer for the empty or a one-character (normalised) prefix."""
        entry = self.head.get(prefix)
        if entry is None:
            return [], True
        top = entry["suggestions"]
        return top[:limit], entry["complete"] and len(top) <= limit


def shard_sets_root(data_dir: str | os.PathLike[str], n_shards: int) -> Path:
    """``DATA_DIR/typeahead/shards/n<N>``: one folder per market, each a plan and N shards."""
    return typeahead_dir(data_dir) / "shards" / f"n{n_shards}"


def ensure_shard_sets(
    data_dir: str | os.PathLike[str],
    n_shards: int,
    *,
    size_weight: float = 0.5,
    progress: Callable[[str], None] | None = None,
) -> Path:
    """Cut every market's current snapshot into ``n_shards`` shards, unless already cut.

    A market's shard set is rebuilt when its ``source_version`` is not the snapshot
    ``CURRENT`` names. Each set is written beside the old one and renamed into place,
    so a reader never sees half a set. Returns the root holding one folder per market;
    ``LookupError`` if no market has a published snapshot.
    """
    if n_shards < 1:
        raise ValueError("n_shards must be at least 1")
    store = open_snapshot_store(snapshot_store_url(data_dir))
    root = shard_sets_root(data_dir, n_shards)
    markets = [m for m in store.names() if store.current(m)]
    if not markets:
        raise LookupError(
            "no typeahead snapshot to shard yet; build one with "
            "`lookup datasets build typeahead` then `lookup typeahead build`"
        )
    for market in markets:
        version = store.current(market)
        target = root / market
        try:
            layout = ShardLayout.load(target)
            if (
                layout.source_version == version
                and layout.format >= SHARD_FORMAT
                and all(shard_file(target, i).exists() for i in range(layout.plan.n))
            ):
                continue
        except (OSError, ValueError, KeyError, TypeError):
            pass  # missing or unreadable: cut it again
        snap = store.open(market, version)
        assert snap is not None
        if progress:
            progress(f"{market}: cutting {version} into {n_shards} shards")
        tmp = new_shard_set_dir(root, market)
        plan = shard_snapshot(snap, n_shards, tmp, size_weight=size_weight)
        install_shard_set(root, market, tmp)
        if progress:
            shares = ", ".join(f"{c:.0%}" for c in plan.cost)
            progress(f"{market}: {plan.n} shards from {plan.starts[1:]}; cost shares {shares}")
    return root


def new_shard_set_dir(root: Path, market: str) -> Path:
    """A fresh directory beside ``root/market`` to write a shard set into before
    :func:`install_shard_set` renames it into place."""
    return Path(tempfile.mkdtemp(prefix=f".{market}-", dir=_mkdir(root)))


def install_shard_set(root: Path, market: str, written: Path) -> None:
    """Rename a finished shard set into ``root/market`` (the old one moved aside first and
    dropped after), so a reader never sees half a set."""
    target = root / market
    old = root / f".{market}.old"
    if old.exists():
        shutil.rmtree(old)
    if target.exists():
        os.replace(target, old)
    os.replace(written, target)
    shutil.rmtree(old, ignore_errors=True)


def _mkdir(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path


class ShardedSuggest:
    """The router in front of the shards: the head table for short prefixes, one shard otherwise.

    In production each shard is a group of machines and the router is the suggest
    service; here the shards are snapshots loaded side by side in one process (see
    :mod:`~lookup.typeahead.shard_server` and :mod:`~lookup.typeahead.router` for
    separate shard servers over HTTP).
    """

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.layout = ShardLayout.load(directory)
        self.market: str = self.layout.market
        self.plan = self.layout.plan
        self.head = self.layout.head
        self.shards = [Snapshot(shard_file(directory, i)) for i in range(self.plan.n)]
        self.calls = [0] * self.plan.n

    def lookup(self, prefix: str, limit: int = 10) -> tuple[list[str], bool, int | None]:
        """``(suggestions, complete, shard)``; ``shard`` is None when the head table answered."""
        p = normalize_prefix(prefix)
        if len(p) <= 1:
            top, complete = self.layout.head_answer(p, limit)
            return top, complete, None
        s = self.plan.shard_of(p)
        self.calls[s] += 1
        snap = self.shards[s]
        found = snap.find(p, limit)
        return snap.texts(found.ids), found.complete, s


__all__ = [
    "PLAN_FILE",
    "SHARD_FORMAT",
    "ShardLayout",
    "ShardPlan",
    "ShardedSuggest",
    "bucket_of",
    "describe_range",
    "ensure_shard_sets",
    "in_range",
    "plan_shards",
    "shard_file",
    "shard_market",
    "shard_sets_root",
    "shard_snapshot",
    "write_shards",
]
