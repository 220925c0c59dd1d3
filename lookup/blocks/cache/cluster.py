"""The Redis Cluster failover drill: ``kill -9`` a master under load, through redis-py's
cluster client, and measure what the seed says a cache costs when a node dies.

:class:`ClusterCache` is the cache as an application uses it: ``get`` answers a value or
a miss — never an exception — so a dead master costs misses (counted apart: the calls
that failed and were answered as misses). :func:`failover_drill` runs writer and reader
threads against a :class:`~lookup.kit.engines.rediscluster.RedisCluster`, kills the master that
owns a chosen slot with ``SIGKILL``, and reports:

- **failover time**: from the kill until a replica serves that master's slots (seen in
  ``CLUSTER NODES``), and until the client's writes to them succeed again (the first
  success after the last failure);
- **misses, not errors**: reads during the drill by outcome (hit, miss, failed → miss)
  with zero exceptions reaching the caller;
- **acknowledged writes lost**: every write the cluster acknowledged is read back after
  the failover; those missing were on the dead master and never reached its replica
  (replication is asynchronous — the reason a cache is never the source of truth);
- a timeline in bins of ``bin_s`` for the plots.

Redis Cluster does not use a hash ring: a key maps to one of 16,384 slots
(``CRC16(key) mod 16384``) and each master owns ranges of slots.
"""

from __future__ import annotations

import random
import signal
import threading
import time
from collections import Counter
from typing import Any, cast

import redis
from redis.backoff import NoBackoff
from redis.cluster import ClusterNode as PyClusterNode
from redis.cluster import RedisCluster as PyRedisCluster
from redis.retry import Retry

from lookup.kit.engines.rediscluster import RedisCluster

__all__ = ["ClusterCache", "failover_drill", "key_slot"]


def key_slot(key: str) -> int:
    """The hash slot of ``key`` (redis-py's CRC16 of the key or its ``{hash tag}``)."""
    from redis.crc import key_slot as crc_slot

    return int(crc_slot(key.encode()))


class ClusterCache:
    """A cache on a Redis Cluster whose every failure is a miss (counted), never a raise."""

    def __init__(self, startup_nodes: list[tuple[str, int]], *, timeout_s: float = 0.25) -> None:
        self.client = PyRedisCluster(
            startup_nodes=[PyClusterNode(h, p) for h, p in startup_nodes],
            socket_connect_timeout=timeout_s, socket_timeout=timeout_s,
            retry=Retry(NoBackoff(), 1), require_full_coverage=False,
        )  # fmt: skip
        self.failures: Counter[str] = Counter()

    def get(self, key: str) -> bytes | None:
        """The cached value, or None on a miss — including when the node cannot answer."""
        try:
            # bytes: the client is made without decode_responses
            return cast("bytes | None", self.client.get(key))
        except (redis.RedisError, OSError) as exc:
            self.failures[type(exc).__name__] += 1
            return None

    def set(self, key: str, value: str, ttl_s: int | None = None) -> bool:
        """True when the cluster acknowledged the write."""
        try:
            return bool(self.client.set(key, value, ex=ttl_s))
        except (redis.RedisError, OSError) as exc:
            self.failures[type(exc).__name__] += 1
            return False

    def close(self) -> None:
        self.client.close()


