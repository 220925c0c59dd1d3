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

from lookup.kit.lazy import lazy_exports

#: Each public name and the module it lives in, imported on first use (so importing the
#: Snowflake alone does not pull in the etcd client).
_EXPORTS = {
    "ULIDGenerator": "lookup.blocks.ids.formats",
    "UUIDv7Generator": "lookup.blocks.ids.formats",
    "decode_crockford": "lookup.blocks.ids.formats",
    "encode_crockford": "lookup.blocks.ids.formats",
    "ulid_timestamp_ms": "lookup.blocks.ids.formats",
    "uuid4_by_hand": "lookup.blocks.ids.formats",
    "uuid7_timestamp_ms": "lookup.blocks.ids.formats",
    "ID_KINDS": "lookup.blocks.ids.kinds",
    "IdKind": "lookup.blocks.ids.kinds",
    "make_kind": "lookup.blocks.ids.kinds",
    "SEED_EPOCH_MS": "lookup.blocks.ids.snowflake",
    "SEED_LAYOUT": "lookup.blocks.ids.snowflake",
    "ClockMovedBackwards": "lookup.blocks.ids.snowflake",
    "Snowflake": "lookup.blocks.ids.snowflake",
    "SnowflakeLayout": "lookup.blocks.ids.snowflake",
    "SnowflakeParts": "lookup.blocks.ids.snowflake",
    "wall_clock_ms": "lookup.blocks.ids.snowflake",
    "LeaseLost": "lookup.blocks.ids.workers",
    "ReservationExhausted": "lookup.blocks.ids.workers",
    "WorkerLease": "lookup.blocks.ids.workers",
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

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
