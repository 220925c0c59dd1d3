"""One error format for the whole HTTP API, and the guards every route shares.

Every bad request is answered with a 4xx and ``{"error": "CODE", "message": "..."}``;
nothing a client sends may produce a 500 or a traceback.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from typing import Any, Literal, overload
from urllib.parse import unquote_to_bytes

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
    408: "REQUEST_TIMEOUT",
    409: "CONFLICT",
    410: "GONE",
    411: "LENGTH_REQUIRED",
    413: "PAYLOAD_TOO_LARGE",
    414: "URI_TOO_LONG",
    415: "UNSUPPORTED_MEDIA_TYPE",
    422: "INVALID_REQUEST",
    429: "RATE_LIMITED",
    431: "HEADERS_TOO_LARGE",
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
    errors.Damaged: 503,
    errors.Unavailable: 503,
}


def api_error_for(exc: errors.WorkbenchError) -> ApiError:
    """The HTTP answer for a domain error: its status, code, message, headers and fields."""
    status = next((s for cls, s in STATUS_OF.items() if isinstance(exc, cls)), 400)
    return ApiError(status, exc.code, exc.message, headers=exc.headers, extra=exc.extra)


def api_error_of(exc: BaseException) -> ApiError | None:
    """The HTTP answer for any exception a route lets escape, or None for a bug (a 500).

    An :class:`ApiError` as it is, a domain error by :data:`STATUS_OF`, and a store that
    stayed busy past its timeout — SQLite's "database is locked"
    (:func:`lookup.kit.engines.sqlite.busy_error`) — as ``Unavailable`` (503, ``Retry-After``):
    the one place that translation is made, for every route of every system."""
    if isinstance(exc, ApiError):
        return exc
    if isinstance(exc, errors.WorkbenchError):
        return api_error_for(exc)
    from lookup.kit.engines.sqlite import busy_error  # only on an error: keeps this module light

    busy = busy_error(exc)
    return None if busy is None else api_error_for(busy)


def error_response(
    status: int,
    code: str | None = None,
    message: str = "",
    headers: dict[str, str] | None = None,
    extra: dict[str, Any] | None = None,
) -> JSONResponse:
    """Build the app-wide error body with the given status."""
    body = error_body(status, code, message, extra)
    return JSONResponse(body, status_code=status, headers=headers)


def error_body(
    status: int, code: str | None = None, message: str = "", extra: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The app-wide error body: ``{"error": CODE, "message": ...}`` (and ``extra``)."""
    code = code or code_for_status(status)
    body: dict[str, Any] = {"error": code, "message": message or code.replace("_", " ").lower()}
    if extra:
        body.update(extra)
    return body


def is_json_media_type(content_type: str | None) -> bool:
    """Is a ``Content-Type`` JSON (``application/json``, ``application/*+json``, any
    parameters)? Browsers send cross-site forms only as ``text/plain``, urlencoded or
    multipart, so a JSON-only endpoint is out of a forged form's reach."""
    media = (content_type or "").split(";", 1)[0].strip().lower()
    return media == "application/json" or (
        media.startswith("application/") and media.endswith("+json")
    )


def unsupported_media_type(content_type: str | None) -> ApiError:
    """The 415 ``UNSUPPORTED_MEDIA_TYPE`` for a body that is not declared JSON."""
    return ApiError(
        415,
        "UNSUPPORTED_MEDIA_TYPE",
        f"send the body as Content-Type: application/json, not {(content_type or 'none')[:100]}",
    )


def require_json_media_type(content_type: str | None) -> None:
    """Refuse a body that is not declared JSON (:func:`unsupported_media_type`)."""
    if not is_json_media_type(content_type):
        raise unsupported_media_type(content_type)


def parse_json_object(raw: bytes, content_type: str | None) -> dict[str, Any]:
    """Decode a request body that must be one JSON object, or raise a 400 ``ApiError``
    (415 when ``content_type``, the request's header, is not JSON)."""
    require_json_media_type(content_type)
    if not raw:
        raise ApiError(400, "MALFORMED_JSON", "the request body is empty; send a JSON object")
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError) as exc:
        # ValueError: JSONDecodeError, UnicodeDecodeError and also an integer longer than
        # Python's int-string limit (4,300 digits), which json.loads raises as a plain one.
        reason = str(exc)
        if "integer string conversion" in reason:
            reason = "a number has more digits than this server accepts"
        raise ApiError(400, "MALFORMED_JSON", f"the body is not valid JSON: {reason}") from None
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


# -- query parameters --------------------------------------------------------------------


def parse_query_string(raw: bytes) -> dict[str, str]:
    """Decode ``a=1&b=%C3%A9`` strictly: invalid UTF-8 is a 400, the first of repeats wins.

    For the raw ASGI endpoints that read ``scope["query_string"]`` themselves (typeahead's
    ``/v1/suggest``, its shard servers and router); its result is a mapping the ``*_param``
    readers below accept.
    """
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


#
# One way to read a query parameter for every system: absent (or blank) gives the default,
# a value that does not parse or lies outside its range is a 400 ``ApiError`` with the code
# ``INVALID_PARAMETER`` (or the caller's) and a message naming the parameter and what it
# accepts. A parameter's raw value is echoed back at most :data:`ECHO_CHARS` characters long.

