"""A distributed cache as a subject of its own (seed 004, "Design a Distributed Cache").

- :mod:`.eviction` — LRU, LFU, FIFO, Redis-style sampled LRU, W-TinyLFU (hand-written) and
  Belady's optimum; hit ratio against cache size on a trace;
- :mod:`.cluster` — the Redis Cluster failover drill (kill -9 a master under load);
- :mod:`.ringcache` — client-side consistent hashing over standalone redis-servers;
- :mod:`.patterns` — cache-aside, read-through, write-through, write-behind,
  refresh-ahead on a real Redis, and the stampede, synchronised-expiry and cold-restart
  experiments.

The traces the curves run on (the shortener simulator's Zipf clicks, the typeahead query
log, a scan) are built by :mod:`lookup.datasets.cache_traces`: a block imports no system.
"""
