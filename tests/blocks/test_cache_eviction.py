"""The eviction policies against oracles: cachetools decision by decision (LRU, LFU, FIFO),
Belady's optimum as a ceiling no policy beats, and the invariants every policy keeps."""

from __future__ import annotations

import cachetools
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lookup.blocks.cache.eviction import (
    FIFO,
    LFU,
    LRU,
    POLICIES,
    Belady,
    CountMinSketch,
    SampledLRU,
    WTinyLFU,
    hit_ratio,
    hit_ratio_curves,
    make_policy,
)
from lookup.datasets.cache_traces import scan_polluted

traces = st.lists(st.integers(0, 40), min_size=1, max_size=400)
capacities = st.integers(1, 20)
ORACLES = [(LRU, cachetools.LRUCache), (LFU, cachetools.LFUCache), (FIFO, cachetools.FIFOCache)]


def _oracle_access(cache: cachetools.Cache, key: int) -> bool:
    if key in cache:
        cache[key]  # noqa: B018 - a read is what updates recency and frequency
        return True
    cache[key] = True
    return False


@pytest.mark.parametrize(("ours", "theirs"), ORACLES, ids=[o[0].name for o in ORACLES])
@settings(max_examples=150, deadline=None)
@given(trace=traces, capacity=capacities)
def test_decisions_match_cachetools(ours: type, theirs: type, trace: list[int],
                                    capacity: int) -> None:  # fmt: skip
    policy, oracle = ours(capacity), theirs(capacity)
    for key in trace:
        assert policy.access(key) == _oracle_access(oracle, key)
        assert {k for k in oracle} == {k for k in range(41) if k in policy}


@pytest.mark.parametrize("name", list(POLICIES))
@settings(max_examples=80, deadline=None)
@given(trace=traces, capacity=capacities)
def test_bounded_and_never_beats_belady(name: str, trace: list[int], capacity: int) -> None:
    policy = make_policy(name, capacity)
    for key in trace:
        policy.access(key)
        assert len(policy) <= capacity
    assert (
        hit_ratio(make_policy(name, capacity), trace)
        <= hit_ratio(Belady(capacity, trace), trace) + 1e-12
    )


@settings(max_examples=80, deadline=None)
@given(trace=traces, capacity=capacities)
def test_belady_matches_brute_force(trace: list[int], capacity: int) -> None:
    """MIN against a direct evaluation: on a miss evict the key whose next use is latest."""
    resident: set[int] = set()
    hits = 0
    for i, key in enumerate(trace):
        if key in resident:
            hits += 1
            continue
        if len(resident) >= capacity:

            def next_use(k: int, i: int = i) -> int:
                rest = trace[i + 1 :]
                return rest.index(k) if k in rest else len(trace) + k

            resident.remove(max(resident, key=next_use))
        resident.add(key)
    assert hit_ratio(Belady(capacity, trace), trace) == hits / len(trace)


@settings(max_examples=60, deadline=None)
@given(keys=st.lists(st.integers(0, 10_000), min_size=1, max_size=300))
def test_count_min_never_undercounts_before_a_reset(keys: list[int]) -> None:
    sketch = CountMinSketch(64, sample_size=10**9)
    for k in keys:
        sketch.increment(k)
    for k in set(keys):
        assert sketch.estimate(k) >= min(keys.count(k), CountMinSketch.MAX)


def test_count_min_ages_by_halving() -> None:
    sketch = CountMinSketch(16, sample_size=100)
    for _ in range(12):
        sketch.increment("hot")
    before = sketch.estimate("hot")
    for i in range(200):
        sketch.increment(i)
    assert sketch.resets >= 1 and sketch.estimate("hot") < before


def test_sampled_lru_with_every_key_sampled_is_exact_lru() -> None:
    trace = [(i * 7919) % 23 for i in range(2000)]
    exact, sampled = LRU(8), SampledLRU(8, samples=10_000)
    assert [exact.access(k) for k in trace] == [sampled.access(k) for k in trace]


def test_w_tinylfu_survives_a_scan_that_flushes_lru() -> None:
    hot = [i % 50 for i in range(5000)]
    trace = scan_polluted(hot, scan=2000, at=0.5)
    after = trace[len(hot) // 2 + 2000 :]
    results = {}
    for cls in (LRU, WTinyLFU):
        policy = cls(60)
        hits = [policy.access(k) for k in trace]
        results[cls.name] = sum(hits[-len(after) :]) / len(after)
    assert results["W-TinyLFU"] > results["LRU"]
    assert results["W-TinyLFU"] > 0.95


def test_curves_rows_and_bad_input() -> None:
    rows = hit_ratio_curves([1, 2, 1, 3, 1], [1, 2], ["LRU"])
    assert [(r["policy"], r["size"]) for r in rows] == [
        ("LRU", 1),
        ("LRU", 2),
        ("Belady (optimal)", 1),
        ("Belady (optimal)", 2),
    ]
    with pytest.raises(ValueError, match="unknown policy"):
        make_policy("ARC", 3)
    with pytest.raises(ValueError, match="capacity"):
        LRU(0)
    with pytest.raises(ValueError, match="replay"):
        Belady(2, [1, 2]).access(2)
