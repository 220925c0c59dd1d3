"""Build a market's prefix-range shards in parallel, each shard's trie on its own.

Today's sharded serving builds one trie for the whole market and then cuts it
(:func:`~lookup.typeahead.sharding.shard_market`): the builder needs the whole market
in one process. Here each shard is built from only its own keys, by a pure function
(:func:`build_shard`) whose input and output pickle, so the shards can be built side by
side on a process pool or on Dask workers. The **head table** (the empty and every
one-character prefix, which span shards) is merged from the shards' own answers: each
shard returns its top k for every head prefix it holds keys of, and the merge keeps the
k smallest global ranks of the union — the trie's own tie-break, since ranks are unique
and "best" is "smallest rank". A merged entry is complete when every shard's was and the
union holds at most k suggestions (a complete list is every completion, and a subtree
holding an alias key is never complete, so neither is the union).

The result equals today's build cut into shards: the same shard files (arrays, strings,
scores, metadata) and the same ``plan.json``, so the shard servers
(:class:`~lookup.typeahead.supervisor.ShardCluster`), the router
(:class:`~lookup.typeahead.router.ShardRouter`) and
:class:`~lookup.typeahead.sharding.ShardedSuggest` serve them unchanged
(``tests/typeahead/test_shardbuild.py`` checks all three against the single build).

Entry point::

    plan = plan_for(scored, n_shards)            # or any ShardPlan / list of starts
    paths = build_shards(scored, plan, out_dir)  # shard-00.trie ... then plan.json

``scored`` is what the trie build takes: a market's ranked suggestions (``strings``,
``scores``) and its keys as ``(key, rank, is_alias)`` — a
:class:`~lookup.typeahead.pipeline.MarketBuild` fits, and so does :class:`ScoredKeys`
(no trie needed). ``map`` runs the per-shard builds: ``map(build_shard, tasks)`` must
return the results in task order — ``builtins.map`` runs them here one by one, an
``Executor.map`` on a pool, and on Dask ``lambda f, xs: client.gather(client.map(f,
list(xs)))``. The default is a process pool of ``workers`` (2) processes, started by
``spawn`` (never a fork of a server with threads), so a script that calls it needs the
usual ``if __name__ == "__main__":`` guard. Workers write their shard files themselves,
so ``out_dir`` must be a directory they can all write.
``plan.json`` is written last, by the caller's process, once every shard is on disk.
"""

from __future__ import annotations

import base64
import json
import multiprocessing
import os
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from lookup.typeahead.sharding import (
    PLAN_FILE,
    SHARD_FORMAT,
    SOURCE_META_KEYS,
    ShardPlan,
    install_shard_set,
    new_shard_set_dir,
    plan_shards,
    shard_file,
    shard_sets_root,
)
from lookup.typeahead.snapshot import write_snapshot
from lookup.typeahead.trie import FLAG_COMPLETE, K, RadixTrie

#: Process-pool size when no ``map`` is given.
DEFAULT_WORKERS = 2


class ScoredMarket(Protocol):
    """What the trie build takes: ranked suggestions and the keys that lead to them."""

    @property
    def market(self) -> str: ...

    @property
    def strings(self) -> Sequence[str]:
        """Rank → suggestion, best first."""
        ...

    @property
    def scores(self) -> Any:
        """Rank → score (a float64 array or a sequence of floats)."""
        ...

    @property
    def keys(self) -> Sequence[tuple[str, int, bool]]:
        """(key, rank, is_alias)."""
        ...


@dataclass(frozen=True)
class ScoredKeys:
    """A market's scored queries without a trie (what a distributed aggregation yields)."""

    market: str
    strings: Sequence[str]
    scores: Any
    keys: Sequence[tuple[str, int, bool]]


