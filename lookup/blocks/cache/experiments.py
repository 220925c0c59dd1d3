"""The seed's cache failure behaviours measured on real servers; rows of figures for the
notebook, the dashboard and the tests.

- :func:`ring_node_loss` — client-side consistent hashing over standalone redis-servers:
  ``kill -9`` one → about 1/N of keys miss, the rest hit; after the ring drops the node
  only its share moves (``hash mod N`` would move almost all);
- :func:`stampede` — ``callers`` simultaneous misses on one key: store loads without
  protection, with in-process single-flight, and with the tier's lease across several
  independent clients;
- :func:`synchronised_expiry` — keys filled together with identical TTLs against
  jittered ones: the store's load per bin of expiry time (the spike);
- :func:`cold_restart` — the store's load after a restart of the cache server: cold,
  warmed from the store's hottest keys, or with traffic staged back in; per round of
  traffic;
- :func:`refresh_vs_aside` — hot keys under cache-aside (a miss per key per TTL) against
  refresh-ahead (none after the first);

The figures are counted on the experiment's own schedule — a load at the expiry it
follows, a round of traffic — never in wall-clock bins a starved reader could not fill:
on a loaded machine the runs take longer, the figures stay the same.
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
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from lookup.blocks.cache.patterns import CacheAside, ReadThrough, RefreshAhead
from lookup.blocks.cache.store import BackingStore
from lookup.blocks.cache.tier import RedisTier, RingCache
from lookup.kit.engines.redisserver import RedisServer

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
        tiers = [
            RedisTier(url, prefix="stampede:", timeout_s=5.0, max_connections=callers)
            for _ in range(n)
        ]
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


def _threads(n: int, target: Callable[[int], None]) -> None:
    """Run ``target(i)`` in ``n`` threads and wait for them; the first error is raised."""
    errors: list[BaseException] = []

    def run(i: int) -> None:
        try:
            target(i)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,), daemon=True) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]


def _sweep(read: Callable[[str], Any], keys: Sequence[str], seed: int, until: float,
           passes: list[float] | None = None) -> None:  # fmt: skip
    """Read every key once per pass, in a shuffled order, until a pass that began at or
    after ``until`` (monotonic) is done: every key is read after ``until``, however slowly
    a loaded machine runs the passes. ``passes`` gets each pass's seconds."""
    rng = random.Random(seed)
    order = list(keys)
    while True:
        began = time.monotonic()
        rng.shuffle(order)
        for k in order:
            read(k)
        if passes is not None:
            passes.append(time.monotonic() - began)
        if began >= until:
            return


class _ScheduledTier(RedisTier):
    """A Redis tier that notes when each copy it stores expires (``monotonic() + TTL``,
    the time taken before the ``SET``: never later than Redis's own deadline), and for every
    miss the deadline of the copy that was missed: the logical time of the store load
    it causes, whenever a reader gets round to it. A miss *before* that deadline (a key
    gone early, a load on a hit) is counted in ``early``."""

    def __init__(self, url: str, **kwargs: Any) -> None:
        super().__init__(url, **kwargs)
        self.deadline: dict[str, float] = {}
        self.due: list[float] = []
        self.early = 0
        self.slowest = 0.0  # seconds between an expiry and its reload, at most
        self._setting = threading.Lock()

    def get(self, key: str) -> str | None:
        deadline = self.deadline.get(key)  # before the GET: a refill in between is a hit
        value = super().get(key)
        if value is None and deadline is not None:
            late = time.monotonic() - deadline
            self.due.append(deadline)
            self.slowest = max(self.slowest, late)
            if late < -0.005:  # 5 ms: the clocks' granularity
                self.early += 1
        return value

    def set(self, key: str, value: str, ttl_ms: int | None = None) -> bool:
        # Noted once stored (a miss cannot see it before the SET), under a lock: two
        # readers refilling one key with different TTLs note them in Redis's order.
        with self._setting:
            now = time.monotonic()
            stored = super().set(key, value, ttl_ms)
            if ttl_ms is not None:
                self.deadline[key] = now + ttl_ms / 1000
        return stored

    def set_many(self, items: Iterable[tuple[str, str, int | None]]) -> None:
        rows, now = list(items), time.monotonic()
        super().set_many(rows)
        for key, _value, ttl in rows:
            if ttl is not None:
                self.deadline[key] = now + ttl / 1000


