"""Facets: how the matches of a query spread over sites, languages, crawl months and types.

Elasticsearch's ``terms`` aggregations, counted where the matches are found: each shard
counts the documents it matched, segment by segment, from the per-document columns of
:mod:`.docfields` (a ``bincount`` over the matched documents' codes) and the crawl
times; the coordinator adds the shards' counts and keeps the commonest values of each
facet (``size``, the rest summed in ``other``).

The counts cover the whole match set, not the page: exact while every segment is scored
exhaustively, which it is up to the ``trackTotalHits`` threshold. Past it a segment may
take its top results by dynamic pruning, and its counts are then those of the results it
scored — lower bounds, said by ``"relation": "gte"`` (as ``totalRelation`` says of the
total); so are counts with a shard left out by its deadline.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

import numpy as np

from lookup.search.docfields import DocFields

#: The facets, in the order an answer lists them: the field each filters (``site=``,
#: ``lang=``, ``month=``, ``type=``) and the segment column it is counted from.
FACETS = ("site", "lang", "month", "type")
_COLUMN = {"site": "host", "lang": "lang", "type": "type"}
#: Values shown per facet (the rest are summed in ``other``).
FACET_SIZE = 10


def months_of(crawled: np.ndarray) -> np.ndarray:
    """``YYYY-MM`` (UTC) of each crawl time, as numpy month strings; non-finite times dropped."""
    times = np.asarray(crawled, dtype=np.float64)
    times = times[(times >= -62_135_596_800) & (times < 253_402_300_800)]  # years 1..9999
    return np.floor(times).astype(np.int64).astype("datetime64[s]").astype("datetime64[M]")


class FacetCounts:
    """Counts per facet value over the documents added; ``exact`` until a partial set is added."""

    def __init__(self) -> None:
        self.counts: dict[str, Counter[str]] = {f: Counter() for f in FACETS}
        self.exact = True

    def add_segment(self, source: Any, docs: np.ndarray, exact: bool = True) -> None:
        """Count matched documents ``docs`` (ids) of a segment; ``exact`` False when they
        are only some of its matches."""
        self.exact = self.exact and exact
        if docs.size == 0:
            return
        for facet, name in _COLUMN.items():
            column = source.column(name)
            found = np.bincount(np.asarray(column.codes)[docs], minlength=len(column.values))
            counter = self.counts[facet]
            for code in np.flatnonzero(found).tolist():
                counter[column.values[code]] += int(found[code])
        self._add_months(np.asarray(source.crawled)[docs])

    def add_fields(self, fields: Iterable[DocFields], crawled: np.ndarray) -> None:
        """Count documents given by their fields and crawl times (the real-time tier's)."""
        for f in fields:
            self.counts["site"][f.host] += 1
            self.counts["lang"][f.lang] += 1
            self.counts["type"][f.content_type] += 1
        self._add_months(np.asarray(crawled, dtype=np.float64))

    def _add_months(self, crawled: np.ndarray) -> None:
        months, counts = np.unique(months_of(crawled), return_counts=True)
        counter = self.counts["month"]
        for month, n in zip(months.astype(str).tolist(), counts.tolist(), strict=True):
            counter[month] += int(n)

    def merge(self, other: FacetCounts) -> None:
        """Add another shard's (or segment's) counts."""
        for facet in FACETS:
            self.counts[facet].update(other.counts[facet])
        self.exact = self.exact and other.exact

    def to_json(self, size: int = FACET_SIZE, exact: bool = True) -> dict[str, Any]:
        """``{"relation", facet: {"buckets": [{"value", "count"}], "other"}}``: each facet's
        commonest values (ties by value), the rest's total in ``other``; ``relation`` is
        ``gte`` when the counts are lower bounds (``exact`` False: a shard left out)."""
        out: dict[str, Any] = {"relation": "eq" if self.exact and exact else "gte"}
        for facet in FACETS:
            ranked = sorted(self.counts[facet].items(), key=lambda kv: (-kv[1], kv[0]))
            shown = ranked[:size]
            out[facet] = {
                "buckets": [{"value": v, "count": n} for v, n in shown],
                "other": sum(n for _, n in ranked[size:]),
            }
        return out


def merge_facets(answers: Iterable[Any], complete: bool, size: int = FACET_SIZE) -> dict[str, Any]:
    """The shards' counts added up (``answers``: the ShardAnswers used), as the answer's
    ``facets``; ``complete`` False (a shard missed its deadline) makes them lower bounds."""
    total = FacetCounts()
    for a in answers:
        if a.facets is not None:
            total.merge(a.facets)
    return total.to_json(size, exact=complete)
