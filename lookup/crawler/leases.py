"""Partition leases from etcd: which worker may fetch which partition, and with what epoch.

Each worker holds **one etcd lease** (TTL ``crawl_lease_ttl``) and puts, under it, its
membership key ``/lookup/crawl/<crawl>/workers/<worker>`` and one key
``/lookup/crawl/<crawl>/parts/<p>`` per partition it owns, each created in a
transaction that succeeds only while the key is absent. The key's create revision is
the grant's **epoch**: etcd's revision only grows, so a later grant always has a larger
epoch (the fencing token the store checks, :mod:`lookup.crawler.partitions`).

A :class:`~lookup.kit.engines.etcdlease.KeptLease` renews the lease every TTL/3 (a balance
round that runs longer, as a join's grants on a loaded machine do, renews on its way) and
keeps a *local deadline* — the monotonic time the renewal was sent + TTL, never later
than etcd's own expiry. :meth:`PartitionLeases.permits` is asked before every request:
past the deadline (etcd unreachable, or this process was frozen) it refuses at once, even
while the renewal thread hangs. Once etcd says the lease is gone, every partition is
dropped and the worker joins again with a new lease (new epochs).

**Balance.** Each partition's preferred owner is the live worker with the highest
rendezvous hash ``blake2b(worker/partition)``: every worker computes the same answer from
the membership list alone, a join moves ~P/N partitions to the newcomer and a leave
moves only the leaver's. A worker takes the free partitions it prefers; it *drains* the
ones it holds but no longer prefers (no new work, then :meth:`release` once its fetches
in flight are done), and the preferred worker takes them on its next round.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import etcd3gw
from etcd3gw.utils import _encode

from lookup.kit.engines.etcdlease import KeptLease

__all__ = ["LeaseLog", "PartitionLeases", "preferred_owner"]

log = logging.getLogger("lookup.crawler.fleet")


def preferred_owner(workers: list[str], part: int) -> str | None:
    """The live worker a partition belongs to under rendezvous hashing (None: nobody)."""
    best: tuple[bytes, str] | None = None
    for w in workers:
        score = hashlib.blake2b(f"{w}/{part}".encode(), digest_size=8).digest()
        if best is None or (score, w) > best:
            best = (score, w)
    return None if best is None else best[1]


@dataclass
class LeaseLog:
    """What happened to one worker's leases, in order (for the drills and the report)."""

    events: list[tuple[float, str, str]] = field(default_factory=list)

    def add(self, kind: str, detail: str = "") -> None:
        self.events.append((time.time(), kind, detail))
        log.info("lease %s: %s", kind, detail)


