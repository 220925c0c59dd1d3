"""Request parsing at the HTTP edge: JSON bodies, headers and query strings → commands.

Each refusal is a domain error (:mod:`lookup.errors`) with the API's specific code
(``INVALID_URL``, ``UNKNOWN_FIELD``, ``INVALID_TAGS``, ...); the server maps it to HTTP.
:class:`RequestParser` holds what parsing needs — the URL policy, the reserved words,
the key that digests bodies for Idempotency-Keys, a clock — and produces the
:class:`~lookup.shortener.service.CreateRequest` and
:class:`~lookup.shortener.service.LinkPatch` commands the service takes.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
import time
from collections.abc import Callable
from typing import Any

from lookup import errors
from lookup.shortener.keys import AliasRejected, ReservedWords, validate_alias
from lookup.shortener.links import IdempotencyClaim
from lookup.shortener.model import (
    DEFAULT_PERMANENT_MAX_AGE,
    MAX_PERMANENT_MAX_AGE,
    InvalidTime,
    Link,
    Status,
    parse_time,
)
from lookup.shortener.passwords import MAX_PASSWORD_LENGTH
from lookup.shortener.service import CreateRequest, LinkPatch
from lookup.shortener.urls import UrlPolicy, UrlRejected

CREATE_FIELDS = frozenset(
    {
        "longUrl",
        "customAlias",
        "expiresAt",
        "maxClicks",
        "password",
        "redirectType",
        "maxAge",
        "tags",
        "forwardQuery",
        "forwardPath",
        "domain",
    }
)
PATCH_FIELDS = frozenset(
    {
        "longUrl",
        "expiresAt",
        "maxClicks",
        "password",
        "redirectType",
        "maxAge",
        "tags",
        "status",
        "forwardQuery",
        "forwardPath",
    }
)
#: The forwarding switches: API field → ``Link`` attribute.
FORWARD_FIELDS = {"forwardQuery": "forward_query", "forwardPath": "forward_path"}
MAX_TAGS = 10
MAX_CLICKS_LIMIT = 1_000_000_000
_TAG = re.compile(r"[a-z0-9][a-z0-9_-]{0,31}")
_IDEMPOTENCY_KEY = re.compile(r"[\x21-\x7e]{1,255}")
_TOKEN = re.compile(r"[\x21-\x7e]{16,512}")


def _bad(code: str, message: str) -> errors.InvalidInput:
    return errors.InvalidInput(message, code=code)


def owner_id(token: str) -> str:
    """The owner id for a bearer token: its SHA-256 (the token itself is never stored)."""
    if not _TOKEN.fullmatch(token):
        raise errors.Unauthorized(
            "a bearer token is 16 to 512 printable ASCII characters", code="INVALID_TOKEN"
        )
    return hashlib.sha256(token.encode("ascii")).hexdigest()


def owner_from_header(value: str | None) -> str | None:
    """Owner id from an ``Authorization`` header value; None when absent, 401 when malformed."""
    if value is None:
        return None
    scheme, _, token = value.strip().partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise errors.Unauthorized("use Authorization: Bearer <owner token>", code="INVALID_TOKEN")
    return owner_id(token.strip())


def require_owner_header(value: str | None) -> str:
    """Owner id from an ``Authorization`` header that must be there (401 otherwise)."""
    owner = owner_from_header(value)
    if owner is None:
        raise errors.Unauthorized("send Authorization: Bearer <owner token>", code="UNAUTHORIZED")
    return owner


def _int_field(value: object, name: str, code: str, lo: int, hi: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise _bad(code, f"{name} must be an integer")
    if not lo <= value <= hi:
        raise _bad(code, f"{name} must be between {lo} and {hi}")
    return value


def parse_tags(value: object) -> tuple[str, ...]:
    """A list of up to 10 tags, each 1–32 of ``a-z 0-9 - _`` (lower-cased), de-duplicated."""
    if not isinstance(value, list):
        raise _bad("INVALID_TAGS", "tags must be a list of strings")
    if len(value) > MAX_TAGS:
        raise _bad("INVALID_TAGS", f"at most {MAX_TAGS} tags")
    out: list[str] = []
    for tag in value:
        if not isinstance(tag, str) or not _TAG.fullmatch(tag.lower()):
            raise _bad("INVALID_TAGS", "each tag is 1 to 32 of a-z, 0-9, '-' and '_'")
        if tag.lower() not in out:
            out.append(tag.lower())
    return tuple(out)


def query_time(text: str) -> float:
    """A time from a query string: epoch seconds (digits) or ISO 8601."""
    if re.fullmatch(r"\d{1,12}(?:\.\d{1,6})?", text.strip()):
        return parse_time(float(text))
    return parse_time(text)


def _password_field(value: object) -> str:
    if not isinstance(value, str) or not 1 <= len(value) <= MAX_PASSWORD_LENGTH:
        raise _bad(
            "INVALID_PASSWORD",
            f"password must be a string of 1 to {MAX_PASSWORD_LENGTH} characters",
        )
    if any(0xD800 <= ord(c) <= 0xDFFF for c in value):
        raise _bad("INVALID_PASSWORD", "password contains invalid characters")
    return value


def _redirect_type(value: object) -> int:
    if isinstance(value, bool) or value not in (301, 302):
        raise _bad("INVALID_REDIRECT_TYPE", "redirectType must be 301 or 302")
    return value  # type: ignore[return-value]


def _forward_switches(body: dict[str, Any]) -> dict[str, bool]:
    """The forwarding switches ``body`` sets (``forwardQuery``, ``forwardPath``): booleans."""
    out = {}
    for name, attr in FORWARD_FIELDS.items():
        if name in body and body[name] is not None:
            if not isinstance(body[name], bool):
                raise _bad("INVALID_FORWARD", f"{name} must be true or false")
            out[attr] = body[name]
    return out


def _unknown(body: dict[str, Any], allowed: frozenset[str]) -> None:
    unknown = set(body) - allowed
    if unknown:
        raise _bad("UNKNOWN_FIELD", f"unknown field(s): {', '.join(sorted(map(str, unknown)))}")


def encode_cursor(link: Link) -> str:
    """The opaque cursor of the page after ``link``."""
    raw = json.dumps([link.created_at, link.key]).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[float, str]:
    """``(created_at, key)`` from a cursor this server handed out; 400 otherwise."""
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        created_at, key = json.loads(base64.urlsafe_b64decode(padded.encode("ascii")))
        if isinstance(created_at, bool) or not isinstance(created_at, (int, float)):
            raise ValueError("bad time")
        if not isinstance(key, str):
            raise ValueError("bad key")
        return float(created_at), key
    except (ValueError, TypeError, UnicodeError):
        raise _bad("INVALID_CURSOR", "cursor is not one this server handed out") from None


def parse_status_filter(status: str | None) -> Status | None:
    """A listing's ``status=`` filter (any case) or None."""
    if status is None:
        return None
    try:
        return Status(status.upper())
    except ValueError:
        raise _bad("INVALID_STATUS", f"status is one of {[s.value for s in Status]}") from None


