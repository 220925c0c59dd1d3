"""``/v1/suggest/recent``: one device's recent searches, apart from the shared answer.

``GET`` lists the searches of the token's subject that start with ``q`` (newest first,
``Cache-Control: private, no-store``: never in a shared cache), ``DELETE`` clears them,
and ``POST /v1/suggest/recent/token`` issues a token (:mod:`.tokens`). The token travels
as ``Authorization: Bearer …``; ``POST /v1/searches`` with it adds to the list
(:func:`recorder`). ``/v1/suggest`` itself is untouched: same body, same cache headers.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from enum import Enum
from typing import Any

from fastapi import Body, Depends, FastAPI, Query, Request
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from lookup.kit.admin import is_admin
from lookup.kit.asgi import known_query_only
from lookup.kit.http import ApiError
from lookup.typeahead.manage import canonical_market, unknown_market
from lookup.typeahead.normalize import MAX_QUERY_CHARS, has_control_chars, normalize_prefix
from lookup.typeahead.recent import RecentStore
from lookup.typeahead.recent.tokens import DeviceTokens

__all__ = ["Recorder", "mount_recent", "recorder"]

TAGS: list[str | Enum] = ["typeahead"]
PRIVATE = {"Cache-Control": "private, no-store", "Vary": "Authorization"}
#: What ``POST /v1/searches`` calls with the request's Authorization, market and query.
Recorder = Callable[[str | None, str, str], Awaitable[None]]
_AUTH_RESPONSES: dict[int | str, dict[str, Any]] = {
    401: {"description": "TOKEN_REQUIRED (no bearer token) or INVALID_TOKEN"},
}


def _bearer(authorization: str | None) -> str | None:
    scheme, _, token = (authorization or "").strip().partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else None


def subject_of(tokens: DeviceTokens, authorization: str | None) -> str:
    """The subject of a request's token; 401 without one or with a forged one."""
    token = _bearer(authorization)
    if token is None:
        raise ApiError(
            401,
            "TOKEN_REQUIRED",
            "send Authorization: Bearer <token> (POST /v1/suggest/recent/token)",
        )
    subject = tokens.verify(token)
    if subject is None:
        raise ApiError(401, "INVALID_TOKEN", "this token was not issued by this server")
    return subject


def recorder(store: RecentStore, tokens: DeviceTokens, keep: Callable[[], int]) -> Recorder:
    """Adds a submitted search to its sender's list when it carries a valid token."""

    async def record(authorization: str | None, market: str, query: str) -> None:
        token = _bearer(authorization)
        subject = tokens.verify(token) if token else None
        if subject is not None:
            await run_in_threadpool(store.add, subject, market, query, time.time(), keep())

    return record


def mount_recent(
    api: FastAPI,
    store: RecentStore,
    tokens: DeviceTokens,
    admin_token: Callable[[], str],
    known_markets: Callable[[], list[str]],
) -> None:
    """The three routes over ``store``; a token naming a user needs ``admin_token``."""

    @api.post(
        "/v1/suggest/recent/token",
        tags=TAGS,
        status_code=201,
        responses={
            **_AUTH_RESPONSES,
            400: {"description": "INVALID_REQUEST"},
            403: {"description": "FORBIDDEN: naming a user needs the admin token"},
        },
        summary="Issue a token for a device's (or, admin token, a signed-in user's) "
        "recent searches",
    )
    async def issue(
        request: Request, payload: dict[str, Any] | None = Body(None, examples=[{}])
    ) -> JSONResponse:
        payload = payload or {}
        unknown = set(payload) - {"userId"}
        if unknown:
            raise ApiError(400, "INVALID_REQUEST", f"unknown field(s): {sorted(unknown)}")
        user = payload.get("userId")
        if user is not None:
            if not isinstance(user, str):
                raise ApiError(400, "INVALID_REQUEST", "userId must be a string")
            if not is_admin(request.headers.get("authorization"), admin_token()):
                raise ApiError(403, "FORBIDDEN", "only the trusted front end may name a user")
        try:
            token, subject = tokens.issue(user)
        except ValueError as exc:
            raise ApiError(400, "INVALID_REQUEST", str(exc)) from None
        return JSONResponse({"token": token, "subject": subject}, status_code=201, headers=PRIVATE)

    @api.get(
        "/v1/suggest/recent",
        tags=TAGS,
        responses=_AUTH_RESPONSES,
        dependencies=[Depends(known_query_only)],
        summary="The token holder's recent searches starting with q (never cached "
        "shared; merge them at the top of /v1/suggest's list)",
    )
    async def recent(
        request: Request,
        q: str = Query("", max_length=MAX_QUERY_CHARS),
        market: str = Query("en-IN", max_length=20),
        limit: int = Query(5, ge=1, le=50),
    ) -> JSONResponse:
        subject = subject_of(tokens, request.headers.get("authorization"))
        market = canonical_market(market)
        if market not in known_markets():
            raise unknown_market(market, known_markets())
        if has_control_chars(q):
            raise ApiError(400, "INVALID_QUERY", "q may not contain control characters")
        p = normalize_prefix(q)
        rows = await run_in_threadpool(store.recent, subject, market, 10_000)
        found = [r for r in rows if r.query.startswith(p)][:limit]
        body = {"q": p, "market": market, "recent": [{"query": r.query, "at": r.at} for r in found]}
        return JSONResponse(body, headers=PRIVATE)

    @api.delete(
        "/v1/suggest/recent",
        tags=TAGS,
        responses=_AUTH_RESPONSES,
        dependencies=[Depends(known_query_only)],
        summary="Forget the token holder's recent searches",
    )
    async def clear(request: Request) -> JSONResponse:
        subject = subject_of(tokens, request.headers.get("authorization"))
        removed = await run_in_threadpool(store.clear, subject)
        return JSONResponse({"cleared": removed}, headers=PRIVATE)
