"""One ASGI app that mounts every subsystem's HTTP API.

Management endpoints live on a FastAPI app (validation, OpenAPI). Hot paths — the
redirect, suggest, places search — are plain Starlette routes tried first by a tiny
dispatcher, so they do not pay FastAPI's per-request machinery (≈2.5× on this
machine, see DESIGN.md). Every error, on either side, has one JSON format.

Subsystems plug in through :data:`SUBSYSTEMS`: each entry names a ``mount(mounts)``
function that adds routes, startup/shutdown hooks and a health probe.
"""

from __future__ import annotations

import importlib
import logging
import os
from collections.abc import Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import BaseRoute, Match
from starlette.types import ASGIApp, Receive, Scope, Send

from lookup import __version__
from lookup.kit.http import ApiError, BodyLimit, code_for_status, error_response

log = logging.getLogger("lookup.server")

#: ``"module:function"`` for every subsystem mounted into the app, in order.
#: Each function takes a :class:`Mounts` and registers what the subsystem serves.
SUBSYSTEMS: list[str] = [
    "lookup.shortener.http:mount",
    "lookup.geo.http:mount",
    "lookup.typeahead.http:mount",
    "lookup.search.http:mount",
]

DEFAULT_DATA_DIR = "data"


def resolve_data_dir(value: str | os.PathLike[str] | None = None) -> Path:
    """The data directory: an explicit value, else ``$LOOKUP_DATA_DIR``, else ``./data``."""
    chosen = value or os.environ.get("LOOKUP_DATA_DIR") or DEFAULT_DATA_DIR
    return Path(chosen).expanduser().resolve()


@dataclass
class Mounts:
    """What a subsystem's ``mount`` function receives and fills in."""

    data_dir: Path
    base_url: str
    api: FastAPI
    fast_routes: list[BaseRoute] = field(default_factory=list)
    on_startup: list[Callable[[], Awaitable[None] | None]] = field(default_factory=list)
    on_shutdown: list[Callable[[], Awaitable[None] | None]] = field(default_factory=list)
    health: dict[str, Callable[[], dict[str, Any]]] = field(default_factory=dict)


def _validation_error(exc: RequestValidationError) -> Any:
    errors = exc.errors()
    if any(e.get("type") == "json_invalid" for e in errors):
        return error_response(400, "MALFORMED_JSON", "the request body is not valid JSON")
    details = [
        {
            "loc": [str(p) for p in e.get("loc", ())],
            "msg": str(e.get("msg", "")),
            "type": e.get("type"),
        }
        for e in errors
    ]
    first = details[0] if details else {"loc": [], "msg": "invalid request"}
    where = ".".join(first["loc"]) or "request"
    return error_response(
        422, "INVALID_REQUEST", f"{where}: {first['msg']}", extra={"details": details}
    )


def _install_error_handlers(api: FastAPI) -> None:
    @api.exception_handler(ApiError)
    async def _api_error(_: Request, exc: ApiError) -> Any:
        return exc.response()

    @api.exception_handler(StarletteHTTPException)
    async def _http_error(_: Request, exc: StarletteHTTPException) -> Any:
        message = exc.detail if isinstance(exc.detail, str) else code_for_status(exc.status_code)
        return error_response(exc.status_code, None, message, headers=getattr(exc, "headers", None))

    @api.exception_handler(RequestValidationError)
    async def _invalid(_: Request, exc: RequestValidationError) -> Any:
        return _validation_error(exc)

    @api.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> Any:
        log.exception("unhandled error on %s %s", request.method, request.url.path)
        return error_response(500, "INTERNAL", "internal error; the server log has details")


class FastPath:
    """Try the hot-path Starlette routes first; hand everything else to the FastAPI app."""

    def __init__(self, routes: list[BaseRoute], fallback: ASGIApp) -> None:
        self.routes = routes
        self.fallback = fallback

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and self.routes:
            for route in self.routes:
                match, child = route.matches(scope)
                if match is Match.FULL:
                    scope.update(child)
                    try:
                        await route.handle(scope, receive, send)
                    except ApiError as exc:
                        await exc.response()(scope, receive, send)
                    return
        await self.fallback(scope, receive, send)


class ErrorGuard:
    """Outermost guard: an exception escaping every handler becomes JSON, never a traceback."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def tracking_send(message: Any) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, receive, tracking_send)
        except Exception:
            log.exception("unhandled error on %s %s", scope.get("method"), scope.get("path"))
            if not started:
                await error_response(500, "INTERNAL", "internal error; the server log has details")(
                    scope, receive, send
                )


def create_app(
    data_dir: str | os.PathLike[str] | None = None,
    *,
    base_url: str | None = None,
    subsystems: list[str | Callable[[Mounts], None]] | None = None,
) -> ASGIApp:
    """Build the whole HTTP API over the state in ``data_dir``.

    ``base_url`` is the public address of this server (used for short links);
    it defaults to ``$LOOKUP_PUBLIC_URL`` or ``http://127.0.0.1:8000``.
    """
    root = resolve_data_dir(data_dir)
    public = (base_url or os.environ.get("LOOKUP_PUBLIC_URL") or "http://127.0.0.1:8000").rstrip(
        "/"
    )
    mounts: Mounts  # filled below; the lifespan closes over it

    @asynccontextmanager
    async def lifespan(_: FastAPI):  # type: ignore[no-untyped-def]
        for hook in mounts.on_startup:
            result = hook()
            if result is not None:
                await result
        try:
            yield
        finally:
            for hook in reversed(mounts.on_shutdown):
                result = hook()
                if result is not None:
                    await result

    api = FastAPI(
        title="Lookup Workbench API",
        version=__version__,
        description=(
            "URL shortener, typeahead, proximity search and web search over one server. "
            'Every error is JSON: {"error": "CODE", "message": "..."} with a 4xx status.'
        ),
        lifespan=lifespan,
    )
    _install_error_handlers(api)
    mounts = Mounts(data_dir=root, base_url=public, api=api)

    @api.get("/healthz", tags=["health"], summary="Liveness and what each system has built")
    async def healthz() -> dict[str, Any]:
        systems = {}
        for name, probe in mounts.health.items():
            try:
                systems[name] = probe()
            except Exception as exc:  # a broken probe reports itself, it does not fail the check
                systems[name] = {"status": "ERROR", "message": str(exc)}
        return {"status": "ok", "version": __version__, "dataDir": str(root), "systems": systems}

    for target in SUBSYSTEMS if subsystems is None else subsystems:
        if callable(target):
            target(mounts)
            continue
        module_name, _, func_name = target.partition(":")
        getattr(importlib.import_module(module_name), func_name or "mount")(mounts)

    return ErrorGuard(BodyLimit(FastPath(mounts.fast_routes, api)))


def app_factory() -> ASGIApp:
    """Entry point for ``uvicorn --factory lookup.server:app_factory`` (reads the environment)."""
    return create_app()
