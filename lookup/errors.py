"""The domain errors every system raises, in one vocabulary.

A system's core raises these (never an HTTP error); the HTTP edge maps them to a
status and the app-wide JSON body in one place (:func:`lookup.kit.http.api_error_for`),
and a command line prints their message and exits non-zero.

Each error carries a machine-readable ``code`` (``ALIAS_TAKEN``, ``NOT_BUILT``, ...),
a human ``message``, and optionally ``headers`` (``Retry-After`` on a rate limit) and
``extra`` fields merged into the JSON body (``{"command": "lookup index CRAWL_DIR"}``).
"""

from __future__ import annotations

from typing import Any, ClassVar

__all__ = [
    "Conflict",
    "Damaged",
    "Forbidden",
    "Gone",
    "InvalidInput",
    "NotBuilt",
    "NotFound",
    "RateLimited",
    "TooLarge",
    "Unauthorized",
    "Unavailable",
    "Unprocessable",
    "WorkbenchError",
]


class WorkbenchError(Exception):
    """Base of every domain error: a code, a message, optional headers and body fields."""

    default_code: ClassVar[str] = "BAD_REQUEST"

    def __init__(
        self,
        message: str = "",
        *,
        code: str | None = None,
        headers: dict[str, str] | None = None,
        extra: dict[str, Any] | None = None,
    ) -> None:
        self.code = code or self.default_code
        self.message = message or self.code.replace("_", " ").lower()
        self.headers = dict(headers or {})
        self.extra = dict(extra or {})
        super().__init__(self.message)


class InvalidInput(WorkbenchError, ValueError):
    """The request is malformed or out of range (HTTP 400)."""

    default_code = "BAD_REQUEST"


class Unauthorized(WorkbenchError):
    """No credentials, or credentials that are not valid (HTTP 401)."""

    default_code = "UNAUTHORIZED"


class Forbidden(WorkbenchError):
    """Valid credentials that may not do this (HTTP 403)."""

    default_code = "FORBIDDEN"


class NotFound(WorkbenchError, LookupError):
    """The thing asked for does not exist (HTTP 404)."""

    default_code = "NOT_FOUND"


class Conflict(WorkbenchError):
    """The write loses to the current state, e.g. an alias already taken (HTTP 409)."""

    default_code = "CONFLICT"


class Unprocessable(WorkbenchError):
    """Well-formed, but refused as it stands, e.g. a key reused with another body (HTTP 422)."""

    default_code = "UNPROCESSABLE"


class Gone(WorkbenchError):
    """It existed and no longer does: expired, deleted, used up (HTTP 410)."""

    default_code = "GONE"


class TooLarge(WorkbenchError):
    """The request is larger than the limit (HTTP 413)."""

    default_code = "PAYLOAD_TOO_LARGE"


class RateLimited(WorkbenchError):
    """Over a rate limit; ``headers`` carry ``Retry-After`` and ``RateLimit-*`` (HTTP 429)."""

    default_code = "RATE_LIMITED"


class NotBuilt(WorkbenchError, LookupError, RuntimeError):
    """The system's data is not built yet; ``command`` says what builds it (HTTP 503)."""

    default_code = "NOT_BUILT"

    def __init__(self, message: str = "", *, command: str | None = None, **kw: Any) -> None:
        extra = dict(kw.pop("extra", None) or {})
        if command:
            extra.setdefault("command", command)
        super().__init__(message, extra=extra, **kw)
        self.command = command


class Unavailable(WorkbenchError):
    """A dependency is down or overloaded; try again later (HTTP 503)."""

    default_code = "UNAVAILABLE"


class Damaged(Unavailable):
    """A data file is corrupt, missing or cannot be written (HTTP 503).

    ``file`` names it and ``remedy`` says what to do in plain words; both are added to the
    JSON body. What is intact keeps serving: only the system (or the market) that needs the
    file answers with this error, and ``/healthz`` shows :meth:`report`.
    """

    default_code = "DAMAGED"

    def __init__(
        self, message: str = "", *, file: str | None = None, remedy: str | None = None, **kw: Any
    ) -> None:
        extra = dict(kw.pop("extra", None) or {})
        if file:
            extra.setdefault("file", file)
        if remedy:
            extra.setdefault("remedy", remedy)
        super().__init__(message, extra=extra, **kw)
        self.file = file
        self.remedy = remedy

    def report(self) -> dict[str, Any]:
        """The health-report form: ``{"status": "DAMAGED", "message", "file", "remedy"}``."""
        return {"status": self.code, "message": self.message, **self.extra}
