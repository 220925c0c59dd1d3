"""The click stream on Redis Streams: a bounded stream, a consumer group, claiming.

Each appended batch is one stream entry (``XADD … MAXLEN ~ N``: the stream is bounded, as
a Kafka topic's retention is) with the batch as stored by
:func:`~lookup.shortener.analytics.batches.encode_batch` and its count and click times. An
entry's offset is its stream id ``ms-seq`` as one integer (``ms << 20 | seq``), so offsets
never decrease and the plain :class:`~lookup.shortener.analytics.clicklog.ClickLog` contract
(``read`` from an offset, ``trim``, ``end_offset``, ``backlog``) holds as it does for SQLite.

The scale-out consumer is a **consumer group** (``XGROUP CREATE … MKSTREAM``, from the
start of the stream): each aggregator process is one consumer. :meth:`RedisClickLog.take`
hands a consumer, in order, its own pending entries (delivered before but never
acknowledged — a fold that failed, or the same consumer restarted), then entries another
consumer left pending for longer than ``min_idle_s`` (``XAUTOCLAIM``: that consumer died
mid-batch), then new ones (``XREADGROUP >``). The aggregator acknowledges
(:meth:`RedisClickLog.ack`, ``XACK``) only after its counts committed, so a consumer
killed at any point loses nothing; a redelivered entry is absorbed by the aggregator's
event-id de-duplication, so every click is counted exactly once.

A **poison entry** — one that cannot be decoded, or whose fold keeps failing — would be
handed back for ever and stall its consumer. An entry delivered more than
``max_deliveries`` times (the group's own delivery counter, as ``XPENDING`` reports it),
or one that does not decode, is copied to the dead-letter stream ``<stream>:dead`` with
the reason and acknowledged, so the rest of the stream moves on and nothing is dropped
silently (Kafka consumers and SQS do the same with a dead-letter queue).

**Clicks lost to retention** are counted, never silent. ``MAXLEN`` trims the oldest
entries whether the group has read them or not (a Kafka topic's retention does the same
to a consumer that falls too far behind). Each entry carries ``c``, the stream's running
total of clicks appended up to and including it (one script does the ``INCRBY`` and the
``XADD``, so the totals follow the ids' order), and the group keeps, beside the stream,
the running total it has been handed (``<stream>:<group>:delivered``). A read of new
entries (one script with the ``XREADGROUP``) that finds the first entry's total before
it above the delivered one has found clicks trimmed unread: the difference is added to
``<stream>:<group>:lost``. An entry delivered but trimmed before its acknowledgement
(its fields come back empty, or ``XAUTOCLAIM`` reports it deleted) is lost too: the
group keeps each unacknowledged entry's click count (``<stream>:<group>:inflight``) so
that loss is counted exactly as well. :meth:`RedisClickLog.retention` reports the lost
clicks (including a gap no read has reached yet) and the group's lag.

**Redis restarted empty** (no persistence, ``FLUSHALL``, a failover to an empty
replica) takes the stream, the group and those figures with it. A consumer that finds
its group gone (``NOGROUP``) creates it again from the start of the new stream, so the
clicks shipped since — the batches the shippers retried through the outage included —
are all counted; an acknowledgement the reset made moot counts nothing. The clicks the
old stream held uncounted are lost, and each producer says exactly how many: every
append also reads the stream's *epoch* (``<stream>:epoch``, a random token set by the
first append to an empty Redis), and a producer that sees it change records that its
clicks before this batch went into a stream that is gone
(:meth:`RedisClickLog.reset_marks`); its owner compares them with the counted sequence
ranges (``analytics.log.lostToReset``). Connection failures surface as
:class:`~lookup.errors.Unavailable`, so callers log an outage once, not per poll.
"""

from __future__ import annotations

import contextlib
import logging
import secrets
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, cast
from urllib.parse import parse_qs, urlsplit, urlunsplit

import redis

from lookup.errors import Unavailable
from lookup.kit.engines.redis import describe_redis_url, redis_client
from lookup.kit.engines.storeurl import StoreUrl
from lookup.shortener.analytics.batches import LogRecord, decode_batch, encode_batch

__all__ = ["RedisClickLog", "offset_of", "stream_id"]

log = logging.getLogger("lookup.shortener.analytics")