@dataclass(frozen=True)
class ShardTask:
    """Everything one shard's build needs (pickles: plain values and one numpy array).

    ``used`` are the global ranks of the suggestions this shard's keys lead to, ascending;
    ``strings`` and ``scores`` are theirs, in the same order, so local id ``j`` is global
    rank ``used[j]`` and the shard keeps the global order.
    """

    market: str
    shard: int
    of: int
    range: tuple[str, str | None]
    entries: list[tuple[str, int, bool]]
    used: list[int]
    strings: list[str]
    scores: np.ndarray
    k: int
    path: str
    source_version: str | None = None


@dataclass(frozen=True)
class ShardResult:
    """A built shard: its file, and its top k (global ranks) and completeness per head prefix."""

    shard: int
    path: str
    head: dict[str, tuple[list[int], bool]]


def build_shard(task: ShardTask) -> ShardResult:
    """Build one shard's trie from its own keys, write its snapshot, answer its head prefixes.

    Pure apart from the one file it writes: the same task always gives the same file
    contents (but the build time in its header) and the same result.
    """
    local = {t: j for j, t in enumerate(task.used)}
    trie = RadixTrie(task.k)
    for key, t, alias in task.entries:
        trie.add(key, local[t], alias=alias)
    arrays = trie.build()
    ranks = base64.b64encode(np.asarray(task.used, dtype="<u4").tobytes()).decode("ascii")
    meta = {"shard": task.shard, "of": task.of, "range": list(task.range),
            "source_version": task.source_version, "ranks": ranks}  # fmt: skip
    # no word-anywhere index: it would cover only this shard's range (as today's cut)
    write_snapshot(task.path, task.market, arrays, task.strings, task.scores, meta, infix=False)
    # the head prefixes are the root and its children: a root child's label starts with a
    # code point no sibling's does, so its subtree is every key starting with that one
    used, fc, top_off, top_ids = task.used, arrays.first_child, arrays.top_off, arrays.top_ids

    def answer(node: int) -> tuple[list[int], bool]:
        ids = top_ids[top_off[node] : top_off[node + 1]].tolist()
        return [used[j] for j in ids], bool(arrays.flags[node] & FLAG_COMPLETE)

    head = {"": answer(0)}
    for node in range(int(fc[0]), int(fc[1])):
        head[chr(int(arrays.first_cp[node]))] = answer(node)
    return ShardResult(task.shard, task.path, head)


def merge_head(answers: Iterable[tuple[list[int], bool]], k: int) -> tuple[list[int], bool]:
    """One head prefix's top k from the shards' answers for it.

    Ranks are unique and smaller is better, so the union's k smallest are the whole
    market's top k (a rank two shards both hold — an alias key in one, the spelling in
    another — counts once). Complete when every shard's list was complete (all of its
    completions, no alias among its keys) and the union still fits in k.
    """
    union: set[int] = set()
    complete = True
    for ids, shard_complete in answers:
        union.update(ids)
        complete = complete and shard_complete
    top = sorted(union)
    return top[:k], complete and len(top) <= k


def plan_for(scored: ScoredMarket, n_shards: int, *, size_weight: float = 0.5) -> ShardPlan:
    """The boundaries today's cut draws for these keys (measured size and traffic)."""
    scores = np.asarray(scored.scores, dtype=np.float64)
    keys = [key for key, _, _ in scored.keys]
    weights = [float(scores[t]) for _, t, _ in scored.keys]
    return plan_shards(keys, weights, n_shards, size_weight=size_weight)


def _measured(
    starts: Sequence[str], scored: ScoredMarket, scores: np.ndarray, size_weight: float
) -> ShardPlan:
    """A plan over given boundaries, with each shard's share of keys, traffic and cost."""
    plan = ShardPlan(list(starts))
    keys = [0] * plan.n
    traffic = [0.0] * plan.n
    for key, t, _ in scored.keys:
        s = plan.shard_of(key)
        keys[s] += 1
        traffic[s] += float(scores[t])
    total_n = sum(keys) or 1
    total_t = sum(traffic)
    if total_t <= 0:  # no traffic measured: cost by size alone, as the planner does
        size_weight, total_t = 1.0, 1.0
    plan.keys = keys
    plan.traffic = [t / total_t for t in traffic]
    plan.cost = [
        size_weight * (n / total_n) + (1 - size_weight) * share
        for n, share in zip(keys, plan.traffic, strict=True)
    ]
    return plan


