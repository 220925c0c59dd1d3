"""The shared cache tier on Redis: versioned fills, invalidation told to every process, a breaker.

Per cached key two Redis keys, in one hash slot (``{key}`` is the hash tag, so a cluster
keeps them together): ``<prefix>{key}:d`` holds ``<version>|<bytes>`` with the entry's
TTL, and ``<prefix>{key}:g`` the key's invalidation counter (kept a day).

* :meth:`RedisSharedCache.lookup` reads both with one ``MGET``: the bytes and the counter,
  which is the token of a later fill.
* :meth:`RedisSharedCache.fill` is a Lua script, so it is atomic on the server: it writes
  only if the counter still equals the token (no invalidation since the read — the race
  where a slow reader puts the old record back after a writer's delete) and no entry of a
  higher version is there (two readers of different ages).
* :meth:`RedisSharedCache.delete` is a Lua script too: bump the counter, drop the entry and
  ``PUBLISH`` the key on the tier's channel. Every process runs one subscriber thread
  (:meth:`RedisSharedCache.watch`) that hands each key to its watchers (the resolver drops
  its L1 entry); after the subscription was lost it reconnects with back-off and tells the
  watchers ``None`` — messages may have been missed, so the L1 is dropped whole. It tells
  them ``None`` the moment the subscription is lost as well, and :meth:`listening` is False
  until it is back: a process that cannot hear invalidations must not trust its L1 for
  long (the resolver keeps entries for ``LOOKUP_CACHE_L1_UNWATCHED_TTL`` then), or a link
  disabled through another process during a Redis outage would go on redirecting here
  until the outage ended.
* Every command goes through a :class:`~lookup.kit.breaker.CircuitBreaker`: with Redis
  down, calls are refused at once (a miss, a skipped fill) instead of each paying a
  connect timeout; a probe every ``reset_timeout_s`` — or the subscriber reconnecting —
  closes it again. An invalidation that could not reach Redis is kept (bounded) and
  replayed when the subscriber is back, so the tier does not keep serving what changed
  during the outage; past the bound, the whole tier's entries are dropped instead.
* Kept in memory, such an invalidation would die with its process: one that crashed
  during the outage would leave another process's tier entry stale until its TTL. With
  an **outbox** (:meth:`RedisSharedCache.use_outbox`, a
  :class:`~lookup.kit.sharedcache.InvalidationOutbox`: the link store, which just took the
  write and so is reachable) the invalidation is kept there instead, durably, and every
  process's subscriber thread looks at the outbox every ``outbox_poll_s`` (and at once
  when it resubscribes), sends what it finds — its own or a dead process's — tells its
  own watchers too, and forgets what it sent. Several processes may send one entry;
  an invalidation twice is harmless.

A cache is never the source of truth: none of this raises into the read path.
"""

from __future__ import annotations

import logging
import re
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qs, urlsplit, urlunsplit

from lookup import settings
from lookup.kit.breaker import CircuitBreaker
from lookup.kit.engines.redis import UNAVAILABLE, describe_redis_url, redis_client
from lookup.kit.engines.storeurl import StoreUrl
from lookup.kit.sharedcache import CacheRead, InvalidationOutbox

__all__ = ["FILL_SCRIPT", "INVALIDATE_SCRIPT", "RedisSharedCache"]

log = logging.getLogger("lookup.kit.sharedcache")

#: KEYS: entry, counter. ARGV: token, version, bytes, ttl (ms). 1 written, 0 invalidated
#: since the read, -1 a newer version is there.
FILL_SCRIPT = """
local gen = redis.call('GET', KEYS[2]) or '0'
if gen ~= ARGV[1] then return 0 end
local cur = redis.call('GET', KEYS[1])
if cur then
  local bar = string.find(cur, '|', 1, true)
  if bar and tonumber(string.sub(cur, 1, bar - 1)) > tonumber(ARGV[2]) then return -1 end
end
redis.call('SET', KEYS[1], ARGV[2] .. '|' .. ARGV[3], 'PX', ARGV[4])
return 1
"""

#: KEYS: entry, counter. ARGV: counter TTL (ms), channel, message.
INVALIDATE_SCRIPT = """
redis.call('INCR', KEYS[2])
redis.call('PEXPIRE', KEYS[2], ARGV[1])
redis.call('DEL', KEYS[1])
redis.call('PUBLISH', ARGV[2], ARGV[3])
return 1
"""

