"""Everything that talks to an engine but knows no domain: SQLite, PostgreSQL, Redis, etcd.

An *engine* is a server the project talks to or starts for tests (the glossary); a *store*
is a seam's implementation that keeps data on one. This package holds the engine side
only — connections, clients, URLs, SQL spelling, throw-away servers — and no seam, table
or domain name. With the seams' adapters it is the only code that imports a driver
(``sqlite3``, ``psycopg``, ``redis``): ``tests/test_layers.py`` checks it.

Clients and connections:

* :mod:`.storeurl` — the URLs that pick a backend (``sqlite:///…``, ``memory:``, …);
* :mod:`.dialects` — SQL written once for several engines (placeholders, "any of a list");
* :mod:`.sqlite` — SQLite connections (WAL, busy timeout) and a per-thread pool;
* :mod:`.sqlitewriter` — the SQLite writer's path: a per-file writer lock, background
  WAL checkpoints;
* :mod:`.postgres` — ``PgPool`` and schema set-up under an advisory lock;
* :mod:`.redis` — the one way to open a Redis client (short timeouts, no hidden retries);
* :mod:`.etcd` — an etcd client for a URL; :mod:`.etcdlease` — the one fenced lease
  keep-alive, ``KeptLease``.

Throw-away servers (tests, drills, benchmarks, ``lookup up``):

* :mod:`.ports` — free loopback ports below the ephemeral range;
* :mod:`.launch` — the launchers' one rule: a server that lost the race for its port
  starts again on a fresh one;
* :mod:`.pgserver`, :mod:`.redisserver`, :mod:`.rediscluster`, :mod:`.etcdserver`;
* :mod:`.pgstandby` — a streaming read replica of a throw-away PostgreSQL, and
  ``replication_lag`` (bytes and seconds behind) for any replica.

Names are re-exported lazily (:mod:`lookup.kit.lazy`): importing one light module never
loads a driver.
"""

from __future__ import annotations

from lookup.kit.lazy import lazy_exports

_EXPORTS = {
    "StoreUrl": "lookup.kit.engines.storeurl",
    "parse_store_url": "lookup.kit.engines.storeurl",
    "sqlite_url": "lookup.kit.engines.storeurl",
    "SqlDialect": "lookup.kit.engines.dialects",
    "ConnectionPool": "lookup.kit.engines.sqlite",
    "WalCheckpointer": "lookup.kit.engines.sqlitewriter",
    "writer_lock": "lookup.kit.engines.sqlitewriter",
    "PgPool": "lookup.kit.engines.postgres",
    "redis_client": "lookup.kit.engines.redis",
    "etcd_client": "lookup.kit.engines.etcd",
    "KeptLease": "lookup.kit.engines.etcdlease",
    "free_port": "lookup.kit.engines.ports",
    "start_on_fresh_ports": "lookup.kit.engines.launch",
    "PostgresServer": "lookup.kit.engines.pgserver",
    "PostgresStandby": "lookup.kit.engines.pgstandby",
    "replication_lag": "lookup.kit.engines.pgstandby",
    "RedisServer": "lookup.kit.engines.redisserver",
    "RedisCluster": "lookup.kit.engines.rediscluster",
    "EtcdServer": "lookup.kit.engines.etcdserver",
}

__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
