"""Which shard replicas are alive, and which index version each serves: membership in etcd.

Every shard process (one replica of one shard) keeps a :class:`ShardRegistration`: one etcd
lease (a :class:`~lookup.kit.engines.etcdlease.KeptLease`, renewed every TTL/3) and, under
it, the key ``/lookup/search/members/<shard>/<replica>`` whose value is the JSON record
``{address, shard, replica, version, pid, started}``. A replica that dies stops renewing,
etcd expires the lease after its TTL and deletes the key with it; a clean stop deletes the
key and revokes the lease at once; loading a new index version rewrites the record. When
etcd says the lease is gone (it was unreachable for longer than the TTL), the registration
grants a new lease and puts the record again, so a replica comes back on its own.

Coordinators keep a :class:`MembershipWatcher`: the member set read from the prefix,
refreshed by **polling one range request** every ``search_members_poll`` seconds, and an
``on_change(members)`` callback each time it differs (a coordinator replaces its replicas
from it). Polling, not etcd3gw's watch: that watch reads its stream on a thread whose
errors nobody sees, so a watch that died (etcd restarted, frozen, compacted) would look
exactly like a quiet cluster. A poll that fails says so. Each answer carries etcd's
revision; an answer whose revision is not newer than the last one changes nothing. When
etcd cannot be reached the watcher keeps the last membership it read and reports it as
``stale`` with its age, so queries go on being routed to the replicas last known alive.

``lookup search members`` prints the live membership as JSON; ``python -m
lookup.search.membership register ...`` is a process that registers and waits (what the
tests kill and start, and what a shard server does by embedding the class).
"""

from __future__ import annotations

import argparse
import base64
import json
import logging
import os
import signal
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import etcd3gw
from etcd3gw.utils import _encode, _increment_last_byte

from lookup.kit.engines.etcdlease import KeptLease

__all__ = [
    "PREFIX",
    "BadRecord",
    "MemberRecord",
    "MembershipChange",
    "MembershipWatcher",
    "ShardRegistration",
    "diff",
    "member_key",
    "parse_key",
    "read_members",
]

log = logging.getLogger("lookup.search.membership")

#: Where the records live: ``PREFIX + "<shard>/<replica>"``.
PREFIX = "/lookup/search/members/"
#: The longest address a record may carry (a URL of a host and a port, generously).
MAX_ADDRESS = 512
#: Shard and replica numbers a record may carry (the indexer allows 1-64 shards).
MAX_SHARD = 1023
MAX_REPLICA = 1023

#: A member's identity in a view: (shard, replica).
Slot = tuple[int, int]


class BadRecord(ValueError):
    """A key or value under the prefix that is not a member record (it is skipped)."""


