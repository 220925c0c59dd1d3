"""The seed's cache failure behaviours measured on real servers; rows of figures for the
notebook, the dashboard and the tests.

- :func:`ring_node_loss` — client-side consistent hashing over standalone redis-servers:
  ``kill -9`` one → about 1/N of keys miss, the rest hit; after the ring drops the node
  only its share moves (``hash mod N`` would move almost all);
- :func:`stampede` — ``callers`` simultaneous misses on one key: store loads without
  protection, with in-process single-flight, and with the tier's lease across several
  independent clients;
- :func:`synchronised_expiry` — keys filled together with identical TTLs against
  jittered ones: the store's load per bin (the spike);
- :func:`cold_restart` — the store's load after a restart of the cache server: cold,
  warmed from the store's hottest keys, or with traffic staged back in;
- :func:`refresh_vs_aside` — hot keys under cache-aside (a miss per key per TTL) against
  refresh-ahead (none after the first);
- :func:`write_behind_crash` — a writer *process* killed with ``SIGKILL``: acknowledged
  writes that never reached the store, write-behind against write-through.
"""

from __future__ import annotations

import hashlib
import random
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from lookup.blocks.cache.patterns import CacheAside, ReadThrough, RefreshAhead
from lookup.blocks.cache.store import BackingStore
from lookup.blocks.cache.tier import RedisTier, RingCache
from lookup.kit.redisserver import RedisServer

__all__ = [
    "at_once",
    "cold_restart",
    "load_bins",
    "mod_n_moved",
    "refresh_vs_aside",
    "ring_node_loss",
    "stampede",
    "synchronised_expiry",
    "write_behind_crash",
]


def load_bins(loads: Sequence[float], start: float, end: float,
              bin_s: float) -> list[dict[str, float]]:  # fmt: skip
    """Store loads per ``bin_s`` between ``start`` and ``end`` (monotonic times)."""
    n = max(1, int((end - start) / bin_s + 0.999))
    counts = [0] * n
    for t in loads:
        if start <= t < end:
            counts[min(n - 1, int((t - start) / bin_s))] += 1
    return [{"t": round(i * bin_s, 3), "store loads": c} for i, c in enumerate(counts)]


def mod_n_moved(keys: Sequence[str], before: int, after: int) -> float:
    """The share of ``keys`` whose server changes under ``md5(key) mod N`` from N to N'."""
    moved = 0
    for k in keys:
        h = int.from_bytes(hashlib.md5(k.encode(), usedforsecurity=False).digest()[:8], "big")
        moved += (h % before) != (h % after)
    return moved / len(keys) if keys else 0.0


def ring_node_loss(servers: Sequence[RedisServer], keys: int = 6_000,
                   victim: int = 0) -> dict[str, Any]:  # fmt: skip
    """Fill ``keys`` through a ring over ``servers``, kill -9 one, read everything back."""
    names = {f"redis-{i}": s.url for i, s in enumerate(servers)}
    cache = RingCache(names)
    try:
        for tier in cache.tiers.values():
            tier.flush()
        all_keys = [f"item:{i}" for i in range(keys)]
        for k in all_keys:
            cache.set(k, k.upper())
        owner = {k: cache.node_for(k) for k in all_keys}
        share = {n: sum(1 for k in all_keys if owner[k] == n) for n in names}
        dead = f"redis-{victim}"
        proc = servers[victim].proc
        if proc is None:
            raise ValueError(f"server {victim} is not running")
        proc.kill()  # SIGKILL: no goodbye to anyone
        proc.wait()
        servers[victim].proc = None
        got = [(k, cache.get(k)) for k in all_keys]
        down_hits = sum(v is not None for _, v in got)
        failed = cache.failures()[dead]
        cache.remove(dead)  # the failure detector takes it off the ring
        moved = [k for k in all_keys if owner[k] == dead]
        after = [(k, cache.get(k)) for k in all_keys]
        removed_hits = sum(v is not None for _, v in after)
        stayed = sum(1 for k in all_keys if owner[k] != dead and cache.node_for(k) == owner[k])
        return {
            "nodes": len(servers), "keys": keys, "killed": dead,
            "keys per node": share,
            "dead node's share": round(share[dead] / keys, 4),
            "hits with the node dead": down_hits,
            "misses with the node dead": keys - down_hits,
            "of which failed calls": failed,
            "miss share with the node dead": round(1 - down_hits / keys, 4),
            "hits after the ring dropped it": removed_hits,
            "keys remapped": len(moved),
            "other keys that stayed put": stayed,
            "share moved by the ring": round(len(moved) / keys, 4),
            "share hash mod N would move": round(mod_n_moved(all_keys, len(servers),
                                                             len(servers) - 1), 4),
        }  # fmt: skip
    finally:
        cache.close()


