"""TTLCache against a brute-force model; single-flight with real threads and tasks; shared tiers."""

from __future__ import annotations

import asyncio
import random
import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lookup.kit.cache import (
    MISSING,
    AsyncSingleFlight,
    MemorySharedCache,
    NullSharedCache,
    SingleFlight,
    TTLCache,
)


class FakeClock:
    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


class ModelCache:
    """Oracle: a list ordered from least to most recently used, with deadlines; O(n) per op."""

    def __init__(self, maxsize: int, ttl: float, clock: FakeClock) -> None:
        self.maxsize, self.ttl, self.clock = maxsize, ttl, clock
        self.items: list[tuple[int, int, float]] = []  # (key, value, deadline)

    def get(self, key: int) -> object:
        for i, (k, v, deadline) in enumerate(self.items):
            if k == key:
                del self.items[i]
                if self.clock() >= deadline:
                    return MISSING
                self.items.append((k, v, deadline))
                return v
        return MISSING

    def set(self, key: int, value: int) -> None:
        self.items = [item for item in self.items if item[0] != key]
        self.items.append((key, value, self.clock() + self.ttl))
        while len(self.items) > self.maxsize:
            self.items.pop(0)

    def delete(self, key: int) -> None:
        self.items = [item for item in self.items if item[0] != key]


ops = st.lists(
    st.tuples(
        st.sampled_from(["get", "set", "delete", "tick"]),
        st.integers(min_value=0, max_value=12),
        st.integers(min_value=0, max_value=100),
    ),
    max_size=200,
)


@settings(max_examples=200, deadline=None)
@given(st.integers(min_value=1, max_value=6), ops)
def test_ttl_lru_matches_the_brute_force_model(
    maxsize: int, script: list[tuple[str, int, int]]
) -> None:
    clock = FakeClock()
    cache: TTLCache[int, int] = TTLCache(maxsize, 10.0, clock=clock)
    model = ModelCache(maxsize, 10.0, clock)
    for op, key, value in script:
        if op == "get":
            assert cache.get(key) == model.get(key)
        elif op == "set":
            cache.set(key, value)
            model.set(key, value)
        elif op == "delete":
            cache.delete(key)
            model.delete(key)
        else:
            clock.now += value / 20  # 0–5 s
        assert len(cache) <= maxsize


def test_entries_expire_exactly_at_their_ttl_and_count_it() -> None:
    clock = FakeClock()
    cache: TTLCache[str, str] = TTLCache(10, 5.0, clock=clock)
    cache.set("a", "x")
    clock.now += 4.999
    assert cache.get("a") == "x"
    clock.now += 0.001
    assert cache.get("a") is MISSING
    assert cache.stats()["expirations"] == 1
    assert cache.stats()["hits"] == 1 and cache.stats()["misses"] == 1


def test_none_is_a_cacheable_value_and_missing_is_falsy() -> None:
    cache: TTLCache[str, None] = TTLCache(10, 5.0)
    cache.set("k", None)
    assert cache.get("k") is None
    assert cache.get("other") is MISSING
    assert not MISSING


def test_jitter_spreads_lifetimes_within_bounds() -> None:
    clock = FakeClock()
    cache: TTLCache[int, int] = TTLCache(1000, 100.0, jitter=0.2, clock=clock, rng=random.Random(7))
    for i in range(500):
        cache.set(i, i)
    clock.now += 79.99
    assert sum(cache.get(i) is not MISSING for i in range(500)) == 500
    clock.now += 20.02  # now 100.01: roughly half have expired
    alive = sum(cache.get(i) is not MISSING for i in range(500))
    assert 150 < alive < 350
    clock.now += 20.0
    assert sum(cache.get(i) is not MISSING for i in range(500)) == 0


def test_eviction_counts_and_invalid_arguments() -> None:
    cache: TTLCache[int, int] = TTLCache(2, 5.0)
    for i in range(5):
        cache.set(i, i)
    assert cache.stats()["evictions"] == 3 and 4 in cache and 0 not in cache
    for bad in ({"maxsize": 0, "ttl": 1.0}, {"maxsize": 1, "ttl": 0.0}):
        with pytest.raises(ValueError):
            TTLCache(**bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        TTLCache(1, 1.0, jitter=1.0)


def test_single_flight_collapses_concurrent_threads_into_one_load() -> None:
    flight = SingleFlight()
    release = threading.Event()
    calls = []

    def load() -> str:
        calls.append(1)
        release.wait(10)
        return "value"

    results: list[str] = []
    threads = [
        threading.Thread(target=lambda: results.append(flight.do("k", load))) for _ in range(16)
    ]
    for t in threads:
        t.start()
    # Release the leader only once the other 15 are waiting on its result.
    for _ in range(10_000):
        if flight.collapsed == 15:
            break
        threading.Event().wait(0.001)
    release.set()
    for t in threads:
        t.join()
    assert calls == [1]
    assert results == ["value"] * 16
    assert flight.loads == 1 and flight.collapsed == 15 and flight.in_flight() == 0


def test_single_flight_shares_the_error_and_then_forgets_it() -> None:
    flight = SingleFlight()
    with pytest.raises(KeyError):
        flight.do("k", lambda: {}["nope"])
    assert flight.do("k", lambda: 42) == 42


def test_async_single_flight_collapses_tasks() -> None:
    async def scenario() -> tuple[list[str], int, AsyncSingleFlight]:
        flight = AsyncSingleFlight()
        gate = asyncio.Event()
        calls = 0

        async def load() -> str:
            nonlocal calls
            calls += 1
            await gate.wait()
            return "v"

        tasks = [asyncio.ensure_future(flight.do("k", load)) for _ in range(100)]
        await asyncio.sleep(0)
        gate.set()
        return await asyncio.gather(*tasks), calls, flight

    results, calls, flight = asyncio.run(scenario())
    assert results == ["v"] * 100 and calls == 1
    assert flight.loads == 1 and flight.collapsed == 99 and flight.in_flight() == 0


def test_async_single_flight_survives_a_cancelled_waiter() -> None:
    async def scenario() -> str:
        flight = AsyncSingleFlight()
        gate = asyncio.Event()

        async def load() -> str:
            await gate.wait()
            return "v"

        leader = asyncio.ensure_future(flight.do("k", load))
        follower = asyncio.ensure_future(flight.do("k", load))
        await asyncio.sleep(0)
        leader.cancel()
        gate.set()
        return await follower

    assert asyncio.run(scenario()) == "v"


def test_shared_tiers() -> None:
    null = NullSharedCache()
    null.set("k", b"v", 10)
    assert null.get("k") is None
    clock = FakeClock()
    mem = MemorySharedCache(clock=clock)
    mem.set("k", b"v", 10)
    assert mem.get("k") == b"v"
    clock.now += 10
    assert mem.get("k") is None
    mem.set("k", b"v", 10)
    mem.delete("k")
    assert mem.get("k") is None and len(mem) == 0


def test_the_shared_cache_factory_picks_the_tier_from_the_url() -> None:
    from lookup.kit.cache import open_shared_cache

    assert isinstance(open_shared_cache(""), NullSharedCache)
    assert isinstance(open_shared_cache(None), NullSharedCache)
    assert isinstance(open_shared_cache("none:"), NullSharedCache)
    assert isinstance(open_shared_cache("memory:"), MemorySharedCache)
    with pytest.raises(ValueError, match="none:, memory:"):
        open_shared_cache("memcached://127.0.0.1:11211")
