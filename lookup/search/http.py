"""HTTP routes of the search engine.

``GET /search`` is a hot path: a plain Starlette route tried before the FastAPI app.
Management endpoints (status, shard fault switches, deletions, index versions and the
rollback) live on FastAPI; the mutating ones need the admin token (:mod:`lookup.kit.admin`).

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

A word no page has also finds its likely corrections, each weighing less than a word as
typed (typo tolerance, :mod:`.expansion`): ``corrections`` says which, ``typos=false``
turns it off. ``pre*`` and ``word~N`` say in ``expansions`` how many index terms they
became and whether the expansion limit cut them.
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

from lookup import settings
from lookup.kit.admin import ADMIN_RESPONSES, admin_token_of, check_admin
from lookup.kit.http import ApiError, bool_param, choice_param, float_param, int_param
from lookup.search.cached import CACHED_PATH, CSP, CachedPages, cached_link
from lookup.search.cluster import cluster_search
from lookup.search.collapse import MAX_COLLAPSE
from lookup.search.coordinator import QueryError
from lookup.search.filters import FilterError, filter_nodes
from lookup.search.location import describe_versions, index_location
from lookup.search.metrics import CoordinatorMetrics
from lookup.search.service import SearchService
from lookup.search.synonyms import table_path, write_seed


def search_route(service: SearchService) -> Route:
    """The ``GET /search`` fast-path route over ``service``."""
    per_site = settings.get("search_collapse_per_host")

    async def endpoint(request: Request) -> JSONResponse:
        params = request.query_params
        for name in params:  # a loop over the few names given: no set on the hot path
            if name not in SEARCH_PARAMS:
                raise unknown_parameters(params)
        q = params.get("q")
        if q is None:
            raise ApiError(400, "EMPTY_QUERY", "add a query: /search?q=your+words")
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
            "typos": bool_param(params, "typos", None),  # None: the search_typos setting
            "facets": bool(bool_param(params, "facets", False)),
            "sort": choice_param(params, "sort", ("score", "date"), "score"),
            "collapse": int_param(params, "collapse", per_site, low=0, high=MAX_COLLAPSE),
        }
        try:
            options["filters"] = filter_nodes(
                params.get("lang"), params.get("site"), params.get("type"), params.get("month")
            )
            body = await run_in_threadpool(service.search, q, page, limit, **options)
        except QueryError as exc:
            extra = {} if exc.position is None else {"position": exc.position}
            raise ApiError(400, exc.code, exc.message, extra=extra) from None
        except FilterError as exc:
            raise ApiError(400, exc.code, exc.message) from None
        for item in body.get("results", ()):
            item["cachedUrl"] = cached_link(item["url"])
        return JSONResponse(body)

    return Route("/search", endpoint, methods=["GET"])


def unknown_parameters(params: Any) -> ApiError:
    """400 ``UNKNOWN_PARAMETER`` naming the parameters ``GET /search`` does not know and
    the ones it accepts: silently ignored, ``lnag=en`` would answer another question."""
    unknown = sorted(set(params) - SEARCH_PARAMS)
    accepted = sorted(SEARCH_PARAMS)
    return ApiError(
        400,
        "UNKNOWN_PARAMETER",
        f"unknown query parameter(s): {', '.join(unknown)}; this endpoint accepts: "
        f"{', '.join(accepted)}",
        extra={"accepted": accepted},
    )


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


class MoreFromSite(BaseModel):
    """The results of this result's site that collapsing hid (find them with ``site:``)."""

    site: str
    hidden: int = Field(description="hidden in the ranking walked: at least this many more")


class SearchResult(BaseModel):
    """One result of ``GET /search``."""

    url: str
    title: str
    snippet: str
    score: float
    crawledAt: str
    cachedUrl: str
    moreFromSite: MoreFromSite | None = Field(
        default=None,
        description="on a site's last shown result when collapsing hid more of its results",
    )


class FacetBucket(BaseModel):
    """One value of a facet and how many matches have it."""

    value: str
    count: int


class Facet(BaseModel):
    """A facet's commonest values; ``other``: the matches with any other value."""

    buckets: list[FacetBucket]
    other: int


class Facets(BaseModel):
    """Counts over the whole match set (``facets=true``); ``relation`` gte: lower bounds."""

    relation: Literal["eq", "gte"]
    site: Facet
    lang: Facet
    month: Facet
    type: Facet


class SynonymUse(BaseModel):
    """A query term the synonym table widened (lookup/search/synonyms.py)."""

    term: str = Field(description="the query's index term (analysed: JS is js)")
    synonyms: list[str] = Field(description="the table's entries also searched, at lower weight")


class Correction(BaseModel):
    """A rare word typo tolerance searched with its corrections (lookup/search/expansion.py)."""

    from_: str = Field(alias="from", description="the word as typed")
    to: str = Field(description="its best correction (the results hold it, ranked lower)")
    position: int = Field(description="where the word starts in q (0-based)")
    typedFound: int = Field(description="pages with the word as typed (they rank first)")


