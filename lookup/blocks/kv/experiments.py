"""The seed's claims about the ring and the quorum store, measured (notebook 08, the dashboard).

Ring experiments run in-process on :class:`lookup.kit.ring.HashRing`; the store experiments
start a real :class:`.cluster.KvCluster` of node processes, break it (``kill -9``,
``SIGSTOP``, a partition, a skewed clock), drive a workload recorded as a
:class:`.checker.History`, and let :mod:`.checker` judge it. Each runs in well under 30 s
on small data; every figure is measured, none assumed.
"""

from __future__ import annotations

import hashlib
import random
import statistics
import time
import uuid
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

from lookup.blocks.kv.checker import History, lost_writes, summary
from lookup.blocks.kv.cluster import KvClient, KvCluster
from lookup.kit.ring import HashRing

__all__ = [
    "FAILURES",
    "convergence_after_partition",
    "fail_node",
    "final_values",
    "key_movement",
    "load_imbalance",
    "mod_node",
    "lww_under_skew",
    "quorum_table",
    "recover_node",
    "rebuild_after_disk_loss",
    "run_workload",
    "shopping_cart",
    "wait_converged",
    "wait_seen_up",
    "wait_seen_down",
]


# -- the ring --------------------------------------------------------------------------
def mod_node(key: str, nodes: Sequence[str]) -> str:
    """The naive placement: md5(key) mod N."""
    h = int.from_bytes(hashlib.md5(key.encode(), usedforsecurity=False).digest(), "big")
    return nodes[h % len(nodes)]


def key_movement(nodes: int = 10, keys: int = 50_000,
                 vnodes: Iterable[int] = (1, 160)) -> list[dict[str, Any]]:
    """Fraction of keys that change node when one joins (``nodes`` → ``nodes + 1``) and
    leaves again, for ``hash mod N`` and for the ring with each number of vnodes. The
    ideal for a join is ``1 / (nodes + 1)``."""
    names = [f"node-{i}" for i in range(nodes)]
    grown = names + [f"node-{nodes}"]
    sample = [f"key:{i}" for i in range(keys)]
    rows = []
    before = [mod_node(k, names) for k in sample]
    after = [mod_node(k, grown) for k in sample]
    moved = sum(a != b for a, b in zip(before, after, strict=True)) / keys
    rows.append({"scheme": "hash(key) mod N", "vnodes": None, "moved on join": round(moved, 4),
                 "moved on leave": round(moved, 4), "ideal": round(1 / (nodes + 1), 4)})
    for v in vnodes:
        ring = HashRing(names, vnodes=v)
        before = [ring.node_for(k) for k in sample]
        ring.add(grown[-1])
        after = [ring.node_for(k) for k in sample]
        joined = sum(a != b for a, b in zip(before, after, strict=True)) / keys
        ring.remove(grown[-1])
        back = [ring.node_for(k) for k in sample]
        left = sum(a != b for a, b in zip(after, back, strict=True)) / keys
        rows.append({"scheme": "consistent hashing ring", "vnodes": v,
                     "moved on join": round(joined, 4), "moved on leave": round(left, 4),
                     "ideal": round(1 / (nodes + 1), 4)})
    return rows


def load_imbalance(nodes: int = 10, keys: int = 50_000,
                   vnodes: Iterable[int] = (1, 2, 5, 10, 20, 50, 100, 200, 500)
                   ) -> list[dict[str, Any]]:
    """Keys per node on the ring: max/mean and the coefficient of variation, per vnodes."""
    names = [f"node-{i}" for i in range(nodes)]
    sample = [f"key:{i}" for i in range(keys)]
    rows = []
    for v in vnodes:
        ring = HashRing(names, vnodes=v)
        counts = Counter(ring.node_for(k) for k in sample)
        load = [counts.get(n, 0) for n in names]
        mean = statistics.fmean(load)
        rows.append({"vnodes": v, "max/mean": round(max(load) / mean, 3),
                     "min/mean": round(min(load) / mean, 3),
                     "stdev/mean": round(statistics.pstdev(load) / mean, 3)})
    return rows


