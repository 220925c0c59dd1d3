"""The shortener as one object: create, read, change and redirect links, with every check.

:class:`ShortenerService` wires the parts together — key minting
(:mod:`~lookup.shortener.keys`), URL safety (:mod:`~lookup.shortener.urls`), the link
store (write path), the resolver (read path) and the rate limiters — and is what the
HTTP layer, the dashboard and the notebooks call. Its methods raise
:class:`ShortenerError` (an :class:`~lookup.kit.http.ApiError`) with the API's error
codes, so every caller gets the same answers.

Seams for the parts built elsewhere:

* ``service.on_click`` — called by the redirect with a
  :class:`~lookup.shortener.model.ClickContext` for every redirect it serves. A no-op
  by default; analytics plugs a bounded buffer in. It must not block; if it raises,
  the error is counted and the redirect goes on.
* ``service.listeners`` — ``fn(event, link)`` called after ``created``, ``retargeted``,
  ``deleted``, ``disabled``, ``enabled`` and ``expired`` commits (the scanner queues
  new and retargeted links from here). Errors are logged, never raised.
* ``service.disable(key, reason)`` / ``service.set_scan_verdict(...)`` — for the scanner:
  the change is stored and purged from every cache layer at once.
"""

from __future__ import annotations

import asyncio
import base64
import csv
import hashlib
import hmac
import io
import json
import logging
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lookup import settings
from lookup.kit.cache import SharedCache
from lookup.kit.http import ApiError
from lookup.kit.ids import FeistelPermutation, IdAllocator, load_or_create_secret
from lookup.kit.ratelimit import RateLimiter, RatePolicy, open_rate_limiter
from lookup.shortener.keys import (
    KEY_SPACE,
    AliasRejected,
    KeyMinter,
    ReservedWords,
    validate_alias,
)
from lookup.shortener.model import (
    DEFAULT_PERMANENT_MAX_AGE,
    MAX_PERMANENT_MAX_AGE,
    SCAN_VERDICTS,
    ClickContext,
    InvalidTime,
    Link,
    Outcome,
    Status,
    format_time,
    parse_time,
    verdict,
)
from lookup.shortener.passwords import MAX_PASSWORD_LENGTH, hash_password, verify_password
from lookup.shortener.resolver import Resolver
from lookup.shortener.store import (
    Gone,
    IdempotencyClaim,
    IdempotencyMismatch,
    KeyTaken,
    LinkMissing,
    LinkStore,
    NotOwner,
)
from lookup.shortener.urls import Blocklist, UrlPolicy, UrlRejected

if TYPE_CHECKING:
    from lookup.shortener.analytics import ClickAnalytics
    from lookup.shortener.scanner import Scanner

log = logging.getLogger("lookup.shortener")

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
    }
)
PATCH_FIELDS = frozenset(
    {"longUrl", "expiresAt", "maxClicks", "password", "redirectType", "maxAge", "tags", "status"}
)
MAX_TAGS = 10
MAX_CLICKS_LIMIT = 1_000_000_000
MAX_IMPORT_ROWS = 1_000
_TAG = re.compile(r"[a-z0-9][a-z0-9_-]{0,31}")
_IDEMPOTENCY_KEY = re.compile(r"[\x21-\x7e]{1,255}")
_TOKEN = re.compile(r"[\x21-\x7e]{16,512}")
_CSV_COLUMNS = (
    "key",
    "shortUrl",
    "longUrl",
    "customAlias",
    "status",
    "createdAt",
    "expiresAt",
    "maxClicks",
    "clicksUsed",
    "redirectType",
    "maxAge",
    "passwordProtected",
    "tags",
)


class ShortenerError(ApiError):
    """A refusal with an HTTP status and an API error code (``ALIAS_TAKEN``, ...)."""


@dataclass
class Limits:
    """Token-bucket policies; anonymous creation is the strictest.

    ``anonymous``: creates per client IP without a token. ``owner``: creates per owner
    token. ``ip``: creates per client IP with a token (stops rotating tokens).
    ``misses``: store lookups of unknown keys per client IP (a scraper guessing keys).
    ``passwords``: password attempts per client IP and link.
    """

    anonymous: RatePolicy = field(default_factory=lambda: RatePolicy.per(20, 60))
    owner: RatePolicy = field(default_factory=lambda: RatePolicy.per(600, 60))
    ip: RatePolicy = field(default_factory=lambda: RatePolicy.per(1200, 60))
    misses: RatePolicy = field(default_factory=lambda: RatePolicy.per(50, 1, burst=500))
    passwords: RatePolicy = field(default_factory=lambda: RatePolicy.per(10, 60))

    _SETTINGS = {
        "anonymous": "shortener_rate_anon",
        "owner": "shortener_rate_owner",
        "ip": "shortener_rate_ip",
        "misses": "shortener_rate_misses",
        "passwords": "shortener_rate_password",
    }

    @classmethod
    def from_env(cls, environ: dict[str, str] | None = None) -> Limits:
        """Defaults, overridden by ``LOOKUP_SHORTENER_RATE_*`` = ``COUNT/SECONDS[:BURST]``."""
        limits = cls()
        for attr, name in cls._SETTINGS.items():
            text = settings.get(name, environ)
            if text:
                setattr(limits, attr, RatePolicy.parse(text))
        return limits


