"""The typeahead management API on the FastAPI app, declared once.

Two servers answer ``/v1/suggest``: the single server (:mod:`~lookup.typeahead.http`,
one :class:`~lookup.typeahead.serving.SuggestService`) and the shard router
(:mod:`~lookup.typeahead.router`). Both hold the same serve-time policy — submitted
searches feeding trending, the trending set, the hot blocklist — so both mount the same
endpoints through :func:`mount_serve_time`, each over a small object implementing
:class:`ServeTimePolicy`. What only the single server has (its snapshot versions,
validated swap, rollback, reload and the trie walk) is :func:`mount_snapshots`.

Every endpoint that changes something (the hot blocklist, rollback, activation, reload)
takes the admin token (:mod:`lookup.kit.admin`): 401 without one, 403 with another.
These are management calls, off the hot path, so they keep FastAPI's validation and
OpenAPI; errors are :class:`~lookup.kit.http.ApiError` or domain errors from
:mod:`lookup.errors` (the app maps both to JSON).
"""

from __future__ import annotations

import hashlib
import ipaddress
from enum import Enum
from functools import lru_cache
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from fastapi import Body, Query, Request
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool
from user_agents import parse as parse_user_agent

from lookup import errors
from lookup.errors import NotBuilt
from lookup.kit.admin import ADMIN_RESPONSES, is_admin, require_admin
from lookup.kit.clients import Trust, client_address, client_of, network_of
from lookup.kit.http import ApiError
from lookup.kit.ratelimit import RateLimiter
from lookup.typeahead.canary import CanaryPolicy
from lookup.typeahead.normalize import MAX_QUERY_CHARS, has_control_chars, normalize_prefix
from lookup.typeahead.serving import CanaryRefused, UnknownMarket
from lookup.typeahead.trending import Pick

if TYPE_CHECKING:
    from collections.abc import Callable

    from fastapi import FastAPI

    from lookup.typeahead.filters import HotBlocklist
    from lookup.typeahead.recent.http import Recorder
    from lookup.typeahead.serving import SuggestService
    from lookup.typeahead.trending import TrendingPolicy, TrendingTerm

TAGS: list[str | Enum] = ["typeahead"]  # FastAPI's type for route tags


class ServeTimePolicy(Protocol):
    """What the shared management endpoints need from a typeahead server."""

    def known_markets(self) -> list[str]:
        """The markets this server answers (anything else is ``UNKNOWN_MARKET``)."""
        ...

    async def record_search(
        self,
        query: str,
        market: str,
        user: str | None,
        network: str | None = None,
        *,
        is_bot: bool = False,
        pick: Pick | None = None,
    ) -> str | None:
        """Count a submitted search (trending, the next build); its normalised form, or
        None if nothing is left once normalised. ``market`` is one of the known ones;
        ``user`` and ``network`` are the server's identity of the searcher; a bot's
        search is logged for the build (flagged) and never trends; ``pick`` says it was
        picked from the suggestions (logged; it weighs less in the next build)."""
        ...

    def trending_now(self, market: str) -> tuple[list[TrendingTerm], TrendingPolicy | None]:
        """The market's trending terms now and the policy deciding them (None: no tracker)."""
        ...

    def hot_blocklist(self) -> HotBlocklist:
        """The serve-time blocklist applied to every answer."""
        ...


def canonical_market(raw: str) -> str:
    """A market code as the snapshots name it, whatever its case or separator: ``EN-in``,
    ``en_in`` and `` en-IN`` are ``en-IN`` (BCP 47's spelling: language lower case, region
    upper case). Anything else is returned trimmed, to be refused as unknown."""
    code = raw.strip()
    language, sep, region = code.replace("_", "-").partition("-")
    if not sep or not language.isalpha() or not region.isalnum():
        return code
    return f"{language.lower()}-{region.upper()}"


def unknown_market(market: object, known: list[str], status: int = 400) -> ApiError:
    """``UNKNOWN_MARKET`` naming the known ones."""
    return ApiError(
        status, "UNKNOWN_MARKET", f"unknown market {market!r}; known: {', '.join(known)}"
    )


class Searcher(NamedTuple):
    """Who submitted a search, as the server sees it."""

    user: str
    network: str
    client: str | None  # the rate-limited unit; None for the trusted relay (no limit)
    bot: bool = False  # a crawler's or a script's user agent (ua-parser's rules)


@lru_cache(maxsize=4096)
def is_bot_agent(user_agent: str) -> bool:
    """Whether a user agent is a crawler (``user-agents``, Browserscope's ua-parser rules)."""
    return bool(parse_user_agent(user_agent[:512]).is_bot)


def _digest(kind: str, value: str) -> str:
    return kind + ":" + hashlib.blake2b(value.encode(), digest_size=12).hexdigest()