# -- the store: workload, detection, convergence ----------------------------------------
def run_workload(client: KvClient, history: History, keys: Sequence[str], ops: int, *,
                 r: int, w: int, coordinators: Sequence[str], read_fraction: float = 0.5,
                 rng: random.Random | None = None, seqs: dict[str, int] | None = None,
                 contexts: dict[str, dict[str, int]] | None = None, mode: str = "vclock",
                 process: str = "c1") -> None:
    """``ops`` reads and writes on ``keys`` through random ``coordinators``, recorded.

    Writes are ``"<key>#<seq>"`` with ``seq`` increasing per key (``seqs`` carries it over
    calls) and descend from the last clock this client saw for the key (``contexts``).
    """
    rng = rng or random.Random(7)
    seqs = {} if seqs is None else seqs
    contexts = {} if contexts is None else contexts
    for _ in range(ops):
        key = rng.choice(keys)
        via = rng.choice(list(coordinators))
        if rng.random() < read_fraction:
            op = history.invoke(process, "get", key)
            res = client.get(key, r=r, mode=mode, via=via)
            if res.status in (200, 404):
                history.complete(op, "ok", res.siblings, res.coordinator)
                if res.context:
                    contexts[key] = res.context
            else:
                history.complete(op, "fail" if res.status else "info", (), via, res.error)
        else:
            seqs[key] = seqs.get(key, 0) + 1
            value = f"{key}#{seqs[key]}"
            op = history.invoke(process, "put", key, value)
            res = client.put(key, value, context=contexts.get(key), w=w, mode=mode, via=via)
            if res.ok:
                contexts[key] = dict(res.body.get("clock", {}))
                history.complete(op, "ok", (), res.coordinator)
            else:
                history.complete(op, "fail" if res.status else "info", (), via, res.error)


def wait_seen_down(cluster: KvCluster, victim: str, observers: Iterable[str],
                   timeout_s: float = 30.0) -> float:
    """Seconds until every observer's heartbeats call ``victim`` down."""
    start = time.monotonic()
    observers = list(observers)
    while time.monotonic() - start < timeout_s:
        stats = cluster.stats()
        if all(victim in stats[o].get("down (as seen here)", []) for o in observers):
            return time.monotonic() - start
        time.sleep(0.05)
    raise TimeoutError(f"{victim} not seen down by {observers} within {timeout_s} s")


def wait_seen_up(cluster: KvCluster, node: str, observers: Iterable[str],
                 timeout_s: float = 30.0) -> float:
    """Seconds until no observer calls ``node`` down any more."""
    start = time.monotonic()
    observers = list(observers)
    while time.monotonic() - start < timeout_s:
        stats = cluster.stats()
        if not any(node in stats[o].get("down (as seen here)", []) for o in observers):
            return time.monotonic() - start
        time.sleep(0.05)
    raise TimeoutError(f"{node} still seen down by some of {observers} after {timeout_s} s")


def _replicas_agree(cluster: KvCluster, keys: Iterable[str]) -> bool:
    dumps = {name: cluster.dump(name) for name in cluster.names}
    for key in keys:
        digests = {dumps[h].get(key, {}).get("digest") for h in cluster.home(key)}
        if len(digests) != 1:  # one digest (or absent on every replica)
            return False
    return True


def wait_converged(cluster: KvCluster, keys: Iterable[str], timeout_s: float = 30.0) -> float:
    """Seconds until every home replica of every key holds the same versions."""
    keys = list(keys)
    start = time.monotonic()
    while not _replicas_agree(cluster, keys):
        if time.monotonic() - start > timeout_s:
            raise TimeoutError(f"replicas did not converge within {timeout_s} s")
        time.sleep(0.05)
    return time.monotonic() - start


