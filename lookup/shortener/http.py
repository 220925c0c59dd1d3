"""The shortener's HTTP API: the hot redirect on a bare ASGI route, the rest on FastAPI.

``GET /{key}`` is served by :class:`RedirectRoute`, tried before the FastAPI app (see
:class:`lookup.server.FastPath`): it matches only path segments shaped like a key or
alias that are not reserved words, so ``/docs``, ``/healthz``, ``/search`` and friends
fall through to their own routes. A cache hit answers straight from memory — no
thread, no SQLite, no FastAPI. Nothing here waits on a store on the event loop: loads,
click budgets, owner-token checks and rate limits kept on Redis run in the shortener's
worker threads (:data:`~lookup.shortener.resolver.STORE_LANE`), so a store that hangs
stalls only the requests that need it. The redirect then hands a
:class:`~lookup.shortener.model.ClickContext` to ``service.on_click`` *after* the
response has been sent. Its refusals are answered right here, with their exact bytes.

Management endpoints (``/v1/links...``) go through :class:`~lookup.shortener.api.LinkApi`
(parsing in :mod:`~lookup.shortener.parse`, shapes in :mod:`~lookup.shortener.views`) so
each refusal has its specific code; they raise domain errors (:mod:`lookup.errors`),
which the server maps to HTTP in one place. Pydantic models in
:mod:`~lookup.shortener.schemas` document them in the OpenAPI schema.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
import secrets
from typing import Any
from urllib.parse import parse_qs

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import JSONResponse, Response
from starlette.responses import HTMLResponse
from starlette.routing import BaseRoute, Match, NoMatchFound
from starlette.types import Receive, Scope, Send

from lookup import errors
from lookup.kit import admin
from lookup.kit.asgi import known_query_only
from lookup.kit.cache import MISSING
from lookup.kit.clients import client_address
from lookup.kit.http import error_response, parse_json_object
from lookup.kit.ratelimit import RateDecision, check_all
from lookup.shortener import pages, schemas
from lookup.shortener.analytics.events import LINK_PREVIEW_AGENTS
from lookup.shortener.app import Shortener, ShortenerConfig
from lookup.shortener.bulk import add_bulk_route
from lookup.shortener.domains import send_fallback
from lookup.shortener.domainshttp import DOMAIN_QUERY, build_domains_router
from lookup.shortener.keys import KEY_SHAPE, storage_key
from lookup.shortener.model import ClickContext, Link, Outcome, verdict
from lookup.shortener.parse import owner_from_header, owner_id, require_owner_header
from lookup.shortener.qrcodes import build_qr_router
from lookup.shortener.redirectdocs import REDIRECT_DOCS
from lookup.shortener.resolver import STORE_LANE
from lookup.shortener.rules.http import build_rules_router
from lookup.shortener.rules.redirect import pick
from lookup.shortener.urls import UrlRejected, forward_onto, location_form
from lookup.shortener.webhooks.api import webhook_router

log = logging.getLogger("lookup.shortener.http")
_new_tuple = tuple.__new__

CACHE_302 = b"max-age=0, s-maxage=60"
_GONE_CACHE = {"Cache-Control": "max-age=0, s-maxage=60"}
_NO_STORE = {"Cache-Control": "no-store"}
#: The 410 answers of a tombstone: error code and what the message says of the link.
_GONE = {
    Outcome.EXPIRED: ("LINK_EXPIRED", "has expired"),
    Outcome.DELETED: ("LINK_DELETED", "was deleted"),
}
_ERRORS: dict[int | str, dict[str, Any]] = {
    400: {"model": schemas.ErrorBody, "description": "invalid input (specific error code)"},
    401: {"model": schemas.ErrorBody, "description": "missing or invalid bearer token"},
    403: {"model": schemas.ErrorBody, "description": "not the link's owner"},
    404: {"model": schemas.ErrorBody, "description": "unknown key"},
    410: {"model": schemas.ErrorBody, "description": "the link is deleted or expired"},
    413: {"model": schemas.ErrorBody, "description": "body too large"},
    429: {"model": schemas.ErrorBody, "description": "rate limited (see RateLimit-* headers)"},
}


_PREVIEW_AGENT = re.compile(
    "|".join(re.escape(a) for a in LINK_PREVIEW_AGENTS).encode(), re.IGNORECASE
)


def is_link_preview(user_agent: str | bytes | None) -> bool:
    """Whether a user agent is a chat or social app fetching a link to draw its card.

    The list is analytics' (:data:`~lookup.shortener.analytics.events.LINK_PREVIEW_AGENTS`,
    the agents WhatsApp, Slack, Discord, Telegram, X, Facebook, LinkedIn and others
    document), so the redirect and the click counts agree on what a preview is.
    """
    if not user_agent:
        return False
    raw = user_agent.encode("latin-1", "replace") if isinstance(user_agent, str) else user_agent
    return _PREVIEW_AGENT.search(raw[:512]) is not None


def _wants_html(scope: Scope) -> bool:
    """A browser's request: it accepts HTML and does not ask for JSON (an API client's
    ``Accept: application/json``, or ``*/*`` as curl and httpx send, keeps the JSON)."""
    for name, value in scope.get("headers", ()):
        if name == b"accept":
            return b"text/html" in value and b"application/json" not in value
    return False


def _forwarded(scope: Scope, link: Link) -> str:
    """Where this request goes: the destination, with the visitor's query merged in and the
    extra path appended when the link forwards them. The usual redirect (no query, no extra
    path) pays one check of each."""
    query: bytes = scope["query_string"] if link.forward_query else b""
    extra: str | None = scope["path_params"].get("extra")
    if not query and not extra:
        if "\\" in link.long_url:  # stored before backslashes were normalised at creation
            return location_form(link.long_url)
        return link.long_url
    if extra:  # the raw path keeps the visitor's percent-encoding
        raw = scope.get("raw_path") or scope["path"].encode("utf-8")
        extra = raw.decode("latin-1").split("/", 2)[2]
    return forward_onto(link.long_url, query, extra)


def _is_preview_request(scope: Scope) -> bool:
    """``HEAD``, or a ``GET`` from a link-preview fetcher: asks about a link, not a visit."""
    if scope["method"] == "HEAD":
        return True
    for name, value in scope.get("headers", ()):
        if name == b"user-agent":
            return is_link_preview(value)
    return False


def _rate_limited(decision: RateDecision) -> errors.RateLimited:
    return errors.RateLimited(
        f"too many requests; retry in {decision.retry_after_s} s",
        code="RATE_LIMITED",
        headers=decision.headers(),
    )


async def _send_error(
    scope: Scope,
    receive: Receive,
    send: Send,
    status: int,
    code: str,
    message: str,
    headers: dict[str, str] | None = None,
) -> None:
    await error_response(status, code, message, headers=headers)(scope, receive, send)


async def _send_html(scope: Scope, receive: Receive, send: Send, html: str, status: int) -> None:
    await HTMLResponse(html, status_code=status, headers=pages.PAGE_HEADERS)(scope, receive, send)


class RedirectHandler:
    """The raw ASGI endpoint behind ``GET /{key}``, ``GET /{key}+`` and ``POST /{key}``."""

    def __init__(self, shortener: Shortener) -> None:
        self.service = shortener.service
        self.resolver = shortener.resolver
        self.views = shortener.views
        self.limit_misses = shortener.limit_misses
        self.limit_passwords = shortener.limit_passwords
        self.trust_forwarded_for = shortener.config.trust_forwarded_for
        # limits kept on Redis are a round trip each: off the loop; in-process ones stay
        self.remote_limits = bool(shortener.config.limits_url)
        self.domains = shortener.domains
        self.lookup_key = shortener.resolver.lookup_key

    async def _limit(self, call: Any, *args: Any) -> Any:
        """A rate limiter's ``call(*args)``: in place for in-process limits, in a worker
        thread for limits kept on Redis (a network round trip, or its timeout)."""
        if self.remote_limits:
            return await STORE_LANE.run(call, *args)
        return call(*args)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        params = scope["path_params"]
        key: str = params["key"]
        svc = self.service
        # Keys are case-insensitive and live on the domain the Host names (issue 27).
        domain = self.domains.of_scope(scope) if self.domains.extra else ""
        lookup = self.lookup_key(f"{key}@{domain}" if domain else key)
        found = self.resolver.cached(lookup)
        if found is MISSING:
            ip = client_address(scope, self.trust_forwarded_for)
            budget = await self._limit(self.limit_misses.peek, ip)
            if not budget.allowed:
                headers = budget.headers()
                headers.update(_NO_STORE)
                await _send_error(
                    scope,
                    receive,
                    send,
                    429,
                    "RATE_LIMITED",
                    "too many lookups of unknown keys from this address",
                    headers,
                )
                return
            found = await self.resolver.load(lookup)
            if found is None:
                await self._limit(self.limit_misses.charge, ip)
        link: Link | None = found
        now = svc.clock()
        outcome = verdict(link, now)
        if link is None or outcome in (Outcome.EXPIRED, Outcome.DELETED, Outcome.NOT_FOUND):
            await self._gone_or_missing(scope, receive, send, key, outcome, domain)
            return
        key = link.key  # as stored: clicks, pages and limits name the link, not the spelling
        if params["extra"] is not None and not link.forward_path:
            if _wants_html(scope):
                html = pages.dead_link_page(self.views.short_url(key) + "/…", "NOT_FOUND")
                await _send_html(scope, receive, send, html, 404)
            else:
                message = f"the link {key!r} does not forward extra paths"
                await _send_error(scope, receive, send, 404, "NOT_FOUND", message, _NO_STORE)
            return
        if params["preview"]:
            state = "DISABLED" if outcome is Outcome.DISABLED else "ACTIVE"
            html = pages.preview_page(link, self.views.short_url(key), state)
            await _send_html(scope, receive, send, html, 403 if state == "DISABLED" else 200)
            return
        if outcome is Outcome.DISABLED:
            await _send_html(
                scope, receive, send, pages.warning_page(link, self.views.short_url(key)), 403
            )
            return
        if outcome is Outcome.PASSWORD:
            if scope["method"] == "POST":
                await self._password_attempt(scope, receive, send, link, now)
            else:
                await _send_html(
                    scope, receive, send, pages.password_page(link, self.views.short_url(key)), 200
                )
            return
        if link.max_clicks is not None:
            if _is_preview_request(scope):
                # A card or a HEAD must not spend the budget, nor learn the destination's
                # Location for free: the preview page, 200, no Location.
                html = pages.preview_page(link, self.views.short_url(key), "ACTIVE")
                await _send_html(scope, receive, send, html, 200)
                return
            outcome, link = await svc.admit(link, now)
            if outcome is not Outcome.REDIRECT:
                await self._after_refusal(scope, receive, send, link, outcome)
                return
        status = 303 if scope["method"] == "POST" else link.redirect_type
        link, rule = pick(scope, link, now, self) if link.rules else (link, None)
        await self._redirect(send, link, status, _forwarded(scope, link))
        if scope["method"] != "HEAD":  # HEAD reads the headers; nobody visited
            self._emit(scope, key, now, status, rule)

    async def _redirect(self, send: Send, link: Link, status: int, location: str) -> None:
        if link.rules:  # the answer depends on who asks, and when: no copy anywhere
            cache = b"no-store"
        elif status == 301:
            cache = f"public, max-age={link.max_age or 0}".encode()
        elif status == 303:
            cache = b"no-store"
        else:
            cache = CACHE_302
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [
                    (b"location", location.encode("ascii")),
                    (b"cache-control", cache),
                    (b"content-length", b"0"),
                ],
            }
        )
        await send({"type": "http.response.body", "body": b""})

    def _emit(self, scope: Scope, key: str, now: float, status: int, rule: Any = None) -> None:
        user_agent = referer = country = language = None
        for name, value in scope.get("headers", ()):
            if name == b"user-agent":
                user_agent = value.decode("latin-1")
            elif name == b"referer":
                referer = value.decode("latin-1")
            elif name == b"cf-ipcountry" or name == b"x-country":
                country = value.decode("latin-1")
            elif name == b"accept-language":
                language = value.decode("latin-1")
        ip = client_address(scope, self.trust_forwarded_for)
        # One tuple.__new__: the named tuple's keyword constructor costs twice as much.
        method = scope["method"]
        ctx = (key, now, ip, user_agent, referer, country, language, method, status, rule)
        self.service.emit_click(_new_tuple(ClickContext, ctx))

    async def _gone_or_missing(
        self,
        scope: Scope,
        receive: Receive,
        send: Send,
        key: str,
        outcome: Outcome,
        domain: str = "",
    ) -> None:
        fallback = await self.domains.fallback(domain)  # the domain's own page, if it has one
        if fallback is not None:
            await send_fallback(send, fallback)
            return
        key = key.partition("@")[0]
        if domain:
            key = storage_key(key, domain)
        gone = _GONE.get(outcome)
        code, status = (gone[0], 410) if gone is not None else ("NOT_FOUND", 404)
        if _wants_html(scope):  # a person in a browser: a page that says why
            html = pages.dead_link_page(self.views.short_url(key), code)
            await _send_html(scope, receive, send, html, status)
        elif gone is not None:
            await _send_error(
                scope, receive, send, 410, code, f"the link {key!r} {gone[1]}", _GONE_CACHE
            )
        else:
            await _send_error(
                scope, receive, send, 404, "NOT_FOUND", f"no link has the key {key!r}", _NO_STORE
            )

    async def _after_refusal(
        self, scope: Scope, receive: Receive, send: Send, link: Link, outcome: Outcome
    ) -> None:
        if outcome is Outcome.DISABLED:
            await _send_html(
                scope,
                receive,
                send,
                pages.warning_page(link, self.views.short_url(link.key)),
                403,
            )
        else:
            await self._gone_or_missing(scope, receive, send, link.key, outcome, link.domain)

    async def _password_attempt(
        self, scope: Scope, receive: Receive, send: Send, link: Link, now: float
    ) -> None:
        svc = self.service
        ip = client_address(scope, self.trust_forwarded_for)
        decision = await self._limit(self.limit_passwords.check, (ip, link.key))
        if not decision.allowed:
            headers = decision.headers()
            headers.update(_NO_STORE)
            await _send_error(
                scope, receive, send, 429, "RATE_LIMITED", "too many password attempts", headers
            )
            return
        body = b""
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return  # client went away
            body += message.get("body", b"")
            if not message.get("more_body", False):
                break
        password = _password_from_body(scope, body)
        ok = password is not None and await asyncio.to_thread(svc.check_password, link, password)
        if not ok:
            html = pages.password_page(
                link, self.views.short_url(link.key), error="Wrong password, try again."
            )
            await _send_html(scope, receive, send, html, 403)
            return
        outcome, fresh = await svc.admit(link, now)
        if outcome is not Outcome.REDIRECT:
            await self._after_refusal(scope, receive, send, fresh, outcome)
            return
        fresh, rule = pick(scope, fresh, now, self) if fresh.rules else (fresh, None)
        await self._redirect(send, fresh, 303, _forwarded(scope, fresh))
        self._emit(scope, link.key, now, 303, rule)


def _password_from_body(scope: Scope, body: bytes) -> str | None:
    content_type = ""
    for name, value in scope.get("headers", ()):
        if name == b"content-type":
            content_type = value.decode("latin-1").lower()
    try:
        if content_type.startswith("application/json"):
            data = json.loads(body)
            value = data.get("password") if isinstance(data, dict) else None
        else:
            values = parse_qs(body.decode("utf-8"), keep_blank_values=True, max_num_fields=20)
            given = values.get("password")
            value = given[0] if given else None
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None
    if not isinstance(value, str) or not 0 < len(value) <= 128:
        return None
    return value


class RedirectRoute(BaseRoute):
    """Matches ``/{key}`` and ``/{key}+`` for key-shaped, non-reserved segments only.

    With ``mounts``, the first request also reserves every single-segment route the
    app has by then (systems mounted after the shortener), so none is ever shadowed.
    """

    #: The route label of its requests in ``/metrics`` (:func:`lookup.kit.metrics.route_of`).
    metrics_label = "/{key}"

    def __init__(self, shortener: Shortener, mounts: Any = None) -> None:
        self.reserved = shortener.reserved
        self.handler = RedirectHandler(shortener)
        self._mounts = mounts

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        if scope["type"] != "http":
            return Match.NONE, {}
        if self._mounts is not None:
            self.reserved.add(_route_words(self._mounts))
            self._mounts = None
        method = scope["method"]
        if method != "GET" and method != "HEAD" and method != "POST":
            return Match.NONE, {}
        segment: str = scope["path"][1:]
        extra = ""
        if "/" in segment:  # /{key}/more/path: for a link that forwards extra paths
            segment, extra = segment.split("/", 1)
            if method == "POST" or not KEY_SHAPE.fullmatch(segment) or segment in self.reserved:
                return Match.NONE, {}
            return Match.FULL, {"path_params": {"key": segment, "preview": False, "extra": extra}}
        preview = segment.endswith("+")
        if preview:
            if method == "POST":
                return Match.NONE, {}
            segment = segment[:-1]
        if not KEY_SHAPE.fullmatch(segment) or segment in self.reserved:
            return Match.NONE, {}
        return Match.FULL, {"path_params": {"key": segment, "preview": preview, "extra": None}}

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.handler(scope, receive, send)

    def url_path_for(self, name: str, /, **path_params: Any) -> Any:
        raise NoMatchFound(name, path_params)


#: The GET routes that refuse a query parameter they do not declare.
KNOWN_QUERY_ONLY = [Depends(known_query_only)]


def _domain_list(body: dict[str, Any], name: str) -> list[str]:
    value = body.get(name, [])
    if not isinstance(value, list) or not all(isinstance(d, str) for d in value):
        raise errors.InvalidInput(f"{name} must be a list of domain names", code="INVALID_DOMAINS")
    if len(value) > 1_000:
        raise errors.InvalidInput(f"at most 1000 domains in {name}", code="INVALID_DOMAINS")
    return value


def build_router(shortener: Shortener, admin_token: str = "") -> APIRouter:
    """The management API (``/v1/links`` ...) bound to ``shortener``.

    ``admin_token`` guards the blocklist and the metrics (empty: they always answer 403).
    """
    router = APIRouter(tags=["shortener"])
    trust = shortener.config.trust_forwarded_for
    api = shortener.api
    service = shortener.service
    views = shortener.views
    stored = shortener.domains.stored  # {key} and ?domain= → the key as stored

    def write_budget(request: Request, owner: str | None, cost: float = 1.0) -> RateDecision:
        """Spend the write limits (a store call when they are kept on Redis: call it in
        :data:`STORE_LANE`, with the write it pays for)."""
        ip = client_address(request.scope, trust)
        if owner is None:
            checks = [(shortener.limit_anonymous, ip)]
        else:
            checks = [(shortener.limit_owner, owner), (shortener.limit_ip, ip)]
        decision = check_all(checks, cost)
        if not decision.allowed:
            raise _rate_limited(decision)
        return decision

    async def optional_owner(request: Request) -> str | None:
        """The owner a bearer token stands for (None without one; 401 when revoked): read
        from the store, in a worker thread."""
        token_hash = owner_from_header(request.headers.get("authorization"))
        if token_hash is None:
            return None
        return await STORE_LANE.run(service.owner_of, token_hash)

    async def require_token(request: Request) -> str:
        """The owner of the bearer token the request must carry (401 without or revoked)."""
        token_hash = require_owner_header(request.headers.get("authorization"))
        owner = await STORE_LANE.run(service.owner_of, token_hash)
        assert owner is not None
        return owner

    @router.post(
        "/v1/tokens",
        status_code=201,
        response_model=schemas.Token,
        summary="Mint an owner token (opaque; only its hash is stored)",
    )
    async def mint_token() -> dict[str, str]:
        token = secrets.token_urlsafe(32)
        return {"token": token, "ownerId": owner_id(token)}

    @router.post(
        "/v1/tokens/rotate",
        status_code=201,
        response_model=schemas.Token,
        responses=_ERRORS,
        summary="Replace my token with a new one that owns the same links (the old one is "
        "revoked at once)",
    )
    async def rotate_token(request: Request) -> dict[str, str]:
        current = require_owner_header(request.headers.get("authorization"))
        token = secrets.token_urlsafe(32)
        owner = await STORE_LANE.run(service.rotate_token, current, owner_id(token))
        return {"token": token, "ownerId": owner}

    @router.post(
        "/v1/tokens/revoke",
        response_model=schemas.TokenRevoked,
        responses=_ERRORS,
        summary="Revoke my token at once (401 TOKEN_REVOKED on every endpoint from now on; "
        "the links stay)",
    )
    async def revoke_token(request: Request) -> dict[str, Any]:
        current = require_owner_header(request.headers.get("authorization"))
        owner = await STORE_LANE.run(service.revoke_token, current)
        return {"revoked": True, "ownerId": owner}

    @router.post(
        "/v1/links",
        status_code=201,
        response_model=schemas.LinkCreated,
        responses={
            **_ERRORS,
            409: {"model": schemas.ErrorBody, "description": "ALIAS_TAKEN"},
            422: {"model": schemas.ErrorBody, "description": "IDEMPOTENCY_KEY_REUSED"},
        },
        summary="Shorten a URL",
        openapi_extra={
            "requestBody": {
                "required": True,
                "content": {"application/json": {"schema": schemas.CreateLink.model_json_schema()}},
            }
        },
    )
    async def create_link(request: Request) -> Response:
        owner = await optional_owner(request)
        # the body first: one that is not a JSON object (a form post) spends no budget
        body = parse_json_object(await request.body(), request.headers.get("content-type"))
        idempotency_key = request.headers.get("idempotency-key")

        def create() -> tuple[RateDecision, Any]:
            decision = write_budget(request, owner)
            return decision, api.create(body, owner=owner, idempotency_key=idempotency_key)

        decision, created = await STORE_LANE.run(create)
        headers = decision.headers()
        headers["Location"] = shortener.domains.api_path(created.body)
        if created.replayed:
            headers["Idempotent-Replayed"] = "true"
        return JSONResponse(created.body, status_code=201, headers=headers)

    @router.get(
        "/v1/links",
        response_model=schemas.LinkPage,
        dependencies=KNOWN_QUERY_ONLY,
        responses=_ERRORS,
        summary="List my links: search, sort by clicks, last click or creation, a date range",
        description=schemas.LIST_DESCRIPTION,
    )
    async def list_links(
        request: Request,
        limit: int = Query(50, ge=1, le=500),
        cursor: str | None = Query(None, max_length=512),
        tag: str | None = Query(None, max_length=32),
        status: str | None = Query(None, max_length=16),
        search: str | None = Query(None, max_length=200),
        sort: str | None = Query(None, max_length=16, description="created, clicks, lastClick"),
        order: str | None = Query(None, max_length=8, description="asc or desc (default)"),
        created_from: str | None = Query(None, alias="createdFrom", max_length=64),
        created_to: str | None = Query(None, alias="createdTo", max_length=64),
        domain: str | None = DOMAIN_QUERY,
    ) -> Any:
        owner = await require_token(request)
        on = None if domain is None else shortener.domains.check(domain)  # "": the default
        return await STORE_LANE.run(
            api.list_links, owner, limit=limit, cursor=cursor, tag=tag, status=status,
            search=search, sort=sort, order=order, created_from=created_from,
            created_to=created_to, domain=on,
        )  # fmt: skip

    @router.get(
        "/v1/links/export.csv",
        dependencies=KNOWN_QUERY_ONLY,
        response_class=Response,
        responses={200: {"content": {"text/csv": {}}}, **_ERRORS},
        summary="Export my links as CSV",
    )
    async def export_csv(request: Request) -> Response:
        owner = await require_token(request)
        text = await STORE_LANE.run(api.export_csv, owner)
        return Response(
            text,
            media_type="text/csv; charset=utf-8",
            headers={"Content-Disposition": 'attachment; filename="links.csv"'},
        )

    @router.post(
        "/v1/links/import",
        response_model=schemas.ImportResult,
        responses=_ERRORS,
        summary="Import links from CSV: this API's export, Shlink's or Bitly's (per-row results)",
        openapi_extra={
            "requestBody": {
                "required": True,
                "content": {"text/csv": {"schema": {"type": "string"}}},
            }
        },
    )
    async def import_csv(request: Request) -> Response:
        owner = await require_token(request)
        raw = await request.body()
        try:
            text = raw.decode("utf-8-sig")
        except UnicodeDecodeError:
            raise errors.InvalidInput("the CSV must be UTF-8", code="INVALID_CSV") from None
        bodies = api.parse_import(text)

        def import_rows() -> tuple[RateDecision, Any]:
            decision = write_budget(request, owner, cost=max(1, len(bodies)))
            return decision, api.import_rows(bodies, owner=owner)

        decision, result = await STORE_LANE.run(import_rows)
        return JSONResponse(result, headers=decision.headers())

    add_bulk_route(router, api, require_token, write_budget, _ERRORS)

    @router.get(
        "/v1/links/{key}",
        response_model=schemas.LinkView,
        response_model_exclude_unset=True,
        responses=_ERRORS,
        summary="One link (its owner sees every field)",
    )
    async def get_link(key: str, request: Request, domain: str | None = DOMAIN_QUERY) -> Any:
        owner = await optional_owner(request)
        return await STORE_LANE.run(api.view, stored(key, domain), owner)

    @router.patch(
        "/v1/links/{key}",
        response_model=schemas.LinkView,
        responses=_ERRORS,
        summary="Change my link: retarget, tags, expiry, clicks, password, status (audited)",
        openapi_extra={
            "requestBody": {
                "required": True,
                "content": {"application/json": {"schema": schemas.PatchLink.model_json_schema()}},
            }
        },
    )
    async def patch_link(key: str, request: Request, domain: str | None = DOMAIN_QUERY) -> Response:
        owner = await require_token(request)
        key = stored(key, domain)
        patch = parse_json_object(await request.body(), request.headers.get("content-type"))

        def update() -> tuple[RateDecision, Link]:
            return write_budget(request, owner), api.update(key, patch, owner=owner)

        decision, link = await STORE_LANE.run(update)
        return JSONResponse(views.owner(link), headers=decision.headers())

    @router.delete(
        "/v1/links/{key}",
        response_model=schemas.LinkView,
        responses=_ERRORS,
        summary="Delete my link (a tombstone: 410 from now on, key never reused)",
    )
    async def delete_link(
        key: str, request: Request, domain: str | None = DOMAIN_QUERY
    ) -> Response:
        owner = await require_token(request)
        key = stored(key, domain)

        def delete() -> tuple[RateDecision, Link]:
            return write_budget(request, owner), service.delete(key, owner=owner)

        decision, link = await STORE_LANE.run(delete)
        return JSONResponse(views.owner(link), headers=decision.headers())

    @router.get(
        "/v1/links/{key}/history",
        dependencies=KNOWN_QUERY_ONLY,
        response_model=list[schemas.AuditEntry],
        responses=_ERRORS,
        summary="Audit trail of my link (who changed what, when; old and new URL)",
    )
    async def link_history(key: str, request: Request, domain: str | None = DOMAIN_QUERY) -> Any:
        owner = await require_token(request)
        return await STORE_LANE.run(api.audit, stored(key, domain), owner)

    router.include_router(build_qr_router(shortener, _ERRORS))  # qr.png, qr.svg

    @router.get(
        "/v1/links/{key}/stats",
        responses={**_ERRORS, 503: {"model": schemas.ErrorBody, "description": "ANALYTICS_OFF"}},
        summary="Clicks per minute or hour, by country, device, OS, browser and referrer",
        description=(
            "Human clicks (bots and link-preview fetchers counted apart), unique visitors "
            "(HyperLogLog), dense per-bucket series over [from, to). from/to are ISO 8601 or "
            "epoch seconds; defaults: the last 24 h by hour, the last hour by minute. A link "
            "with an owner shows its stats only to that owner."
        ),
    )
    async def link_stats(
        key: str,
        request: Request,
        start: str | None = Query(None, alias="from", max_length=64),
        end: str | None = Query(None, alias="to", max_length=64),
        granularity: str = Query("hour", max_length=16),
        domain: str | None = DOMAIN_QUERY,
    ) -> Any:
        owner = await optional_owner(request)
        return await STORE_LANE.run(
            api.click_stats,
            stored(key, domain),
            owner=owner,
            start=start,
            end=end,
            granularity=granularity,
        )

    def require_admin(request: Request) -> None:
        admin.require_admin(request.headers.get("authorization"), admin_token)

    @router.get(
        "/v1/shortener/blocklist",
        responses=_ERRORS,
        summary="The domain blocklist (admin token)",
    )
    async def get_blocklist(request: Request) -> dict[str, Any]:
        require_admin(request)
        domains = await STORE_LANE.run(shortener.blocklist.domains)  # may re-read its source
        return {"version": shortener.blocklist.version, "domains": sorted(domains)}

    @router.post(
        "/v1/shortener/blocklist",
        responses=_ERRORS,
        summary="Add or remove blocked domains (admin token); rescans every link",
        openapi_extra={
            "requestBody": {
                "required": True,
                "content": {
                    "application/json": {
                        "schema": {
                            "type": "object",
                            "properties": {
                                "add": {"type": "array", "items": {"type": "string"}},
                                "remove": {"type": "array", "items": {"type": "string"}},
                            },
                        }
                    }
                },
            }
        },
    )
    async def post_blocklist(request: Request) -> dict[str, Any]:
        require_admin(request)
        body = parse_json_object(await request.body(), request.headers.get("content-type"))
        unknown = set(body) - {"add", "remove"}
        if unknown:
            raise errors.InvalidInput(f"unknown field(s): {sorted(unknown)}", code="UNKNOWN_FIELD")
        add, remove = _domain_list(body, "add"), _domain_list(body, "remove")
        try:
            result = await STORE_LANE.run(shortener.blocklist.edit, add, remove)
        except UrlRejected as exc:
            raise errors.InvalidInput(exc.message, code="INVALID_DOMAIN") from None
        if shortener.scanner is not None:
            shortener.scanner.rules_changed()
        result["rescan"] = shortener.scanner is not None
        return result

    @router.get(
        "/v1/shortener/metrics",
        responses=_ERRORS,
        summary="Shortener counters: what each cache layer absorbed, rate limits, clicks "
        "(admin token)",
    )
    async def metrics(request: Request) -> dict[str, Any]:
        require_admin(request)
        return await STORE_LANE.run(shortener.metrics)

    router.include_router(webhook_router(shortener.webhooks, require_admin, _ERRORS))
    return router


def _route_words(mounts: Any) -> set[str]:
    words: set[str] = set()
    for route in list(getattr(mounts.api, "routes", [])) + list(mounts.fast_routes):
        path = getattr(route, "path", None)
        if isinstance(path, str) and path.startswith("/"):
            first = path[1:].split("/", 1)[0]
            if first and "{" not in first:
                words.add(first)
    return words


def mount(
    mounts: Any,
    *,
    config: ShortenerConfig | None = None,
    analytics_options: dict[str, Any] | None = None,
) -> Shortener:
    """Add the shortener to the server: redirect fast route, management API, sweeper, health.

    The composition root (:class:`~lookup.shortener.app.Shortener`) is also published as
    ``mounts.api.state.shortener`` so that systems mounted later can reach its parts.
    Unless the config switches them off, click analytics (``shortener.analytics``: the
    buffer and the shipper thread here; the aggregator where ``config.aggregator`` says —
    a niced second process by default) and the safety scanner (``shortener.scanner``, a
    worker thread) start and stop with the app. The blocklist endpoints take the admin
    token (``$LOOKUP_ADMIN_TOKEN``, else the shortener's shared secret store: the file
    ``<data-dir>/shortener/admin.token``, created on first start, or the fleet's database).
    """
    cfg = config or ShortenerConfig.from_env(mounts.data_dir, mounts.base_url)
    shortener = Shortener(cfg, analytics_options=analytics_options)
    shortener.reserved.add(_route_words(mounts))
    mounts.api.state.shortener = shortener
    mounts.api.state.admin_token = shortener.admin_token  # one token for every system
    mounts.fast_routes.append(RedirectRoute(shortener, mounts))
    mounts.fast_route_docs.update(REDIRECT_DOCS)
    mounts.api.include_router(build_router(shortener, shortener.admin_token))
    mounts.api.include_router(build_rules_router(shortener))
    mounts.api.include_router(build_domains_router(shortener, shortener.admin_token))
    service = shortener.service
    sweeper: dict[str, asyncio.Task[None]] = {}

    async def sweep_forever() -> None:
        while True:
            await asyncio.sleep(cfg.sweep_interval_s)
            try:
                expired = await STORE_LANE.run(service.sweep)
                if expired:
                    log.info("tombstoned %d expired links", expired)
            except Exception:
                log.exception("the expiry sweep failed; it will run again")

    async def startup() -> None:
        shortener.reserved.add(_route_words(mounts))  # routes other systems mounted after us
        sweeper["task"] = asyncio.create_task(sweep_forever())
        shortener.start()

    async def shutdown() -> None:
        task = sweeper.pop("task", None)
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        # Stops the scanner and analytics (shipping what is still buffered), then lets go of
        # the connections; they reopen on next use, so a restarted lifespan still works.
        await asyncio.to_thread(shortener.close)

    mounts.on_startup.append(startup)
    mounts.on_shutdown.append(shutdown)
    mounts.health["shortener"] = shortener.status
    return shortener


__all__ = [
    "RedirectHandler",
    "RedirectRoute",
    "build_router",
    "is_link_preview",
    "mount",
]
