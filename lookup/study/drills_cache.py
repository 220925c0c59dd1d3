"""Cache drills: the shortener's shared tier dying under redirect load, a hot key expiring
under many callers, a node of a client-side ring killed, a write-behind writer killed.

Each triggers the failure on the real code — the shortener's :class:`Resolver` over a
SQLite link store, the blocks' read-through cache over a SQLite store that counts its
loads, standalone ``redis-server`` processes killed with ``SIGKILL``, the write-behind
writer process of :mod:`lookup.blocks.cache.writer` — and decides the outcome from what
was counted.
"""

from __future__ import annotations

import contextlib
import logging
import random
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

from lookup.blocks.cache.experiments import at_once, ring_node_loss
from lookup.blocks.cache.patterns import ReadThrough
from lookup.blocks.cache.store import BackingStore
from lookup.blocks.cache.tier import MemoryTier, RedisTier
from lookup.blocks.kv.experiments import mod_node
from lookup.kit.sharedcache.memory import MemorySharedCache
from lookup.shortener.links.sqlite import SqliteLinkStore
from lookup.shortener.model import Link
from lookup.shortener.resolver import Resolver
from lookup.study.drills_common import need, outcome, path_in, scratch_dir
from lookup.study.measure import Drill, DrillOutcome

__all__ = ["CACHE_DRILLS"]


# ------------------------------------------------------------ the redirect cache tier dies

REDIRECT_CHOICES = {
    "errors": "Redirects start failing: people get errors until the cache tier is back",
    "store": "Redirects keep answering, but the reads the tier used to absorb now land on "
    "the link store, many times more of them",
    "absorbed": "Nothing much changes: the in-process caches already answer what is being "
    "clicked, so the link store sees about the same load",
}


class _SwitchableTier:
    """The embedded shared tier (one :class:`MemorySharedCache` for every resolver) that
    can be killed: from then on every call fails as a client of a dead server does."""

    name = "memory"

    def __init__(self) -> None:
        self.inner = MemorySharedCache()
        self.dead = False

    def _alive(self) -> None:
        if self.dead:
            raise ConnectionError("the shared cache tier is down")

    def get(self, key: str) -> bytes | None:
        self._alive()
        return self.inner.get(key)

    def set(self, key: str, value: bytes, ttl: float) -> None:
        self._alive()
        self.inner.set(key, value, ttl)

    def delete(self, key: str) -> None:
        self._alive()
        self.inner.delete(key)

    def kill(self) -> None:
        self.dead = True

    def close(self) -> None:
        self.dead = True


class _Clicks:
    """Reader threads, one per resolver (one per redirect process), clicking Zipf-chosen
    keys until stopped; errors and wrong answers counted."""

    def __init__(self, resolvers: list[Resolver], keys: list[str], skew: float,
                 seed: int) -> None:  # fmt: skip
        self.resolvers, self.keys = resolvers, keys
        weights = [1.0 / (r**skew) for r in range(1, len(keys) + 1)]
        total, acc = sum(weights), 0.0
        self.cum = []
        for w in weights:
            acc += w / total
            self.cum.append(acc)
        self.seed = seed
        self.stop = threading.Event()
        self.errors = [0] * len(resolvers)
        self.threads = [threading.Thread(target=self._run, args=(i,), daemon=True)
                        for i in range(len(resolvers))]  # fmt: skip

    def _run(self, index: int) -> None:
        rng = random.Random(self.seed + index)
        resolver = self.resolvers[index]
        while not self.stop.is_set():
            for key in rng.choices(self.keys, cum_weights=self.cum, k=64):
                try:
                    link = resolver.resolve(key)
                    ok = link is not None and link.long_url.endswith("/" + key)
                except Exception:  # noqa: BLE001 - a failed redirect is what is counted
                    ok = False
                if not ok:
                    self.errors[index] += 1

    def counts(self) -> tuple[int, int, int]:
        """(requests, store reads, errors) so far, over every resolver."""
        return (sum(r.requests for r in self.resolvers),
                sum(r.store_reads for r in self.resolvers), sum(self.errors))  # fmt: skip

    def __enter__(self) -> _Clicks:
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        for t in self.threads:
            t.join(30)


@contextlib.contextmanager
def _quiet(name: str) -> Iterator[None]:
    """Silence logger ``name`` for the drill: every failed tier call would log a traceback."""
    logger = logging.getLogger(name)
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        logger.setLevel(level)


