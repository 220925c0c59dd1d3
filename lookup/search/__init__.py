"""Web search over what the crawler fetched: an inverted index sharded by document.

Write path: :func:`build_index` turns a crawl directory (``events.jsonl`` + WARC
files) into immutable segments with compressed postings and skip pointers, published
as a versioned manifest. Read path: :class:`SearchService` serves the live version
through a :class:`Coordinator` (fan-out, per-shard deadline, hedged requests to
replicas) with a real-time tier for pages fetched since the last build. The published
versions live in an :class:`IndexLocation` (a directory today: :func:`open_index_location`).

The dashboard and notebooks use the names exported here.
"""

from lookup.kit.lazy import lazy_exports

#: Each public name and the module it lives in, imported on first use.
_EXPORTS = {
    "NotBuilt": "lookup.errors",
    "ParsedQuery": "lookup.search.analysis",
    "Phrase": "lookup.search.analysis",
    "analyze": "lookup.search.analysis",
    "analyze_document": "lookup.search.analysis",
    "analyze_query": "lookup.search.analysis",
    "parse_query": "lookup.search.analysis",
    "K1": "lookup.search.bm25",
    "B": "lookup.search.bm25",
    "Signals": "lookup.search.bm25",
    "idf": "lookup.search.bm25",
    "Coordinator": "lookup.search.coordinator",
    "FaultSwitch": "lookup.search.coordinator",
    "QueryError": "lookup.search.coordinator",
    "EventLogReader": "lookup.search.events",
    "PageEvent": "lookup.search.events",
    "PageStore": "lookup.search.events",
    "extract_page": "lookup.search.extract",
    "IndexReport": "lookup.search.indexer",
    "build_index": "lookup.search.indexer",
    "shard_of": "lookup.search.indexer",
    "DirectoryIndexLocation": "lookup.search.location",
    "IndexLocation": "lookup.search.location",
    "open_index_location": "lookup.search.location",
    "current_manifest": "lookup.search.manifest",
    "PostingList": "lookup.search.postings",
    "decode_varints": "lookup.search.postings",
    "encode_varints": "lookup.search.postings",
    "intersect_cursors": "lookup.search.postings",
    "RealtimeTier": "lookup.search.realtime",
    "SegmentReader": "lookup.search.segment",
    "merge_segments": "lookup.search.segment",
    "SearchService": "lookup.search.service",
    "IndexVersion": "lookup.search.shard",
    "make_snippet": "lookup.search.snippets",
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

__all__ = [
    "B",
    "K1",
    "Coordinator",
    "DirectoryIndexLocation",
    "EventLogReader",
    "FaultSwitch",
    "IndexLocation",
    "IndexReport",
    "NotBuilt",
    "PageEvent",
    "PageStore",
    "ParsedQuery",
    "Phrase",
    "PostingList",
    "QueryError",
    "RealtimeTier",
    "SearchService",
    "SegmentReader",
    "Signals",
    "IndexVersion",
    "analyze",
    "analyze_document",
    "analyze_query",
    "build_index",
    "current_manifest",
    "decode_varints",
    "encode_varints",
    "extract_page",
    "idf",
    "intersect_cursors",
    "make_snippet",
    "merge_segments",
    "open_index_location",
    "parse_query",
    "shard_of",
]