@dataclass
class ShortenerConfig:
    """Everything a :class:`ShortenerService` needs; tests inject clocks and small limits."""

    data_dir: Path
    base_url: str = "http://127.0.0.1:8000"
    block_size: int = 10_000
    cache_size: int = 100_000
    cache_ttl_s: float = 60.0
    negative_ttl_s: float = 30.0
    shared: SharedCache | None = None
    limits: Limits = field(default_factory=Limits)
    wall_clock: Callable[[], float] = time.time
    mono_clock: Callable[[], float] = time.monotonic
    sweep_interval_s: float = 60.0
    trust_forwarded_for: bool = False
    synchronous: str = "NORMAL"
    analytics: bool = True
    aggregator: str = "thread"
    aggregator_nice: int = 19
    scanner: bool = True

    @classmethod
    def from_env(cls, data_dir: Path, base_url: str) -> ShortenerConfig:
        """Config for ``lookup serve``: limits from ``LOOKUP_SHORTENER_RATE_*``,
        ``LOOKUP_TRUST_FORWARDED_FOR=1`` to take the client IP from ``X-Forwarded-For``,
        ``LOOKUP_SHORTENER_ANALYTICS=0`` / ``LOOKUP_SHORTENER_SCANNER=0`` to run without
        click analytics / the safety scanner (for comparisons). The click aggregator runs
        in its own process at CPU priority ``LOOKUP_SHORTENER_AGGREGATOR_NICE`` (19),
        unless ``LOOKUP_SHORTENER_AGGREGATOR`` says ``thread`` (in this process) or
        ``external`` (not here: ``python -m lookup.shortener.analytics`` runs it)."""
        return cls(
            data_dir=Path(data_dir),
            base_url=base_url,
            limits=Limits.from_env(),
            trust_forwarded_for=settings.get("trust_forwarded_for"),
            analytics=settings.get("shortener_analytics"),
            aggregator=settings.get("shortener_aggregator"),
            aggregator_nice=settings.get("shortener_aggregator_nice"),
            scanner=settings.get("shortener_scanner"),
        )


@dataclass(frozen=True)
class CreateRequest:
    """A validated create body."""

    long_url: str
    alias: str | None = None
    expires_at: float | None = None
    max_clicks: int | None = None
    password: str | None = None
    redirect_type: int = 302
    max_age: int | None = None
    tags: tuple[str, ...] = ()


@dataclass(frozen=True)
class Created:
    """The response body of a create and whether it replays an earlier one."""

    body: dict[str, Any]
    replayed: bool
    link: Link | None


def owner_id(token: str) -> str:
    """The owner id for a bearer token: its SHA-256 (the token itself is never stored)."""
    if not _TOKEN.fullmatch(token):
        raise ShortenerError(
            401, "INVALID_TOKEN", "a bearer token is 16 to 512 printable ASCII characters"
        )
    return hashlib.sha256(token.encode("ascii")).hexdigest()


def _bad(code: str, message: str, status: int = 400) -> ShortenerError:
    return ShortenerError(status, code, message)


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


def _query_time(text: str) -> float:
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