def _make_links(store: SqliteLinkStore, count: int) -> list[str]:
    now = time.time()
    keys = [f"d{i:06d}" for i in range(count)]
    for key in keys:
        store.create(Link(key=key, long_url=f"https://example.test/page/{key}", owner=None,
                          created_at=now, updated_at=now), render=lambda link: {})  # fmt: skip
    return keys


def _redirect_drill(tier: str, *, links: int, processes: int, l1_size: int, skew: float,
                    phase_s: float, seed: int) -> DrillOutcome:  # fmt: skip
    """The drill behind both redirect variants (``tier`` is ``memory`` or ``redis``)."""
    if links < 10 or processes < 1 or l1_size < 1 or phase_s <= 0:
        raise ValueError("need links >= 10, processes >= 1, l1_size >= 1 and phase_s > 0")
    server: Any = None
    tiers: list[Any] = []
    with scratch_dir("redirect") as tmp, _quiet("lookup.shortener.resolver"):
        store = SqliteLinkStore(path_in(tmp, "links.db"), synchronous="OFF")
        try:
            keys = _make_links(store, links)
            if tier == "redis":
                from lookup.kit.engines.redisserver import RedisServer
                from lookup.kit.sharedcache.redis import RedisSharedCache

                server = RedisServer().start()
                tiers = [RedisSharedCache(server.url, prefix="drill:") for _ in range(processes)]
            else:
                tiers = [_SwitchableTier()]
            resolvers = [Resolver(store, cache_size=l1_size, cache_ttl_s=600.0,
                                  shared=tiers[i % len(tiers)])
                         for i in range(processes)]  # fmt: skip
            for t in tiers:  # a Redis tier's subscriber starts when its resolver watches it
                getattr(t, "wait_subscribed", lambda: True)()
            for resolver in resolvers:  # warm: every link once through every process (the
                # first fills the shared tier from the store, the others read it from there)
                for key in keys:
                    resolver.resolve(key)
            with _Clicks(resolvers, keys, skew, seed) as clicks:
                start = clicks.counts()
                time.sleep(phase_s)  # redirect load on a healthy tier (the drill's length)
                mid = clicks.counts()
                mid_t = time.monotonic()
                if server is not None:
                    assert server.proc is not None
                    server.proc.send_signal(signal.SIGKILL)  # no goodbye to its clients
                    server.proc.wait(10)
                    server.proc = None
                else:
                    tiers[0].kill()
                killed_t = time.monotonic()
                time.sleep(phase_s)  # the same load with the tier dead
                end = clicks.counts()
                end_t = time.monotonic()
            tier_errors = sum(r.shared_errors for r in resolvers) + sum(
                int(getattr(t, "errors", 0)) for t in tiers
            )
        finally:
            for t in tiers:
                t.close()
            store.close()
            if server is not None:
                server.close()
    before_req, before_reads = mid[0] - start[0], mid[1] - start[1]
    after_req, after_reads = end[0] - mid[0], end[1] - mid[1]
    errors = end[2] - start[2]
    share_before = before_reads / before_req if before_req else 0.0
    share_after = after_reads / after_req if after_req else 0.0
    rate_before, rate_after = before_reads / phase_s, after_reads / (end_t - killed_t)
    if errors > 0:
        choice = "errors"
    elif share_after >= 2 * share_before and share_after - share_before >= 0.05:
        choice = "store"
    else:
        choice = "absorbed"
    what = "kill -9 of redis-server" if tier == "redis" else "the in-process tier made to fail"
    figures = {
        "links": links, "redirect processes": processes, "l1 size per process": l1_size,
        "redirects before": before_req, "redirects after": after_req,
        "store reads before": before_reads, "store reads after": after_reads,
        "store reads per s before": round(rate_before, 1),
        "store reads per s after": round(rate_after, 1),
        "share reaching the store before": round(share_before, 4),
        "share reaching the store after": round(share_after, 4),
        "failed redirects": errors, "tier errors (answered as misses)": tier_errors,
        "seconds after the kill": round(end_t - mid_t, 2),
    }  # fmt: skip
    summary = (
        f"With the tier up, {share_before:.1%} of redirects reached the link store "
        f"({rate_before:,.0f} reads/s); after {what}, {share_after:.1%} did "
        f"({rate_after:,.0f} reads/s), with {errors} failed redirects."
    )
    chain = (
        f"{links:,} links in a SQLite link store; {processes} resolvers (one per redirect "
        f"process) with an in-process LRU of {l1_size:,} links each, sharing one tier ({tier})",
        f"clicks: Zipf (s = {skew:g}) over the links, {phase_s:g} s with the tier up",
        f"{what}, then {phase_s:g} s more of the same clicks",
        f"store reads / redirects: {before_reads:,}/{before_req:,} before, "
        f"{after_reads:,}/{after_req:,} after; {tier_errors:,} tier calls failed and were "
        "answered as misses",
        "choice: any failed redirect → errors; the store's share at least doubled and up by "
        "5 points → store; otherwise → absorbed",
    )
    return outcome(REDIRECT_CHOICES, choice, figures, summary, chain)


