"""Predict-then-run experiments on caches and Bloom filters.

- the Bloom filter is :class:`lookup.kit.bloom.BloomFilter`, the crawler's seen-URL filter,
  probed with strings that were never added;
- the stampede runs :class:`lookup.blocks.cache.patterns.ReadThrough` over the embedded
  ``memory:`` tier and a SQLite :class:`~lookup.blocks.cache.store.BackingStore` that
  records every load, with callers released together by a barrier;
- the hit ratio replays the shortener simulator's redirect keys through the hand-written
  eviction policies of :mod:`lookup.blocks.cache.eviction`.
"""

from __future__ import annotations

import math
import random
import tempfile
import threading
from pathlib import Path

from lookup.study.measure import Experiment, Measured

__all__ = [
    "EXPERIMENTS_CACHE",
    "bloom_false_positives",
    "bloom_size",
    "cache_hit_ratio",
    "single_flight",
]

_LN2_SQ = math.log(2) ** 2


def bloom_false_positives(
    items: int = 20_000, bits_per_item: float = 9.6, probes: int = 100_000, seed: int = 1
) -> Measured:
    """Fill a filter sized at ``bits_per_item`` bits per item with ``items`` random URLs,
    then ask it about ``probes`` other random URLs: the share it wrongly calls "seen"."""
    from lookup.kit.bloom import BloomFilter

    if items < 1 or probes < 100 or not 0.5 <= bits_per_item <= 64:
        raise ValueError("need items >= 1, probes >= 100 and 0.5 <= bits_per_item <= 64")
    target = math.exp(-bits_per_item * _LN2_SQ)  # m = -n ln p / (ln 2)^2 solved for p
    bloom = BloomFilter(items, target)
    rng = random.Random(seed)
    added = [
        f"https://site{rng.randrange(10_000)}.test/in/{rng.getrandbits(64):016x}"
        for _ in range(items)
    ]
    bloom.update(added)
    missed = sum(not bloom.might_contain(u) for u in added)
    false = sum(
        bloom.might_contain(
            f"https://site{rng.randrange(10_000)}.test/out/{rng.getrandbits(64):016x}"
        )
        for _ in range(probes)
    )
    rate = false / probes
    chain = (
        f"a filter for {items:,} items at {bits_per_item:g} bits each: "
        f"{bloom.num_bits:,} bits ({bloom.size_bytes:,} bytes) and {bloom.num_hashes} hash "
        "functions",
        f"added {items:,} random URLs; asked about every one again: {missed} answered "
        "'never seen' (a Bloom filter has no false negatives)",
        f"asked about {probes:,} other URLs never added: {false:,} answered 'probably seen'",
        f"measured false-positive rate = {false:,} ÷ {probes:,} = {rate:.3%}",
        f"theory, (1 − e^(−k·n/m))^k with k={bloom.num_hashes}: "
        f"{bloom.expected_fp_rate(items):.3%}",
    )
    return Measured(
        rate,
        "fraction",
        chain,
        {
            "bits": bloom.num_bits,
            "bytes": bloom.size_bytes,
            "hashes": bloom.num_hashes,
            "false positives": false,
            "probes": probes,
            "false negatives": missed,
            "theoretical rate": bloom.expected_fp_rate(items),
            "bits set": bloom.bits_set(),
        },
    )


def bloom_size(items: int = 1_000_000, fp_rate: float = 0.01) -> Measured:
    """The bytes a real filter allocates for ``items`` items at ``fp_rate`` false positives."""
    from lookup.kit.bloom import BloomFilter

    if not 1 <= items <= 50_000_000:
        raise ValueError("items must be within 1..50,000,000 (the filter is really allocated)")
    bloom = BloomFilter(items, fp_rate)
    chain = (
        f"asked for a filter holding {items:,} items at {fp_rate:.2%} false positives",
        f"it chose m = −n·ln p ÷ (ln 2)² = {bloom.num_bits:,} bits "
        f"({bloom.num_bits / items:.2f} bits per item) and k = {bloom.num_hashes} hashes",
        f"its bit array takes {bloom.size_bytes:,} bytes of memory",
        f"a set of the items themselves at ~100 bytes each would take about {100 * items:,} bytes",
    )
    return Measured(
        float(bloom.size_bytes),
        "B",
        chain,
        {
            "bits": bloom.num_bits,
            "hashes": bloom.num_hashes,
            "bits per item": round(bloom.num_bits / items, 3),
        },
    )


