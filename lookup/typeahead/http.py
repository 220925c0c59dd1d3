"""HTTP for typeahead: the hot ``GET /v1/suggest`` and the single server's mounting.

``/v1/suggest`` is a bare ASGI endpoint on the server's fast path: it parses the raw
query string itself (so invalid UTF-8 in a percent-encoding is a clean 400, not a
silent replacement character), answers from memory and sets
``Cache-Control: public, max-age=300`` so browsers and the CDN absorb repeats. The
helpers for raw endpoints here are shared with the shard servers and the router.
Everything else — recording searches, the hot blocklist, snapshot versions,
swap/rollback, the trending set, the trie walk — lives on the FastAPI app, declared
in :mod:`~lookup.typeahead.manage`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from lookup import settings
from lookup.kit.admin import admin_token_of
from lookup.kit.answercache import AnswerCache
from lookup.kit.clients import Trust, client_address
from lookup.kit.http import ApiError, bool_param, parse_query_string
from lookup.kit.mounts import json_doc, query_doc
from lookup.kit.ratelimit import RateLimiter, RatePolicy, open_rate_limiter
from lookup.typeahead.building import mount_build
from lookup.typeahead.insightshttp import mount_insights
from lookup.typeahead.manage import (
    canonical_market,
    mount_serve_time,
    mount_snapshots,
    unknown_market,
)
from lookup.typeahead.normalize import MAX_QUERY_CHARS, has_control_chars
from lookup.typeahead.recent import open_recent_store
from lookup.typeahead.recent.http import Recorder, mount_recent, recorder
from lookup.typeahead.recent.tokens import DeviceTokens
from lookup.typeahead.serving import MAX_LIMIT, SuggestService, UnknownMarket

if TYPE_CHECKING:
    from collections.abc import Callable

    from lookup.kit.mounts import Mounts
    from lookup.typeahead.filters import HotBlocklist
    from lookup.typeahead.trending import Pick, TrendingPolicy, TrendingTerm

log = logging.getLogger("lookup.typeahead")

CACHE_CONTROL = b"public, max-age=300"
#: While a canary runs, answers depend on the client: browsers may keep them, a CDN not.
CANARY_CACHE_CONTROL = b"private, max-age=300"
POLL_SECONDS = 1.0
MAX_QUERY_STRING = 4096


class SuggestEndpoint:
    """``GET /v1/suggest?q=&market=&limit=`` as a plain ASGI app (no framework per request).

    ``cors_origins`` are the web origins whose pages may call it from a browser: their
    answers carry ``Access-Control-Allow-Origin`` and a preflight ``OPTIONS`` is answered
    (``*``: any origin). With none, nothing of CORS costs the hot path anything.
    """

    def __init__(
        self, service: SuggestService, cors_origins: tuple[str, ...] = (), answers: int = 0
    ) -> None:
        self.service = service
        self.cors = frozenset(cors_origins)
        #: Finished answers by raw query string (``answers`` of them; 0: none kept): the
        #: shared, cacheable answer a CDN would keep, kept here too.
        self.answers = AnswerCache(answers)

    def _cors_headers(self, scope: Scope) -> list[tuple[bytes, bytes]] | None:
        """The CORS headers of an answer to this request (``Vary: Origin`` whatever the
        origin, so a shared cache keeps the answers apart); None for a refused origin."""
        origin = next((v for n, v in scope.get("headers", ()) if n == b"origin"), None)
        headers = [(b"vary", b"Origin")]
        if origin is None:
            return headers
        if "*" in self.cors:
            return headers + [(b"access-control-allow-origin", b"*")]
        if origin.decode("latin-1") in self.cors:
            return headers + [(b"access-control-allow-origin", origin)]
        return None

    async def _preflight(self, scope: Scope, send: Send) -> None:
        headers = self._cors_headers(scope)
        if headers is None:
            body = error_body("ORIGIN_NOT_ALLOWED", "this origin may not call /v1/suggest")
            await send_json(send, 403, body, "OPTIONS")
            return
        headers += [
            (b"access-control-allow-methods", b"GET, HEAD"),
            (b"access-control-allow-headers", b"X-Client-Id, Authorization"),
            (b"access-control-max-age", b"600"),
            (b"content-length", b"0"),
        ]
        await send({"type": "http.response.start", "status": 204, "headers": headers})
        await send({"type": "http.response.body", "body": b""})

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        method = scope.get("method", "GET")
        if method == "OPTIONS" and self.cors:
            await self._preflight(scope, send)
            return
        if method not in ("GET", "HEAD"):
            await send_json(
                send,
                405,
                error_body("METHOD_NOT_ALLOWED", "use GET"),
                method,
                extra=[(b"allow", b"GET, HEAD")],
            )
            return
        raw = scope.get("query_string", b"")
        kept = self.answers.get_with(raw, self._token_of)
        if kept is not None:  # asked before, and nothing it was computed from has changed
            body, market, zero_hit = kept
            if zero_hit is not None:  # still a prefix that finds nothing: count it again
                self.service.zero_hits.add(market, zero_hit)
        else:
            try:
                body, market = self.answer(raw, client_identity(scope))
            except ApiError as exc:
                await send_json(send, exc.status, error_body(exc.code, exc.message), method)
                return
        canary = self.service.canary_running(market)
        await send_json(
            send,
            200,
            body,
            method,
            cache=True,
            cache_control=CANARY_CACHE_CONTROL if canary else None,
            extra=(self._cors_headers(scope) or [(b"vary", b"Origin")]) if self.cors else None,
        )

    def answer(self, raw: bytes, client: str | None = None) -> tuple[bytes, str]:
        """The JSON body for a raw query string and its market, or ``ApiError``; kept in
        :attr:`answers` under the serving state it was computed from (read first: a swap
        while it is computed leaves the entry out of date, never a stale one current)."""
        q, market, limit, marks = public_suggest_params(raw)
        token = self.service.answer_token(market)
        try:
            result = self.service.lookup(q, market, limit, client)
        except UnknownMarket:
            raise unknown_market(market, self.service.known_markets()) from None
        body = encode_json(result.body(marks))
        if token is not None:
            self.answers.put(raw, token, (body, market, None if result.suggestions else result.q))
        return body, market

    def _token_of(self, kept: tuple[bytes, str, str | None]) -> tuple[str, int, int] | None:
        return self.service.answer_token(kept[1])


def client_identity(scope: Scope) -> str:
    """Who asks, for a canary's stable split: the ``X-Client-Id`` a browser session sends,
    else the ``Authorization`` it carries, else its address."""
    for name, value in scope.get("headers", ()):
        if name in (b"x-client-id", b"authorization") and value:
            return value.decode("latin-1")[:200]
    return client_address(scope)


#: The parameters ``GET /v1/suggest`` accepts; any other is refused (400 UNKNOWN_PARAMETER).
SUGGEST_PARAMS = ("q", "market", "limit", "highlight")


def public_suggest_params(raw: bytes) -> tuple[str, str, int, bool]:
    """``(q, market, limit, highlight)`` of a public ``/v1/suggest`` request (the single
    server and the shard router): :func:`suggest_params` plus ``highlight``, and a name
    outside :data:`SUGGEST_PARAMS` refused as the places hot routes refuse one."""
    q, market, limit, params = _suggest_fields(raw)
    for name in params:
        if name not in SUGGEST_PARAMS:
            unknown = sorted(set(params) - set(SUGGEST_PARAMS))
            raise ApiError(
                400,
                "UNKNOWN_PARAMETER",
                f"unknown query parameter(s): {', '.join(unknown)}; this endpoint accepts: "
                f"{', '.join(sorted(SUGGEST_PARAMS))}",
                extra={"accepted": sorted(SUGGEST_PARAMS)},
            )
    marks = "highlight" in params and bool_param(params, "highlight", code="INVALID_PARAMETER")
    return q, market, limit, marks


def suggest_params(raw: bytes) -> tuple[str, str, int]:
    """``(q, market, limit)`` from a raw suggest query string, checked; else ``ApiError`` (400).

    Shared by ``/v1/suggest``, the shard servers and the shard router, so that all three
    refuse the same bad input with the same error.
    """
    q, market, limit, _ = _suggest_fields(raw)
    return q, market, limit


def _suggest_fields(raw: bytes) -> tuple[str, str, int, dict[str, str]]:
    """:func:`suggest_params` and the decoded parameters."""
    if len(raw) > MAX_QUERY_STRING:
        raise ApiError(400, "QUERY_TOO_LONG", f"the query string exceeds {MAX_QUERY_STRING} bytes")
    params = parse_query_string(raw)
    q = params.get("q", "")
    if len(q) > MAX_QUERY_CHARS:
        raise ApiError(400, "QUERY_TOO_LONG", f"q is limited to {MAX_QUERY_CHARS} characters")
    if has_control_chars(q):
        raise ApiError(400, "INVALID_QUERY", "q may not contain control characters")
    market = params.get("market")
    market = "en-IN" if market is None else canonical_market(market)
    limit_raw = params.get("limit")
    limit = MAX_LIMIT if limit_raw is None else count_param(limit_raw, "limit", MAX_LIMIT)
    return q, market, limit, params


def count_param(raw: str, name: str, most: int) -> int:
    """A how-many parameter's value: an integer from 1 to ``most``, else 400 INVALID_LIMIT.

    Stricter than :func:`lookup.kit.http.int_param` on purpose (an empty value is refused,
    not defaulted) and worded as the typeahead API has always answered; callers test for
    absence first, so an absent parameter costs no call on the hot path.
    """
    try:
        value = int(raw)
    except ValueError:
        raise ApiError(400, "INVALID_LIMIT", f"{name} must be an integer") from None
    if not 1 <= value <= most:
        raise ApiError(400, "INVALID_LIMIT", f"{name} must be between 1 and {most}")
    return value


def error_body(code: str, message: str) -> bytes:
    """The app-wide ``{"error", "message"}`` body as bytes (for the raw ASGI endpoints)."""
    return json.dumps({"error": code, "message": message}, ensure_ascii=False).encode()


async def send_json(
    send: Send,
    status: int,
    body: bytes,
    method: str,
    *,
    cache: bool = False,
    extra: list[tuple[bytes, bytes]] | None = None,
    cache_control: bytes | None = None,
) -> None:
    """Send a complete JSON response (no body for HEAD); ``cache`` allows caching for 5 min
    (``cache_control`` overrides the header)."""
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"cache-control", cache_control or (CACHE_CONTROL if cache else b"no-store")),
    ]
    if extra:
        headers += extra
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": b"" if method == "HEAD" else body})


def encode_json(body: dict[str, Any]) -> bytes:
    """The same JSON bytes ``/v1/suggest`` sends (compact, UTF-8 kept), by orjson: the
    answer's scores are floats, which the standard encoder formats several times slower."""
    return orjson.dumps(body)


