"""Scenario drills: each triggers a real failure, and its outcome comes from what it measured.

For every drill, one input that should flip the outcome is changed and the choice and the
figures are checked to move the way the mechanism says (hedging on and off, single-flight
on and off, R + W above or below N, a fence or none ...). Drills needing servers start
their own throw-away ones; here they are skipped when the binary is missing, and fail
instead under ``LOOKUP_REQUIRE_SERVERS`` (``.ci/run``). No assertion is on a duration.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from lookup import settings
from lookup.errors import Unavailable
from lookup.study.bank import bank
from lookup.study.drills import DRILLS, SERVERS, run_drill, server_available
from tests.study.drill_checks import run_checked as _run

#: The drills that run with no server, each exercised at its defaults below.
EMBEDDED = {"redirect_cache_dies", "hot_key_stampede", "replica_isolated", "slow_search_shard",
            "snowflake_clock_backwards", "bad_snapshot_published", "trending_spike",
            "place_added_while_serving"}  # fmt: skip


def _need(*servers: str) -> None:
    """Skip without the server's binary; fail instead under LOOKUP_REQUIRE_SERVERS."""
    for name in servers:
        if server_available(name):
            continue
        if settings.get("require_servers"):
            pytest.fail(f"{SERVERS[name]} is missing and LOOKUP_REQUIRE_SERVERS is set (.ci/run)")
        pytest.skip(f"{SERVERS[name]} is missing")


# ----------------------------------------------------------------------------- the registry


def test_the_registry_names_its_drills_and_their_choices() -> None:
    assert len(DRILLS) >= 8
    assert EMBEDDED == {name for name, d in DRILLS.items() if not d.requires}
    for name, drill in DRILLS.items():
        assert drill.name == name and drill.title
        assert 3 <= len(drill.choices) <= 4, name
        assert set(drill.requires) <= set(SERVERS), name
        assert all(isinstance(v, (int, float, str, bool)) for v in drill.params.values())


def test_every_drill_has_an_item_and_every_drill_item_names_a_drill() -> None:
    items = [i for i in bank().values() if i.kind == "drill"]
    named = {i.checker.drill for i in items if i.checker}
    assert named == set(DRILLS), set(DRILLS) ^ named
    for item in items:
        assert item.checker is not None and item.checker.drill in DRILLS
        assert set(item.checker.params) <= set(DRILLS[item.checker.drill].params), item.id
    systems = {i.system for i in items}
    assert {"shortener", "cache", "kv", "search", "crawler", "ids", "ratelimit"} <= systems


def test_unknown_drills_and_parameters_are_refused_by_name() -> None:
    with pytest.raises(KeyError, match="no drill 'nope'"):
        run_drill("nope")
    with pytest.raises(ValueError, match="takes no parameter colour"):
        run_drill("hot_key_stampede", colour="blue")


@pytest.mark.parametrize("name", sorted(n for n, d in DRILLS.items() if d.requires))
def test_a_drill_whose_server_is_missing_says_which(name: str, monkeypatch: pytest.MonkeyPatch,
                                                    tmp_path: Path) -> None:  # fmt: skip
    monkeypatch.setenv("LOOKUP_REDIS_BIN", "/nonexistent/redis-server")
    monkeypatch.setenv("LOOKUP_ETCD_BIN", "/nonexistent/etcd")
    monkeypatch.setenv("LOOKUP_POSTGRES_BIN", str(tmp_path))  # a directory without initdb
    drill = DRILLS[name]
    first = drill.requires[0]
    for call in (lambda: run_drill(name), lambda: drill.run(**drill.params)):
        with pytest.raises(Unavailable) as got:
            call()
        assert got.value.code == "SERVER_MISSING" and got.value.extra == {"server": first}
        assert SERVERS[first].split(" ")[0] in str(got.value) and name in str(got.value)


# ----------------------------------------------------------------------------- embedded drills


def test_redirects_survive_the_tier_but_the_store_takes_its_misses() -> None:
    down = _run("redirect_cache_dies")
    f = down.figures
    assert down.choice == "store"
    assert f["failed redirects"] == 0
    assert f["share reaching the store after"] > 2 * f["share reaching the store before"]
    assert f["store reads after"] > f["store reads before"]
    # every link already in every process's own cache: the tier's death is not seen
    held = _run("redirect_cache_dies", l1_size=1000)
    assert held.choice == "absorbed"
    assert held.figures["store reads after"] == 0
    assert held.figures["share reaching the store after"] < f["share reaching the store after"]


def test_single_flight_turns_a_stampede_into_one_load() -> None:
    guarded = _run("hot_key_stampede")
    assert guarded.choice == "one" and guarded.figures["database loads"] == 1
    assert guarded.figures["answered"] == guarded.figures["callers"]
    herd = _run("hot_key_stampede", single_flight=False, callers=100)
    assert herd.choice == "all" and herd.figures["database loads"] >= 50
    assert herd.figures["database loads"] > guarded.figures["database loads"]


def test_an_isolated_replica_gives_stale_reads_at_w1_r1_and_none_at_a_quorum() -> None:
    loose = _run("replica_isolated", ops=80)
    assert loose.choice == "stale"
    assert loose.figures["stale reads while cut off"] > 0
    assert loose.figures["acknowledged writes lost"] == 0
    quorum = _run("replica_isolated", w=2, r=2, ops=80)
    assert quorum.choice in ("refused", "fine")
    assert quorum.figures["stale reads while cut off"] == 0
    assert quorum.figures["stale reads after it returned"] == 0
    assert quorum.figures["R+W>N"] == 1.0 and loose.figures["R+W>N"] == 0.0