def search_payload(
    request: Request,
    payload: dict[str, Any],
    *,
    admin_token: Callable[[], str] = str,
    trust_forwarded_for: Trust = False,
) -> tuple[str, str, Searcher]:
    """Check a ``POST /v1/searches`` body: ``(q, market, searcher)``. Raises
    :class:`ApiError` (400) on a bad field.

    The searcher is the server's call: the bearer token's hash when one is sent (a
    signed-in user, the same from any address), else a hash of the client's address
    (an IPv6 client's /64); its network is the address's /24 or /48. A ``userId`` in the
    body is ignored — except from the admin token, a trusted relay (the dashboard's
    replay, a search front end forwarding its users' searches) that names ``userId``
    and ``clientAddress`` itself and is not rate-limited.
    """
    q, market = payload.get("q"), payload.get("market", "en-IN")
    if not isinstance(q, str) or not q.strip():
        raise ApiError(400, "INVALID_QUERY", "q must be a non-empty string")
    if not isinstance(market, str):
        raise ApiError(400, "UNKNOWN_MARKET", "market must be a string such as en-IN")
    market = canonical_market(market)
    if len(q) > MAX_QUERY_CHARS or has_control_chars(q):
        raise ApiError(
            400,
            "INVALID_QUERY",
            f"q must be at most {MAX_QUERY_CHARS} characters without control characters",
        )
    named = payload.get("userId")
    if named is not None and (not isinstance(named, str) or len(named) > 200):
        raise ApiError(400, "INVALID_REQUEST", "userId must be a string of at most 200 characters")
    claimed = payload.get("clientAddress")
    if claimed is not None:
        try:
            claimed = str(ipaddress.ip_address(claimed if isinstance(claimed, str) else ""))
        except ValueError:
            raise ApiError(
                400, "INVALID_REQUEST", "clientAddress must be an IPv4 or IPv6 address"
            ) from None
    address = client_address(request.scope, trust_forwarded_for)
    bot = is_bot_agent(request.headers.get("user-agent", ""))
    authorization = request.headers.get("authorization")
    if authorization is not None and is_admin(authorization, admin_token()):
        seen_at = claimed or address
        user = named if named is not None else _digest("addr", client_of(seen_at))
        return q, market, Searcher(user, network_of(seen_at), None, bot)
    scheme, _, token = (authorization or "").strip().partition(" ")
    if scheme.lower() == "bearer" and token.strip():
        user = _digest("token", token.strip())
    else:
        user = _digest("addr", client_of(address))
    return q, market, Searcher(user, network_of(address), client_of(address), bot)


def pick_of(payload: dict[str, Any]) -> Pick | None:
    """The optional ``fromSuggestion``/``rank``/``prefix`` fields of a ``POST /v1/searches``
    body, checked: a :class:`Pick` when the search was picked from the suggestions, else
    None (400 INVALID_REQUEST on a bad value, or rank/prefix without ``fromSuggestion``)."""
    picked, rank, prefix = (payload.get(k) for k in ("fromSuggestion", "rank", "prefix"))
    if picked is not None and not isinstance(picked, bool):
        raise ApiError(400, "INVALID_REQUEST", "fromSuggestion must be true or false")
    if rank is not None and (
        isinstance(rank, bool) or not isinstance(rank, int) or not 1 <= rank <= 10
    ):
        raise ApiError(400, "INVALID_REQUEST", "rank must be an integer from 1 to 10")
    if prefix is not None and (
        not isinstance(prefix, str) or len(prefix) > MAX_QUERY_CHARS or has_control_chars(prefix)
    ):
        raise ApiError(
            400,
            "INVALID_REQUEST",
            f"prefix must be a string of at most {MAX_QUERY_CHARS} characters",
        )
    if not picked:
        if rank is not None or prefix is not None:
            raise ApiError(
                400,
                "INVALID_REQUEST",
                "rank and prefix describe a pick: send them with fromSuggestion: true",
            )
        return None
    return Pick(rank, (normalize_prefix(prefix) or None) if prefix is not None else None)


