"""Web search's knobs."""

from __future__ import annotations

from lookup.settings.base import (
    Setting,
    as_flag,
    as_positive_float,
    as_share,
    as_text,
    as_track_total,
    as_typo_below,
)


def as_canary_queries(raw: str) -> int:
    """How many canary queries a version keeps: 0 (off) to 200."""
    n = int(raw)
    if not 0 <= n <= 200:
        raise ValueError(f"must be between 0 and 200, not {n}")
    return n


def as_canary_depth(raw: str) -> int:
    """How deep in a candidate's results a canary's page may be found: 1 to 100."""
    n = int(raw)
    if not 1 <= n <= 100:
        raise ValueError(f"must be between 1 and 100, not {n}")
    return n


def as_growth(raw: str) -> float:
    """An upper bound on a ratio of document counts: 1 or more."""
    value = float(raw)
    if not value >= 1:
        raise ValueError("expected a number of 1 or more")
    return value


def as_per_site(raw: str) -> int:
    """Results per site when collapsing: 0 (off) to 10."""
    n = int(raw)
    if not 0 <= n <= 10:
        raise ValueError(f"must be between 0 and 10, not {n}")
    return n


def as_replicas(raw: str) -> int:
    """Shard server processes per shard in a fleet: 0 (none) to 8."""
    n = int(raw)
    if not 0 <= n <= 8:
        raise ValueError(f"must be between 0 and 8, not {n}")
    return n


