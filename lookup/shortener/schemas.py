"""Pydantic models that document the shortener's HTTP contract in the OpenAPI schema.

The routes validate bodies themselves (:meth:`ShortenerService.parse_create`), so
each refusal gets its specific error code (``INVALID_URL``, ``RESERVED_ALIAS``, ...);
these models only describe the shapes for ``/docs`` and for schema-driven testing.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from lookup.shortener.rules.schemas import RedirectRuleView


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
    domain: str | None = Field(
        default=None,
        max_length=253,
        description="the short domain the link lives on (one of the server's; default: the "
        "default domain); the same alias may exist on two domains",
        examples=["go.example"],
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
    domain: str | None = Field(default=None, description="the short domain the link lives on")
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


class ClickSummary(BaseModel):
    """A list item's click counts, from the counters the stats endpoint reads."""

    total: int = Field(description="every click, bots and link previews included")
    human: int = Field(description="clicks by people (bots and previews left out)")
    lastClickAt: str | None = Field(
        description="the start of the minute of the newest click (of its hour once minute "
        "counts are older than their retention, 7 days); null if never clicked"
    )


class LinkView(BaseModel):
    """A link as ``GET /v1/links/{key}`` shows it (owner-only fields omitted for others)."""

    key: str
    domain: str | None = Field(default=None, description="the short domain the link lives on")
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
    redirectRules: list[RedirectRuleView] | None = None
    clicks: ClickSummary | None = Field(
        default=None, description="in list items: click counts (null with analytics off)"
    )


class LinkPage(BaseModel):
    """``GET /v1/links``: one page; pass ``nextCursor`` as ``cursor`` for the next page."""

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
    format: str | None = Field(
        default=None, description="the CSV's format, told by its header: lookup, shlink, bitly"
    )


LIST_DESCRIPTION = (
    "Shlink's GET /short-urls in this API's words: `search` (Shlink's searchTerm; case-"
    "insensitive, in the key and the destination, also as percent-encoded), `sort` = "
    "`created` (default) | `clicks` | `lastClick` with `order` = `desc` (default) | `asc` "
    "(Shlink's orderBy=field-DIR; links never clicked come last in a lastClick sort), "
    "`createdFrom` (inclusive) and `createdTo` (exclusive; a bare date includes that whole UTC "
    "day) as ISO 8601 (Shlink's startDate/endDate), besides `tag` and `status`. Each item "
    "carries `clicks` (total, human, lastClickAt) from the counters the stats endpoint reads. "
    "`nextCursor` is signed and holds the sort and the filters: a cursor used with another "
    "sort or other filters is refused (400 CURSOR_MISMATCH). Unknown parameters: 400 "
    "UNKNOWN_PARAMETER."
)


class BulkItem(BaseModel):
    """One item's outcome in a bulk create."""

    index: int
    status: int = Field(description="201 made; 4xx refused as a single create would be; 0 not made")
    key: str | None = None
    shortUrl: str | None = None
    error: str | None = None
    message: str | None = None


class BulkResult(BaseModel):
    """``POST /v1/links/bulk``: what was made, item by item."""

    atomic: bool
    created: int
    failed: int
    items: list[BulkItem]


BULK_DESCRIPTION = (
    'A JSON array of create bodies (as POST /v1/links takes), or {"links": [...], '
    '"atomic": true}. Every item is checked exactly as a single create is (URL policy, '
    "blocklist, aliases; the scanner sees each new link). Per item (default): 200 with each "
    "item's result. atomic: true — all or nothing: 201 when every link was made, else 400 or "
    "409 BULK_REJECTED with each item's result and nothing made. More items than the setting "
    "shortener_bulk_max (default 1000): 413 TOO_MANY_ITEMS. Needs an owner token."
)
#: One bulk item: an object, its fields checked as POST /v1/links checks them, item by item
#: (a refused field is that item's result, not the request's).
_BULK_ITEM = {
    "type": "object",
    "description": "a create body, as POST /v1/links takes (see CreateLink)",
    "example": {"longUrl": "https://example.com/a"},
}
BULK_BODY_SCHEMA = {
    "oneOf": [
        {"type": "array", "items": _BULK_ITEM, "minItems": 1},
        {
            "type": "object",
            "properties": {
                "links": {"type": "array", "items": _BULK_ITEM, "minItems": 1},
                "atomic": {"type": "boolean"},
            },
            "required": ["links"],
            "additionalProperties": False,
        },
    ]
}


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


class DomainEntry(BaseModel):
    """One short domain and its fallback redirect (``GET /v1/domains``)."""

    domain: str
    isDefault: bool
    invalidShortUrlRedirect: str | None = None


class DomainRedirect(BaseModel):
    """``PUT /v1/shortener/domains/redirect`` body: a domain's fallback redirect, or null
    to remove it."""

    model_config = ConfigDict(extra="forbid")

    domain: str = Field(max_length=253, examples=["go.example"])
    invalidShortUrlRedirect: str | None = Field(
        default=None, max_length=2048, examples=["https://go.example/not-found"]
    )
