"""The read path: what each layer absorbs, single-flight under concurrency, invalidation.

The cases that hold whatever the shared tier is run twice (the ``tiers`` fixture): with
the embedded tier they were written for (none, or one in-memory tier shared by the
"processes"), and with the Redis tier on a throw-away redis-server (a client per
"process", one prefix), assertions unchanged. Not with Redis: the cases that move an
injected clock past a TTL (Redis's TTLs run on its own clock, so the tier still answers
when the L1 entry has expired: by design, not a contract difference), and the fakes.
"""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lookup.kit.cache import MemorySharedCache, SharedCache
from lookup.shortener.model import Link
from lookup.shortener.resolver import Resolver, decode_link, encode_link
from lookup.shortener.store import LinkStore, SqliteLinkStore

NOW = 1_800_000_000.0


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class CountingStore:
    """Wraps a LinkStore: counts reads and can hold them until released."""

    def __init__(self, store: LinkStore) -> None:
        self.store = store
        self.reads = 0
        self.gate: threading.Event | None = None
        self.started = threading.Event()

    def get(self, key: str) -> Link | None:
        self.reads += 1
        self.started.set()
        if self.gate is not None:
            self.gate.wait(10)
        return self.store.get(key)

    def get_folded(self, key: str) -> Link | None:  # what the resolver reads
        return self.get(key)


def _link(key: str, url: str = "https://example.com/") -> Link:
    return Link(key=key, long_url=url, owner=None, created_at=NOW, updated_at=NOW, tags=("t",))


@pytest.fixture
def store(tmp_path: Path) -> LinkStore:
    s = SqliteLinkStore(tmp_path / "links.sqlite3")
    for key in ("hot-key", "cold-key"):
        s.create(_link(key), render=lambda link: {})
    yield s
    s.close()


class Tiers:
    """The shared tier of each resolver a case makes: ``tiers(embedded)`` is ``embedded``
    (the case's own tier, or None) on the embedded run, a new Redis client on the Redis run."""

    def __init__(self, redis_url: str | None) -> None:
        self.url = redis_url
        self.prefix = f"resolver-case-{uuid.uuid4().hex[:8]}:"
        self.made: list[Any] = []

    def __call__(self, embedded: SharedCache | None = None) -> SharedCache | None:
        if self.url is None:
            return embedded
        from lookup.kit.cache_redis import RedisSharedCache

        tier = RedisSharedCache(self.url, prefix=self.prefix)
        self.made.append(tier)
        return tier


@pytest.fixture(params=["embedded", "redis"])
def tiers(request: pytest.FixtureRequest) -> Iterator[Tiers]:
    url = request.getfixturevalue("redis_server").url if request.param == "redis" else None
    made = Tiers(url)
    yield made
    for tier in made.made:
        tier.close()


def _resolver(store: LinkStore, clock: Clock, **kw: Any) -> tuple[Resolver, CountingStore]:
    counting = CountingStore(store)
    resolver = Resolver(counting, clock=clock, cache_jitter=0.0, **kw)  # type: ignore[arg-type]
    return resolver, counting


def test_hits_come_from_memory_after_one_store_read(store: LinkStore, tiers: Tiers) -> None:
    resolver, counting = _resolver(store, Clock(), shared=tiers())
    for _ in range(100):
        assert resolver.resolve("hot-key").long_url == "https://example.com/"
    stats = resolver.stats()
    assert counting.reads == 1
    assert stats["l1"]["hits"] == 99 and stats["store"]["reads"] == 1 and stats["requests"] == 100


def test_entries_expire_from_memory_after_their_ttl(store: LinkStore) -> None:
    clock = Clock()
    resolver, counting = _resolver(store, clock, cache_ttl_s=60)
    resolver.resolve("hot-key")
    clock.now += 59
    resolver.resolve("hot-key")
    clock.now += 1
    resolver.resolve("hot-key")
    assert counting.reads == 2