#: A stream entry as redis-py returns it: its id and its fields. (Bytes: the client is made
#: without ``decode_responses``, which redis-py's types cannot know, so the reads are cast.)
_Entry = tuple[bytes, dict[bytes, bytes]]

_SEQ_BITS = 20
_CHUNK = 256

#: XADD with the stream's running click total ``c``; returns the entry id and the
#: stream's epoch, set here if Redis has none (KEYS: stream, appended total, epoch;
#: ARGV: maxlen, n, blob, first, last, a new epoch).
_APPEND = """
local epoch = redis.call('GET', KEYS[3])
if not epoch then
  epoch = ARGV[6]
  redis.call('SET', KEYS[3], epoch)
end
local c = redis.call('INCRBY', KEYS[2], ARGV[2])
local id = redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[1], '*',
    'b', ARGV[3], 'n', ARGV[2], 'f', ARGV[4], 'l', ARGV[5], 'c', c)
return {id, epoch}
"""

#: The fields ``n`` and ``c`` of a flat field list, as numbers (nil when absent).
_COUNTS_OF = """
local function counts_of(fields)
  local n, c
  for i = 1, #fields, 2 do
    if fields[i] == 'n' then n = tonumber(fields[i + 1])
    elseif fields[i] == 'c' then c = tonumber(fields[i + 1]) end
  end
  return n, c
end
"""

#: XREADGROUP ``>``, counting clicks trimmed before the group read them (KEYS: stream,
#: delivered total, lost, inflight; ARGV: group, consumer, count).
_TAKE_NEW = (
    _COUNTS_OF
    + """
local res = redis.call('XREADGROUP', 'GROUP', ARGV[1], ARGV[2], 'COUNT', ARGV[3],
    'STREAMS', KEYS[1], '>')
if not res then return {} end
local entries = res[1][2]
local delivered = tonumber(redis.call('GET', KEYS[2]) or '0')
local lost = 0
for _, entry in ipairs(entries) do
  local n, c = counts_of(entry[2])
  if n then redis.call('HSET', KEYS[4], entry[1], n) end
  if n and c then
    if c - n > delivered then lost = lost + (c - n - delivered) end
    if c > delivered then delivered = c end
  end
end
redis.call('SET', KEYS[2], delivered)
if lost > 0 then redis.call('INCRBY', KEYS[3], lost) end
return entries
"""
)

#: Acknowledge entries; those trimmed before it (``ARGV[1]`` = 1) count as lost (KEYS:
#: stream, lost, inflight; ARGV: gone flag, group, ids...). Returns how many were pending.
_SETTLE = """
local lost, done = 0, 0
for i = 3, #ARGV do
  done = done + redis.call('XACK', KEYS[1], ARGV[2], ARGV[i])
  if ARGV[1] == '1' then lost = lost + tonumber(redis.call('HGET', KEYS[3], ARGV[i]) or '0') end
  redis.call('HDEL', KEYS[3], ARGV[i])
end
if lost > 0 then redis.call('INCRBY', KEYS[2], lost) end
return done
"""

#: One consistent reading of the loss figures (KEYS: stream, delivered, lost, appended,
#: inflight). Lost already, though no read has found them yet: the gap before the oldest
#: entry, and the unacknowledged entries older than it.
_RETENTION = (
    _COUNTS_OF
    + """
local function older(a, b)
  local ams, aseq = string.match(a, '(%d+)-(%d+)')
  local bms, bseq = string.match(b, '(%d+)-(%d+)')
  ams, bms = tonumber(ams), tonumber(bms)
  return ams < bms or (ams == bms and tonumber(aseq) < tonumber(bseq))
end
local lost = tonumber(redis.call('GET', KEYS[3]) or '0')
local delivered = tonumber(redis.call('GET', KEYS[2]) or '0')
local appended = tonumber(redis.call('GET', KEYS[4]) or '0')
local before = delivered
local oldest = redis.call('XRANGE', KEYS[1], '-', '+', 'COUNT', 1)[1]
if not oldest then
  before = appended
else
  for _, entry in ipairs(redis.call('XRANGE', KEYS[1], '-', '+', 'COUNT', 16)) do
    local n, c = counts_of(entry[2])
    if n and c then before = c - n break end
  end
end
if before > delivered then lost = lost + (before - delivered) end
local inflight = redis.call('HGETALL', KEYS[5])
for i = 1, #inflight, 2 do
  if not oldest or older(inflight[i], oldest[1]) then lost = lost + tonumber(inflight[i + 1]) end
end
return {lost, appended - math.max(before, delivered)}
"""
)


