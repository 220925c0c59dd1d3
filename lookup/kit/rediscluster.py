"""Old import path of the throw-away Redis Cluster, kept for one release.

Its names moved to :mod:`lookup.kit.engines.rediscluster`, with the rest of the kit's engine
plumbing (:mod:`lookup.kit.engines`); this module gives the very same objects.
"""

from __future__ import annotations

from lookup.kit.engines.rediscluster import SLOTS, ClusterNode, RedisCluster, cluster_available

__all__ = ["ClusterNode", "RedisCluster", "SLOTS", "cluster_available"]