async def send_answer(
    scope: Scope, send: Send, body: bytes, headers: list[tuple[bytes, bytes]]
) -> None:
    """A 200 answer of a raw suggest endpoint (cacheable), with extra headers."""
    await send_json(send, 200, body, scope.get("method", "GET"), cache=True, extra=headers)


async def send_refusal(scope: Scope, send: Send, exc: ApiError) -> None:
    """An :class:`ApiError` as the app-wide error body, with the error's own headers."""
    extra = [(k.lower().encode(), v.encode()) for k, v in exc.headers.items()]
    await send_json(
        send, exc.status, error_body(exc.code, exc.message), scope.get("method", "GET"),
        extra=extra,
    )  # fmt: skip


def allows_get(scope: Scope) -> bool:
    """True for the methods a raw suggest endpoint answers (GET and HEAD)."""
    return scope.get("method", "GET") in ("GET", "HEAD")


#: What a raw suggest endpoint answers to any other method.
NOT_GET = ApiError(405, "METHOD_NOT_ALLOWED", "use GET", headers={"Allow": "GET, HEAD"})


# --------------------------------------------------------------------------- mounting


#: ``GET /v1/suggest`` as ``/openapi.json`` shows it (the route is a raw ASGI endpoint).
SUGGEST_DOC = {
    "get": {
        "tags": ["typeahead"],
        "summary": "Suggestions for a prefix (the hot path)",
        "description": "The top suggestions for what was typed so far, from the market's "
        "current snapshot and its trending set. Cacheable for 5 minutes (less during a "
        "canary). CORS: origins listed in LOOKUP_SUGGEST_CORS_ORIGINS may call it from a "
        "browser. A prefix of 4 characters or more that finds fewer than `limit` is "
        "completed with typo-tolerant matches (one typo from 4 characters, two from 8; "
        "a Latin prefix also as Devanagari in a Hindi market), marked in `typos`. Unknown "
        "parameters are refused.",
        "parameters": [
            query_doc("q", "what was typed so far",
                      {"type": "string", "maxLength": MAX_QUERY_CHARS}),
            query_doc("market", "the market, case-insensitive (en-IN, hi-IN)",
                      {"type": "string", "default": "en-IN"}),
            query_doc("limit", "how many suggestions at most",
                      {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT,
                       "default": MAX_LIMIT}),
            query_doc("highlight", "add `highlights`: per suggestion the ranges a client "
                      "may bold", {"type": "boolean", "default": False}),
        ],
        "responses": {
            "200": json_doc("the suggestions", {
                "type": "object",
                "properties": {
                    "q": {"type": "string"},
                    "version": {"type": "string"},
                    "complete": {"type": "boolean"},
                    "suggestions": {"type": "array", "items": {"type": "string"}},
                    "match": {"type": "array", "description": "only when word-anywhere "
                              "matches were added after the prefix ones: how each "
                              "suggestion matched",
                              "items": {"type": "string",
                                        "enum": ["prefix", "infix", "typo"]}},
                    "scores": {"type": "array", "items": {"type": "number"},
                               "description": "each suggestion's score (decayed popularity, "
                               "plus its trending boost): what the list is ranked by, so a "
                               "client can merge it with a list of its own"},
                    "typos": {"type": "array", "items": {"type": "number", "minimum": 0},
                              "description": "only when the typo-tolerant fallback filled a "
                              "short page: the typos each suggestion needed (0: it starts "
                              "with the prefix; a slip to a neighbouring key counts half). "
                              "Corrected ones come after the exact ones"},
                    "highlights": {"type": "array", "description": "with highlight=true: "
                                   "per suggestion, [start, end) code-point ranges of the "
                                   "typed prefix, or of the span a corrected one matched",
                                   "items": {"type": "array", "items": {
                                       "type": "array", "minItems": 2, "maxItems": 2,
                                       "items": {"type": "integer", "minimum": 0}}}},
                },
                "required": ["q", "version", "complete", "suggestions", "scores"],
            }),
            "400": json_doc("bad input: INVALID_LIMIT, QUERY_TOO_LONG, INVALID_QUERY, "
                            "INVALID_PARAMETER, UNKNOWN_PARAMETER (naming the accepted "
                            "ones), UNKNOWN_MARKET (naming the known markets)"),
            "405": json_doc("a method other than GET or HEAD"),
        },
    }
}  # fmt: skip


