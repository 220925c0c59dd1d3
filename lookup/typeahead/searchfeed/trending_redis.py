"""Trending windows in Redis: one set of counts and gates for every API process of a fleet.

With each process counting in its own memory, a spike sent to N servers needs N times the
traffic to trend, and the distinct-user and network gates (the brigade defences) count
only what one process saw. Here every process records into the same keys:

* ``<prefix>:c:<market>:<bucket>`` — a hash, query → searches in that one-minute bucket;
* ``<prefix>:u:<market>:<bucket>:<query>`` and ``…:n:…`` — the bucket's distinct users and
  networks as **exact sets**, capped per bucket at twice the larger gate as the in-memory
  tracker caps them. Exact, not HyperLogLog: the gates (20 users, 10 networks) sit where a
  sketch's error would decide, and the cap already bounds a set at a few hundred bytes;
* ``<prefix>:markets`` — the markets seen.

A search is recorded by one Lua script (count, both sets, their TTL: the window plus two
buckets, so old buckets expire by themselves); a window is read by another, atomically. The
decision (floor, gates, ratio over the baseline, blocklist) is the in-memory tracker's own
code over the window Redis returns, so the two agree on the same event sequence (a
hypothesis test checks it). The suggest path never calls Redis: a background thread
recomputes the sets every ``refresh_s`` (:meth:`RedisTrendingTracker.start`) and
``sets_version`` moves when they changed, wherever the searches that changed them came in.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any, cast
from urllib.parse import parse_qs, urlsplit, urlunsplit

import redis

from lookup.errors import Unavailable
from lookup.kit.engines.redis import UNAVAILABLE, describe_redis_url, redis_client
from lookup.typeahead.filters import TermBlocklist
from lookup.typeahead.normalize import normalize_query
from lookup.typeahead.trending import (
    Baseline,
    Clock,
    TrendingPolicy,
    TrendingTerm,
    TrendingTracker,
    _user_key,
    usable_query,
)

__all__ = ["RedisTrendingTracker"]

log = logging.getLogger("lookup.typeahead")

#: Count one search (KEYS: markets, counts, users, networks; ARGV: market, query, user,
#: network, cap, ttl).
_RECORD = """
redis.call('SADD', KEYS[1], ARGV[1])
redis.call('HINCRBY', KEYS[2], ARGV[2], 1)
redis.call('EXPIRE', KEYS[2], ARGV[6])
local cap = tonumber(ARGV[5])
if redis.call('SCARD', KEYS[3]) < cap then redis.call('SADD', KEYS[3], ARGV[3]) end
redis.call('EXPIRE', KEYS[3], ARGV[6])
if redis.call('SCARD', KEYS[4]) < cap then redis.call('SADD', KEYS[4], ARGV[4]) end
redis.call('EXPIRE', KEYS[4], ARGV[6])
return 1
"""

#: One market's window: ``{query, searches, users, networks}`` of each query with at least
#: ``floor`` searches (ARGV: prefix, market, first bucket, last bucket, floor). The set keys
#: are named from the counts, so they cannot be declared: a single Redis (not a cluster).
_WINDOW = """
local prefix, market = ARGV[1], ARGV[2]
local first, last, floor = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local counts = {}
for b = first, last do
  local h = redis.call('HGETALL', prefix .. ':c:' .. market .. ':' .. b)
  for i = 1, #h, 2 do counts[h[i]] = (counts[h[i]] or 0) + tonumber(h[i + 1]) end
