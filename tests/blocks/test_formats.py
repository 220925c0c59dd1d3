"""UUIDv7, ULID and UUIDv4 by hand, checked against established libraries as oracles:
``uuid6`` and the standard library parse our UUIDs, ``python-ulid`` parses our ULIDs,
and both agree with us on the timestamp and the order."""

from __future__ import annotations

import uuid

import pytest
import ulid
import uuid6
from hypothesis import given
from hypothesis import strategies as st

from lookup.blocks.ids import (
    ULIDGenerator,
    UUIDv7Generator,
    decode_crockford,
    encode_crockford,
    ulid_timestamp_ms,
    uuid4_by_hand,
    uuid7_timestamp_ms,
)
from lookup.errors import InvalidInput

MS = st.integers(min_value=0, max_value=(1 << 48) - 1)


class Fixed:
    """A clock reading a list of ms in turn (then holding the last)."""

    def __init__(self, readings: list[int]) -> None:
        self.readings, self.i = readings, 0

    def __call__(self) -> int:
        value = self.readings[min(self.i, len(self.readings) - 1)]
        self.i += 1
        return value


def test_uuid7_parses_as_version_7_with_our_timestamp() -> None:
    gen = UUIDv7Generator()
    for _ in range(200):
        ours = gen.next_uuid()
        theirs = uuid6.UUID(int=ours.int)
        assert theirs.version == 7 and ours.version == 7
        assert ours.variant == uuid.RFC_4122
        assert theirs.time == uuid7_timestamp_ms(ours)


def test_uuid7_agrees_with_the_library_on_the_time_and_sorts_with_it() -> None:
    gen = UUIDv7Generator()
    ours_first = gen.next_uuid()
    theirs = uuid6.uuid7()
    ours_last = gen.next_uuid()
    assert uuid7_timestamp_ms(ours_first) <= theirs.time <= uuid7_timestamp_ms(ours_last)
    assert ours_first.int < ours_last.int  # one generator: strictly increasing
    # across generators only the millisecond orders them (the counter starts at random)


def test_uuid7_counts_within_a_ms_and_borrows_the_next_when_spent() -> None:
    gen = UUIDv7Generator(clock=Fixed([1_000]))
    ids = [gen.next_int() for _ in range(5000)]
    assert ids == sorted(ids) and len(set(ids)) == 5000
    stamps = {uuid7_timestamp_ms(i) for i in ids}
    assert min(stamps) == 1_000 and max(stamps) >= 1_001  # 12-bit counter spent at least once


def test_uuid7_never_steps_back_with_the_clock() -> None:
    gen = UUIDv7Generator(clock=Fixed([5_000, 4_000, 4_500, 6_000]))
    ids = [gen.next_int() for _ in range(4)]
    assert ids == sorted(ids)
    assert [uuid7_timestamp_ms(i) for i in ids] == [5_000, 5_000, 5_000, 6_000]


def test_ulid_text_parses_with_python_ulid_and_agrees() -> None:
    gen = ULIDGenerator()
    for _ in range(200):
        text = gen.next_str()
        theirs = ulid.ULID.from_str(text)
        assert str(theirs) == text and int(theirs) == decode_crockford(text)
        assert theirs.milliseconds == ulid_timestamp_ms(text)
    library = str(ulid.ULID())
    assert decode_crockford(library) == int(ulid.ULID.from_str(library))


def test_ulid_is_monotonic_within_a_ms() -> None:
    gen = ULIDGenerator(clock=Fixed([7_000]))
    texts = [gen.next_str() for _ in range(1000)]
    assert texts == sorted(texts) and len(set(texts)) == 1000
    ints = [decode_crockford(t) for t in texts]
    assert all(b - a == 1 for a, b in zip(ints, ints[1:], strict=False))


def test_crockford_decoding_forgives_what_the_spec_forgives() -> None:
    assert decode_crockford("0O1Il") == decode_crockford("00111")
    assert decode_crockford("zz") == decode_crockford("ZZ") == 32 * 31 + 31
    with pytest.raises(InvalidInput):
        decode_crockford("U")
    with pytest.raises(InvalidInput):
        encode_crockford(1 << 130)


def test_uuid4_by_hand_is_version_4() -> None:
    values = {uuid4_by_hand() for _ in range(500)}
    assert len(values) == 500
    for n in values:
        u = uuid.UUID(int=n)
        assert u.version == 4 and u.variant == uuid.RFC_4122


@given(stamps=st.lists(MS, min_size=2, max_size=50))
def test_uuid7_order_is_timestamp_order(stamps: list[int]) -> None:
    made = [(ms, UUIDv7Generator(clock=Fixed([ms])).next_int()) for ms in stamps]
    for ms_a, a in made:
        for ms_b, b in made:
            if ms_a < ms_b:
                assert a < b
                assert uuid6.UUID(int=a) < uuid6.UUID(int=b)


@given(stamps=st.lists(MS, min_size=2, max_size=50))
def test_ulid_order_is_timestamp_order(stamps: list[int]) -> None:
    made = [(ms, ULIDGenerator(clock=Fixed([ms])).next_str()) for ms in stamps]
    for ms_a, a in made:
        assert ulid.ULID.from_str(a).milliseconds == ms_a
        for ms_b, b in made:
            if ms_a < ms_b:
                assert a < b  # text order too: Crockford's alphabet is in ASCII order
                assert ulid.ULID.from_str(a) < ulid.ULID.from_str(b)


@given(n=st.integers(min_value=0, max_value=(1 << 128) - 1))
def test_crockford_round_trip_and_library_agreement(n: int) -> None:
    text = encode_crockford(n)
    assert len(text) == 26 and decode_crockford(text) == n
    assert str(ulid.ULID.from_int(n)) == text


def test_uuid7_random_bits_come_fresh_for_every_id() -> None:
    gen = UUIDv7Generator(clock=Fixed(list(range(10_000, 12_000))))
    rand_b = [gen.next_int() & ((1 << 62) - 1) for _ in range(2000)]  # past one pool refill
    assert len(set(rand_b)) == 2000