def snapshot_store_name(store: Any) -> str:
    """A snapshot store's address for status pages: the shared store's own description
    (never a password), or the directory's ``file://`` URI."""
    describe = getattr(store, "describe", None)
    if callable(describe):
        return str(describe())
    root = getattr(store, "root", None)
    return Path(root).resolve().as_uri() if root is not None else type(store).__name__


def mount(mounts: Mounts) -> None:
    """Mount typeahead over ``mounts.data_dir / "typeahead"`` (what ``lookup serve`` does)."""
    from lookup.typeahead.searchfeed import policy_from_settings

    install(mounts, SuggestService.from_data_dir(mounts.data_dir, trending=policy_from_settings()))


@dataclass(frozen=True)
class ServicePolicy:
    """The single server's :class:`~lookup.typeahead.manage.ServeTimePolicy`."""

    service: SuggestService

    def known_markets(self) -> list[str]:
        return self.service.known_markets()

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
        return self.service.record_search(query, market, user, network, is_bot=is_bot, pick=pick)

    def trending_now(self, market: str) -> tuple[list[TrendingTerm], TrendingPolicy | None]:
        tracker = self.service.tracker
        return (tracker.trending(market), tracker.policy) if tracker else ([], None)

    def hot_blocklist(self) -> HotBlocklist:
        return self.service.blocklist


