"""The shortener's records: a link, its status, and what the redirect tells analytics.

A :class:`Link` is immutable; every change to a link produces a new record in the
store and invalidates every cached copy. :func:`verdict` is the lazy expiry rule the
redirect applies on *every* read, so a link stops working at the exact second it
expires (or right after its last allowed click) without any cleanup job.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, NamedTuple


class Status(enum.StrEnum):
    """A link's lifecycle state. DELETED and EXPIRED are tombstones: the key stays taken."""

    ACTIVE = "ACTIVE"
    DISABLED = "DISABLED"
    DELETED = "DELETED"
    EXPIRED = "EXPIRED"


class Outcome(enum.StrEnum):
    """What a redirect request for a link should get."""

    REDIRECT = "REDIRECT"
    PASSWORD = "PASSWORD"
    DISABLED = "DISABLED"
    EXPIRED = "EXPIRED"
    DELETED = "DELETED"
    NOT_FOUND = "NOT_FOUND"


#: Scan verdicts the scanner may set; a new link starts PENDING.
SCAN_VERDICTS = ("PENDING", "SAFE", "SUSPICIOUS", "MALICIOUS", "UNREACHABLE")

#: 301 responses carry ``Cache-Control: public, max-age=<max_age>``, bounded by this.
MAX_PERMANENT_MAX_AGE = 86_400
DEFAULT_PERMANENT_MAX_AGE = 3_600


@dataclass(frozen=True, slots=True)
class Link:
    """One short link as stored. Times are epoch seconds (UTC)."""

    key: str
    long_url: str
    owner: str | None
    created_at: float
    updated_at: float
    expires_at: float | None = None
    max_clicks: int | None = None
    clicks: int = 0
    status: Status = Status.ACTIVE
    redirect_type: int = 302
    max_age: int | None = None
    password_hash: str | None = None
    tags: tuple[str, ...] = ()
    scan_verdict: str = "PENDING"
    status_reason: str | None = None
    id: int | None = None
    alias: bool = False
    #: Why the scanner gave its verdict: the rules and blocklist entries that fired.
    scan_reasons: tuple[str, ...] = ()
    #: The visitor's query string goes onto the destination (merged; the visitor's wins).
    forward_query: bool = True
    #: ``/{key}/more/path`` redirects to the destination's path + ``/more/path``.
    forward_path: bool = False
    #: Redirect rules (:class:`~lookup.shortener.rules.model.Rule` s, first match wins): kept
    #: in their own table, attached by the resolver's load and cached with the link.
    rules: tuple[Any, ...] = ()

    @property
    def short_key(self) -> str:
        """The key as the owner spelled it, without its domain (``key`` is ``key@domain``
        for a link on another domain than the default one)."""
        return self.key.partition("@")[0]

    @property
    def domain(self) -> str:
        """The short domain the link lives on; ``""`` for the default one."""
        return self.key.partition("@")[2]

    @property
    def is_tombstone(self) -> bool:
        """DELETED or EXPIRED: the key is reserved forever and never redirects again."""
        return self.status in (Status.DELETED, Status.EXPIRED)

    @property
    def clicks_remaining(self) -> int | None:
        """Redirects left before ``max_clicks`` is reached; None when unlimited."""
        if self.max_clicks is None:
            return None
        return max(0, self.max_clicks - self.clicks)


def verdict(link: Link | None, now: float) -> Outcome:
    """The lazy expiry rule, applied on every read.

    Expired by date when ``now >= expires_at`` (410 from that exact instant); expired by
    clicks once ``clicks >= max_clicks``. Tombstones are gone; a disabled link gets the
    warning page; a password-protected one the password page.
    """
    if link is None:
        return Outcome.NOT_FOUND
    if link.status is Status.DELETED:
        return Outcome.DELETED
    if link.status is Status.EXPIRED:
        return Outcome.EXPIRED
    if link.expires_at is not None and now >= link.expires_at:
        return Outcome.EXPIRED
    if link.max_clicks is not None and link.clicks >= link.max_clicks:
        return Outcome.EXPIRED
    if link.status is Status.DISABLED:
        return Outcome.DISABLED
    if link.password_hash:
        return Outcome.PASSWORD
    return Outcome.REDIRECT


def effective_status(link: Link, now: float) -> Status:
    """The status a client sees: an ACTIVE or DISABLED link past its date or clicks is EXPIRED."""
    if link.status is Status.ACTIVE or link.status is Status.DISABLED:
        if verdict(link, now) is Outcome.EXPIRED:
            return Status.EXPIRED
    return link.status


class ClickContext(NamedTuple):
    """What the redirect hands to the analytics hook: one click, raw and unparsed.

    A plain named tuple, not a dataclass: the redirect builds one per click (a single
    ``tuple.__new__``), and the click buffer may hold tens of thousands — tuples of
    strings and numbers are cheap to build and the garbage collector stops tracking
    them. Parsing (user agent, bot flags, hashing the IP) happens off the redirect path.
    ``country`` comes from an edge header (``CF-IPCountry`` or ``X-Country``) if present.
    """

    key: str
    ts: float
    client_ip: str | None
    user_agent: str | None = None
    referer: str | None = None
    country: str | None = None
    accept_language: str | None = None
    method: str = "GET"
    status: int = 302
    #: The redirect rule that chose the destination (its index); None: the link has no rules;
    #: -1: it has rules and none matched (the link's own destination).
    rule: int | None = None


def format_time(ts: float | None) -> str | None:
    """ISO 8601 in UTC with a ``Z`` (whole seconds unless there is a fraction)."""
    if ts is None:
        return None
    dt = datetime.fromtimestamp(ts, tz=UTC)
    if dt.microsecond:
        return dt.isoformat(timespec="microseconds").replace("+00:00", "Z")
    return dt.isoformat(timespec="seconds").replace("+00:00", "Z")


class InvalidTime(ValueError):
    """A timestamp that cannot be understood."""


def parse_time(value: object) -> float:
    """Epoch seconds from ISO 8601 text (a missing offset means UTC) or a number."""
    if isinstance(value, bool):
        raise InvalidTime("expected an ISO 8601 time or epoch seconds, got a boolean")
    if isinstance(value, (int, float)):
        ts = float(value)
        if not math.isfinite(ts) or not 0 <= ts < 253_402_300_800:  # year 10000
            raise InvalidTime("epoch seconds out of range")
        return ts
    if not isinstance(value, str):
        raise InvalidTime("expected an ISO 8601 time or epoch seconds")
    text = value.strip()
    if not text or len(text) > 64:
        raise InvalidTime("expected an ISO 8601 time such as 2026-12-31T23:59:59Z")
    try:
        dt = datetime.fromisoformat(text)
    except ValueError:
        raise InvalidTime(
            f"{value!r} is not an ISO 8601 time such as 2026-12-31T23:59:59Z"
        ) from None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    try:
        return dt.timestamp()
    except (OverflowError, OSError, ValueError):
        raise InvalidTime(f"{value!r} is out of range") from None
