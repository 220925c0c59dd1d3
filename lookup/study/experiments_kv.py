"""Predict-then-run experiments on the key-value store: the ring and the quorums.

The ring experiments drive :class:`lookup.kit.ring.HashRing` (and the naive
``md5 mod N`` placement of :func:`lookup.blocks.kv.experiments.mod_node`) in-process;
the quorum experiment starts a real :class:`lookup.blocks.kv.cluster.KvCluster` of node
processes on loopback, cuts one replica off and lets the checker count stale reads.
"""

from __future__ import annotations

import statistics
from collections import Counter

from lookup.study.measure import Experiment, Measured

__all__ = ["EXPERIMENTS_KV", "quorum_under_isolation", "ring_balance", "ring_growth"]

_SCHEMES = ("ring", "mod")


def _owners_ring(names: list[str], vnodes: int, keys: list[str]) -> list[str]:
    from lookup.kit.ring import HashRing

    ring = HashRing(names, vnodes=vnodes)
    return [ring.node_for(k) for k in keys]


def _owners_mod(names: list[str], keys: list[str]) -> list[str]:
    from lookup.blocks.kv.experiments import mod_node

    return [mod_node(k, names) for k in keys]


def ring_growth(
    nodes: int = 10, added: int = 1, vnodes: int = 160, keys: int = 20_000, scheme: str = "ring"
) -> Measured:
    """The share of keys whose owner changes when ``added`` nodes join ``nodes``.

    ``scheme="ring"``: the consistent-hashing ring with ``vnodes`` points per node;
    ``scheme="mod"``: ``md5(key) mod N``. Every key is looked up before and after.
    """
    if nodes < 1 or added < 1 or vnodes < 1 or keys < 100:
        raise ValueError("need nodes >= 1, added >= 1, vnodes >= 1 and keys >= 100")
    if scheme not in _SCHEMES:
        raise ValueError(f"scheme must be one of {', '.join(_SCHEMES)}, got {scheme!r}")
    names = [f"node-{i}" for i in range(nodes)]
    grown = names + [f"node-{nodes + i}" for i in range(added)]
    sample = [f"key:{i}" for i in range(keys)]
    if scheme == "ring":
        before = _owners_ring(names, vnodes, sample)
        after = _owners_ring(grown, vnodes, sample)
        how = f"the consistent-hashing ring, {vnodes} points per node"
    else:
        before = _owners_mod(names, sample)
        after = _owners_mod(grown, sample)
        how = "md5(key) mod N"
    moved = [(b, a) for b, a in zip(before, after, strict=True) if a != b]
    share = len(moved) / keys
    newcomers = set(grown[nodes:])
    to_new = sum(a in newcomers for _, a in moved)
    donors = len({b for b, _ in moved})
    ideal = added / (nodes + added)
    chain = (
        f"placed {keys:,} keys on {nodes} nodes with {how}",
        f"added {added} node(s), {nodes + added} in all, and looked every key up again",
        f"{len(moved):,} keys changed owner: {share:.2%} of them",
        f"{to_new:,} of the moved keys went to the new node(s); {len(moved) - to_new:,} moved "
        f"between old nodes; they came from {donors} of the {nodes} old nodes",
        f"the least that must move is added ÷ (N + added) = {ideal:.2%}",
    )
    return Measured(
        share,
        "fraction",
        chain,
        {
            "scheme": scheme,
            "keys": keys,
            "moved": len(moved),
            "moved to new nodes": to_new,
            "moved between old nodes": len(moved) - to_new,
            "donor nodes": donors,
            "ideal share": round(ideal, 4),
        },
    )