def single_flight(callers: int = 50, protect: bool = True, latency_ms: float = 100.0) -> Measured:
    """``callers`` threads read one uncached key at the same moment through a read-through
    cache over a store whose reads take ``latency_ms``: how many reads reach the store.

    ``protect=False`` is the unprotected cache (every caller that misses loads);
    ``protect=True`` collapses concurrent misses into one load (single-flight).
    """
    from lookup.blocks.cache.patterns import ReadThrough
    from lookup.blocks.cache.store import BackingStore
    from lookup.blocks.cache.tier import MemoryTier

    if not 1 <= callers <= 500 or not 0 <= latency_ms <= 2_000:
        raise ValueError("need 1 <= callers <= 500 and 0 <= latency_ms <= 2000")
    with tempfile.TemporaryDirectory(prefix="study-cache-") as tmp:
        store = BackingStore(Path(tmp) / "store.sqlite3", read_latency_s=latency_ms / 1000)
        try:
            store.put("hot", "the viral value")
            cache = ReadThrough(MemoryTier(), store.get, 60_000, protect=bool(protect))
            store.reset_counts()
            answers: list[str | None] = [None] * callers
            barrier = threading.Barrier(callers)
            errors: list[BaseException] = []

            def call(i: int) -> None:
                try:
                    barrier.wait(timeout=30)
                    answers[i] = cache.read("hot")
                except BaseException as exc:  # noqa: BLE001 - re-raised below
                    errors.append(exc)

            threads = [
                threading.Thread(target=call, args=(i,), daemon=True) for i in range(callers)
            ]
            for t in threads:
                t.start()
            for t in threads:
                t.join(60)
            if errors:
                raise errors[0]
            loads = len(store.loads)
            spread = (max(store.loads) - min(store.loads)) * 1000 if store.loads else 0.0
        finally:
            store.close()
    right = sum(a == "the viral value" for a in answers)
    how = "single-flight (one loader per key, the rest wait)" if protect else "no protection"
    chain = (
        f"one key, not in the cache; reading it from the store takes {latency_ms:g} ms",
        f"{callers} callers released together by a barrier read it through a read-through "
        f"cache with {how}",
        f"cache misses: {cache.misses}; hits: {cache.hits}",
        f"reads that reached the store: {loads}"
        + (f", begun within {spread:.0f} ms of each other" if loads > 1 else ""),
        f"callers that got the right value: {right} of {callers}",
    )
    return Measured(
        float(loads),
        "count",
        chain,
        {
            "store loads": loads,
            "misses": cache.misses,
            "hits": cache.hits,
            "answered": right,
        },
    )


def cache_hit_ratio(
    cache_share: float = 0.2,
    links: int = 1_000,
    requests: int = 30_000,
    policy: str = "LRU",
    seed: int = 7,
) -> Measured:
    """The hit ratio of a cache holding ``cache_share`` of the links, on the shortener
    simulator's redirect traffic (Zipf-popular links, bots, previews, a viral burst)."""
    from lookup.blocks.cache.eviction import POLICIES, hit_ratio, make_policy
    from lookup.datasets.cache_traces import shortener_clicks

    if policy not in POLICIES:
        raise ValueError(f"policy must be one of {', '.join(POLICIES)}")
    if not 0.0 < cache_share <= 1.0 or links < 10 or requests < 100:
        raise ValueError("need 0 < cache_share <= 1, links >= 10 and requests >= 100")
    trace = shortener_clicks(requests, links, seed)
    capacity = max(1, round(cache_share * links))
    ratio = hit_ratio(make_policy(policy, capacity), trace)
    distinct = len(set(trace))
    chain = (
        f"the shortener simulator planned {len(trace):,} redirects over {links:,} links "
        f"({distinct:,} distinct keys, counting a scraper's guesses)",
        f"a cache holding {capacity:,} keys ({cache_share:.0%} of the links), evicting by "
        f"{policy}, starting empty",
        f"replayed every redirect through it: {round(ratio * len(trace)):,} hits",
        f"hit ratio = {ratio:.1%}; the store sees the other {1 - ratio:.1%}",
    )
    return Measured(
        ratio,
        "fraction",
        chain,
        {
            "capacity": capacity,
            "requests": len(trace),
            "distinct keys": distinct,
        },
    )


EXPERIMENTS_CACHE = (
    Experiment(
        "bloom_false_positives",
        "A Bloom filter's measured false-positive rate",
        bloom_false_positives,
        {"items": 20_000, "bits_per_item": 9.6, "probes": 100_000, "seed": 1},
    ),
    Experiment(
        "bloom_size",
        "The memory a Bloom filter takes",
        bloom_size,
        {"items": 1_000_000, "fp_rate": 0.01},
    ),
    Experiment(
        "single_flight",
        "Store loads when many callers miss one key at once",
        single_flight,
        {"callers": 50, "protect": True, "latency_ms": 100.0},
    ),
    Experiment(
        "cache_hit_ratio",
        "Hit ratio of a cache holding a share of the shortener's links",
        cache_hit_ratio,
        {"cache_share": 0.2, "links": 1_000, "requests": 30_000, "policy": "LRU", "seed": 7},
    ),
)
