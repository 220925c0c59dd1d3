"""Unique-id drills: a Snowflake generator's clock steps backwards while it issues ids, and a
generator loses its worker-id lease while another process takes the same id.

The clock drill runs the real :class:`~lookup.blocks.ids.snowflake.Snowflake` on the wall
clock plus an offset that the drill moves back mid-stream; ``guard=False`` runs the same
class with its clock check taken out, as a generator without one would behave. The lease
drill is :func:`lookup.blocks.ids.drill.lease_loss_drill`: generator processes leasing
their worker id from a throw-away etcd.
"""

from __future__ import annotations

import time

from lookup.blocks.ids.drill import lease_loss_drill, shared_worker_drill
from lookup.blocks.ids.snowflake import SEED_LAYOUT, ClockMovedBackwards, Snowflake, wall_clock_ms
from lookup.study.drills_common import need, outcome
from lookup.study.measure import Drill, DrillOutcome

__all__ = ["IDS_DRILLS"]

CLOCK_CHOICES = {
    "refuse": "It stops issuing until its clock passes the last millisecond it used; no id repeats",
    "duplicate": "It goes on issuing, and some new ids repeat ids it issued before the jump",
    "unordered": "It goes on issuing unique ids, only no longer in time order",
    "unaffected": "Nothing visible happens: ids keep coming, unique and in order",
}


class _Unguarded(Snowflake):
    """The generator with its clock check taken out: an earlier ms is simply used."""

    def _now(self) -> int:
        return self._clock()


def snowflake_clock_backwards(step_ms: int = 100, before_ms: int = 150, after_ms: int = 100,
                              guard: bool = True, worker: int = 7) -> DrillOutcome:  # fmt: skip
    """Issue ids flat out for ``before_ms``, step the clock back ``step_ms``, issue for
    ``after_ms`` more (plus the step); refusals, duplicates and order counted."""
    step_ms, before_ms, after_ms = int(step_ms), int(before_ms), int(after_ms)
    if step_ms < 0 or before_ms < 10 or after_ms < 10:
        raise ValueError("need step_ms >= 0, before_ms >= 10 and after_ms >= 10")
    offset = [0]

    def clock() -> int:
        return wall_clock_ms() + offset[0]

    make = Snowflake if guard else _Unguarded
    gen = make(int(worker), clock=clock)
    ids: list[int] = []
    refused = 0
    first_refusal = last_refusal = None
    end = time.monotonic() + before_ms / 1000
    while time.monotonic() < end:
        ids.append(gen.next_id())
    before = len(ids)
    last_before_ms = SEED_LAYOUT.decode(ids[-1]).unix_ms
    offset[0] -= step_ms  # NTP steps the clock back
    stepped = time.monotonic()
    end = stepped + (step_ms + after_ms) / 1000
    while time.monotonic() < end:
        try:
            ids.append(gen.next_id())
        except ClockMovedBackwards:
            now = time.monotonic()
            refused += 1
            first_refusal = first_refusal if first_refusal is not None else now
            last_refusal = now
    stalled_ms = 0.0 if last_refusal is None else (last_refusal - stepped) * 1000
    duplicates = len(ids) - len(set(ids))
    out_of_order = sum(1 for a, b in zip(ids, ids[1:], strict=False) if b <= a)
    earlier = sum(1 for i in ids[before:] if SEED_LAYOUT.decode(i).unix_ms <= last_before_ms)
    if duplicates > 0:
        choice = "duplicate"
    elif refused > 0:
        choice = "refuse"
    elif out_of_order > 0:
        choice = "unordered"
    else:
        choice = "unaffected"
    figures = {"step back (ms)": step_ms, "guarded": float(bool(guard)),
               "ids before the step": before, "ids after the step": len(ids) - before,
               "calls refused": refused, "stalled for (ms)": round(stalled_ms, 1),
               "duplicate ids": duplicates, "ids not above the one before": out_of_order,
               "ids stamped at or before the last pre-step ms": earlier}  # fmt: skip
    summary = (
        f"The clock stepped back {step_ms} ms: {refused:,} calls refused over "
        f"{stalled_ms:.0f} ms, {duplicates:,} duplicate ids, {out_of_order:,} ids out "
        f"of order ({'with' if guard else 'without'} the clock check)."
    )
    chain = (
        f"Snowflake (41-bit ms | 10-bit worker | 12-bit sequence), worker {worker}, on the "
        f"wall clock {'with' if guard else 'without'} its clock-went-back check",
        f"ids issued flat out for {before_ms} ms ({before:,} ids)",
        f"the clock is moved back {step_ms} ms, then ids are asked for {step_ms + after_ms} ms",
        f"{refused:,} refusals (ClockMovedBackwards); {duplicates:,} duplicates among "
        f"{len(ids):,} ids; {out_of_order:,} not above their predecessor",
        "choice: a duplicate → duplicate; a refusal → refuse; out of order → unordered; "
        "otherwise → unaffected",
    )
    return outcome(CLOCK_CHOICES, choice, figures, summary, chain)


