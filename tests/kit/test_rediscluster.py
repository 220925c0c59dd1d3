"""The throw-away Redis Cluster: 3 masters + 3 replicas, every slot served, keys routed by
slot (CRC16 mod 16384) — checked against redis-py's own slot function and the server's
``CLUSTER KEYSLOT``."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from lookup import settings
from lookup.kit.engines.rediscluster import SLOTS, RedisCluster, cluster_available


@pytest.fixture(scope="module")
def cluster() -> Iterator[RedisCluster]:
    if not cluster_available():
        if settings.get("require_servers"):
            pytest.fail("redis-server/redis-cli missing and LOOKUP_REQUIRE_SERVERS is set")
        pytest.skip("redis-server/redis-cli missing (apt-get install redis-server)")
    with RedisCluster() as c:
        yield c


def test_three_masters_each_with_a_replica_cover_every_slot(cluster: RedisCluster) -> None:
    rows = cluster.topology()
    masters = [r for r in rows if r["role"] == "master"]
    replicas = [r for r in rows if r["role"] == "replica"]
    assert len(masters) == 3 and len(replicas) == 3
    assert sorted(r["master_id"] for r in replicas) == sorted(m["id"] for m in masters)
    covered = sorted(s for m in masters for lo, hi in m["slots"] for s in range(lo, hi + 1))
    assert covered == list(range(SLOTS))
    assert all(n.port + 10_000 < 65_536 for n in cluster.nodes)


def test_keys_route_by_slot_through_the_cluster_client(cluster: RedisCluster) -> None:
    from lookup.blocks.cache.cluster import ClusterCache, key_slot

    cache = ClusterCache(cluster.startup_nodes)
    try:
        for i in range(60):
            key = f"route:{i}"
            assert cache.set(key, str(i))
            slot = key_slot(key)
            owner = cluster.master_of_slot(slot)
            direct = cache.client.get_node(host="127.0.0.1", port=owner)
            assert cache.client.execute_command("CLUSTER KEYSLOT", key) == slot
            assert direct.redis_connection.get(key) == str(i).encode()
        # a hash tag puts keys on one slot, whatever follows it
        assert key_slot("{user:7}:cart") == key_slot("{user:7}:profile")
    finally:
        cache.close()


def test_bad_shape_is_refused() -> None:
    with pytest.raises(ValueError, match="3 masters"):
        RedisCluster(masters=2)


def test_a_node_whose_bus_port_was_taken_starts_again_on_fresh_ports(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Between the free-port check and the bind another process can take a node's port or
    its bus port (+10000); that node exits at once and is started again on fresh ports."""
    if not cluster_available():
        pytest.skip("redis-server/redis-cli missing (apt-get install redis-server)")
    import socket

    from lookup.kit.engines import rediscluster

    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    port = taken.getsockname()[1] - 10_000  # a node on it finds its bus port in use
    real = rediscluster._cluster_port
    handed: list[int] = []

    def first_one_taken() -> int:
        handed.append(port if not handed and port > 1024 else real())
        return handed[-1]

    monkeypatch.setattr(rediscluster, "_cluster_port", first_one_taken)
    try:
        with RedisCluster() as c:
            assert port not in [n.port for n in c.nodes] and len(c.nodes) == 6
            assert len(handed) >= 7  # that node started again (another may have been too)
            assert c.info(c.nodes[0].port).get("cluster_state") == "ok"
    finally:
        taken.close()
