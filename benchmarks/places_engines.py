"""PostGIS and Redis ``GEOSEARCH`` as peer anchors of ``bench_places.py``'s radius table.

Each engine runs as a throw-away server started here (:mod:`lookup.kit.engines.pgserver`,
:mod:`lookup.kit.engines.redisserver`), is loaded with the very places the in-memory index
holds — PostGIS by ``COPY`` into a table with a GiST-indexed ``geography`` column
(:func:`lookup.geo.postgis.create_points_table`), Redis by ``GEOADD`` in pipelined
batches — and answers the same radius queries in the same run, one round trip each over
loopback, returning place numbers as the index does.

The spheres differ: ours has radius 6,371,000 m, PostGIS's (``use_spheroid = false``)
6,371,008.77 m and Redis's 6,372,797.56 m. Each engine is asked for the same *angle*
(the radius scaled by the ratio of the spheres), so the answers are comparable; what is
left is rounding at the edge — and for Redis the 52-bit geohash its points are stored
as (≈0.6 m), so a place within :data:`REDIS_EDGE_M` of the circle may fall either way.
Redis cannot hold a point beyond ±85.05112878° latitude (Web Mercator's limit): such
places are not loaded and counted.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from pathlib import Path
from types import TracebackType
from typing import Any

import numpy as np

from lookup.geo.geohash import EARTH_RADIUS_M

#: Engines this module can run, in the table's order.
ENGINES = ("postgis", "redis")
LABELS = {"postgis": "PostGIS ST_DWithin", "redis": "Redis GEOSEARCH"}
#: Redis's Earth radius (``EARTH_RADIUS_IN_METERS`` in its geohash_helper.c).
REDIS_EARTH_M = 6_372_797.560856
#: The latitudes Redis accepts (GEOADD refuses beyond).
REDIS_MAX_LAT = 85.05112878
#: How near the circle's edge Redis's quantised points may disagree with exact ones.
REDIS_EDGE_M = 1.0
#: Members per pipelined GEOADD.
REDIS_BATCH = 10_000
TABLE = "bench_places"
KEY = "bench:places"

Query = Callable[[float, float, float], np.ndarray]


def missing(names: Sequence[str]) -> dict[str, str]:
    """Engine → why it cannot run here (nothing for those that can)."""
    from lookup.kit.engines.pgserver import postgres_bin
    from lookup.kit.engines.redisserver import redis_available

    out: dict[str, str] = {}
    if "postgis" in names:
        pg = postgres_bin()
        if pg is None:
            out["postgis"] = "PostgreSQL is not installed (apt-get install postgresql)"
        else:
            version = pg.parent.name
            control = Path(f"/usr/share/postgresql/{version}/extension/postgis.control")
            if not control.is_file():
                out["postgis"] = f"PostGIS is not installed (postgresql-{version}-postgis-3)"
    if "redis" in names and not redis_available():
        out["redis"] = "redis-server is not installed (apt-get install redis-server)"
    return out


def edge_m(name: str, radius: float) -> float:
    """How near the edge a disagreement with the exact answer is rounding, for ``name``."""
    from lookup.geo.postgis import slack_m

    return slack_m(radius) if name == "postgis" else REDIS_EDGE_M + 1e-7 * radius


class EngineAnchors:
    """The engines named, started on enter and stopped on exit; :meth:`load` then
    :meth:`queries` gives each one's radius query (our metres in, place numbers out)."""

    def __init__(self, names: Sequence[str]) -> None:
        self.names = [n for n in ENGINES if n in names]
        self._stack = ExitStack()
        self._postgis: Any = None
        self._redis: Any = None
        #: engine → seconds its load took (COPY + GiST index + ANALYZE; GEOADD)
        self.load_s: dict[str, float] = {}
        #: places Redis could not hold (beyond its latitudes)
        self.redis_skipped = 0

    def __enter__(self) -> EngineAnchors:
        try:
            if "postgis" in self.names:
                from lookup.geo.postgis import PostgisIndex
                from lookup.kit.engines.pgserver import PostgresServer

                server = self._stack.enter_context(PostgresServer())
                self._postgis = PostgisIndex(server.url, TABLE, pool_size=1)
                self._stack.callback(self._postgis.close)
            if "redis" in self.names:
                from lookup.kit.engines.redis import redis_client
                from lookup.kit.engines.redisserver import RedisServer

                rserver = self._stack.enter_context(RedisServer())
                self._redis = redis_client(rserver.url, timeout_s=30.0)
                self._stack.callback(self._redis.close)
        except BaseException:
            self._stack.close()
            raise
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stack.close()

    def load(self, nums: np.ndarray, lat: np.ndarray, lng: np.ndarray) -> dict[str, float]:
        """Put the places (numbers and points, the index's rows) into every engine."""
        if self._postgis is not None:
            from lookup.geo.postgis import create_points_table

            t = time.perf_counter()
            rows = zip(nums.tolist(), lat.tolist(), lng.tolist(), strict=True)
            create_points_table(
                self._postgis.url, ((n, str(n), a, b, "", None) for n, a, b in rows), table=TABLE
            )
            self.load_s["postgis"] = time.perf_counter() - t
        if self._redis is not None:
            t = time.perf_counter()
            ok = np.abs(lat) <= REDIS_MAX_LAT
            self.redis_skipped = int((~ok).sum())
            flat = np.stack([lng[ok], lat[ok], nums[ok].astype(np.float64)], axis=1)
            pipe = self._redis.pipeline(transaction=False)
            for start in range(0, len(flat), REDIS_BATCH):
                chunk = flat[start : start + REDIS_BATCH]
                values: list[Any] = []
                for x, y, n in chunk.tolist():
                    values += [x, y, int(n)]
                pipe.geoadd(KEY, values)
            pipe.execute()
            self.load_s["redis"] = time.perf_counter() - t
        return self.load_s

    def queries(self) -> dict[str, Query]:
        """Each engine's radius query, keyed by its row label."""
        out: dict[str, Query] = {}
        if self._postgis is not None:
            postgis = self._postgis
            out[LABELS["postgis"]] = postgis.radius_nums
        if self._redis is not None:
            client, scale = self._redis, REDIS_EARTH_M / EARTH_RADIUS_M

            def geosearch(qlat: float, qlng: float, r: float) -> np.ndarray:
                found = client.geosearch(
                    KEY, longitude=qlng, latitude=qlat, radius=r * scale, unit="m"
                )
                return np.array([int(m) for m in found], dtype=np.int64)

            out[LABELS["redis"]] = geosearch
        return out
