"""Submitted searches on a Redis Stream, copied by a consumer group to the build's CSV.

Every API process appends each accepted search with one ``XADD`` (``MAXLEN ~ N``: the
stream is bounded, as the click stream is) before it answers 202, so an acknowledged
search is in Redis. Every process also runs a **copier**, one consumer of the group
``copiers`` (the click stream's pattern): it takes new entries (``XREADGROUP >``) and
entries another copier took but left unacknowledged for ``claim_idle_s`` (``XAUTOCLAIM``:
that process died), appends them to ``<data-dir>/typeahead/searches.csv`` — the file the
next ``lookup typeahead build`` folds — under an exclusive file lock, ``fsync`` s, and only
then acknowledges them (``XACK``). So a copier killed at any point loses nothing.

A copied entry is deleted from the stream in the acknowledging transaction, so the stream
holds only what is not copied yet, and ``MAXLEN`` (a bound against a copier-less fleet
filling Redis) trims only a backlog that long; a pending entry trimmed so is counted
(``lostToTrimming`` in ``/healthz``).

Nothing is copied twice either. The copy carries each entry's stream id in a column
``event`` (the build reads columns by name and ignores it). Before a copier writes, it
leaves a marker in Redis (``<stream>:<group>:writing``: consumer → the file's inode and
size then); the acknowledgement removes the marker in the same transaction. A copier that
claims a dead one's entries reads the file from the oldest marker on and skips the ids
already there — the batch that was written but never acknowledged — and acknowledges them.
"""

from __future__ import annotations

import csv
import fcntl
import io
import logging
import os
import secrets
import socket
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any, cast
from urllib.parse import parse_qs, urlsplit, urlunsplit

import redis

from lookup.errors import Unavailable
from lookup.kit.engines.redis import UNAVAILABLE, describe_redis_url, redis_client
from lookup.typeahead.trending import Clock, Pick, SearchLog

__all__ = ["COLUMNS", "RedisSearchFeed"]

log = logging.getLogger("lookup.typeahead")

#: The stream copy's columns: the search log's, plus the entry's stream id.
COLUMNS = (*SearchLog.COLUMNS, "event")
_FIELDS = (b"t", b"m", b"q", b"u", b"b", b"p", b"r", b"x")
_Entry = tuple[bytes, dict[bytes, bytes] | None]


