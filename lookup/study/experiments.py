"""Predict-then-run experiments: the figure a learner predicts, measured on the real code.

Every :class:`~lookup.study.measure.Experiment` here runs an implementation of the
workbench — the hash ring, a cluster of KV node processes, the geohash index, the rate
limiters, the Bloom filter, the read-through cache, the Snowflake generator, the search
coordinator, the typeahead trie, the shortener's key minter, the crawler's frontier and
seen-URL set — on the item's parameters and returns what it measured, with the steps
in plain words (``chain``) and further figures (``details``). Nothing is stored: change
a parameter and the answer changes the way the code makes it.

The experiments live in one module per area (``experiments_<area>.py``); each imports
what it drives only when it runs. All run embedded (no server beyond the processes an
experiment starts itself on loopback), each in seconds.
"""

from __future__ import annotations

from lookup.study.experiments_cache import EXPERIMENTS_CACHE
from lookup.study.experiments_crawler import EXPERIMENTS_CRAWLER
from lookup.study.experiments_kv import EXPERIMENTS_KV
from lookup.study.experiments_limits import EXPERIMENTS_LIMITS
from lookup.study.experiments_proximity import EXPERIMENTS_PROXIMITY
from lookup.study.experiments_search import EXPERIMENTS_SEARCH
from lookup.study.experiments_shortener import EXPERIMENTS_SHORTENER
from lookup.study.experiments_typeahead import EXPERIMENTS_TYPEAHEAD
from lookup.study.measure import Experiment

__all__ = ["EXPERIMENTS"]

#: Every experiment by name.
EXPERIMENTS: dict[str, Experiment] = {
    e.name: e
    for e in (
        *EXPERIMENTS_KV,
        *EXPERIMENTS_PROXIMITY,
        *EXPERIMENTS_LIMITS,
        *EXPERIMENTS_CACHE,
        *EXPERIMENTS_SEARCH,
        *EXPERIMENTS_TYPEAHEAD,
        *EXPERIMENTS_SHORTENER,
        *EXPERIMENTS_CRAWLER,
    )
}
