"""HTTP routes of the search engine.

``GET /search`` is a hot path: a plain Starlette route tried before the FastAPI app.
Management endpoints (status, shard fault switches, deletions) live on FastAPI; the
mutating ones need the admin token (:mod:`lookup.kit.admin`).

``GET /search?q=&page=&limit=`` answers exactly
``{"query","estimatedTotal","tookMs","results":[{"url","title","snippet","score",
"crawledAt","cachedUrl"}],"shardsQueried","shardsAnswered"}`` — ``cachedUrl`` is the
path of the page's stored copy on this API (``GET /search/cached``, :mod:`.cached`: the
crawled ``*.sandbox.test`` names do not resolve in a browser); ``explain=true`` adds a
per-result ``explain`` and ``trace=true`` adds the per-shard ``fanout``. Optional
``deadlineMs`` and ``hedge`` override the coordinator's settings for one query.

**Totals** (Elasticsearch's ``track_total_hits``): matches are counted exactly up to
``trackTotalHits`` (default the ``search_track_total_hits`` setting, 10,000) per index
segment; past it a shard takes its top results by dynamic pruning (the same pages as
scoring everything) and ``estimatedTotal`` becomes a lower bound, said by an added
``"totalRelation": "gte"`` (absent: the count is exact, or extrapolated from the shards
that answered when some missed the deadline). ``trackTotalHits=true`` counts every
match; ``false`` (or 0) counts only what pruning needs.

``q`` is words, AND first with an OR fallback when no page has them all; text in
double quotes (``"standard library"``, typographic quotes too) is a **phrase**: every
result holds its words in that order, matched on the positions stored in the postings
(a stop word inside keeps its place: ``"state of the art"`` is *state*, two words,
*art*). A query with a phrase never falls back to OR.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from fastapi import Body, Depends, Query
from pydantic import BaseModel, ConfigDict, Field
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse
from starlette.routing import Route

from lookup.kit.admin import ADMIN_RESPONSES, admin_token_of, check_admin
from lookup.kit.http import ApiError, bool_param, float_param, int_param
from lookup.search.cached import CACHED_PATH, CSP, CachedPages, cached_link
from lookup.search.coordinator import QueryError
from lookup.search.service import SearchService


def search_route(service: SearchService) -> Route:
    """The ``GET /search`` fast-path route over ``service``."""

    async def endpoint(request: Request) -> JSONResponse:
        q = request.query_params.get("q")
        if q is None:
            raise ApiError(400, "EMPTY_QUERY", "add a query: /search?q=your+words")
        params = request.query_params
        page = int_param(params, "page", 1)
        limit = int_param(params, "limit", 10)
        options: dict[str, Any] = {
            "explain": bool(bool_param(params, "explain", False)),
            "trace": bool(bool_param(params, "trace", False)),
            "deadline_ms": float_param(params, "deadlineMs", low=1.0, high=10_000.0),
            "hedge": bool_param(params, "hedge", None),
            "ranking": params.get("ranking", "auto"),  # auto | hand | learned (the model)
            "features": bool(bool_param(params, "features", False)),
            "track_total_hits": track_total_param(params),
        }
        try:
            body = await run_in_threadpool(service.search, q, page, limit, **options)
        except QueryError as exc:
            extra = {} if exc.position is None else {"position": exc.position}
            raise ApiError(400, exc.code, exc.message, extra=extra) from None
        for item in body.get("results", ()):
            item["cachedUrl"] = cached_link(item["url"])
        return JSONResponse(body)

    return Route("/search", endpoint, methods=["GET"])


def track_total_param(params: Any) -> int | bool | None:
    """``trackTotalHits``: ``true``/``false`` or a whole number (None: the server's default)."""
    raw = params.get("trackTotalHits")
    if raw is None:
        return None
    value = raw.strip().lower()
    if value.isdigit() and len(value) <= 12:
        return int(value)
    if value in ("true", "yes", "on"):
        return True
    if value in ("false", "no", "off"):
        return False
    raise ApiError(
        400,
        "INVALID_PARAMETER",
        "trackTotalHits must be true, false or a whole number (count exactly up to it)",
    )


def cached_route(pages: CachedPages) -> Route:
    """``GET /search/cached?url=…[&crawl=NAME]``: the stored copy of a crawled page.

    HTML that runs no script (rebuilt from an allow-list, and a CSP that forbids them);
    an unknown URL or crawl answers ``404`` JSON, a missing ``url`` ``400``.
    """

    async def endpoint(request: Request) -> HTMLResponse:
        params = request.query_params
        text = await run_in_threadpool(pages.page, params.get("url", ""), params.get("crawl"))
        headers = {
            "Content-Security-Policy": CSP,
            "X-Content-Type-Options": "nosniff",
            "Referrer-Policy": "no-referrer",
            "Cache-Control": "no-cache",
        }
        return HTMLResponse(text, headers=headers)

    return Route(CACHED_PATH, endpoint, methods=["GET"])


class SearchResult(BaseModel):
    """One result of ``GET /search``."""

    url: str
    title: str
    snippet: str
    score: float
    crawledAt: str
    cachedUrl: str


class SearchBody(BaseModel):
    """The ``GET /search`` answer (the seed contract, plus keys that appear only when said)."""

    query: str
    estimatedTotal: int = Field(
        description="matches; exact unless totalRelation says gte (then a lower bound)"
    )
    totalRelation: Literal["gte"] | None = Field(
        default=None,
        description="present only when estimatedTotal is a lower bound: more matches than "
        "trackTotalHits were possible and the shards took their top results by dynamic "
        "pruning (the same results as scoring every match)",
    )
    tookMs: float
    results: list[SearchResult]
    shardsQueried: int
    shardsAnswered: int


_SEARCH_PARAMS: list[tuple[str, dict[str, Any], str]] = [
    ("q", {"type": "string", "maxLength": 500}, "the query (words, phrases, operators)"),
    ("page", {"type": "integer", "minimum": 1, "default": 1}, "result page"),
    ("limit", {"type": "integer", "minimum": 1, "maximum": 100, "default": 10}, "per page"),
    ("explain", {"type": "boolean", "default": False}, "add each result's score explanation"),
    ("trace", {"type": "boolean", "default": False}, "add the per-shard fan-out"),
    ("deadlineMs", {"type": "number", "minimum": 1, "maximum": 10000}, "shard deadline"),
    ("hedge", {"type": "boolean"}, "hedge slow shards (default: the coordinator's)"),
    ("ranking", {"type": "string", "enum": ["auto", "hand", "learned"]}, "the ranker"),
    ("features", {"type": "boolean", "default": False}, "add each result's features"),
    (
        "trackTotalHits",
        {"oneOf": [{"type": "boolean"}, {"type": "integer", "minimum": 0}]},
        "count matches exactly up to this many (true: all; default 10,000, the "
        "search_track_total_hits setting); past it estimatedTotal is a lower bound "
        "and totalRelation is gte",
    ),
]


def document_search(api: Any) -> None:
    """Describe the ``GET /search`` fast route in the app's OpenAPI document.

    The route is served before FastAPI sees the request, so FastAPI does not know it;
    the operation is added to the generated document instead.
    """
    generate = api.openapi

    def openapi() -> dict[str, Any]:
        if api.openapi_schema is not None:
            return api.openapi_schema
        doc = generate()
        body = SearchBody.model_json_schema(ref_template="#/components/schemas/{model}")
        schemas = doc.setdefault("components", {}).setdefault("schemas", {})
        schemas.update(body.pop("$defs", {}))
        schemas["SearchBody"] = body
        doc["paths"]["/search"] = {
            "get": {
                "tags": ["search"],
                "summary": "Search the crawled web (top results, total exact or a lower bound)",
                "operationId": "search_get",
                "parameters": [
                    {
                        "name": name,
                        "in": "query",
                        "required": name == "q",
                        "schema": schema,
                        "description": text,
                    }
                    for name, schema, text in _SEARCH_PARAMS
                ],
                "responses": {
                    "200": {
                        "description": "results",
                        "content": {
                            "application/json": {
                                "schema": {"$ref": "#/components/schemas/SearchBody"}
                            }
                        },
                    },
                    "400": {"description": 'a bad query or parameter: {"error", "message"}'},
                },
            }
        }
        api.openapi_schema = doc
        return doc

    api.openapi = openapi


class FaultBody(BaseModel):
    """A fault to inject into a shard's replica (or into all its replicas)."""

    model_config = ConfigDict(strict=True)  # false is not a probability, 1 not a bool

    mode: Literal["ok", "slow", "dead"]
    replica: int | None = Field(default=None, ge=0, description="omit for every replica")
    delayMs: float = Field(default=100.0, ge=0, le=10_000)
    probability: float = Field(default=1.0, ge=0, le=1)


class CoordinatorBody(BaseModel):
    """Coordinator settings the dashboard can change."""

    model_config = ConfigDict(strict=True)  # false is not a probability, 1 not a bool

    deadlineMs: float | None = Field(default=None, ge=1, le=10_000)
    hedging: bool | None = None


def mount(mounts: Any) -> None:
    """Register the search engine's routes, lifecycle hooks and health probe."""
    service = SearchService(
        Path(mounts.data_dir) / "search", models=Path(mounts.data_dir) / "models"
    )
    pages = CachedPages(
        Path(mounts.data_dir) / "crawls",
        lambda: Path(service.snapshot().manifest.source.crawl_dir),
    )
    mounts.fast_routes.insert(0, search_route(service))
    mounts.fast_routes.insert(1, cached_route(pages))
    document_search(mounts.api)
    mounts.on_startup.append(service.start)
    mounts.on_shutdown.append(service.close)
    mounts.health["search"] = service.status
    api = mounts.api
    admin_token = admin_token_of(mounts)  # read on first use: the shortener may publish it

    def admin(request: Request) -> None:
        """Every mutating endpoint: the admin token, or 401/403."""
        check_admin(
            request.headers.get("authorization"), admin_token(), "changing the search engine"
        )

    guarded = [Depends(admin)]

    def snapshot_or_503() -> Any:
        return service.snapshot()  # NotBuilt answers 503 (lookup.kit.http.STATUS_OF)

    @api.get("/search/status", tags=["search"], summary="The live index version and tiers")
    def search_status() -> dict[str, Any]:
        snapshot_or_503()
        return service.status()

    @api.get("/search/shards", tags=["search"], summary="Per-shard latency, hedges, misses, faults")
    def shards_status() -> dict[str, Any]:
        snapshot_or_503()
        return service.coordinator.status()

    @api.put(
        "/search/shards/{shard}/fault",
        tags=["search"],
        summary="Make a shard's replica slow or dead (or ok again); admin token",
        dependencies=guarded,
        responses=ADMIN_RESPONSES,
    )
    def set_fault(shard: int, body: FaultBody = Body(...)) -> dict[str, Any]:
        snap = snapshot_or_503()
        if not 0 <= shard < len(snap.shards):
            raise ApiError(404, "NO_SUCH_SHARD", f"shards are 0..{len(snap.shards) - 1}")
        if body.replica is not None and body.replica >= service.coordinator.replicas_per_shard:
            raise ApiError(
                404,
                "NO_SUCH_REPLICA",
                f"replicas are 0..{service.coordinator.replicas_per_shard - 1}",
            )
        service.coordinator.set_fault(
            shard, body.replica, body.mode, body.delayMs, body.probability
        )
        return service.coordinator.groups[shard].status()

    @api.delete(
        "/search/shards/faults",
        tags=["search"],
        summary="Heal every replica (admin token)",
        dependencies=guarded,
        responses=ADMIN_RESPONSES,
    )
    def clear_faults() -> dict[str, Any]:
        snapshot_or_503()
        service.coordinator.clear_faults()
        return service.coordinator.status()

    @api.post(
        "/search/shards/reset",
        tags=["search"],
        summary="Forget latency history (admin token)",
        dependencies=guarded,
        responses=ADMIN_RESPONSES,
    )
    def reset_stats() -> dict[str, Any]:
        snapshot_or_503()
        service.coordinator.reset_stats()
        return service.coordinator.status()

    @api.put(
        "/search/coordinator",
        tags=["search"],
        summary="Change deadline or hedging (admin token)",
        dependencies=guarded,
        responses=ADMIN_RESPONSES,
    )
    def set_coordinator(body: CoordinatorBody = Body(...)) -> dict[str, Any]:
        snapshot_or_503()
        if body.deadlineMs is not None:
            service.coordinator.deadline_ms = body.deadlineMs
        if body.hedging is not None:
            service.coordinator.hedge = body.hedging
        return service.coordinator.status()

    @api.delete(
        "/search/docs",
        tags=["search"],
        summary="Remove a page from results now (admin token)",
        dependencies=guarded,
        responses=ADMIN_RESPONSES,
    )
    def delete_doc(
        url: str = Query("", max_length=4096), urlHash: str = Query("", max_length=128)
    ) -> dict[str, Any]:
        snapshot_or_503()
        if not url and not urlHash:
            raise ApiError(400, "MISSING_URL", "give url=… or urlHash=… of the page to delete")
        result = service.delete(url=url, url_hash=urlHash)
        if not result["deleted"]:
            raise ApiError(404, "NOT_INDEXED", "no indexed page has that url")
        return result