def test_with_writers_nobody_hears_a_copy_older_than_a_second_is_revalidated(
    store: LinkStore,
) -> None:
    """A fleet on a shared store without a shared cache: another worker's PATCH is unheard.
    A copy older than ``unwatched_ttl_s`` is served once more while the store is read again
    in the background; a miss is kept only ``unwatched_ttl_s``; a store outage keeps the
    copy serving until its TTL."""
    clock = Clock()
    resolver, counting = _resolver(
        store, clock, cache_ttl_s=60, unwatched_ttl_s=1.0, unheard_writers=True
    )
    resolver.resolve("hot-key")
    resolver.resolve("no-such-key")
    clock.now += 0.5
    resolver.resolve("hot-key")
    resolver.resolve("no-such-key")
    assert counting.reads == 2  # both from memory within the second
    store.update("hot-key", {"long_url": "https://changed.example/"}, actor=None)
    clock.now += 0.6
    assert resolver.resolve("hot-key").long_url == "https://example.com/"  # served, and ...
    _until(lambda: resolver.stats()["revalidations"]["done"] == 1)
    assert resolver.resolve("hot-key").long_url == "https://changed.example/"  # ... renewed
    resolver.resolve("no-such-key")
    assert counting.reads == 4


def test_with_writers_nobody_hears_a_store_outage_keeps_serving_the_copy(
    store: LinkStore,
) -> None:
    clock = Clock()
    counting = CountingStore(store)
    resolver = Resolver(
        counting,  # type: ignore[arg-type]
        clock=clock, cache_jitter=0.0, cache_ttl_s=60, unheard_writers=True,
    )  # fmt: skip
    resolver.resolve("hot-key")
    counting.get = _failing  # type: ignore[method-assign]
    for _ in range(3):
        clock.now += 5
        assert resolver.resolve("hot-key").long_url == "https://example.com/"
        _until(lambda: not resolver._revalidating)
    assert resolver.stats()["revalidations"]["failed"] == 3
    clock.now += 50  # past the TTL: no copy left to serve
    with pytest.raises(RuntimeError):
        resolver.resolve("hot-key")


def _failing(key: str) -> None:
    raise RuntimeError("the store is away")


