"""Every algorithm on Redis: one atomic Lua script each, the time taken from Redis.

A read-modify-write from the application would race across instances and let the limit be
exceeded (seed 004); a script runs atomically on the server, and it reads the clock with
``TIME`` there, so instances with skewed clocks still share one timeline. Each script
takes ``op`` (check, peek, charge, refund), the limit, the rate and the cost, and answers
``{allowed, used, seconds until empty, seconds until the cost fits}``; Python turns that
into the same :class:`RateDecision` the in-process limiters give.

When Redis cannot be reached within ``settings.get("ratelimit_redis_timeout")`` the
limiter applies its declared ``on_unavailable`` policy: ``closed`` refuses everything,
``open`` admits everything, ``local`` (the default) decides with an in-process limiter of
the same algorithm and policy scaled by ``local_share`` (a fleet of N processes gives
each 1/N, so an outage costs about one limit in total). ``stats()["outage"]`` says
whether the last decision had to fall back.
"""

from __future__ import annotations

import math
import re
import threading
from collections.abc import Hashable, Sequence
from typing import Any, Literal

from lookup import settings
from lookup.kit.engines.redis import UNAVAILABLE, describe_redis_url, redis_client
from lookup.kit.ratelimit.bucket import MemoryRateLimiter, RateDecision, RateLimiter, RatePolicy
from lookup.kit.ratelimit.windows import ALGORITHMS

__all__ = ["ON_UNAVAILABLE", "RedisRateLimiter", "SCRIPTS"]

OnUnavailable = Literal["local", "open", "closed"]

#: The policies a limiter may declare for when Redis is down.
ON_UNAVAILABLE: tuple[str, ...] = ("local", "open", "closed")

_EPS = 1e-9

_PROLOGUE = """
local key = KEYS[1]
local op = ARGV[1]
local limit = tonumber(ARGV[2])
local rate = tonumber(ARGV[3])
local cost = tonumber(ARGV[4])
local window = limit / rate
local EPS = 1e-9
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local function num(x) return string.format('%.17g', x) end
local ttl = math.ceil(window * 2 * 1000) + 1000
"""

_SCRIPT_BODIES = {
    "token_bucket": """
local b = redis.call('HMGET', key, 'tokens', 'ts')
local tokens = tonumber(b[1]) or limit
local ts = tonumber(b[2]) or now
tokens = math.min(limit, tokens + math.max(0, now - ts) * rate)
local fits = tokens + EPS >= cost
if op == 'check' then
  if fits then tokens = math.max(0, tokens - cost) end
elseif op == 'charge' then tokens = math.max(0, tokens - cost)
elseif op == 'refund' then tokens = math.min(limit, tokens + cost) end
if op ~= 'peek' then
  redis.call('HSET', key, 'tokens', num(tokens), 'ts', num(now))
  redis.call('PEXPIRE', key, ttl)
end
local wait = 0
if not fits then wait = (cost - tokens) / rate end
return {fits and 1 or 0, num(limit - tokens), num((limit - tokens) / rate), num(wait)}
""",
    "fixed_window": """
local k = math.floor(now / window)
local h = redis.call('HMGET', key, 'k', 'count')
local count = 0
if tonumber(h[1]) == k then count = tonumber(h[2]) end
local fits = count + cost <= limit + EPS
if op == 'check' then
  if fits then count = count + cost end
elseif op == 'charge' then
  local room = limit - count
  if room > EPS then count = count + math.min(cost, room) end
elseif op == 'refund' then count = math.max(0, count - cost) end
if op ~= 'peek' then
  redis.call('HSET', key, 'k', k, 'count', num(count))
  redis.call('PEXPIRE', key, ttl)
end
local ends = (k + 1) * window - now
local empty = 0
if count > EPS then empty = ends end
return {fits and 1 or 0, num(count), num(empty), num(ends)}
""",
    "sliding_counter": """
local k = math.floor(now / window)
local h = redis.call('HMGET', key, 'k', 'curr', 'prev')
local sk = tonumber(h[1])
local curr, prev = 0, 0
if sk == k then curr, prev = tonumber(h[2]), tonumber(h[3])
elseif sk == k - 1 then prev = tonumber(h[2]) end
local start = k * window
local weight = math.max(0, 1 - (now - start) / window)
local used = prev * weight + curr
local fits = used + cost <= limit + EPS
if op == 'check' then
  if fits then curr = curr + cost end
elseif op == 'charge' then
  local room = limit - used
  if room > EPS then curr = curr + math.min(cost, room) end
elseif op == 'refund' then curr = math.max(0, curr - cost) end
if op ~= 'peek' then
  redis.call('HSET', key, 'k', k, 'curr', num(curr), 'prev', num(prev))
  redis.call('PEXPIRE', key, ttl + math.ceil(window * 1000))
end
used = prev * weight + curr
local need = limit - cost
local wait = 0
if need < -EPS then wait = window
elseif curr <= need + EPS then
  local f = 0
  if prev > 0 then f = 1 - (need - curr) / prev end
  wait = start + f * window - now
else wait = start + window + (1 - need / curr) * window - now end
local empty = 0
if curr > EPS then empty = start + 2 * window - now
elseif prev > EPS then empty = start + window - now end
return {fits and 1 or 0, num(used), num(empty), num(wait)}
""",
    # members "seq:cost" scored by admission time; the newest refunded first
    "sliding_log": """
local cutoff, lag, shift = now - window, window, 0
local function score_of(c, entries) return now end
""",
    # members "seq:cost" scored by departure time: a queue drained at the rate
    "leaky_bucket": """
local cutoff, lag, shift = now, 0, 1 / rate
local function score_of(c, entries)
  local last = now
  if #entries > 0 then last = math.max(now, tonumber(entries[#entries])) end
  return last + c / rate
end
""",
}