LEASE_CHOICES = {
    "stops": "The old process stops issuing by its lease deadline, and the new holder of "
    "the worker id never repeats one of its ids",
    "duplicates": "For a while both issue ids on the same worker id, and some ids repeat",
    "blocked": "The new process cannot get the worker id until the old one is restarted",
}


def snowflake_lease_lost(lease: bool = True, how: str = "revoke", ttl_s: float = 2.0,
                         count: int = 200_000) -> DrillOutcome:  # fmt: skip
    """A generator process streams ids on a leased worker id; its lease is lost (``revoke``
    in etcd, or etcd frozen: ``pause``) and a second process takes the same id.

    ``lease=False`` is the same pair with no lease at all — both processes started on the
    same fixed worker id — and ``count`` ids each.
    """
    if how not in ("revoke", "pause") or ttl_s < 2 or int(count) < 1000:
        raise ValueError(
            "how is revoke or pause; ttl_s >= 2 (etcd leases are whole seconds); count >= 1000"
        )
    if lease:
        need("etcd", drill="snowflake_lease_lost")
        from lookup.kit.engines.etcdserver import EtcdServer

        with EtcdServer() as etcd:
            got = lease_loss_drill(etcd, how=how, ttl=float(ttl_s))
        duplicates = int(got["duplicates_old_vs_new"])
        new_issued = int(got["new_holder_issued"])
        old_issued = int(got["issued_before_stop"])
        stop_ms = got["time_to_stop_ms"]
        after_loss = got["last_id_after_loss_ms"]
        figures = {
            "lease ttl (s)": ttl_s,
            "old holder issued": old_issued,
            "new holder issued": new_issued,
            "duplicates old vs new": duplicates,
            "old holder stopped after (ms)": -1 if stop_ms is None else stop_ms,
            "its last id after the loss (ms)": -1 if after_loss is None else after_loss,
        }
        steps: tuple[str, ...] = (
            f"a generator process leases worker id 5 from etcd (TTL {ttl_s:g} s) and streams ids",
            f"its lease is lost ({'revoked in etcd' if how == 'revoke' else 'etcd frozen'})"
            f"; it stopped after {stop_ms} ms with {old_issued:,} ids issued",
            f"a second process waits for the worker id and issues {new_issued:,} ids",
        )
    else:
        got_pair = shared_worker_drill(processes=2, count=int(count), worker=5)
        duplicates, new_issued = got_pair.duplicates, got_pair.per_process
        old_issued = got_pair.per_process
        figures = {
            "processes": 2,
            "ids each": got_pair.per_process,
            "duplicates old vs new": duplicates,
            "new holder issued": new_issued,
            "ms both issued in": got_pair.shared_ms,
        }
        steps = (
            "no lease: two generator processes both configured with worker id 5",
            f"both issue {got_pair.per_process:,} ids at the same time",
        )
    if duplicates > 0:
        choice = "duplicates"
    elif new_issued == 0:
        choice = "blocked"
    else:
        choice = "stops"
    summary = (
        f"{'With a lease' if lease else 'Without a lease'}: the old holder issued "
        f"{old_issued:,} ids, the new one {new_issued:,}; {duplicates:,} ids repeat."
    )
    chain = (
        *steps,
        f"every id of both processes compared: {duplicates:,} duplicates",
        "choice: a duplicate → duplicates; the new holder issued none → blocked; otherwise → stops",
    )
    return outcome(LEASE_CHOICES, choice, figures, summary, chain)


IDS_DRILLS: dict[str, Drill] = {
    "snowflake_clock_backwards": Drill(
        "snowflake_clock_backwards",
        "A Snowflake worker's clock moves backwards",
        CLOCK_CHOICES,
        snowflake_clock_backwards,
        {"step_ms": 100, "before_ms": 150, "after_ms": 100, "guard": True, "worker": 7},
    ),
    "snowflake_lease_lost": Drill(
        "snowflake_lease_lost",
        "A Snowflake generator loses its worker-id lease",
        LEASE_CHOICES,
        snowflake_lease_lost,
        {"lease": True, "how": "revoke", "ttl_s": 2.0, "count": 200_000},
        requires=("etcd",),
    ),
}
