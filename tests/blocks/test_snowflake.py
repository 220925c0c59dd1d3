"""Snowflake: the seed's layout bit for bit, refusal when the clock goes back, the
4,096-per-ms wait, and (hypothesis) round trips and monotonicity under any clock that
never goes back."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lookup.blocks.ids import (
    SEED_EPOCH_MS,
    SEED_LAYOUT,
    ClockMovedBackwards,
    Snowflake,
    SnowflakeLayout,
)
from lookup.errors import InvalidInput

BASE = 1_750_000_000_000


class Script:
    """A clock reading a scripted list of ms (then holding the last), counting reads."""

    def __init__(self, readings: Sequence[int]) -> None:
        self.readings, self.reads = list(readings), 0

    def __call__(self) -> int:
        value = self.readings[min(self.reads, len(self.readings) - 1)]
        self.reads += 1
        return value


def test_the_layout_is_the_seeds() -> None:
    assert (SEED_LAYOUT.timestamp_bits, SEED_LAYOUT.worker_bits, SEED_LAYOUT.sequence_bits) == (
        41,
        10,
        12,
    )
    assert SEED_LAYOUT.epoch_ms == SEED_EPOCH_MS == 1_700_000_000_000
    assert SEED_LAYOUT.max_worker == 1023 and SEED_LAYOUT.max_sequence == 4095
    value = SEED_LAYOUT.encode(SEED_EPOCH_MS + 5, 7, 3)
    assert value == (5 << 22) | (7 << 12) | 3  # written out, not computed by the layout
    fields = dict(SEED_LAYOUT.fields(value))
    assert fields["sign"] == "0" and len(fields["timestamp"]) == 41
    assert int(fields["timestamp"], 2) == 5 and int(fields["worker"], 2) == 7
    assert int(fields["sequence"], 2) == 3
    biggest = SEED_LAYOUT.encode(SEED_EPOCH_MS + (1 << 41) - 1, 1023, 4095)
    assert biggest == (1 << 63) - 1  # still positive in a signed BIGINT


def test_out_of_range_parts_are_refused() -> None:
    for args in [
        (SEED_EPOCH_MS - 1, 0, 0),
        (SEED_EPOCH_MS, 1024, 0),
        (SEED_EPOCH_MS, 0, 4096),
        (SEED_EPOCH_MS + (1 << 41), 0, 0),
    ]:
        with pytest.raises(InvalidInput):
            SEED_LAYOUT.encode(*args)
    with pytest.raises(InvalidInput):
        Snowflake(1024)
    with pytest.raises(InvalidInput):
        SnowflakeLayout(41, 12, 12)


def test_ids_in_one_ms_count_up_and_the_next_ms_starts_over() -> None:
    gen = Snowflake(9, clock=Script([BASE, BASE, BASE, BASE + 1]))
    parts = [SEED_LAYOUT.decode(gen.next_id()) for _ in range(4)]
    assert [(p.unix_ms - BASE, p.worker, p.sequence) for p in parts] == [
        (0, 9, 0),
        (0, 9, 1),
        (0, 9, 2),
        (1, 9, 0),
    ]


def test_a_backwards_step_is_refused_never_a_duplicate() -> None:
    clock = Script([BASE + 10, BASE + 10, BASE + 7, BASE + 9, BASE + 10, BASE + 11])
    gen = Snowflake(1, clock=clock)
    issued = [gen.next_id(), gen.next_id()]
    for _ in range(2):  # BASE+7, BASE+9: behind the last issued ms
        with pytest.raises(ClockMovedBackwards) as caught:
            gen.next_id()
        assert caught.value.last_ms == BASE + 10 and caught.value.behind_ms > 0
    issued += [gen.next_id(), gen.next_id()]  # caught up: same ms continues the sequence
    assert len(set(issued)) == 4 and issued == sorted(issued)
    assert SEED_LAYOUT.decode(issued[2]).sequence == 2
    assert gen.refusals == 2


def test_the_4097th_id_in_a_ms_waits_for_the_next_ms() -> None:
    readings = [BASE] * 4096 + [BASE] * 50 + [BASE + 1]  # it spins 50 reads, then ms + 1
    clock = Script(readings)
    gen = Snowflake(3, clock=clock)
    ids = gen.take(4097)
    last = SEED_LAYOUT.decode(ids[-1])
    assert (last.unix_ms, last.sequence) == (BASE + 1, 0)
    assert SEED_LAYOUT.decode(ids[-2]).sequence == 4095
    assert gen.waits == 1 and clock.reads == 4096 + 51
    assert len(set(ids)) == 4097


def test_a_permit_that_refuses_issues_nothing() -> None:
    def veto(ms: int) -> None:
        if ms >= BASE + 2:
            raise RuntimeError("lease lost")

    gen = Snowflake(2, clock=Script([BASE, BASE + 1, BASE + 2, BASE + 3]), permit=veto)
    gen.take(2)
    with pytest.raises(RuntimeError):
        gen.next_id()
    assert gen.issued == 2 and gen.last_ms == BASE + 1


@given(
    steps=st.lists(st.integers(min_value=0, max_value=3), min_size=1, max_size=300),
    start=st.integers(min_value=SEED_EPOCH_MS, max_value=SEED_EPOCH_MS + (1 << 40)),
    worker=st.integers(min_value=0, max_value=1023),
)
def test_any_clock_that_never_goes_back_gives_increasing_ids(
    steps: list[int], start: int, worker: int
) -> None:
    readings, t = [], start
    for step in steps:
        t += step
        readings.append(t)
    gen = Snowflake(worker, clock=Script(readings + [t + 1]))
    ids = gen.take(len(readings))
    assert all(a < b for a, b in zip(ids, ids[1:], strict=False))
    for value in ids:
        parts = SEED_LAYOUT.decode(value)
        assert parts.worker == worker and start <= parts.unix_ms <= t + 1
        assert SEED_LAYOUT.encode(parts.unix_ms, parts.worker, parts.sequence) == value


@given(
    offset=st.integers(min_value=0, max_value=(1 << 41) - 1),
    worker=st.integers(min_value=0, max_value=1023),
    sequence=st.integers(min_value=0, max_value=4095),
)
def test_encode_decode_round_trip(offset: int, worker: int, sequence: int) -> None:
    value = SEED_LAYOUT.encode(SEED_EPOCH_MS + offset, worker, sequence)
    assert 0 <= value < 1 << 63
    parts = SEED_LAYOUT.decode(value)
    assert (parts.unix_ms - SEED_EPOCH_MS, parts.worker, parts.sequence) == (
        offset,
        worker,
        sequence,
    )


@given(
    a=st.tuples(st.integers(0, (1 << 41) - 1), st.integers(0, 1023), st.integers(0, 4095)),
    b=st.tuples(st.integers(0, (1 << 41) - 1), st.integers(0, 1023), st.integers(0, 4095)),
)
def test_integer_order_is_time_order_across_the_fleet(
    a: tuple[int, int, int], b: tuple[int, int, int]
) -> None:
    ida = SEED_LAYOUT.encode(SEED_EPOCH_MS + a[0], a[1], a[2])
    idb = SEED_LAYOUT.encode(SEED_EPOCH_MS + b[0], b[1], b[2])
    assert (ida < idb) == (a < b)  # timestamp first, then worker, then sequence
