"""The admin routes of webhooks: register, list, read, delete, and each one's delivery log.

All under ``/v1/shortener/webhooks`` and all behind the admin token, checked before
anything else (401 without it, 403 with another). Store calls run in the shortener's
store lane, never on the event loop. The secret is shown once, in the answer to the
registration (as GitHub does); later reads never show it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field

from lookup.kit.asgi import known_query_only
from lookup.kit.http import parse_json_object
from lookup.shortener.model import format_time
from lookup.shortener.resolver import STORE_LANE
from lookup.shortener.webhooks import DELIVERY_STATES, EVENTS, Delivery, Endpoint
from lookup.shortener.webhooks.hub import Webhooks

__all__ = ["delivery_view", "endpoint_view", "webhook_router"]


class RegisterWebhook(BaseModel):
    """``POST /v1/shortener/webhooks`` body."""

    url: str = Field(examples=["https://hooks.example/lookup"])
    events: list[str] = Field(default=list(EVENTS), examples=[["link.created", "link.clicked"]])
    secret: str | None = Field(default=None, min_length=16, max_length=128)
    description: str = Field(default="", max_length=200)


def endpoint_view(endpoint: Endpoint, *, with_secret: bool = False) -> dict[str, Any]:
    """What the API says about an endpoint (the secret only when asked)."""
    view: dict[str, Any] = {
        "id": endpoint.id,
        "url": endpoint.url,
        "events": list(endpoint.events),
        "description": endpoint.description,
        "createdAt": format_time(endpoint.created_at),
    }
    if with_secret:
        view["secret"] = endpoint.secret
    return view


def delivery_view(delivery: Delivery) -> dict[str, Any]:
    """One row of the delivery log."""
    return {
        "id": delivery.id,
        "event": delivery.event,
        "events": delivery.events,
        "state": delivery.state,
        "attempts": delivery.attempts,
        "responseCode": delivery.response_code,
        "lastError": delivery.last_error,
        "createdAt": format_time(delivery.created_at),
        "updatedAt": format_time(delivery.updated_at),
        "deliveredAt": format_time(delivery.delivered_at),
        "nextAttemptAt": format_time(delivery.next_attempt_at)
        if delivery.state == "pending"
        else None,
    }


def webhook_router(
    webhooks: Webhooks, require_admin: Callable[[Request], None], errors: dict[int | str, Any]
) -> APIRouter:
    """The routes, each guarded by ``require_admin``; ``errors`` are the OpenAPI refusals."""
    router = APIRouter(tags=["shortener webhooks"])
    known = [Depends(known_query_only)]
    body_schema = {
        "requestBody": {
            "required": True,
            "content": {"application/json": {"schema": RegisterWebhook.model_json_schema()}},
        }
    }

    @router.post(
        "/v1/shortener/webhooks",
        status_code=201,
        responses={**errors, 409: {"description": "TOO_MANY_WEBHOOKS"}},
        summary="Register a webhook endpoint (admin token): signed POSTs on link events",
        description=(
            "Events: " + ", ".join(EVENTS) + " (default all). Each POST carries "
            "X-Lookup-Signature: sha256=<HMAC-SHA256 of the raw body with the secret> and "
            "X-Lookup-Timestamp (also the body's timestamp). The URL is checked as link "
            "destinations are. The secret is in this answer only."
        ),
        openapi_extra=body_schema,
    )
    async def register(request: Request) -> JSONResponse:
        require_admin(request)
        body = parse_json_object(await request.body(), request.headers.get("content-type"))
        endpoint = await STORE_LANE.run(webhooks.register, body)
        return JSONResponse(endpoint_view(endpoint, with_secret=True), status_code=201)

    @router.get(
        "/v1/shortener/webhooks",
        dependencies=known,
        responses=errors,
        summary="The registered webhook endpoints (admin token)",
    )
    async def list_webhooks(request: Request) -> dict[str, Any]:
        require_admin(request)
        endpoints = await STORE_LANE.run(webhooks.store.endpoints)
        return {"webhooks": [endpoint_view(e) for e in endpoints]}

    @router.get(
        "/v1/shortener/webhooks/{ident}",
        dependencies=known,
        responses=errors,
        summary="One webhook endpoint (admin token)",
    )
    async def get_webhook(ident: str, request: Request) -> dict[str, Any]:
        require_admin(request)
        return endpoint_view(await STORE_LANE.run(webhooks.get, ident))

    @router.delete(
        "/v1/shortener/webhooks/{ident}",
        dependencies=known,
        responses=errors,
        summary="Delete a webhook endpoint, its pending events and its log (admin token)",
    )
    async def delete_webhook(ident: str, request: Request) -> dict[str, Any]:
        require_admin(request)
        await STORE_LANE.run(webhooks.remove, ident)
        return {"id": ident, "deleted": True}

    @router.get(
        "/v1/shortener/webhooks/{ident}/deliveries",
        dependencies=known,
        responses=errors,
        summary="A webhook's delivery log, newest first (admin token)",
        description="state: " + ", ".join(DELIVERY_STATES) + "; attempts, last error and "
        "response code per delivery.",
    )
    async def webhook_deliveries(
        ident: str,
        request: Request,
        limit: int = Query(50, ge=1, le=500),
        state: str | None = Query(None, max_length=16),
    ) -> dict[str, Any]:
        require_admin(request)
        rows = await STORE_LANE.run(webhooks.deliveries, ident, limit, state)
        return {"id": ident, "deliveries": [delivery_view(d) for d in rows]}

    return router