def final_values(cluster: KvCluster, keys: Iterable[str]) -> list[dict[str, list[str | None]]]:
    """For each home replica: what it holds for each key (one mapping per replica slot)."""
    dumps = {name: cluster.dump(name) for name in cluster.names}
    per_slot: list[dict[str, list[str | None]]] = [{} for _ in range(cluster.n)]
    for key in keys:
        for slot, home in enumerate(cluster.home(key)):
            per_slot[slot][key] = dumps[home].get(key, {}).get("values", [])
    return per_slot


def _keys_homed_on(cluster: KvCluster, node: str, count: int, prefix: str,
                   also: str | None = None) -> list[str]:
    out, i = [], 0
    while len(out) < count:
        key = f"{prefix}{i}"
        home = cluster.home(key)
        if node in home and (also is None or also in home):
            out.append(key)
        i += 1
    return out


FAILURES = ("kill", "freeze", "partition", "isolate")


def fail_node(cluster: KvCluster, failure: str, victim: str, peer: str) -> None:
    """Break ``victim`` one of the :data:`FAILURES` ways (``peer``: the partition's other side)."""
    if failure == "kill":
        cluster.kill(victim)
    elif failure == "freeze":
        cluster.freeze(victim)
    elif failure == "partition":
        cluster.partition(victim, peer)
    elif failure == "isolate":
        cluster.isolate(victim)
    else:
        raise ValueError(f"failure must be one of {', '.join(FAILURES)}, got {failure!r}")


def recover_node(cluster: KvCluster, failure: str, victim: str) -> None:
    """Undo :func:`fail_node`: restart, SIGCONT, or heal."""
    if failure == "kill":
        cluster.restart(victim)
    elif failure == "freeze":
        cluster.thaw(victim)
    else:
        cluster.heal()


def quorum_table(configs: Sequence[tuple[int, int]] = ((3, 1), (1, 3), (2, 2), (1, 1)), *,
                 failure: str = "kill", size: int = 4, n: int = 3, keys: int = 12,
                 ops: int = 100, recovery_ops: int = 50, seed: int = 7,
                 cluster: KvCluster | None = None) -> list[dict[str, Any]]:
    """The seed's quorum table for N=3, measured with one node failed.

    For each ``(W, R)``: keys whose home replicas include the victim get a workload while
    it is failed (``kill`` -9, ``freeze`` = SIGSTOP, ``partition``: the victim and one
    peer drop each other's traffic, both still coordinating, or ``isolate``: the victim
    is cut off from every peer but clients still reach it), then more right after it
    recovers. Reported: availability of writes and reads during the failure, stale reads
    (the checker, real-time order) during and after, acknowledged writes lost once the
    replicas converged, and how long convergence took after the last operation.
    """
    own = cluster is None
    cluster = cluster or KvCluster(size=size, n=n).start()
    rows = []
    try:
        victim, peer = cluster.names[1], cluster.names[0]
        client = cluster.client()
        rng = random.Random(seed)
        for w, r in configs:
            ks = _keys_homed_on(cluster, victim, keys, f"q-{failure}-w{w}r{r}-",
                                also=peer if failure == "partition" else None)
            history, seqs, contexts = History(), {}, {}
            run_workload(client, history, ks, len(ks), r=n, w=n, read_fraction=0.0,
                         coordinators=cluster.names, rng=rng, seqs=seqs, contexts=contexts)
            fail_node(cluster, failure, victim, peer)
            if failure == "partition":
                coordinators = list(cluster.names)
                wait_seen_down(cluster, victim, [peer])
            elif failure == "isolate":  # clients still reach it: it coordinates alone
                coordinators = list(cluster.names)
                wait_seen_down(cluster, victim, [x for x in cluster.names if x != victim])
            else:
                coordinators = [x for x in cluster.names if x != victim]
                wait_seen_down(cluster, victim, coordinators)
            during = History()
            run_workload(client, during, ks, ops, r=r, w=w, coordinators=coordinators,
                         rng=rng, seqs=seqs, contexts=contexts)
            recover_node(cluster, failure, victim)
            after = History()
            run_workload(client, after, ks, recovery_ops, r=r, w=w,
                         coordinators=cluster.names, rng=rng, seqs=seqs, contexts=contexts)
            converge_s = wait_converged(cluster, ks)  # from the last operation
            all_ops = history.ops + during.ops + after.ops
            lost = set()
            for final in final_values(cluster, ks):
                lost.update(id(op) for op in lost_writes(all_ops, final))
            s_during, s_after = summary(during.ops), summary(after.ops)
            rows.append({
                "W": w, "R": r, "R+W>N": r + w > n, "failure": failure,
                "write availability": s_during["put availability"],
                "read availability": s_during["get availability"],
                "stale reads (failed)": s_during["stale reads"],
                "stale-read rate (failed)": s_during["stale-read rate"],
                "stale reads (recovery)": s_after["stale reads"],
                "stale-read rate (recovery)": s_after["stale-read rate"],
                "reads with siblings": s_during["reads with siblings"]
                + s_after["reads with siblings"],
                "acked writes": sum(o.kind == "put" and o.outcome == "ok" for o in all_ops),
                "acked writes lost": len(lost),
                "converged s after last op": round(converge_s, 2),
            })
    finally:
        if own:
            cluster.stop()
    return rows