def shard_tasks(
    scored: ScoredMarket,
    plan: ShardPlan,
    out_dir: str | os.PathLike[str],
    *,
    k: int = K,
    source_version: str | None = None,
) -> list[ShardTask]:
    """Split the keys by the plan's ranges into one :class:`ShardTask` per shard.

    ``ValueError`` if a shard would own no keys (an empty shard has no trie to serve).
    """
    scores = np.asarray(scored.scores, dtype=np.float64)
    per_shard: list[list[tuple[str, int, bool]]] = [[] for _ in range(plan.n)]
    for key, t, alias in scored.keys:
        per_shard[plan.shard_of(key)].append((key, t, alias))
    empty = [i for i, part in enumerate(per_shard) if not part]
    if empty:
        raise ValueError(f"shards {empty} of {plan.n} own no keys; draw fewer or other boundaries")
    ranges = plan.ranges()
    tasks = []
    for i, part in enumerate(per_shard):
        used = sorted({t for _, t, _ in part})
        tasks.append(
            ShardTask(
                scored.market,
                i,
                plan.n,
                ranges[i],
                part,
                used,
                [scored.strings[t] for t in used],
                scores[used],
                k,
                str(shard_file(out_dir, i)),
                source_version,
            )  # fmt: skip
        )
    return tasks


def _check_starts(starts: Sequence[str]) -> list[str]:
    """Boundaries as a shard plan reads them: ``""`` first, then strictly increasing."""
    out = list(starts)
    if not out or out[0] != "":
        raise ValueError('boundaries must start with "" (the first shard owns the start)')
    if any(not isinstance(s, str) for s in out):
        raise ValueError("boundaries must be strings")
    if any(a >= b for a, b in zip(out, out[1:], strict=False)):
        raise ValueError("boundaries must be strictly increasing")
    return out


MapFn = Callable[[Callable[[ShardTask], ShardResult], Sequence[ShardTask]], Iterable[ShardResult]]


def build_shards(
    scored: ScoredMarket,
    boundaries: ShardPlan | Sequence[str],
    out_dir: str | os.PathLike[str],
    *,
    map: MapFn | None = None,
    workers: int = DEFAULT_WORKERS,
    k: int | None = None,
    size_weight: float = 0.5,
    source_version: str | None = None,
    source_meta: dict[str, Any] | None = None,
) -> list[Path]:
    """Build every shard of a market in parallel and its head table; returns the shard files.

    ``boundaries`` is a :class:`ShardPlan` (from :func:`plan_for`: what today's cut would
    draw) or its ``starts`` (``""`` first, strictly increasing; each shard's measured
    share is computed with ``size_weight`` as the planner does). Writes
    ``shard-NN.trie`` per shard and then ``plan.json`` into ``out_dir``, the files
    :func:`~lookup.typeahead.sharding.shard_market` writes; ``source_version`` and
    ``source_meta`` are what :func:`~lookup.typeahead.sharding.shard_snapshot` records
    (the snapshot the router answers as its version, and its trending baseline). ``k``
    (suggestions per node) defaults to a :class:`MarketBuild`'s ``trie.k``, else 10.
    """
    if k is None:
        k = int(getattr(getattr(scored, "trie", None), "k", K))
    if isinstance(boundaries, ShardPlan):
        plan = ShardPlan(_check_starts(boundaries.starts), list(boundaries.cost),
                         list(boundaries.keys), list(boundaries.traffic))  # fmt: skip
    else:
        scores = np.asarray(scored.scores, dtype=np.float64)
        plan = _measured(_check_starts(boundaries), scored, scores, size_weight)
    d = Path(out_dir)
    d.mkdir(parents=True, exist_ok=True)
    tasks = shard_tasks(scored, plan, d, k=k, source_version=source_version)
    if map is not None:
        results = list(map(build_shard, tasks))
    else:
        spawn = multiprocessing.get_context("spawn")  # no fork of a threaded server process
        with ProcessPoolExecutor(max(1, min(workers, len(tasks))), mp_context=spawn) as pool:
            results = list(pool.map(build_shard, tasks))
    if [r.shard for r in results] != list(range(plan.n)):
        raise RuntimeError("map must return one result per shard, in task order")
    _write_plan(d, scored, plan, results, k, source_version, source_meta)
    return [Path(r.path) for r in results]