#: The second half of the two sorted-set algorithms: members ``seq:cost`` scored so that
#: an entry stops counting once its score is at or before ``cutoff`` and frees its room
#: ``lag`` seconds after its score; a partly refunded entry moves ``shift`` s per unit earlier.
_ZSET_BODY = """
redis.call('ZREMRANGEBYSCORE', key, '-inf', num(cutoff))
local entries = redis.call('ZRANGE', key, 0, -1, 'WITHSCORES')
local used = 0
for i = 1, #entries, 2 do
  used = used + tonumber(string.match(entries[i], ':(.*)$'))
end
local fits = used + cost <= limit + EPS
local function add(c)
  local seq = redis.call('HINCRBY', key .. ':seq', 'n', 1)
  redis.call('ZADD', key, num(score_of(c, entries)), seq .. ':' .. num(c))
  used = used + c
end
if op == 'check' then
  if fits then add(cost) end
elseif op == 'charge' then
  local room = limit - used
  if room > EPS then add(math.min(cost, room)) end
elseif op == 'refund' then
  local left = cost
  while left > EPS do
    local top = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
    if #top == 0 then break end
    local c = tonumber(string.match(top[1], ':(.*)$'))
    redis.call('ZREM', key, top[1])
    if c <= left + EPS then left = left - c; used = used - c
    else
      local score = tonumber(top[2]) - left * shift
      redis.call('ZADD', key, num(score), string.match(top[1], '^(.-):') .. ':' .. num(c - left))
      used = used - left; left = 0
    end
  end
end
if op ~= 'peek' then
  redis.call('PEXPIRE', key, ttl)
  redis.call('PEXPIRE', key .. ':seq', ttl)
end
entries = redis.call('ZRANGE', key, 0, -1, 'WITHSCORES')
local wait = 0
if not fits then
  if cost > limit + EPS then wait = window
  else
    local u = used
    for i = 1, #entries, 2 do
      u = u - tonumber(string.match(entries[i], ':(.*)$'))
      if u + cost <= limit + EPS then wait = tonumber(entries[i + 1]) + lag - now; break end
    end
  end
end
local empty = 0
if #entries > 0 then empty = tonumber(entries[#entries]) + lag - now end
return {fits and 1 or 0, num(used), num(empty), num(wait)}
"""

#: The Lua source of each algorithm's script.
SCRIPTS: dict[str, str] = {
    name: _PROLOGUE + body + (_ZSET_BODY if name in ("sliding_log", "leaky_bucket") else "")
    for name, body in _SCRIPT_BODIES.items()
}


def _whole(seconds: float) -> int:
    return max(0, math.ceil(seconds - _EPS))


