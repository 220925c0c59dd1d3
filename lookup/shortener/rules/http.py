"""``GET`` and ``PUT /v1/links/{key}/redirect-rules``: a link's rules over HTTP.

The path and the bodies follow Shlink's ``/short-urls/{shortCode}/redirect-rules``
(``redirectRules`` of ``longUrl`` + ``conditions`` of ``type``/``matchKey``/``matchValue``);
Shlink sets them with ``POST``, here ``PUT`` says what it does — the list is replaced
whole. Owner token required; a write spends the owner's write budget like a ``PATCH``.
``?domain=`` names a link on another short domain, as on the other link routes.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse, Response

from lookup import errors
from lookup.kit.asgi import known_query_only
from lookup.kit.clients import client_address
from lookup.kit.http import parse_json_object
from lookup.kit.ratelimit import RateDecision, check_all
from lookup.shortener import schemas
from lookup.shortener.app import Shortener
from lookup.shortener.domainshttp import DOMAIN_QUERY
from lookup.shortener.parse import require_owner_header
from lookup.shortener.resolver import STORE_LANE
from lookup.shortener.rules.api import RuleApi
from lookup.shortener.rules.schemas import RedirectRules, RulesBody, inline_schema

__all__ = ["build_rules_router", "rule_api"]

_ERRORS: dict[int | str, dict[str, Any]] = {
    400: {"model": schemas.ErrorBody, "description": "an invalid rule (rule, field and code)"},
    401: {"model": schemas.ErrorBody, "description": "missing or revoked owner token"},
    403: {"model": schemas.ErrorBody, "description": "not the link's owner"},
    404: {"model": schemas.ErrorBody, "description": "unknown key"},
    410: {"model": schemas.ErrorBody, "description": "the link is deleted or expired"},
    429: {"model": schemas.ErrorBody, "description": "rate limited"},
}


def rule_api(shortener: Shortener) -> RuleApi:
    """The rules' operations for ``shortener`` (the scanner's threat feed when it runs)."""
    feed = shortener.scanner.feed_file if shortener.scanner is not None else None
    return RuleApi(
        shortener.service,
        shortener.rules,
        shortener.urls,
        shortener.blocklist,
        feed=feed,
        clock=shortener.config.wall_clock,
    )


def build_rules_router(shortener: Shortener) -> APIRouter:
    """The redirect-rules routes bound to ``shortener``."""
    router = APIRouter(tags=["shortener"])
    api = rule_api(shortener)
    service = shortener.service
    trust = shortener.config.trust_forwarded_for

    async def owner_of(request: Request) -> str:
        token_hash = require_owner_header(request.headers.get("authorization"))
        owner = await STORE_LANE.run(service.owner_of, token_hash)
        assert owner is not None
        return owner

    def spend(request: Request, owner: str) -> RateDecision:
        ip = client_address(request.scope, trust)
        checks = [(shortener.limit_owner, owner), (shortener.limit_ip, ip)]
        decision = check_all(checks, 1.0)
        if not decision.allowed:
            raise errors.RateLimited(
                f"too many requests; retry in {decision.retry_after_s} s",
                code="RATE_LIMITED",
                headers=decision.headers(),
            )
        return decision

    @router.get(
        "/v1/links/{key}/redirect-rules",
        response_model=RedirectRules,
        dependencies=[Depends(known_query_only)],
        responses=_ERRORS,
        summary="My link's redirect rules, in order (first match wins; Shlink's shape)",
    )
    async def get_rules(key: str, request: Request, domain: str | None = DOMAIN_QUERY) -> Any:
        owner = await owner_of(request)
        return await STORE_LANE.run(api.get, shortener.domains.stored(key, domain), owner)

    @router.put(
        "/v1/links/{key}/redirect-rules",
        response_model=RedirectRules,
        responses=_ERRORS,
        summary="Replace my link's redirect rules: device, browser, language, country, "
        "query parameter, time window → destination",
        openapi_extra={
            "requestBody": {
                "required": True,
                "content": {"application/json": {"schema": inline_schema(RulesBody)}},
            }
        },
    )
    async def put_rules(key: str, request: Request, domain: str | None = DOMAIN_QUERY) -> Response:
        key = shortener.domains.stored(key, domain)
        owner = await owner_of(request)
        body = parse_json_object(await request.body(), request.headers.get("content-type"))

        def put() -> tuple[RateDecision, dict[str, Any]]:
            return spend(request, owner), api.put(key, body, owner)

        decision, view = await STORE_LANE.run(put)
        return JSONResponse(view, headers=decision.headers())

    return router
