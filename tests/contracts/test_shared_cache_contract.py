"""The shared-cache contract, run against every tier behind ``open_shared_cache``.

Two kinds of tier share the interface: ones that hold values (``memory:``, later Redis)
and the null tier that holds nothing. Both must accept every call without raising; a
holding tier must return what was set, forget what was deleted, keep keys apart and let
an entry expire after its TTL (with the injected clock).
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from lookup.kit.cache import SharedCache, open_shared_cache


class FakeClock:
    def __init__(self) -> None:
        self.now = 50.0

    def __call__(self) -> float:
        return self.now


@dataclass
class Tier:
    cache: SharedCache
    clock: FakeClock
    holds: bool  # False for the null tier: every get misses


#: (URL, whether the tier holds values) for every implementation.
TIERS = [("none:", False), ("memory:", True)]


@pytest.fixture(params=TIERS, ids=[url for url, _ in TIERS])
def tier(request: pytest.FixtureRequest) -> Tier:
    url, holds = request.param
    clock = FakeClock()
    return Tier(open_shared_cache(url, clock=clock), clock, holds)


def test_it_has_a_name(tier: Tier) -> None:
    assert isinstance(tier.cache.name, str) and tier.cache.name


def test_a_missing_key_misses(tier: Tier) -> None:
    assert tier.cache.get("never-set") is None
    tier.cache.delete("never-set")  # deleting what is not there is fine


def test_set_then_get(tier: Tier) -> None:
    tier.cache.set("k", b"\x00value\xff", 60)
    assert tier.cache.get("k") == (b"\x00value\xff" if tier.holds else None)


def test_overwrite_keeps_the_newest(tier: Tier) -> None:
    tier.cache.set("k", b"old", 60)
    tier.cache.set("k", b"new", 60)
    assert tier.cache.get("k") == (b"new" if tier.holds else None)


def test_delete_invalidates(tier: Tier) -> None:
    tier.cache.set("k", b"v", 60)
    tier.cache.delete("k")
    assert tier.cache.get("k") is None


def test_keys_are_independent(tier: Tier) -> None:
    tier.cache.set("a", b"1", 60)
    tier.cache.set("b", b"2", 60)
    tier.cache.delete("a")
    assert tier.cache.get("a") is None
    assert tier.cache.get("b") == (b"2" if tier.holds else None)


def test_an_entry_expires_after_its_ttl(tier: Tier) -> None:
    tier.cache.set("short", b"s", 5)
    tier.cache.set("long", b"l", 100)
    tier.clock.now += 4.5
    assert tier.cache.get("short") == (b"s" if tier.holds else None)
    tier.clock.now += 1.0
    assert tier.cache.get("short") is None
    assert tier.cache.get("long") == (b"l" if tier.holds else None)


def test_an_empty_value_is_a_value(tier: Tier) -> None:
    tier.cache.set("empty", b"", 60)
    assert tier.cache.get("empty") == (b"" if tier.holds else None)


def test_an_unknown_url_names_the_accepted_ones() -> None:
    with pytest.raises(ValueError, match="memory:"):
        open_shared_cache("sqlite:///tmp/cache.sqlite")