def redirect_cache_dies(links: int = 600, processes: int = 2, l1_size: int = 100,
                        skew: float = 1.0, phase_s: float = 1.5,
                        seed: int = 7) -> DrillOutcome:  # fmt: skip
    """Embedded: the shortener's shared tier (in-process) fails under redirect load."""
    return _redirect_drill("memory", links=int(links), processes=int(processes),
                           l1_size=int(l1_size), skew=float(skew), phase_s=float(phase_s),
                           seed=int(seed))  # fmt: skip


def redirect_cache_dies_redis(links: int = 600, processes: int = 2, l1_size: int = 100,
                              skew: float = 1.0, phase_s: float = 1.5,
                              seed: int = 7) -> DrillOutcome:  # fmt: skip
    """The shortener's Redis tier is killed with ``SIGKILL`` under redirect load."""
    need("redis", drill="redirect_cache_dies_redis")
    return _redirect_drill("redis", links=int(links), processes=int(processes),
                           l1_size=int(l1_size), skew=float(skew), phase_s=float(phase_s),
                           seed=int(seed))  # fmt: skip


# ------------------------------------------------------------ a hot key expires under load

STAMPEDE_CHOICES = {
    "one": "One caller reads the database; every other caller waits for its answer",
    "few": "A handful of callers read the database, the rest are served from the cache",
    "all": "Nearly every caller misses at once and reads the database itself",
    "errors": "Many callers get no answer at all",
}


