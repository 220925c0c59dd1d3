"""Assemble one ASGI app from systems' ``mount`` functions, with one error format.

Management endpoints live on a FastAPI app (validation, OpenAPI). Hot paths — the
redirect, suggest, places search — are plain Starlette routes tried first by a tiny
dispatcher (:class:`FastPath`), so they do not pay FastAPI's per-request machinery
(≈2.5× on this machine, see DESIGN.md). Every error, on either side, has one JSON
format, and a domain error (:mod:`lookup.errors`) becomes HTTP here and nowhere else.

``lookup.server`` builds the whole API with every system; a system's own command
(e.g. ``lookup typeahead serve-shards``) builds an app of just itself with the same code.
"""

from __future__ import annotations

import importlib
import logging
import os
from collections.abc import Callable
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import BaseRoute, Match
from starlette.types import ASGIApp, Receive, Scope, Send

from lookup import __version__, settings
from lookup.errors import WorkbenchError
from lookup.kit.http import (
    ApiError,
    BodyLimit,
    api_error_for,
    code_for_status,
    error_response,
    is_json_media_type,
    unsupported_media_type,
)
from lookup.kit.mounts import Mounts, resolve_data_dir

log = logging.getLogger("lookup.server")

def _sent_a_body(request: Request) -> bool:
    headers = request.headers
    return headers.get("content-length", "0") != "0" or "transfer-encoding" in headers


def _validation_error(exc: RequestValidationError, request: Request | None = None) -> Any:
    errors = exc.errors()
    body_refused = any(tuple(e.get("loc", ()))[:1] == ("body",) for e in errors)
    if body_refused and request is not None and _sent_a_body(request):
        content_type = request.headers.get("content-type")
        if not is_json_media_type(content_type):
            # FastAPI leaves a body not declared JSON unparsed (so a cross-site form post
            # cannot fill a JSON model): say why, as the shortener's raw-body routes do.
            return unsupported_media_type(content_type).response()
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

    @api.exception_handler(WorkbenchError)
    async def _domain_error(_: Request, exc: WorkbenchError) -> Any:
        return api_error_for(exc).response()

    @api.exception_handler(StarletteHTTPException)
    async def _http_error(_: Request, exc: StarletteHTTPException) -> Any:
        message = exc.detail if isinstance(exc.detail, str) else code_for_status(exc.status_code)
        return error_response(exc.status_code, None, message, headers=getattr(exc, "headers", None))

    @api.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> Any:
        return _validation_error(exc, request)

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
                    except WorkbenchError as exc:
                        await api_error_for(exc).response()(scope, receive, send)
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


def build_app(
    data_dir: str | os.PathLike[str] | None = None,
    *,
    base_url: str | None = None,
    subsystems: list[str | Callable[[Mounts], None]],
) -> ASGIApp:
    """Build the whole HTTP API over the state in ``data_dir``.

    ``base_url`` is the public address of this server (used for short links);
    it defaults to ``$LOOKUP_PUBLIC_URL`` or ``http://127.0.0.1:8000``.
    """
    root = resolve_data_dir(data_dir)
    public = (base_url or settings.get("public_url") or "http://127.0.0.1:8000").rstrip("/")
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

    for target in subsystems:
        if callable(target):
            target(mounts)
            continue
        module_name, _, func_name = target.partition(":")
        getattr(importlib.import_module(module_name), func_name or "mount")(mounts)

    return ErrorGuard(BodyLimit(FastPath(mounts.fast_routes, api)))


