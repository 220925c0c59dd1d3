"""The drills with real processes and a real etcd (seed 004's hazards, measured).

No timing assertions beyond "within the TTL plus a generous margin": the checks are on
order — no id stamped after the holder's deadline or reservation, no id of the old
holder issued again by the new one.
"""

from __future__ import annotations

import pytest

from lookup.blocks.ids.drill import (
    duplicate_causes,
    fleet_drill,
    lease_loss_drill,
    shared_worker_drill,
)
from lookup.blocks.ids.etcd import EtcdServer

MARGIN_MS = 15_000  # two shared cores: a generous allowance for a starved process


def test_eight_processes_through_etcd_leases_never_duplicate(etcd: EtcdServer) -> None:
    result = fleet_drill(etcd.url, processes=8, count=100_000, ttl=5)
    print(
        f"\nfleet: {result.total:,} ids, {result.duplicates} duplicates, "
        f"{result.ids_per_s:,.0f} ids/s, workers {sorted(result.workers)}"
    )
    assert result.total == 800_000
    assert result.duplicates == 0 and result.distinct == 800_000
    assert all(result.strictly_increasing)
    assert len(set(result.workers)) == 8


def test_two_processes_on_one_worker_id_without_leases_duplicate() -> None:
    result = shared_worker_drill(processes=2, count=200_000, worker=7)
    print(
        f"\nshared worker id: {result.duplicates:,} duplicates in {result.total:,} ids, "
        f"{result.shared_ms} milliseconds in which both issued"
    )
    assert result.workers == [7, 7]
    assert all(result.strictly_increasing)  # each process alone is fine ...
    assert result.duplicates > 0  # ... together they collide
    assert result.shared_ms > 0  # and only in the milliseconds both issued in
    assert result.distinct + result.duplicates == result.total


@pytest.mark.parametrize("how", ["revoke", "pause"])
def test_a_lost_lease_stops_the_stream_and_the_next_holder_repeats_nothing(
    own_etcd: EtcdServer, how: str
) -> None:
    ttl = 2.0
    r = lease_loss_drill(own_etcd, how=how, ttl=ttl)
    print(
        f"\nlease loss by {how}: stopped {r['time_to_stop_ms']} ms after the loss "
        f"({r['stopped_because']}); last id {r['last_id_after_loss_ms']} ms after; "
        f"{r['issued_before_stop']:,} ids before; new holder {r['new_holder_issued']:,} ids, "
        f"{r['duplicates_old_vs_new']} duplicates"
    )
    assert r["issued_before_stop"] > 0 and r["stopped_at_ms"] is not None
    assert r["last_id_ms"] <= r["reserved_ms"]  # never past what it reserved in etcd
    assert r["last_id_ms"] <= r["deadline_ms"] or how == "revoke"
    if how == "pause":
        assert "deadline" in r["stopped_because"]
    assert r["time_to_stop_ms"] <= ttl * 1000 + MARGIN_MS
    assert r["new_holder_issued"] == 20_000
    assert r["new_holder_first_ms"] > r["last_id_ms"]
    assert r["duplicates_old_vs_new"] == 0


def test_every_cause_of_a_duplicate_is_measured_and_guarded() -> None:
    rows = duplicate_causes()
    assert len(rows) == 4
    for row in rows:
        assert row["duplicates without guard"] > 0, row["cause"]
        assert row["duplicates with guard"] == 0, row["cause"]
    clock = next(r for r in rows if "clock" in r["cause"])
    assert clock["refused"] > 0
