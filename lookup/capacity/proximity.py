"""Proximity search's estimate (seed 003): search and edit rates, the index, a quadtree.

The figure that shapes the design is the narrow location index: it fits in one
server's memory, so it is replicated, and edits reach it asynchronously.
"""

from __future__ import annotations

from dataclasses import dataclass

from lookup.capacity.checks import Validated, assume
from lookup.capacity.core import Plan, figure, working


@dataclass(frozen=True)
class ProximityAssumptions(Validated):
    """Proximity search's sizing assumptions (seed: 200M businesses, 100M daily users)."""

    businesses: float = assume(200e6, "businesses in the index")
    daily_active_users: float = assume(100e6, "daily active users")
    searches_per_user_per_day: float = assume(5.0, "searches per user per day")
    peak_factor: float = assume(3.0, "peak traffic as a multiple of the average")
    edits_per_day: float = assume(1e6, "business adds/edits per day (writes touching location)")
    reviews_per_day: float = assume(10e6, "reviews written per day", inclusive=True)
    index_bytes_per_business: float = assume(
        40.0, "bytes per business in the narrow location index"
    )
    profile_bytes: float = assume(1000.0, "bytes per business profile")
    review_bytes: float = assume(1000.0, "bytes per review")
    businesses_per_leaf: float = assume(100.0, "businesses a quadtree leaf holds before it splits")
    quadtree_node_bytes: float = assume(64.0, "bytes per quadtree node (bounds + child pointers)")
    id_bytes: float = assume(8.0, "bytes per business id")


class ProximityPlan(Plan):
    """Proximity's estimate: search and write rates, the narrow index, a quadtree, the rest."""

    inputs = ProximityAssumptions
    steps = (
        figure("searches_per_day", "Searches a day", "/day",
               "{a.daily_active_users} users × {a.searches_per_user_per_day}"),
        figure("search_rate_per_s", "Searches", "/s", "{searches_per_day} / {SECONDS_PER_DAY} s"),
        figure("peak_search_rate_per_s", "Searches at peak", "/s",
               "{search_rate_per_s:q} × {a.peak_factor}"),
        figure("edit_rate_per_s", "Writes touching location", "/s",
               "{a.edits_per_day} / {SECONDS_PER_DAY} s"),
        figure("reads_per_write_at_peak", "Reads per write at peak", "reads/write",
               "{peak_search_rate_per_s:q} / {edit_rate_per_s:q}"),
        figure("index_bytes", "Location index (only what search needs)", "B",
               "{a.businesses} × {a.index_bytes_per_business:B}"),
        figure("quadtree_leaves", "Quadtree leaves", "count",
               "{a.businesses} / {a.businesses_per_leaf} per leaf", at_least=1.0),
        # A full 4-ary tree with L leaves has (L − 1) / 3 inner nodes.
        figure("quadtree_internal_nodes", "Quadtree internal nodes", "count",
               "({quadtree_leaves} − 1) / 3"),
        working("quadtree_nodes", "{quadtree_leaves} + {quadtree_internal_nodes}", "count"),
        figure("quadtree_node_bytes", "Quadtree nodes", "B",
               "{quadtree_nodes} × {a.quadtree_node_bytes:B}"),
        figure("quadtree_id_bytes", "Business ids in the leaves", "B",
               "{a.businesses} × {a.id_bytes:B}"),
        figure("quadtree_total_bytes", "Quadtree in total", "B",
               "{quadtree_node_bytes:q} + {quadtree_id_bytes:q}"),
        figure("profile_bytes", "Profiles", "B", "{a.businesses} × {a.profile_bytes:B}"),
        figure("review_bytes_per_year", "Reviews a year", "B",
               "{a.reviews_per_day} × {DAYS_PER_YEAR} × {a.review_bytes:B}"),
    )  # fmt: skip

    def driver(self) -> str:
        """The one number that shapes the design, and why."""
        return self.say(
            "The narrow location index drives the design: {index_bytes:B} for "
            "{a.businesses:count} businesses fits in one server's memory, so it is replicated "
            "(not sharded) to serve {peak_search_rate_per_s:/s} at peak, and "
            "{reads_per_write_at_peak:count} reads per write let edits reach it "
            "asynchronously; profiles ({profile_bytes:B}) and reviews are an ordinary sharded "
            "database."
        )


def proximity(a: ProximityAssumptions = ProximityAssumptions()) -> ProximityPlan:
    """Size proximity search: search and edit rates, the location index, quadtree memory."""
    return ProximityPlan.of(a)