def hot_key_stampede(callers: int = 200, single_flight: bool = True, load_ms: float = 100.0,
                     ) -> DrillOutcome:  # fmt: skip
    """``callers`` read one hot key the moment it expired: store loads counted."""
    callers = int(callers)
    if callers < 2 or load_ms < 0:
        raise ValueError("need callers >= 2 and load_ms >= 0")
    protect = bool(single_flight)
    with scratch_dir("stampede") as tmp:
        store = BackingStore(path_in(tmp, "store.sqlite"), read_latency_s=load_ms / 1000)
        try:
            store.put("viral", "the viral value")
            tier = MemoryTier()
            cache = ReadThrough(tier, store.get, 60_000, protect=protect)
            cache.read("viral")
            tier.delete("viral")  # its TTL ran out: the next readers all miss
            store.reset_counts()
            answers: list[str | None] = [None] * callers

            def call(i: int) -> None:
                answers[i] = cache.read("viral")

            started = time.monotonic()
            at_once(callers, call)
            took = time.monotonic() - started
            loads = len(store.loads)
        finally:
            store.close()
    answered = sum(a == "the viral value" for a in answers)
    if answered < 0.9 * callers:
        choice = "errors"
    elif loads <= max(2, callers // 50):
        choice = "one"
    elif loads >= callers / 2:
        choice = "all"
    else:
        choice = "few"
    mode = "single-flight and a lease" if protect else "no protection"
    figures = {"callers": callers, "database loads": loads, "answered": answered,
               "misses": cache.misses, "waited on another's load": cache.waited,
               "load time (ms)": load_ms, "seconds": round(took, 3)}  # fmt: skip
    summary = (
        f"{callers} callers missed the expired key together; with {mode} the database "
        f"was read {loads} time{'s' if loads != 1 else ''} and {answered} got the value."
    )
    chain = (
        f"one key in a SQLite store whose read takes {load_ms:g} ms; a read-through cache on "
        f"an in-process tier with {mode}",
        f"the key expires; {callers} threads released together by a barrier read it",
        f"loads counted by the store: {loads}; answered: {answered}/{callers}",
        "choice: under 90% answered → errors; loads <= max(2, callers/50) → one; at least "
        "half the callers → all; otherwise → few",
    )
    return outcome(STAMPEDE_CHOICES, choice, figures, summary, chain)


# ------------------------------------------------------------ a ring node is killed

RING_CHOICES = {
    "share": "About that node's share of the keys miss; every other key still hits, before "
    "and after the clients drop the node",
    "most": "Once the clients drop the dead node, most keys map to a different node and miss",
    "none": "Nothing misses: another node holds a copy of every key",
    "all": "Every read fails until the node is back",
}


def _mod_node_loss(servers: list[Any], keys: int, victim: int) -> dict[str, Any]:
    """The ring drill with ``md5(key) mod N`` placement: fill, kill -9, drop, read back."""
    names = [f"redis-{i}" for i in range(len(servers))]
    tiers = {name: RedisTier(s.url) for name, s in zip(names, servers, strict=True)}
    try:
        for t in tiers.values():
            t.flush()
        all_keys = [f"item:{i}" for i in range(keys)]
        owner = {k: mod_node(k, names) for k in all_keys}
        for k in all_keys:
            tiers[owner[k]].set(k, k.upper())
        dead = names[victim]
        proc = servers[victim].proc
        proc.kill()  # SIGKILL
        proc.wait()
        servers[victim].proc = None
        down_hits = sum(tiers[owner[k]].get(k) is not None for k in all_keys)
        alive = [n for n in names if n != dead]
        after_hits = sum(tiers[mod_node(k, alive)].get(k) is not None for k in all_keys)
        share = sum(1 for k in all_keys if owner[k] == dead) / keys
        return {"dead node's share": share, "miss share with the node dead": 1 - down_hits / keys,
                "hits after the ring dropped it": after_hits}  # fmt: skip
    finally:
        for t in tiers.values():
            t.close()


def ring_node_killed(nodes: int = 4, keys: int = 2000, placement: str = "ring") -> DrillOutcome:
    """``nodes`` redis-servers behind client-side hashing; one is killed with SIGKILL, then
    the clients drop it; the share of reads that miss, measured both times."""
    need("redis", drill="ring_node_killed")
    from lookup.kit.engines.redisserver import RedisServer

    nodes, keys = int(nodes), int(keys)
    if nodes < 2 or keys < 100 or placement not in ("ring", "mod"):
        raise ValueError("need nodes >= 2, keys >= 100 and placement 'ring' or 'mod'")
    servers: list[RedisServer] = []
    try:
        for _ in range(nodes):
            servers.append(RedisServer().start())
        if placement == "ring":
            got = ring_node_loss(servers, keys=keys)
        else:
            got = _mod_node_loss(servers, keys, 0)
    finally:
        for s in servers:
            s.close()
    dead_share = float(got["dead node's share"])
    miss_down = float(got["miss share with the node dead"])
    miss_after = 1 - int(got["hits after the ring dropped it"]) / keys
    if miss_down >= 0.9:
        choice = "all"
    elif miss_down <= 0.02 and miss_after <= 0.02:
        choice = "none"
    elif miss_after > max(1.5 * dead_share, dead_share + 0.1):
        choice = "most"
    else:
        choice = "share"
    how = "a consistent-hash ring (160 vnodes)" if placement == "ring" else "md5(key) mod N"
    figures = {"nodes": nodes, "keys": keys, "dead node's share": round(dead_share, 4),
               "miss share with the node dead": round(miss_down, 4),
               "miss share after it was dropped": round(miss_after, 4)}  # fmt: skip
    summary = (
        f"With {how}, the killed node held {dead_share:.1%} of the keys; {miss_down:.1%} "
        f"of reads missed while it was dead and {miss_after:.1%} after the clients "
        "dropped it."
    )
    chain = (
        f"{nodes} standalone redis-servers; the client places {keys:,} keys by {how}",
        "kill -9 of one server; every key read back (a failed call is a miss)",
        f"the clients drop the dead node ({'ring.remove' if placement == 'ring' else 'N → N-1'})"
        " and read every key again",
        "choice: ≥ 90% missing with the node dead → all; ≤ 2% both times → none; after the "
        "drop more than 1.5 × its share (and 10 points) → most; otherwise → share",
    )
    return outcome(RING_CHOICES, choice, figures, summary, chain)


# ------------------------------------------------------------ a write-behind writer is killed

WRITE_BEHIND_CHOICES = {
    "none": "Nothing is lost: a write is only acknowledged once it is safe",
    "recent": "The writes acknowledged since the last flush to the database are lost",
    "all": "Everything it ever wrote is lost, flushed or not",
}


def write_behind_crash(mode: str = "write-behind", run_s: float = 1.5,
                       flush_interval_s: float = 0.5) -> DrillOutcome:  # fmt: skip
    """A writer process acknowledges writes for ``run_s``, then is killed with SIGKILL;
    the acknowledged writes missing from the database are counted."""
    need("redis", drill="write_behind_crash")
    from lookup.kit.engines.redisserver import RedisServer

    if mode not in ("write-behind", "write-through") or run_s <= 0 or flush_interval_s <= 0:
        raise ValueError("mode is write-behind or write-through; run_s and the interval > 0")
    acked: list[str] = []
    with scratch_dir("write-behind") as tmp, RedisServer() as server:
        path = path_in(tmp, "store.sqlite")
        BackingStore(path).close()  # the table exists before the writer starts
        proc = subprocess.Popen(
            [sys.executable, "-m", "lookup.blocks.cache.writer", "--redis", server.url,
             "--store", str(path), "--mode", mode, "--flush-interval", str(flush_interval_s)],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL,
            text=True,
        )  # fmt: skip
        try:
            assert proc.stdout is not None
            first = proc.stdout.readline()  # the writer is up once it acknowledges one
            if first.startswith("ack "):
                acked.append(first.split()[1])
            deadline = time.monotonic() + run_s
            while time.monotonic() < deadline:
                line = proc.stdout.readline()
                if not line:
                    break
                if line.startswith("ack "):
                    acked.append(line.split()[1])
            proc.send_signal(signal.SIGKILL)
            proc.wait(10)
            for line in proc.stdout.read().splitlines():  # acknowledged before it died
                if line.startswith("ack ") and len(line.split()) == 2:
                    acked.append(line.split()[1])
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)
            if proc.stdout is not None:
                proc.stdout.close()
        store = BackingStore(path)
        stored = store.keys()
        store.close()
    lost = [k for k in acked if k not in stored]
    if not acked:
        raise RuntimeError("the writer acknowledged nothing before it was killed")
    if not lost:
        choice = "none"
    elif len(lost) >= 0.9 * len(acked) and not stored:
        choice = "all"
    else:
        choice = "recent"
    figures = {"acknowledged": len(acked), "in the database": len(stored),
               "acknowledged but lost": len(lost), "lost share": round(len(lost) / len(acked), 4),
               "flush interval (s)": flush_interval_s if mode == "write-behind" else 0.0,
               "ran for (s)": run_s}  # fmt: skip
    summary = (
        f"The {mode} writer acknowledged {len(acked):,} writes before kill -9; "
        f"{len(lost):,} of them are not in the database."
    )
    chain = (
        f"a writer process ({mode}; flush every {flush_interval_s:g} s for write-behind) "
        f"writes through a real Redis tier to SQLite, printing an ack after each write",
        f"after {run_s:g} s: SIGKILL; every ack it printed is read, the database is read back",
        f"acknowledged {len(acked):,}, stored {len(stored):,}, acknowledged but lost {len(lost):,}",
        "choice: nothing lost → none; every ack lost and nothing stored → all; otherwise → recent",
    )
    return outcome(WRITE_BEHIND_CHOICES, choice, figures, summary, chain)


