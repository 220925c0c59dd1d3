"""Key-value store drill: one replica cut off from its peers while clients keep using it.

Runs the store's own node processes (:class:`~lookup.blocks.kv.cluster.KvCluster`) and
the quorum experiment of :mod:`lookup.blocks.kv.experiments`: the victim is isolated
(every peer drops its traffic, clients still reach it), concurrent clients read and
write at the chosen R and W, and the history checker counts stale reads, refused
operations and acknowledged writes lost.
"""

from __future__ import annotations

from lookup.blocks.kv.experiments import FAILURES, quorum_table
from lookup.study.drills_common import outcome
from lookup.study.measure import Drill, DrillOutcome

__all__ = ["KV_DRILLS"]

_DONE = {
    "isolate": "isolated",
    "partition": "partitioned from one peer",
    "kill": "killed with kill -9",
    "freeze": "frozen with SIGSTOP",
}

REPLICA_CHOICES = {
    "stale": "Some reads return an older value than a write that was already acknowledged",
    "refused": "Some reads or writes are refused for want of replicas, but no read is stale",
    "fine": "Every read and write succeeds and every read sees the latest write",
    "lost": "Some acknowledged writes are lost for good, even after the node is back",
}


def replica_isolated(
    w: int = 1,
    r: int = 1,
    n: int = 3,
    nodes: int = 4,
    keys: int = 8,
    ops: int = 96,
    failure: str = "isolate",
    seed: int = 7,
) -> DrillOutcome:
    """A replica is cut off (``failure``: isolate, partition, kill, freeze) while clients
    read with ``r`` and write with ``w`` replies out of ``n``; the checker's verdict."""
    w, r, n, nodes, keys, ops = int(w), int(r), int(n), int(nodes), int(keys), int(ops)
    if not (1 <= w <= n and 1 <= r <= n and n <= nodes) or keys < 1 or ops < 1:
        raise ValueError("need 1 <= W, R <= N <= nodes, keys >= 1 and ops >= 1")
    if failure not in FAILURES:
        raise ValueError(f"failure must be one of {', '.join(FAILURES)}")
    row = quorum_table(((w, r),), failure=failure, size=nodes, n=n, keys=keys, ops=ops,
                       recovery_ops=max(8, ops // 4), seed=int(seed))[0]  # fmt: skip
    stale = int(row["stale reads (failed)"]) + int(row["stale reads (recovery)"])
    lost = int(row["acked writes lost"])
    reads_ok, writes_ok = float(row["read availability"]), float(row["write availability"])
    if lost > 0:
        choice = "lost"
    elif stale > 0:
        choice = "stale"
    elif reads_ok < 1.0 or writes_ok < 1.0:
        choice = "refused"
    else:
        choice = "fine"
    figures = {
        "N": n, "W": w, "R": r, "R+W>N": float(r + w > n),
        "stale reads while cut off": row["stale reads (failed)"],
        "stale-read rate while cut off": row["stale-read rate (failed)"],
        "stale reads after it returned": row["stale reads (recovery)"],
        "read availability": reads_ok, "write availability": writes_ok,
        "reads with siblings": row["reads with siblings"],
        "acknowledged writes": row["acked writes"], "acknowledged writes lost": lost,
        "converged s after return": row["converged s after return"],
    }  # fmt: skip
    done = _DONE[failure]
    summary = (
        f"N={n}, W={w}, R={r} ({'R+W>N' if r + w > n else 'R+W<=N'}), one replica "
        f"{done}: {row['stale reads (failed)']} stale reads while it was cut off, "
        f"read availability {reads_ok:.0%}, write availability {writes_ok:.0%}, "
        f"{lost} acknowledged writes lost."
    )
    chain = (
        f"{nodes} storage-node processes on loopback, each key on N={n} of them",
        f"{keys} keys with the victim among their replicas, written first with W=N",
        f"the victim is {done}; one client per reachable coordinator runs {ops} reads and "
        f"writes at W={w}, R={r} (clients of the victim reach it alone)",
        "the victim returns; more traffic; once converged the history checker judges every "
        "read against the writes acknowledged before it began",
        "choice: an acknowledged write lost → lost; a stale read → stale; a refused read or "
        "write → refused; otherwise → fine",
    )
    return outcome(REPLICA_CHOICES, choice, figures, summary, chain)


KV_DRILLS: dict[str, Drill] = {
    "replica_isolated": Drill(
        "replica_isolated",
        "A replica is isolated while clients keep using it",
        REPLICA_CHOICES,
        replica_isolated,
        {"w": 1, "r": 1, "n": 3, "nodes": 4, "keys": 8, "ops": 96, "failure": "isolate", "seed": 7},
    ),
}
