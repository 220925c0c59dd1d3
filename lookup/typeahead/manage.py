"""The typeahead management API on the FastAPI app, declared once.

Two servers answer ``/v1/suggest``: the single server (:mod:`~lookup.typeahead.http`,
one :class:`~lookup.typeahead.serving.SuggestService`) and the shard router
(:mod:`~lookup.typeahead.router`). Both hold the same serve-time policy — submitted
searches feeding trending, the trending set, the hot blocklist — so both mount the same
endpoints through :func:`mount_serve_time`, each over a small object implementing
:class:`ServeTimePolicy`. What only the single server has (its snapshot versions,
validated swap, rollback, reload and the trie walk) is :func:`mount_snapshots`.

These are management calls, off the hot path, so they keep FastAPI's validation and
OpenAPI; errors are :class:`~lookup.kit.http.ApiError` or domain errors from
:mod:`lookup.errors` (the app maps both to JSON).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from fastapi import Body, Query, Request

from lookup.errors import NotBuilt
from lookup.kit.http import ApiError
from lookup.typeahead.normalize import MAX_QUERY_CHARS, has_control_chars
from lookup.typeahead.serving import UnknownMarket

if TYPE_CHECKING:
    from collections.abc import Callable

    from fastapi import FastAPI

    from lookup.typeahead.filters import HotBlocklist
    from lookup.typeahead.serving import SuggestService
    from lookup.typeahead.trending import TrendingPolicy, TrendingTerm

TAGS = ["typeahead"]


class ServeTimePolicy(Protocol):
    """What the shared management endpoints need from a typeahead server."""

    def known_markets(self) -> list[str]:
        """The markets this server answers (anything else is ``UNKNOWN_MARKET``)."""
        ...

    async def record_search(self, query: str, market: str, user: str | None) -> str | None:
        """Count a submitted search (trending, the next build); its normalised form, or
        None if nothing is left once normalised. ``market`` is one of the known ones."""
        ...

    def trending_now(self, market: str) -> tuple[list[TrendingTerm], TrendingPolicy | None]:
        """The market's trending terms now and the policy deciding them (None: no tracker)."""
        ...

    def hot_blocklist(self) -> HotBlocklist:
        """The serve-time blocklist applied to every answer."""
        ...


def unknown_market(market: object, known: list[str], status: int = 400) -> ApiError:
    """``UNKNOWN_MARKET`` naming the known ones."""
    return ApiError(
        status, "UNKNOWN_MARKET", f"unknown market {market!r}; known: {', '.join(known)}"
    )


def search_payload(request: Request, payload: dict[str, Any]) -> tuple[str, str, str | None]:
    """Check a ``POST /v1/searches`` body: ``(q, market, user)``; anonymous users are keyed
    by their address. Raises :class:`ApiError` (400) on a bad field."""
    q, market = payload.get("q"), payload.get("market", "en-IN")
    if not isinstance(q, str) or not q.strip():
        raise ApiError(400, "INVALID_QUERY", "q must be a non-empty string")
    if not isinstance(market, str):
        raise ApiError(400, "UNKNOWN_MARKET", "market must be a string such as en-IN")
    if len(q) > MAX_QUERY_CHARS or has_control_chars(q):
        raise ApiError(
            400,
            "INVALID_QUERY",
            f"q must be at most {MAX_QUERY_CHARS} characters without control characters",
        )
    user = payload.get("userId")
    if user is not None and (not isinstance(user, str) or len(user) > 200):
        raise ApiError(400, "INVALID_REQUEST", "userId must be a string of at most 200 characters")
    if user is None and request.client is not None:
        user = f"addr:{request.client.host}"
    return q, market, user


def mount_serve_time(api: FastAPI, policy: ServeTimePolicy) -> None:
    """``POST /v1/searches``, ``GET /v1/typeahead/trending`` and the hot-blocklist
    endpoints over ``policy`` (the single server and the shard router alike)."""

    @api.post(
        "/v1/searches",
        tags=TAGS,
        status_code=202,
        summary="Record a submitted search (feeds trending and the next build)",
    )
    async def record_search(
        request: Request,
        payload: dict[str, Any] = Body(
            ..., examples=[{"q": "ind vs pak live score", "market": "en-IN"}]
        ),
    ) -> dict[str, Any]:
        q, market, user = search_payload(request, payload)
        known = policy.known_markets()
        if market not in known:
            raise unknown_market(market, known)
        normalized = await policy.record_search(q, market, user)
        if normalized is None:
            raise ApiError(400, "INVALID_QUERY", "q is empty once normalised")
        return {"q": normalized, "market": market, "recorded": True}

    @api.get("/v1/typeahead/trending", tags=TAGS, summary="The current trending set of a market")
    async def trending(market: str = Query("en-IN")) -> dict[str, Any]:
        known = policy.known_markets()
        if market not in known:
            raise unknown_market(market, known, 404)
        terms, rules = policy.trending_now(market)
        return {
            "market": market,
            "terms": [t.to_dict() for t in terms],
            "policy": rules.__dict__ if rules else None,
        }

    mount_blocklist(api, policy.hot_blocklist)