class RedisRateLimiter:
    """One limit shared by every process that opens the same Redis, name and algorithm."""

    def __init__(
        self,
        url: str,
        policy: RatePolicy,
        *,
        algorithm: str = "token_bucket",
        name: str = "",
        on_unavailable: OnUnavailable = "local",
        timeout_s: float | None = None,
        local_share: float = 1.0,
    ) -> None:
        if algorithm not in SCRIPTS:
            raise ValueError(f"unknown rate limit algorithm {algorithm!r}")
        if on_unavailable not in ON_UNAVAILABLE:
            raise ValueError(f"on_unavailable must be one of {ON_UNAVAILABLE}")
        if not 0 < local_share <= 1:
            raise ValueError("local_share must be in (0, 1]")
        self.policy = policy
        self.url = url
        self.local_share = local_share
        self.name = name
        self.algorithm = algorithm
        self.on_unavailable: OnUnavailable = on_unavailable
        timeout = timeout_s if timeout_s is not None else settings.get("ratelimit_redis_timeout")
        self._redis = redis_client(url, timeout_s=timeout)
        self.outage = False
        self._script = self._redis.register_script(SCRIPTS[algorithm])
        self._prefix = f"lookup:rl:{name}:{algorithm}:"
        local = RatePolicy(
            max(1.0, policy.capacity * local_share), policy.refill_per_s * local_share
        )
        self._local: RateLimiter = (
            MemoryRateLimiter(local, name=name)
            if algorithm == "token_bucket"
            else ALGORITHMS[algorithm](local, name=name)
        )
        self._lock = threading.Lock()
        self.allowed = 0
        self.refused = 0
        self.unavailable = 0

    def _key(self, identity: Hashable) -> str:
        return self._prefix + repr(identity)

    def _run(self, op: str, identity: Hashable, cost: float) -> list[Any] | None:
        """The script's answer, or None when Redis is unavailable (counted)."""
        try:
            answer = list(
                self._script(
                    keys=[self._key(identity)],
                    args=[op, repr(float(self.policy.capacity)),
                          repr(float(self.policy.refill_per_s)), repr(float(cost))],
                )
            )  # fmt: skip
        except UNAVAILABLE:
            with self._lock:
                self.unavailable += 1
                self.outage = True
            return None
        self.outage = False
        return answer

    def _decision(self, answer: list[Any]) -> RateDecision:
        allowed = int(answer[0]) == 1
        used, empty, wait = (float(x) for x in answer[1:])
        limit = self.policy.capacity
        return RateDecision(
            allowed=allowed,
            limit=int(limit),
            remaining=max(0, math.floor(limit - used + _EPS)),
            reset_s=_whole(empty),
            retry_after_s=0 if allowed else max(1, _whole(wait)),
        )

    def _fallback(self, identity: Hashable, cost: float, take: bool) -> RateDecision:
        if self.on_unavailable == "local":
            return self._local.check(identity, cost) if take else self._local.peek(identity, cost)
        limit = int(self.policy.capacity)
        if self.on_unavailable == "open":
            return RateDecision(True, limit, limit, 0, 0)
        return RateDecision(False, limit, 0, 1, 1)

    def check(self, identity: Hashable, cost: float = 1.0) -> RateDecision:
        """Count ``cost`` against ``identity`` atomically on Redis if it fits."""
        answer = self._run("check", identity, cost)
        decision = (
            self._fallback(identity, cost, True) if answer is None else self._decision(answer)
        )
        with self._lock:
            if decision.allowed:
                self.allowed += 1
            else:
                self.refused += 1
        return decision

    def peek(self, identity: Hashable, cost: float = 1.0) -> RateDecision:
        """Whether ``cost`` would fit now, counting nothing."""
        answer = self._run("peek", identity, cost)
        return self._fallback(identity, cost, False) if answer is None else self._decision(answer)

    def charge(self, identity: Hashable, cost: float = 1.0) -> None:
        """Count ``cost`` after the fact, at most up to the limit."""
        if self._run("charge", identity, cost) is None and self.on_unavailable == "local":
            self._local.charge(identity, cost)

    def refund(self, identity: Hashable, cost: float = 1.0) -> None:
        """Give back the newest ``cost`` counted."""
        if self._run("refund", identity, cost) is None and self.on_unavailable == "local":
            self._local.refund(identity, cost)

    def check_many(self, identities: Sequence[Hashable], cost: float = 1.0) -> list[RateDecision]:
        """``check`` each identity in one pipelined round trip (bulk loads, experiments)."""
        args = [repr(float(self.policy.capacity)), repr(float(self.policy.refill_per_s)),
                repr(float(cost))]  # fmt: skip
        try:
            pipe = self._redis.pipeline(transaction=False)
            for identity in identities:
                self._script(keys=[self._key(identity)], args=["check", *args], client=pipe)
            answers = pipe.execute()
        except UNAVAILABLE:
            with self._lock:
                self.unavailable += 1
                self.outage = True
            return [self._fallback(i, cost, True) for i in identities]
        self.outage = False
        decisions = [self._decision(list(a)) for a in answers]
        with self._lock:
            self.allowed += sum(d.allowed for d in decisions)
            self.refused += sum(not d.allowed for d in decisions)
        return decisions

    def memory_usage(self, identity: Hashable) -> int:
        """Bytes Redis holds for ``identity`` (``MEMORY USAGE`` of its keys)."""
        key = self._key(identity)
        return sum(int(self._redis.memory_usage(k, samples=0) or 0) for k in (key, key + ":seq"))

    def server_memory(self) -> int:
        """The server's ``used_memory`` (``INFO memory``), for before/after comparisons."""
        return int(self._redis.info("memory")["used_memory"])

    def reset(self) -> None:
        """Forget every identity of this limiter (its keys on Redis and the local fallback)."""
        self._local.reset()
        try:
            pattern = re.sub(r"([*?\[\]\\])", r"\\\1", self._prefix) + "*"
            keys = list(self._redis.scan_iter(match=pattern, count=1000))
            if keys:
                self._redis.delete(*keys)
        except UNAVAILABLE:
            with self._lock:
                self.unavailable += 1

    def describe(self) -> str:
        """``redis://host:port/db`` (no password)."""
        return describe_redis_url(self.url)

    def stats(self) -> dict[str, object]:
        """Counters, the policy, the algorithm and the outage count, for dashboards."""
        return {
            "policy": self.policy.describe(),
            "algorithm": self.algorithm,
            "backend": "redis",
            "on_unavailable": self.on_unavailable,
            "localShare": self.local_share if self.on_unavailable == "local" else None,
            "allowed": self.allowed,
            "refused": self.refused,
            "unavailable": self.unavailable,
            "outage": self.outage,
        }

    def close(self) -> None:
        """Let go of the connection pool."""
        self._redis.close()