class Expansion(BaseModel):
    """What a ``prefix*`` or ``word~N`` expanded to, and whether its limit cut it."""

    operator: Literal["prefix", "fuzzy"]
    text: str
    terms: int = Field(description="index terms searched")
    matching: int = Field(description="index terms that match it")
    limit: int
    truncated: bool


class Notice(BaseModel):
    """Why a query found nothing without being wrong (a 200, not an error)."""

    code: Literal["ONLY_STOP_WORDS"]
    message: str


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
    facets: Facets | None = Field(default=None, description="only with facets=true")
    synonyms: list[SynonymUse] | None = Field(
        default=None, description="present only when the synonym table widened a query term"
    )
    corrections: list[Correction] | None = Field(
        default=None, description="present only when typo tolerance corrected a rare word"
    )
    expansions: list[Expansion] | None = Field(
        default=None, description="present only for a query with a prefix* or a word~"
    )
    notice: Notice | None = Field(
        default=None,
        description="present only when the query had nothing searchable: one stop word "
        "(two or more are searched as a phrase through the stop-word phrase index)",
    )


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
    ("facets", {"type": "boolean", "default": False}, "add counts by site, lang, month, type"),
    ("typos", {"type": "boolean"}, "typo tolerance for rare words (default: search_typos)"),
    ("sort", {"type": "string", "enum": ["score", "date"], "default": "score"}, "date: newest"),
    (
        "collapse",
        {"type": "integer", "minimum": 0, "maximum": MAX_COLLAPSE, "default": 2},
        "results of one site per page at most, the rest on later pages and behind "
        "moreFromSite (0: off; default the search_collapse_per_host setting)",
    ),
    ("lang", {"type": "string", "pattern": "^[a-z]{2,3}$"}, "only pages in this language"),
    ("site", {"type": "string"}, "only pages of this host (and its subdomains)"),
    ("type", {"type": "string"}, "only pages served as this media type (text/html)"),
    ("month", {"type": "string", "pattern": "^\\d{4}-\\d{2}$"}, "only pages crawled then"),
]
#: Every parameter ``GET /search`` accepts; any other is refused (400 UNKNOWN_PARAMETER).
SEARCH_PARAMS = frozenset(name for name, _, _ in _SEARCH_PARAMS)


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
    synonyms, seeded = table_path(mounts.data_dir)
    cluster = cluster_search()  # None: the shards answer in this process (the default)
    service = SearchService(
        index_location(Path(mounts.data_dir) / "search", settings.get("search_index_store")),
        coordinator=None if cluster is None else cluster.coordinator,
        models=Path(mounts.data_dir) / "models",
        synonyms=synonyms,
    )
    if cluster is not None:
        mounts.on_startup.append(cluster.start)
        mounts.on_shutdown.append(cluster.stop)
        mounts.health["search-cluster"] = cluster.status
    if synonyms is not None and seeded:  # a new data directory starts with the seed rules
        seed_path = synonyms

        def seed_synonyms() -> None:
            write_seed(seed_path)

        mounts.on_startup.append(seed_synonyms)
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
    mounts.metrics.append(CoordinatorMetrics(service))  # hedges, deadlines: read at scrape
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
        if cluster is not None:  # the shard servers this worker follows in etcd
            return {**service.coordinator.status(), "cluster": cluster.status()}
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

    mount_versions(api, service, guarded)


def mount_versions(api: Any, service: SearchService, guarded: list[Any]) -> None:
    """``GET /search/versions`` (live, rollback target, kept and rejected versions with the
    reasons) and ``POST /search/versions/rollback`` (admin token): the previous version
    live again in one pointer swap, served by this process before the answer."""

    @api.get(
        "/search/versions",
        tags=["search"],
        summary="Index versions: live, the rollback target, kept, and rejected with why",
    )
    def versions() -> dict[str, Any]:
        out = describe_versions(service.location)
        live = service.live_version()
        out["served"] = live.version if live is not None else None
        return out

    @api.post(
        "/search/versions/rollback",
        tags=["search"],
        summary="Make the previous index version live again, at once (admin token)",
        dependencies=guarded,
        responses={
            **ADMIN_RESPONSES,
            409: {"description": "NO_PREVIOUS (no version to go back to) or INDEX_BUSY"},
        },
    )
    def rollback() -> dict[str, Any]:
        now, was = service.location.rollback()  # Conflict → 409, NotBuilt → 503
        service.reload(wait=True)  # this process serves it before answering
        live = service.live_version()
        served = live.version if live is not None else None
        body: dict[str, Any] = {"version": now, "previous": was, "served": served}
        if served != now and service.damage is not None:
            body["damaged"] = service.damage.report()
        return body
