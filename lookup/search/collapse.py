"""Collapsing by site: at most a few results of one site on a page, the rest behind "more from
this site" and on the pages after.

Google calls it host crowding, Elasticsearch ``collapse``: without it one site with many
pages on a topic fills the first page (on a 317-page crawl of the sandbox web, 9 of the
top 10 for ``python`` came from its docs host; collapsed, 2). Pages are filled from the
ranking best first: a result goes on the page while the page has room and fewer than
``per_site`` results of its site; the others wait, in their order, for the next page,
which is filled the same way from what is left. Only when nothing else is left does a
crowded site fill a page's remaining places (its best waiting results: a query one site
answers still gets full pages). Each page lists its results in ranking order. So every
result is on exactly one page — none twice, none lost.

A page filled without that last step depends only on the results ranked above its last
one, so pages ``1..p`` are known from any prefix of the ranking in which they all fill
(:attr:`Collapsed.settled`); otherwise the whole ranking is needed. The coordinator
fetches deeper until one or the other (:data:`WINDOW` results at most, the paging depth:
past it pages are taken from that window, so paging stays stable there too).

A site with results waiting after a page gets ``moreFromSite`` on its last result there:
``site:`` (the page's button) shows them all.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from lookup.search.docfields import host_of
from lookup.search.shard import REALTIME

#: Results of the ranking collapsing walks at most (the deepest page reachable).
WINDOW = 1000
#: Results of one site per page at most (``collapse=N``; the ``search_collapse_per_host``
#: setting's default is Google's two, the second indented under the first).
MAX_COLLAPSE = 10
#: The ranking depth a collapsed query fetches first (deeper only if a page stays short).
FIRST_FETCH = 50

T = TypeVar("T")


@dataclass
class Collapsed(Generic[T]):
    """Pages ``1..p`` of a collapsed ranking, each its results with their sites, and what is
    left of each site after them (in the ranking walked)."""

    pages: list[list[tuple[T, str]]] = field(default_factory=list)
    left: Counter[str] = field(default_factory=Counter)
    #: every page filled from the part walked, without the crowded sites' help: what the
    #: ranking holds below it changes none of them
    settled: bool = True


def collapse(
    ranked: Sequence[T],
    site_of: Callable[[T], str],
    per_site: int,
    limit: int,
    pages: int,
    complete: bool = True,
) -> Collapsed[T]:
    """Fill pages ``1..pages`` of ``limit`` results from ``ranked`` (best first), each with at
    most ``per_site`` results of one site unless nothing else is left; ``complete`` says
    ``ranked`` is the whole ranking (else a page that cannot fill is left short, unsettled)."""
    if per_site < 1 or limit < 1:
        raise ValueError("per_site and limit must be at least 1 (per_site 0: no collapsing)")
    out: Collapsed[T] = Collapsed()
    waiting = [(rank, item, site_of(item)) for rank, item in enumerate(ranked)]
    for _ in range(pages):
        shown: Counter[str] = Counter()
        page: list[tuple[int, T, str]] = []
        rest: list[tuple[int, T, str]] = []
        for entry in waiting:
            if len(page) < limit and shown[entry[2]] < per_site:
                shown[entry[2]] += 1
                page.append(entry)
            else:
                rest.append(entry)
        if len(page) < limit:  # short: the walked part ran out, or only crowded sites are left
            out.settled = False
            if complete and rest:  # the crowded sites' best results fill the page
                room = limit - len(page)
                page, rest = sorted(page + rest[:room], key=lambda e: e[0]), rest[room:]
        out.pages.append([(item, site) for _, item, site in page])
        waiting = rest
    out.left = Counter(site for _, _, site in waiting)
    return out


def site_of_hit(snapshot: Any, hit: Any) -> str:
    """The site of a ranked hit: its segment's host column, or a real-time page's URL."""
    if hit.segment == REALTIME:
        stored = snapshot.realtime.indexes[hit.shard].docs[hit.doc].stored
        return host_of(str(stored.get("url") or ""))
    reader = snapshot.shards[hit.shard].segments[hit.segment].reader
    return str(reader.column("host").value(hit.doc))


def order(snapshot: Any, sort: str) -> Callable[[Any], tuple[float, int]]:
    """How the shards' hits merge: best score first, or the newest (``date``); ties by URL."""
    if sort == "date":
        return lambda h: (-snapshot.shards[h.shard].crawled_at(h), h.urlkey)
    return lambda h: (-h.score, h.urlkey)


def fold(
    snapshot: Any, hits: Sequence[Any], per_site: int, page: int, limit: int, complete: bool
) -> Collapsed[Any] | None:
    """Pages ``1..page`` of the first :data:`WINDOW` ranked hits collapsed by site (None:
    ``per_site`` 0, no collapsing); ``complete``: ``hits`` is the whole ranking."""
    if not per_site:
        return None
    site = lambda h: site_of_hit(snapshot, h)  # noqa: E731
    return collapse(hits[:WINDOW], site, per_site, limit, page, complete or len(hits) > WINDOW)


def page_of(hits: list[Any], folded: Collapsed[Any] | None, page: int, limit: int) -> list[Any]:
    """Page ``page`` of the ranking, or of the collapsed pages."""
    if folded is None:
        return hits[(page - 1) * limit : page * limit]
    return [h for h, _ in folded.pages[page - 1]]


def more_from_site(folded: Collapsed[Any], results: list[dict[str, Any]], per_site: int) -> None:
    """Mark each site's last result on the page when more of its results wait for later
    pages: ``moreFromSite: {"site", "hidden"}`` (``hidden``: how many of the ranking walked —
    at least that many more; ``site:`` finds them all)."""
    page = folded.pages[-1]
    shown = Counter(site for _, site in page)
    seen: Counter[str] = Counter()
    for item, (_, site) in zip(results, page, strict=True):
        seen[site] += 1
        hidden = folded.left.get(site, 0)
        if hidden and seen[site] == shown[site] == per_site:
            item["moreFromSite"] = {"site": site, "hidden": hidden}
