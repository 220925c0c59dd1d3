"""One etcd lease kept alive by a thread, with a local deadline its owner can trust.

Both etcd leases of the project — a crawler worker's partition leases
(:class:`lookup.crawler.leases.PartitionLeases`) and a Snowflake generator's worker-id
lease (:class:`lookup.blocks.ids.workers.WorkerLease`) — are a :class:`KeptLease`:

- it grants a lease of whole seconds (at least 2, etcd's floor);
- a daemon thread renews it every TTL/3;
- it keeps a **local deadline**: the monotonic time the renewal (or the grant) was *sent*
  + the TTL etcd granted. etcd counts the TTL from when it *received* the request, so the
  local deadline is never later than the server's expiry. :meth:`KeptLease.live` is
  false past it, even while the renewal thread hangs in a request to an etcd that is
  frozen or unreachable — that is the fence;
- it tells its owner what happened: ``on_renewed()`` after each renewal, ``on_failure(exc)``
  when one raised (the thread keeps trying until the deadline and after), ``on_lost()``
  when etcd answered that the lease is gone (TTL ≤ 0). The owner decides what a loss
  means: the crawler grants a new lease and joins again (:meth:`KeptLease.grant` from the
  callback), the id generator marks itself lost and stops the thread
  (:meth:`KeptLease.stop` with ``wait=False``).
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable
from typing import Any

import etcd3gw

__all__ = ["KeptLease"]

log = logging.getLogger(__name__)


def _nothing(*_args: object) -> None:
    return None


class KeptLease:
    """An etcd lease renewed every TTL/3 by a daemon thread, live until its local deadline.

    ``monotonic`` is the clock of the deadline (a test moves it by hand). The callbacks
    run on the renewal thread; an exception they raise is logged, never kills it.
    """

    def __init__(
        self,
        client: etcd3gw.Etcd3Client,
        ttl: float,
        *,
        on_renewed: Callable[[], None] = _nothing,
        on_failure: Callable[[Exception], None] = _nothing,
        on_lost: Callable[[], None] = _nothing,
        monotonic: Callable[[], float] = time.monotonic,
        name: str = "etcd-lease",
    ) -> None:
        self.client = client
        self.ttl = max(2, math.ceil(ttl))  # etcd's lease TTL is whole seconds, at least 2
        self.monotonic = monotonic
        self.name = name
        self._on_renewed = on_renewed
        self._on_failure = on_failure
        self._on_lost = on_lost
        self._lock = threading.Lock()
        self._lease: Any = None
        self._deadline = 0.0  # monotonic seconds
        self._sent = 0.0  # monotonic time the last renewal (or the grant) was sent
        self._gone = False  # etcd said the lease is gone, or it was revoked here
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # -- the owner's questions ------------------------------------------------------------
    @property
    def id(self) -> int:
        """etcd's id of the current lease (0 before the first grant)."""
        lease = self._lease
        return int(lease.id) if lease is not None else 0

    @property
    def lease(self) -> Any:
        """The current ``etcd3gw`` lease object (to put keys under it), or None."""
        return self._lease

    @property
    def deadline(self) -> float:
        """The local deadline, monotonic seconds: the last send time + the granted TTL."""
        return self._deadline

    def live(self) -> bool:
        """Granted, not lost nor revoked, and within the local deadline."""
        with self._lock:
            return (
                self._lease is not None and not self._gone and (self.monotonic() < self._deadline)
            )

    def due(self) -> bool:
        """A TTL/3 has passed since the last renewal was sent (for long rounds of work)."""
        return self.monotonic() - self._sent >= self.ttl / 3.0

    # -- granting, renewing, ending --------------------------------------------------------
    def grant(self, bind: Callable[[Any], object] | None = None) -> Any:
        """Grant a new lease and make it the current one; return the ``etcd3gw`` lease.

        ``bind(lease)`` runs between the grant and the switch (e.g. to put a membership
        key under it): if it raises, the exception propagates and the current lease, its
        deadline and its state stay as they were (the new lease expires on its own).
        """
        sent = self.monotonic()
        lease = self.client.lease(self.ttl)
        if bind is not None:
            bind(lease)
        with self._lock:
            self._lease = lease
            self._deadline = sent + self.ttl
            self._sent = sent
            self._gone = False
        return lease

    def renew(self) -> bool:
        """Renew now; False when etcd says the lease is gone. Errors of the request raise.

        Calls no callback: the thread does, after it. A successful renewal moves the
        deadline to the send time + the TTL etcd granted.
        """
        lease = self._lease
        if lease is None:
            raise RuntimeError("no lease granted yet")
        sent = self.monotonic()
        granted = int(lease.refresh())
        with self._lock:
            self._sent = sent
            if granted > 0:
                self._deadline = sent + granted
            else:
                self._gone = True
        return granted > 0

    def start(self) -> KeptLease:
        """Start the renewal thread (grant first; once stopped, it stays stopped)."""
        self._thread = threading.Thread(target=self._keep_alive, name=self.name, daemon=True)
        self._thread.start()
        return self

    def _keep_alive(self) -> None:
        while not self._stop.wait(self.ttl / 3.0):
            try:
                renewed = self.renew()
            except Exception as exc:  # noqa: BLE001 - any failure: retry until the deadline
                self._call(self._on_failure, exc)
                continue
            if renewed:
                self._call(self._on_renewed)
            else:
                self._call(self._on_lost)

    def _call(self, callback: Callable[..., None], *args: Any) -> None:
        try:
            callback(*args)
        except Exception:  # noqa: BLE001 - the owner's bug must not end the renewals
            log.exception("%s: a lease callback failed", self.name)

    def stop(self, wait: bool = True) -> None:
        """Stop renewing. ``wait``: join the thread (at most a TTL), unless called from it."""
        self._stop.set()
        thread = self._thread
        if wait and thread is not None and thread is not threading.current_thread():
            thread.join(timeout=self.ttl)

    def revoke(self) -> None:
        """No longer live here, and revoke the lease in etcd (its keys go with it).

        An error of the request raises; the lease is not live here either way.
        """
        with self._lock:
            lease = self._lease
            self._gone = True
        if lease is not None:
            lease.revoke()
