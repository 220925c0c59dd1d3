"""HTTP for typeahead: the hot ``GET /v1/suggest`` and the management endpoints.

``/v1/suggest`` is a bare ASGI endpoint on the server's fast path: it parses the raw
query string itself (so invalid UTF-8 in a percent-encoding is a clean 400, not a
silent replacement character), answers from memory and sets
``Cache-Control: public, max-age=300`` so browsers and the CDN absorb repeats.
Everything else — recording searches, the hot blocklist, snapshot versions,
swap/rollback, the trending set, the trie walk — lives on the FastAPI app.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote_to_bytes

from fastapi import Body, Query, Request
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from lookup.errors import NotBuilt
from lookup.kit.http import ApiError
from lookup.typeahead.filters import HotBlocklist
from lookup.typeahead.normalize import MAX_QUERY_CHARS, has_control_chars
from lookup.typeahead.serving import MAX_LIMIT, SuggestService, UnknownMarket, not_built

if TYPE_CHECKING:
    from collections.abc import Callable

    from fastapi import FastAPI

    from lookup.kit.mounts import Mounts

log = logging.getLogger("lookup.typeahead")

CACHE_CONTROL = b"public, max-age=300"
POLL_SECONDS = 1.0
MAX_QUERY_STRING = 4096


class SuggestEndpoint:
    """``GET /v1/suggest?q=&market=&limit=`` as a plain ASGI app (no framework per request)."""

    def __init__(self, service: SuggestService) -> None:
        self.service = service

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        method = scope.get("method", "GET")
        if method not in ("GET", "HEAD"):
            await send_json(
                send,
                405,
                error_body("METHOD_NOT_ALLOWED", "use GET"),
                method,
                extra=[(b"allow", b"GET, HEAD")],
            )
            return
        try:
            body = self.answer(scope.get("query_string", b""))
        except ApiError as exc:
            await send_json(send, exc.status, error_body(exc.code, exc.message), method)
            return
        await send_json(send, 200, body, method, cache=True)

    def answer(self, raw: bytes) -> bytes:
        """The JSON body for a raw query string, or ``ApiError``."""
        q, market, limit = suggest_params(raw)
        try:
            result = self.service.lookup(q, market, limit)
        except UnknownMarket:
            known = ", ".join(self.service.known_markets())
            raise ApiError(
                400, "UNKNOWN_MARKET", f"unknown market {market!r}; known: {known}"
            ) from None
        return json.dumps(result.body(), ensure_ascii=False, separators=(",", ":")).encode()


def suggest_params(raw: bytes) -> tuple[str, str, int]:
    """``(q, market, limit)`` from a raw suggest query string, checked; else ``ApiError`` (400).

    Shared by ``/v1/suggest``, the shard servers and the shard router, so that all three
    refuse the same bad input with the same error.
    """
    if len(raw) > MAX_QUERY_STRING:
        raise ApiError(400, "QUERY_TOO_LONG", f"the query string exceeds {MAX_QUERY_STRING} bytes")
    params = parse_query_string(raw)
    q = params.get("q", "")
    if len(q) > MAX_QUERY_CHARS:
        raise ApiError(400, "QUERY_TOO_LONG", f"q is limited to {MAX_QUERY_CHARS} characters")
    if has_control_chars(q):
        raise ApiError(400, "INVALID_QUERY", "q may not contain control characters")
    market = params.get("market", "en-IN")
    limit_raw = params.get("limit")
    limit = MAX_LIMIT
    if limit_raw is not None:
        try:
            limit = int(limit_raw)
        except ValueError:
            raise ApiError(400, "INVALID_LIMIT", "limit must be an integer") from None
        if not 1 <= limit <= MAX_LIMIT:
            raise ApiError(400, "INVALID_LIMIT", f"limit must be between 1 and {MAX_LIMIT}")
    return q, market, limit


def parse_query_string(raw: bytes) -> dict[str, str]:
    """Decode ``a=1&b=%C3%A9`` strictly: invalid UTF-8 is a 400, the first of repeats wins."""
    out: dict[str, str] = {}
    if not raw:
        return out
    for part in raw.split(b"&"):
        if not part:
            continue
        k, _, v = part.partition(b"=")
        try:
            key = unquote_to_bytes(k.replace(b"+", b" ")).decode("utf-8")
            value = unquote_to_bytes(v.replace(b"+", b" ")).decode("utf-8")
        except UnicodeDecodeError:
            raise ApiError(
                400, "INVALID_QUERY", "the query string is not valid UTF-8 once percent-decoded"
            ) from None
        out.setdefault(key, value)
    return out


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
) -> None:
    """Send a complete JSON response (no body for HEAD); ``cache`` allows caching for 5 min."""
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"cache-control", CACHE_CONTROL if cache else b"no-store"),
    ]
    if extra:
        headers += extra
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": b"" if method == "HEAD" else body})


# --------------------------------------------------------------------------- mounting


def mount(mounts: Mounts) -> None:
    """Mount typeahead over ``mounts.data_dir / "typeahead"`` (what ``lookup serve`` does)."""
    install(mounts, SuggestService.from_data_dir(mounts.data_dir))


def install(mounts: Mounts, service: SuggestService) -> SuggestService:
    """Mount the routes, the poller and the health probe for a given service."""
    mounts.fast_routes.append(Route("/v1/suggest", SuggestEndpoint(service)))
    api = mounts.api
    api.state.typeahead = service
    tags = ["typeahead"]

    def _market_or_404(market: str) -> None:
        if market not in service.known_markets():
            known = ", ".join(service.known_markets())
            raise ApiError(404, "UNKNOWN_MARKET", f"unknown market {market!r}; known: {known}")

    @api.post(
        "/v1/searches",
        tags=tags,
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
        try:
            normalized = service.record_search(q, market, user)
        except UnknownMarket:
            known = ", ".join(service.known_markets())
            raise ApiError(
                400, "UNKNOWN_MARKET", f"unknown market {market!r}; known: {known}"
            ) from None
        if normalized is None:
            raise ApiError(400, "INVALID_QUERY", "q is empty once normalised")
        return {"q": normalized, "market": market, "recorded": True}

    @api.get("/v1/typeahead/trending", tags=tags, summary="The current trending set of a market")
    async def trending(market: str = Query("en-IN")) -> dict[str, Any]:
        _market_or_404(market)
        terms = service.tracker.trending(market) if service.tracker else []
        policy = service.tracker.policy if service.tracker else None
        return {
            "market": market,
            "terms": [t.to_dict() for t in terms],
            "policy": policy.__dict__ if policy else None,
        }

    mount_blocklist(api, lambda: service.blocklist)

    @api.get("/v1/typeahead/snapshots", tags=tags, summary="Snapshot versions per market")
    async def snapshots() -> dict[str, Any]:
        return {"markets": service.status()}

    @api.post(
        "/v1/typeahead/snapshots/{market}/rollback",
        tags=tags,
        summary="Swap back to the previous snapshot",
    )
    async def rollback(market: str) -> dict[str, Any]:
        _market_or_404(market)
        try:
            out = service.rollback(market)
        except NotBuilt:
            raise
        except LookupError as exc:
            raise ApiError(409, "NO_PREVIOUS", str(exc)) from None
        return {"market": market, "version": out.version, "previous": out.previous}

    @api.post(
        "/v1/typeahead/snapshots/{market}/activate",
        tags=tags,
        summary="Validate a stored version and swap it in",
    )
    async def activate(
        market: str,
        payload: dict[str, Any] = Body(..., examples=[{"version": "20261009T060000Z-ab12cd"}]),
    ) -> dict[str, Any]:
        _market_or_404(market)
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
        tags=tags,
        summary="Deploy what the build published (the poller also does this every second)",
    )
    async def reload() -> dict[str, Any]:
        return service.poll()

    @api.get(
        "/v1/typeahead/trace", tags=tags, summary="The trie walk for a prefix (for explanations)"
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

    mount_poller(mounts, service.poll, "typeahead poll")

    def probe() -> dict[str, Any]:
        status = service.status()
        served = {m: s["current"]["version"] for m, s in status.items() if s["current"]}
        if not served:
            return {"status": "NOT_BUILT", "message": not_built("any market").message}
        return {
            "status": "ok",
            "markets": served,
            "blocklistTerms": len(service.blocklist.hot_terms),
        }

    mounts.health["typeahead"] = probe
    return service


__all__ = [
    "SuggestEndpoint",
    "error_body",
    "install",
    "mount",
    "parse_query_string",
    "send_json",
    "suggest_params",
]


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


def mount_blocklist(api: FastAPI, blocklist: Callable[[], HotBlocklist]) -> None:
    """The hot-blocklist endpoints (read, add, remove) over whatever ``blocklist()`` returns:
    the single server and the shard router share them."""
    tags = ["typeahead"]

    def body(bl: HotBlocklist) -> dict[str, Any]:
        return {"terms": bl.hot_terms, "version": bl.version}

    @api.get("/v1/typeahead/blocklist", tags=tags, summary="The serve-time blocklist")
    async def get_blocklist() -> dict[str, Any]:
        bl = blocklist()
        return {"terms": bl.hot_terms, "builtin": bl.builtin.terms, "version": bl.version}

    @api.post(
        "/v1/typeahead/blocklist",
        tags=tags,
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
        "/v1/typeahead/blocklist", tags=tags, summary="Remove a phrase from the hot blocklist"
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


def mount_poller(mounts: Mounts, poll: Callable[[], object], what: str) -> None:
    """Call ``poll`` every :data:`POLL_SECONDS` while the app runs (new snapshots, edits of
    the blocklist file); a failing poll is logged and retried, never fatal."""
    poller: dict[str, asyncio.Task[None]] = {}

    async def _poll_forever() -> None:
        while True:
            await asyncio.sleep(POLL_SECONDS)
            try:
                poll()
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
