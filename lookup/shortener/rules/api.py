"""Reading and replacing a link's redirect rules: owner only, checked like destinations.

Replacing the rules writes the rule store, then drops every cached copy of the link
(:meth:`~lookup.shortener.resolver.Resolver.invalidate`: in-process, the shared tier and
the other processes it tells), so the next redirect loads the link with its new rules.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from lookup.shortener.rules import RuleStore
from lookup.shortener.rules.model import Rule, rules_view
from lookup.shortener.rules.parse import RuleParser
from lookup.shortener.scanner import FeedFile, assess
from lookup.shortener.service import ShortenerService
from lookup.shortener.urls import Blocklist, UrlPolicy

__all__ = ["RuleApi"]


class RuleApi:
    """The operations behind ``GET``/``PUT /v1/links/{key}/redirect-rules``."""

    def __init__(
        self,
        service: ShortenerService,
        store: RuleStore,
        urls: UrlPolicy,
        blocklist: Blocklist,
        *,
        feed: FeedFile | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.service = service
        self.store = store
        self.feed = feed or FeedFile()
        self.clock = clock

        def scanner_verdict(url: str) -> tuple[str, tuple[str, ...]]:
            found = assess(url, blocklist, self.feed.current())
            return found.verdict, found.reasons

        self.parser = RuleParser(urls.check, scanner_verdict)

    def _view(self, key: str, default: str | None, rules: tuple[Rule, ...]) -> dict[str, Any]:
        return {"key": key, "defaultLongUrl": default, "redirectRules": rules_view(rules)}

    def get(self, key: str, owner: str | None) -> dict[str, Any]:
        """The rules of the owner's link ``key`` (401 without a token, 403 for another's)."""
        link = self.service.require_owner(key, owner)
        return self._view(link.key, link.long_url or None, self.store.get(link.key))

    def put(self, key: str, body: object, owner: str | None) -> dict[str, Any]:
        """Replace the rules of the owner's link ``key``: ownership, then that it can still
        change (410 for a deleted or expired link), then every rule in order."""
        link = self.service.require_owner(key, owner)
        self.service.refuse_if_gone(link)
        rules = self.parser.body(body)
        self.store.put(link.key, rules, self.clock())
        self.service.resolver.invalidate(link.key)
        return self._view(link.key, link.long_url or None, rules)
