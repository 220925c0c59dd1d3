"""The link list a person can use: search, sort by clicks, last click or creation, a
creation-date range, click counts in each item, and signed cursors that stay stable.

``GET /v1/links`` follows Shlink's ``GET /short-urls`` in spirit, in this API's words:
``search`` is Shlink's ``searchTerm`` (case-insensitive, in the key and the destination;
links have no title here), ``sort`` + ``order`` its ``orderBy=field-DIR`` (``created``,
``clicks``, or ``lastClick`` as Dub's link list offers), ``createdFrom`` / ``createdTo``
its ``startDate`` / ``endDate``.

The click counts come from the counters the stats endpoint reads (analytics'
``link_totals``: the hourly roll-up summed over all time, the newest minute or hour row for
the last click). Links and counts are two seams — two SQLite files, or tables a fleet may
keep apart — so no one query can sort by both: a page sorted by creation is a keyset page
of the link store, with the counts of its keys added; a page sorted by clicks or by last
click reads the keys of every matching link (keys and creation times only), their counts
in chunks of 500 keys, sorts them here and loads the page's links by key. Its cost grows
with the matching links (see the report's figure), not with the whole store.

A cursor is the position of the last item — ``(created_at, key)``, ``(clicks, key)`` or
``(lastClick, key)`` — never an offset, so a page never repeats or skips a link whose
value did not change in between. It carries the sort, the order and a digest of the
filters, signed with an HMAC: a cursor from another sort or other filters is refused (400
``CURSOR_MISMATCH``), one this server did not make too (400 ``INVALID_CURSOR``).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from lookup import errors
from lookup.shortener.links import LinkQuery, LinkStore
from lookup.shortener.model import InvalidTime, Link, format_time
from lookup.shortener.parse import parse_status_filter, query_time

SORTS = ("created", "clicks", "lastClick")
ORDERS = ("asc", "desc")
MAX_SEARCH = 200
_DAY = 86_400
_BARE_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
#: What a URL keeps unencoded (mirrors :func:`~lookup.shortener.urls.location_form`).
_URL_SAFE = "/:?#[]@!$&'()*+,;=-._~%"

#: ``keys → {key: (clicks, human clicks, newest bucket)}`` (analytics' ``link_totals``).
Totals = Callable[[list[str]], dict[str, tuple[int, int, int]]]


def _bad(code: str, message: str) -> errors.InvalidInput:
    return errors.InvalidInput(message, code=code)


@dataclass(frozen=True)
class ListRequest:
    """A checked listing request: the filters, the sort and the page size."""

    query: LinkQuery
    sort: str = "created"
    order: str = "desc"
    limit: int = 50

    def digest(self) -> str:
        """A short digest of the filters, kept in a cursor so it only pages this listing."""
        q = self.query
        status = None if q.status is None else q.status.value
        text = json.dumps([q.tag, status, list(q.terms), q.created_from, q.created_to, q.domain])
        return hashlib.sha256(text.encode()).hexdigest()[:16]


def search_terms(search: str | None) -> tuple[str, ...]:
    """The lower-case pieces a ``search`` matches: the text as typed and, when it differs,
    its percent-encoded spelling (destinations are stored encoded as UTF-8)."""
    if search is None:
        return ()
    text = search.strip().lower()
    if not text:
        return ()
    if len(text) > MAX_SEARCH:
        raise _bad("INVALID_SEARCH", f"search is at most {MAX_SEARCH} characters")
    if any(ord(c) < 32 or 0xD800 <= ord(c) <= 0xDFFF for c in text):
        raise _bad("INVALID_SEARCH", "search contains control or invalid characters")
    encoded = quote(text, safe=_URL_SAFE).lower()
    return (text,) if encoded == text else (text, encoded)


def created_bound(text: str | None, name: str, *, end: bool) -> float | None:
    """A ``createdFrom`` / ``createdTo`` bound: ISO 8601 (a bare date is a whole UTC day:
    ``createdTo=2026-12-07`` includes that day) or epoch seconds; 400 ``INVALID_RANGE``."""
    if text is None or not text.strip():
        return None
    try:
        ts = query_time(text)
    except InvalidTime as exc:
        raise _bad("INVALID_RANGE", f"{name}: {exc}") from None
    if end and _BARE_DATE.fullmatch(text.strip()):
        ts += _DAY
    return ts


def parse_list_request(
    *,
    limit: int = 50,
    tag: str | None = None,
    status: str | None = None,
    search: str | None = None,
    sort: str | None = None,
    order: str | None = None,
    created_from: str | None = None,
    created_to: str | None = None,
    domain: str | None = None,
) -> ListRequest:
    """Check a listing's parameters; each refusal is a 400 with its own code."""
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 500:
        raise _bad("INVALID_LIMIT", "limit must be between 1 and 500")
    sort = sort or "created"
    if sort not in SORTS:
        raise _bad("INVALID_SORT", f"sort is one of {list(SORTS)}")
    order = (order or "desc").lower()
    if order not in ORDERS:
        raise _bad("INVALID_ORDER", f"order is one of {list(ORDERS)}")
    start = created_bound(created_from, "createdFrom", end=False)
    stop = created_bound(created_to, "createdTo", end=True)
    if start is not None and stop is not None and start >= stop:
        raise _bad("INVALID_RANGE", "createdFrom must be before createdTo")
    query = LinkQuery(
        tag=tag.lower() if tag is not None else None,
        status=parse_status_filter(status),
        terms=search_terms(search),
        created_from=start,
        created_to=stop,
        ascending=order == "asc",
        domain=domain,
    )
    return ListRequest(query, sort, order, limit)


