"""One error format for the whole HTTP API, and the guards every route shares.

Every bad request is answered with a 4xx and ``{"error": "CODE", "message": "..."}``;
nothing a client sends may produce a 500 or a traceback.
"""

from __future__ import annotations

import json
from typing import Any

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from lookup import errors

#: The largest request body any route accepts (bytes); larger bodies get 413.
MAX_BODY_BYTES = 64 * 1024

_CODES = {
    400: "BAD_REQUEST",
    401: "UNAUTHORIZED",
    403: "FORBIDDEN",
    404: "NOT_FOUND",
    405: "METHOD_NOT_ALLOWED",
    406: "NOT_ACCEPTABLE",
    409: "CONFLICT",
    410: "GONE",
    411: "LENGTH_REQUIRED",
    413: "PAYLOAD_TOO_LARGE",
    414: "URI_TOO_LONG",
    415: "UNSUPPORTED_MEDIA_TYPE",
    422: "INVALID_REQUEST",
    429: "RATE_LIMITED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
}


def code_for_status(status: int) -> str:
    """The default error code for an HTTP status (``404`` → ``NOT_FOUND``)."""
    return _CODES.get(status, "CLIENT_ERROR" if 400 <= status < 500 else "SERVER_ERROR")


class ApiError(Exception):
    """Raise from any route to answer ``{"error": code, "message": message}``."""

    def __init__(
        self,
        status: int,
        code: str | None = None,
        message: str = "",
        *,
        headers: dict[str, str] | None = None,
        extra: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message or code or str(status))
        self.status = status
        self.code = code or code_for_status(status)
        self.message = message or self.code.replace("_", " ").lower()
        self.headers = headers or {}
        self.extra = extra or {}

    def response(self) -> JSONResponse:
        """The JSON response for this error."""
        return error_response(self.status, self.code, self.message, self.headers, self.extra)


#: The HTTP status of each domain error (the one place the mapping is written).
STATUS_OF: dict[type[errors.WorkbenchError], int] = {
    errors.InvalidInput: 400,
    errors.Unauthorized: 401,
    errors.Forbidden: 403,
    errors.NotFound: 404,
    errors.Conflict: 409,
    errors.Gone: 410,
    errors.TooLarge: 413,
    errors.Unprocessable: 422,
    errors.RateLimited: 429,
    errors.NotBuilt: 503,
    errors.Unavailable: 503,
}


def api_error_for(exc: errors.WorkbenchError) -> ApiError:
    """The HTTP answer for a domain error: its status, code, message, headers and fields."""
    status = next((s for cls, s in STATUS_OF.items() if isinstance(exc, cls)), 400)
    return ApiError(status, exc.code, exc.message, headers=exc.headers, extra=exc.extra)


def error_response(
    status: int,
    code: str | None = None,
    message: str = "",
    headers: dict[str, str] | None = None,
    extra: dict[str, Any] | None = None,
) -> JSONResponse:
    """Build the app-wide error body with the given status."""
    code = code or code_for_status(status)
    body: dict[str, Any] = {"error": code, "message": message or code.replace("_", " ").lower()}
    if extra:
        body.update(extra)
    return JSONResponse(body, status_code=status, headers=headers)


def parse_json_object(raw: bytes) -> dict[str, Any]:
    """Decode a request body that must be one JSON object, or raise a 400 ``ApiError``."""
    if not raw:
        raise ApiError(400, "MALFORMED_JSON", "the request body is empty; send a JSON object")
    try:
        value = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise ApiError(400, "MALFORMED_JSON", f"the body is not valid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise ApiError(400, "MALFORMED_JSON", "the body must be a JSON object")
    return value


class BodyLimit:
    """ASGI middleware: refuse bodies over ``limit`` bytes with 413, before a route reads them.

    Checks ``Content-Length`` up front and counts streamed (chunked) bodies as they arrive.
    """

    def __init__(self, app: ASGIApp, limit: int = MAX_BODY_BYTES) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for name, value in scope.get("headers", ()):
            if name == b"content-length":
                try:
                    declared = int(value)
                except ValueError:
                    await error_response(400, "BAD_REQUEST", "invalid Content-Length")(
                        scope, receive, send
                    )
                    return
                if declared > self.limit:
                    await self._too_large(scope, receive, send)
                    return
        if any(name == b"content-length" for name, _ in scope.get("headers", ())):
            await self.app(scope, receive, send)
            return
        # No declared length (chunked upload): read it up to the limit, then replay it.
        chunks: list[bytes] = []
        seen = 0
        more = True
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunk = message.get("body", b"")
            seen += len(chunk)
            if seen > self.limit:
                await self._too_large(scope, receive, send)
                return
            chunks.append(chunk)
            more = message.get("more_body", False)
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": b"".join(chunks), "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    async def _too_large(self, scope: Scope, receive: Receive, send: Send) -> None:
        await error_response(
            413, "PAYLOAD_TOO_LARGE", f"request bodies are limited to {self.limit} bytes"
        )(scope, receive, send)