def search_limiter(
    policy: RatePolicy | None = None, clock: Callable[[], float] = time.monotonic
) -> RateLimiter:
    """The per-client limit of ``POST /v1/searches`` (in-process token buckets):
    ``policy``, else ``$LOOKUP_TYPEAHEAD_RATE_SEARCHES``; ``clock`` refills them (tests
    inject one)."""
    chosen = policy or RatePolicy.parse(settings.get("typeahead_rate_searches"))
    return open_rate_limiter("memory:", chosen, name="searches", clock=clock)


def install(
    mounts: Mounts,
    service: SuggestService,
    *,
    trust_forwarded_for: Trust | None = None,
    search_rate: RatePolicy | None = None,
    search_clock: Callable[[], float] = time.monotonic,
) -> SuggestService:
    """Mount the routes, the poller and the health probe for a given service.

    ``trust_forwarded_for`` (default ``$LOOKUP_TRUST_FORWARDED_FOR``: the proxies trusted)
    takes the client address of searches from ``X-Forwarded-For``; ``search_rate`` overrides the
    per-client limit of ``POST /v1/searches`` and ``search_clock`` its time source."""
    endpoint = SuggestEndpoint(
        service, settings.get("suggest_cors_origins"), settings.get("typeahead_answer_cache")
    )
    mounts.fast_routes.append(Route("/v1/suggest", endpoint))
    mounts.fast_route_docs["/v1/suggest"] = SUGGEST_DOC
    api = mounts.api
    api.state.typeahead = service
    admin_token = admin_token_of(mounts)
    if trust_forwarded_for is None:
        trust_forwarded_for = settings.get("trust_forwarded_for")
    mount_serve_time(
        api,
        ServicePolicy(service),
        admin_token,
        limiter=search_limiter(search_rate, search_clock),
        trust_forwarded_for=trust_forwarded_for,
        recent=install_recent(mounts, admin_token, service.known_markets),
    )
    mount_insights(api, service, mounts.data_dir)
    mount_snapshots(api, service, admin_token)
    mount_build(mounts, admin_token)  # POST/GET …/snapshots/build
    mount_poller(mounts, service.poll, "typeahead poll")
    mounts.on_startup.append(service.start_feeds)  # a stream's copier, trending refresher
    mounts.on_shutdown.append(service.stop_feeds)

    def status() -> dict[str, Any]:
        out = {**service.status(), "answerCache": endpoint.answers.stats()}
        # where builds publish and fold (the dashboard's Backends tab names them)
        out["snapshotStore"] = snapshot_store_name(service.store)
        out["buildFold"] = settings.get("typeahead_dask_scheduler") or "process"
        feed = service.search_log.status() if service.search_log is not None else None
        if feed is not None and feed.get("backend") != "file":  # a fleet's: say which
            out["searches"] = feed
            out["trending"] = service.tracker.status() if service.tracker else None
        return out

    mounts.health["typeahead"] = status
    return service