def at_once(callers: int, fn: Callable[[int], Any]) -> float:
    """Run ``fn(i)`` in ``callers`` threads released together by a barrier; seconds taken."""
    barrier = threading.Barrier(callers + 1)
    errors: list[BaseException] = []

    def run(i: int) -> None:
        barrier.wait()
        try:
            fn(i)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,), daemon=True) for i in range(callers)]
    for t in threads:
        t.start()
    barrier.wait()
    start = time.monotonic()
    for t in threads:
        t.join(60)
    if errors:
        raise errors[0]
    return time.monotonic() - start


def stampede(url: str, store: BackingStore, *, callers: int = 500,
             clients: int = 4) -> list[dict[str, Any]]:  # fmt: skip
    """``callers`` concurrent reads of one key that is not cached, three ways.

    "lease" splits the callers over ``clients`` independent read-through caches — each
    with its own single-flight and its own Redis connections, as separate processes would
    have — that agree through the tier's ``SET NX PX`` lease alone.
    """
    store.put("hot", "the viral value")
    rows = []
    for mode in ("unprotected", "single-flight", "lease"):
        n = clients if mode == "lease" else 1
        tiers = [RedisTier(url, prefix="stampede:", timeout_s=5.0, max_connections=callers)
                 for _ in range(n)]
        tiers[0].flush()
        caches = [ReadThrough(t, store.get, 60_000, protect=mode != "unprotected")
                  for t in tiers]  # fmt: skip
        store.reset_counts()
        answers: list[str | None] = [None] * callers
        def call(i: int, answers: list[str | None] = answers,
                 caches: list[ReadThrough] = caches, n: int = n) -> None:  # fmt: skip
            answers[i] = caches[i % n].read("hot")

        took = at_once(callers, call)
        rows.append({"protection": mode, "callers": callers, "clients": n,
                     "store loads": len(store.loads),
                     "answered": sum(a == "the viral value" for a in answers),
                     "tier failures": sum(sum(t.failures.values()) for t in tiers),
                     "seconds": round(took, 3)})  # fmt: skip
        for t in tiers:
            t.flush()
            t.close()
    return rows


def _reader_loop(read: Callable[[str], Any], keys: Sequence[str], stop: threading.Event,
                 seed: int, weights: Sequence[float] | None = None,
                 rate: float | None = None) -> None:  # fmt: skip
    """Read random ``keys`` (by ``weights``) until ``stop``; at most ``rate`` reads/s."""
    rng = random.Random(seed)
    start, done = time.monotonic(), 0
    while not stop.is_set():
        batch = rng.choices(keys, weights, k=32) if weights else [rng.choice(keys)
                                                                 for _ in range(32)]
        for k in batch:
            read(k)
        done += len(batch)
        if rate:
            ahead = start + done / rate - time.monotonic()
            if ahead > 0:
                stop.wait(ahead)  # pacing the client, not a synchronisation


def synchronised_expiry(url: str, store: BackingStore, *, keys: int = 1_000,
                        ttl_ms: int = 1_500, jitter: float = 0.0, duration_s: float = 4.0,
                        readers: int = 3, bin_s: float = 0.1,
                        seed: int = 3) -> dict[str, Any]:  # fmt: skip
    """Fill ``keys`` at once with TTL ``ttl × U[1 − jitter, 1 + jitter]`` (and refill them
    so), read them at random for ``duration_s``; the store's load per bin."""
    tier = RedisTier(url, prefix=f"expiry{jitter}:")
    tier.flush()
    names = [f"row:{i}" for i in range(keys)]
    store.put_many([(k, f"value of {k}") for k in names])
    rng = random.Random(seed)
    tier.set_many((k, f"value of {k}", int(ttl_ms * rng.uniform(1 - jitter, 1 + jitter)))
                  for k in names)  # fmt: skip
    store.reset_counts()
    pattern = CacheAside(tier, store, ttl_ms, jitter=jitter)
    stop = threading.Event()
    start = time.monotonic()
    threads = [threading.Thread(target=_reader_loop, args=(pattern.read, names, stop, seed + r),
                                daemon=True) for r in range(readers)]  # fmt: skip
    for t in threads:
        t.start()
    time.sleep(duration_s)  # the experiment's length, not a synchronisation
    stop.set()
    for t in threads:
        t.join(10)
    bins = load_bins(store.loads, start, start + duration_s, bin_s)
    tier.flush()
    tier.close()
    peak = max(b["store loads"] for b in bins)
    return {"jitter": jitter, "ttl (ms)": ttl_ms, "keys": keys, "reads": pattern.hits +
            pattern.misses, "store loads": len(store.loads), "peak loads per bin": peak,
            "bin (s)": bin_s, "bins": bins}  # fmt: skip


def zipf(n: int, s: float = 1.0) -> list[float]:
    """Zipf weights of ranks 1..n."""
    return [1.0 / (r**s) for r in range(1, n + 1)]