def mount_blocklist(api: FastAPI, blocklist: Callable[[], HotBlocklist]) -> None:
    """The hot-blocklist endpoints (read, add, remove) over whatever ``blocklist()`` returns."""

    def body(bl: HotBlocklist) -> dict[str, Any]:
        return {"terms": bl.hot_terms, "version": bl.version}

    @api.get("/v1/typeahead/blocklist", tags=TAGS, summary="The serve-time blocklist")
    async def get_blocklist() -> dict[str, Any]:
        bl = blocklist()
        return {"terms": bl.hot_terms, "builtin": bl.builtin.terms, "version": bl.version}

    @api.post(
        "/v1/typeahead/blocklist",
        tags=TAGS,
        summary="Add phrases to the hot blocklist (effective at once)",
    )
    async def add_blocklist(
        payload: dict[str, Any] = Body(..., examples=[{"terms": ["some phrase"]}]),
    ) -> dict[str, Any]:
        terms = payload.get("terms")
        if terms is None and "term" in payload:
            terms = [payload["term"]]
        if not isinstance(terms, list) or not terms or not all(isinstance(t, str) for t in terms):
            raise ApiError(
                400, "INVALID_REQUEST", 'send {"terms": ["phrase", ...]} or {"term": "phrase"}'
            )
        if len(terms) > 1000:
            raise ApiError(400, "INVALID_REQUEST", "at most 1000 terms per request")
        bl = blocklist()
        try:
            added = bl.add(terms)
        except ValueError as exc:
            raise ApiError(400, "INVALID_TERM", str(exc)) from None
        return {"added": added, **body(bl)}

    @api.delete(
        "/v1/typeahead/blocklist", tags=TAGS, summary="Remove a phrase from the hot blocklist"
    )
    async def remove_blocklist(
        term: str = Query(..., min_length=1, max_length=MAX_QUERY_CHARS),
    ) -> dict[str, Any]:
        bl = blocklist()
        try:
            found = bl.remove(term)
        except ValueError as exc:
            raise ApiError(409, "BUILTIN_TERM", str(exc)) from None
        if not found:
            raise ApiError(404, "NOT_FOUND", f"{term!r} is not on the hot blocklist")
        return {"removed": term, **body(bl)}


def mount_snapshots(api: FastAPI, service: SuggestService) -> None:
    """The single server's snapshot endpoints: versions, rollback, validated activation,
    reload, and the trie walk for a prefix."""

    def market_or_404(market: str) -> None:
        known = service.known_markets()
        if market not in known:
            raise unknown_market(market, known, 404)

    @api.get("/v1/typeahead/snapshots", tags=TAGS, summary="Snapshot versions per market")
    async def snapshots() -> dict[str, Any]:
        return {"markets": service.market_status()}

    @api.post(
        "/v1/typeahead/snapshots/{market}/rollback",
        tags=TAGS,
        summary="Swap back to the previous snapshot",
    )
    async def rollback(market: str) -> dict[str, Any]:
        market_or_404(market)
        try:
            out = service.rollback(market)
        except NotBuilt:
            raise  # a LookupError too, but the app answers it with 503
        except LookupError as exc:
            raise ApiError(409, "NO_PREVIOUS", str(exc)) from None
        return {"market": market, "version": out.version, "previous": out.previous}

    @api.post(
        "/v1/typeahead/snapshots/{market}/activate",
        tags=TAGS,
        summary="Validate a stored version and swap it in",
    )
    async def activate(
        market: str,
        payload: dict[str, Any] = Body(..., examples=[{"version": "20261009T060000Z-ab12cd"}]),
    ) -> dict[str, Any]:
        market_or_404(market)
        version = payload.get("version")
        if not isinstance(version, str):
            raise ApiError(400, "INVALID_REQUEST", 'send {"version": "..."}')
        if version not in service.store.versions(market):
            raise ApiError(404, "NOT_FOUND", f"no stored snapshot {version!r} for {market}")
        out = service.deploy(market, version, compare=bool(payload.get("compare", False)))
        if not out.deployed:
            raise ApiError(
                409,
                "VALIDATION_FAILED",
                out.message,
                extra={"report": out.report.to_dict() if out.report else None},
            )
        return {"market": market, "version": out.version, "previous": out.previous}

    @api.post(
        "/v1/typeahead/snapshots/reload",
        tags=TAGS,
        summary="Deploy what the build published (the poller also does this every second)",
    )
    async def reload() -> dict[str, Any]:
        return service.poll()

    @api.get(
        "/v1/typeahead/trace", tags=TAGS, summary="The trie walk for a prefix (for explanations)"
    )
    async def trace(
        q: str = Query("", max_length=MAX_QUERY_CHARS), market: str = Query("en-IN")
    ) -> dict[str, Any]:
        if has_control_chars(q):
            raise ApiError(400, "INVALID_QUERY", "q may not contain control characters")
        try:
            return service.trace(q, market)
        except UnknownMarket:
            raise ApiError(400, "UNKNOWN_MARKET", f"unknown market {market!r}") from None


__all__ = [
    "ServeTimePolicy",
    "mount_blocklist",
    "mount_serve_time",
    "mount_snapshots",
    "search_payload",
    "unknown_market",
]
