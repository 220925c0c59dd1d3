"""The short domains' routes: list them (public), set a domain's fallback redirect (admin).

``GET /v1/domains`` lists the server's short domains (the dashboard's domain
picker reads it; the names and fallbacks are public anyway: a visitor meets them).
``PUT /v1/shortener/domains/redirect`` (admin token) sets or removes a domain's
"invalid short URL redirect", Shlink's name for where a visitor goes for a missing,
expired or deleted key; the URL passes the same checks as a link's destination.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fastapi import APIRouter, Query, Request

from lookup import errors
from lookup.kit import admin
from lookup.kit.http import parse_json_object
from lookup.shortener import schemas
from lookup.shortener.resolver import STORE_LANE
from lookup.shortener.urls import UrlRejected, location_form

if TYPE_CHECKING:
    from lookup.shortener.app import Shortener

#: The ``?domain=`` of the routes that name one link: which short domain its key is on.
DOMAIN_QUERY: Any = Query(
    None,
    max_length=253,
    description="the short domain the key lives on (default: the default domain)",
)

_ERRORS: dict[int | str, dict[str, Any]] = {
    400: {"model": schemas.ErrorBody, "description": "invalid input (specific error code)"},
    401: {"model": schemas.ErrorBody, "description": "missing or invalid admin token"},
    403: {"model": schemas.ErrorBody, "description": "not the admin token"},
}


def build_domains_router(shortener: Shortener, admin_token: str) -> APIRouter:
    """The ``/v1/shortener/domains`` routes bound to ``shortener``."""
    router = APIRouter(tags=["shortener"])
    domains = shortener.domains

    @router.get(
        "/v1/domains",
        response_model=list[schemas.DomainEntry],
        summary="The short domains links may live on, with their fallback redirects",
    )
    async def list_domains() -> Any:
        return await STORE_LANE.run(domains.listing)

    @router.put(
        "/v1/shortener/domains/redirect",
        response_model=schemas.DomainEntry,
        responses=_ERRORS,
        summary="Set or remove a domain's fallback redirect for missing, expired or deleted "
        "keys (admin token)",
        openapi_extra={
            "requestBody": {
                "required": True,
                "content": {
                    "application/json": {"schema": schemas.DomainRedirect.model_json_schema()}
                },
            }
        },
    )
    async def put_redirect(request: Request) -> Any:
        admin.require_admin(request.headers.get("authorization"), admin_token)
        body = parse_json_object(await request.body(), request.headers.get("content-type"))
        unknown = set(body) - {"domain", "invalidShortUrlRedirect"}
        if unknown:
            raise errors.InvalidInput(f"unknown field(s): {sorted(unknown)}", code="UNKNOWN_FIELD")
        if not isinstance(body.get("domain"), str):
            raise errors.InvalidInput("domain is required (a string)", code="INVALID_DOMAIN")
        domain = domains.check(body["domain"])
        target = body.get("invalidShortUrlRedirect")
        if target is not None:
            try:
                target = location_form(shortener.urls.check(target))
            except UrlRejected as exc:
                raise errors.InvalidInput(exc.message, code=exc.code) from None
        await STORE_LANE.run(domains.set_fallback, domain, target)
        return {
            "domain": domains.name(domain),
            "isDefault": not domain,
            "invalidShortUrlRedirect": target,
        }

    return router


__all__ = ["DOMAIN_QUERY", "build_domains_router"]
