"""Unique ids' estimate (seed 004, "Design a Unique ID Generator"): the Snowflake layout.

The figure that shapes the design is the split of 22 bits between worker and sequence:
4,096 ids per millisecond per worker × 1,024 workers ≈ 4.2M ids per millisecond for
the fleet, for ~69 years past the custom epoch; re-partitioned for 4,096 workers the
fleet keeps the same 4.2M/ms, each worker gets a quarter of it.
"""

from __future__ import annotations

from dataclasses import dataclass

from lookup.capacity.checks import Validated, assume
from lookup.capacity.core import Plan, figure


def _bits(default: int, what: str) -> int:
    return assume(default, what, minimum=1, inclusive=True, integer=True)


@dataclass(frozen=True)
class IdsAssumptions(Validated):
    """The Snowflake layout (seed: 41 bits of ms, 10 of worker, 12 of sequence)."""

    timestamp_bits: int = _bits(41, "bits of milliseconds since the custom epoch")
    worker_bits: int = _bits(10, "bits of worker id")
    sequence_bits: int = _bits(12, "bits of per-millisecond sequence")
    repartition_worker_bits: int = _bits(12, "worker bits when the fleet needs 4,096 workers")
    ids_needed_per_s: float = assume(1e6, "ids the whole fleet must issue per second at peak")


class IdsPlan(Plan):
    """Snowflake's capacity: ids per ms per worker and fleet-wide, range, re-partitioning."""

    inputs = IdsAssumptions
    steps = (
        figure("ids_per_ms_per_worker", "Ids per ms per worker", "exact",
               "2^{a.sequence_bits:raw}"),
        figure("workers", "Workers", "exact", "2^{a.worker_bits:raw}"),
        figure("ids_per_ms_fleet", "Ids per ms, fleet-wide", "count",
               "{ids_per_ms_per_worker} × {workers}"),
        figure("ids_per_s_per_worker", "Ids per second per worker", "/s",
               "{ids_per_ms_per_worker} × 1000"),
        figure("ids_per_s_fleet", "Ids per second, fleet-wide", "/s",
               "{ids_per_ms_fleet} × 1000"),
        figure("range_years", "Range of the timestamp", "years",
               "2^{a.timestamp_bits:raw} ms / (1000 × {SECONDS_PER_DAY} s × {DAYS_PER_YEAR})"),
        figure("repartition_workers", "Workers after re-partitioning", "exact",
               "2^{a.repartition_worker_bits:raw}"),
        figure("repartition_sequence_bits", "Sequence bits left", "bits",
               "{a.worker_bits:raw} + {a.sequence_bits:raw} − {a.repartition_worker_bits:raw}"),
        figure("repartition_ids_per_ms_per_worker", "Ids per ms per worker after", "exact",
               "2^{repartition_sequence_bits:raw}"),
        figure("repartition_ids_per_ms_fleet", "Ids per ms, fleet-wide after", "count",
               "{repartition_ids_per_ms_per_worker} × {repartition_workers}"),
        figure("peak_headroom", "Headroom over the peak need", "times",
               "{ids_per_s_fleet:q} / {a.ids_needed_per_s}"),
    )  # fmt: skip

    def driver(self) -> str:
        """The one number that shapes the design, and why."""
        return self.say(
            "The 22 bits under the timestamp drive the design: {ids_per_ms_per_worker} ids "
            "per ms per worker × {workers} workers = {ids_per_ms_fleet} ids per ms for "
            "{range_years} years; re-partitioned to {repartition_workers} workers each gets "
            "{repartition_ids_per_ms_per_worker} per ms and the fleet keeps "
            "{repartition_ids_per_ms_fleet} — so the worker id, not the rate, is the scarce "
            "resource, and it is leased."
        )


def ids(a: IdsAssumptions = IdsAssumptions()) -> IdsPlan:
    """Size a Snowflake layout: rates per worker and fleet, range, the 4,096-worker split."""
    return IdsPlan.of(a)
