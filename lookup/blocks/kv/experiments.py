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
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from lookup.blocks.kv.checker import History, lost_writes, summary
from lookup.blocks.kv.cluster import KvClient, KvCluster
from lookup.kit.ring import HashRing

__all__ = [
    "FAILURES",
    "convergence_after_partition",
    "convergence_after_return",
    "converge_times",
    "fail_node",
    "final_values",
    "key_movement",
    "load_imbalance",
    "mod_node",
    "lww_under_skew",
    "quorum_table",
    "recover_node",
    "rebuild_after_disk_loss",
    "run_clients",
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


def key_movement(
    nodes: int = 10, keys: int = 50_000, vnodes: Iterable[int] = (1, 160), *, prefix: str = "node"
) -> list[dict[str, Any]]:
    """Fraction of keys that change node when one joins (``nodes`` → ``nodes + 1``) and
    leaves again, for ``hash mod N`` and for the ring with each number of vnodes. The
    ideal for a join is ``1 / (nodes + 1)``; the nodes are ``f"{prefix}-{i}"``."""
    names = [f"{prefix}-{i}" for i in range(nodes)]
    grown = names + [f"{prefix}-{nodes}"]
    sample = [f"key:{i}" for i in range(keys)]
    rows = []
    before = [mod_node(k, names) for k in sample]
    after = [mod_node(k, grown) for k in sample]
    moved = sum(a != b for a, b in zip(before, after, strict=True)) / keys
    rows.append(
        {
            "scheme": "hash(key) mod N",
            "vnodes": None,
            "moved on join": round(moved, 4),
            "moved on leave": round(moved, 4),
            "ideal": round(1 / (nodes + 1), 4),
        }
    )
    for v in vnodes:
        ring = HashRing(names, vnodes=v)
        before = [ring.node_for(k) for k in sample]
        ring.add(grown[-1])
        after = [ring.node_for(k) for k in sample]
        joined = sum(a != b for a, b in zip(before, after, strict=True)) / keys
        ring.remove(grown[-1])
        back = [ring.node_for(k) for k in sample]
        left = sum(a != b for a, b in zip(after, back, strict=True)) / keys
        rows.append(
            {
                "scheme": "consistent hashing ring",
                "vnodes": v,
                "moved on join": round(joined, 4),
                "moved on leave": round(left, 4),
                "ideal": round(1 / (nodes + 1), 4),
            }
        )
    return rows


def load_imbalance(
    nodes: int = 10,
    keys: int = 50_000,
    vnodes: Iterable[int] = (1, 2, 5, 10, 20, 50, 100, 200, 500),
    *,
    prefix: str = "node",
) -> list[dict[str, Any]]:
    """Keys per node on the ring: max/mean and the coefficient of variation, per vnodes.

    The nodes are ``f"{prefix}-{i}"``: another prefix is another draw of the points.
    """
    names = [f"{prefix}-{i}" for i in range(nodes)]
    sample = [f"key:{i}" for i in range(keys)]
    rows = []
    for v in vnodes:
        ring = HashRing(names, vnodes=v)
        counts = Counter(ring.node_for(k) for k in sample)
        load = [counts.get(n, 0) for n in names]
        mean = statistics.fmean(load)
        rows.append(
            {
                "vnodes": v,
                "max/mean": round(max(load) / mean, 3),
                "min/mean": round(min(load) / mean, 3),
                "stdev/mean": round(statistics.pstdev(load) / mean, 3),
            }
        )
    return rows


# -- the store: workload, detection, convergence ----------------------------------------
def _one_op(
    client: KvClient,
    history: History,
    key: str,
    via: str,
    read: bool,
    *,
    r: int,
    w: int,
    seqs: dict[str, int],
    contexts: dict[str, dict[str, int]],
    mode: str,
    process: str,
    lock: threading.Lock | None = None,
) -> None:
    """One recorded read or write of ``key`` through coordinator ``via``."""
    if read:
        op = history.invoke(process, "get", key)
        res = client.get(key, r=r, mode=mode, via=via)
        if res.status in (200, 404):
            history.complete(op, "ok", res.siblings, res.coordinator)
            if res.context:
                contexts[key] = res.context
        else:
            history.complete(op, "fail" if res.status else "info", (), via, res.error)
        return
    if lock is None:
        seqs[key] = seqs.get(key, 0) + 1
        value = f"{key}#{seqs[key]}"
    else:
        with lock:  # a sequence number is taken once, in invocation order
            seqs[key] = seqs.get(key, 0) + 1
            value = f"{key}#{seqs[key]}"
    op = history.invoke(process, "put", key, value)
    res = client.put(key, value, context=contexts.get(key), w=w, mode=mode, via=via)
    if res.ok:
        contexts[key] = dict(res.body.get("clock", {}))
        history.complete(op, "ok", (), res.coordinator)
    else:
        history.complete(op, "fail" if res.status else "info", (), via, res.error)


def run_workload(
    client: KvClient,
    history: History,
    keys: Sequence[str],
    ops: int,
    *,
    r: int,
    w: int,
    coordinators: Sequence[str],
    read_fraction: float = 0.5,
    rng: random.Random | None = None,
    seqs: dict[str, int] | None = None,
    contexts: dict[str, dict[str, int]] | None = None,
    mode: str = "vclock",
    process: str = "c1",
) -> None:
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
        read = rng.random() < read_fraction
        _one_op(
            client,
            history,
            key,
            via,
            read,
            r=r,
            w=w,
            seqs=seqs,
            contexts=contexts,
            mode=mode,
            process=process,
        )


def run_clients(
    cluster: KvCluster,
    history: History,
    keys: Sequence[str],
    rounds: int,
    *,
    r: int,
    w: int,
    coordinators: Sequence[str],
    seed: int = 7,
    read_fraction: float = 0.5,
    seqs: dict[str, int] | None = None,
    contexts: dict[str, dict[str, dict[str, int]]] | None = None,
    mode: str = "vclock",
) -> None:
    """Concurrent clients, one per coordinator, each doing ``rounds`` operations on ``keys``.

    The clients run in lockstep: every round each issues one operation (its own seeded
    choice of key and of read or write) at the same time, and the next round starts once
    all of them completed. Within a round they race; across rounds the real-time order the
    checker judges is fixed by the seed, not by thread scheduling. ``contexts`` maps each
    client (``"c-<coordinator>"``) to the clocks it has seen, carried over calls; ``seqs``
    is shared (under a lock) so values stay ordered per key.
    """
    seqs = {} if seqs is None else seqs
    contexts = {} if contexts is None else contexts
    lock = threading.Lock()
    barrier = threading.Barrier(len(coordinators))
    errors: list[BaseException] = []

    def client_loop(index: int, via: str) -> None:
        process = f"c-{via}"
        mine = contexts.setdefault(process, {})
        rng = random.Random(seed * 1000 + index)
        client = cluster.client()
        try:
            for _ in range(rounds):
                key = rng.choice(keys)
                read = rng.random() < read_fraction
                _one_op(
                    client,
                    history,
                    key,
                    via,
                    read,
                    r=r,
                    w=w,
                    seqs=seqs,
                    contexts=mine,
                    mode=mode,
                    process=process,
                    lock=lock,
                )
                barrier.wait(timeout=60)
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
            errors.append(exc)
            barrier.abort()
        finally:
            client.close()

    threads = [
        threading.Thread(target=client_loop, args=(i, via), daemon=True)
        for i, via in enumerate(coordinators)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        first = next(
            (e for e in errors if not isinstance(e, threading.BrokenBarrierError)), errors[0]
        )
        raise first


def wait_seen_down(
    cluster: KvCluster, victim: str, observers: Iterable[str], timeout_s: float = 30.0
) -> float:
    """Seconds until every observer's heartbeats call ``victim`` down."""
    start = time.monotonic()
    observers = list(observers)
    while time.monotonic() - start < timeout_s:
        stats = cluster.stats()
        if all(victim in stats[o].get("down (as seen here)", []) for o in observers):
            return time.monotonic() - start
        time.sleep(0.05)
    raise TimeoutError(f"{victim} not seen down by {observers} within {timeout_s} s")


def wait_seen_up(
    cluster: KvCluster, node: str, observers: Iterable[str], timeout_s: float = 30.0
) -> float:
    """Seconds until no observer calls ``node`` down any more."""
    start = time.monotonic()
    observers = list(observers)
    while time.monotonic() - start < timeout_s:
        stats = cluster.stats()
        if not any(node in stats[o].get("down (as seen here)", []) for o in observers):
            return time.monotonic() - start
        time.sleep(0.05)
    raise TimeoutError(f"{node} still seen down by some of {observers} after {timeout_s} s")


def _disagreeing(cluster: KvCluster, groups: Mapping[str, Sequence[str]]) -> set[str]:
    """The groups in which some key's home replicas hold different versions (one dump each)."""
    dumps = {name: cluster.dump(name) for name in cluster.names}
    out = set()
    for label, keys in groups.items():
        for key in keys:
            digests = {dumps[h].get(key, {}).get("digest") for h in cluster.home(key)}
            if len(digests) != 1:  # one digest (or absent on every replica)
                out.add(label)
                break
    return out


def converge_times(
    cluster: KvCluster,
    groups: Mapping[str, Sequence[str]],
    *,
    since: float | None = None,
    timeout_s: float = 30.0,
) -> dict[str, float]:
    """For each group of keys: seconds from ``since`` (a ``time.monotonic()``; default now)
    until every home replica of every key in it holds the same versions — read from every
    replica's store, with no client traffic needed."""
    start = time.monotonic() if since is None else since
    done: dict[str, float] = {}
    todo = dict(groups)
    while todo:
        waiting = _disagreeing(cluster, todo)
        now = time.monotonic() - start
        for label in list(todo):
            if label not in waiting:
                done[label] = now
                del todo[label]
        if todo:
            if time.monotonic() - start > timeout_s:
                raise TimeoutError(
                    f"replicas of {sorted(todo)} did not converge within {timeout_s} s"
                )
            time.sleep(0.05)
    return done


def wait_converged(cluster: KvCluster, keys: Iterable[str], timeout_s: float = 30.0) -> float:
    """Seconds until every home replica of every key holds the same versions."""
    return converge_times(cluster, {"keys": list(keys)}, timeout_s=timeout_s)["keys"]


def final_values(cluster: KvCluster, keys: Iterable[str]) -> list[dict[str, list[str | None]]]:
    """For each home replica: what it holds for each key (one mapping per replica slot)."""
    dumps = {name: cluster.dump(name) for name in cluster.names}
    per_slot: list[dict[str, list[str | None]]] = [{} for _ in range(cluster.n)]
    for key in keys:
        for slot, home in enumerate(cluster.home(key)):
            per_slot[slot][key] = dumps[home].get(key, {}).get("values", [])
    return per_slot


def _keys_homed_on(
    cluster: KvCluster, node: str, count: int, prefix: str, also: str | None = None
) -> list[str]:
    out: list[str] = []
    i = 0
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
    """Undo :func:`fail_node`: restart (returns once it answers), SIGCONT, or heal."""
    if failure == "kill":
        cluster.restart(victim)
    elif failure == "freeze":
        cluster.thaw(victim)
    else:
        cluster.heal()


def _coordinators_during(cluster: KvCluster, failure: str, victim: str, peer: str) -> list[str]:
    """Wait until the failure is seen; the nodes clients may use while it lasts."""
    if failure == "partition":
        wait_seen_down(cluster, victim, [peer])
        return list(cluster.names)
    if failure == "isolate":  # clients still reach it: it coordinates alone
        wait_seen_down(cluster, victim, [x for x in cluster.names if x != victim])
        return list(cluster.names)
    live = [x for x in cluster.names if x != victim]
    wait_seen_down(cluster, victim, live)
    return live


def _lost(cluster: KvCluster, ops: Sequence[Any], keys: Iterable[str]) -> int:
    lost: set[int] = set()  # id() of each lost write
    for final in final_values(cluster, keys):
        lost.update(id(op) for op in lost_writes(ops, final))
    return len(lost)


def quorum_table(
    configs: Sequence[tuple[int, int]] = ((3, 1), (1, 3), (2, 2), (1, 1)),
    *,
    failure: str = "isolate",
    size: int = 4,
    n: int = 3,
    keys: int = 12,
    ops: int = 96,
    recovery_ops: int = 48,
    seed: int = 7,
    cluster: KvCluster | None = None,
) -> list[dict[str, Any]]:
    """The seed's quorum table for N=3, measured with one node failed.

    Each ``(W, R)`` gets its own ``keys`` keys, every one with the victim among its home
    replicas, first written with W=N. Then one failure for the whole table — ``kill`` -9,
    ``freeze`` (SIGSTOP), ``partition`` (the victim and one peer drop each other's
    traffic, both still coordinating) or ``isolate`` (the victim is cut off from every
    peer, but clients still reach it: it coordinates alone, reading and writing its own
    copy) — during which each configuration's workload runs in turn: concurrent clients,
    one per reachable coordinator (:func:`run_clients`), ``ops`` operations in all. Then the
    victim returns and, before any more traffic, the time until each configuration's keys
    agree on every replica is measured from that moment (restart answered, SIGCONT, heal);
    then ``recovery_ops`` more operations; then, once converged, the acknowledged writes
    no replica covers are counted. Stale reads are the checker's (real-time order).
    """
    own = cluster is None
    cluster = cluster or KvCluster(size=size, n=n).start()
    rows = []
    try:
        victim, peer = cluster.names[1], cluster.names[0]
        run = uuid.uuid4().hex[:6]
        client = cluster.client()
        seqs: dict[str, int] = {}
        plan = []
        for w, r in configs:
            ks = _keys_homed_on(
                cluster,
                victim,
                keys,
                f"q-{run}-{failure}-w{w}r{r}-",
                also=peer if failure == "partition" else None,
            )
            history = History()
            start: dict[str, dict[str, int]] = {}
            for i, key in enumerate(ks):  # every key once, on every replica
                _one_op(
                    client,
                    history,
                    key,
                    cluster.names[i % len(cluster.names)],
                    False,
                    r=n,
                    w=n,
                    seqs=seqs,
                    contexts=start,
                    mode="vclock",
                    process="setup",
                )
            plan.append((w, r, ks, history, start))
        fail_node(cluster, failure, victim, peer)
        try:
            coordinators = _coordinators_during(cluster, failure, victim, peer)
            rounds = max(1, -(-ops // len(coordinators)))
            during: dict[tuple[int, int], History] = {}
            contexts: dict[tuple[int, int], dict[str, dict[str, dict[str, int]]]] = {}
            for w, r, ks, _, start in plan:
                during[w, r] = History()
                contexts[w, r] = {f"c-{x}": dict(start) for x in cluster.names}
                run_clients(
                    cluster,
                    during[w, r],
                    ks,
                    rounds,
                    r=r,
                    w=w,
                    coordinators=coordinators,
                    seed=seed,
                    seqs=seqs,
                    contexts=contexts[w, r],
                )
        finally:
            recover_node(cluster, failure, victim)
        returned = time.monotonic()
        converged = converge_times(
            cluster, {f"{w},{r}": ks for w, r, ks, _, _ in plan}, since=returned
        )
        after: dict[tuple[int, int], History] = {}
        rounds = max(1, -(-recovery_ops // len(cluster.names)))
        for w, r, ks, _, _ in plan:
            after[w, r] = History()
            run_clients(
                cluster,
                after[w, r],
                ks,
                rounds,
                r=r,
                w=w,
                coordinators=cluster.names,
                seed=seed + 1,
                seqs=seqs,
                contexts=contexts[w, r],
            )
        wait_converged(cluster, [k for _, _, ks, _, _ in plan for k in ks])
        for w, r, ks, history, _ in plan:
            all_ops = history.ops + during[w, r].ops + after[w, r].ops
            s_during, s_after = summary(during[w, r].ops), summary(after[w, r].ops)
            rows.append(
                {
                    "W": w,
                    "R": r,
                    "R+W>N": r + w > n,
                    "failure": failure,
                    "clients": len(coordinators),
                    "write availability": s_during["put availability"],
                    "read availability": s_during["get availability"],
                    "stale reads (failed)": s_during["stale reads"],
                    "stale-read rate (failed)": s_during["stale-read rate"],
                    "stale reads (recovery)": s_after["stale reads"],
                    "stale-read rate (recovery)": s_after["stale-read rate"],
                    "reads with siblings": s_during["reads with siblings"]
                    + s_after["reads with siblings"],
                    "acked writes": sum(o.kind == "put" and o.outcome == "ok" for o in all_ops),
                    "acked writes lost": _lost(cluster, all_ops, ks),
                    "converged s after return": round(converged[f"{w},{r}"], 2),
                }
            )
        client.close()
    finally:
        if own:
            cluster.stop()
    return rows


def convergence_after_return(
    failure: str = "isolate",
    keys: int = 60,
    *,
    size: int = 4,
    n: int = 3,
    cluster: KvCluster | None = None,
) -> dict[str, Any]:
    """Fail one node, write ``keys`` keys with W=2 through the others, bring it back, and
    time from its return (restart answered, SIGCONT, heal) until every replica of every key
    agrees — read from the replicas' stores, before any client traffic — with what did the
    repairing (hints, anti-entropy)."""
    if failure not in FAILURES or failure == "partition":
        raise ValueError(f"failure must be kill, freeze or isolate, got {failure!r}")
    own = cluster is None
    cluster = cluster or KvCluster(size=size, n=n).start()
    try:
        victim = cluster.names[-1]
        ks = _keys_homed_on(cluster, victim, keys, f"conv-{uuid.uuid4().hex[:6]}-")
        before = cluster.stats()
        fail_node(cluster, failure, victim, cluster.names[0])
        try:
            others = _coordinators_during(cluster, failure, victim, cluster.names[0])
            others = [x for x in others if x != victim]
            history, client = History(), cluster.client()
            run_workload(
                client, history, ks, 2 * keys, r=2, w=2, read_fraction=0.0, coordinators=others
            )
            client.close()
            written = {o.key for o in history.ops if o.outcome == "ok"}
            if failure == "isolate":  # clients still reach it
                held = set(cluster.dump(victim))
        finally:
            began = time.monotonic()
            recover_node(cluster, failure, victim)
        returned = time.monotonic()
        if failure != "isolate":  # the first thing done once it answers again
            held = set(cluster.dump(victim))
        converge_s = converge_times(cluster, {"all": ks}, since=returned)["all"]
        after = cluster.stats()

        def total(name: str) -> int:
            out = 0
            for x in cluster.names:
                now, then = int(after[x].get(name, 0)), int(before[x].get(name, 0))
                out += now - then if now >= then else now  # a restarted process counts from 0
            return out

        return {
            "failure": failure,
            "keys written": len(written),
            "acked writes": sum(o.outcome == "ok" for o in history.ops),
            "keys the victim lacked on return": len(written - held),
            "return took s": round(returned - began, 2),
            "converged s after return": round(converge_s, 2),
            "hints delivered": total("hints delivered"),
            "anti-entropy keys repaired": total("anti-entropy keys repaired"),
            "acked writes lost": _lost(cluster, history.ops, ks),
        }
    finally:
        if own:
            cluster.stop()


def convergence_after_partition(
    keys: int = 60, *, size: int = 4, n: int = 3, cluster: KvCluster | None = None
) -> dict[str, Any]:
    """:func:`convergence_after_return` for an isolated node: the partition heals."""
    return convergence_after_return("isolate", keys, size=size, n=n, cluster=cluster)


def rebuild_after_disk_loss(
    keys: int = 80, *, size: int = 4, n: int = 3, repair: str = "anti-entropy"
) -> dict[str, Any]:
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
        run_workload(
            client, history, ks, keys, r=n, w=n, read_fraction=0.0, coordinators=cluster.names
        )
        held = len(cluster.dump(victim))
        cluster.lose_disk(victim)
        cluster.restart(victim)
        start = time.monotonic()
        empty = len(cluster.dump(victim))
        if repair == "read":
            wait_seen_up(cluster, victim, [cluster.names[1]])
            todo, deadline = list(ks), time.monotonic() + 30
            while todo and time.monotonic() < deadline:  # a refused read (no quorum) again
                todo = [
                    k
                    for k in todo
                    if client.get(k, r=n, via=cluster.names[1]).status not in (200, 404)
                ]
        converge_s = wait_converged(cluster, ks)
        stats = cluster.stats()
        lost: set[int] = set()  # id() of each lost write
        for final in final_values(cluster, ks):
            lost.update(id(op) for op in lost_writes(history.ops, final))
        return {
            "repair": repair,
            "keys held before": held,
            "keys held right after restart": empty,
            "keys held after repair": len(cluster.dump(victim)),
            "rebuilt in s": round(
                converge_s if repair == "anti-entropy" else time.monotonic() - start, 2
            ),
            "merkle hashes compared": sum(
                int(s.get("merkle hashes compared", 0)) for s in stats.values()
            ),
            "read repairs": sum(int(s.get("read repairs", 0)) for s in stats.values()),
            "acked writes lost": len(lost),
        }


def lww_under_skew(
    writes: int = 20, skew_s: float = -30.0, cluster: KvCluster | None = None
) -> list[dict[str, Any]]:
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
            key, acked, lost = f"skew-{mode}", 0, 0
            context: dict[str, int] = {}
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
            rows.append(
                {
                    "mode": mode,
                    "clock skew s": skew_s,
                    "acked writes": acked,
                    "acked writes silently lost": lost,
                }
            )
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
        return {
            "siblings": conflict.siblings,
            "their clock": conflict.context,
            "merged": merged.siblings,
            "merged clock": merged.context,
        }
    finally:
        if own:
            cluster.stop()
