"""The bounded in-memory buffer between the redirect and the click log.

:meth:`ClickBuffer.offer` is what the redirect calls (through ``service.on_click``)
after the response is sent. It is a length check and a ``deque.append``: no I/O, no
lock, no await, no parsing, not even a counter on the accepted path. When the buffer
is full the click is dropped and counted — a dropped click is a small error in a chart,
a blocked redirect is an outage.

Clicks get their sequence numbers when the shipper takes them, not when they arrive:
the buffer is first in, first out, so the n-th click taken is the n-th accepted. With
the buffer's random ``origin`` the number makes the event id (``origin-seq``) that lets
the aggregator ignore a click that the log delivers twice.
"""

from __future__ import annotations

import secrets
import threading
from collections import deque
from typing import Any

from lookup.shortener.model import ClickContext


class ClickBuffer:
    """A bounded FIFO of raw clicks: many producers on the event loop, one drainer at a time.

    ``deque.append`` and ``popleft`` are atomic in CPython, so producers need no lock
    (drainers take one among themselves, off the redirect path). The full-check is not
    atomic with the append, so producers on several threads at once could overshoot
    ``capacity`` by a few items — a bound on memory, not an exact count, is what matters.
    """

    def __init__(self, capacity: int = 65_536) -> None:
        if capacity < 1:
            raise ValueError("capacity must be at least 1")
        self.capacity = capacity
        self.origin = secrets.token_hex(6)
        self._items: deque[tuple[Any, ...]] = deque()  # ClickContext fields, plain tuples
        self._taken = 0
        self._take_lock = threading.Lock()
        self.dropped = 0

    def offer(self, ctx: ClickContext) -> bool:
        """Queue one click; False (and counted) when full. Never blocks.

        The click is queued as a plain ``tuple`` copy: the garbage collector stops
        tracking a plain tuple of strings and numbers at its first pass, but never a
        named tuple (or any other object) — and thousands of tracked clicks waiting
        here would be promoted to the oldest generation and make every full
        collection of the server's heap longer: tail-latency spikes on the redirect.
        """
        if len(self._items) >= self.capacity:
            self.dropped += 1
            return False
        self._items.append(tuple(ctx))
        return True

    __call__ = offer  # so the buffer itself can be ``service.on_click``

    def take(self, limit: int) -> tuple[int, list[tuple[Any, ...]]]:
        """Take up to ``limit`` clicks, oldest first: ``(sequence of the first, clicks)``,
        each click a plain tuple in :class:`ClickContext` field order."""
        with self._take_lock:
            pop = self._items.popleft
            n = min(limit, len(self._items))  # producers only append: n are there
            clicks = [pop() for _ in range(n)]
            first = self._taken + 1
            self._taken += n
        return first, clicks

    def drain(self, limit: int) -> list[tuple[str, ClickContext]]:
        """Take up to ``limit`` clicks, oldest first, with their event ids."""
        first, clicks = self.take(limit)
        origin = self.origin
        make = ClickContext._make
        return [(f"{origin}-{first + i:x}", make(ctx)) for i, ctx in enumerate(clicks)]

    @property
    def accepted(self) -> int:
        """Clicks accepted so far (taken by the shipper or still waiting)."""
        with self._take_lock:  # consistent with a take in progress
            return self._taken + len(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def stats(self) -> dict[str, int]:
        """Accepted, dropped and waiting clicks, and the capacity."""
        with self._take_lock:
            queued = len(self._items)
            taken = self._taken
        return {
            "capacity": self.capacity,
            "queued": queued,
            "accepted": taken + queued,
            "dropped": self.dropped,
        }