class PartitionLeases:
    """One worker's membership and partition leases in etcd, kept alive by a thread."""

    def __init__(
        self,
        client: etcd3gw.Etcd3Client,
        crawl: str,
        worker: str,
        partitions: int,
        ttl: int,
        *,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.client = client
        self.prefix = f"/lookup/crawl/{crawl}/"
        self.worker = worker
        self.partitions = partitions
        self.ttl = max(2, int(ttl))  # etcd's lease TTL is whole seconds, at least 2
        self.log = LeaseLog()
        self._lock = threading.Lock()
        self._owned: dict[int, int] = {}  # partition -> epoch
        self._draining: set[int] = set()
        self._lease = KeptLease(
            client,
            self.ttl,
            on_renewed=self._renewed,
            on_failure=self._renewal_failed,
            on_lost=self._lost,
            monotonic=monotonic,
            name="crawl-leases",
        )

    # -- the worker's questions -------------------------------------------------------
    def owned(self) -> dict[int, int]:
        """Partitions held and still permitted (within the deadline), with their epochs."""
        with self._lock:
            if not self._lease.live():
                return {}
            return {p: e for p, e in self._owned.items() if p not in self._draining}

    def permits(self, part: int, epoch: int | None = None) -> bool:
        """May this worker start a request in ``part`` now (at ``epoch``, if given)?"""
        with self._lock:
            if not self._lease.live() or part in self._draining:
                return False
            held = self._owned.get(part)
            return held is not None and (epoch is None or held == epoch)

    def draining(self) -> set[int]:
        """Partitions to hand over once their fetches in flight are done."""
        with self._lock:
            return set(self._draining)

    def live(self) -> bool:
        """Is the lease within its local deadline (and not lost)?"""
        return self._lease.live()

    # -- joining, renewing, leaving -------------------------------------------------------
    def start(self) -> PartitionLeases:
        """Join the fleet (a lease and the membership key) and start the keep-alive thread."""
        self._join()
        self._lease.start()
        return self

    def _join(self) -> None:
        def member(lease: Any) -> None:  # the membership key, under the new lease
            self.client.put(f"{self.prefix}workers/{self.worker}", str(time.time()), lease=lease)
            with self._lock:
                self._owned.clear()
                self._draining.clear()

        lease = self._lease.grant(bind=member)
        self.log.add("joined", f"{self.worker} lease {lease.id} ttl {self.ttl}s")
        try:
            self._balance()
        except Exception as exc:  # noqa: BLE001 - the keep-alive thread's next round retries
            self.log.add("balance-failed", type(exc).__name__)

    def _renew_if_due(self) -> None:
        """Renew in the middle of a long balance round (a join grants up to P partitions one
        transaction each: on a loaded machine longer than a short TTL)."""
        if not self._lease.due():
            return
        try:
            renewed = self._lease.renew()
        except Exception as exc:
            self.log.add("renewal-failed", type(exc).__name__)
            raise
        if not renewed:
            with self._lock:
                self._owned.clear()
            raise RuntimeError("the lease expired during a balance round")

    # the keep-alive thread's news (kit/etcdlease.py calls these)
    def _renewed(self) -> None:
        try:
            self._balance()
        except Exception as exc:  # noqa: BLE001 - the next round tries again
            self.log.add("balance-failed", type(exc).__name__)

    def _renewal_failed(self, exc: Exception) -> None:
        self.log.add("renewal-failed", type(exc).__name__)  # retried until the deadline

    def _lost(self) -> None:
        with self._lock:
            self._owned.clear()
        self.log.add("lost", "etcd says the lease expired; joining again")
        try:
            self._join()
        except Exception as exc:  # noqa: BLE001 - try again next round
            self.log.add("join-failed", type(exc).__name__)

    def _members(self) -> list[str]:
        out = []
        for _value, meta in self.client.get_prefix(f"{self.prefix}workers/"):
            out.append(meta["key"].decode().rsplit("/", 1)[1])
        return sorted(out)

    def _holders(self) -> dict[int, tuple[str, int]]:
        out: dict[int, tuple[str, int]] = {}
        for value, meta in self.client.get_prefix(f"{self.prefix}parts/"):
            part = int(meta["key"].decode().rsplit("/", 1)[1])
            out[part] = (value.decode(), int(meta["create_revision"]))
        return out

    def _balance(self) -> None:
        """Take the free partitions this worker prefers; drain the ones it no longer does."""
        members = self._members()
        if self.worker not in members:
            members.append(self.worker)
        holders = self._holders()
        with self._lock:
            for part in list(self._owned):  # a key gone from etcd is not ours any more
                if holders.get(part, ("", 0)) != (self.worker, self._owned[part]):
                    self._owned.pop(part)
                    self._draining.discard(part)
                    self.log.add("vanished", f"partition {part}")
        for part in range(self.partitions):
            self._renew_if_due()
            mine = preferred_owner(members, part) == self.worker
            with self._lock:
                held = part in self._owned
            if mine and part not in holders:
                epoch = self._try_take(part)
                if epoch is not None:
                    with self._lock:
                        self._owned[part] = epoch
            elif held and not mine:
                with self._lock:
                    if part not in self._draining:
                        self._draining.add(part)
                        self.log.add("draining", f"partition {part} (preferred elsewhere)")

    def _try_take(self, part: int) -> int | None:
        key = _encode(f"{self.prefix}parts/{part}")
        result = self.client.transaction({
            "compare": [{"key": key, "result": "EQUAL", "target": "CREATE",
                         "create_revision": 0}],
            "success": [{"request_put": {"key": key, "value": _encode(self.worker),
                                         "lease": self._lease.id}}],
            "failure": [],
        })  # fmt: skip
        if not result.get("succeeded"):
            return None
        epoch = int(result["header"]["revision"])
        self.log.add("granted", f"partition {part} epoch {epoch}")
        return epoch

    def release(self, part: int) -> None:
        """Give a drained (or fenced-out) partition back: drop it here, delete its key if
        it is still this grant's."""
        with self._lock:
            epoch = self._owned.pop(part, None)
            self._draining.discard(part)
        if epoch is None:
            return
        key = _encode(f"{self.prefix}parts/{part}")
        try:
            self.client.transaction({
                "compare": [{"key": key, "result": "EQUAL", "target": "CREATE",
                             "create_revision": epoch}],
                "success": [{"request_delete_range": {"key": key}}],
                "failure": [],
            })  # fmt: skip
            self.log.add("released", f"partition {part} epoch {epoch}")
        except Exception as exc:  # noqa: BLE001 - it expires with the lease anyway
            self.log.add("release-failed", f"partition {part}: {type(exc).__name__}")

    def drop(self, part: int, why: str) -> None:
        """Stop using ``part`` at once (the store refused its epoch); its key is released."""
        self.log.add("dropped", f"partition {part}: {why}")
        self.release(part)

    def stop(self) -> None:
        """Leave the fleet: stop renewing and revoke the lease (its keys go with it)."""
        self._lease.stop()
        with self._lock:
            self._owned.clear()
        try:
            self._lease.revoke()  # not live here any more, whatever etcd answers
        except Exception:  # noqa: BLE001 - it expires on its own within the TTL
            pass
        self.log.add("left", self.worker)