class CursorSigner:
    """Signed cursors: ``base64url(JSON) . base64url(HMAC-SHA256[:16])``."""

    def __init__(self, key: bytes) -> None:
        self._key = key

    def _mac(self, payload: bytes) -> bytes:
        return hmac.new(self._key, payload, hashlib.sha256).digest()[:16]

    def encode(self, request: ListRequest, position: tuple[Any, str]) -> str:
        """The cursor of the page after ``position`` of this listing."""
        payload = json.dumps(
            [request.sort, request.order, request.digest(), list(position)],
            separators=(",", ":"),
        ).encode()
        return _b64(payload) + "." + _b64(self._mac(payload))

    def decode(self, cursor: str, request: ListRequest) -> tuple[Any, str]:
        """The position a cursor holds, if this server signed it for this very listing."""
        try:
            body, _, mac = cursor.partition(".")
            payload = _unb64(body)
            if not hmac.compare_digest(_unb64(mac), self._mac(payload)):
                raise ValueError("bad signature")
            sort, order, digest, position = json.loads(payload)
            value, key = position
            if not isinstance(key, str):
                raise ValueError("bad key")
        except (ValueError, TypeError, UnicodeError):
            raise _bad("INVALID_CURSOR", "cursor is not one this server handed out") from None
        if (sort, order, digest) != (request.sort, request.order, request.digest()):
            raise _bad(
                "CURSOR_MISMATCH",
                f"this cursor pages sort={sort} order={order} with other filters; ask for "
                "the first page again (no cursor) after changing the sort or a filter",
            )
        return value, key


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode((text + "=" * (-len(text) % 4)).encode("ascii"))


def _descending(key: str) -> tuple[int, ...]:
    """A tuple that sorts in the reverse order of ``key`` (code points negated, then a
    mark above every one of them, so a prefix comes after the longer key)."""
    return (*(-ord(c) for c in key), 1)


def rank(value: float | None, key: str, descending: bool) -> tuple[Any, ...]:
    """Where an item stands in a click or last-click sort, as an ascending sort key:
    by ``value`` in the asked direction, ties by key in the same direction, and links
    never clicked (``None``, last-click sort) last in either direction."""
    if descending:
        return (value is None, -(value or 0), _descending(key))
    return (value is None, value or 0, tuple(ord(c) for c in key))