def precut_shard_set(
    data_dir: str | os.PathLike[str],
    scored: ScoredMarket,
    snapshot: Any,
    n_shards: int,
    *,
    map: MapFn | None = None,
    size_weight: float = 0.5,
) -> ShardPlan:
    """Build the shard set sharded serving would cut from the published ``snapshot``
    (the one ``scored`` became) straight from ``scored``, the shards side by side, and
    install it where :func:`~lookup.typeahead.sharding.ensure_shard_sets` looks: serving
    then finds it cut already (same source version) and cuts nothing."""
    root = shard_sets_root(data_dir, n_shards)
    written = new_shard_set_dir(root, snapshot.market)
    plan = plan_for(scored, n_shards, size_weight=size_weight)
    meta = {key: snapshot.meta[key] for key in SOURCE_META_KEYS if key in snapshot.meta}
    build_shards(scored, plan, written, map=map, size_weight=size_weight,
                 source_version=snapshot.version, source_meta=meta)  # fmt: skip
    install_shard_set(root, snapshot.market, written)
    return plan


def precut_hook(
    data_dir: str | os.PathLike[str], n_shards: int
) -> Callable[[ScoredMarket, Any, MapFn | None], str]:
    """The build's ``on_published`` hook (:func:`~lookup.typeahead.pipeline.run`) that
    builds each published snapshot's ``n_shards`` shard set side by side, on the build's
    Dask workers when it has them; returns a progress line."""

    def precut(scored: ScoredMarket, snapshot: Any, map: MapFn | None) -> str:
        t0 = time.perf_counter()
        plan = precut_shard_set(data_dir, scored, snapshot, n_shards, map=map)
        return (
            f"{snapshot.market}: {plan.n} shards of {snapshot.version} built side by side "
            f"({time.perf_counter() - t0:.1f}s)"
        )

    return precut


def _write_plan(
    d: Path,
    scored: ScoredMarket,
    plan: ShardPlan,
    results: Sequence[ShardResult],
    k: int,
    source_version: str | None,
    source_meta: dict[str, Any] | None,
) -> None:
    """``plan.json``: the boundaries and the head table merged from the shards' answers."""
    prefixes = sorted({p for r in results for p in r.head})  # "" sorts first
    table: dict[str, dict[str, Any]] = {}
    for prefix in prefixes:
        ids, complete = merge_head((r.head[prefix] for r in results if prefix in r.head), k)
        table[prefix] = {"suggestions": [scored.strings[t] for t in ids], "complete": complete,
                         "scores": [float(np.float32(scored.scores[t])) for t in ids]}  # fmt: skip
    body = {"market": scored.market, "source_version": source_version, "format": SHARD_FORMAT,
            "k": k, "source_meta": source_meta or {}, "plan": plan.to_dict(),
            "head": table}  # fmt: skip
    tmp = d / (PLAN_FILE + ".tmp")
    tmp.write_text(json.dumps(body, ensure_ascii=False), encoding="utf-8")
    os.replace(tmp, d / PLAN_FILE)


__all__ = [
    "DEFAULT_WORKERS",
    "ScoredKeys",
    "ScoredMarket",
    "ShardResult",
    "ShardTask",
    "build_shard",
    "build_shards",
    "merge_head",
    "plan_for",
    "shard_tasks",
]
