"""The distributed cache's estimate (seed 004, "Design a Distributed Cache"): the store must
be sized for the miss rate, not the hit rate.

The seed's practice figure: 200k requests/s at a 95% hit rate send 10k reads/s to the
database — one primary's worth; at 90% it is 20k/s, twice as much, for a drop of five
points. Losing one of N cache nodes adds its 1/N share of hits to the store's load;
a cold restart of the whole tier sends every request there.
"""

from __future__ import annotations

from dataclasses import dataclass

from lookup.capacity.checks import Validated, assume, fraction
from lookup.capacity.core import Plan, figure


@dataclass(frozen=True)
class CacheAssumptions(Validated):
    """Traffic and hit rates (seed: 200k requests/s, 95% then 90%)."""

    requests_per_s: float = assume(200_000, "requests per second at the cache tier")
    hit_rate: float = fraction(0.95, "share of requests the cache answers", allow_one=True)
    lower_hit_rate: float = fraction(0.90, "the hit rate it is compared with", allow_one=True)
    reads_per_primary: float = assume(10_000, "reads per second one database primary serves")
    cache_nodes: int = assume(10, "nodes of the cache tier", minimum=1, inclusive=True,
                              integer=True)  # fmt: skip


class CachePlan(Plan):
    """Store load at two hit rates, during the loss of one node, and after a cold restart."""

    inputs = CacheAssumptions
    steps = (
        figure("store_reads_per_s", "Store reads at the hit rate", "/s",
               "{a.requests_per_s} × (1 − {a.hit_rate})"),
        figure("store_reads_lower_per_s", "Store reads at the lower hit rate", "/s",
               "{a.requests_per_s} × (1 − {a.lower_hit_rate})"),
        figure("miss_rate_ratio", "Store load, lower hit rate ÷ hit rate", "times",
               "{store_reads_lower_per_s:q} / {store_reads_per_s:q}"),
        figure("primaries", "Primaries at the hit rate", "count",
               "ceil({store_reads_per_s:q} / {a.reads_per_primary})"),
        figure("primaries_lower", "Primaries at the lower hit rate", "count",
               "ceil({store_reads_lower_per_s:q} / {a.reads_per_primary})"),
        figure("node_loss_reads_per_s", "Store reads with one cache node lost", "/s",
               "{store_reads_per_s:q} + {a.requests_per_s} × {a.hit_rate} / {a.cache_nodes}"),
        figure("cold_reads_per_s", "Store reads after a cold restart of the tier", "/s",
               "{a.requests_per_s}"),
        figure("cold_ratio", "Cold restart ÷ warm store load", "times",
               "{cold_reads_per_s:q} / {store_reads_per_s:q}"),
    )  # fmt: skip

    def driver(self) -> str:
        """The one number that shapes the design, and why."""
        return self.say(
            "The miss rate drives the design: {a.requests_per_s} requests/s at a "
            "{a.hit_rate:fraction} hit rate leave {store_reads_per_s:q} for the store, at "
            "{a.lower_hit_rate:fraction} {store_reads_lower_per_s:q} — {miss_rate_ratio}× "
            "the load ({primaries} primary vs {primaries_lower}); a cold restart sends all "
            "{cold_reads_per_s:q} ({cold_ratio}× the warm load), so the tier restarts "
            "warmed or in stages and the store is sized for the miss rate."
        )


def cache(a: CacheAssumptions = CacheAssumptions()) -> CachePlan:
    """Size the store behind a cache: reads at two hit rates, a node lost, a cold restart."""
    return CachePlan.of(a)
