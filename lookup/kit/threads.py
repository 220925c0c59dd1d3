"""Lanes of worker threads: where a system's blocking calls wait, so that a slow store
holds up its own requests and nothing else.

The event loop never waits on a store: a handler that reads or writes a database (SQLite,
PostgreSQL, Redis) hands the call to a worker thread, and the loop goes on answering the
requests that need no store — cached redirects, suggestions, ``/healthz``. anyio's one
default pool (40 threads, what Starlette's ``run_in_threadpool`` and FastAPI's plain
``def`` routes use) is shared by every system of the app, though, so a store that hangs
(PostgreSQL down: each call waits 2 s for its pool, then fails) could take every thread
and stall the other systems as surely as a blocked loop. A :class:`ThreadLane` is a named
share of worker threads with its own limit: the shortener's store calls wait in the
shortener's lane, the places hot path runs in its own, the health probes in theirs.

The limit belongs to each running event loop (an anyio ``RunVar``, as anyio keeps its
default one), so an app served by several loops in turn (test clients) stays correct.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["ThreadLane"]

T = TypeVar("T")


class ThreadLane:
    """At most ``threads`` of this lane's calls run at once, each in a worker thread."""

    def __init__(self, name: str, threads: int) -> None:
        from anyio.lowlevel import RunVar

        if threads < 1:
            raise ValueError("a lane needs at least one thread")
        self.name = name
        self.threads = threads
        self._limiter: Any = RunVar(f"lookup-lane-{name}")

    def limiter(self) -> Any:
        """This lane's ``anyio.CapacityLimiter`` on the running event loop."""
        import anyio

        try:
            return self._limiter.get()
        except LookupError:
            limiter = anyio.CapacityLimiter(self.threads)
            self._limiter.set(limiter)
            return limiter

    async def run(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """``fn(*args, **kwargs)`` in a worker thread of this lane (waiting for a free one
        when all are busy); its exception, if any, is raised here."""
        import anyio.to_thread

        call = functools.partial(fn, *args, **kwargs) if kwargs else functools.partial(fn, *args)
        return await anyio.to_thread.run_sync(call, limiter=self.limiter())

    def __repr__(self) -> str:
        return f"ThreadLane({self.name!r}, {self.threads})"