def failover_drill(
    cluster: RedisCluster, *, before_s: float = 1.5, after_s: float = 3.0, writers: int = 2,
    readers: int = 2, bin_s: float = 0.1, timeout_s: float = 20.0, seed: int = 1,
    replica_lag_s: float = 0.0, value_bytes: int = 0,
) -> dict[str, Any]:  # fmt: skip
    """Kill -9 the master of slot 0's range under load; the figures (see the module doc).

    ``replica_lag_s`` > 0 first freezes the victim's replica (``SIGSTOP``) for that long
    before the kill and thaws it (``SIGCONT``) right after: a replica lagging behind, as
    one does on a slow link or under load — what the master acknowledged meanwhile never
    reached it, and the promotion loses exactly that. Socket buffers carry a small backlog
    across the freeze, so ``value_bytes`` pads each value to make the backlog outgrow them.
    """
    victim_slot = 0
    victim = cluster.master_of_slot(victim_slot)
    if victim is None:
        raise RuntimeError("the cluster has no master for slot 0: is it up?")
    rows = cluster.topology()
    victim_row = next(r for r in rows if r["port"] == victim)
    victim_ranges = victim_row["slots"]
    replica = next((r["port"] for r in rows if r["master_id"] == victim_row["id"]), None)
    if replica_lag_s > 0 and replica is None:
        raise RuntimeError("the victim has no replica to lag")
    if not 0 <= replica_lag_s < before_s:
        raise ValueError("replica_lag_s must be in [0, before_s)")

    def on_victim(key: str) -> bool:
        s = key_slot(key)
        return any(lo <= s <= hi for lo, hi in victim_ranges)

    acked: dict[str, tuple[str, float]] = {}  # key → (value, when acknowledged)
    acked_lock = threading.Lock()
    events: list[tuple[float, str, bool]] = []  # (t, outcome, on the victim)
    events_lock = threading.Lock()
    stop = threading.Event()
    escaped: list[str] = []
    t0 = time.monotonic()
    caches: list[ClusterCache] = []

    def writer(w: int) -> None:
        cache = ClusterCache(cluster.startup_nodes)
        caches.append(cache)
        n = 0
        try:
            while not stop.is_set():
                key, value = f"drill:{w}:{n}", f"v{n}:".ljust(value_bytes, "x")
                ok = cache.set(key, value)
                now = time.monotonic() - t0
                if ok:
                    with acked_lock:
                        acked[key] = (value, now)
                with events_lock:
                    events.append((now, "write ok" if ok else "write failed", on_victim(key)))
                n += 1
        except Exception as exc:  # pragma: no cover - what the drill says must not happen
            escaped.append(repr(exc))

    def reader(r: int) -> None:
        rng = random.Random(seed + r)
        cache = ClusterCache(cluster.startup_nodes)
        caches.append(cache)
        try:
            while not stop.is_set():
                with acked_lock:
                    written = max(1, len(acked) // writers)
                key = f"drill:{rng.randrange(writers)}:{rng.randrange(written)}"
                before = sum(cache.failures.values())
                value = cache.get(key)
                failed = sum(cache.failures.values()) > before
                outcome = "failed → miss" if failed else ("hit" if value is not None else "miss")
                with events_lock:
                    events.append((time.monotonic() - t0, outcome, on_victim(key)))
        except Exception as exc:  # pragma: no cover
            escaped.append(repr(exc))

    threads = [threading.Thread(target=writer, args=(w,), daemon=True) for w in range(writers)]
    threads += [threading.Thread(target=reader, args=(r,), daemon=True) for r in range(readers)]
    for t in threads:
        t.start()
    time.sleep(before_s - replica_lag_s)  # load before the kill (the experiment's length)
    lag_t = time.monotonic() - t0
    if replica_lag_s > 0 and replica is not None:
        cluster.kill(replica, signal.SIGSTOP)
        time.sleep(replica_lag_s)  # the replica falls behind (the experiment's length)
    kill_t = time.monotonic() - t0
    cluster.kill(victim)
    if replica_lag_s > 0 and replica is not None:
        cluster.kill(replica, signal.SIGCONT)
    promoted_at = None
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        port = cluster.master_of_slot(victim_slot)
        if port is not None and port != victim:
            promoted_at = time.monotonic() - t0
            break
        time.sleep(0.02)
    time.sleep(after_s)
    stop.set()
    for t in threads:
        t.join(10)
    for c in caches:
        c.close()
    last_failure = max((t for t, o, v in events if o == "write failed" and v and t > kill_t),
                       default=kill_t)  # fmt: skip
    first_write_after = min(
        (t for t, o, v in events if o == "write ok" and v and t > last_failure), default=None
    )
    cluster.wait_ok(timeout_s)
    check = ClusterCache(cluster.startup_nodes, timeout_s=2.0)
    keys = list(acked)
    found: list[bytes | None] = []
    for i in range(0, len(keys), 1000):  # read every acknowledged write back, per slot batch
        found.extend(check.client.mget_nonatomic(keys[i : i + 1000]))
    lost = [(k, acked[k][1]) for k, v in zip(keys, found, strict=True)
            if (v or b"").decode() != acked[k][0]]  # fmt: skip
    check.close()
    reads = Counter(o for _, o, _ in events if not o.startswith("write"))
    writes = Counter(o for _, o, _ in events if o.startswith("write"))
    lost_times = sorted(w for _, w in lost)
    return {
        "victim port": victim,
        "victim slots": victim_ranges,
        "new master port": cluster.master_of_slot(victim_slot),
        "node timeout (ms)": cluster.node_timeout_ms,
        "killed at (s)": round(kill_t, 3),
        "failover (s)": None if promoted_at is None else round(promoted_at - kill_t, 3),
        "client recovered (s)": None
        if first_write_after is None
        else round(first_write_after - kill_t, 3),
        "reads": dict(reads),
        "writes": dict(writes),
        "errors reaching the caller": len(escaped),
        "acknowledged writes": len(acked),
        "acknowledged writes lost": len(lost),
        "lost on the victim": sum(on_victim(k) for k, _ in lost),
        "lost acknowledged within (s) before the kill": None
        if not lost_times
        else round(kill_t - lost_times[0], 4),
        "replica lag (s)": replica_lag_s,
        "acknowledged on the victim while its replica lagged": sum(
            1 for k, (_, w) in acked.items() if lag_t <= w <= kill_t and on_victim(k)
        )
        if replica_lag_s > 0
        else 0,
        "timeline": _timeline(events, bin_s),
    }


def _timeline(events: list[tuple[float, str, bool]], bin_s: float) -> list[dict[str, Any]]:
    """Outcome counts per bin (reads and writes, on the victim's slots and elsewhere)."""
    bins: dict[int, Counter[str]] = {}
    for t, outcome, victim in events:
        bins.setdefault(int(t / bin_s), Counter())[
            f"{outcome} ({'victim' if victim else 'others'})"
        ] += 1
    return [{"t": round(i * bin_s, 3), **bins[i]} for i in sorted(bins)]
