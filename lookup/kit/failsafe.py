"""A system that cannot start does not stop the API: it is mounted as damaged.

:func:`lookup.kit.asgi.build_app` mounts each system through :class:`SystemGuard`. When a
system's ``mount`` raises, or one of its start-up hooks does, the guard logs one line, puts
the system's health report (``/healthz``) to the problem — the file and what to do — and
answers every request for the system's routes (or, when the mount failed before adding any,
for the paths it declares) with ``503`` and that report. The other systems serve on.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

from starlette.routing import BaseRoute, Match, NoMatchFound
from starlette.types import Receive, Scope, Send

from lookup.errors import Damaged
from lookup.kit.http import error_response
from lookup.kit.integrity import is_not_writable, not_writable
from lookup.kit.mounts import Mounts

log = logging.getLogger("lookup.server")

__all__ = ["DamagedRoute", "SystemGuard", "start_failure"]


def start_failure(system: str, exc: BaseException, data_dir: Path) -> Damaged:
    """The damage a system's failure to start means: a :class:`~lookup.errors.Damaged` it
    raised itself, a directory it cannot write (``NOT_WRITABLE``), or any other error
    (``START_FAILED``, its message; the traceback goes to the log)."""
    if isinstance(exc, Damaged):
        return exc
    if is_not_writable(exc):
        named = getattr(exc, "filename", None)
        where = Path(os.fsdecode(named)) if named else data_dir / system
        if not where.is_dir():
            where = where.parent
        return not_writable(where, f"the {system}")
    named = getattr(exc, "filename", None)
    return Damaged(
        f"the {system} could not start: {type(exc).__name__}: {exc}",
        code="START_FAILED",
        file=os.fsdecode(named) if named else None,
        remedy="the server log has the details; fix the cause and restart `lookup serve`",
    )


class DamagedRoute(BaseRoute):
    """Answers 503 with a damage report for what ``original`` matched (or, without one, for
    any path under ``prefixes``)."""

    def __init__(
        self, damage: Damaged, original: BaseRoute | None = None, prefixes: Sequence[str] = ()
    ) -> None:
        self.damage = damage
        self.original = original
        self.prefixes = tuple(prefixes)

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        if self.original is not None:
            match, child = self.original.matches(scope)
            return (Match.FULL, {}) if match is not Match.NONE else (Match.NONE, {})
        if scope["type"] != "http":
            return Match.NONE, {}
        path = scope.get("path", "")
        for prefix in self.prefixes:
            if prefix == "/" or path == prefix or path.startswith(prefix.rstrip("/") + "/"):
                return Match.FULL, {}
        return Match.NONE, {}

    def url_path_for(self, name: str, /, **path_params: Any) -> Any:
        raise NoMatchFound(name, path_params)

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        d = self.damage
        await error_response(503, d.code, d.message, extra=d.extra)(scope, receive, send)


class SystemGuard:
    """Mounts one system so that a failure to mount or to start damages only that system."""

    def __init__(self, mounts: Mounts, name: str, prefixes: Sequence[str] = ()) -> None:
        self.mounts = mounts
        self.name = name
        self.prefixes = tuple(prefixes)
        self.damage: Damaged | None = None
        self._fast: list[BaseRoute] = []
        self._api: list[BaseRoute] = []

    def mount(self, mount: Callable[[Mounts], Any]) -> DamagedRoute | None:
        """Run the system's ``mount``; on failure, undo what it added and return the route
        that answers for its declared paths (the caller adds it after every other route)."""
        m = self.mounts
        routes = m.api.router.routes
        marks = (len(m.fast_routes), len(routes), len(m.on_startup), len(m.on_shutdown))
        health = set(m.health)
        try:
            mount(m)
        except Exception as exc:
            del m.fast_routes[marks[0] :], routes[marks[1] :]
            del m.on_startup[marks[2] :], m.on_shutdown[marks[3] :]
            for key in set(m.health) - health:
                del m.health[key]
            damage = self._fail(exc)
            return DamagedRoute(damage, prefixes=self.prefixes) if self.prefixes else None
        added = set(m.health) - health
        if len(added) == 1:  # report a later failure under the name the system reports as
            self.name = added.pop()
        self._fast = m.fast_routes[marks[0] :]
        self._api = routes[marks[1] :]
        m.on_startup[marks[2] :] = [self._guarded(h) for h in m.on_startup[marks[2] :]]
        return None

    def _guarded(self, hook: Callable[[], Awaitable[None] | None]) -> Callable[[], Any]:
        async def run() -> None:
            if self.damage is not None:
                return  # an earlier hook of this system failed: it does not half-start
            try:
                result = hook()
                if result is not None:
                    await result
            except Exception as exc:
                self._fail(exc)
                self._replace_routes()

        return run

    def _fail(self, exc: Exception) -> Damaged:
        damage = start_failure(self.name, exc, self.mounts.data_dir)
        self.damage = damage
        if damage.code == "START_FAILED":
            log.error("%s: %s", self.name, damage.message, exc_info=exc)
        else:
            log.error("%s %s: %s. What to do: %s.", self.name, damage.code, damage.message,
                      damage.remedy)  # fmt: skip
        self.mounts.health[self.name] = damage.report
        return damage

    def _replace_routes(self) -> None:
        """Swap the system's routes, in place, for ones answering its damage."""
        assert self.damage is not None
        for routes, mine in ((self.mounts.fast_routes, self._fast),
                             (self.mounts.api.router.routes, self._api)):  # fmt: skip
            ids = {id(r) for r in mine}
            for i, route in enumerate(routes):
                if id(route) in ids:
                    routes[i] = DamagedRoute(self.damage, original=route)