def cold_restart(server: RedisServer, store: BackingStore, *, keys: int = 5_000,
                 readers: int = 4, rate: float = 1_500.0, duration_s: float = 3.0,
                 warm_top: int = 2_500, ramp_s: float = 2.0,
                 bin_s: float = 0.1) -> list[dict[str, Any]]:  # fmt: skip
    """Restart the cache server (empty: no persistence) and measure the store's load under
    Zipf traffic of ``readers`` clients at ``rate`` reads/s each: cold, warmed with the
    ``warm_top`` hottest keys first, and staged (clients joining one by one over
    ``ramp_s``)."""
    names = [f"page:{i}" for i in range(keys)]
    weights = zipf(keys)
    store.put_many([(k, f"value of {k}") for k in names])
    rows = []
    for mode in ("cold", "warmed", "staged"):
        server.stop()
        server.start()  # a real restart: the same port, no data
        tier = RedisTier(server.url, prefix="restart:")
        if mode == "warmed":
            tier.set_many((k, v, None) for k in names[:warm_top]
                          if (v := store.get(k)) is not None)  # fmt: skip
        store.reset_counts()
        pattern = CacheAside(tier, store, 600_000)
        stop = threading.Event()
        start = time.monotonic()
        threads = []
        for r in range(readers):
            t = threading.Thread(target=_reader_loop, daemon=True,
                                 args=(pattern.read, names, stop, r, weights, rate))
            t.start()
            threads.append(t)
            if mode == "staged" and r < readers - 1:
                time.sleep(ramp_s / (readers - 1))  # the ramp itself
        time.sleep(max(0.0, start + duration_s - time.monotonic()))
        stop.set()
        for t in threads:
            t.join(10)
        bins = load_bins(store.loads, start, start + duration_s, bin_s)
        reads = pattern.hits + pattern.misses
        rows.append({"restart": mode, "reads": reads,
                     "store loads": sum(b["store loads"] for b in bins),
                     "peak loads per bin": max(b["store loads"] for b in bins),
                     "first-second loads": sum(b["store loads"] for b in bins
                                               if b["t"] < 1.0),
                     "hit ratio": round(pattern.hits / reads, 3) if reads else 0.0,
                     "bins": bins})  # fmt: skip
        tier.close()
    return rows


def refresh_vs_aside(url: str, store: BackingStore, *, keys: int = 40, ttl_ms: int = 800,
                     duration_s: float = 3.0) -> list[dict[str, Any]]:  # fmt: skip
    """Hot keys read steadily: misses under cache-aside and under refresh-ahead."""
    names = [f"hot:{i}" for i in range(keys)]
    store.put_many([(k, f"value of {k}") for k in names])
    rows = []
    for make in (CacheAside, RefreshAhead):
        tier = RedisTier(url, prefix=f"{make.name}:")
        tier.flush()
        pattern = make(tier, store, ttl_ms)
        stop = threading.Event()
        t = threading.Thread(target=_reader_loop, args=(pattern.read, names, stop, 5),
                             daemon=True)  # fmt: skip
        t.start()
        time.sleep(duration_s)  # the experiment's length
        stop.set()
        t.join(10)
        reads = pattern.hits + pattern.misses
        rows.append({"pattern": make.name, "reads": reads, "misses": pattern.misses,
                     "misses after the first fill": max(0, pattern.misses - keys),
                     "background refreshes": getattr(pattern, "refreshes", 0),
                     "ttl (ms)": ttl_ms})  # fmt: skip
        tier.flush()
        tier.close()
    return rows


def write_behind_crash(url: str, directory: str | Path, *, acks: int = 3_000,
                       flush_interval_s: float = 0.5,
                       timeout_s: float = 60.0) -> list[dict[str, Any]]:  # fmt: skip
    """A writer process acknowledges ``acks`` writes, then is killed with SIGKILL; how many
    acknowledged writes the store lacks, for write-behind and write-through."""
    rows = []
    for mode in ("write-behind", "write-through"):
        path = Path(directory) / f"{mode}.sqlite"
        path.unlink(missing_ok=True)
        BackingStore(path).close()  # the table exists before the writer starts
        proc = subprocess.Popen(
            [sys.executable, "-m", "lookup.blocks.cache.writer", "--redis", url,
             "--store", str(path), "--mode", mode, "--flush-interval", str(flush_interval_s)],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        )  # fmt: skip
        acked: list[str] = []
        deadline = time.monotonic() + timeout_s
        while proc.stdout is not None and len(acked) < acks and time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            if line.startswith("ack "):
                acked.append(line.split()[1])
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        store = BackingStore(path)
        stored = store.keys()
        store.close()
        tier = RedisTier(url, prefix=f"{mode}:")
        in_tier = sum(tier.get(k) is not None for k in acked)
        tier.flush()
        tier.close()
        lost = [k for k in acked if k not in stored]
        rows.append({"pattern": mode, "acknowledged": len(acked), "in the store": len(stored),
                     "acknowledged but lost": len(lost), "still in the cache": in_tier,
                     "flush interval (s)": flush_interval_s if mode == "write-behind" else 0})
    return rows