def _whole(value: object, what: str, top: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= top:
        raise BadRecord(f"{what} must be a whole number from 0 to {top}, not {value!r}")
    return value


def member_key(shard: int, replica: int, prefix: str = PREFIX) -> str:
    """The etcd key of one replica's record."""
    return f"{prefix}{shard}/{replica}"


def parse_key(key: str, prefix: str = PREFIX) -> Slot:
    """``(shard, replica)`` of a key under ``prefix``; :class:`BadRecord` for any other key."""
    if not key.startswith(prefix):
        raise BadRecord(f"{key!r} is not under {prefix!r}")
    parts = key[len(prefix) :].split("/")
    if len(parts) != 2 or not all(p.isdigit() and p.isascii() for p in parts):
        raise BadRecord(f"{key!r} is not {prefix}<shard>/<replica>")
    return _whole(int(parts[0]), "shard", MAX_SHARD), _whole(int(parts[1]), "replica", MAX_REPLICA)


@dataclass(frozen=True)
class MemberRecord:
    """One replica of one shard as it registered itself: where to reach it, what it serves.

    ``address`` is what a coordinator connects to (a shard server's ``http://host:port``),
    ``version`` the index version it has open, ``pid`` and ``started`` (Unix seconds) tell
    one process from the next that takes the same slot.
    """

    address: str
    shard: int
    replica: int
    version: int
    pid: int
    started: float

    def __post_init__(self) -> None:
        if not isinstance(self.address, str) or not self.address.strip():
            raise BadRecord("address must be a non-empty string")
        if len(self.address) > MAX_ADDRESS or any(c.isspace() for c in self.address):
            raise BadRecord(f"address must be one word of at most {MAX_ADDRESS} characters")
        _whole(self.shard, "shard", MAX_SHARD)
        _whole(self.replica, "replica", MAX_REPLICA)
        _whole(self.version, "version", 2**63 - 1)
        _whole(self.pid, "pid", 2**31 - 1)
        if isinstance(self.started, bool) or not isinstance(self.started, (int, float)):
            raise BadRecord(f"started must be a number, not {self.started!r}")
        if not 0 <= float(self.started) < float("inf"):
            raise BadRecord(f"started must be a time, not {self.started!r}")

    @property
    def slot(self) -> Slot:
        """``(shard, replica)``: the record's identity (and its key's)."""
        return (self.shard, self.replica)

    def key(self, prefix: str = PREFIX) -> str:
        """The etcd key this record is kept under."""
        return member_key(self.shard, self.replica, prefix)

    def to_dict(self) -> dict[str, Any]:
        """The record as JSON-ready fields."""
        return asdict(self)

    def to_json(self) -> str:
        """The value stored in etcd."""
        return json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))

    def with_version(self, version: int) -> MemberRecord:
        """The same replica serving another index version."""
        return MemberRecord(self.address, self.shard, self.replica, version, self.pid, self.started)

    @classmethod
    def from_json(cls, raw: str | bytes) -> MemberRecord:
        """Parse a stored value; :class:`BadRecord` for anything that is not a record."""
        try:
            data = json.loads(raw)
        except (ValueError, UnicodeDecodeError) as exc:
            raise BadRecord(f"not JSON: {exc}") from None
        if not isinstance(data, dict):
            raise BadRecord("a record is a JSON object")
        names = ("address", "shard", "replica", "version", "pid", "started")
        missing = [n for n in names if n not in data]
        if missing:
            raise BadRecord(f"missing {', '.join(missing)}")
        started = data["started"]
        if isinstance(started, int) and not isinstance(started, bool):
            started = float(started)
        return cls(
            address=data["address"],
            shard=data["shard"],
            replica=data["replica"],
            version=data["version"],
            pid=data["pid"],
            started=started,
        )


@dataclass(frozen=True)
class MembershipChange:
    """How one view differs from the one before: who joined, who left, whose record changed."""

    joined: tuple[MemberRecord, ...] = ()
    left: tuple[MemberRecord, ...] = ()
    changed: tuple[MemberRecord, ...] = ()  # the new records of slots still present

    def __bool__(self) -> bool:
        return bool(self.joined or self.left or self.changed)


def diff(old: Mapping[Slot, MemberRecord], new: Mapping[Slot, MemberRecord]) -> MembershipChange:
    """What changed from view ``old`` to view ``new`` (each in slot order)."""
    return MembershipChange(
        joined=tuple(new[s] for s in sorted(new.keys() - old.keys())),
        left=tuple(old[s] for s in sorted(old.keys() - new.keys())),
        changed=tuple(new[s] for s in sorted(new.keys() & old.keys()) if new[s] != old[s]),
    )


def _range(client: etcd3gw.Etcd3Client, prefix: str) -> tuple[int, list[tuple[str, bytes]]]:
    """One linearizable range request over ``prefix``: etcd's revision and the (key, value)s."""
    answer = client.post(
        client.get_url("/kv/range"),
        json={"key": _encode(prefix), "range_end": _encode(_increment_last_byte(prefix))},
    )
    revision = int(answer.get("header", {}).get("revision", 0))
    rows = [
        (
            base64.b64decode(kv["key"]).decode("utf-8", "replace"),
            base64.b64decode(kv.get("value", "")),
        )
        for kv in answer.get("kvs", [])
    ]
    return revision, rows


def parse_view(
    rows: Sequence[tuple[str, bytes]], prefix: str = PREFIX
) -> tuple[dict[Slot, MemberRecord], list[str]]:
    """The records among ``rows`` by slot, and the keys skipped as malformed.

    A record whose fields disagree with its key is skipped too: the key is what the lease
    protects, so a value naming another slot is nobody's membership.
    """
    view: dict[Slot, MemberRecord] = {}
    skipped: list[str] = []
    for key, value in rows:
        try:
            slot = parse_key(key, prefix)
            record = MemberRecord.from_json(value)
        except BadRecord:
            skipped.append(key)
            continue
        if record.slot != slot:
            skipped.append(key)
            continue
        view[slot] = record
    return view, skipped


