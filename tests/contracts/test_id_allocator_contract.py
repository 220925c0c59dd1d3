"""The IdAllocator contract, written once and run against every implementation.

What the key minter relies on: blocks from one counter that never overlap, whichever
allocator (process) takes them; ids spent in order inside a block; a gap, never a
duplicate, when a holder dies; the limit enforced; ``close()`` that a later lease
survives. The backends come from the seam's registry (:data:`lookup.kit.idblocks.BACKENDS`):
a new backend registers its scheme there, says below how to get a fresh, empty store of it
(``FRESH``), and must pass unchanged.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from lookup.kit.idblocks import BACKENDS, IdAllocator, backend, open_id_allocator
from lookup.kit.storeurl import sqlite_url
from tests.contracts.seams import (
    Fresh,
    check_port_imports_no_backend,
    check_registered,
    fresh_url,
)


def _sqlite(tmp_path: Path) -> str:
    return sqlite_url(tmp_path / "ids.sqlite3")


#: scheme -> how to get the URL of a fresh store of counters: a function of a temp dir, or
#: the name of the fixture that gives a new database on a real server.
FRESH: dict[str, Fresh] = {"sqlite": _sqlite, "postgresql": "postgres_db"}


@pytest.fixture(params=list(BACKENDS))
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return fresh_url(request, tmp_path, FRESH)


def test_every_registered_backend_opens_from_a_url() -> None:
    check_registered(BACKENDS, backend)


def test_the_port_imports_no_backend() -> None:
    """``lookup.kit.idblocks`` names its backends; it imports one only when a URL asks."""
    check_port_imports_no_backend("lookup.kit.idblocks", ("psycopg", "sqlite3"))


@pytest.fixture
def allocator(url: str) -> Iterator[Callable[..., IdAllocator]]:
    """Open allocators on one store (each like its own process)."""
    opened: list[IdAllocator] = []

    def factory(name: str = "links", **options: Any) -> IdAllocator:
        alloc = open_id_allocator(url, name, **options)
        opened.append(alloc)
        return alloc

    yield factory
    for alloc in opened:
        alloc.close()


def test_the_factory_gives_an_id_allocator(allocator: Callable[..., IdAllocator]) -> None:
    alloc = allocator(block_size=10)
    assert isinstance(alloc, IdAllocator)
    assert [alloc.next_id() for _ in range(3)] == [0, 1, 2]


def test_unknown_schemes_are_refused_by_name() -> None:
    with pytest.raises(ValueError, match="sqlite"):
        open_id_allocator("etcd://somewhere/ids")


def test_two_allocators_on_one_store_get_disjoint_blocks(
    allocator: Callable[..., IdAllocator],
) -> None:
    a, b = allocator(block_size=10), allocator(block_size=10)
    blocks = [a.lease(), b.lease(), a.lease(), b.lease()]
    spans = [set(range(lease.start, lease.end)) for lease in blocks]
    assert all(len(s) == 10 for s in spans)
    assert len(set().union(*spans)) == 40  # no id in two blocks
    assert a.leases_taken == 2 and b.leases_taken == 2


def test_concurrent_allocators_never_hand_out_one_id_twice(
    allocator: Callable[..., IdAllocator],
) -> None:
    allocator()  # the counter exists before the race
    allocators = [allocator(block_size=37) for _ in range(4)]
    got: list[list[int]] = [[] for _ in allocators]
    start = threading.Barrier(len(allocators))

    def spend(i: int) -> None:
        start.wait()
        got[i] = [allocators[i].next_id() for _ in range(500)]

    threads = [threading.Thread(target=spend, args=(i,)) for i in range(len(allocators))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    every = [x for ids in got for x in ids]
    assert len(every) == len(set(every)) == 2_000
    for ids in got:
        assert ids == sorted(ids)  # each allocator spends its blocks in order


def test_a_dead_holder_leaves_a_gap_never_a_duplicate(
    allocator: Callable[..., IdAllocator],
) -> None:
    crashed = allocator(block_size=100)
    spent = [crashed.next_id() for _ in range(5)]  # then it "dies": the rest of its block
    survivor = allocator(block_size=100)
    assert survivor.next_id() >= 100 and not set(spent) & {survivor.next_id()}


def test_counters_are_independent_by_name(allocator: Callable[..., IdAllocator]) -> None:
    links, other = allocator("links", block_size=5), allocator("other", block_size=5)
    assert links.next_id() == 0 and other.next_id() == 0


def test_the_limit_is_enforced(allocator: Callable[..., IdAllocator]) -> None:
    tiny = allocator("tiny", block_size=4, limit=6)
    assert [tiny.next_id() for _ in range(6)] == list(range(6))
    with pytest.raises(OverflowError):
        tiny.next_id()


def test_a_closed_allocator_leases_again(allocator: Callable[..., IdAllocator]) -> None:
    alloc = allocator(block_size=3)
    first = [alloc.next_id() for _ in range(3)]
    alloc.close()
    assert alloc.next_id() == first[-1] + 1  # the next lease reopens the connection