def _until(check: Any, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "not in time"
        time.sleep(0.01)


def test_unknown_keys_are_negatively_cached_for_a_while(store: LinkStore) -> None:
    clock = Clock()
    resolver, counting = _resolver(store, clock, negative_ttl_s=30)
    for _ in range(50):
        assert resolver.resolve("no-such-key") is None
    assert counting.reads == 1 and resolver.stats()["negative"]["hits"] == 49
    clock.now += 30
    assert resolver.resolve("no-such-key") is None
    assert counting.reads == 2


def test_scraper_keys_do_not_evict_the_hot_set(store: LinkStore, tiers: Tiers) -> None:
    resolver, counting = _resolver(store, Clock(), cache_size=2, negative_size=10, shared=tiers())
    resolver.resolve("hot-key")
    for i in range(100):
        resolver.resolve(f"guess-{i}")
    resolver.resolve("hot-key")
    assert resolver.stats()["l1"]["hits"] == 1  # still cached after 100 misses


def test_invalidate_purges_every_layer_at_once(store: LinkStore, tiers: Tiers) -> None:
    shared = tiers(MemorySharedCache())
    resolver, counting = _resolver(store, Clock(), shared=shared)
    resolver.resolve("hot-key")
    assert shared.get("hot-key") is not None
    store.update("hot-key", {"long_url": "https://new.example/"}, actor=None)
    assert resolver.resolve("hot-key").long_url == "https://example.com/"  # cached, as designed
    resolver.invalidate("hot-key")
    assert shared.get("hot-key") is None
    assert resolver.resolve("hot-key").long_url == "https://new.example/"


def test_a_created_key_is_not_hidden_by_the_negative_cache(store: LinkStore, tiers: Tiers) -> None:
    resolver, _ = _resolver(store, Clock(), shared=tiers())
    assert resolver.resolve("brand-new") is None
    store.create(_link("brand-new"), render=lambda link: {})
    resolver.invalidate("brand-new")
    assert resolver.resolve("brand-new") is not None


def test_shared_tier_serves_a_second_process_without_the_store(
    store: LinkStore, tiers: Tiers
) -> None:
    shared = MemorySharedCache()
    first, first_reads = _resolver(store, Clock(), shared=tiers(shared))
    second, second_reads = _resolver(store, Clock(), shared=tiers(shared))
    assert first.resolve("hot-key") is not None
    assert second.resolve("hot-key") == first.resolve("hot-key")
    assert first.resolve("missing-key") is None
    assert second.resolve("missing-key") is None
    assert first_reads.reads == 2 and second_reads.reads == 0
    assert second.stats()["shared"] == {
        "tier": second.shared.name,  # memory, or redis
        "hits": 1,
        "negativeHits": 1,
        "misses": 0,
        "errors": 0,
    }


class BrokenShared:
    name = "broken"

    def get(self, key: str) -> bytes | None:
        raise ConnectionError("redis is down")

    def set(self, key: str, value: bytes, ttl: float) -> None:
        raise ConnectionError("redis is down")

    def delete(self, key: str) -> None:
        raise ConnectionError("redis is down")


def test_a_broken_shared_tier_costs_misses_never_errors(store: LinkStore) -> None:
    resolver, counting = _resolver(store, Clock(), shared=BrokenShared())
    assert resolver.resolve("hot-key") is not None
    resolver.invalidate("hot-key")
    assert resolver.resolve("hot-key") is not None
    assert counting.reads == 2 and resolver.stats()["shared"]["errors"] >= 3


def test_single_flight_with_threads_costs_one_store_read(store: LinkStore, tiers: Tiers) -> None:
    resolver, counting = _resolver(store, Clock(), shared=tiers())
    counting.gate = threading.Event()
    results: list[Link | None] = []
    threads = [
        threading.Thread(target=lambda: results.append(resolver.resolve("cold-key")))
        for _ in range(24)
    ]
    for t in threads:
        t.start()
    counting.started.wait(10)
    for _ in range(10_000):
        if resolver.flight.collapsed == 23:
            break
        threading.Event().wait(0.001)
    counting.gate.set()
    for t in threads:
        t.join()
    assert counting.reads == 1
    assert len(results) == 24 and all(r is not None and r.key == "cold-key" for r in results)
    assert resolver.stats()["singleFlight"] == {"loads": 1, "collapsed": 23}


def test_single_flight_on_the_event_loop_costs_one_store_read(
    store: LinkStore, tiers: Tiers
) -> None:
    resolver, counting = _resolver(store, Clock(), shared=tiers())
    counting.gate = threading.Event()

    async def scenario() -> list[Link | None]:
        tasks = [asyncio.ensure_future(resolver.aresolve("cold-key")) for _ in range(200)]
        while resolver.aflight.collapsed < 199:
            await asyncio.sleep(0.001)
        counting.gate.set()
        return await asyncio.gather(*tasks)

    results = asyncio.run(scenario())
    assert counting.reads == 1 and all(r is not None for r in results)
    assert resolver.stats()["singleFlight"]["collapsed"] == 199


def test_a_load_racing_an_invalidation_does_not_cache_stale_data(
    store: LinkStore, tiers: Tiers
) -> None:
    resolver, counting = _resolver(store, Clock(), shared=tiers())
    counting.gate = threading.Event()
    got: list[Link | None] = []
    loader = threading.Thread(target=lambda: got.append(resolver.resolve("cold-key")))
    loader.start()
    counting.started.wait(10)
    resolver.invalidate("cold-key")  # a retarget committed while the load was in flight
    counting.gate.set()
    loader.join()
    assert resolver.stats()["staleFillsSkipped"] == 1
    assert "cold-key" not in resolver.cache


def _load_in_flight(resolver: Resolver, counting: CountingStore, key: str) -> threading.Thread:
    """Start ``resolver.resolve(key)`` in a thread and return once its store read is held."""
    counting.gate = threading.Event()
    counting.started.clear()
    loader = threading.Thread(target=resolver.resolve, args=(key,))
    loader.start()
    assert counting.started.wait(10)
    return loader


def test_invalidating_one_key_does_not_discard_another_keys_load(
    store: LinkStore, tiers: Tiers
) -> None:
    # A scanner verdict on one link lands while a redirect is loading another: the other
    # key's fill must still be cached, or every verdict during traffic costs extra reads.
    resolver, counting = _resolver(store, Clock(), shared=tiers())
    loader = _load_in_flight(resolver, counting, "cold-key")
    resolver.invalidate("hot-key")
    assert counting.gate is not None
    counting.gate.set()
    loader.join()
    assert "cold-key" in resolver.cache and resolver.stats()["staleFillsSkipped"] == 0
    assert resolver.resolve("cold-key") is not None
    assert counting.reads == 1


def test_invalidating_one_key_does_not_discard_another_keys_negative_fill(
    store: LinkStore, tiers: Tiers
) -> None:
    resolver, counting = _resolver(store, Clock(), shared=tiers())
    loader = _load_in_flight(resolver, counting, "guessed-key")
    resolver.invalidate("hot-key")
    assert counting.gate is not None
    counting.gate.set()
    loader.join()
    assert resolver.resolve("guessed-key") is None
    assert counting.reads == 1 and resolver.stats()["negative"]["hits"] == 1


def test_clear_discards_every_load_in_flight(store: LinkStore, tiers: Tiers) -> None:
    resolver, counting = _resolver(store, Clock(), shared=tiers())
    loader = _load_in_flight(resolver, counting, "cold-key")
    resolver.clear()
    assert counting.gate is not None
    counting.gate.set()
    loader.join()
    assert "cold-key" not in resolver.cache and resolver.stats()["staleFillsSkipped"] == 1


def test_an_invalidation_during_a_load_and_a_later_one_each_cost_one_read(
    store: LinkStore, tiers: Tiers
) -> None:
    # The stale load is skipped, the next one fills; a load that finished earlier is not
    # affected by an invalidation that comes later.
    resolver, counting = _resolver(store, Clock(), shared=tiers())
    loader = _load_in_flight(resolver, counting, "cold-key")
    resolver.invalidate("cold-key")
    assert counting.gate is not None
    counting.gate.set()
    loader.join()
    counting.gate = None
    resolver.resolve("cold-key")
    resolver.resolve("cold-key")
    assert counting.reads == 2 and "cold-key" in resolver.cache
    resolver.invalidate("cold-key")
    resolver.resolve("cold-key")
    assert counting.reads == 3 and resolver.stats()["staleFillsSkipped"] == 1


class InvalidatingShared(MemorySharedCache):
    """A shared tier during whose ``set`` an invalidation of the same key commits."""

    def __init__(self) -> None:
        super().__init__()
        self.resolver: Resolver | None = None

    def set(self, key: str, value: bytes, ttl: float) -> None:
        assert self.resolver is not None
        self.resolver.invalidate(key)  # lands after the load decided to fill
        super().set(key, value, ttl)


def test_an_invalidation_racing_the_shared_fill_leaves_no_stale_entry(store: LinkStore) -> None:
    shared = InvalidatingShared()
    resolver, counting = _resolver(store, Clock(), shared=shared)
    shared.resolver = resolver
    assert resolver.resolve("cold-key") is not None
    assert shared.get("cold-key") is None and "cold-key" not in resolver.cache
    assert resolver.stats()["staleFillsSkipped"] == 1


def test_shared_encoding_round_trips() -> None:
    link = _link("round-trip")
    assert decode_link(encode_link(link)) == link