def read_members(client: etcd3gw.Etcd3Client, prefix: str = PREFIX) -> dict[str, Any]:
    """The membership right now, as JSON-ready fields (``lookup search members``)."""
    revision, rows = _range(client, prefix)
    view, skipped = parse_view(rows, prefix)
    return {
        "revision": revision,
        "members": [view[s].to_dict() for s in sorted(view)],
        "skipped": skipped,
    }


@dataclass
class _Events:
    """What happened to a registration, in order (for the drills and the report)."""

    items: deque[tuple[float, str, str]] = field(default_factory=lambda: deque(maxlen=500))

    def add(self, kind: str, detail: str = "") -> None:
        self.items.append((time.time(), kind, detail))
        log.info("membership %s: %s", kind, detail)

    def kinds(self) -> list[str]:
        return [k for _t, k, _d in self.items]


class ShardRegistration:
    """One shard replica's record in etcd, kept under a lease while the process lives.

    ``start`` grants the lease and puts the record; ``set_version`` rewrites it; ``stop``
    deletes it (a clean leave is seen at once, not after the TTL). A lease etcd reports
    gone is replaced by a new one carrying the latest record.
    """

    def __init__(
        self,
        client: etcd3gw.Etcd3Client,
        record: MemberRecord,
        ttl: float,
        *,
        prefix: str = PREFIX,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.client = client
        self.prefix = prefix
        self.events = _Events()
        self._lock = threading.Lock()
        self._write = threading.Lock()  # one put at a time: the last one is the newest
        self._record = record
        self._dirty = False  # the record changed but could not be written yet
        self._stopped = False
        self._lease = KeptLease(
            client,
            ttl,
            on_renewed=self._renewed,
            on_failure=self._renewal_failed,
            on_lost=self._lost,
            monotonic=monotonic,
            name=f"search-member-{record.shard}-{record.replica}",
        )

    @property
    def record(self) -> MemberRecord:
        """The record as this process last set it (written, or waiting to be)."""
        with self._lock:
            return self._record

    @property
    def ttl(self) -> int:
        """The lease's TTL in whole seconds (what etcd granted)."""
        return self._lease.ttl

    @property
    def lease_id(self) -> int:
        """etcd's id of the current lease (changes when the registration comes back)."""
        return self._lease.id

    def live(self) -> bool:
        """Is the lease within its local deadline (the record is surely still in etcd)?"""
        return self._lease.live()

    def start(self) -> ShardRegistration:
        """Register (a lease and the record under it) and start the keep-alive thread."""
        self._register()
        self._lease.start()
        return self

    def _put(self, lease: Any) -> None:
        with self._write:
            record = self.record
            self.client.put(record.key(self.prefix), record.to_json(), lease=lease)
            with self._lock:
                self._dirty = self._record != record

    def _register(self) -> None:
        lease = self._lease.grant(bind=self._put)
        self.events.add("registered", f"{self.record.key(self.prefix)} lease {lease.id}")

    def set_version(self, version: int) -> bool:
        """Serve ``version`` from now on: rewrite the record. False when etcd could not be
        told yet (the keep-alive thread writes it once etcd answers again)."""
        with self._lock:
            self._record = self._record.with_version(version)
            self._dirty = True
            stopped = self._stopped
        if stopped or self._lease.lease is None:
            return False
        try:
            self._put(self._lease.lease)
        except Exception as exc:  # noqa: BLE001 - etcd away or the lease gone: retried later
            self.events.add("version-deferred", f"{version}: {type(exc).__name__}")
            return False
        self.events.add("version", str(version))
        return True

    # the keep-alive thread's news (kit/engines/etcdlease.py calls these)
    def _renewed(self) -> None:
        with self._lock:
            dirty = self._dirty
        if dirty and self._lease.lease is not None:
            self._put(self._lease.lease)
            self.events.add("version", f"{self.record.version} (deferred write)")

    def _renewal_failed(self, exc: Exception) -> None:
        self.events.add("renewal-failed", type(exc).__name__)

    def _lost(self) -> None:
        with self._lock:
            if self._stopped:
                return
        self.events.add("lost", "etcd says the lease expired; registering again")
        try:
            self._register()
        except Exception as exc:  # noqa: BLE001 - the next round (TTL/3) tries again
            self.events.add("register-failed", type(exc).__name__)

    def stop(self, deregister: bool = True) -> None:
        """Stop renewing; ``deregister``: delete the record and revoke the lease now.

        Errors of etcd are logged, not raised: the lease expires on its own within its TTL.
        """
        with self._lock:
            self._stopped = True
        self._lease.stop(wait=True)
        if not deregister:
            return
        try:
            self.client.delete(self.record.key(self.prefix))
            self._lease.revoke()
            self.events.add("deregistered", self.record.key(self.prefix))
        except Exception as exc:  # noqa: BLE001 - the TTL removes it anyway
            self.events.add("deregister-failed", type(exc).__name__)


class MembershipWatcher:
    """A coordinator's view of the members, polled from etcd, kept while etcd is away.

    ``on_change(members)`` runs on the polling thread with the new member list (slot
    order) whenever the set or a record changes; an exception it raises is logged.
    """

    def __init__(
        self,
        client: etcd3gw.Etcd3Client,
        *,
        interval: float = 0.5,
        on_change: Callable[[list[MemberRecord]], None] | None = None,
        stale_after: float | None = None,
        prefix: str = PREFIX,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.client = client
        self.interval = interval
        self.stale_after = stale_after if stale_after is not None else max(1.0, 4 * interval)
        self.prefix = prefix
        self.monotonic = monotonic
        self._on_change = on_change
        self._lock = threading.Lock()
        self._view: dict[Slot, MemberRecord] = {}
        self._revision = 0
        self._last_ok: float | None = None
        self._error = ""
        self._skipped: list[str] = []
        self._changes = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @classmethod
    def for_url(
        cls, url: str, on_change: Callable[[list[MemberRecord]], None] | None = None
    ) -> MembershipWatcher:
        """A watcher of the etcd at ``url``, polling every ``search_members_poll`` seconds
        (a request may hang that long again before the view is reported stale)."""
        from lookup import settings

        interval = float(settings.get("search_members_poll"))
        return cls(_client(url, timeout=max(1.0, 2 * interval)), interval=interval,
                   on_change=on_change)  # fmt: skip

    def members(self) -> list[MemberRecord]:
        """The last known members, in (shard, replica) order."""
        with self._lock:
            return [self._view[s] for s in sorted(self._view)]

    def age(self) -> float | None:
        """Seconds since etcd last answered a poll (None: never)."""
        with self._lock:
            last = self._last_ok
        return None if last is None else max(0.0, self.monotonic() - last)

    def stale(self) -> bool:
        """True when the view may be out of date: the last poll failed, or none answered
        for ``stale_after`` seconds (a poll hanging on a frozen etcd), or none ever did."""
        age = self.age()
        with self._lock:
            failing = bool(self._error)
        return failing or age is None or age > self.stale_after

    def snapshot(self) -> dict[str, Any]:
        """The view as JSON-ready fields: members, stale, age, revision, error."""
        age = self.age()
        stale = self.stale()
        with self._lock:
            return {
                "members": [self._view[s].to_dict() for s in sorted(self._view)],
                "stale": stale,
                "ageSeconds": None if age is None else round(age, 3),
                "revision": self._revision,
                "changes": self._changes,
                "error": self._error,
                "skipped": list(self._skipped),
            }

    def poll(self) -> MembershipChange:
        """Read the prefix once and apply it; what changed (empty when nothing did).

        An error of etcd is kept (``stale``) and the view stays as it was.
        """
        try:
            revision, rows = _range(self.client, self.prefix)
        except Exception as exc:  # noqa: BLE001 - unreachable, frozen, refused: keep the view
            with self._lock:
                self._error = f"{type(exc).__name__}: {exc}"[:300]
            return MembershipChange()
        now = self.monotonic()
        view, skipped = parse_view(rows, self.prefix)
        with self._lock:
            self._last_ok = now
            self._error = ""
            if revision and revision < self._revision:
                return MembershipChange()  # an older answer than one already applied
            self._revision = revision
            self._skipped = skipped
            change = diff(self._view, view)
            if change:
                self._view = view
                self._changes += 1
            members = [view[s] for s in sorted(view)]
        if change and self._on_change is not None:
            try:
                self._on_change(members)
            except Exception:  # noqa: BLE001 - the owner's bug must not end the polling
                log.exception("membership on_change failed")
        return change

    def start(self) -> MembershipWatcher:
        """Poll once now, then every ``interval`` seconds on a daemon thread."""
        self.poll()
        self._thread = threading.Thread(target=self._run, name="search-members", daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.poll()

    def stop(self) -> None:
        """Stop polling (the view stays readable)."""
        self._stop.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=self.interval + 30.0)


# -- the command line: list the members, or be a registered member ----------------------
def _client(url: str, timeout: float) -> etcd3gw.Etcd3Client:
    from lookup.kit.engines.etcd import etcd_client

    return etcd_client(url, timeout=timeout)


def _etcd_url(given: str | None) -> str:
    from lookup import settings

    return given or str(settings.get("etcd_url"))


def cmd_members(args: argparse.Namespace) -> int:
    """``lookup search members``: print the live membership as JSON."""
    url = _etcd_url(args.etcd)
    if not url:
        print(
            "lookup search members: no etcd — pass --etcd URL or set LOOKUP_ETCD_URL",
            file=sys.stderr,
        )
        return 2
    try:
        shown = read_members(_client(url, args.timeout))
    except ValueError as exc:
        print(f"lookup search members: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:  # noqa: BLE001 - any failure of etcd is one message
        print(
            f"lookup search members: etcd at {url} did not answer ({type(exc).__name__}: {exc})",
            file=sys.stderr,
        )
        return 1
    print(json.dumps({"etcd": url, **shown}, indent=2))
    return 0


def _add_members_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--etcd", default=None, help="etcd gateway URL (default: LOOKUP_ETCD_URL)")
    p.add_argument("--timeout", type=float, default=5.0, help="seconds to wait for etcd")
    p.set_defaults(func=cmd_members)


def _cmd_register(args: argparse.Namespace) -> int:
    """Register one replica and keep it registered until SIGTERM/SIGINT (then leave)."""
    from lookup import settings

    url = _etcd_url(args.etcd)
    if not url:
        print("register: no etcd — pass --etcd URL or set LOOKUP_ETCD_URL", file=sys.stderr)
        return 2
    ttl = args.ttl if args.ttl is not None else float(settings.get("search_member_ttl"))
    try:
        record = MemberRecord(
            args.address, args.shard, args.replica, args.version, os.getpid(), time.time()
        )
    except BadRecord as exc:
        print(f"register: {exc}", file=sys.stderr)
        return 2
    done = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_a: done.set())
    client = _client(url, timeout=max(1.0, ttl / 3.0))
    try:
        registration = ShardRegistration(client, record, ttl).start()
    except Exception as exc:  # noqa: BLE001 - any failure of etcd is one message
        print(
            f"register: etcd at {url} did not answer ({type(exc).__name__}: {exc})", file=sys.stderr
        )
        return 1
    print(json.dumps({"registered": record.to_dict(), "lease": registration.lease_id}), flush=True)
    done.wait()
    registration.stop(deregister=True)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m lookup.search.membership {members,register} ...``."""
    parser = argparse.ArgumentParser(prog="python -m lookup.search.membership")
    sub = parser.add_subparsers(dest="command", required=True)
    _add_members_arguments(sub.add_parser("members", help="print the live membership (JSON)"))
    r = sub.add_parser("register", help="register one shard replica and wait for SIGTERM")
    r.add_argument("--etcd", default=None, help="etcd gateway URL (default: LOOKUP_ETCD_URL)")
    r.add_argument("--shard", type=int, required=True)
    r.add_argument("--replica", type=int, required=True)
    r.add_argument("--address", required=True, help="where the replica answers (http://host:port)")
    r.add_argument("--version", type=int, default=0, help="the index version it serves")
    r.add_argument("--ttl", type=float, default=None, help="lease TTL, s (default: setting)")
    r.set_defaults(func=_cmd_register)
    args = parser.parse_args(argv)
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
