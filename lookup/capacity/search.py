"""Web search's estimate (seed 003): postings, index size per shard, the fan-out tail.

The figure that shapes the design is the fan-out tail: every query asks every
shard, so one slow shard in a thousand makes almost one query in ten slow.
"""

from __future__ import annotations

from dataclasses import dataclass

from lookup.capacity.checks import Validated, assume, fraction
from lookup.capacity.core import Plan, figure, working


@dataclass(frozen=True)
class SearchAssumptions(Validated):
    """Web search's sizing assumptions (seed 003: 10B documents, 100 shards)."""

    documents: float = assume(10e9, "documents in the index")
    terms_per_document: float = assume(500.0, "distinct terms per document")
    bytes_per_posting: float = assume(4.0, "bytes per posting after compression")
    shards: int = assume(
        100,
        "index shards (by document) every query touches",
        minimum=1,
        inclusive=True,
        integer=True,
    )
    shard_slow_probability: float = fraction(
        0.001, "chance one shard answers slowly (e.g. beyond its p99.9)", allow_one=True
    )
    top_k: int = assume(
        10, "results each shard returns to the merger", minimum=1, inclusive=True, integer=True
    )
    pages_per_month: float = assume(1e9, "pages crawled per month")
    page_bytes: float = assume(100e3, "average raw page in bytes")
    text_bytes_per_page: float = assume(5e3, "extracted text per page in bytes")
    seen_urls: float = assume(10e9, "URLs in the seen-URL Bloom filter")
    bloom_fp_rate: float = fraction(
        0.01, "seen-URL Bloom filter false-positive rate", allow_zero=False
    )


class SearchPlan(Plan):
    """Search's estimate: postings and index size, extracted text, fan-out tail, seen-set."""

    inputs = SearchAssumptions
    steps = (
        figure("postings", "Postings", "count",
               "{a.documents} documents × {a.terms_per_document} terms"),
        figure("index_bytes", "Inverted index", "B", "{postings} × {a.bytes_per_posting:B}"),
        figure("shard_index_bytes", "Per shard ({a.shards:raw} shards)", "B",
               "{index_bytes:q} / {a.shards:raw}"),
        figure("text_bytes_per_month", "Extracted text a month", "B",
               "{a.pages_per_month} pages × {a.text_bytes_per_page:B}"),
        figure("page_to_text_ratio", "Raw page vs its text", "times smaller",
               "{a.page_bytes:B} / {a.text_bytes_per_page:B}"),
        # The closed form loses precision for tiny probabilities; the helper does not.
        figure("fanout_tail_probability", "Queries that hit at least one slow shard",
               "fraction", "1 − (1 − {a.shard_slow_probability})^{a.shards:raw}",
               by="fanout_tail_probability({a.shard_slow_probability}, {a.shards})"),
        figure("candidates_merged", "Results merged per query", "results",
               "{a.shards:raw} shards × top {a.top_k:raw}"),
        working("slow_one_in", "1 / {a.shard_slow_probability}"),
        working("bloom_bits_per_url", "−ln {a.bloom_fp_rate} / (ln 2)²", "bits"),
        figure("seen_url_bloom_bytes", "Seen-URL Bloom filter", "B",
               "{a.seen_urls} × {bloom_bits_per_url} bits / 8"),
    )  # fmt: skip

    def driver(self) -> str:
        """The one number that shapes the design, and why."""
        p = self.assumptions.shard_slow_probability
        one_in = self.say("{slow_one_in}") if p else "∞"
        return self.say(
            "The fan-out tail drives the design: the {index_bytes:B} index is sharded by "
            "document over {a.shards:raw} shards, so every query touches all of them and a "
            "one-in-" + one_in + " slow shard makes {fanout_tail_probability:fraction} of "
            "queries slow — hence hedged requests to replicas and per-shard deadlines with "
            "partial results."
        )


def search(a: SearchAssumptions = SearchAssumptions()) -> SearchPlan:
    """Size web search: postings, index bytes per shard, extracted text, fan-out tail."""
    return SearchPlan.of(a)