def ring_balance(nodes: int = 10, vnodes: int = 1, keys: int = 20_000) -> Measured:
    """Keys on the busiest node ÷ the mean, on a ring with ``vnodes`` points per node."""
    if nodes < 2 or vnodes < 1 or keys < 100:
        raise ValueError("need nodes >= 2, vnodes >= 1 and keys >= 100")
    names = [f"node-{i}" for i in range(nodes)]
    counts = Counter(_owners_ring(names, vnodes, [f"key:{i}" for i in range(keys)]))
    load = [counts.get(n, 0) for n in names]
    mean = keys / nodes
    ratio = max(load) / mean
    chain = (
        f"placed {keys:,} keys on a ring of {nodes} nodes, {vnodes} point(s) each",
        f"keys per node: fewest {min(load):,}, most {max(load):,}, mean {mean:,.0f}",
        f"busiest ÷ mean = {max(load):,} ÷ {mean:,.0f} = {ratio:.2f}",
        f"spread (standard deviation ÷ mean) = {statistics.pstdev(load) / mean:.2f}",
    )
    return Measured(
        ratio,
        "×",
        chain,
        {
            "keys per node": dict(zip(names, load, strict=True)),
            "min/mean": round(min(load) / mean, 3),
        },
    )


_FIGURES = {
    "stale_read_rate": ("stale-read rate (failed)", "share of successful reads that were stale"),
    "write_availability": ("write availability", "share of writes acknowledged"),
    "read_availability": ("read availability", "share of reads answered"),
}


def quorum_under_isolation(
    w: int = 1,
    r: int = 1,
    n: int = 3,
    size: int = 4,
    keys: int = 4,
    ops: int = 32,
    seed: int = 7,
    figure: str = "stale_read_rate",
) -> Measured:
    """Real node processes; one home replica of every key is cut off from its peers while
    clients (one per node, the isolated one included) read and write with ``W``/``R``.

    ``figure`` picks what is reported: the stale-read rate, or write or read availability.
    """
    if figure not in _FIGURES:
        raise ValueError(f"figure must be one of {', '.join(_FIGURES)}, got {figure!r}")
    if not (1 <= w <= n and 1 <= r <= n and n <= size and keys >= 1 and ops >= 4):
        raise ValueError("need 1 <= W, R <= N <= size, keys >= 1 and ops >= 4")
    from lookup.blocks.kv.experiments import quorum_table

    row = quorum_table(
        ((w, r),),
        failure="isolate",
        size=size,
        n=n,
        keys=keys,
        ops=ops,
        recovery_ops=max(4, ops // 4),
        seed=seed,
    )[0]
    key, words = _FIGURES[figure]
    value = float(row[key])
    chain = (
        f"started {size} KV node processes on loopback, N={n}; wrote {keys} keys, every one "
        "homed on the node about to be cut off",
        "cut that node off from every peer (clients can still reach it, so it coordinates "
        "alone with only its own copy)",
        f"{row['clients']} clients, one per node, ran {ops} reads and writes with W={w}, R={r} "
        f"(R + W {'>' if r + w > n else '<='} N)",
        f"writes acknowledged: {row['write availability']:.0%}; reads answered: "
        f"{row['read availability']:.0%}",
        f"stale reads (missing a write acknowledged before the read began): "
        f"{row['stale reads (failed)']}, a rate of {row['stale-read rate (failed)']:.1%}",
        f"after healing, acknowledged writes lost: {row['acked writes lost']}",
        f"reported: the {words} = {value:.3g}",
    )
    return Measured(value, "fraction", chain, {k: v for k, v in row.items() if k != "failure"})


EXPERIMENTS_KV = (
    Experiment(
        "ring_growth",
        "Keys that change owner when nodes join",
        ring_growth,
        {"nodes": 10, "added": 1, "vnodes": 160, "keys": 20_000, "scheme": "ring"},
    ),
    Experiment(
        "ring_balance",
        "Load on the busiest node of a ring",
        ring_balance,
        {"nodes": 10, "vnodes": 1, "keys": 20_000},
    ),
    Experiment(
        "quorum_under_isolation",
        "Quorum reads and writes with one replica cut off (real node processes)",
        quorum_under_isolation,
        {
            "w": 1,
            "r": 1,
            "n": 3,
            "size": 4,
            "keys": 4,
            "ops": 32,
            "seed": 7,
            "figure": "stale_read_rate",
        },
    ),
)
