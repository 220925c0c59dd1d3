"""Typeahead: suggestions on every keystroke, from query logs to a live search box.

Write path (offline): :mod:`~lookup.typeahead.querylog` generates the data set,
:mod:`~lookup.typeahead.aggregate` folds logs into decayed scores,
:mod:`~lookup.typeahead.filters` removes rare, unsafe and private queries,
:mod:`~lookup.typeahead.trie` builds the radix trie with a top 10 per node,
:mod:`~lookup.typeahead.snapshot` writes, loads and validates the binary snapshot,
:mod:`~lookup.typeahead.pipeline` runs it all. Read path (online):
:mod:`~lookup.typeahead.serving` (:class:`SuggestService`, atomic swap, hot
blocklist), :mod:`~lookup.typeahead.trending` (the speed layer),
:mod:`~lookup.typeahead.sharding` (prefix-range shards with a head table),
:mod:`~lookup.typeahead.shard_server`, :mod:`~lookup.typeahead.router` and
:mod:`~lookup.typeahead.supervisor` (shard servers, the router in front of them and the
processes running them), :mod:`~lookup.typeahead.http` (``/v1/suggest``) and
:mod:`~lookup.typeahead.manage` (the management API).
"""

from lookup.errors import NotBuilt
from lookup.typeahead.aggregate import ScoreBoard, decay_factor, read_query_log, steady_state
from lookup.typeahead.filters import DEFAULT_BLOCKLIST, HotBlocklist, TermBlocklist, looks_private
from lookup.typeahead.normalize import normalize_prefix, normalize_query
from lookup.typeahead.pipeline import BuildConfig, MarketBuild, compile_market, run
from lookup.typeahead.serving import MARKETS, SuggestResult, SuggestService, UnknownMarket
from lookup.typeahead.sharding import (
    ShardedSuggest,
    ShardLayout,
    ShardPlan,
    ensure_shard_sets,
    plan_shards,
    shard_market,
    shard_snapshot,
)
from lookup.typeahead.snapshot import (
    Snapshot,
    SnapshotError,
    TrieSnapshotStore,
    ValidationPolicy,
    open_snapshot_store,
    publish_validated,
    validate,
    write_snapshot,
)
from lookup.typeahead.translit import phonetic_key, romanize
from lookup.typeahead.trending import TrendingPolicy, TrendingTracker
from lookup.typeahead.trie import K, RadixTrie, TrieArrays, TrieReader, brute_force_top

__all__ = [
    "DEFAULT_BLOCKLIST",
    "K",
    "MARKETS",
    "TermBlocklist",
    "BuildConfig",
    "HotBlocklist",
    "MarketBuild",
    "NotBuilt",
    "RadixTrie",
    "ScoreBoard",
    "ShardLayout",
    "ShardPlan",
    "ShardedSuggest",
    "Snapshot",
    "SnapshotError",
    "SuggestResult",
    "SuggestService",
    "TrendingPolicy",
    "TrendingTracker",
    "TrieSnapshotStore",
    "TrieArrays",
    "TrieReader",
    "UnknownMarket",
    "ValidationPolicy",
    "brute_force_top",
    "compile_market",
    "decay_factor",
    "ensure_shard_sets",
    "looks_private",
    "normalize_query",
    "normalize_prefix",
    "open_snapshot_store",
    "phonetic_key",
    "plan_shards",
    "publish_validated",
    "read_query_log",
    "romanize",
    "run",
    "shard_market",
    "shard_snapshot",
    "steady_state",
    "validate",
    "write_snapshot",
]