def _is_nogroup(exc: redis.ResponseError) -> bool:
    return "NOGROUP" in str(exc)


@contextlib.contextmanager
def _reachable() -> Iterator[None]:
    """Redis's connection failures as :class:`~lookup.errors.Unavailable` (an outage the
    caller logs once), every other error as it is."""
    try:
        yield
    except (redis.ConnectionError, redis.TimeoutError) as exc:
        raise Unavailable(f"the click stream is unavailable: {exc}") from exc


def offset_of(entry_id: bytes | str) -> int:
    """A stream id ``ms-seq`` as one integer offset (order-preserving)."""
    text = entry_id.decode() if isinstance(entry_id, bytes) else entry_id
    ms, _, seq = text.partition("-")
    return (int(ms) << _SEQ_BITS) | int(seq or 0)


def stream_id(offset: int) -> str:
    """Inverse of :func:`offset_of`."""
    return f"{offset >> _SEQ_BITS}-{offset & ((1 << _SEQ_BITS) - 1)}"


class RedisClickLog:
    """The click log as one Redis stream with one consumer group (see the module docstring)."""

    def __init__(
        self,
        url: str,
        *,
        stream: str = "lookup:clicks",
        group: str = "aggregators",
        maxlen: int = 1_000_000,
        max_deliveries: int = 5,
        timeout_s: float = 5.0,
    ) -> None:
        if maxlen < 1:
            raise ValueError("maxlen must be at least 1")
        if max_deliveries < 1:
            raise ValueError("max_deliveries must be at least 1")
        self.url = url
        self.stream = stream
        self.group = group
        self.maxlen = maxlen
        self.max_deliveries = max_deliveries
        self.dead_stream = f"{stream}:dead"
        self._redis = redis_client(url, timeout_s=timeout_s)
        self._appended_key = f"{stream}:appended"
        self._epoch_key = f"{stream}:epoch"
        self._delivered_key = f"{stream}:{group}:delivered"
        self._lost_key = f"{stream}:{group}:lost"
        self._inflight_key = f"{stream}:{group}:inflight"
        self._append_script = self._redis.register_script(_APPEND)
        self._take_new_script = self._redis.register_script(_TAKE_NEW)
        self._settle_script = self._redis.register_script(_SETTLE)
        self._retention_script = self._redis.register_script(_RETENTION)
        self._group_ready = False
        self._epoch: bytes | None = None
        self._reset_marks: dict[str, int] = {}
        self._reset_epoch: bytes | None = None  # the epoch of the last reset counted
        self._reset_unknown = False  # a reset counted before its new epoch was seen
        self.resets = 0
        self.appended = 0
        self.claimed = 0
        self.acked = 0
        self.dead_lettered = 0

    @classmethod
    def from_url(cls, url: str | StoreUrl, **options: Any) -> RedisClickLog:
        """From ``redis://host:port/db[?stream=S&group=G&maxlen=N&max_deliveries=D]``, as
        text or parsed; it takes no ``options`` (any are ignored)."""
        if isinstance(url, StoreUrl):
            url = url.url
        parts = urlsplit(url.strip())
        query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
        unknown = sorted(set(query) - {"stream", "group", "maxlen", "max_deliveries"})
        if unknown:
            raise ValueError(f"unknown click log URL parameter(s) {unknown} in {url!r}")
        given: dict[str, Any] = {k: query[k] for k in ("stream", "group") if k in query}
        for name in ("maxlen", "max_deliveries"):
            if name in query:
                given[name] = int(query[name])
        return cls(urlunsplit((parts.scheme, parts.netloc, parts.path, "", "")), **given)

    # -- the ClickLog contract -------------------------------------------------------------

    def append(self, events: Sequence[LogRecord] | Sequence[tuple[Any, ...]]) -> None:
        """One ``XADD`` of the batch with the running click total (trimming the stream to
        about ``maxlen`` entries)."""
        if not events:
            return
        blob, first_ts, last_ts = encode_batch(events)
        with _reachable():
            _entry, epoch = self._append_script(
                keys=[self.stream, self._appended_key, self._epoch_key],
                args=[self.maxlen, len(events), blob, repr(first_ts), repr(last_ts),
                      secrets.token_hex(8)],
            )  # fmt: skip
        if self._epoch is not None and epoch != self._epoch:
            self._stream_reset(events)
        self._epoch = epoch
        self.appended += len(events)

    def _stream_reset(self, events: Sequence[Any]) -> None:
        """This batch went into a new stream: the old one (and what it held) is gone."""
        producer, first_seq = getattr(events, "producer", None), getattr(events, "first_seq", None)
        if producer is not None and first_seq is not None:
            self._reset_marks[producer] = int(first_seq)
        self._note_reset(self._epoch_now())

    def _epoch_now(self) -> bytes | None:
        return self._redis.get(self._epoch_key)  # type: ignore[return-value]

    def _note_reset(self, epoch: bytes | None) -> None:
        """Count and log one reset once, however many ways this process notices it (a new
        epoch on append, a missing group on take or acknowledge)."""
        if epoch is None:  # noticed before any append made the new epoch
            if self._reset_unknown:
                return
            self._reset_unknown = True
        elif epoch == self._reset_epoch:
            return
        elif self._reset_unknown:  # the epoch of the reset already counted
            self._reset_unknown = False
            self._reset_epoch = epoch
            return
        else:
            self._reset_epoch = epoch
        self.resets += 1
        log.warning(
            "the click stream %s was reset (Redis lost its data): its consumer group %s is "
            "created again; clicks it held uncounted are lost (counted in lostToReset)",
            self.stream,
            self.group,
        )

    def reset_marks(self) -> dict[str, int]:
        """Per producer, the first sequence number appended after the latest reset this
        process saw: its clicks numbered below went into a stream that is gone."""
        return dict(self._reset_marks)

    @staticmethod
    def _records(entry_id: bytes, fields: dict[bytes, bytes] | None) -> list[tuple[int, LogRecord]]:
        if not fields:  # trimmed away while pending
            return []
        offset = offset_of(entry_id)
        return [(offset, record) for record in decode_batch(fields[b"b"])]

    def _range(self, after: int, upto: int | None = None) -> Iterable[_Entry]:
        start = f"({stream_id(after)}" if after > 0 else "-"
        end = "+" if upto is None else stream_id(upto)
        while True:
            chunk = cast("list[_Entry]", self._redis.xrange(self.stream, start, end, count=_CHUNK))
            yield from chunk
            if len(chunk) < _CHUNK:
                return
            start = f"({chunk[-1][0].decode()}"

    def read(self, after: int, limit: int) -> list[tuple[int, LogRecord]]:
        """Entries after ``after``, whole batches, until at least ``limit`` events."""
        out: list[tuple[int, LogRecord]] = []
        for entry_id, fields in self._range(after):
            out.extend(self._records(entry_id, fields))
            if len(out) >= limit:
                break
        return out

    def trim(self, upto: int, before_ts: float) -> int:
        """Drop entries with offset <= ``upto`` whose newest click is before ``before_ts``,
        except those still pending in the group (not counted yet: they go once acknowledged)."""
        with _reachable():
            old = [eid for eid, fields in self._range(0, upto) if float(fields[b"l"]) < before_ts]
            if old and (self._group_ready or self._has_group()):
                try:
                    pending = {
                        p["message_id"] for p in self._pending_range(old[0], old[-1], len(old))
                    }
                except redis.ResponseError as exc:
                    if not _is_nogroup(exc):
                        raise
                    self._group_lost()
                    return 0  # the next take creates the group again; trim after that
                old = [eid for eid in old if eid not in pending]
            dropped = 0
            for i in range(0, len(old), 1000):
                batch = old[i : i + 1000]
                self._redis.xdel(self.stream, *batch)
                dropped += len(batch)
        return dropped

    def _pending_range(self, first: bytes, last: bytes, count: int) -> list[dict[str, Any]]:
        return self._redis.xpending_range(self.stream, self.group, first, last, count)  # type: ignore[no-any-return]

    def end_offset(self) -> int:
        """The offset of the newest entry ever appended (0 when none): trimming never
        moves it back."""
        try:
            info = self._redis.xinfo_stream(self.stream)
        except redis.ResponseError:  # no such stream yet
            return 0
        except redis.RedisError as exc:  # down: metrics say so instead of failing
            raise Unavailable(f"the click stream is unavailable: {exc}") from exc
        last = info.get("last-generated-id") or b"0-0"
        return offset_of(last)

    def backlog(self, after: int) -> int:
        """Events in entries after ``after``."""
        try:
            return sum(int(fields[b"n"]) for _eid, fields in self._range(after))
        except redis.RedisError as exc:
            raise Unavailable(f"the click stream is unavailable: {exc}") from exc

    # -- the consumer group --------------------------------------------------------------

    def _has_group(self) -> bool:
        try:
            groups = self._redis.xinfo_groups(self.stream)
        except redis.ResponseError:
            return False
        return any(g["name"].decode() == self.group for g in groups)

    def ensure_group(self) -> None:
        """Create the consumer group at the start of the stream (idempotent)."""
        if self._group_ready:
            return
        try:
            self._redis.xgroup_create(self.stream, self.group, id="0", mkstream=True)
        except redis.ResponseError as exc:
            if "BUSYGROUP" not in str(exc):
                raise
        self._group_ready = True

    def _group_lost(self) -> None:
        """The group is gone (Redis restarted empty): the next take creates it again."""
        if self._group_ready:
            self._note_reset(self._epoch_now())
        self._group_ready = False

    def take(
        self, consumer: str, *, count: int = 16, min_idle_s: float = 30.0
    ) -> list[tuple[int, LogRecord]]:
        """Up to ``count`` entries for ``consumer``: its own pending ones, else a dead
        consumer's idle past ``min_idle_s``, else new ones. Acknowledge them with :meth:`ack`
        once their effect is durable. A group found gone is created again (see the module
        docstring); a lost connection raises :class:`~lookup.errors.Unavailable`."""
        with _reachable():
            try:
                return self._take(consumer, count, min_idle_s)
            except redis.ResponseError as exc:
                if not _is_nogroup(exc):
                    raise
                self._group_lost()
                return self._take(consumer, count, min_idle_s)

    def _take(self, consumer: str, count: int, min_idle_s: float) -> list[tuple[int, LogRecord]]:
        self.ensure_group()
        own = cast(
            "list[tuple[bytes, list[_Entry]]]",
            self._redis.xreadgroup(self.group, consumer, {self.stream: "0"}, count=count),
        )
        entries = self._without_poison(own[0][1] if own else [])
        if entries:
            return self._decode_entries(entries)
        _cursor, claimed, *deleted = self._redis.xautoclaim(
            self.stream, self.group, consumer, int(min_idle_s * 1000), count=count
        )
        if deleted and deleted[0]:  # pending entries trimmed away: their clicks are lost
            self._settle(deleted[0], gone=True)
        claimed = self._without_poison(claimed)
        if claimed:
            self.claimed += len(claimed)
            return self._decode_entries(claimed)
        raw = self._take_new_script(
            keys=[self.stream, self._delivered_key, self._lost_key, self._inflight_key],
            args=[self.group, consumer, count],
        )
        new = [(eid, dict(zip(flat[::2], flat[1::2], strict=True))) for eid, flat in raw]
        return self._decode_entries(new)

    def _settle(self, ids: Sequence[bytes | str], *, gone: bool = False) -> int:
        """Acknowledge ``ids`` and forget their click counts; ``gone``: they were trimmed
        before they were counted, so their clicks count as lost. Returns how many were
        pending."""
        if not ids:
            return 0
        keys = [self.stream, self._lost_key, self._inflight_key]
        try:
            return int(
                self._settle_script(keys=keys, args=["1" if gone else "0", self.group, *ids])
            )
        except redis.ResponseError as exc:
            if not _is_nogroup(exc):
                raise
            self._group_lost()  # the entries went with the reset: nothing left to settle
            return 0

    def _without_poison(self, entries: list[Any]) -> list[Any]:
        """``entries`` less those delivered more than ``max_deliveries`` times, which go
        to the dead-letter stream."""
        if not entries:
            return entries
        first, last = entries[0][0], entries[-1][0]
        counts = {
            p["message_id"]: int(p["times_delivered"])
            for p in self._pending_range(first, last, len(entries))
        }
        kept = []
        for entry_id, fields in entries:
            deliveries = counts.get(entry_id, 1)
            if fields and deliveries > self.max_deliveries:
                why = f"delivered {deliveries} times, never acknowledged"
                self._dead_letter(entry_id, fields, why)
            else:
                kept.append((entry_id, fields))
        return kept

    def _dead_letter(self, entry_id: bytes, fields: dict[bytes, bytes], reason: str) -> None:
        """Copy an entry to the dead-letter stream with why, then acknowledge it."""
        record = dict(fields)
        record[b"id"] = entry_id
        record[b"reason"] = reason.encode()
        self._redis.xadd(self.dead_stream, record, maxlen=self.maxlen, approximate=True)  # type: ignore[arg-type]
        self._settle([entry_id])
        self.dead_lettered += 1

    def dead_letter_count(self) -> int:
        """Entries in the dead-letter stream (every process's, not only this one's)."""
        try:
            return int(self._redis.xlen(self.dead_stream))
        except redis.RedisError as exc:
            raise Unavailable(f"the click stream is unavailable: {exc}") from exc

    def dead_letters(self, limit: int = 100) -> list[dict[str, str]]:
        """The newest dead-lettered entries: their id, reason and event count."""
        out = []
        entries = cast("list[_Entry]", self._redis.xrevrange(self.dead_stream, count=limit))
        for _eid, fields in entries:
            out.append(
                {
                    "id": fields.get(b"id", b"").decode(),
                    "reason": fields.get(b"reason", b"").decode(),
                    "events": fields.get(b"n", b"?").decode(),
                }
            )
        return out

    def _decode_entries(self, entries: list[Any]) -> list[tuple[int, LogRecord]]:
        out: list[tuple[int, LogRecord]] = []
        gone = []
        for entry_id, fields in entries:
            if not fields:
                gone.append(entry_id)
                continue
            try:
                out.extend(self._records(entry_id, fields))
            except Exception as exc:  # noqa: BLE001 - any undecodable entry is poison
                self._dead_letter(entry_id, fields, f"undecodable: {type(exc).__name__}: {exc}")
        if gone:  # trimmed while pending: nothing left to count, its clicks are lost
            self._settle(gone, gone=True)
        return out

    def ack(self, offsets: Iterable[int]) -> int:
        """Acknowledge the entries at ``offsets`` (``XACK``); returns how many were pending."""
        ids = sorted({stream_id(offset) for offset in offsets})
        with _reachable():
            done = self._settle(ids)
        self.acked += done
        return done

    def retention(self) -> dict[str, int | None]:
        """What retention has cost the group, from one consistent reading: ``lostToRetention``
        — clicks trimmed by ``MAXLEN`` before the group counted them (unread, or read and
        trimmed before the acknowledgement); ``undelivered`` — clicks still in the stream
        the group has not been handed yet; ``groupLag`` — the same in entries as Redis's
        ``XINFO GROUPS`` reports it (None when Redis cannot tell, or before the group exists).
        """
        keys = [
            self.stream, self._delivered_key, self._lost_key, self._appended_key,
            self._inflight_key,
        ]  # fmt: skip
        try:
            lost, undelivered = self._retention_script(keys=keys)
            exists = self._redis.exists(self.stream)
            groups = self._redis.xinfo_groups(self.stream) if exists else []
        except redis.RedisError as exc:
            raise Unavailable(f"the click stream is unavailable: {exc}") from exc
        mine = [g for g in groups if g["name"].decode() == self.group]
        lag = mine[0].get("lag") if mine else None
        return {
            "lostToRetention": int(lost),
            "undelivered": int(undelivered),
            "groupLag": None if lag is None else int(lag),
        }

    def pending(self) -> dict[str, int]:
        """Entries delivered but not acknowledged, per consumer."""
        try:
            summary = self._redis.xpending(self.stream, self.group)
        except redis.ResponseError:
            return {}
        return {c["name"].decode(): int(c["pending"]) for c in summary.get("consumers") or []}

    # -- the rest ------------------------------------------------------------------------

    def locator(self) -> str:
        """The URL that opens this same stream and group (for the aggregator's process)."""
        return (
            f"{self.url}?stream={self.stream}&group={self.group}&maxlen={self.maxlen}"
            f"&max_deliveries={self.max_deliveries}"
        )

    def describe(self) -> str:
        """``redis://host:port/db`` and the stream (no password)."""
        return f"{describe_redis_url(self.url)} stream {self.stream}"

    def close(self) -> None:
        """Let go of the connection pool."""
        self._redis.close()
