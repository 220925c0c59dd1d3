"""Response shapes at the HTTP edge: what the API says about a link, to whom.

:class:`LinkViews` knows the public base URL (short links, QR codes, previews) and the
clock (a link past its date reads EXPIRED before the sweep tombstones it). The service
never builds a JSON body; it hands links to these.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from lookup.shortener.model import Link, Status, effective_status, format_time
from lookup.shortener.rules.model import rules_view

if TYPE_CHECKING:
    from lookup.shortener.domains import Domains


class LinkViews:
    """The JSON bodies of links, their history and their click stats."""

    def __init__(
        self,
        base_url: str,
        *,
        clock: Callable[[], float] = time.time,
        domains: Domains | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.clock = clock
        self.domains = domains

    def short_url(self, key: str) -> str:
        """The public short URL for the stored key ``key`` (on its own domain)."""
        if self.domains is not None and "@" in key:
            return self.domains.short_url(key)
        return f"{self.base_url}/{key}"

    def _where(self, link: Link) -> dict[str, Any]:
        """The key as shown (without its domain) and the domain it lives on."""
        domain = link.domain
        name = domain if self.domains is None else self.domains.name(domain)
        return {"key": link.short_key, "domain": name}

    def api_path(self, link: Link, tail: str = "") -> str:
        """The management API's path of a link (``?domain=`` for another domain)."""
        query = f"?domain={link.domain}" if link.domain else ""
        return f"/v1/links/{link.short_key}{tail}{query}"

    def status(self, link: Link) -> Status:
        """The status a client sees now (see :func:`~lookup.shortener.model.effective_status`)."""
        return effective_status(link, self.clock())

    def public(self, link: Link) -> dict[str, Any]:
        """What anybody may see about a link (the redirect reveals the URL anyway)."""
        status = self.status(link)
        hidden = bool(link.password_hash) or status is not Status.ACTIVE
        return {
            **self._where(link),
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

    def owner(self, link: Link) -> dict[str, Any]:
        """Everything about a link, for its owner."""
        view = self.public(link)
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
                "forwardQuery": link.forward_query,
                "forwardPath": link.forward_path,
            }
        )
        if link.rules:  # read with the link for GET /v1/links/{key} (Shlink's shape)
            view["redirectRules"] = rules_view(link.rules)
        return view

    def created(self, link: Link) -> dict[str, Any]:
        """The body of ``201 Created`` (stored with an Idempotency-Key for replays)."""
        return {
            **self._where(link),
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
            "forwardQuery": link.forward_query,
            "forwardPath": link.forward_path,
            "previewUrl": self.short_url(link.key) + "+",
            "qrPng": self.base_url + self.api_path(link, "/qr.png"),
            "qrSvg": self.base_url + self.api_path(link, "/qr.svg"),
        }

    @staticmethod
    def audit(entries: list[dict[str, Any]], owner: str | None) -> list[dict[str, Any]]:
        """A link's history for its owner: times as ISO 8601, the owner named ``owner``."""
        for entry in entries:
            entry["at"] = format_time(entry["at"])
            if entry["actor"] == owner:
                entry["actor"] = "owner"
        return entries

    def stats(self, stats: dict[str, Any], link: Link) -> dict[str, Any]:
        """Click stats with ISO 8601 times and the link's status and scan verdict."""
        for point in stats["series"]:
            point["t"] = format_time(point["t"])
        stats["from"], stats["to"] = format_time(stats["from"]), format_time(stats["to"])
        visitors = stats["uniqueVisitors"]
        visitors["rangeFrom"] = format_time(visitors["rangeFrom"])
        visitors["rangeTo"] = format_time(visitors["rangeTo"])
        stats["status"] = self.status(link).value
        stats["scanVerdict"] = link.scan_verdict
        stats["scanReasons"] = list(link.scan_reasons)
        return stats


__all__ = ["LinkViews"]
