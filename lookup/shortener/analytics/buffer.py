"""The bounded in-memory buffer between the redirect and the click log.

:meth:`ClickBuffer.offer` is what the redirect calls (through ``service.on_click``)
after the response is sent. It is a length check and a ``deque.append``: no I/O, no
lock, no await, no parsing. When the buffer is full the click is dropped and counted
— a dropped click is a small error in a chart, a blocked redirect is an outage.

Each accepted click gets a sequence number; with the buffer's random ``origin`` it
makes the event id (``origin-seq``) that lets the aggregator ignore a click that the
log delivers twice.
"""

from __future__ import annotations

import itertools
import secrets
from collections import deque

from lookup.shortener.model import ClickContext


class ClickBuffer:
    """A bounded FIFO of raw clicks: many producers on the event loop, one or more drainers.

    ``deque.append`` and ``popleft`` are atomic in CPython, so producers and the
    shipper thread need no lock. The full-check is not atomic with the append, so
    producers on several threads at once could overshoot ``capacity`` by a few
    items — a bound on memory, not an exact count, is what matters here.
    """

    def __init__(self, capacity: int = 65_536) -> None:
        if capacity < 1:
            raise ValueError("capacity must be at least 1")
        self.capacity = capacity
        self.origin = secrets.token_hex(6)
        self._items: deque[tuple[int, ClickContext]] = deque()
        self._seq = itertools.count(1)
        self.accepted = 0
        self.dropped = 0

    def offer(self, ctx: ClickContext) -> bool:
        """Queue one click; False (and counted) when full. Never blocks."""
        if len(self._items) >= self.capacity:
            self.dropped += 1
            return False
        self._items.append((next(self._seq), ctx))
        self.accepted += 1
        return True

    __call__ = offer  # so the buffer itself can be ``service.on_click``

    def drain(self, limit: int) -> list[tuple[str, ClickContext]]:
        """Take up to ``limit`` clicks, oldest first, with their event ids."""
        out: list[tuple[str, ClickContext]] = []
        pop = self._items.popleft
        origin = self.origin
        for _ in range(limit):
            try:
                seq, ctx = pop()
            except IndexError:
                break
            out.append((f"{origin}-{seq:x}", ctx))
        return out

    def __len__(self) -> int:
        return len(self._items)

    def stats(self) -> dict[str, int]:
        """Accepted, dropped and waiting clicks, and the capacity."""
        return {
            "capacity": self.capacity,
            "queued": len(self._items),
            "accepted": self.accepted,
            "dropped": self.dropped,
        }