#: The spellings a boolean query parameter accepts (an empty value counts as false).
TRUE_WORDS = frozenset({"1", "true", "yes", "on"})
FALSE_WORDS = frozenset({"0", "false", "no", "off", ""})
#: How much of a bad value an error message repeats.
ECHO_CHARS = 40


def _shown(raw: str) -> str:
    return repr(raw[:ECHO_CHARS])


def _given(params: Mapping[str, str], name: str, required: bool, code: str) -> str | None:
    """The raw value, or None when absent or blank (a 400 when ``required``)."""
    raw = params.get(name)
    if raw is None or raw.strip() == "":
        if required:
            raise ApiError(400, code, f"{name} is required")
        return None
    return raw


@overload
def bool_param(
    params: Mapping[str, str], name: str, default: bool = False, *, code: str = ...
) -> bool: ...
@overload
def bool_param(
    params: Mapping[str, str], name: str, default: None, *, code: str = ...
) -> bool | None: ...
def bool_param(
    params: Mapping[str, str],
    name: str,
    default: bool | None = False,
    *,
    code: str = "INVALID_PARAMETER",
) -> bool | None:
    """``name`` as a boolean (``true/false``, ``1/0``, ``yes/no``, ``on/off``; empty is false)."""
    raw = params.get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in TRUE_WORDS:
        return True
    if value in FALSE_WORDS:
        return False
    raise ApiError(400, code, f"{name} must be true or false, got {_shown(raw)}")


@overload
def float_param(
    params: Mapping[str, str],
    name: str,
    default: float,
    *,
    required: bool = ...,
    low: float | None = ...,
    high: float | None = ...,
    code: str = ...,
) -> float: ...
@overload
def float_param(
    params: Mapping[str, str],
    name: str,
    default: None = None,
    *,
    required: Literal[True],
    low: float | None = ...,
    high: float | None = ...,
    code: str = ...,
) -> float: ...
@overload
def float_param(
    params: Mapping[str, str],
    name: str,
    default: float | None = None,
    *,
    required: bool = ...,
    low: float | None = ...,
    high: float | None = ...,
    code: str = ...,
) -> float | None: ...
def float_param(
    params: Mapping[str, str],
    name: str,
    default: float | None = None,
    *,
    required: bool = False,
    low: float | None = None,
    high: float | None = None,
    code: str = "INVALID_PARAMETER",
) -> float | None:
    """``name`` as a finite number, within ``[low, high]`` when given."""
    raw = params.get(name)
    if raw is None or not raw.strip():
        if required:
            raise ApiError(400, code, f"{name} is required")
        return default
    try:
        value = float(raw)
    except ValueError:
        if low is not None or high is not None:
            raise ApiError(400, code, f"{name} must be a number {_bounds(low, high)}") from None
        raise ApiError(400, code, f"{name} must be a number, got {_shown(raw)}") from None
    if low is None and high is None:
        if not math.isfinite(value):
            raise ApiError(400, code, f"{name} must be a finite number")
    elif (
        not math.isfinite(value)
        or (low is not None and value < low)
        or (high is not None and value > high)
    ):
        raise ApiError(400, code, f"{name} must be {_bounds(low, high)}")
    return value


@overload
def int_param(
    params: Mapping[str, str],
    name: str,
    default: int,
    *,
    required: bool = ...,
    low: int | None = ...,
    high: int | None = ...,
    code: str = ...,
) -> int: ...
@overload
def int_param(
    params: Mapping[str, str],
    name: str,
    default: None = None,
    *,
    required: Literal[True],
    low: int | None = ...,
    high: int | None = ...,
    code: str = ...,
) -> int: ...
@overload
def int_param(
    params: Mapping[str, str],
    name: str,
    default: int | None = None,
    *,
    required: bool = ...,
    low: int | None = ...,
    high: int | None = ...,
    code: str = ...,
) -> int | None: ...
def int_param(
    params: Mapping[str, str],
    name: str,
    default: int | None = None,
    *,
    required: bool = False,
    low: int | None = None,
    high: int | None = None,
    code: str = "INVALID_PARAMETER",
) -> int | None:
    """``name`` as an integer, within ``[low, high]`` when given."""
    raw = _given(params, name, required, code)
    if raw is None:
        return default
    ranged = low is not None or high is not None
    try:
        value = int(raw)
    except ValueError:
        if ranged:
            raise ApiError(400, code, f"{name} must be an integer {_range(low, high)}") from None
        raise ApiError(400, code, f"{name} must be an integer, got {_shown(raw)}") from None
    if (low is not None and value < low) or (high is not None and value > high):
        raise ApiError(400, code, f"{name} must be an integer {_range(low, high)}")
    return value


def choice_param(
    params: Mapping[str, str],
    name: str,
    choices: Iterable[str],
    default: str,
    *,
    code: str = "INVALID_PARAMETER",
) -> str:
    """``name`` as one of ``choices`` (absent or empty gives ``default``)."""
    options = tuple(choices)
    raw = params.get(name)
    if not raw:
        return default
    if raw not in options:
        raise ApiError(400, code, f"{name} must be one of {', '.join(options)}, got {_shown(raw)}")
    return raw


def _bounds(low: float | None, high: float | None) -> str:
    if low is not None and high is not None:
        return f"between {low:g} and {high:g}"
    return f"at least {low:g}" if low is not None else f"at most {high:g}"


def _range(low: int | None, high: int | None) -> str:
    if low is not None and high is not None:
        return f"from {low} to {high}"
    return f"of at least {low}" if low is not None else f"of at most {high}"
