"""Ids: base62, the keyed Feistel permutation (bijective, invertible, scattering), range leases."""

from __future__ import annotations

import multiprocessing
import os
import stat
import threading
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lookup.kit.ids import (
    BASE62_ALPHABET,
    FeistelPermutation,
    SqliteIdAllocator,
    decode_base62,
    encode_base62,
    is_base62,
    load_or_create_secret,
)

KEY = bytes(range(32))
FULL = 62**7


def _reference_decode(text: str) -> int:
    """Oracle: positional notation written out term by term."""
    return sum(BASE62_ALPHABET.index(ch) * 62**i for i, ch in enumerate(reversed(text)))


# -- base62 ---------------------------------------------------------------------------


def test_base62_known_values() -> None:
    assert encode_base62(0) == "0"
    assert encode_base62(61) == "Z"
    assert encode_base62(62) == "10"
    assert encode_base62(62**7 - 1) == "ZZZZZZZ"
    assert encode_base62(5, width=7) == "0000005"
    assert len(BASE62_ALPHABET) == len(set(BASE62_ALPHABET)) == 62


@given(st.integers(min_value=0, max_value=62**12))
def test_base62_round_trip_against_positional_oracle(n: int) -> None:
    text = encode_base62(n)
    assert is_base62(text)
    assert decode_base62(text) == n == _reference_decode(text)


@given(st.text(alphabet=BASE62_ALPHABET, min_size=1, max_size=12))
def test_decode_matches_oracle(text: str) -> None:
    assert decode_base62(text) == _reference_decode(text)


def test_base62_refuses_bad_input() -> None:
    with pytest.raises(ValueError):
        encode_base62(-1)
    with pytest.raises(ValueError):
        encode_base62(62**7, width=7)
    for bad in ("", "abc-", "ü", " a"):
        with pytest.raises(ValueError):
            decode_base62(bad)
        assert not is_base62(bad)


# -- the permutation ------------------------------------------------------------------


@pytest.mark.parametrize("domain", [62**3, 1000, 2**10, 3])
def test_permutation_is_a_bijection_exhaustively(domain: int) -> None:
    perm = FeistelPermutation(domain, KEY)
    images = [perm.permute(x) for x in range(domain)]
    assert sorted(images) == list(range(domain))  # one-to-one and onto
    assert all(perm.invert(y) == x for x, y in enumerate(images))


@settings(max_examples=300, deadline=None)
@given(st.integers(min_value=0, max_value=FULL - 1), st.integers(min_value=0, max_value=FULL - 1))
def test_full_domain_samples_are_in_range_distinct_and_invertible(x: int, y: int) -> None:
    perm = _full()
    px, py = perm.permute(x), perm.permute(y)
    assert 0 <= px < FULL and 0 <= py < FULL
    assert perm.invert(px) == x
    assert (px == py) == (x == y)


_FULL_PERM: list[FeistelPermutation] = []


def _full() -> FeistelPermutation:
    if not _FULL_PERM:
        _FULL_PERM.append(FeistelPermutation(FULL, KEY))
    return _FULL_PERM[0]


