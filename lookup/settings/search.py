"""Web search's knobs."""

from __future__ import annotations

from lookup.settings.base import (
    Setting,
    as_flag,
    as_positive_float,
    as_track_total,
)

KNOBS: list[Setting] = [
    # -- web search ----------------------------------------------------------------------
    Setting(
        "search_deadline_ms",
        "LOOKUP_SEARCH_DEADLINE_MS",
        None,
        as_positive_float,
        "ms",
        "",
        "per-query deadline for a shard's answer before the coordinator hedges or "
        "answers partially (default: the coordinator's DEFAULT_DEADLINE_MS). The test "
        "suite raises it so a loaded machine never fakes a miss.",
    ),
    Setting(
        "search_track_total_hits",
        "LOOKUP_SEARCH_TRACK_TOTAL_HITS",
        10_000,
        as_track_total,
        "int",
        "0.., or true",
        "GET /search counts matches exactly up to this many per index segment (Elasticsearch's "
        "track_total_hits, 10,000 by default); past it a shard may take the top results "
        "by dynamic pruning and report the total as a lower bound (totalRelation: gte). "
        "true counts every match; a request's trackTotalHits overrides it.",
    ),
    Setting(
        "search_compiled",
        "LOOKUP_SEARCH_COMPILED",
        True,
        as_flag,
        "flag",
        "",
        "score plain AND/OR queries with the compiled kernels (numba, lookup/search/"
        "kernels.py; compiled once into a cache beside the module); off: the numpy path, "
        "the same results, slower.",
    ),
]
