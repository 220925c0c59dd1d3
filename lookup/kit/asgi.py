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

import asyncio
import importlib
import logging
import os
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import PlainTextResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import BaseRoute, Match
from starlette.types import ASGIApp, Receive, Scope, Send

from lookup import __version__, settings
from lookup.errors import WorkbenchError
from lookup.kit.admin import ADMIN_RESPONSES, admin_token_of, check_admin
from lookup.kit.engines.sqlite import STORE_ERRORS
from lookup.kit.failsafe import SystemGuard
from lookup.kit.http import (
    ApiError,
    BodyLimit,
    api_error_for,
    api_error_of,
    code_for_status,
    error_response,
    is_json_media_type,
    unsupported_media_type,
)
from lookup.kit.metrics import CONTENT_TYPE, HTTP_STATS, HttpStats, exposition
from lookup.kit.mounts import Mounts, resolve_data_dir
from lookup.kit.threads import ThreadLane

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

    async def _store_error(request: Request, exc: Exception) -> Any:
        error = api_error_of(exc)  # a database locked past its busy timeout: 503
        if error is None:
            return await _unexpected(request, exc)
        log.warning("%s %s: %s", request.method, request.url.path, error.message)
        return error.response()

    for kind in STORE_ERRORS:
        api.add_exception_handler(kind, _store_error)

    @api.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> Any:
        log.exception("unhandled error on %s %s", request.method, request.url.path)
        return error_response(500, "INTERNAL", "internal error; the server log has details")


class FastPath:
    """Try the hot-path Starlette routes first; hand everything else to the FastAPI app."""

    def __init__(self, routes: list[BaseRoute], fallback: ASGIApp) -> None:
        self.routes = routes
        self.fallback = fallback
        self._fixed: dict[str, list[BaseRoute]] = {}
        self._indexed = -1  # how many routes ``_fixed`` was built from

    def _candidates(self, path: str) -> list[BaseRoute]:
        """The routes to try for ``path``, in order: the fixed-path routes of exactly that
        path, else all of them. A fixed path (``/v1/suggest``) is never shadowed by a
        parameter route — the redirect route reserves every first segment the app has — so
        it is found with one dictionary lookup instead of a regex per route before it. The
        index is rebuilt when the list grows (systems append while the app is built)."""
        routes = self.routes
        if self._indexed != len(routes):
            fixed: dict[str, list[BaseRoute]] = {}
            for route in routes:
                template = getattr(route, "path", None)
                if isinstance(template, str) and "{" not in template:
                    fixed.setdefault(template, []).append(route)
            self._fixed, self._indexed = fixed, len(routes)
        return self._fixed.get(path) or routes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and self.routes:
            for route in self._candidates(scope["path"]):
                match, child = route.matches(scope)
                if match is Match.FULL:
                    scope.update(child)
                    scope["route"] = route  # its template labels the request's metrics
                    try:
                        await route.handle(scope, receive, send)
                    except Exception as exc:
                        error = api_error_of(exc)
                        if error is None:
                            raise  # a bug: ErrorGuard logs it and answers 500
                        if not isinstance(exc, (ApiError, WorkbenchError)):
                            log.warning("%s %s: %s", scope["method"], scope["path"], error.message)
                        await error.response()(scope, receive, send)
                    return
        await self.fallback(scope, receive, send)


#: The worker threads the health probes run in: their own, so that requests waiting on a
#: hung store can never keep ``/healthz`` from asking (at most one probe per system runs).
HEALTH_LANE = ThreadLane("health", 16)


class HealthProbes:
    """Every system's health probe, asked off the event loop and waited for a bounded time.

    ``/healthz`` is a liveness check: it must answer at once even while a store hangs (a
    load balancer's check gives up after a second or so, then restarts a worker that is
    fine). Each probe runs in a worker thread; one that has not answered within
    ``timeout_s`` is reported ``SLOW`` and goes on running — the next check waits for that
    same call rather than starting another, so a hung store holds one thread per system.
    """

    def __init__(self, probes: Mapping[str, Callable[[], Any]]) -> None:
        self.probes = probes
        self._asking: dict[str, asyncio.Future[Any]] = {}

    async def ask(self, timeout_s: float) -> dict[str, Any]:
        """``{system: its report}``; ``{"status": "ERROR"}`` for a probe that raised."""
        loop = asyncio.get_running_loop()
        asking: dict[str, asyncio.Future[Any]] = {}
        for name, probe in list(self.probes.items()):
            future = self._asking.get(name)
            if future is None or future.get_loop() is not loop or future.cancelled():
                future = asyncio.ensure_future(HEALTH_LANE.run(probe))
                self._asking[name] = future
            asking[name] = future
        if asking:
            await asyncio.wait(asking.values(), timeout=timeout_s)
        systems: dict[str, Any] = {}
        for name, future in asking.items():
            if not future.done():
                systems[name] = {
                    "status": "SLOW",
                    "message": f"no answer within {timeout_s:g} s (a store it needs may be "
                    "down or overloaded); still asking",
                }
                continue
            if self._asking.get(name) is future:
                del self._asking[name]  # answered: the next check asks afresh
            exc = None if future.cancelled() else future.exception()
            if future.cancelled() or exc is not None:
                # a broken probe reports itself, it does not fail the check
                systems[name] = {"status": "ERROR", "message": str(exc or "cancelled")}
            else:
                systems[name] = future.result()
        return systems