def stats_range(
    start: str | None, end: str | None, granularity: str, now: float
) -> tuple[float, float]:
    """``[from, to)`` of a stats request as epoch seconds, checked against the limits.

    ``to`` defaults to the close of the bucket holding ``now`` (so it is included);
    ``from`` to 24 hours (by hour) or one hour (by minute) before it.
    """
    from lookup.shortener.analytics.aggregate import GRAINS, MAX_RANGE_S

    if granularity not in GRAINS:
        raise _bad("INVALID_GRANULARITY", "granularity is minute or hour")
    size = GRAINS[granularity][1]
    try:
        end_ts = query_time(end) if end else (now // size + 1) * size
        default_span = 86_400 if granularity == "hour" else 3_600
        start_ts = query_time(start) if start else end_ts - default_span
    except InvalidTime as exc:
        raise _bad("INVALID_RANGE", f"from/to: {exc}") from None
    if start_ts >= end_ts:
        raise _bad("INVALID_RANGE", "from must be before to")
    if end_ts - start_ts > MAX_RANGE_S[granularity]:
        days = MAX_RANGE_S[granularity] // 86_400
        raise _bad("RANGE_TOO_LARGE", f"by {granularity}, ask for at most {days} days")
    return start_ts, end_ts


class RequestParser:
    """Turns the API's JSON into the service's commands, with every field's own refusal."""

    def __init__(
        self,
        urls: UrlPolicy,
        reserved: ReservedWords,
        idempotency_key: bytes,
        *,
        clock: Callable[[], float] = time.time,
        domains: Callable[[object], str] | None = None,
    ) -> None:
        self.urls = urls
        self.reserved = reserved
        #: The short domain a create names → its stored name ("" = default), or a refusal.
        self.domain_of = domains
        self._idem_key = idempotency_key
        #: Signs the link list's cursors (derived, so no new secret to keep).
        self.cursor_key = hmac.new(idempotency_key, b"list-cursor", hashlib.sha256).digest()
        self.clock = clock

    def _url(self, value: object) -> str:
        try:
            return self.urls.check(value)
        except UrlRejected as exc:
            raise _bad(exc.code, exc.message) from None

    def create(self, body: dict[str, Any]) -> CreateRequest:
        """Validate a create body (types, ranges, URL safety, alias rule) or raise."""
        _unknown(body, CREATE_FIELDS)
        if "longUrl" not in body:
            raise _bad("INVALID_URL", "longUrl is required")
        long_url = self._url(body["longUrl"])
        alias = body.get("customAlias")
        if alias is not None:
            try:
                alias = validate_alias(alias, self.reserved)
            except AliasRejected as exc:
                raise _bad(exc.code, exc.message) from None
        expires_at = None
        if body.get("expiresAt") is not None:
            try:
                expires_at = parse_time(body["expiresAt"])
            except InvalidTime as exc:
                raise _bad("INVALID_EXPIRY", f"expiresAt: {exc}") from None
        max_clicks = None
        if body.get("maxClicks") is not None:
            max_clicks = _int_field(
                body["maxClicks"], "maxClicks", "INVALID_MAX_CLICKS", 1, MAX_CLICKS_LIMIT
            )
        password = None
        if body.get("password") is not None:
            password = _password_field(body["password"])
        redirect_type = 302
        if body.get("redirectType") is not None:
            redirect_type = _redirect_type(body["redirectType"])
        max_age = None
        if body.get("maxAge") is not None:
            max_age = _int_field(
                body["maxAge"], "maxAge", "INVALID_MAX_AGE", 0, MAX_PERMANENT_MAX_AGE
            )
            if redirect_type != 301:
                raise _bad("INVALID_MAX_AGE", "maxAge applies only to redirectType 301")
        elif redirect_type == 301:
            max_age = DEFAULT_PERMANENT_MAX_AGE
        tags: tuple[str, ...] = ()
        if body.get("tags") is not None:
            tags = parse_tags(body["tags"])
        return CreateRequest(
            long_url,
            alias,
            expires_at,
            max_clicks,
            password,
            redirect_type,
            max_age,
            tags,
            **_forward_switches(body),
            domain=self._domain(body.get("domain")),
        )

    def _domain(self, value: object) -> str:
        if self.domain_of is not None:
            return self.domain_of(value)
        if value is None:
            return ""
        raise _bad("INVALID_DOMAIN", "this server has only its default short domain")

    def claim(self, owner: str | None, key: str, body: dict[str, Any]) -> IdempotencyClaim:
        """The Idempotency-Key claim of a create: scoped per owner (anonymous callers share
        one scope), with a keyed digest of the canonical body."""
        if not _IDEMPOTENCY_KEY.fullmatch(key):
            raise _bad(
                "INVALID_IDEMPOTENCY_KEY", "Idempotency-Key is 1 to 255 printable ASCII characters"
            )
        try:
            canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
        except (ValueError, TypeError, RecursionError):
            raise _bad("MALFORMED_JSON", "the body cannot be canonicalised") from None
        digest = hmac.new(self._idem_key, canonical.encode(), hashlib.sha256).hexdigest()
        return IdempotencyClaim(owner or "anonymous", key, digest)

    def check_patch(self, patch: object) -> dict[str, Any]:
        """The patch body if it names at least one known field."""
        if not isinstance(patch, dict) or not patch:
            raise _bad("EMPTY_PATCH", "send at least one field to change")
        _unknown(patch, PATCH_FIELDS)
        return patch

    def patch(self, patch: dict[str, Any], link: Link) -> LinkPatch:
        """Validate a patch body for ``link`` (its redirect type decides whether ``maxAge``
        may be set), field by field in a fixed order."""
        fields: dict[str, Any] = {}
        if "longUrl" in patch:
            fields["long_url"] = self._url(patch["longUrl"])
        if "tags" in patch:
            fields["tags"] = parse_tags(patch["tags"] if patch["tags"] is not None else [])
        if "expiresAt" in patch:
            if patch["expiresAt"] is None:
                fields["expires_at"] = None
            else:
                try:
                    expires_at = parse_time(patch["expiresAt"])
                except InvalidTime as exc:
                    raise _bad("INVALID_EXPIRY", f"expiresAt: {exc}") from None
                if expires_at <= self.clock():
                    raise _bad("INVALID_EXPIRY", "expiresAt is in the past")
                fields["expires_at"] = expires_at
        if "maxClicks" in patch:
            value = patch["maxClicks"]
            fields["max_clicks"] = (
                None
                if value is None
                else _int_field(value, "maxClicks", "INVALID_MAX_CLICKS", 1, MAX_CLICKS_LIMIT)
            )
        if "password" in patch:
            fields["password"] = (
                None if patch["password"] is None else _password_field(patch["password"])
            )
        redirect_type = link.redirect_type
        if "redirectType" in patch:
            redirect_type = fields["redirect_type"] = _redirect_type(patch["redirectType"])
        if patch.get("maxAge") is not None:
            if redirect_type != 301:
                raise _bad("INVALID_MAX_AGE", "maxAge applies only to redirectType 301")
            fields["max_age"] = _int_field(
                patch["maxAge"], "maxAge", "INVALID_MAX_AGE", 0, MAX_PERMANENT_MAX_AGE
            )
        if "status" in patch:
            wanted = patch["status"]
            if wanted not in ("ACTIVE", "DISABLED"):
                raise _bad(
                    "INVALID_STATUS", "status may be set to ACTIVE or DISABLED (DELETE to delete)"
                )
            fields["status"] = Status(wanted)
        fields.update(_forward_switches(patch))
        return LinkPatch(**fields)


__all__ = [
    "CREATE_FIELDS",
    "FORWARD_FIELDS",
    "MAX_CLICKS_LIMIT",
    "MAX_TAGS",
    "PATCH_FIELDS",
    "RequestParser",
    "decode_cursor",
    "encode_cursor",
    "owner_from_header",
    "owner_id",
    "parse_status_filter",
    "parse_tags",
    "query_time",
    "require_owner_header",
    "stats_range",
]
