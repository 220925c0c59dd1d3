"""Lab kinds over the throw-away servers and the blocks' own process groups.

Each class adapts a launcher that already exists — :class:`RedisServer`,
:class:`RedisCluster`, :class:`KvCluster`, :class:`GeneratorFleet` — to
:class:`~lookup.labs.core.Lab`; the page drives the object itself (``lab.server``,
``lab.cluster``, ``lab.fleet``) and the supervisor owns its lifetime.
"""

from __future__ import annotations

from lookup.blocks.ids.fleet import GeneratorFleet
from lookup.blocks.kv.cluster import KvCluster
from lookup.kit.engines.etcdserver import etcd_available
from lookup.kit.engines.rediscluster import RedisCluster, cluster_available
from lookup.kit.engines.redisserver import RedisServer, redis_available
from lookup.labs.core import Lab

__all__ = ["IdLeaseLab", "KvClusterLab", "RedisClusterLab", "RedisLab", "available"]


def available(kind: str) -> bool:
    """True when the programs a lab of ``kind`` runs are installed here."""
    from lookup import settings
    from lookup.kit.engines.pgserver import postgres_available

    checks = {
        "redis": redis_available,
        "redis-cluster": cluster_available,
        "id-leases": lambda: bool(settings.get("etcd_url")) or etcd_available(),
        "crawl-fleet": lambda: etcd_available() and postgres_available(),
    }
    check = checks.get(kind)
    return True if check is None else bool(check())


class RedisLab(Lab):
    """One throw-away ``redis-server`` (``lab.server``; ``addresses()["url"]``)."""

    kind = "redis"

    def __init__(self, key: str = "") -> None:
        super().__init__(key)
        self.server = RedisServer()

    @property
    def url(self) -> str:
        return self.server.url

    def start(self) -> None:
        self.server.start()

    def close(self) -> None:
        self.server.close()

    def pids(self) -> list[int]:
        proc = self.server.proc
        return [proc.pid] if proc is not None and proc.poll() is None else []

    def alive(self) -> bool:
        return bool(self.pids())

    def addresses(self) -> dict[str, str]:
        return {"url": self.server.url} if self.server.port else {}


class RedisClusterLab(Lab):
    """A Redis Cluster on loopback (``lab.cluster``: 3 masters + 3 replicas by default)."""

    kind = "redis-cluster"

    def __init__(self, key: str = "", *, masters: int = 3, replicas: int = 1) -> None:
        super().__init__(key)
        self.cluster = RedisCluster(masters, replicas)

    def start(self) -> None:
        self.cluster.start()

    def close(self) -> None:
        self.cluster.close()

    def pids(self) -> list[int]:
        return [n.proc.pid for n in self.cluster.nodes if n.proc is not None and n.alive()]

    def alive(self) -> bool:
        # the failover drill kills one node and restarts it: the cluster lives on
        return any(n.alive() for n in self.cluster.nodes)

    def addresses(self) -> dict[str, str]:
        return {f"node {n.port}": f"redis://{n.address}/0" for n in self.cluster.nodes}


class KvClusterLab(Lab):
    """The Dynamo-style store's storage nodes (``lab.cluster``), ``size`` of them at ``n``."""

    kind = "kv-cluster"

    def __init__(self, key: str = "", *, size: int = 4, n: int = 3) -> None:
        super().__init__(key)
        self.size, self.n = size, n
        self.cluster: KvCluster | None = None

    def start(self) -> None:
        self.cluster = KvCluster(size=self.size, n=self.n)
        self.cluster.start()

    def close(self) -> None:
        if self.cluster is not None:
            self.cluster.stop()

    def pids(self) -> list[int]:
        if self.cluster is None:
            return []
        return [p.pid for p in self.cluster.procs.values() if p.poll() is None]

    def alive(self) -> bool:
        # the page kills, freezes and restarts nodes: the lab lives while one process does
        return bool(self.pids())

    def addresses(self) -> dict[str, str]:
        return dict(self.cluster.urls) if self.cluster is not None else {}

    def paths(self) -> list[str]:
        return [str(self.cluster.work)] if self.cluster is not None else []


class IdLeaseLab(Lab):
    """Snowflake generators each leasing a worker id from etcd (``lab.fleet``)."""

    kind = "id-leases"

    def __init__(self, key: str = "", *, ttl_s: float = 3.0, generators: int = 3) -> None:
        super().__init__(key)
        self.generators = generators
        self.fleet = GeneratorFleet(ttl_s=ttl_s)

    def start(self) -> None:
        self.fleet.start(self.generators)

    def close(self) -> None:
        self.fleet.stop()

    def _etcd_alive(self) -> bool:
        server = self.fleet.server
        return server is not None and server.proc is not None and server.proc.poll() is None

    def pids(self) -> list[int]:
        found = [p.pid for p in self.fleet.procs.values() if p.poll() is None]
        if self._etcd_alive():
            assert self.fleet.server is not None and self.fleet.server.proc is not None
            found.insert(0, self.fleet.server.proc.pid)
        return found

    def alive(self) -> bool:
        # the generators are what the page kills; the lab is its etcd (or a configured one)
        return self._etcd_alive() if self.fleet.server is not None else bool(self.pids())

    def addresses(self) -> dict[str, str]:
        return {"etcd": self.fleet.etcd_url} if self.fleet.etcd_url else {}

    def paths(self) -> list[str]:
        return [str(self.fleet.work)]
