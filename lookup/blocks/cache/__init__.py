"""A distributed cache as a subject of its own (seed 004, "Design a Distributed Cache").

- :mod:`.eviction` — LRU, LFU, FIFO, Redis-style sampled LRU, W-TinyLFU (hand-written) and
  Belady's optimum; hit ratio against cache size on a trace;
- :mod:`.tier` — the cache tier the patterns use (``memory:`` or a ``redis://``), and
  :class:`~.tier.RingCache`, client-side consistent hashing over standalone redis-servers;
- :mod:`.store` — the source of truth behind them, a SQLite table that counts its loads;
- :mod:`.patterns` — cache-aside, read-through, write-through, write-behind, refresh-ahead;
- :mod:`.experiments` — the ring losing a node, the stampede, synchronised expiry, cold
  restart, refresh-ahead, a write-behind writer process killed (:mod:`.writer`);
- :mod:`.cluster` — the Redis Cluster failover drill (``kill -9`` a master under load).

The traces the curves run on (the shortener simulator's Zipf clicks, the typeahead query
log, a scan) are built by :mod:`lookup.datasets.cache_traces`: a block imports no system.
"""
