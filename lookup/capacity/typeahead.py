"""Typeahead's estimate (seed 002): keystroke traffic, the serving fleet, trie memory, decay.

The figure that shapes the design is requests per keystroke, not per search; the
whole index fits in one node's memory, so it is replicated rather than sharded.
"""

from __future__ import annotations

from dataclasses import dataclass

from lookup.capacity.checks import Validated, assume, fraction
from lookup.capacity.core import Plan, figure, quantity, working


@dataclass(frozen=True)
class TypeaheadAssumptions(Validated):
    """Typeahead's sizing assumptions (seed: 1B searches a day, 12 keystrokes each)."""

    searches_per_day: float = assume(1e9, "searches submitted per day")
    keystrokes_per_search: float = assume(12.0, "keystrokes typed per search")
    requests_per_search: float = assume(6.0, "requests per search after debounce and reuse")
    peak_factor: float = assume(2.0, "peak traffic as a multiple of the average")
    edge_hit_ratio: float = fraction(0.4, "share of requests answered by edge/browser caches")
    lookups_per_node_per_s: float = assume(20_000.0, "lookups one serving node handles per second")
    headroom_factor: float = assume(
        1.5,
        "spare capacity on top of the minimum fleet (1.5 = 50% more nodes)",
        minimum=1.0,
        inclusive=True,
    )
    distinct_queries: float = assume(100e6, "distinct queries kept after filtering")
    bytes_per_query: float = assume(20.0, "average bytes per query string")
    query_length_chars: float = assume(20.0, "average characters per query (plain-trie depth)")
    bytes_per_score: float = assume(4.0, "bytes per query score")
    radix_nodes_per_query: float = assume(2.0, "compressed-trie nodes per query, at most")
    node_label_bytes: float = assume(8.0, "bytes for a node's edge label", inclusive=True)
    node_children_bytes: float = assume(16.0, "bytes for a node's children", inclusive=True)
    top_k: int = assume(
        10, "suggestions precomputed per node", minimum=1, inclusive=True, integer=True
    )
    query_id_bytes: float = assume(4.0, "bytes per query id in a top-k list")
    score_half_life_days: float = assume(7.0, "days for an unsearched query's score to halve")
    build_interval_hours: float = assume(1.0, "hours between pipeline runs (decay per run)")
    example_daily_count: float = assume(
        10_000.0, "searches a day of the example query for the steady score", inclusive=True
    )


class TypeaheadPlan(Plan):
    """Typeahead's estimate: keystroke traffic, serving fleet, trie memory and score decay."""

    inputs = TypeaheadAssumptions
    steps = (
        figure("keystrokes_per_day", "Keystrokes a day", "/day",
               "{a.searches_per_day} searches × {a.keystrokes_per_search}"),
        figure("keystroke_rate_per_s", "Every keystroke sent", "/s",
               "{keystrokes_per_day} / {SECONDS_PER_DAY} s"),
        figure("peak_keystroke_rate_per_s", "Every keystroke sent, at peak", "/s",
               "{keystroke_rate_per_s:q} × {a.peak_factor}"),
        figure("requests_per_day", "Requests a day after debounce and reuse", "/day",
               "{a.searches_per_day} searches × {a.requests_per_search}"),
        figure("request_rate_per_s", "Requests after debounce", "/s",
               "{requests_per_day} / {SECONDS_PER_DAY} s"),
        figure("peak_request_rate_per_s", "Requests after debounce, at peak", "/s",
               "{request_rate_per_s:q} × {a.peak_factor}"),
        figure("origin_peak_per_s", "Origin at peak (edge absorbs {a.edge_hit_ratio:fraction})",
               "/s", "{peak_request_rate_per_s:q} × (1 − {a.edge_hit_ratio:fraction})"),
        figure("nodes_min", "Serving nodes per region", "nodes",
               "ceil({origin_peak_per_s} / {a.lookups_per_node_per_s})"),
        figure("nodes_with_headroom", "Serving nodes with headroom", "nodes",
               "ceil({nodes_min:raw} × {a.headroom_factor})"),
        figure("string_bytes", "Query strings", "B",
               "{a.distinct_queries} × {a.bytes_per_query:B}"),
        figure("score_bytes", "Scores", "B", "{a.distinct_queries} × {a.bytes_per_score:B}"),
        figure("plain_trie_nodes", "Plain trie nodes, worst case", "count",
               "{a.distinct_queries} × {a.query_length_chars} characters [→ too many]"),
        figure("radix_nodes", "Compressed (radix) trie nodes, at most", "count",
               "{a.radix_nodes_per_query} × {a.distinct_queries}"),
        figure("node_bytes", "Bytes per node", "B",
               "label {a.node_label_bytes:B} + children {a.node_children_bytes:B}"
               " + [top-{a.top_k:raw} ids] {topk_list_bytes:B}"),
        figure("trie_bytes", "Trie", "B", "{radix_nodes} × {node_bytes:q}"),
        figure("total_bytes", "Index memory in total", "B",
               "{string_bytes:q} + {score_bytes:q} + {trie_bytes:q}"),
        quantity("topk_list_bytes", "{a.top_k} × {a.query_id_bytes}", "B"),
        figure("topk_bytes", "of which precomputed top-{a.top_k:raw} lists", "B",
               "{radix_nodes} × {topk_list_bytes:B}"),
        figure("daily_decay_factor", "Daily decay factor ({a.score_half_life_days}-day half-life)",
               "", "0.5^(1/{a.score_half_life_days})"),
        working("half_life_hours", "{a.score_half_life_days} × 24", "h"),
        figure("interval_decay_factor",
               "Decay factor per run (every {a.build_interval_hours} h)", "",
               "0.5^({a.build_interval_hours}/{half_life_hours})"),
        figure("steady_state_score",
               "Steady score of a query searched {a.example_daily_count} times a day", "",
               "{a.example_daily_count} / (1 − {daily_decay_factor})"),
    )  # fmt: skip

    def driver(self) -> str:
        """The one number that shapes the design, and why."""
        return self.say(
            "Requests per keystroke, not per search, drive the design: "
            "{a.keystrokes_per_search} keystrokes per search make "
            "{peak_keystroke_rate_per_s:/s} at peak, and debounce plus edge caching cut what "
            "reaches the origin to {origin_peak_per_s:/s} — {nodes_with_headroom:raw} nodes per "
            "region, each holding the whole {total_bytes:B} index in memory, replicated rather "
            "than sharded."
        )


def typeahead(a: TypeaheadAssumptions = TypeaheadAssumptions()) -> TypeaheadPlan:
    """Size typeahead: keystroke traffic, origin load, serving nodes, trie memory, decay."""
    return TypeaheadPlan.of(a)
