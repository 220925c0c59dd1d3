"""Pydantic models that document the shortener's HTTP contract in the OpenAPI schema.

The routes validate bodies themselves (:meth:`ShortenerService.parse_create`), so
each refusal gets its specific error code (``INVALID_URL``, ``RESERVED_ALIAS``, ...);
these models only describe the shapes for ``/docs`` and for schema-driven testing.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class ErrorBody(BaseModel):
    """Every error: a machine code and a human message."""

    error: str = Field(examples=["ALIAS_TAKEN"])
    message: str


class CreateLink(BaseModel):
    """``POST /v1/links`` body."""

    model_config = ConfigDict(extra="forbid")

    longUrl: str = Field(
        max_length=2048, examples=["https://example.com/tickets/final?utm_source=whatsapp"]
    )
    customAlias: str | None = Field(
        default=None, min_length=3, max_length=64, examples=["ipl-final"]
    )
    expiresAt: str | float | None = Field(default=None, examples=["2026-12-31T23:59:59Z"])
    maxClicks: int | None = Field(default=None, ge=1, le=1_000_000_000)
    password: str | None = Field(default=None, min_length=1, max_length=128)
    redirectType: Literal[301, 302] | None = 302
    maxAge: int | None = Field(
        default=None, ge=0, le=86_400, description="301 only: browser cache seconds"
    )
    tags: list[str] | None = Field(default=None, max_length=10)
    forwardQuery: bool | None = Field(
        default=True,
        description="the visitor's query string goes onto the destination, merged with its "
        "own (the visitor's value wins a conflict), as Shlink does by default",
    )
    forwardPath: bool | None = Field(
        default=False,
        description="/{key}/more/path redirects to the destination's path + /more/path",
    )


class PatchLink(BaseModel):
    """``PATCH /v1/links/{key}`` body: any subset; ``null`` clears expiry, clicks, password."""

    model_config = ConfigDict(extra="forbid")

    longUrl: str | None = Field(default=None, max_length=2048)
    expiresAt: str | float | None = None
    maxClicks: int | None = Field(default=None, ge=1, le=1_000_000_000)
    password: str | None = Field(default=None, min_length=1, max_length=128)
    redirectType: Literal[301, 302] | None = None
    maxAge: int | None = Field(default=None, ge=0, le=86_400)
    tags: list[str] | None = Field(default=None, max_length=10)
    status: Literal["ACTIVE", "DISABLED"] | None = None
    forwardQuery: bool | None = None
    forwardPath: bool | None = None


class LinkCreated(BaseModel):
    """``201`` from ``POST /v1/links`` (also replayed for a repeated Idempotency-Key)."""

    key: str
    shortUrl: str
    longUrl: str
    expiresAt: str | None
    createdAt: str
    maxClicks: int | None
    redirectType: int
    maxAge: int | None
    passwordProtected: bool
    tags: list[str]
    status: str
    forwardQuery: bool = True
    forwardPath: bool = False
    previewUrl: str
    qrPng: str
    qrSvg: str


class LinkView(BaseModel):
    """A link as ``GET /v1/links/{key}`` shows it (owner-only fields omitted for others)."""

    key: str
    shortUrl: str
    longUrl: str | None
    status: Literal["ACTIVE", "DISABLED", "DELETED", "EXPIRED"]
    createdAt: str
    expiresAt: str | None
    redirectType: int
    passwordProtected: bool
    scanVerdict: str
    scanReasons: list[str] = []
    alias: bool | None = None
    updatedAt: str | None = None
    maxClicks: int | None = None
    clicksUsed: int | None = None
    clicksRemaining: int | None = None
    maxAge: int | None = None
    tags: list[str] | None = None
    statusReason: str | None = None
    previewUrl: str | None = None
    forwardQuery: bool | None = None
    forwardPath: bool | None = None


class LinkPage(BaseModel):
    """``GET /v1/links``: newest first; pass ``nextCursor`` as ``cursor`` for the next page."""

    links: list[LinkView]
    nextCursor: str | None


class ImportRow(BaseModel):
    """One CSV row's outcome."""

    row: int
    status: int
    key: str | None = None
    shortUrl: str | None = None
    error: str | None = None
    message: str | None = None


class ImportResult(BaseModel):
    """``POST /v1/links/import``: per-row results."""

    created: int
    failed: int
    rows: list[ImportRow]


class AuditEntry(BaseModel):
    """One change to a link."""

    seq: int
    at: str
    actor: str | None
    action: str
    oldUrl: str | None
    newUrl: str | None
    detail: dict


class Token(BaseModel):
    """A fresh owner token; keep it secret — the server stores only its hash."""

    token: str
    ownerId: str


class TokenRevoked(BaseModel):
    """A revoked owner token: every endpoint answers it 401 ``TOKEN_REVOKED`` from now on."""

    revoked: bool
    ownerId: str