def synchronised_expiry(url: str, store: BackingStore, *, keys: int = 1_000,
                        ttl_ms: int = 1_500, jitter: float = 0.0, duration_s: float = 4.0,
                        readers: int = 3, bin_s: float = 0.1,
                        seed: int = 3) -> dict[str, Any]:  # fmt: skip
    """Fill ``keys`` at once through cache-aside with TTL ``ttl × U[1 − jitter, 1 + jitter]``
    (refills too), and let ``readers`` clients read every key over and over for
    ``duration_s``: the store's load per bin.

    Each load is binned at the moment the copy it replaces expired — the load that
    traffic faster than the expiries puts on the store (on a busy site every hot key is
    asked for within milliseconds of expiring). A starved reader reaches a key late, but
    its load still lands in the expiry's bin: the spike is the expiry schedule, measured
    on Redis, not the reader's speed. ``slowest reload (s)`` says how late they were."""
    tier = _ScheduledTier(url, prefix=f"expiry{jitter}:", timeout_s=5.0)
    tier.flush()
    names = [f"row:{i}" for i in range(keys)]
    store.put_many([(k, f"value of {k}") for k in names])
    filler = CacheAside(tier, store, ttl_ms, jitter=jitter, seed=seed)  # the jitter's one home
    store.reset_counts()
    start = time.monotonic()
    tier.set_many((k, f"value of {k}", filler.ttl()) for k in names)
    first_expiry = min(tier.deadline.values())
    patterns = [CacheAside(tier, store, ttl_ms, jitter=jitter, seed=seed + 1 + r)
                for r in range(readers)]  # fmt: skip
    _threads(readers, lambda r: _sweep(patterns[r].read, names, seed + r, start + duration_s))
    bins = load_bins(tier.due, start, start + duration_s, bin_s)
    served = list(store.loads)
    tier.flush()
    tier.close()
    return {"jitter": jitter, "ttl (ms)": ttl_ms, "keys": keys,
            "reads": sum(p.hits + p.misses for p in patterns),
            "store loads": sum(b["store loads"] for b in bins),
            "peak loads per bin": max(b["store loads"] for b in bins),
            "loads before the first expiry": sum(t < first_expiry for t in served),
            "loads before their copy expired": tier.early,
            "slowest reload (s)": round(tier.slowest, 3),
            "tier failures": sum(tier.failures.values()),
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
    ``ramp_s``).

    The traffic runs in rounds of ``bin_s``: in each, every client that has joined makes
    its ``rate × bin_s`` reads, and the round ends when all have (a barrier). A bin is a
    round, so its load is what that much traffic brings to the store, however long a
    loaded machine takes to run it; rounds are paced to ``bin_s`` when the machine keeps
    up (``behind schedule (s)`` says by how much it did not)."""
    names = [f"page:{i}" for i in range(keys)]
    weights = zipf(keys)
    store.put_many([(k, f"value of {k}") for k in names])
    per_round = max(1, round(rate * bin_s))
    rounds = max(1, round(duration_s / bin_s))
    rows = []
    for mode in ("cold", "warmed", "staged"):
        server.stop()
        server.start()  # a real restart: the same port, no data
        tier = RedisTier(server.url, prefix="restart:", timeout_s=5.0)
        if mode == "warmed":
            tier.set_many((k, v, None) for k in names[:warm_top]
                          if (v := store.get(k)) is not None)  # fmt: skip
        joins = [0] * readers
        if mode == "staged" and readers > 1:
            joins = [round(r * ramp_s / (readers - 1) / bin_s) for r in range(readers)]
        store.reset_counts()
        patterns = [CacheAside(tier, store, 600_000) for _ in range(readers)]  # one per client
        ends: list[int] = []  # store loads so far, at the end of each round
        start = time.monotonic()

        def close_round(ends: list[int] = ends, start: float = start) -> None:
            ends.append(len(store.loads))
            ahead = start + len(ends) * bin_s - time.monotonic()
            if ahead > 0:
                time.sleep(ahead)  # pacing the traffic, not a synchronisation

        barrier = threading.Barrier(readers, action=close_round)

        def client(r: int, joins: list[int] = joins, patterns: list[CacheAside] = patterns,
                   barrier: threading.Barrier = barrier) -> None:  # fmt: skip
            rng = random.Random(r)
            try:
                for k in range(rounds):
                    if k >= joins[r]:
                        for key in rng.choices(names, weights, k=per_round):
                            patterns[r].read(key)
                    barrier.wait()
            except BaseException:
                barrier.abort()  # the others stop too; the error is raised by _threads
                raise

        _threads(readers, client)
        took = time.monotonic() - start
        counts = [b - a for a, b in zip([0, *ends], ends, strict=False)]
        bins = [{"t": round(k * bin_s, 3), "store loads": c} for k, c in enumerate(counts)]
        hits = sum(p.hits for p in patterns)
        reads = hits + sum(p.misses for p in patterns)
        rows.append({"restart": mode, "reads": reads,
                     "store loads": sum(counts),
                     "peak loads per bin": max(counts),
                     "first-second loads": sum(b["store loads"] for b in bins
                                               if b["t"] < 1.0),
                     "hit ratio": round(hits / reads, 3) if reads else 0.0,
                     "behind schedule (s)": round(max(0.0, took - rounds * bin_s), 2),
                     "bins": bins})  # fmt: skip
        tier.close()
    return rows


def refresh_vs_aside(url: str, store: BackingStore, *, keys: int = 40, ttl_ms: int = 800,
                     duration_s: float = 3.0,
                     refresh_at: float = 0.75) -> list[dict[str, Any]]:  # fmt: skip
    """Hot keys read steadily — every key once per pass, pass after pass — for
    ``duration_s``: misses under cache-aside and under refresh-ahead (a hit in the last
    ``1 − refresh_at`` of the TTL reloads in the background).

    "Steadily" is the claim's premise: a key must be read within its refresh window. So
    the row says how long the slowest pass took (``longest pass (ms)``) against that
    window (``refresh window (ms)``); on a loaded machine choose a window several passes
    long."""
    names = [f"hot:{i}" for i in range(keys)]
    store.put_many([(k, f"value of {k}") for k in names])
    rows = []
    for pattern_name in (CacheAside.name, RefreshAhead.name):
        tier = RedisTier(url, prefix=f"{pattern_name}:", timeout_s=5.0)
        tier.flush()
        pattern: CacheAside | RefreshAhead
        if pattern_name == RefreshAhead.name:
            pattern = RefreshAhead(tier, store, ttl_ms, refresh_at=refresh_at)
        else:
            pattern = CacheAside(tier, store, ttl_ms)
        passes: list[float] = []
        _sweep(pattern.read, names, 5, time.monotonic() + duration_s, passes)
        reads = pattern.hits + pattern.misses
        rows.append({"pattern": pattern_name, "reads": reads, "misses": pattern.misses,
                     "misses after the first fill": max(0, pattern.misses - keys),
                     "background refreshes": getattr(pattern, "refreshes", 0),
                     "ttl (ms)": ttl_ms,
                     "refresh window (ms)": round((1 - refresh_at) * ttl_ms),
                     "longest pass (ms)": round(1000 * max(passes)),
                     "tier failures": sum(tier.failures.values())})  # fmt: skip
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
        rows.append(
            {
                "pattern": mode,
                "acknowledged": len(acked),
                "in the store": len(stored),
                "acknowledged but lost": len(lost),
                "still in the cache": in_tier,
                "flush interval (s)": flush_interval_s if mode == "write-behind" else 0,
            }
        )
    return rows