KNOBS: list[Setting] = [
    # -- web search ----------------------------------------------------------------------
    Setting(
        "search_index_store",
        "LOOKUP_SEARCH_INDEX_STORE",
        "",
        as_text,
        "url",
        "postgresql://USER@HOST/DB",
        "where `lookup index` publishes index versions and the search service serves them "
        "from: postgresql://… keeps them as versions in the database (segment files as "
        "chunks with checksums, the live one swapped in one transaction and announced by "
        "NOTIFY), each process fetching what it serves into its own <data-dir>/search; "
        "empty: the directory <data-dir>/search itself.",
    ),
    Setting(
        "search_crawl_store",
        "LOOKUP_SEARCH_CRAWL_STORE",
        "",
        as_text,
        "url",
        "postgresql://USER@HOST/DB",
        "where `lookup crawl-publish` stores a finished crawl's events.jsonl and WARC files "
        "(line crawl/warc) for an indexer on another machine, which reads them with "
        "`lookup index postgresql://…`; empty: crawl-publish needs --to.",
    ),
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
    Setting(
        "search_collapse_per_host",
        "LOOKUP_SEARCH_COLLAPSE_PER_HOST",
        2,
        as_per_site,
        "int",
        "0..10",
        "GET /search shows at most this many results of one site on a page (host crowding, "
        "Elasticsearch's collapse); the rest move to the pages after and behind the site's "
        "moreFromSite. 0 turns it off; a request's collapse= overrides it.",
    ),
    # -- index versions: what a new version must pass before it goes live ---------------
    Setting(
        "search_min_docs_ratio",
        "LOOKUP_SEARCH_MIN_DOCS_RATIO",
        0.7,
        as_share,
        "fraction",
        "0..1",
        "a new index version must hold at least this share of the live version's documents "
        "(a crawl that broke half-way, a lost shard); fewer and it is rejected, the live one "
        "keeps serving. `lookup index --force` skips the comparison for a deliberate change.",
    ),
    Setting(
        "search_max_docs_ratio",
        "LOOKUP_SEARCH_MAX_DOCS_RATIO",
        5.0,
        as_growth,
        "ratio",
        ">= 1",
        "a new index version may hold at most this many times the live version's documents "
        "(a crawler trap, pages indexed twice); more and it is rejected.",
    ),
    Setting(
        "search_canary_queries",
        "LOOKUP_SEARCH_CANARY_QUERIES",
        20,
        as_canary_queries,
        "int",
        "0..200",
        "known-item queries (the titles of the most-linked pages) stored with each live "
        "index version; the next version must still find their top results before it goes "
        "live. 0 stores none (the next version is checked by counts and shards only).",
    ),
    Setting(
        "search_canary_depth",
        "LOOKUP_SEARCH_CANARY_DEPTH",
        10,
        as_canary_depth,
        "int",
        "1..100",
        "a canary query passes when its page is among the candidate version's top this-many "
        "results (the first page of results).",
    ),
    Setting(
        "search_canary_min_found",
        "LOOKUP_SEARCH_CANARY_MIN_FOUND",
        0.8,
        as_share,
        "fraction",
        "0..1",
        "the share of canary queries (those whose page is still indexed) that must pass; a "
        "page that changed its title may fail its query, a broken index fails most.",
    ),
    # -- query analysis --------------------------------------------------------------------
    Setting(
        "search_synonyms",
        "LOOKUP_SEARCH_SYNONYMS",
        "",
        as_text,
        "path",
        "",
        "the synonym table applied to web-search queries (js, javascript / k8s => "
        "kubernetes; lookup/search/synonyms.py): unset: <data-dir>/search/synonyms.txt, "
        "written with a few seed rules when the server first starts; 'off': none. Re-read "
        "within a second of an edit, no rebuild.",
    ),
    Setting(
        "search_synonym_weight",
        "LOOKUP_SEARCH_SYNONYM_WEIGHT",
        0.5,
        as_share,
        "fraction",
        "0..1",
        "a synonym's BM25 weight next to the word as typed (1): below 1, pages with the "
        "word the user wrote rank above pages with only its synonym.",
    ),
    Setting(
        "search_typos",
        "LOOKUP_SEARCH_TYPOS",
        True,
        as_flag,
        "flag",
        "",
        "typo tolerance in web-search results: a word no page has (see search_typo_below) "
        "also finds the index terms one typo away (from 5 letters; two from 9), each "
        "weighing less than a word as typed, and the answer's corrections say so "
        "(lookup/search/expansion.py); a request's typos=false turns it off.",
    ),
    Setting(
        "search_typo_below",
        "LOOKUP_SEARCH_TYPO_BELOW",
        1,
        as_typo_below,
        "pages",
        "1..10",
        "typo tolerance applies to a written word found in fewer pages than this: 1, only "
        "words no page has (a rare word spelt right keeps its exact answer); 3, rare words "
        "too (their neighbours join the results, ranked lower).",
    ),
    Setting(
        "search_member_ttl",
        "LOOKUP_SEARCH_MEMBER_TTL",
        10.0,
        as_positive_float,
        "s",
        "",
        "seconds a shard replica's membership record lives in etcd without a keep-alive "
        "(renewed every third of it): a killed replica leaves coordinators' views within it "
        "(lookup/search/membership.py).",
    ),
    Setting(
        "search_shards",
        "LOOKUP_SEARCH_SHARDS",
        "",
        as_text,
        "url",
        "etcd, or http://HOST:2379",
        "where an API worker's search coordinator finds its shards: empty, in this process "
        "(the embedded default); 'etcd' (the etcd_url setting) or an etcd URL, the shard "
        "servers registered there (`lookup search serve-shard --register`), followed as "
        "they join and leave (lookup/search/cluster.py).",
    ),
    Setting(
        "search_fleet_replicas",
        "LOOKUP_SEARCH_FLEET_REPLICAS",
        2,
        as_replicas,
        "int",
        "0..8",
        "`lookup up --backend …,etcd` starts this many shard server processes per shard of "
        "the built search index (registered in the fleet's etcd) and points the API workers "
        "at them (lookup/searchfleet.py); 0 keeps search in each worker's process.",
    ),
    Setting(
        "search_members_poll",
        "LOOKUP_SEARCH_MEMBERS_POLL",
        0.5,
        as_positive_float,
        "s",
        "",
        "how often a coordinator reads the shard membership from etcd; while etcd does not "
        "answer it keeps the last members it read and reports them as stale.",
    ),
]