def mount_serve_time(
    api: FastAPI,
    policy: ServeTimePolicy,
    admin_token: Callable[[], str],
    *,
    limiter: RateLimiter,
    trust_forwarded_for: Trust = False,
    recent: Recorder | None = None,
) -> None:
    """``POST /v1/searches``, ``GET /v1/typeahead/trending`` and the hot-blocklist
    endpoints over ``policy`` (the single server and the shard router alike); the
    blocklist's edits take ``admin_token``; ``limiter`` caps searches per client (see
    :func:`search_payload`), answered with the ``RateLimit-*`` headers."""

    @api.post(
        "/v1/searches",
        tags=TAGS,
        status_code=202,
        responses={429: {"description": "RATE_LIMITED (see RateLimit-* and Retry-After)"}},
        summary="Record a submitted search (feeds trending and the next build; rate-limited "
        "per client)",
    )
    async def record_search(
        request: Request,
        payload: dict[str, Any] = Body(
            ...,
            examples=[
                {"q": "ind vs pak live score", "market": "en-IN"},
                {"q": "ipl live score", "fromSuggestion": True, "rank": 2, "prefix": "ipl"},
            ],
        ),
    ) -> JSONResponse:
        q, market, who = search_payload(
            request, payload, admin_token=admin_token, trust_forwarded_for=trust_forwarded_for
        )
        pick = pick_of(payload)
        headers: dict[str, str] = {}
        if who.client is not None:
            decision = limiter.check(who.client)
            headers = decision.headers()
            if not decision.allowed:
                raise errors.RateLimited(
                    f"too many searches from this client; retry in {decision.retry_after_s} s",
                    code="RATE_LIMITED",
                    headers=headers,
                )
        known = policy.known_markets()
        if market not in known:
            raise unknown_market(market, known)
        normalized = await policy.record_search(
            q, market, who.user, who.network, is_bot=who.bot, pick=pick
        )
        if normalized is None:
            raise ApiError(400, "INVALID_QUERY", "q is empty once normalised")
        if recent is not None:  # the sender's own recent list, when it sent its token
            await recent(request.headers.get("authorization"), market, normalized)
        return JSONResponse(
            {"q": normalized, "market": market, "recorded": True},
            status_code=202,
            headers=headers,
        )

    @api.get("/v1/typeahead/trending", tags=TAGS, summary="The current trending set of a market")
    async def trending(market: str = Query("en-IN")) -> dict[str, Any]:
        market = canonical_market(market)
        known = policy.known_markets()
        if market not in known:
            raise unknown_market(market, known, 404)
        terms, rules = policy.trending_now(market)
        return {
            "market": market,
            "terms": [t.to_dict() for t in terms],
            "policy": rules.__dict__ if rules else None,
        }

    mount_blocklist(api, policy.hot_blocklist, admin_token)


def mount_blocklist(
    api: FastAPI, blocklist: Callable[[], HotBlocklist], admin_token: Callable[[], str]
) -> None:
    """The hot-blocklist endpoints (read; add and remove with ``admin_token``) over
    whatever ``blocklist()`` returns."""

    def body(bl: HotBlocklist) -> dict[str, Any]:
        return {"terms": bl.hot_terms, "version": bl.version}

    @api.get("/v1/typeahead/blocklist", tags=TAGS, summary="The serve-time blocklist")
    async def get_blocklist() -> dict[str, Any]:
        bl = blocklist()
        return {"terms": bl.hot_terms, "builtin": bl.builtin.terms, "version": bl.version}

    @api.post(
        "/v1/typeahead/blocklist",
        tags=TAGS,
        responses=ADMIN_RESPONSES,
        summary="Add phrases to the hot blocklist (effective at once; admin token)",
    )
    async def add_blocklist(
        request: Request,
        payload: dict[str, Any] = Body(..., examples=[{"terms": ["some phrase"]}]),
    ) -> dict[str, Any]:
        require_admin(request.headers.get("authorization"), admin_token())
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
        try:  # a locked file or a database round trip: off the event loop
            added = await run_in_threadpool(bl.add, terms)
        except ValueError as exc:
            raise ApiError(400, "INVALID_TERM", str(exc)) from None
        return {"added": added, **body(bl)}

    @api.delete(
        "/v1/typeahead/blocklist",
        tags=TAGS,
        responses=ADMIN_RESPONSES,
        summary="Remove a phrase from the hot blocklist (admin token)",
    )
    async def remove_blocklist(
        request: Request,
        term: str = Query(..., min_length=1, max_length=MAX_QUERY_CHARS),
    ) -> dict[str, Any]:
        require_admin(request.headers.get("authorization"), admin_token())
        bl = blocklist()
        try:
            found = await run_in_threadpool(bl.remove, term)
        except ValueError as exc:
            raise ApiError(409, "BUILTIN_TERM", str(exc)) from None
        if not found:
            raise ApiError(404, "NOT_FOUND", f"{term!r} is not on the hot blocklist")
        return {"removed": term, **body(bl)}


_CANARY_FIELDS = {
    "share": "share",
    "minRequests": "min_requests",
    "maxEmptyIncrease": "max_empty_increase",
    "maxErrorRate": "max_error_rate",
    "minOverlap": "min_overlap",
}


