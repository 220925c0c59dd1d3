"""Unique ids (seed 004, "Design a Unique ID Generator"), every design of the seed's table.

* :class:`Snowflake` — 0 | 41 bits ms since a custom epoch | 10 bits worker | 12 bits
  sequence; refuses while the clock is behind, waits when a millisecond is spent;
* :class:`WorkerLease` — its worker id leased from etcd, kept alive, never re-used;
* :class:`UUIDv7Generator`, :class:`ULIDGenerator`, :func:`uuid4_by_hand` — the 128-bit
  ids that need no coordination;
* :data:`ID_KINDS` — every row of the seed's table (with the shortener's range leases,
  :class:`lookup.kit.ids.IdAllocator`, as the ticket server), for the benchmark, the
  notebook and the dashboard;
* :mod:`lookup.blocks.ids.drill` — the drills with real processes and a real etcd.
"""

from lookup.blocks.ids.formats import (
    ULIDGenerator,
    UUIDv7Generator,
    decode_crockford,
    encode_crockford,
    ulid_timestamp_ms,
    uuid4_by_hand,
    uuid7_timestamp_ms,
)
from lookup.blocks.ids.kinds import ID_KINDS, IdKind, make_kind
from lookup.blocks.ids.snowflake import (
    SEED_EPOCH_MS,
    SEED_LAYOUT,
    ClockMovedBackwards,
    Snowflake,
    SnowflakeLayout,
    SnowflakeParts,
    wall_clock_ms,
)
from lookup.blocks.ids.workers import LeaseLost, ReservationExhausted, WorkerLease

__all__ = [
    "ID_KINDS",
    "SEED_EPOCH_MS",
    "SEED_LAYOUT",
    "ClockMovedBackwards",
    "IdKind",
    "LeaseLost",
    "ReservationExhausted",
    "Snowflake",
    "SnowflakeLayout",
    "SnowflakeParts",
    "ULIDGenerator",
    "UUIDv7Generator",
    "WorkerLease",
    "decode_crockford",
    "encode_crockford",
    "make_kind",
    "ulid_timestamp_ms",
    "uuid4_by_hand",
    "uuid7_timestamp_ms",
    "wall_clock_ms",
]
