"""Predict-then-run experiments on typeahead: the trie's stored answers and prefix shards.

The queries are the typeahead's own simulated log (:func:`lookup.typeahead.querylog.generate`,
real vocabularies composed by templates, Zipf-like popularity), English market, bots left
out. They go into the real :class:`~lookup.typeahead.trie.RadixTrie` (ranked by count, so
id 0 is the most searched), read back through :class:`~lookup.typeahead.trie.TrieReader`,
and are cut into shards by :func:`lookup.typeahead.sharding.plan_shards` or by letters.
"""

from __future__ import annotations

import string
from collections import Counter
from functools import lru_cache

from lookup.study.measure import Experiment, Measured

__all__ = [
    "EXPERIMENTS_TYPEAHEAD",
    "english_queries",
    "typeahead_completions",
    "typeahead_shard_skew",
]


@lru_cache(maxsize=2)
def english_queries(events: int, seed: int) -> tuple[tuple[str, ...], tuple[int, ...]]:
    """The distinct English-market queries people (not bots) searched in a generated log
    of ``events`` searches, most searched first, with their counts."""
    import numpy as np

    from lookup.typeahead.querylog import generate

    log = generate(events, seed)
    mask = (log.events.market == 0) & ~log.events.is_bot
    counts = np.bincount(log.events.query[mask], minlength=len(log.strings))
    ids = [i for i in np.flatnonzero(counts)]
    ids.sort(key=lambda i: (-int(counts[i]), log.strings[i]))
    return tuple(log.strings[i] for i in ids), tuple(int(counts[i]) for i in ids)


def typeahead_completions(
    events: int = 30_000, prefix_len: int = 2, k: int = 10, seed: int = 11
) -> Measured:
    """How many queries complete a ``prefix_len``-character prefix, averaged over what
    people typed — what a trie without stored answers would visit per keystroke, against
    the ``k`` ids each node of this trie keeps."""
    from lookup.typeahead.trie import RadixTrie, TrieReader

    if not 1 <= prefix_len <= 12 or not 1 <= k <= 100:
        raise ValueError("need 1 <= prefix_len <= 12 and 1 <= k <= 100")
    queries, counts = english_queries(events, seed)
    trie = RadixTrie(k)
    trie.add_many((q, rank) for rank, q in enumerate(queries))
    arrays = trie.build()
    reader = TrieReader.from_arrays(arrays)
    typed: Counter[str] = Counter()
    for q, c in zip(queries, counts, strict=True):
        if len(q) >= prefix_len:
            typed[q[:prefix_len]] += c
    if not typed:
        raise ValueError(f"no query is {prefix_len} characters long")
    under: dict[str, int] = {}
    stored_ok = 0
    for prefix in typed:
        node = reader.locate(prefix)
        under[prefix] = sum(1 for _ in reader.iter_keys(node))
        stored = list(reader.top(node))
        stored_ok += stored == sorted(set(stored))[:k] and len(stored) == min(k, under[prefix])
    searches = sum(typed.values())
    weighted = sum(typed[p] * under[p] for p in typed) / searches
    busiest = max(under, key=lambda p: under[p])
    chain = (
        f"a generated log of {events:,} searches: {len(queries):,} distinct English queries "
        "typed by people",
        f"built the radix trie: {arrays.n_nodes:,} nodes (a one-letter-per-node trie would "
        f"need {arrays.plain_nodes:,}), each keeping its best {k}",
        f"{len(typed):,} distinct {prefix_len}-character prefixes occur; the largest, "
        f"{busiest!r}, has {under[busiest]:,} completions",
        f"completions under the prefix a search began with, averaged over the "
        f"{searches:,} searches: {weighted:,.0f}",
        f"the trie answers each of them from the node's stored list of at most {k} "
        f"({stored_ok} of {len(typed)} lists checked best-first and full)",
    )
    return Measured(
        weighted,
        "count",
        chain,
        {
            "distinct queries": len(queries),
            "prefixes": len(typed),
            "nodes": arrays.n_nodes,
            "plain trie nodes": arrays.plain_nodes,
            "largest prefix": busiest,
            "largest completions": under[busiest],
            "stored ids": len(arrays.top_ids),
        },
    )


def _letter_starts(shards: int) -> list[str]:
    letters = string.ascii_lowercase
    return [""] + [letters[round(i * 26 / shards)] for i in range(1, shards)]


def typeahead_shard_skew(
    events: int = 30_000, shards: int = 4, planned: bool = False, seed: int = 11
) -> Measured:
    """The busiest shard's share of searches when the English queries are cut into
    ``shards`` prefix ranges: by equal runs of the alphabet (``planned=False``) or by
    the planner's measured key counts and traffic (``planned=True``)."""
    from lookup.typeahead.sharding import ShardPlan, plan_shards

    if not 2 <= shards <= 26:
        raise ValueError("shards must be within 2..26")
    queries, counts = english_queries(events, seed)
    plan = plan_shards(queries, counts, shards) if planned else ShardPlan(_letter_starts(shards))
    traffic = [0] * plan.n
    keys = [0] * plan.n
    for q, c in zip(queries, counts, strict=True):
        s = plan.shard_of(q)
        traffic[s] += c
        keys[s] += 1
    total = sum(traffic)
    shares = [t / total for t in traffic]
    top = max(range(plan.n), key=lambda i: shares[i])
    how = (
        "the planner's boundaries, drawn from measured keys and traffic per two-letter bucket"
        if planned
        else "equal runs of the alphabet"
    )
    chain = (
        f"{len(queries):,} distinct English queries, {total:,} searches by people",
        f"cut into {plan.n} shards by {how}: starts {plan.starts[1:]}",
        "searches per shard: " + ", ".join(f"{s:.1%}" for s in shares),
        f"the busiest shard (from {plan.starts[top] or 'the start'!r}) takes {shares[top]:.1%}; "
        f"an even split would give each {1 / plan.n:.1%}",
    )
    return Measured(
        shares[top],
        "fraction",
        chain,
        {
            "starts": plan.starts,
            "traffic shares": [round(s, 4) for s in shares],
            "keys per shard": keys,
        },
    )


EXPERIMENTS_TYPEAHEAD = (
    Experiment(
        "typeahead_completions",
        "Completions under a typed prefix against the stored top-k",
        typeahead_completions,
        {"events": 30_000, "prefix_len": 2, "k": 10, "seed": 11},
    ),
    Experiment(
        "typeahead_shard_skew",
        "The busiest shard's share when a trie is split by prefix",
        typeahead_shard_skew,
        {"events": 30_000, "shards": 4, "planned": False, "seed": 11},
    ),
)