class RedisSearchFeed:
    """Searches to a Redis Stream; a background copier to the build's CSV (module doc)."""

    def __init__(
        self,
        url: str,
        *,
        copy_to: Path,
        clock: Clock = time.time,
        stream: str = "lookup:typeahead:searches",
        group: str = "copiers",
        maxlen: int = 1_000_000,
        claim_idle_s: float | None = None,
        consumer: str | None = None,
    ) -> None:
        from lookup import settings

        if maxlen < 1:
            raise ValueError("maxlen must be at least 1")
        self.url = url
        self.path = Path(copy_to)
        self.clock = clock
        self.stream = stream
        self.group = group
        self.maxlen = maxlen
        idle = (
            settings.get("typeahead_searches_claim_idle") if claim_idle_s is None else claim_idle_s
        )
        self.claim_idle_ms = int(idle * 1000)
        self.copy_delay_s: float = settings.get("typeahead_searches_copy_delay")
        self.consumer = consumer or f"{socket.gethostname()}-{os.getpid()}-{secrets.token_hex(3)}"
        self.markers = f"{stream}:{group}:writing"
        self.client = redis_client(url, timeout_s=2.0)
        self._group_ready = False
        self._claim_from = b"0-0"
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.appended = self.copied = self.claimed = self.skipped = self.errors = self.lost = 0

    @classmethod
    def from_url(cls, url: str, *, copy_to: Path, clock: Clock = time.time) -> RedisSearchFeed:
        """From ``redis://host:port/db[?stream=S&group=G&maxlen=N&prefix=P]`` (``prefix``
        names the trending keys and is the stream's prefix when ``stream`` is not given)."""
        parts = urlsplit(url.strip())
        query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
        unknown = sorted(set(query) - {"stream", "group", "maxlen", "prefix"})
        if unknown:
            raise ValueError(f"unknown searches URL parameter(s) {unknown} in {url!r}")
        given: dict[str, Any] = {"group": query.get("group", "copiers")}
        given["stream"] = query.get("stream", query.get("prefix", "lookup:typeahead") + ":searches")
        if "maxlen" in query:
            given["maxlen"] = int(query["maxlen"])
        plain = urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))
        return cls(plain, copy_to=copy_to, clock=clock, **given)

    # -- producing -----------------------------------------------------------------------

    def append(
        self,
        query: str,
        market: str,
        user: str | None,
        is_bot: bool = False,
        pick: Pick | None = None,
    ) -> None:
        """One ``XADD`` of the search (user id hashed as the CSV has it); 503 when down."""
        import hashlib

        uid = hashlib.blake2b((user or "anonymous").encode(), digest_size=8).hexdigest()
        fields: dict[str, str | int] = {
            "t": int(self.clock()),
            "m": market,
            "q": query,
            "u": uid,
            "b": int(is_bot),
            "p": "" if pick is None else 1,
            "r": "" if pick is None or pick.rank is None else pick.rank,
            "x": "" if pick is None else pick.prefix or "",
        }
        try:
            self.client.xadd(self.stream, fields, maxlen=self.maxlen, approximate=True)  # type: ignore[arg-type]
        except UNAVAILABLE as exc:
            raise Unavailable(f"the searches stream is unavailable: {exc}") from exc
        self.appended += 1

    # -- copying -------------------------------------------------------------------------

    def _ensure_group(self) -> None:
        if self._group_ready:
            return
        try:
            self.client.xgroup_create(self.stream, self.group, id="0", mkstream=True)
        except redis.ResponseError as exc:
            if "BUSYGROUP" not in str(exc):
                raise
        self._group_ready = True

    def _take(self, block_ms: int | None) -> tuple[list[_Entry], list[_Entry]]:
        """``(claimed, new)``: entries a dead copier left pending, then new ones."""
        self._ensure_group()
        try:
            res = self.client.xautoclaim(
                self.stream, self.group, self.consumer, self.claim_idle_ms,
                start_id=self._claim_from, count=256,
            )  # fmt: skip
            self._claim_from = res[0]
            if len(res) > 2:  # pending entries trimmed (MAXLEN) before anyone copied them
                self.lost += len(res[2])
            claimed = [e for e in cast("list[_Entry]", res[1]) if e[1]]
            got = cast(
                "list[tuple[bytes, list[_Entry]]]",
                self.client.xreadgroup(
                    self.group, self.consumer, {self.stream: ">"}, count=256, block=block_ms
                ),
            )
        except redis.ResponseError as exc:
            if "NOGROUP" in str(exc):
                self._group_ready = False  # Redis lost it: made again on the next round
            raise
        new = got[0][1] if got else []
        return claimed, new

    def copy_once(self, block_ms: int | None = None) -> int:
        """One round: claim, read, append to the CSV, ``fsync``, acknowledge; how many
        entries were acknowledged. ``block_ms`` waits that long for new entries."""
        claimed, new = self._take(block_ms)
        entries = claimed + new
        if not entries:
            return 0
        self.claimed += len(claimed)
        if self.copy_delay_s:  # a drill's window in which this copier holds the batch
            self._stop.wait(self.copy_delay_s)
        ids = [eid for eid, _ in entries]
        self._write(entries, dedup=bool(claimed))
        pipe = self.client.pipeline(transaction=True)
        pipe.xack(self.stream, self.group, *ids)
        pipe.xdel(self.stream, *ids)  # copied: the stream holds only the backlog
        pipe.hdel(self.markers, self.consumer)
        pipe.execute()
        if claimed:
            self._forget_dead_markers()
        return len(ids)

    def _write(self, entries: Sequence[_Entry], *, dedup: bool) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "a+", newline="", encoding="utf-8") as f:
            fcntl.flock(f.fileno(), fcntl.LOCK_EX)
            self._header(f)
            done = self._ids_since_markers(f) if dedup else set()
            end = f.seek(0, os.SEEK_END)
            self.client.hset(self.markers, self.consumer, f"{os.fstat(f.fileno()).st_ino}:{end}")
            out = io.StringIO()
            w = csv.writer(out)
            for eid, fields in entries:
                event = eid.decode()
                if event in done or not fields:
                    self.skipped += 1
                    continue
                w.writerow([fields.get(k, b"").decode() for k in _FIELDS] + [event])
                self.copied += 1
            f.write(out.getvalue())
            f.flush()
            os.fsync(f.fileno())

    def _header(self, f: IO[str]) -> None:
        """A new file gets :data:`COLUMNS`; a search log of fewer columns (the embedded
        feed's) gets the rest, empty on its rows, rewritten in place (the lock holds)."""
        f.seek(0)
        first = f.readline()
        if not first:
            f.write(",".join(COLUMNS) + "\r\n")
            return
        header = tuple(next(csv.reader([first])))
        if header == COLUMNS:
            return
        f.seek(0)
        rows = list(csv.reader(f))
        out = io.StringIO()
        w = csv.writer(out)
        w.writerow(COLUMNS)
        w.writerows(r + [""] * (len(COLUMNS) - len(r)) for r in rows[1:])
        f.truncate(0)
        f.write(out.getvalue())

    def _ids_since_markers(self, f: IO[str]) -> set[str]:
        """Stream ids in the file from the oldest write marker on (the batches whose
        acknowledgement may not have happened)."""
        inode = os.fstat(f.fileno()).st_ino
        starts = []
        for value in cast("dict[bytes, bytes]", self.client.hgetall(self.markers)).values():
            ino, _, at = value.decode().partition(":")
            if int(ino) == inode:
                starts.append(int(at))
        if not starts:
            return set()
        f.seek(min(starts))
        return {row[-1] for row in csv.reader(f) if len(row) == len(COLUMNS)}

    def _forget_dead_markers(self) -> None:
        """Drop the markers (and consumers) of copiers with nothing pending any more."""
        info = self.client.xpending(self.stream, self.group)
        pending = {c["name"].decode() for c in info.get("consumers", [])}
        for name in cast("dict[bytes, bytes]", self.client.hgetall(self.markers)):
            who = name.decode()
            if who != self.consumer and who not in pending:
                self.client.hdel(self.markers, who)
                self.client.xgroup_delconsumer(self.stream, self.group, who)

    def _copy_forever(self) -> None:
        while not self._stop.is_set():
            try:
                self.copy_once(block_ms=500)
            except Exception:  # Redis or the disk is down: retry, never stop copying
                self.errors += 1
                log.warning("copying searches from %s failed", self.stream, exc_info=True)
                self._stop.wait(1.0)

    def start(self) -> None:
        """Run the copier in a background thread until :meth:`close`."""
        if self._thread is None:
            self._stop.clear()
            self._thread = threading.Thread(
                target=self._copy_forever, name="searches-copier", daemon=True
            )
            self._thread.start()

    def close(self) -> None:
        """Stop the copier (its current round finishes) and close the connections."""
        self._stop.set()
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.join(5)
            self._leave_group()
        self.client.close()

    def _leave_group(self) -> None:
        """Remove this copier from the group when it holds nothing (a consumer removed
        with pending entries would take them with it, so one that has any stays: another
        copier claims them)."""
        try:
            mine = self.client.xpending_range(
                self.stream, self.group, "-", "+", 1, consumername=self.consumer
            )
            if not mine:
                self.client.xgroup_delconsumer(self.stream, self.group, self.consumer)
        except (redis.ResponseError, redis.ConnectionError, redis.TimeoutError, OSError):
            log.info("copier %s left the group %s as it was", self.consumer, self.group)

    def status(self) -> dict[str, Any]:
        """The backend and this process's counts (no Redis call: ``/healthz`` stays cheap)."""
        return {
            "backend": f"redis {describe_redis_url(self.url)} stream {self.stream}",
            "consumer": self.consumer,
            "copyTo": str(self.path),
            "appended": self.appended,
            "copied": self.copied,
            "claimed": self.claimed,
            "skippedAsCopied": self.skipped,
            "lostToTrimming": self.lost,
            "errors": self.errors,
        }