CACHE_DRILLS: dict[str, Drill] = {
    "redirect_cache_dies": Drill(
        "redirect_cache_dies",
        "The shortener's cache tier dies under redirect load",
        REDIRECT_CHOICES,
        redirect_cache_dies,
        {"links": 600, "processes": 2, "l1_size": 100, "skew": 1.0, "phase_s": 1.5, "seed": 7},
    ),
    "redirect_cache_dies_redis": Drill(
        "redirect_cache_dies_redis",
        "The shortener's Redis is killed under redirect load",
        REDIRECT_CHOICES,
        redirect_cache_dies_redis,
        {"links": 600, "processes": 2, "l1_size": 100, "skew": 1.0, "phase_s": 1.5, "seed": 7},
        requires=("redis",),
    ),
    "hot_key_stampede": Drill(
        "hot_key_stampede",
        "A hot key expires under load",
        STAMPEDE_CHOICES,
        hot_key_stampede,
        {"callers": 200, "single_flight": True, "load_ms": 100.0},
    ),
    "ring_node_killed": Drill(
        "ring_node_killed",
        "A node of a client-side hashed cache is killed",
        RING_CHOICES,
        ring_node_killed,
        {"nodes": 4, "keys": 2000, "placement": "ring"},
        requires=("redis",),
    ),
    "write_behind_crash": Drill(
        "write_behind_crash",
        "A write-behind writer is killed",
        WRITE_BEHIND_CHOICES,
        write_behind_crash,
        {"mode": "write-behind", "run_s": 1.5, "flush_interval_s": 0.5},
        requires=("redis",),
    ),
}
