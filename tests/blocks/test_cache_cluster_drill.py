"""Drill: kill -9 a Redis Cluster master under load. Measured: failover time, reads answered
as misses (never an exception to the caller), acknowledged writes lost to asynchronous
replication."""

from __future__ import annotations

import pytest

from lookup import settings
from lookup.blocks.cache.cluster import failover_drill
from lookup.kit.rediscluster import RedisCluster, cluster_available


def test_kill_a_master_under_load() -> None:
    if not cluster_available():
        if settings.get("require_servers"):
            pytest.fail("redis-server/redis-cli missing and LOOKUP_REQUIRE_SERVERS is set")
        pytest.skip("redis-server/redis-cli missing")
    with RedisCluster(node_timeout_ms=1000) as cluster:
        report = failover_drill(cluster, before_s=1.0, after_s=2.0)
        print({k: v for k, v in report.items() if k != "timeline"})
        assert report["errors reaching the caller"] == 0
        assert report["new master port"] != report["victim port"]
        # generous bound: node timeout 1 s, then an election; the machine is loaded
        assert report["failover (s)"] is not None and report["failover (s)"] < 15
        assert report["client recovered (s)"] is not None
        assert report["reads"].get("failed → miss", 0) > 0  # the dead master cost misses
        assert report["reads"].get("hit", 0) > 0  # the other masters kept answering
        # whatever was lost was on the dead master, acknowledged just before the kill
        assert report["lost on the victim"] == report["acknowledged writes lost"]
        assert report["acknowledged writes lost"] < report["acknowledged writes"]
        # after the drill the cluster is whole again with 3 serving masters
        assert len(cluster.masters()) == 3


def test_a_lagging_replica_loses_only_writes_acknowledged_during_its_lag() -> None:
    """The replica is frozen (SIGSTOP) 0.8 s before the master's kill -9 and thawed after:
    whatever is lost (socket buffers often carry the whole backlog, so it may be nothing)
    was acknowledged by the dead master while its replica lagged — or just before the
    freeze, still on its way to the replica when it froze. So the bound is the lag plus
    one more lag of slack for that stream, inside a run that writes for 2.5 s before the
    kill: what was acknowledged in its first 0.9 s must never be lost. (A count bound,
    "no more than were acknowledged during the lag", failed on a loaded machine: 1,284
    lost against 892, the stream's backlog at the freeze.)"""
    if not cluster_available():
        if settings.get("require_servers"):
            pytest.fail("redis-server/redis-cli missing and LOOKUP_REQUIRE_SERVERS is set")
        pytest.skip("redis-server/redis-cli missing")
    with RedisCluster(node_timeout_ms=1000) as cluster:
        lag = 0.8
        report = failover_drill(cluster, before_s=2.5, after_s=1.0, replica_lag_s=lag,
                                value_bytes=16_384)  # fmt: skip
        print({k: v for k, v in report.items() if k != "timeline"})
        assert report["errors reaching the caller"] == 0
        assert report["lost on the victim"] == report["acknowledged writes lost"]
        if report["acknowledged writes lost"]:
            assert report["lost acknowledged within (s) before the kill"] <= lag + lag
        assert len(cluster.masters()) == 3