class ErrorGuard:
    """Outermost guard: an exception escaping every handler becomes JSON, never a traceback.

    With ``stats`` it also counts and times every request there (:meth:`HttpStats.note`):
    the send it wraps anyway sees the status, so ``/metrics`` costs the hot paths no layer.
    """

    def __init__(self, app: ASGIApp, stats: HttpStats | None = None) -> None:
        self.app = app
        self.stats = stats

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        begun = time.perf_counter()
        status = 0  # none sent yet

        async def tracking_send(message: Any) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, tracking_send)
        except Exception:
            log.exception("unhandled error on %s %s", scope.get("method"), scope.get("path"))
            if not status:
                status = 500
                await error_response(500, "INTERNAL", "internal error; the server log has details")(
                    scope, receive, send
                )
        finally:
            if self.stats is not None:
                self.stats.note(scope, status or 500, time.perf_counter() - begun)


def build_app(
    data_dir: str | os.PathLike[str] | None = None,
    *,
    base_url: str | None = None,
    subsystems: Sequence[str | Callable[[Mounts], object]],
    systems: Mapping[str, tuple[str, Sequence[str]]] | None = None,
) -> ASGIApp:
    """Build the whole HTTP API over the state in ``data_dir``.

    ``base_url`` is the public address of this server (used for short links);
    it defaults to ``$LOOKUP_PUBLIC_URL`` or ``http://127.0.0.1:8000``. ``systems`` names,
    per ``"module:function"`` of ``subsystems``, the system's name and the paths it serves:
    a system that fails to mount or to start is mounted as damaged
    (:class:`~lookup.kit.failsafe.SystemGuard`) and the others serve on.
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
                try:  # one system failing to stop does not keep the others running
                    result = hook()
                    if result is not None:
                        await result
                except Exception:
                    log.exception("a shut-down hook failed")

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

    probes = HealthProbes(mounts.health)

    @api.get("/healthz", tags=["health"], summary="Liveness and what each system has built")
    async def healthz() -> dict[str, Any]:
        systems = await probes.ask(settings.get("health_probe_timeout"))
        body = {"status": "ok", "version": __version__, "dataDir": str(root), "systems": systems}
        damaged = sorted(n for n, s in systems.items() if isinstance(s, dict) and "remedy" in s)
        if damaged:  # the API is up; these systems are not (each report says why)
            body["damaged"] = damaged
        return body

    admin_token = admin_token_of(mounts)

    @api.get(
        "/metrics",
        tags=["health"],
        summary="Prometheus metrics: requests, latencies, and each system's own",
        response_class=PlainTextResponse,
        responses={200: {"content": {CONTENT_TYPE: {}}}, **ADMIN_RESPONSES},
    )
    def metrics(request: Request) -> Response:
        if settings.get("metrics_auth") == "admin":
            check_admin(request.headers.get("authorization"), admin_token(), "/metrics")
        return Response(exposition(mounts.metrics), media_type=CONTENT_TYPE)

    fallbacks: list[BaseRoute] = []  # damaged systems' paths: after every other route
    for i, target in enumerate(subsystems):
        mount: Callable[[Mounts], Any]
        if callable(target):
            mount, key = target, getattr(target, "__name__", f"system-{i}")
        else:
            module_name, _, func_name = target.partition(":")
            mount = getattr(importlib.import_module(module_name), func_name or "mount")
            key = target
        name, prefixes = (systems or {}).get(key, (key.rsplit(":", 1)[0], ()))
        fallback = SystemGuard(mounts, name, prefixes).mount(mount)
        if fallback is not None:
            fallbacks.append(fallback)
    api.router.routes.extend(fallbacks)
    _document_fast_routes(api, mounts.fast_route_docs)

    return ErrorGuard(BodyLimit(FastPath(mounts.fast_routes, api)), HTTP_STATS)


def _document_fast_routes(api: FastAPI, docs: dict[str, dict[str, Any]]) -> None:
    """``/openapi.json`` with the hot-path routes' path items added to FastAPI's own."""
    framework_openapi = api.openapi

    def openapi() -> dict[str, Any]:
        if api.openapi_schema is None:
            schema = framework_openapi()
            for path, item in docs.items():
                schema["paths"].setdefault(path, {}).update(item)
        return api.openapi_schema  # type: ignore[return-value]  # set by the call above

    api.openapi = openapi  # type: ignore[method-assign]  # FastAPI's documented override


def known_query_only(request: Request) -> None:
    """A route dependency: refuse a query parameter the route does not declare, with a 400
    ``UNKNOWN_PARAMETER`` naming the accepted ones (as unknown JSON fields are refused).

    Silently ignored, a misspelt ``limt=5`` or ``size=4`` answers a question the client did
    not ask, and it cannot tell.
    """
    route = request.scope.get("route")
    dependant = getattr(route, "dependant", None)
    if dependant is None:
        return
    accepted: set[str] = set()
    todo = [dependant]
    while todo:  # the route's own parameters and its dependencies'
        d = todo.pop()
        accepted.update(p.alias for p in d.query_params)
        todo.extend(d.dependencies)
    unknown = sorted(set(request.query_params) - accepted)
    if unknown:
        raise ApiError(
            400,
            "UNKNOWN_PARAMETER",
            f"unknown query parameter(s): {', '.join(unknown)}; this endpoint accepts: "
            f"{', '.join(sorted(accepted)) or 'none'}",
        )
