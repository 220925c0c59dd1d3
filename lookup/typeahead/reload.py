"""Following a snapshot store: call back when a market's current snapshot changes.

Sharded serving loads a new snapshot without a restart: every shard server and the
router watch the snapshot store and, when a market's ``current`` pointer moves, load
the new version in the background and switch (:mod:`~lookup.typeahead.shard_server`,
:mod:`~lookup.typeahead.router`). :class:`SnapshotFollower` is that watch, one thread
per market: on a shared store (``postgresql://``, :class:`~lookup.typeahead.
snapshot_shared.SharedSnapshotStore`) it blocks in the store's ``wait`` — ``LISTEN``
until a swap is announced — and on the directory store it reads the ``CURRENT``
pointer every ``poll_s`` seconds. A callback that fails (a damaged version, the
server down) is retried after ``poll_s``; the old version keeps serving meanwhile.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

__all__ = ["SnapshotFollower"]

log = logging.getLogger("lookup.typeahead.reload")

#: Seconds one ``wait`` on a shared store blocks before it is asked again (a stop
#: request is noticed within this long).
WAIT_S = 2.0


class SnapshotFollower:
    """Calls ``on_change(market, version)`` whenever a market's current snapshot is not
    ``held(market)``, from one background thread per market.

    ``markets`` (called every ``poll_s``) says which markets to follow; by default every
    market the store holds.
    """

    def __init__(
        self,
        store: Any,
        held: Callable[[str], str | None],
        on_change: Callable[[str, str], None],
        *,
        poll_s: float = 1.0,
        markets: Callable[[], list[str]] | None = None,
        name: str = "snapshot-follower",
    ) -> None:
        self.store = store
        self.held = held
        self.on_change = on_change
        self.poll_s = poll_s
        self.markets = markets or store.names
        self.name = name
        self.errors: dict[str, str] = {}
        self._stop = threading.Event()
        self._threads: dict[str, threading.Thread] = {}
        self._main: threading.Thread | None = None

    def start(self) -> SnapshotFollower:
        """Start following (a thread that finds markets, and one per market)."""
        if self._main is None:
            self._main = threading.Thread(target=self._discover, name=self.name, daemon=True)
            self._main.start()
        return self

    def stop(self) -> None:
        """Stop every thread (each notices within ``poll_s`` or a shared store's wait)."""
        self._stop.set()

    def _discover(self) -> None:
        while not self._stop.is_set():
            try:
                for market in self.markets():
                    if market not in self._threads:
                        t = threading.Thread(
                            target=self._follow, args=(market,), name=f"{self.name}-{market}",
                            daemon=True,
                        )  # fmt: skip
                        self._threads[market] = t
                        t.start()
            except Exception as exc:  # the store unreachable: look again later
                log.warning("%s: cannot list markets: %s", self.name, exc)
            self._stop.wait(self.poll_s)

    def _follow(self, market: str) -> None:
        shared = callable(getattr(self.store, "wait", None))
        serial: int | None = None
        while not self._stop.is_set():
            try:
                if shared:
                    pointer = self.store.wait(market, serial, max(WAIT_S, self.poll_s))
                    serial, version = pointer.serial, pointer.current
                else:
                    version = self.store.current(market)
                if version is not None and version != self.held(market):
                    self.on_change(market, version)
                self.errors.pop(market, None)
                if not shared:
                    self._stop.wait(self.poll_s)
            except Exception as exc:  # keep serving the old one; try again soon
                self.errors[market] = str(exc) or type(exc).__name__
                log.warning("%s: cannot load %s's new snapshot: %s", self.name, market, exc)
                serial = None  # look at the pointer again at once after the pause
                self._stop.wait(self.poll_s)
