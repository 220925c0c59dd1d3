"""Filters given as parameters (``lang=``, ``site=``, ``type=``, ``month=``), as query nodes.

A filter narrows what a query matches without adding to its score, as Elasticsearch's
``bool.filter`` does: each becomes a node of the query language ANDed with the query —
``lang=en`` is ``lang:en``, ``site=docs.example`` is ``site:docs.example`` (its
subdomains included, as ``site:`` always does), ``type=text/plain`` the media type the
page was served as, ``month=2026-03`` the crawl times of that calendar month (UTC). They
are what a click on a facet (:mod:`.facets`) sends.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Sequence

from lookup.search.analysis import Phrase, site_terms
from lookup.search.query import And, CrawledRange, FieldTerm, Node, PhraseNode, Term

_LANG = re.compile(r"^[a-z]{2,3}$")
_TYPE = re.compile(r"^[a-z0-9][a-z0-9.+-]*/[a-z0-9][a-z0-9.+-]*$")
_MONTH = re.compile(r"^(\d{4})-(\d{2})$")


class FilterError(ValueError):
    """A filter value of the wrong form (the HTTP layer answers 400 ``INVALID_PARAMETER``)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.code = "INVALID_PARAMETER"
        self.message = message


def narrowed(
    expr: Node | None, terms: Sequence[str], phrases: Sequence[Phrase], filters: Sequence[Node]
) -> Node | None:
    """The query (``expr``, or the plain query's ``terms`` and ``phrases``) ANDed with the
    filters; ``expr`` unchanged when there are none."""
    if not filters:
        return expr
    base = expr or And((*map(Term, terms), *map(PhraseNode, phrases)))
    return And((base, *filters))


def month_range(text: str) -> CrawledRange:
    """``YYYY-MM`` as the crawl-time range of that month (UTC, start included)."""
    m = _MONTH.match(text)
    if m is None or not 1 <= int(m.group(2)) <= 12 or int(m.group(1)) < 1:
        raise FilterError("month must be a month like 2026-03")
    year, month = int(m.group(1)), int(m.group(2))
    start = dt.datetime(year, month, 1, tzinfo=dt.UTC)
    if month == 12 and year == 9999:
        return CrawledRange(after=start.timestamp())
    end = dt.datetime(year + month // 12, month % 12 + 1, 1, tzinfo=dt.UTC)
    return CrawledRange(after=start.timestamp(), before=end.timestamp())


def filter_nodes(
    lang: str | None = None,
    site: str | None = None,
    media_type: str | None = None,
    month: str | None = None,
) -> list[Node]:
    """The query nodes of the filters given (None: not given); a malformed value is a
    :class:`FilterError` naming the form it needs."""
    out: list[Node] = []
    if lang is not None:
        code = lang.strip().lower()
        if not _LANG.match(code):
            raise FilterError("lang must be a language code such as en")
        out.append(FieldTerm("lang", code))
    if site is not None:
        host = site.strip().lower()
        if host.startswith(("http://", "https://")):
            host = host.split("://", 1)[1]
        names = site_terms(host.split("/", 1)[0])
        if not names:
            raise FilterError("site must be a host name such as docs.example")
        out.append(FieldTerm("site", names[0]))
    if media_type is not None:
        value = media_type.strip().lower()
        if not _TYPE.match(value):
            raise FilterError("type must be a media type such as text/html")
        out.append(FieldTerm("type", value))
    if month is not None:
        out.append(month_range(month.strip()))
    return out