def test_consecutive_ids_scatter_over_the_whole_space() -> None:
    perm = _full()
    images = [perm.permute(i) for i in range(5_000)]
    assert len(set(images)) == len(images)
    # A uniformly random pair lands within FULL/1000 of each other with p ≈ 0.002;
    # a counter (or a multiply-by-constant scramble of small ids) would do so always.
    close = sum(abs(b - a) < FULL // 1000 for a, b in zip(images, images[1:], strict=False))
    assert close < 50
    # First characters of the 7-char keys are spread over the alphabet (chi-square, 61 dof:
    # the 99.9th percentile is ≈100).
    firsts = [encode_base62(v, 7)[0] for v in images]
    expected = len(firsts) / 62
    chi2 = sum((firsts.count(c) - expected) ** 2 / expected for c in BASE62_ALPHABET)
    assert chi2 < 110


def test_the_secret_decides_the_mapping() -> None:
    a = FeistelPermutation(FULL, KEY)
    b = FeistelPermutation(FULL, bytes(reversed(KEY)))
    same = sum(a.permute(i) == b.permute(i) for i in range(1_000))
    assert same <= 1


def test_permutation_refuses_out_of_domain_and_weak_setups() -> None:
    perm = FeistelPermutation(100, KEY)
    for bad in (-1, 100):
        with pytest.raises(ValueError):
            perm.permute(bad)
        with pytest.raises(ValueError):
            perm.invert(bad)
    with pytest.raises(ValueError):
        FeistelPermutation(100, b"short")
    with pytest.raises(ValueError):
        FeistelPermutation(1, KEY)
    with pytest.raises(ValueError):
        FeistelPermutation(100, KEY, rounds=2)


# -- the secret -----------------------------------------------------------------------


def test_secret_is_created_once_with_owner_only_permissions(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "secret.key"
    first = load_or_create_secret(path)
    assert len(first) == 32
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert load_or_create_secret(path) == first
    assert list(path.parent.iterdir()) == [path]  # no temporary files left behind


def test_concurrent_creation_agrees_on_one_secret(tmp_path: Path) -> None:
    path = tmp_path / "secret.key"
    results: list[bytes] = []
    barrier = threading.Barrier(8)

    def worker() -> None:
        barrier.wait()
        results.append(load_or_create_secret(path))

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(results)) == 1


# -- range leases ---------------------------------------------------------------------


def test_ids_are_consecutive_within_a_lease_and_leases_are_disjoint(tmp_path: Path) -> None:
    db = tmp_path / "ids.sqlite3"
    a = SqliteIdAllocator(db, "links", block_size=10)
    b = SqliteIdAllocator(db, "links", block_size=10)
    first = [a.next_id() for _ in range(3)]
    assert first == [0, 1, 2]
    assert b.next_id() == 10  # b leased the next block
    assert a.remaining_in_block() == 7
    assert [a.next_id() for _ in range(8)] == [3, 4, 5, 6, 7, 8, 9, 20]
    assert a.leases_taken == 2


def test_a_crashed_allocator_leaves_a_gap_never_a_duplicate(tmp_path: Path) -> None:
    db = tmp_path / "ids.sqlite3"
    crashed = SqliteIdAllocator(db, "links", block_size=100)
    issued = {crashed.next_id() for _ in range(5)}
    del crashed  # the process "dies" with 95 unspent ids
    survivor = SqliteIdAllocator(db, "links", block_size=100)
    after = {survivor.next_id() for _ in range(150)}
    assert not issued & after
    assert min(after) == 100  # the rest of the first block is a gap


def test_allocators_on_many_threads_never_share_an_id(tmp_path: Path) -> None:
    db = tmp_path / "ids.sqlite3"
    SqliteIdAllocator(db, "links")  # create the table before the race
    out: list[list[int]] = []

    def worker() -> None:
        alloc = SqliteIdAllocator(db, "links", block_size=37)  # own connection, like a process
        out.append([alloc.next_id() for _ in range(300)])

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    every = [i for chunk in out for i in chunk]
    assert len(every) == 2_400 == len(set(every))


def test_one_allocator_shared_by_threads_hands_out_unique_ids(tmp_path: Path) -> None:
    alloc = SqliteIdAllocator(tmp_path / "ids.sqlite3", "links", block_size=97)
    out: list[int] = []
    lock = threading.Lock()

    def worker() -> None:
        mine = [alloc.next_id() for _ in range(500)]
        with lock:
            out.extend(mine)

    threads = [threading.Thread(target=worker) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(out) == list(range(3_000))  # no gaps either: one process spent every block


def _lease_in_process(db: str, n: int, queue: multiprocessing.Queue) -> None:  # type: ignore[type-arg]
    alloc = SqliteIdAllocator(db, "links", block_size=50)
    queue.put([alloc.next_id() for _ in range(n)])


def test_separate_processes_get_disjoint_ids(tmp_path: Path) -> None:
    db = str(tmp_path / "ids.sqlite3")
    SqliteIdAllocator(db, "links")
    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    procs = [ctx.Process(target=_lease_in_process, args=(db, 400, queue)) for _ in range(3)]
    for p in procs:
        p.start()
    chunks = [queue.get(timeout=60) for _ in procs]
    for p in procs:
        p.join(timeout=60)
    every = [i for chunk in chunks for i in chunk]
    assert len(every) == 1_200 == len(set(every))


def test_allocator_stops_at_its_limit(tmp_path: Path) -> None:
    alloc = SqliteIdAllocator(tmp_path / "ids.sqlite3", "tiny", block_size=4, limit=6)
    assert [alloc.next_id() for _ in range(6)] == list(range(6))
    with pytest.raises(OverflowError):
        alloc.next_id()