def convergence_after_partition(keys: int = 60, *, size: int = 4, n: int = 3,
                                cluster: KvCluster | None = None) -> dict[str, Any]:
    """Isolate one node, write ``keys`` keys with W=2 through the others, heal, and time
    the replicas' convergence; with what did the repairing (hints, anti-entropy)."""
    own = cluster is None
    cluster = cluster or KvCluster(size=size, n=n).start()
    try:
        victim = cluster.names[-1]
        others = [x for x in cluster.names if x != victim]
        ks = _keys_homed_on(cluster, victim, keys, "conv-")
        cluster.isolate(victim)
        wait_seen_down(cluster, victim, others)
        history = History()
        client = cluster.client()
        run_workload(client, history, ks, 2 * keys, r=2, w=2, read_fraction=0.0,
                     coordinators=others)
        written = {o.key for o in history.ops if o.outcome == "ok"}
        diverged = len(written - set(cluster.dump(victim)))
        before = cluster.stats()
        cluster.heal()
        converge_s = wait_converged(cluster, ks)
        after = cluster.stats()
        lost = set()
        for final in final_values(cluster, ks):
            lost.update(id(op) for op in lost_writes(history.ops, final))

        def total(stats: dict[str, dict[str, Any]], name: str) -> int:
            return sum(int(s.get(name, 0)) for s in stats.values())
        return {
            "keys written": len(written),
            "acked writes": sum(o.outcome == "ok" for o in history.ops),
            "keys missing on the isolated node before healing": diverged,
            "converged s after heal": round(converge_s, 2),
            "hints delivered": total(after, "hints delivered") - total(before, "hints delivered"),
            "anti-entropy keys repaired": total(after, "anti-entropy keys repaired")
            - total(before, "anti-entropy keys repaired"),
            "acked writes lost": len(lost),
        }
    finally:
        if own:
            cluster.stop()