end
local out = {}
for q, n in pairs(counts) do
  if n >= floor then
    local users, nets = {}, {}
    for b = first, last do
      users[#users + 1] = prefix .. ':u:' .. market .. ':' .. b .. ':' .. q
      nets[#nets + 1] = prefix .. ':n:' .. market .. ':' .. b .. ':' .. q
    end
    out[#out + 1] = {q, n, #redis.call('SUNION', unpack(users)),
                     #redis.call('SUNION', unpack(nets))}
  end
end
return out
"""


class RedisTrendingTracker(TrendingTracker):
    """A :class:`~lookup.typeahead.trending.TrendingTracker` whose windows live in Redis."""

    def __init__(
        self,
        client: redis.Redis,
        policy: TrendingPolicy = TrendingPolicy(),
        *,
        prefix: str = "lookup:typeahead:trending",
        clock: Clock = time.time,
        baseline: Baseline | None = None,
        blocklist: Callable[[], TermBlocklist] | None = None,
        where: str = "redis",
    ) -> None:
        super().__init__(policy, clock=clock, baseline=baseline, blocklist=blocklist)
        self.client = client
        self.prefix = prefix
        self.where = where
        self._record = client.register_script(_RECORD)
        self._window = client.register_script(_WINDOW)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._last: dict[str, list[TrendingTerm]] | None = None
        self.errors = 0
        self.refreshes = 0

    @classmethod
    def from_url(
        cls,
        url: str,
        policy: TrendingPolicy = TrendingPolicy(),
        *,
        clock: Clock = time.time,
        baseline: Baseline | None = None,
        blocklist: Callable[[], TermBlocklist] | None = None,
    ) -> RedisTrendingTracker:
        """``redis://host:port/db[?prefix=P]`` (other query fields belong to the stream)."""
        parts = urlsplit(url)
        prefix = parse_qs(parts.query).get("prefix", ["lookup:typeahead"])[0] + ":trending"
        plain = urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))
        client = redis_client(plain, timeout_s=2.0)
        return cls(
            client,
            policy,
            prefix=prefix,
            clock=clock,
            baseline=baseline,
            blocklist=blocklist,
            where=describe_redis_url(plain),
        )

    def _key(self, kind: str, market: str, bucket: int, query: str | None = None) -> str:
        key = f"{self.prefix}:{kind}:{market}:{bucket}"
        return key if query is None else f"{key}:{query}"

    def record(
        self, query: str, market: str, user: str | None = None, network: str | None = None
    ) -> str | None:
        """Count one submitted search in Redis (one script: count, users, networks, TTL);
        :class:`~lookup.errors.Unavailable` when Redis cannot be reached."""
        q = usable_query(query)
        if q is None:
            return None
        p = self.policy
        bucket = int(self.clock() // p.bucket_s)
        who = _user_key(user or "")
        where = _user_key("net:" + (network if network is not None else user or ""))
        cap = 2 * max(p.min_users, p.min_networks)
        keys = [
            f"{self.prefix}:markets",
            self._key("c", market, bucket),
            self._key("u", market, bucket, q),
            self._key("n", market, bucket, q),
        ]
        try:
            self._record(keys=keys, args=[market, q, who, where, cap, p.window_s + 2 * p.bucket_s])
        except UNAVAILABLE as exc:
            raise Unavailable(f"the trending store is unavailable: {exc}") from exc
        with self._lock:
            self.recorded += 1
            self._computed_at = None  # a reader without the refresher recomputes
        return q

    def _market_rows(self, first: int, last: int) -> dict[str, list[tuple[str, int, int, int]]]:
        found = cast("set[bytes]", self.client.smembers(f"{self.prefix}:markets"))
        markets = sorted(m.decode() for m in found)
        out = {}
        for market in markets:
            rows = self._window(args=[self.prefix, market, first, last, self.policy.floor])
            out[market] = [(q.decode(), int(n), int(u), int(w)) for q, n, u, w in rows]
        return out

    def compute(self) -> dict[str, list[TrendingTerm]]:
        """Recompute every market's trending set from the fleet's windows; the version
        moves only when a set changed (so answers kept with the old sets go stale)."""
        now = self.clock()
        p = self.policy
        try:
            windows = self._market_rows(self.first_bucket(now), int(now // p.bucket_s))
        except UNAVAILABLE as exc:
            raise Unavailable(f"the trending store is unavailable: {exc}") from exc
        blocklist = self._blocklist()
        out = {m: self.decide(m, rows, now, blocklist) for m, rows in windows.items()}
        with self._lock:
            self._install(out, now)
            self.refreshes += 1
            if out != self._last:
                self._sets_version += 1
                self._last = out
        return out

    def _fresh(self) -> None:
        if self._thread is not None:
            return  # the refresher keeps the sets current; readers never call Redis
        try:
            super()._fresh()
        except Unavailable:
            self.errors += 1  # serve the last sets; the next read tries again
            with self._lock:
                self._computed_at = self.clock()

    def window_count(self, market: str, query: str) -> int:
        """Searches of a query in the current window, fleet-wide."""
        p = self.policy
        now = self.clock()
        q = normalize_query(query)
        last = int(now // p.bucket_s)
        pipe = self.client.pipeline(transaction=False)
        for b in range(self.first_bucket(now), last + 1):
            pipe.hget(self._key("c", market, b), q)
        try:
            return sum(int(n) for n in pipe.execute() if n is not None)
        except UNAVAILABLE as exc:
            raise Unavailable(f"the trending store is unavailable: {exc}") from exc

    def _refresh_forever(self) -> None:
        while not self._stop.wait(self.policy.refresh_s):
            try:
                self.compute()
            except Exception:  # keep serving the last sets; log once per failure
                self.errors += 1
                log.warning("trending refresh from %s failed", self.where, exc_info=True)

    def start(self) -> None:
        """Recompute the sets in a background thread every ``refresh_s`` (one read of the
        fleet's windows per process and second, none per suggest request)."""
        if self._thread is not None:
            return
        try:
            self.compute()
        except Unavailable:
            log.warning("trending store %s unavailable at start", self.where)
        self._stop.clear()
        self._thread = threading.Thread(
            target=self._refresh_forever, name="trending-refresh", daemon=True
        )
        self._thread.start()

    def close(self) -> None:
        """Stop the refresher and close the connection pool."""
        self._stop.set()
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.join(5)
        self.client.close()

    def backend(self) -> str:
        """Where the windows live, for status pages."""
        return f"redis {self.where} {self.prefix}"

    def status(self) -> dict[str, Any]:
        """The backend, searches recorded here, reads of the fleet's windows and failures."""
        return {
            "backend": self.backend(),
            "recorded": self.recorded,
            "refreshes": self.refreshes,
            "errors": self.errors,
        }