_GENERATION_TTL_MS = 86_400_000
_MAX_PENDING = 100_000
_OUTBOX_BATCH = 500


def _ms(ttl: float) -> int:
    return max(1, int(ttl * 1000))


class RedisSharedCache:
    """The shared tier of every process that opens the same Redis and prefix."""

    name = "redis"

    def __init__(
        self,
        url: str,
        *,
        prefix: str = "lookup:cache:",
        timeout_s: float | None = None,
        breaker: CircuitBreaker | None = None,
        outbox_poll_s: float | None = None,
    ) -> None:
        self.url = url
        self.prefix = prefix
        self.channel = f"{prefix}invalidations"
        timeout = timeout_s if timeout_s is not None else settings.get("cache_redis_timeout")
        self._redis = redis_client(url, timeout_s=timeout)
        self._fill = self._redis.register_script(FILL_SCRIPT)
        self._invalidate = self._redis.register_script(INVALIDATE_SCRIPT)
        self.breaker = breaker or CircuitBreaker(
            "redis cache", reset_timeout_s=settings.get("redis_breaker_reset")
        )
        self._timeout = timeout
        self._origin = uuid.uuid4().hex[:12]  # our own messages are not news to us
        self._wake_channel = f"{self.channel}:wake:{self._origin}"  # close() stops the wait
        self._lock = threading.Lock()
        self._pending: set[str] = set()
        self._pending_overflow = False
        self._outbox: InvalidationOutbox | None = None
        self._outbox_failing = False
        self.outbox_poll_s = (
            outbox_poll_s if outbox_poll_s is not None else settings.get("cache_outbox_poll")
        )
        self._watchers: list[Callable[[str | None], None]] = []
        self._thread: threading.Thread | None = None
        self._closed = threading.Event()
        self.subscribed = False
        self.hits = 0
        self.misses = 0
        self.fills = 0
        self.fills_refused = 0
        self.errors = 0
        self.invalidations_sent = 0
        self.invalidations_heard = 0
        self.resubscribes = 0
        self.replayed = 0
        self.deferred = 0
        self.outbox_sent = 0
        self.outbox_errors = 0

    @classmethod
    def from_url(cls, url: str | StoreUrl, **options: Any) -> RedisSharedCache:
        """From ``redis://host:port/db[?prefix=P]``, as text or parsed; it takes no
        ``options`` (any are ignored: entries are timed by Redis, so ``clock`` too)."""
        if isinstance(url, StoreUrl):
            url = url.url
        parts = urlsplit(url.strip())
        query = parse_qs(parts.query)
        unknown = sorted(set(query) - {"prefix"})
        if unknown:
            raise ValueError(f"unknown shared cache URL parameter(s) {unknown} in {url!r}")
        server = urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))
        prefix = query.get("prefix", ["lookup:cache:"])[-1]
        return cls(server, prefix=prefix)

    # -- keys --------------------------------------------------------------------------

    def _keys(self, key: str) -> list[str]:
        base = f"{self.prefix}{{{key}}}"
        return [f"{base}:d", f"{base}:g"]

    def _call(self, fn: Callable[[], Any]) -> Any:
        """``fn()`` through the breaker; None (counted) when refused or unreachable."""
        if not self.breaker.allow():
            return None
        try:
            result = fn()
        except UNAVAILABLE:
            self.breaker.record_failure()
            with self._lock:
                self.errors += 1
            return None
        self.breaker.record_success()
        return result

    @staticmethod
    def _payload(raw: bytes | None) -> bytes | None:
        if raw is None:
            return None
        _version, _bar, payload = raw.partition(b"|")
        return payload

    # -- the SharedCache protocol --------------------------------------------------------

    def get(self, key: str) -> bytes | None:
        """The cached bytes, or None (a miss, or Redis unavailable)."""
        return self.lookup(key).value

    def set(self, key: str, value: bytes, ttl: float) -> None:
        """Cache ``value`` for ``ttl`` seconds unconditionally (fills use :meth:`fill`)."""
        self._call(lambda: self._redis.set(self._keys(key)[0], b"0|" + value, px=_ms(ttl)))

    def use_outbox(self, outbox: InvalidationOutbox) -> None:
        """Keep invalidations Redis cannot take now in ``outbox`` (durable, shared by every
        process), and send those any process kept there (see the module docstring)."""
        self._outbox = outbox

    def delete(self, key: str) -> None:
        """Invalidate ``key`` everywhere: counter bumped, entry dropped, every process told.
        Kept for replay if Redis cannot be reached now: in the outbox when there is one,
        else (or if the outbox fails too) in this process's memory."""
        if self._send_invalidation(key):
            return
        if self._outbox is not None:
            try:
                self._outbox.defer_invalidations([key])
            except Exception:
                log.warning("could not keep the invalidation of %r in the outbox", key)
            else:
                with self._lock:
                    self.deferred += 1
                return
        with self._lock:
            if len(self._pending) < _MAX_PENDING:
                self._pending.add(key)
            else:
                self._pending_overflow = True

    def _send_invalidation(self, key: str) -> bool:
        message = f"{self._origin} {key}"
        done = self._call(
            lambda: self._invalidate(
                keys=self._keys(key), args=[_GENERATION_TTL_MS, self.channel, message]
            )
        )
        if done is None:
            return False
        with self._lock:
            self.invalidations_sent += 1
        return True

    def lookup(self, key: str) -> CacheRead:
        """The bytes and the fill token in one ``MGET``; ``(None, None)`` when unreachable."""
        answer = self._call(lambda: self._redis.mget(self._keys(key)))
        if answer is None:
            return CacheRead(None, None)
        raw, generation = answer
        with self._lock:
            if raw is None:
                self.misses += 1
            else:
                self.hits += 1
        return CacheRead(self._payload(raw), (generation or b"0").decode())

    def fill(self, key: str, value: bytes, ttl: float, token: Any, version: int) -> bool:
        """Compare-and-set on the counter and the version, atomically in Redis."""
        if token is None:
            return False
        written = self._call(
            lambda: self._fill(keys=self._keys(key), args=[token, int(version), value, _ms(ttl)])
        )
        with self._lock:
            if written == 1:
                self.fills += 1
            elif written is not None:
                self.fills_refused += 1
        return written == 1

    # -- invalidations from everywhere ---------------------------------------------------

    def watch(self, fn: Callable[[str | None], None]) -> None:
        """Call ``fn(key)`` for every invalidation another process sends, ``fn(None)`` after
        the subscription was lost and is back; starts the subscriber thread once."""
        with self._lock:
            self._watchers.append(fn)
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._listen, name="redis-cache-invalidations", daemon=True
                )
                self._thread.start()

    def _tell(self, key: str | None) -> None:
        for fn in list(self._watchers):
            try:
                fn(key)
            except Exception:
                log.exception("a cache invalidation watcher failed on %r", key)

    def _listen(self) -> None:
        lost = False
        backoff = 0.05
        client = redis_client(self.url, timeout_s=self._timeout, socket_timeout_s=5.0)
        while not self._closed.is_set():
            pubsub = client.pubsub(ignore_subscribe_messages=True)
            try:
                pubsub.subscribe(self.channel, self._wake_channel)
                pubsub.get_message(timeout=1.0)  # the confirmation: we are listening
                self.subscribed = True
                backoff = 0.05
                if lost:
                    with self._lock:
                        self.resubscribes += 1
                    self.breaker.record_success()
                    self._tell(None)  # whatever was said while we were away is lost
                    self._replay()
                    lost = False
                next_look = 0.0  # the outbox: at once, then every outbox_poll_s
                while not self._closed.is_set():
                    if self._outbox is not None and time.monotonic() >= next_look:
                        self._drain_outbox()
                        next_look = time.monotonic() + self.outbox_poll_s
                    message = pubsub.get_message(timeout=min(0.5, self.outbox_poll_s))
                    if (
                        message is not None
                        and message.get("type") == "message"
                        and message.get("channel") == self.channel.encode()
                    ):
                        self._heard(message["data"])
            except UNAVAILABLE:
                self.subscribed = False
                if not lost:
                    self._tell(None)  # deaf from now on: what we hold may go stale
                lost = True
                self._closed.wait(backoff)
                backoff = min(1.0, backoff * 2)
            except Exception:
                log.exception("the cache invalidation subscriber failed; resubscribing")
                self.subscribed = False
                if not lost:
                    self._tell(None)
                lost = True
                self._closed.wait(backoff)
            finally:
                try:
                    pubsub.close()
                except Exception:  # closing a dead connection is best effort
                    log.debug("closing the invalidation subscription failed", exc_info=True)
        client.close()

    def listening(self) -> bool:
        """Subscribed and the breaker not open: invalidations from elsewhere reach us."""
        return self.subscribed and self.breaker.state != "open"

    def _heard(self, data: bytes) -> None:
        origin, _space, key = data.decode("utf-8", "replace").partition(" ")
        if origin == self._origin:
            return
        with self._lock:
            self.invalidations_heard += 1
        self._tell(key or None)  # an empty key: the sender dropped the whole tier

    def _replay(self) -> None:
        """Send the invalidations the outage kept back (or drop the whole tier past the bound)."""
        with self._lock:  # a key leaves the pending set only once it was sent
            keys = list(self._pending)
            overflow, self._pending_overflow = self._pending_overflow, False
        if overflow:
            try:
                self._drop_everything()
            except UNAVAILABLE:
                with self._lock:
                    self._pending_overflow = True
                raise
        for key in keys:
            if not self._send_invalidation(key):
                return  # still pending: the next reconnection replays it
            with self._lock:
                self._pending.discard(key)
                self.replayed += 1

    def _drain_outbox(self) -> None:
        """Send the invalidations kept in the outbox (by any process), tell our own
        watchers too (our messages are not news to us), forget those sent. Stops at the
        first that Redis refuses; a failing outbox is logged and tried again later."""
        assert self._outbox is not None
        try:
            while True:
                rows = self._outbox.deferred_invalidations(_OUTBOX_BATCH)
                ids_of: dict[str, list[int]] = {}
                for entry_id, key in rows:
                    ids_of.setdefault(key, []).append(entry_id)
                sent: list[int] = []
                for key, ids in ids_of.items():
                    if not self._send_invalidation(key):
                        break
                    self._tell(key)
                    sent.extend(ids)
                self._outbox.forget_invalidations(sent)
                with self._lock:
                    self.outbox_sent += len(sent)
                    self._outbox_failing = False
                if len(rows) < _OUTBOX_BATCH or len(sent) < len(rows):
                    return
        except Exception as exc:
            with self._lock:
                self.outbox_errors += 1
                first, self._outbox_failing = not self._outbox_failing, True
            if first:  # once per streak: the store's own outage is reported elsewhere
                log.warning("could not read the invalidation outbox (%s); trying again", exc)

    def _drop_everything(self) -> None:
        pattern = re.sub(r"([*?\[\]\\])", r"\\\1", self.prefix) + "*"
        batch: list[bytes] = []
        for name in self._redis.scan_iter(match=pattern, count=1000):
            batch.append(name)
            if len(batch) >= 1000:
                self._redis.delete(*batch)
                batch.clear()
        if batch:
            self._redis.delete(*batch)
        self._redis.publish(self.channel, f"{self._origin} ")  # an empty key: others drop all

    # -- observability -------------------------------------------------------------------

    def pending_invalidations(self) -> int:
        """Invalidations waiting for Redis to come back."""
        return len(self._pending)

    def stats(self) -> dict[str, Any]:
        """Hits, misses, fills written and refused, outage counters, the breaker."""
        return {
            "hits": self.hits,
            "misses": self.misses,
            "fills": self.fills,
            "fillsRefused": self.fills_refused,
            "errors": self.errors,
            "invalidationsSent": self.invalidations_sent,
            "invalidationsHeard": self.invalidations_heard,
            "pendingInvalidations": len(self._pending),
            "replayedInvalidations": self.replayed,
            "deferredToOutbox": self.deferred,
            "sentFromOutbox": self.outbox_sent,
            "outboxErrors": self.outbox_errors,
            "subscribed": self.subscribed,
            "resubscribes": self.resubscribes,
            "breaker": self.breaker.stats(),
        }

    def describe(self) -> str:
        """``redis://host:port/db`` (no password)."""
        return describe_redis_url(self.url)

    def close(self) -> None:
        """Stop the subscriber and let go of the connections."""
        self._closed.set()
        if self._thread is not None:
            try:  # wake the subscriber out of its wait for a message
                self._redis.publish(self._wake_channel, b"")
            except UNAVAILABLE:
                pass  # Redis is away: the subscriber is not waiting on it
            self._thread.join(timeout=5)
        self._redis.close()

    def wait_subscribed(self, timeout: float = 5.0) -> bool:
        """Block until the subscriber listens (tests and drills start from there)."""
        deadline = time.monotonic() + timeout
        while not self.subscribed and time.monotonic() < deadline:
            time.sleep(0.01)
        return self.subscribed