def install_recent(
    mounts: Mounts, admin_token: Callable[[], str], known_markets: Callable[[], list[str]]
) -> Recorder:
    """``/v1/suggest/recent`` over the store setting ``typeahead_recent`` names (closed with
    the app); returns what ``POST /v1/searches`` calls to add to a sender's list."""
    store = open_recent_store(settings.get("typeahead_recent"), mounts.data_dir)
    tokens = DeviceTokens.from_data_dir(mounts.data_dir)
    mount_recent(mounts.api, store, tokens, admin_token, known_markets)
    mounts.on_shutdown.append(store.close)
    return recorder(store, tokens, lambda: settings.get("typeahead_recent_per_user"))


def mount_poller(mounts: Mounts, poll: Callable[[], object], what: str) -> None:
    """Call ``poll`` every :data:`POLL_SECONDS` while the app runs (new snapshots, edits of
    the hot blocklist by other processes); a failing poll is logged and retried, never
    fatal. It runs in a worker thread, one at a time: a slow disk or a blocklist database
    that does not answer delays the next poll, never an answer on the event loop."""
    poller: dict[str, asyncio.Task[None]] = {}

    async def _poll_forever() -> None:
        while True:
            await asyncio.sleep(POLL_SECONDS)
            try:
                await asyncio.to_thread(poll)
            except Exception:  # keep polling; a bad file must not stop the server
                log.exception("%s failed", what)

    def _start() -> None:
        poller["task"] = asyncio.get_running_loop().create_task(_poll_forever())

    async def _stop() -> None:
        task = poller.pop("task", None)
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    mounts.on_startup.append(_start)
    mounts.on_shutdown.append(_stop)


__all__ = [
    "NOT_GET",
    "ServicePolicy",
    "SuggestEndpoint",
    "allows_get",
    "client_identity",
    "count_param",
    "encode_json",
    "error_body",
    "install",
    "mount",
    "mount_poller",
    "parse_query_string",
    "public_suggest_params",
    "search_limiter",
    "send_answer",
    "send_json",
    "send_refusal",
    "suggest_params",
]
