"""The shortener in the API's terms: JSON bodies in, JSON views out.

:class:`LinkApi` is the edge the HTTP routes, the CSV import, the notebooks and the tests
call: it parses a request (:class:`~lookup.shortener.parse.RequestParser`), runs the
domain operation (:class:`~lookup.shortener.service.ShortenerService`) and shapes the
answer (:class:`~lookup.shortener.views.LinkViews`). Click stats come from analytics
(a :class:`ClickStats`), after the service has checked who may see them.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Protocol

from lookup import errors
from lookup.shortener import transfer
from lookup.shortener.listing import CursorSigner, LinkLister, owner_items, parse_list_request
from lookup.shortener.model import Link
from lookup.shortener.parse import RequestParser, stats_range
from lookup.shortener.service import Created, ShortenerService
from lookup.shortener.views import LinkViews


class ClickStats(Protocol):
    """What answers a link's click stats (the analytics pipeline)."""

    def click_stats(self, key: str, start: float, end: float, granularity: str) -> dict[str, Any]:
        """Counts of ``key`` in ``[start, end)`` with every click made so far folded in."""
        ...

    def link_totals(self, keys: list[str]) -> dict[str, tuple[int, int, int]]:
        """All-time ``(clicks, human clicks, newest bucket)`` of each clicked key."""
        ...


class LinkApi:
    """Parse → domain operation → view, for every management operation of the API."""

    def __init__(
        self,
        service: ShortenerService,
        parser: RequestParser,
        views: LinkViews,
        *,
        stats: ClickStats | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.service = service
        self.parser = parser
        self.views = views
        self.stats = stats
        self.clock = clock
        self.lister = LinkLister(service.store, None if stats is None else stats.link_totals)
        self.cursors = CursorSigner(parser.cursor_key)

    # -- create ------------------------------------------------------------------------

    def create(
        self,
        body: dict[str, Any],
        *,
        owner: str | None = None,
        idempotency_key: str | None = None,
    ) -> Created:
        """Create a link from a create body; blocking (run it in a worker thread on a loop).

        400 for invalid input, 409 ``ALIAS_TAKEN``, 422 ``IDEMPOTENCY_KEY_REUSED`` when an
        Idempotency-Key comes back with another body (a replay of the same body answers
        the original response, checked before anything else).
        """
        if not isinstance(body, dict):
            raise errors.InvalidInput("the body must be a JSON object", code="MALFORMED_JSON")
        claim = None
        if idempotency_key is not None:
            claim = self.parser.claim(owner, idempotency_key, body)
            replay = self.service.replay(claim)
            if replay is not None:
                return replay
        request = self.parser.create(body)
        return self.service.create(request, owner=owner, claim=claim)

    # -- read --------------------------------------------------------------------------

    def view(self, key: str, owner: str | None) -> dict[str, Any]:
        """One link: every field for its owner, the public ones for anybody else."""
        link = self.service.get(key)
        if owner is not None and link.owner == owner:
            return self.views.owner(self.service.with_rules(link))
        return self.views.public(link)

    def list_links(
        self,
        owner: str,
        *,
        limit: int = 50,
        cursor: str | None = None,
        tag: str | None = None,
        status: str | None = None,
        search: str | None = None,
        sort: str | None = None,
        order: str | None = None,
        created_from: str | None = None,
        created_to: str | None = None,
        domain: str | None = None,
    ) -> dict[str, Any]:
        """One page of an owner's links (newest first unless ``sort``/``order`` say
        otherwise), each with its click counts, and the signed cursor of the next page
        (see :mod:`~lookup.shortener.listing`)."""
        request = parse_list_request(
            limit=limit,
            tag=tag,
            status=status,
            search=search,
            sort=sort,
            order=order,
            created_from=created_from,
            created_to=created_to,
            domain=domain,
        )
        after = self.cursors.decode(cursor, request) if cursor else None
        page = self.lister.page(owner, request, after)
        next_cursor = None if page.after is None else self.cursors.encode(request, page.after)
        return {"links": owner_items(page, self.views.owner), "nextCursor": next_cursor}

    def audit(self, key: str, owner: str | None) -> list[dict[str, Any]]:
        """A link's change history (owner only); times as ISO 8601."""
        return self.views.audit(self.service.audit(key, owner), owner)

    # -- change ------------------------------------------------------------------------

    def update(self, key: str, patch: Any, *, owner: str | None) -> Link:
        """Owner changes from a patch body; checks in order: ownership, the body's shape,
        that the link can still change, then each field."""
        link = self.service.require_owner(key, owner)
        body = self.parser.check_patch(patch)
        self.service.refuse_if_gone(link)
        return self.service.update(link, self.parser.patch(body, link), owner=owner)

    def delete(self, key: str, *, owner: str | None) -> Link:
        """Tombstone an owner's link."""
        return self.service.delete(key, owner=owner)

    # -- CSV ---------------------------------------------------------------------------

    def export_csv(self, owner: str) -> str:
        """All of an owner's links as CSV (see :mod:`~lookup.shortener.transfer`)."""
        return transfer.export_csv(self.service, self.views, owner)

    @staticmethod
    def parse_import(text: str) -> list[dict[str, Any]]:
        """CSV text → create bodies with per-row problems."""
        return transfer.parse_import(text)

    def import_rows(self, bodies: list[dict[str, Any]], *, owner: str) -> dict[str, Any]:
        """Create one link per parsed row; per-row results."""
        return transfer.import_rows(lambda body, who: self.create(body, owner=who), bodies, owner)

    # -- click stats -------------------------------------------------------------------

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
        unique visitors; blocking (analytics first folds in every click already made).
        ``end`` is exclusive; by default it is the end of the current minute or hour.

        A link with an owner shows its stats to its owner only (401/403 otherwise); an
        anonymous link has nobody to prove ownership, so its stats are public, as its
        clicks are. Defaults: the last 24 hours by hour, the last hour by minute.
        """
        if self.stats is None:
            raise errors.Unavailable(
                "click analytics is switched off on this server", code="ANALYTICS_OFF"
            )
        link = self.service.get(key)
        if link.owner is not None:
            self.service.require_owner(key, owner)
        start_ts, end_ts = stats_range(start, end, granularity, self.clock())
        stats = self.stats.click_stats(link.key, start_ts, end_ts, granularity)
        return self.views.stats(stats, link)


__all__ = ["ClickStats", "LinkApi"]