@dataclass(frozen=True)
class Page:
    """One page: its links, their counts (None with analytics off), the next position."""

    links: list[Link]
    totals: dict[str, tuple[int, int, int]] | None
    after: tuple[Any, str] | None


class LinkLister:
    """Pages of an owner's links from the link store and the click counts."""

    def __init__(self, store: LinkStore, totals: Totals | None) -> None:
        self.store = store
        self.totals = totals

    def page(self, owner: str, request: ListRequest, after: tuple[Any, str] | None) -> Page:
        """The page after ``after`` (None: the first page)."""
        if request.sort == "created":
            return self._by_creation(owner, request, after)
        if self.totals is None:
            raise errors.Unavailable(
                "click analytics is switched off on this server, so links cannot be sorted "
                "by clicks",
                code="ANALYTICS_OFF",
            )
        return self._by_clicks(owner, request, after, self.totals)

    def _by_creation(self, owner: str, request: ListRequest, after: tuple[Any, str] | None) -> Page:
        position = None
        if after is not None:
            if isinstance(after[0], bool) or not isinstance(after[0], (int, float)):
                raise _bad("INVALID_CURSOR", "cursor is not one this server handed out")
            position = (float(after[0]), after[1])
        links = self.store.query_owner(
            owner, request.query, limit=request.limit + 1, after=position
        )
        more = len(links) > request.limit
        links = links[: request.limit]
        totals = None if self.totals is None else self.totals([link.key for link in links])
        last = (links[-1].created_at, links[-1].key) if more and links else None
        return Page(links, totals, last)

    def _by_clicks(
        self, owner: str, request: ListRequest, after: tuple[Any, str] | None, totals: Totals
    ) -> Page:
        descending = request.order == "desc"
        field = 0 if request.sort == "clicks" else 2
        keys = [key for key, _created in self.store.owner_keys(owner, request.query)]
        counts = totals(keys)

        def value(key: str) -> int | None:
            found = counts.get(key)
            if found is None:
                return 0 if field == 0 else None
            return found[field]

        ranked = sorted(keys, key=lambda k: rank(value(k), k, descending))
        if after is not None:
            cut = after[0]
            if cut is not None and (isinstance(cut, bool) or not isinstance(cut, int)):
                raise _bad("INVALID_CURSOR", "cursor is not one this server handed out")
            mark = rank(cut, after[1], descending)
            ranked = [k for k in ranked if rank(value(k), k, descending) > mark]
        chosen = ranked[: request.limit]
        by_key = {link.key: link for link in self.store.get_many(chosen)}
        links = [by_key[k] for k in chosen if k in by_key]
        more = len(ranked) > request.limit
        last = (value(chosen[-1]), chosen[-1]) if more and chosen else None
        return Page(links, {k: counts[k] for k in chosen if k in counts}, last)


def click_fields(key: str, totals: dict[str, tuple[int, int, int]] | None) -> dict[str, Any] | None:
    """A list item's ``clicks``: all clicks, human clicks and the last click's minute
    (its hour once minute rows were forgotten), or None with analytics off."""
    if totals is None:
        return None
    total, human, newest = totals.get(key, (0, 0, 0))
    return {
        "total": total,
        "human": human,
        "lastClickAt": format_time(newest) if total else None,
    }


def owner_items(page: Page, render: Callable[[Link], dict[str, Any]]) -> list[dict[str, Any]]:
    """The page's links as the owner sees them, each with its ``clicks``."""
    items = []
    for link in page.links:
        item = render(link)
        item["clicks"] = click_fields(link.key, page.totals)
        items.append(item)
    return items


__all__ = [
    "ORDERS",
    "SORTS",
    "CursorSigner",
    "LinkLister",
    "ListRequest",
    "Page",
    "click_fields",
    "created_bound",
    "owner_items",
    "parse_list_request",
    "rank",
    "search_terms",
]
