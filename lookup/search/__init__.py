"""Web search over what the crawler fetched: an inverted index sharded by document.

Write path: :func:`build_index` turns a crawl directory (``events.jsonl`` + WARC
files) into immutable segments with compressed postings and skip pointers, published
as a versioned manifest. Read path: :class:`SearchService` serves the live version
through a :class:`Coordinator` (fan-out, per-shard deadline, hedged requests to
replicas) with a real-time tier for pages fetched since the last build. The published
versions live in an :class:`IndexLocation` (a directory today: :func:`open_index_location`).

The dashboard and notebooks use the names exported here.
"""

from lookup.errors import NotBuilt
from lookup.search.analysis import (
    ParsedQuery,
    Phrase,
    analyze,
    analyze_document,
    analyze_query,
    parse_query,
)
from lookup.search.bm25 import K1, B, Signals, idf
from lookup.search.coordinator import Coordinator, FaultSwitch, QueryError
from lookup.search.events import EventLogReader, PageEvent, PageStore
from lookup.search.extract import extract_page
from lookup.search.indexer import IndexReport, build_index, shard_of
from lookup.search.location import DirectoryIndexLocation, IndexLocation, open_index_location
from lookup.search.manifest import current_manifest
from lookup.search.postings import PostingList, decode_varints, encode_varints, intersect_cursors
from lookup.search.realtime import RealtimeTier
from lookup.search.segment import SegmentReader, merge_segments
from lookup.search.service import SearchService
from lookup.search.shard import IndexVersion
from lookup.search.snippets import make_snippet

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
