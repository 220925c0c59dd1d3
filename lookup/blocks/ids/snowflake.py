"""Snowflake ids, exactly the seed's layout: 0 | 41 bits ms since a custom epoch | 10 | 12.

Uniqueness is structural: two ids differ in their millisecond, their worker or their
sequence. It rests on three assumptions, and each has a guard here or beside it:

1. *the clock never goes back* — :meth:`Snowflake.next_id` refuses
   (:class:`ClockMovedBackwards`) while the clock reads earlier than the last
   millisecond it issued, instead of re-using one;
2. *4,096 ids per millisecond at most* — the 4,097th waits for the next millisecond;
3. *no two live processes share a worker id* — the worker id comes from a lease
   (:mod:`lookup.blocks.ids.workers`), and a ``permit`` hook lets the lease veto every
   issue once it is lost or its deadline has passed.

The clock is injected (a callable returning integer Unix milliseconds), so tests drive
it step by step.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from lookup.errors import InvalidInput, Unavailable

__all__ = [
    "SEED_EPOCH_MS",
    "SEED_LAYOUT",
    "ClockMovedBackwards",
    "Snowflake",
    "SnowflakeLayout",
    "SnowflakeParts",
    "wall_clock_ms",
]

#: The seed's custom epoch (2023-11-14T22:13:20Z): buys back 53 years of range.
SEED_EPOCH_MS = 1_700_000_000_000

Clock = Callable[[], int]
Permit = Callable[[int], None]


def wall_clock_ms() -> int:
    """Unix time in whole milliseconds (the clock Snowflake ids are made of)."""
    return time.time_ns() // 1_000_000


class ClockMovedBackwards(Unavailable):
    """The clock reads earlier than the last millisecond issued: issuing could duplicate."""

    default_code = "CLOCK_MOVED_BACKWARDS"

    def __init__(self, behind_ms: int, last_ms: int) -> None:
        super().__init__(
            f"clock moved back {behind_ms} ms (last issued ms {last_ms}); refusing to issue "
            "until it catches up, since any id now could repeat one already issued"
        )
        self.behind_ms = behind_ms
        self.last_ms = last_ms


@dataclass(frozen=True)
class SnowflakeParts:
    """A decoded id: absolute Unix ms, worker id and sequence number."""

    unix_ms: int
    worker: int
    sequence: int


@dataclass(frozen=True)
class SnowflakeLayout:
    """How a 63-bit positive integer is cut into timestamp | worker | sequence."""

    timestamp_bits: int = 41
    worker_bits: int = 10
    sequence_bits: int = 12
    epoch_ms: int = SEED_EPOCH_MS

    def __post_init__(self) -> None:
        if self.timestamp_bits + self.worker_bits + self.sequence_bits != 63:
            raise InvalidInput("timestamp, worker and sequence bits must add up to 63")
        if min(self.timestamp_bits, self.worker_bits, self.sequence_bits) < 1:
            raise InvalidInput("every field needs at least one bit")

    @property
    def max_worker(self) -> int:
        """The highest worker id (1,023 for 10 bits)."""
        return (1 << self.worker_bits) - 1

    @property
    def max_sequence(self) -> int:
        """The highest sequence number in one millisecond (4,095 for 12 bits)."""
        return (1 << self.sequence_bits) - 1

    @property
    def max_offset_ms(self) -> int:
        """The last millisecond after the epoch the timestamp field can hold."""
        return (1 << self.timestamp_bits) - 1

    def encode(self, unix_ms: int, worker: int, sequence: int) -> int:
        """The id for absolute ``unix_ms``, ``worker`` and ``sequence`` (range-checked)."""
        offset = unix_ms - self.epoch_ms
        if not 0 <= offset <= self.max_offset_ms:
            raise InvalidInput(f"{unix_ms} ms is outside this layout's range")
        if not 0 <= worker <= self.max_worker:
            raise InvalidInput(f"worker {worker} is outside 0..{self.max_worker}")
        if not 0 <= sequence <= self.max_sequence:
            raise InvalidInput(f"sequence {sequence} is outside 0..{self.max_sequence}")
        return (
            (offset << (self.worker_bits + self.sequence_bits))
            | (worker << self.sequence_bits)
            | sequence
        )

    def decode(self, value: int) -> SnowflakeParts:
        """The parts of an id made with this layout."""
        if not 0 <= value < 1 << 63:
            raise InvalidInput(f"{value} is not a positive 63-bit id")
        sequence = value & self.max_sequence
        worker = (value >> self.sequence_bits) & self.max_worker
        offset = value >> (self.worker_bits + self.sequence_bits)
        return SnowflakeParts(offset + self.epoch_ms, worker, sequence)

    def fields(self, value: int) -> list[tuple[str, str]]:
        """The id's 64 bits cut into (field name, bit string), high bits first."""
        bits = format(value, "064b")
        t, w = 1 + self.timestamp_bits, 1 + self.timestamp_bits + self.worker_bits
        return [
            ("sign", bits[0]),
            ("timestamp", bits[1:t]),
            ("worker", bits[t:w]),
            ("sequence", bits[w:]),
        ]

    def min_id_at(self, unix_ms: int) -> int:
        """The smallest id any worker can issue in ``unix_ms`` (for range scans by time)."""
        return self.encode(unix_ms, 0, 0)


#: The seed's layout: 41 bits of ms since 2023-11-14, 10 bits of worker, 12 of sequence.
SEED_LAYOUT = SnowflakeLayout()


class Snowflake:
    """A Snowflake generator for one worker id; thread-safe.

    ``clock`` returns integer Unix ms (injected for tests). ``permit(unix_ms)`` is
    called under the lock before every id and may raise to veto it: the worker lease
    uses it to stop issuing the moment its lease is lost or past its deadline, and to
    keep every timestamp inside what it has reserved in etcd.
    """

    def __init__(
        self,
        worker_id: int,
        *,
        layout: SnowflakeLayout = SEED_LAYOUT,
        clock: Clock = wall_clock_ms,
        permit: Permit | None = None,
        not_before_ms: int = -1,
    ) -> None:
        if not 0 <= worker_id <= layout.max_worker:
            raise InvalidInput(f"worker id {worker_id} is outside 0..{layout.max_worker}")
        self.worker_id = worker_id
        self.layout = layout
        self._clock = clock
        self._permit = permit
        self._lock = threading.Lock()
        self.last_ms = not_before_ms
        self.sequence = 0
        self.issued = 0
        self.waits = 0  # times the sequence ran out and the generator waited a ms
        self.refusals = 0  # times the clock was behind and it refused

    def _now(self) -> int:
        ts = self._clock()
        if ts < self.last_ms:
            self.refusals += 1
            raise ClockMovedBackwards(self.last_ms - ts, self.last_ms)
        return ts

    def next_id(self) -> int:
        """The next id: later than every id this generator issued before."""
        with self._lock:
            ts = self._now()
            if ts == self.last_ms:
                sequence = self.sequence + 1
                if sequence > self.layout.max_sequence:
                    self.waits += 1
                    while (ts := self._now()) <= self.last_ms:
                        pass  # 4,096 used in this ms: spin to the next one
                    sequence = 0
            else:
                sequence = 0
            if self._permit is not None:
                self._permit(ts)
            value = self.layout.encode(ts, self.worker_id, sequence)
            self.last_ms, self.sequence = ts, sequence
            self.issued += 1
            return value

    def take(self, n: int) -> list[int]:
        """``n`` consecutive ids (a loop over :meth:`next_id`; stops at the first refusal)."""
        return [self.next_id() for _ in range(n)]
