"""Snowflake worker ids leased from etcd — never from a hash or a random draw.

A generator process takes a worker id by creating ``/lookup/snowflake/workers/<id>``
with a lease, in one transaction that succeeds only if the key is absent ("create if
absent": ``compare create_revision == 0``). The key's create revision is the holder's
*epoch*, a fencing token: every later write by the holder is conditional on it.

**Stops the moment the lease is gone.** A :class:`~lookup.kit.engines.etcdlease.KeptLease`
renews the lease every TTL/3 and records the *local deadline* ``monotonic time the
renewal was sent + TTL`` (etcd counts the TTL from when it *received* the renewal, so
this is never later than the server's expiry). :meth:`WorkerLease.permit` runs before
every id and refuses once the renewal said the lease is gone, or the deadline has
passed — even if the keep-alive thread is stuck in a hung request.

**A restart never re-issues an id.** Besides the leased key, each worker id has an
unleased *high-water mark* ``/lookup/snowflake/high/<id>``: the latest millisecond any
holder may stamp into an id. A holder reserves ahead — it writes ``now + TTL`` with
each renewal (conditional on its epoch) and never issues past what it reserved — and
a new holder of the same worker id waits until its own clock has passed the mark
before its first id. Storing the mark, rather than only waiting out the TTL, also
covers a new holder whose clock is behind the old holder's (another machine, or a
clock stepped back across the restart), and costs one write per renewal, not per id.
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import etcd3gw
from etcd3gw.utils import _decode, _encode

from lookup import settings
from lookup.blocks.ids.snowflake import SEED_LAYOUT, Clock, Snowflake, SnowflakeLayout
from lookup.blocks.ids.snowflake import wall_clock_ms as _wall_ms
from lookup.errors import Unavailable
from lookup.kit.engines.etcdlease import KeptLease

__all__ = [
    "HIGH_PREFIX",
    "WORKERS_PREFIX",
    "LeaseEvent",
    "LeaseLost",
    "ReservationExhausted",
    "WorkerLease",
    "worker_holders",
]

WORKERS_PREFIX = "/lookup/snowflake/workers/"
HIGH_PREFIX = "/lookup/snowflake/high/"


class LeaseLost(Unavailable):
    """The worker-id lease is gone (revoked, expired, or not renewed before its deadline)."""

    default_code = "LEASE_LOST"


class ReservationExhausted(Unavailable):
    """The clock is past the milliseconds this holder reserved in etcd (renewals are late)."""

    default_code = "RESERVATION_EXHAUSTED"


@dataclass(frozen=True)
class LeaseEvent:
    """Something that happened to the lease, stamped with wall ms (for the drills)."""

    wall_ms: int
    kind: str
    detail: str = ""


@dataclass
class _State:
    reserved_ms: int = -1
    floor_ms: int = -1  # the previous holders' high-water mark: issue only after it
    lost: str = ""
    events: list[LeaseEvent] = field(default_factory=list)


class WorkerLease:
    """One process's lease on one Snowflake worker id, kept alive by a thread.

    ``ttl_s`` defaults to the ``snowflake_lease_ttl`` setting (``LOOKUP_SNOWFLAKE_LEASE_TTL``).
    """

    def __init__(
        self,
        client: etcd3gw.Etcd3Client,
        *,
        ttl_s: float | None = None,
        layout: SnowflakeLayout = SEED_LAYOUT,
        workers: Iterable[int] | None = None,
        clock: Clock = _wall_ms,
        monotonic: Callable[[], float] = time.monotonic,
        max_wait_s: float | None = None,
    ) -> None:
        self.client = client
        ttl = settings.get("snowflake_lease_ttl") if ttl_s is None else ttl_s
        self._lease = KeptLease(
            client,
            ttl,
            on_renewed=self._renewed,
            on_failure=self._renewal_failed,
            on_lost=self._gone,
            monotonic=monotonic,
            name="snowflake-lease",
        )
        self.ttl = self._lease.ttl  # etcd's lease TTL is whole seconds, at least 2
        self.layout = layout
        self.candidates = list(range(layout.max_worker + 1) if workers is None else workers)
        self.clock = clock
        self.monotonic = monotonic
        self.max_wait_s = 3 * self.ttl if max_wait_s is None else max_wait_s
        self.worker_id = -1
        self.epoch = 0
        self.last_issued_ms = -1
        self._state = _State()
        self._issue_lock = threading.Lock()

    # ------------------------------------------------------------------ taking the id

    def acquire(self, wait_s: float = 0.0) -> int:
        """Lease a free worker id, wait out its previous holders' mark; return the id.

        ``wait_s`` keeps trying that long while every candidate is taken (a new holder
        waiting for a dead holder's lease to expire).
        """
        give_up = self.monotonic() + wait_s
        holder = json.dumps({"pid": os.getpid(), "host": socket.gethostname()})
        while True:
            self._lease.grant()
            found = next(
                ((w, f) for w in self.candidates if (f := self._try_create(w, holder)) is not None),
                None,
            )
            if found is not None:
                self.worker_id, (self.epoch, high) = found
                break
            self._lease.revoke()
            if self.monotonic() >= give_up:
                raise Unavailable(f"every worker id of {len(self.candidates)} is leased")
            time.sleep(0.1)
        self._state.floor_ms = high
        self._event("acquired", f"worker {self.worker_id}, epoch {self.epoch}, mark {high}")
        self._lease.start()
        self._wait_past(high)
        self._reserve()
        return self.worker_id

    def _try_create(self, worker: int, holder: str) -> tuple[int, int] | None:
        key = _encode(f"{WORKERS_PREFIX}{worker}")
        result = self.client.transaction(
            {
                "compare": [
                    {"key": key, "result": "EQUAL", "target": "CREATE", "create_revision": 0}
                ],
                "success": [
                    {
                        "request_put": {
                            "key": key,
                            "value": _encode(holder),
                            "lease": self._lease.id,
                        }
                    },
                    {"request_range": {"key": _encode(f"{HIGH_PREFIX}{worker}")}},
                ],
                "failure": [],
            }
        )
        if not result.get("succeeded"):
            return None
        kvs = result["responses"][1]["response_range"].get("kvs", [])
        high = int(_decode(kvs[0]["value"])) if kvs else -1
        return int(result["header"]["revision"]), high

    def _wait_past(self, high: int) -> None:
        ahead_s = (high - self.clock()) / 1000.0
        if ahead_s > self.max_wait_s:
            self.release()
            raise Unavailable(
                f"worker {self.worker_id}'s mark is {ahead_s:.1f} s ahead of this clock; "
                "refusing rather than risk re-issuing its ids"
            )
        while self.clock() <= high:
            self._check_deadline()
            time.sleep(0.005)
        if ahead_s > 0:
            self._event("waited", f"{ahead_s * 1000:.0f} ms for the previous holder's mark")

    # ------------------------------------------------------------------- keeping it

    def _put_mark(self, mark_ms: int) -> bool:
        """Write the worker's high-water mark, only while this epoch still owns the key."""
        result = self.client.transaction(
            {
                "compare": [
                    {
                        "key": _encode(f"{WORKERS_PREFIX}{self.worker_id}"),
                        "result": "EQUAL",
                        "target": "CREATE",
                        "create_revision": self.epoch,
                    }
                ],
                "success": [
                    {
                        "request_put": {
                            "key": _encode(f"{HIGH_PREFIX}{self.worker_id}"),
                            "value": _encode(str(mark_ms)),
                        }
                    }
                ],
                "failure": [],
            }
        )
        return bool(result.get("succeeded"))

    def _reserve(self) -> None:
        """Move the mark to ``now + TTL``, only while this epoch still owns the key."""
        target = max(self._state.reserved_ms, self.clock() + self.ttl * 1000)
        if not self._put_mark(target):
            self._mark_lost("the worker key is no longer this holder's")
            return
        self._state.reserved_ms = target

    # the keep-alive thread's news (kit/etcdlease.py calls these)
    def _renewed(self) -> None:
        try:
            self._reserve()
        except Exception as exc:  # noqa: BLE001
            self._event("reservation failed", type(exc).__name__)

    def _renewal_failed(self, exc: Exception) -> None:
        self._event("renewal failed", type(exc).__name__)  # tried again until the deadline

    def _gone(self) -> None:
        self._mark_lost("etcd says the lease has expired or was revoked")

    def _mark_lost(self, why: str) -> None:
        if not self._state.lost:
            self._state.lost = why
            self._event("lost", why)
        self._lease.stop(wait=False)  # lost for good: no more renewals

    def _event(self, kind: str, detail: str = "") -> None:
        self._state.events.append(LeaseEvent(_wall_ms(), kind, detail))

    def _check_deadline(self) -> None:
        if self._state.lost:
            raise LeaseLost(f"worker {self.worker_id}: {self._state.lost}")
        if self.monotonic() >= self._lease.deadline:
            self._mark_lost("not renewed before its deadline")
            raise LeaseLost(f"worker {self.worker_id}: lease not renewed before its deadline")

    # ------------------------------------------------------------------- issuing

    def permit(self, unix_ms: int) -> None:
        """Veto an id stamped ``unix_ms`` unless the lease is live and covers it."""
        with self._issue_lock:
            self._check_deadline()
            if unix_ms <= self._state.floor_ms:
                raise Unavailable(f"worker {self.worker_id}: previous holder's mark not passed")
            if unix_ms > self._state.reserved_ms:
                raise ReservationExhausted(
                    f"worker {self.worker_id}: {unix_ms} is past the reserved "
                    f"{self._state.reserved_ms}"
                )
            self.last_issued_ms = max(self.last_issued_ms, unix_ms)

    def generator(self) -> Snowflake:
        """A Snowflake for the leased worker id that asks :meth:`permit` before each id."""
        if self.worker_id < 0:
            self.acquire()
        return Snowflake(
            self.worker_id,
            layout=self.layout,
            clock=self.clock,
            permit=self.permit,
            not_before_ms=self._state.floor_ms,
        )

    @property
    def lost(self) -> str:
        """Why the lease is lost, or ``""`` while it is live."""
        return self._state.lost

    @property
    def reserved_ms(self) -> int:
        """The latest millisecond this holder may stamp into an id."""
        return self._state.reserved_ms

    def deadline_wall_ms(self) -> int:
        """The local deadline, as wall-clock ms (to compare with ids' timestamps)."""
        return self.clock() + int((self._lease.deadline - self.monotonic()) * 1000)

    @property
    def events(self) -> list[LeaseEvent]:
        """What happened to the lease so far."""
        return list(self._state.events)

    @property
    def lease_id(self) -> int:
        """etcd's id of the lease (to revoke it from outside, in the drills)."""
        return self._lease.id

    def release(self) -> None:
        """Stop issuing, lower the mark to the last id issued, and revoke the lease.

        Lowering the mark is safe because no id is issued after ``lost`` is set (both
        happen under the issue lock); it lets the next holder start at once instead of
        waiting out the reservation. If that write fails, the reservation stands.
        """
        self._lease.stop()
        with self._issue_lock:
            live = not self._state.lost and self.monotonic() < self._lease.deadline
            self._mark_lost("released")
        if live and self.worker_id >= 0:
            final = max(self.last_issued_ms, self._state.floor_ms)
            try:
                self._put_mark(final)
            except Exception:  # noqa: BLE001 - the higher reservation then stands
                pass
        try:
            self._lease.revoke()
        except Exception:  # noqa: BLE001 - it expires on its own within the TTL
            pass

    def __enter__(self) -> WorkerLease:
        if self.worker_id < 0:
            self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def worker_holders(client: etcd3gw.Etcd3Client) -> dict[int, dict[str, Any]]:
    """Every leased worker id and what its key says about the holder."""
    out: dict[int, dict[str, Any]] = {}
    for value, meta in client.get_prefix(WORKERS_PREFIX):
        worker = int(meta["key"].decode().rsplit("/", 1)[1])
        info = json.loads(value.decode())
        info["lease"] = int(meta.get("lease", 0) or 0)
        out[worker] = info
    return out