def test_hedging_hides_a_slow_shard_and_a_deadline_trades_it_for_partial_answers() -> None:
    hedged = _run("slow_search_shard", delay_ms=400.0, queries=12)
    assert hedged.choice == "hedged"
    assert hedged.figures["hedge wins"] > 0 and hedged.figures["partial answers"] == 0
    waited = _run("slow_search_shard", delay_ms=400.0, queries=12, hedge=False)
    assert waited.choice == "tail"
    assert waited.figures["hedges fired on the slow shard"] == 0
    assert (
        waited.figures["queries at least half the delay"]
        > hedged.figures["queries at least half the delay"]
    )
    # relative to the same run's healthy queries, with a wide margin
    assert waited.figures["median (ms)"] > 10 * waited.figures["healthy median (ms)"]
    cut = _run("slow_search_shard", delay_ms=400.0, queries=12, hedge=False, deadline_ms=60.0)
    assert cut.choice == "partial" and cut.figures["partial answers"] == 12


def test_a_clock_step_back_is_refused_with_the_guard_and_duplicates_without() -> None:
    guarded = _run("snowflake_clock_backwards")
    assert guarded.choice == "refuse"
    assert guarded.figures["calls refused"] > 0 and guarded.figures["duplicate ids"] == 0
    assert guarded.figures["ids not above the one before"] == 0
    # Without the check a repeat needs an id issued in a millisecond that was also used
    # before the step; wider windows make that certain even when the scheduler starves
    # this process for tens of milliseconds on a loaded machine.
    naive = _run("snowflake_clock_backwards", guard=False, step_ms=300, before_ms=600,
                 after_ms=100)  # fmt: skip
    assert naive.choice == "duplicate" and naive.figures["duplicate ids"] > 0
    assert naive.figures["calls refused"] == 0
    still = _run("snowflake_clock_backwards", step_ms=0)
    assert still.choice == "unaffected" and still.figures["calls refused"] == 0


def test_two_generators_on_one_worker_id_without_a_lease_collide() -> None:
    got = _run("snowflake_lease_lost", lease=False)  # no etcd needed: nobody leases
    assert got.choice == "duplicates" and got.figures["duplicates old vs new"] > 0


# ----------------------------------------------------------------------------- with servers


def test_kill_9_of_the_shortener_redis_moves_the_misses_to_the_store() -> None:
    _need("redis")
    got = _run("redirect_cache_dies_redis")
    assert got.choice == "store" and got.figures["failed redirects"] == 0
    assert got.figures["store reads after"] > got.figures["store reads before"]


def test_a_dead_ring_node_costs_its_share_and_mod_n_costs_most_keys() -> None:
    _need("redis")
    ring = _run("ring_node_killed")
    assert ring.choice == "share"
    share = ring.figures["dead node's share"]
    assert ring.figures["miss share with the node dead"] == pytest.approx(share)
    assert ring.figures["miss share after it was dropped"] <= share + 0.01
    mod = _run("ring_node_killed", placement="mod")
    assert mod.choice == "most"
    assert mod.figures["miss share after it was dropped"] > 0.5
    assert (
        mod.figures["miss share after it was dropped"]
        > ring.figures["miss share after it was dropped"]
    )


def test_write_behind_loses_its_last_unflushed_acks_and_write_through_none() -> None:
    _need("redis")
    behind = _run("write_behind_crash")
    assert behind.choice == "recent"
    assert 0 < behind.figures["acknowledged but lost"] < behind.figures["acknowledged"]
    through = _run("write_behind_crash", mode="write-through")
    assert through.choice == "none" and through.figures["acknowledged but lost"] == 0


def test_the_limiters_outage_policy_decides_who_gets_through() -> None:
    _need("redis")
    local = _run("ratelimit_store_down")
    f = local.figures
    assert local.choice == "local"
    assert 0 < f["abuser admitted with Redis down"] <= 2 * f["limit per minute"]
    assert f["ordinary client admitted with Redis down (of 3)"] == 3
    assert f["calls that found Redis unavailable"] > 0
    opened = _run("ratelimit_store_down", on_unavailable="open")
    assert opened.choice == "open"
    assert (
        opened.figures["abuser admitted with Redis down"] == opened.figures["attempts each phase"]
    )
    closed = _run("ratelimit_store_down", on_unavailable="closed")
    assert closed.choice == "closed"
    assert closed.figures["abuser admitted with Redis down"] == 0
    assert closed.figures["ordinary client admitted with Redis down (of 3)"] == 0


def test_a_thawed_worker_is_fenced_out_and_without_a_fence_writes_beside_the_new_owner() -> None:
    _need("postgres", "etcd")
    fenced = _run("frozen_crawler_worker")
    f = fenced.figures
    assert fenced.choice == "fenced"
    assert f["partitions taken over"] == f["partitions"]
    assert f["frozen worker's writes accepted after the takeover"] == 0
    assert (
        f["its writes refused by the store (old epoch)"]
        + f["its writes that failed (transaction ended by the server)"]
        + f["requests it held back itself (lease past deadline)"]
        > 0
    )
    assert f["new owner's writes accepted"] == f["partitions"]
    trusting = _run("frozen_crawler_worker", fencing=False)
    assert trusting.choice == "both"
    assert trusting.figures["frozen worker's writes accepted after the takeover"] > 0


def test_a_lost_lease_stops_the_generator_before_the_new_holder_starts() -> None:
    _need("etcd")
    got = _run("snowflake_lease_lost")
    assert got.choice == "stops"
    assert got.figures["duplicates old vs new"] == 0 and got.figures["new holder issued"] > 0