def rebuild_after_disk_loss(keys: int = 80, *, size: int = 4, n: int = 3,
                            repair: str = "anti-entropy") -> dict[str, Any]:
    """A node loses its disk (kill -9, file deleted, restarted empty); hints cannot help,
    so either Merkle anti-entropy (``repair="anti-entropy"``) or reads with R=N
    (``repair="read"``: read repair, anti-entropy switched off) must restore its copies."""
    if repair not in ("anti-entropy", "read"):
        raise ValueError(f"repair must be anti-entropy or read, got {repair!r}")
    anti_entropy_s = 0.5 if repair == "anti-entropy" else 3600.0
    with KvCluster(size=size, n=n, anti_entropy_s=anti_entropy_s) as cluster:
        victim = cluster.names[0]
        ks = _keys_homed_on(cluster, victim, keys, "disk-")
        client = cluster.client()
        history = History()
        run_workload(client, history, ks, keys, r=n, w=n, read_fraction=0.0,
                     coordinators=cluster.names)
        held = len(cluster.dump(victim))
        cluster.lose_disk(victim)
        cluster.restart(victim)
        start = time.monotonic()
        empty = len(cluster.dump(victim))
        if repair == "read":
            wait_seen_up(cluster, victim, [cluster.names[1]])
            todo, deadline = list(ks), time.monotonic() + 30
            while todo and time.monotonic() < deadline:  # a refused read (no quorum) again
                todo = [k for k in todo
                        if client.get(k, r=n, via=cluster.names[1]).status not in (200, 404)]
        converge_s = wait_converged(cluster, ks)
        stats = cluster.stats()
        lost = set()
        for final in final_values(cluster, ks):
            lost.update(id(op) for op in lost_writes(history.ops, final))
        return {
            "repair": repair, "keys held before": held,
            "keys held right after restart": empty,
            "keys held after repair": len(cluster.dump(victim)),
            "rebuilt in s": round(converge_s if repair == "anti-entropy"
                                  else time.monotonic() - start, 2),
            "merkle hashes compared": sum(int(s.get("merkle hashes compared", 0))
                                          for s in stats.values()),
            "read repairs": sum(int(s.get("read repairs", 0)) for s in stats.values()),
            "acked writes lost": len(lost),
        }


def lww_under_skew(writes: int = 20, skew_s: float = -30.0,
                   cluster: KvCluster | None = None) -> list[dict[str, Any]]:
    """Alternate writes to one key through two coordinators, one with its clock behind.

    Last-write-wins keeps the highest timestamp, so each write stamped by the slow clock
    is acknowledged and then silently discarded; vector clocks (each write descending from
    the one read) keep every one. Each write is followed by a read with R=N.
    """
    own = cluster is None
    cluster = cluster or KvCluster(size=3, n=3).start()
    rows = []
    try:
        fast, slow = cluster.names[0], cluster.names[1]
        cluster.skew(slow, skew_s)
        client = cluster.client()
        for mode in ("lww", "vclock"):
            key, acked, lost, context = f"skew-{mode}", 0, 0, {}
            for i in range(writes):
                via = slow if i % 2 else fast
                value = f"{key}#{i + 1}"
                res = client.put(key, value, context=context, w=3, mode=mode, via=via)
                if not res.ok:
                    continue
                acked += 1
                read = client.get(key, r=3, mode=mode, via=fast)
                context = read.context
                if value not in read.siblings:
                    lost += 1
            rows.append({"mode": mode, "clock skew s": skew_s, "acked writes": acked,
                         "acked writes silently lost": lost})
        cluster.skew(slow, 0.0)
    finally:
        if own:
            cluster.stop()
    return rows


def shopping_cart(cluster: KvCluster | None = None) -> dict[str, Any]:
    """The seed's cart: two clients add items concurrently from one read; the next read
    returns both as siblings; the client merges (union) and writes back one version."""
    own = cluster is None
    cluster = cluster or KvCluster(size=3, n=3).start()
    try:
        alice, bob = cluster.client(actor="alice"), cluster.client(actor="bob")
        key = f"cart:{uuid.uuid4().hex[:8]}"
        alice.put(key, "milk")
        seen = alice.get(key)
        alice.put(key, "milk,eggs", context=seen.context, via=cluster.names[0])
        bob.put(key, "milk,bread", context=seen.context, via=cluster.names[1])
        conflict = alice.get(key, r=2)  # overlaps both W=2 writes
        items = sorted({i for s in conflict.siblings for i in s.split(",")})
        alice.put(key, ",".join(items), context=conflict.context)
        merged = alice.get(key, r=2)
        return {"siblings": conflict.siblings, "their clock": conflict.context,
                "merged": merged.siblings, "merged clock": merged.context}
    finally:
        if own:
            cluster.stop()