class ShortenerService:
    """The URL shortener's public operations over one data directory."""

    def __init__(self, config: ShortenerConfig) -> None:
        self.config = config
        self.base_url = config.base_url.rstrip("/")
        self.dir = Path(config.data_dir) / "shortener"
        self.dir.mkdir(parents=True, exist_ok=True)
        secret = load_or_create_secret(self.dir / "secret.key")
        self._idem_key = hmac.new(secret, b"idempotency-body", hashlib.sha256).digest()
        self._ip_key = hmac.new(secret, b"client-ip", hashlib.sha256).digest()
        self.clock = config.wall_clock
        db_path = self.dir / "links.sqlite3"
        self.store = LinkStore(db_path, synchronous=config.synchronous, clock=config.wall_clock)
        self.allocator = IdAllocator(
            db_path, "links", block_size=config.block_size, limit=KEY_SPACE
        )
        self.reserved = ReservedWords()
        permutation = FeistelPermutation(
            KEY_SPACE, hmac.new(secret, b"feistel-keys", hashlib.sha256).digest()
        )
        self.minter = KeyMinter(self.allocator, permutation, self.reserved)
        self.blocklist = Blocklist(self.dir / "blocklist.txt")
        self.blocklist.write_template()
        self.urls = UrlPolicy([self.base_url], self.blocklist)
        self.resolver = Resolver(
            self.store,
            cache_size=config.cache_size,
            cache_ttl_s=config.cache_ttl_s,
            negative_ttl_s=config.negative_ttl_s,
            shared=config.shared,
            clock=config.mono_clock,
        )
        limits = config.limits
        mono = config.mono_clock
        def limiter(policy: RatePolicy, name: str) -> RateLimiter:
            return open_rate_limiter("memory:", policy, name=name, clock=mono)  # in-process

        self.limit_anonymous = limiter(limits.anonymous, "anonymous")
        self.limit_owner = limiter(limits.owner, "owner")
        self.limit_ip = limiter(limits.ip, "ip")
        self.limit_misses = limiter(limits.misses, "misses")
        self.limit_passwords = limiter(limits.passwords, "passwords")
        self.on_click: Callable[[ClickContext], None] = lambda ctx: None
        self.listeners: list[Callable[[str, Link], None]] = []
        self.clicks_emitted = 0
        self.click_hook_errors = 0
        self.generated_key_collisions = 0
        self.created = 0
        self.analytics: ClickAnalytics | None = None  # set by ClickAnalytics.attach
        self.scanner: Scanner | None = None  # set when the scanner is mounted

    def close(self) -> None:
        """Release the database connections."""
        self.allocator.close()
        self.store.close()

    # -- shared helpers ----------------------------------------------------------------

    def short_url(self, key: str) -> str:
        """The public short URL for ``key``."""
        return f"{self.base_url}/{key}"

    def effective_status(self, link: Link, now: float | None = None) -> Status:
        """The status a client sees: an ACTIVE link past its date or clicks is EXPIRED."""
        if link.status is Status.ACTIVE or link.status is Status.DISABLED:
            outcome = verdict(link, self.clock() if now is None else now)
            if outcome is Outcome.EXPIRED:
                return Status.EXPIRED
        return link.status

    def public_view(self, link: Link) -> dict[str, Any]:
        """What anybody may see about a link (the redirect reveals the URL anyway)."""
        status = self.effective_status(link)
        hidden = bool(link.password_hash) or status is not Status.ACTIVE
        return {
            "key": link.key,
            "shortUrl": self.short_url(link.key),
            "longUrl": None if hidden else link.long_url,
            "status": status.value,
            "createdAt": format_time(link.created_at),
            "expiresAt": format_time(link.expires_at),
            "redirectType": link.redirect_type,
            "passwordProtected": bool(link.password_hash),
            "scanVerdict": link.scan_verdict,
            "scanReasons": list(link.scan_reasons),
        }

    def owner_view(self, link: Link) -> dict[str, Any]:
        """Everything about a link, for its owner."""
        view = self.public_view(link)
        view.update(
            {
                "longUrl": link.long_url or None,
                "alias": link.alias,
                "updatedAt": format_time(link.updated_at),
                "maxClicks": link.max_clicks,
                "clicksUsed": link.clicks if link.max_clicks is not None else None,
                "clicksRemaining": link.clicks_remaining,
                "maxAge": link.max_age,
                "tags": list(link.tags),
                "statusReason": link.status_reason,
                "previewUrl": self.short_url(link.key) + "+",
            }
        )
        return view

    def _created_body(self, link: Link) -> dict[str, Any]:
        return {
            "key": link.key,
            "shortUrl": self.short_url(link.key),
            "longUrl": link.long_url,
            "expiresAt": format_time(link.expires_at),
            "createdAt": format_time(link.created_at),
            "maxClicks": link.max_clicks,
            "redirectType": link.redirect_type,
            "maxAge": link.max_age,
            "passwordProtected": bool(link.password_hash),
            "tags": list(link.tags),
            "status": link.status.value,
            "previewUrl": self.short_url(link.key) + "+",
            "qrPng": f"{self.base_url}/v1/links/{link.key}/qr.png",
            "qrSvg": f"{self.base_url}/v1/links/{link.key}/qr.svg",
        }

    def _notify(self, event: str, link: Link) -> None:
        for listener in list(self.listeners):
            try:
                listener(event, link)
            except Exception:
                log.exception("shortener listener failed on %s %s", event, link.key)

    def hash_ip(self, ip: str | None) -> str | None:
        """A keyed hash of a client IP (for analytics and audit; the raw IP is not kept)."""
        if ip is None:
            return None
        digest = hmac.new(self._ip_key, ip.encode("utf-8", "replace"), hashlib.sha256)
        return digest.hexdigest()[:32]

    # -- create ------------------------------------------------------------------------

    def parse_create(self, body: dict[str, Any]) -> CreateRequest:
        """Validate a create body (types, ranges, URL safety, alias rule) or raise."""
        unknown = set(body) - CREATE_FIELDS
        if unknown:
            raise _bad("UNKNOWN_FIELD", f"unknown field(s): {', '.join(sorted(map(str, unknown)))}")
        if "longUrl" not in body:
            raise _bad("INVALID_URL", "longUrl is required")
        try:
            long_url = self.urls.check(body["longUrl"])
        except UrlRejected as exc:
            raise _bad(exc.code, exc.message) from None
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
            redirect_type = body["redirectType"]
            if isinstance(redirect_type, bool) or redirect_type not in (301, 302):
                raise _bad("INVALID_REDIRECT_TYPE", "redirectType must be 301 or 302")
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
            long_url, alias, expires_at, max_clicks, password, redirect_type, max_age, tags
        )

    def _body_digest(self, body: dict[str, Any]) -> str:
        try:
            canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
        except (ValueError, TypeError, RecursionError):
            raise _bad("MALFORMED_JSON", "the body cannot be canonicalised") from None
        return hmac.new(self._idem_key, canonical.encode(), hashlib.sha256).hexdigest()

    def create(
        self,
        body: dict[str, Any],
        *,
        owner: str | None = None,
        idempotency_key: str | None = None,
    ) -> Created:
        """Create a link from a create body; blocking (run it in a worker thread on a loop).

        Raises :class:`ShortenerError`: 400 for invalid input, 409 ``ALIAS_TAKEN``, 422
        ``IDEMPOTENCY_KEY_REUSED`` when an Idempotency-Key comes back with another body.
        Idempotency-Keys are scoped per owner; anonymous callers share one scope (keys
        are meant to be random UUIDs) and are remembered for 24 hours.
        """
        if not isinstance(body, dict):
            raise _bad("MALFORMED_JSON", "the body must be a JSON object")
        claim = None
        if idempotency_key is not None:
            if not _IDEMPOTENCY_KEY.fullmatch(idempotency_key):
                raise _bad(
                    "INVALID_IDEMPOTENCY_KEY",
                    "Idempotency-Key is 1 to 255 printable ASCII characters",
                )
            claim = IdempotencyClaim(owner or "anonymous", idempotency_key, self._body_digest(body))
            try:
                replay = self.store.find_replay(claim)
            except IdempotencyMismatch:
                raise self._idempotency_reused() from None
            if replay is not None:
                return Created(replay, True, None)
        req = self.parse_create(body)
        now = self.clock()
        if req.expires_at is not None and req.expires_at <= now:
            raise _bad("INVALID_EXPIRY", "expiresAt is in the past")
        password_hash = hash_password(req.password) if req.password is not None else None
        for _attempt in range(10):
            if req.alias is not None:
                ident, key = None, req.alias
            else:
                ident, key = self.minter.mint()
            link = Link(
                key=key,
                id=ident,
                alias=req.alias is not None,
                long_url=req.long_url,
                owner=owner,
                created_at=now,
                updated_at=now,
                expires_at=req.expires_at,
                max_clicks=req.max_clicks,
                redirect_type=req.redirect_type,
                max_age=req.max_age,
                password_hash=password_hash,
                tags=req.tags,
            )
            try:
                result = self.store.create(
                    link, idempotency=claim, render=self._created_body, actor=owner
                )
            except KeyTaken:
                if req.alias is not None:
                    raise _bad(
                        "ALIAS_TAKEN", f"the alias {req.alias!r} is already taken", 409
                    ) from None
                # Only possible if two processes shared a lease range: alarm, take the next id.
                self.generated_key_collisions += 1
                log.error("generated key %s was already taken; check the id allocator", key)
                continue
            except IdempotencyMismatch:
                raise self._idempotency_reused() from None
            if result.replayed:
                return Created(result.response, True, None)
            self.created += 1
            self.resolver.invalidate(key)  # drops a negative-cache entry for an alias
            self.resolver.remember(link)
            self._notify("created", link)
            return Created(result.response, False, link)
        raise _bad("KEY_SPACE_CONFLICT", "could not mint a free key; try again", 503)

    @staticmethod
    def _idempotency_reused() -> ShortenerError:
        return _bad(
            "IDEMPOTENCY_KEY_REUSED",
            "this Idempotency-Key was already used with a different request body",
            422,
        )

    # -- read --------------------------------------------------------------------------

    def get(self, key: str) -> Link:
        """The stored link (or tombstone) for ``key``; 404 ``NOT_FOUND`` if never created."""
        link = self.store.get(key)
        if link is None:
            raise _bad("NOT_FOUND", f"no link has the key {key!r}", 404)
        return link

    def require_owner(self, key: str, owner: str | None) -> Link:
        """The link if ``owner`` owns it: 401 without a token, 404 unknown, 403 otherwise.

        Other owner-only endpoints (stats, for one) use this for their checks.
        """
        if owner is None:
            raise _bad("UNAUTHORIZED", "send Authorization: Bearer <owner token>", 401)
        link = self.get(key)
        if link.owner is None or not hmac.compare_digest(link.owner, owner):
            raise _bad("FORBIDDEN", "only the link's owner may do this", 403)
        return link

    def list_links(
        self,
        owner: str,
        *,
        limit: int = 50,
        cursor: str | None = None,
        tag: str | None = None,
        status: str | None = None,
    ) -> dict[str, Any]:
        """One page of an owner's links (newest first) and the cursor of the next page."""
        if not 1 <= limit <= 500:
            raise _bad("INVALID_LIMIT", "limit must be between 1 and 500")
        before = self._decode_cursor(cursor) if cursor else None
        status_filter = None
        if status is not None:
            try:
                status_filter = Status(status.upper())
            except ValueError:
                raise _bad(
                    "INVALID_STATUS", f"status is one of {[s.value for s in Status]}"
                ) from None
        if tag is not None:
            tag = tag.lower()
        links = self.store.list_owner(
            owner, limit=limit + 1, before=before, tag=tag, status=status_filter
        )
        more = len(links) > limit
        links = links[:limit]
        next_cursor = self._encode_cursor(links[-1]) if more and links else None
        return {"links": [self.owner_view(link) for link in links], "nextCursor": next_cursor}

    @staticmethod
    def _encode_cursor(link: Link) -> str:
        raw = json.dumps([link.created_at, link.key]).encode()
        return base64.urlsafe_b64encode(raw).decode().rstrip("=")

    @staticmethod
    def _decode_cursor(cursor: str) -> tuple[float, str]:
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

    def audit(self, key: str, owner: str | None) -> list[dict[str, Any]]:
        """A link's change history (owner only); times as ISO 8601."""
        self.require_owner(key, owner)
        entries = self.store.audit(key)
        for entry in entries:
            entry["at"] = format_time(entry["at"])
            if entry["actor"] == owner:
                entry["actor"] = "owner"
        return entries

    # -- change ------------------------------------------------------------------------

    def update(self, key: str, patch: dict[str, Any], *, owner: str | None) -> Link:
        """Owner changes: retarget (``longUrl``), tags, expiry, clicks, password, redirect
        type, or ``status`` ACTIVE/DISABLED. Audited; every cache layer is purged at once."""
        link = self.require_owner(key, owner)
        if not isinstance(patch, dict) or not patch:
            raise _bad("EMPTY_PATCH", "send at least one field to change")
        unknown = set(patch) - PATCH_FIELDS
        if unknown:
            raise _bad("UNKNOWN_FIELD", f"unknown field(s): {', '.join(sorted(map(str, unknown)))}")
        self._refuse_if_gone(link)
        changes: dict[str, Any] = {}
        action = "update"
        if "longUrl" in patch:
            try:
                changes["long_url"] = self.urls.check(patch["longUrl"])
            except UrlRejected as exc:
                raise _bad(exc.code, exc.message) from None
            if changes["long_url"] != link.long_url:
                changes["scan_verdict"] = "PENDING"
                changes["scan_reasons"] = ()
                action = "retarget"
        if "tags" in patch:
            changes["tags"] = parse_tags(patch["tags"] if patch["tags"] is not None else [])
        if "expiresAt" in patch:
            if patch["expiresAt"] is None:
                changes["expires_at"] = None
            else:
                try:
                    expires_at = parse_time(patch["expiresAt"])
                except InvalidTime as exc:
                    raise _bad("INVALID_EXPIRY", f"expiresAt: {exc}") from None
                if expires_at <= self.clock():
                    raise _bad("INVALID_EXPIRY", "expiresAt is in the past")
                changes["expires_at"] = expires_at
        if "maxClicks" in patch:
            value = patch["maxClicks"]
            changes["max_clicks"] = (
                None
                if value is None
                else _int_field(value, "maxClicks", "INVALID_MAX_CLICKS", 1, MAX_CLICKS_LIMIT)
            )
        if "password" in patch:
            changes["password_hash"] = (
                None
                if patch["password"] is None
                else hash_password(_password_field(patch["password"]))
            )
        redirect_type = link.redirect_type
        if "redirectType" in patch:
            redirect_type = patch["redirectType"]
            if isinstance(redirect_type, bool) or redirect_type not in (301, 302):
                raise _bad("INVALID_REDIRECT_TYPE", "redirectType must be 301 or 302")
            changes["redirect_type"] = redirect_type
            if redirect_type == 302:
                changes["max_age"] = None
            elif link.max_age is None:
                changes["max_age"] = DEFAULT_PERMANENT_MAX_AGE
        if patch.get("maxAge") is not None:
            if redirect_type != 301:
                raise _bad("INVALID_MAX_AGE", "maxAge applies only to redirectType 301")
            changes["max_age"] = _int_field(
                patch["maxAge"], "maxAge", "INVALID_MAX_AGE", 0, MAX_PERMANENT_MAX_AGE
            )
        if "status" in patch:
            wanted = patch["status"]
            if wanted not in ("ACTIVE", "DISABLED"):
                raise _bad(
                    "INVALID_STATUS", "status may be set to ACTIVE or DISABLED (DELETE to delete)"
                )
            if wanted != link.status.value:
                if wanted == "ACTIVE" and link.status_reason != "owner":
                    raise _bad(
                        "DISABLED_BY_SCANNER",
                        "this link was disabled by the safety scanner and cannot be re-enabled",
                        409,
                    )
                changes["status"] = Status(wanted)
                changes["status_reason"] = "owner" if wanted == "DISABLED" else None
                if action == "update":
                    action = "disable" if wanted == "DISABLED" else "enable"
        try:
            _old, new = self.store.update(
                key, changes, actor=owner, action=action, expected_owner=owner, check_owner=True
            )
        except (LinkMissing, NotOwner, Gone) as exc:  # raced with another change
            raise self._store_refusal(exc, key) from None
        self.resolver.invalidate(key)
        event = {"retarget": "retargeted", "disable": "disabled", "enable": "enabled"}.get(action)
        if event:
            self._notify(event, new)
        return new

    def delete(self, key: str, *, owner: str | None) -> Link:
        """Tombstone an owner's link: 410 from the next click on, key never reissued."""
        link = self.require_owner(key, owner)
        if link.is_tombstone:
            raise _bad("LINK_GONE", f"the link {key!r} is already {link.status.value.lower()}", 410)
        try:
            _old, new = self.store.tombstone(
                key,
                Status.DELETED,
                actor=owner,
                reason="owner",
                expected_owner=owner,
                check_owner=True,
            )
        except (LinkMissing, NotOwner, Gone) as exc:
            raise self._store_refusal(exc, key) from None
        self.resolver.invalidate(key)
        self._notify("deleted", new)
        return new

    def disable(self, key: str, reason: str, *, actor: str = "scanner") -> Link:
        """Disable a link for safety (the scanner's verdict): warning page from the next click."""
        try:
            _old, new = self.store.update(
                key,
                {"status": Status.DISABLED, "status_reason": f"{actor}: {reason}"},
                actor=actor,
                action="disable",
            )
        except (LinkMissing, Gone) as exc:
            raise self._store_refusal(exc, key) from None
        self.resolver.invalidate(key)
        self._notify("disabled", new)
        return new

    def enable(self, key: str, *, actor: str = "scanner") -> Link:
        """Lift a safety disable (e.g. a rescan found the page clean again)."""
        try:
            _old, new = self.store.update(
                key, {"status": Status.ACTIVE, "status_reason": None}, actor=actor, action="enable"
            )
        except (LinkMissing, Gone) as exc:
            raise self._store_refusal(exc, key) from None
        self.resolver.invalidate(key)
        self._notify("enabled", new)
        return new

    def set_scan_verdict(
        self,
        key: str,
        verdict_name: str,
        *,
        reasons: tuple[str, ...] | list[str] = (),
        actor: str = "scanner",
    ) -> Link:
        """Record the scanner's verdict and the reasons behind it (the rules and blocklist
        entries that fired, shown wherever the verdict is); MALICIOUS also disables the
        link at once."""
        if verdict_name not in SCAN_VERDICTS:
            raise ValueError(f"unknown verdict {verdict_name!r}")
        changes: dict[str, Any] = {"scan_verdict": verdict_name, "scan_reasons": tuple(reasons)}
        if verdict_name == "MALICIOUS":
            changes.update(status=Status.DISABLED, status_reason=f"{actor}: malicious")
        try:
            _old, new = self.store.update(key, changes, actor=actor, action="scan")
        except (LinkMissing, Gone) as exc:
            raise self._store_refusal(exc, key) from None
        self.resolver.invalidate(key)
        if verdict_name == "MALICIOUS":
            self._notify("disabled", new)
        return new

    def _refuse_if_gone(self, link: Link) -> None:
        status = self.effective_status(link)
        if status in (Status.DELETED, Status.EXPIRED):
            raise _bad("LINK_GONE", f"the link {link.key!r} is {status.value.lower()}", 410)

    @staticmethod
    def _store_refusal(exc: Exception, key: str) -> ShortenerError:
        if isinstance(exc, LinkMissing):
            return _bad("NOT_FOUND", f"no link has the key {key!r}", 404)
        if isinstance(exc, NotOwner):
            return _bad("FORBIDDEN", "only the link's owner may do this", 403)
        return _bad("LINK_GONE", f"the link {key!r} is gone", 410)

    # -- background --------------------------------------------------------------------

    def sweep(self) -> int:
        """Tombstone links past their expiry or click budget, forget old idempotency
        records; returns how many links were tombstoned. Redirects never wait for this."""
        now = self.clock()
        keys = self.store.expire_due(now)
        for key in keys:
            self.resolver.invalidate(key)
        self.store.purge_idempotency(now)
        for key in keys:
            link = self.store.get(key)
            if link is not None:
                self._notify("expired", link)
        return len(keys)

    # -- redirect ----------------------------------------------------------------------

    async def admit(self, link: Link, now: float) -> tuple[Outcome, Link]:
        """Final check before a redirect is served. Links with ``maxClicks`` are admitted
        by one conditional UPDATE in the store (exactly N clicks succeed); others need no I/O."""
        if link.max_clicks is None:
            return Outcome.REDIRECT, link
        admitted = await asyncio.to_thread(self.store.consume_click, link.key, now)
        if admitted is not None:
            self.resolver.remember(admitted)
            return Outcome.REDIRECT, admitted
        fresh = await asyncio.to_thread(self.store.get, link.key)
        self.resolver.invalidate(link.key)
        if fresh is None:
            return Outcome.NOT_FOUND, link
        self.resolver.remember(fresh)
        outcome = verdict(fresh, now)
        if outcome in (Outcome.REDIRECT, Outcome.PASSWORD):  # raced: budget just ran out
            outcome = Outcome.EXPIRED
        return outcome, fresh

    def check_password(self, link: Link, password: str) -> bool:
        """Whether ``password`` opens ``link`` (scrypt; blocking)."""
        return bool(link.password_hash) and verify_password(password, link.password_hash or "")

    def emit_click(self, ctx: ClickContext) -> None:
        """Hand a click to ``on_click``; never raises into the redirect."""
        try:
            self.on_click(ctx)
            self.clicks_emitted += 1
        except Exception:
            self.click_hook_errors += 1
            if self.click_hook_errors <= 10:
                log.exception("the click hook failed; the redirect is served anyway")

    # -- CSV ---------------------------------------------------------------------------

    def export_csv(self, owner: str) -> str:
        """All of an owner's links as CSV (re-importable: aliases come back as aliases)."""
        out = io.StringIO()
        writer = csv.DictWriter(out, fieldnames=_CSV_COLUMNS, lineterminator="\r\n")
        writer.writeheader()
        before: tuple[float, str] | None = None
        while True:
            links = self.store.list_owner(owner, limit=500, before=before)
            for link in links:
                writer.writerow(
                    {
                        "key": link.key,
                        "shortUrl": self.short_url(link.key),
                        "longUrl": link.long_url,
                        "customAlias": link.key if link.alias else "",
                        "status": self.effective_status(link).value,
                        "createdAt": format_time(link.created_at),
                        "expiresAt": format_time(link.expires_at) or "",
                        "maxClicks": "" if link.max_clicks is None else link.max_clicks,
                        "clicksUsed": link.clicks if link.max_clicks is not None else "",
                        "redirectType": link.redirect_type,
                        "maxAge": "" if link.max_age is None else link.max_age,
                        "passwordProtected": "true" if link.password_hash else "false",
                        "tags": ";".join(link.tags),
                    }
                )
            if len(links) < 500:
                break
            before = (links[-1].created_at, links[-1].key)
        return out.getvalue()

    def parse_import(self, text: str) -> list[dict[str, Any]]:
        """CSV rows → create bodies. Needs a header with ``longUrl``; optional columns
        ``customAlias``, ``expiresAt``, ``maxClicks``, ``redirectType``, ``maxAge``, ``tags``
        (separated by ``;``). Other columns (such as an export's ``key``) are ignored —
        keys are never reissued, so each row gets a new key unless it names an alias.
        Passwords are never exported (only their hashes exist), so they do not round-trip."""
        try:
            reader = csv.DictReader(io.StringIO(text, newline=""))
            header = reader.fieldnames
            if not header or "longUrl" not in header:
                raise _bad("INVALID_CSV", "the CSV needs a header row with a longUrl column")
            rows = []
            for row in reader:
                if len(rows) >= MAX_IMPORT_ROWS:
                    raise _bad("TOO_MANY_ROWS", f"import at most {MAX_IMPORT_ROWS} rows at a time")
                rows.append(row)
        except csv.Error as exc:
            raise _bad("INVALID_CSV", f"the body is not valid CSV: {exc}") from None
        bodies: list[dict[str, Any]] = []
        for row in rows:
            body: dict[str, Any] = {}
            errors: list[str] = []

            def cell(name: str, row: dict[str, Any] = row) -> str:
                value = row.get(name)
                return value.strip() if isinstance(value, str) else ""

            body["longUrl"] = cell("longUrl")
            if cell("customAlias"):
                body["customAlias"] = cell("customAlias")
            if cell("expiresAt"):
                body["expiresAt"] = cell("expiresAt")
            for name in ("maxClicks", "redirectType", "maxAge"):
                if cell(name):
                    try:
                        body[name] = int(cell(name))
                    except ValueError:
                        errors.append(f"{name} must be an integer")
            if cell("tags"):
                body["tags"] = [t for t in re.split(r"[;\s]+", cell("tags")) if t]
            if body.get("redirectType") == 302 and "maxAge" in body:
                del body["maxAge"]
            bodies.append({"body": body, "errors": errors})
        return bodies

    def import_rows(self, bodies: list[dict[str, Any]], *, owner: str) -> dict[str, Any]:
        """Create one link per parsed row; per-row results, one bad row never stops the rest."""
        results: list[dict[str, Any]] = []
        created = 0
        for number, item in enumerate(bodies, start=2):  # row 1 is the header
            if item["errors"]:
                results.append(
                    {
                        "row": number,
                        "status": 400,
                        "error": "INVALID_ROW",
                        "message": "; ".join(item["errors"]),
                    }
                )
                continue
            try:
                outcome = self.create(item["body"], owner=owner)
            except ApiError as exc:
                results.append(
                    {"row": number, "status": exc.status, "error": exc.code, "message": exc.message}
                )
                continue
            created += 1
            results.append(
                {
                    "row": number,
                    "status": 201,
                    "key": outcome.body["key"],
                    "shortUrl": outcome.body["shortUrl"],
                }
            )
        return {"created": created, "failed": len(results) - created, "rows": results}

    # -- observability -----------------------------------------------------------------

    def metrics(self) -> dict[str, Any]:
        """Counters for the dashboard: cache layers, limiters, clicks, links by status."""
        return {
            "cache": self.resolver.stats(),
            "rateLimits": {
                lim.name: lim.stats()
                for lim in (
                    self.limit_anonymous,
                    self.limit_owner,
                    self.limit_ip,
                    self.limit_misses,
                    self.limit_passwords,
                )
            },
            "clicks": {"emitted": self.clicks_emitted, "hookErrors": self.click_hook_errors},
            "links": self.store.counts(),
            "created": self.created,
            "generatedKeyCollisions": self.generated_key_collisions,
            "idLeases": self.allocator.leases_taken,
            "blocklistVersion": self.blocklist.version,
            "analytics": None if self.analytics is None else self.analytics.stats(),
            "scanner": None if self.scanner is None else self.scanner.stats(),
        }

    # -- analytics ---------------------------------------------------------------------

    def click_stats(
        self,
        key: str,
        *,
        owner: str | None,
        start: str | None = None,
        end: str | None = None,
        granularity: str = "hour",
    ) -> dict[str, Any]:
        """Clicks of one link per minute or hour in ``[start, end)`` with breakdowns and
        unique visitors; blocking (it first folds in every click already made).
        ``end`` is exclusive; by default it is the end of the current minute or hour.

        A link with an owner shows its stats to its owner only (401/403 otherwise); an
        anonymous link has nobody to prove ownership, so its stats are public, as its
        clicks are. Defaults: the last 24 hours by hour, the last hour by minute.
        """
        from lookup.shortener.analytics import GRAINS, MAX_RANGE_S

        if self.analytics is None:
            raise _bad("ANALYTICS_OFF", "click analytics is switched off on this server", 503)
        link = self.get(key)
        if link.owner is not None:
            self.require_owner(key, owner)
        if granularity not in GRAINS:
            raise _bad("INVALID_GRANULARITY", "granularity is minute or hour")
        size = GRAINS[granularity][1]
        try:
            # Default end: the close of the bucket that holds "now", so it is included.
            end_ts = _query_time(end) if end else (self.clock() // size + 1) * size
            default_span = 86_400 if granularity == "hour" else 3_600
            start_ts = _query_time(start) if start else end_ts - default_span
        except InvalidTime as exc:
            raise _bad("INVALID_RANGE", f"from/to: {exc}") from None
        if start_ts >= end_ts:
            raise _bad("INVALID_RANGE", "from must be before to")
        if end_ts - start_ts > MAX_RANGE_S[granularity]:
            days = MAX_RANGE_S[granularity] // 86_400
            raise _bad("RANGE_TOO_LARGE", f"by {granularity}, ask for at most {days} days")
        self.analytics.flush()
        stats = self.analytics.aggregator.stats(key, start_ts, end_ts, granularity)
        for point in stats["series"]:
            point["t"] = format_time(point["t"])
        stats["from"], stats["to"] = format_time(stats["from"]), format_time(stats["to"])
        visitors = stats["uniqueVisitors"]
        visitors["rangeFrom"] = format_time(visitors["rangeFrom"])
        visitors["rangeTo"] = format_time(visitors["rangeTo"])
        stats["status"] = self.effective_status(link).value
        stats["scanVerdict"] = link.scan_verdict
        stats["scanReasons"] = list(link.scan_reasons)
        return stats