def canary_policy(payload: dict[str, Any]) -> CanaryPolicy:
    """The canary's policy from a request body (defaults for what it leaves out); 400
    INVALID_REQUEST for an unknown field or a value out of range."""
    unknown = set(payload) - set(_CANARY_FIELDS) - {"version"}
    if unknown:
        raise ApiError(400, "INVALID_REQUEST", f"unknown field(s): {sorted(unknown)}")
    chosen: dict[str, Any] = {}
    for name, attr in _CANARY_FIELDS.items():
        if name not in payload:
            continue
        value = payload[name]
        wanted = int if attr == "min_requests" else float
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ApiError(400, "INVALID_REQUEST", f"{name} must be a number")
        if wanted is int and value != int(value):
            raise ApiError(400, "INVALID_REQUEST", f"{name} must be an integer")
        chosen[attr] = wanted(value)
    if chosen.get("min_requests", 1) > 1_000_000:
        raise ApiError(400, "INVALID_REQUEST", "minRequests is at most 1000000")
    if "min_requests" in chosen:
        chosen["early_requests"] = max(1, min(20, chosen["min_requests"]))
    try:
        return CanaryPolicy(**chosen)
    except ValueError as exc:
        raise ApiError(400, "INVALID_REQUEST", str(exc)) from None


def mount_snapshots(api: FastAPI, service: SuggestService, admin_token: Callable[[], str]) -> None:
    """The single server's snapshot endpoints: versions, rollback, validated activation,
    reload (those three with ``admin_token``), and the trie walk for a prefix."""

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
        responses=ADMIN_RESPONSES,
        summary="Swap back to the previous snapshot (admin token)",
    )
    async def rollback(market: str, request: Request) -> dict[str, Any]:
        require_admin(request.headers.get("authorization"), admin_token())
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
        responses=ADMIN_RESPONSES,
        summary="Validate a stored version and swap it in (admin token)",
    )
    async def activate(
        market: str,
        request: Request,
        payload: dict[str, Any] = Body(..., examples=[{"version": "20261009T060000Z-ab12cd"}]),
    ) -> dict[str, Any]:
        require_admin(request.headers.get("authorization"), admin_token())
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
        "/v1/typeahead/snapshots/{market}/canary",
        tags=TAGS,
        responses=ADMIN_RESPONSES,
        summary="Start a canary: serve a stored version to a share of clients, compare it "
        "with the current one on live traffic, promote or roll back by itself (admin token)",
    )
    async def start_canary(
        market: str,
        request: Request,
        payload: dict[str, Any] = Body(
            ..., examples=[{"version": "20261009T060000Z-ab12cd", "share": 0.1}]
        ),
    ) -> dict[str, Any]:
        require_admin(request.headers.get("authorization"), admin_token())
        market_or_404(market)
        version = payload.get("version")
        if not isinstance(version, str):
            raise ApiError(400, "INVALID_REQUEST", 'send {"version": "...", "share": 0.1}')
        policy = canary_policy(payload)  # a malformed body is a 400 before anything else
        if version not in service.store.versions(market):
            raise ApiError(404, "NOT_FOUND", f"no stored snapshot {version!r} for {market}")
        try:
            canary = service.start_canary(market, version, policy)
        except CanaryRefused as exc:
            extra = {"report": exc.report.to_dict()} if exc.report else None
            raise ApiError(409, exc.code, exc.message, extra=extra) from None
        return {"canary": canary.to_dict()}

    @api.get(
        "/v1/typeahead/snapshots/{market}/canary",
        tags=TAGS,
        summary="The market's latest canary: its state and live comparison",
    )
    async def get_canary(market: str) -> dict[str, Any]:
        market_or_404(market)
        canary = service.canary(market)
        if canary is None:
            raise ApiError(404, "NO_CANARY", f"no canary has run for {market}")
        return {"canary": canary.to_dict()}

    @api.delete(
        "/v1/typeahead/snapshots/{market}/canary",
        tags=TAGS,
        responses=ADMIN_RESPONSES,
        summary="Abort a running canary: everyone gets the current snapshot (admin token)",
    )
    async def abort_canary(market: str, request: Request) -> dict[str, Any]:
        require_admin(request.headers.get("authorization"), admin_token())
        market_or_404(market)
        try:
            canary = service.abort_canary(market)
        except LookupError as exc:
            raise ApiError(409, "NO_CANARY", str(exc)) from None
        return {"canary": canary.to_dict()}

    @api.post(
        "/v1/typeahead/snapshots/reload",
        tags=TAGS,
        responses=ADMIN_RESPONSES,
        summary="Deploy what the build published (the poller also does this every second; "
        "admin token)",
    )
    async def reload(request: Request) -> dict[str, Any]:
        require_admin(request.headers.get("authorization"), admin_token())
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
    "Searcher",
    "canary_policy",
    "ServeTimePolicy",
    "mount_blocklist",
    "mount_serve_time",
    "mount_snapshots",
    "search_payload",
    "unknown_market",
]
