"""A shard server's place in the shard membership: registered in etcd while it serves.

``lookup search serve-shard --register`` keeps a :class:`ShardMember`: once the process
has an index version open it registers ``{address, shard, replica, version}`` under an
etcd lease (:class:`~lookup.search.membership.ShardRegistration`, TTL the
``search_member_ttl`` setting), rewrites the record whenever it serves another version,
and deletes it on a clean stop, so coordinators that follow etcd
(:mod:`lookup.search.cluster`) add and drop the replica without being told.
"""

from __future__ import annotations

import os
import threading
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lookup.search.shard_server import ShardServer


class ShardMember:
    """A shard server's membership record, kept in step with the version it serves.

    ``start`` registers once the service has a version open (at once when it has, else
    on the first check that finds one) and a thread checks every ``check_s`` seconds for
    a newer version to announce; ``stop`` leaves the membership at once.
    """

    def __init__(
        self,
        server: ShardServer,
        address: str,
        etcd_url: str,
        ttl: float,
        *,
        check_s: float = 0.25,
    ) -> None:
        self.server = server
        self.address = address
        self.etcd_url = etcd_url
        self.ttl = ttl
        self.check_s = check_s
        self.registration: Any = None
        self.error = ""
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _version(self) -> int | None:
        snap = getattr(self.server, "pinned", None) or self.server.service.live_version()
        return None if snap is None else int(snap.version)

    def check(self) -> None:
        """Register, or announce a newly opened version (one round of the thread)."""
        from lookup.kit.engines.etcd import etcd_client
        from lookup.search.membership import MemberRecord, ShardRegistration

        version = self._version()
        if version is None:
            return
        if self.registration is None:
            record = MemberRecord(self.address, self.server.shard, self.server.replica,
                                  version, os.getpid(), time.time())  # fmt: skip
            client = etcd_client(self.etcd_url, timeout=max(1.0, self.ttl / 3.0))
            self.registration = ShardRegistration(client, record, self.ttl).start()
            self.error = ""
        elif self.registration.record.version != version:
            self.registration.set_version(version)

    def _run(self) -> None:
        while not self._stop.wait(self.check_s):
            try:
                self.check()
            except Exception as exc:  # noqa: BLE001 - etcd away: the next round tries again
                self.error = f"{type(exc).__name__}: {exc}"[:300]

    def start(self) -> None:
        """Register now if a version is open, and keep checking on a daemon thread."""
        try:
            self.check()
        except Exception as exc:  # noqa: BLE001 - etcd away: the thread tries again
            self.error = f"{type(exc).__name__}: {exc}"[:300]
        self._thread = threading.Thread(target=self._run, name="shard-member", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop checking and leave the membership (the record deleted, the lease revoked)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(self.check_s + 30.0)
        registration, self.registration = self.registration, None
        if registration is not None:
            registration.stop(deregister=True)

    def status(self) -> dict[str, Any]:
        """``{etcd, registered, lease, ttl, error}`` for the shard server's health report."""
        registration = self.registration
        return {
            "etcd": self.etcd_url,
            "registered": registration is not None,
            "lease": None if registration is None else registration.lease_id,
            "ttl": self.ttl,
            "error": self.error,
        }


__all__ = ["ShardMember"]
