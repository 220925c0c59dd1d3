"""Back-of-envelope capacity math for the four lookup systems and web search.

The estimation habit the seeds teach: turn the assumptions into per-second rates,
then into bytes, then name the one number that drives the design. Each system has a
frozen dataclass of assumptions (defaults are the seed's figures) and a planner
function returning a frozen ``*Plan`` whose fields are every intermediate and final
figure in base units (per second, per day, bytes, bits, seconds, days, fractions).
``plan.rows()`` lists them as :class:`Figure` s in reading order, each with the
formula that produced it written out with the actual numbers, and ``plan.driver()``
is one sentence naming the number that shapes the design. Every plan also carries
the assumptions it was computed from as ``plan.assumptions``.

Each figure is declared once, in its system's module, as a key, a label, a unit and
a formula; its value and the formula shown beside it are both read from that one
formula (:mod:`lookup.capacity.formula`, :mod:`lookup.capacity.core`).

The small helpers (key space, Bloom filter sizing, fan-out tail, score decay,
Little's law) stand on their own for notebooks and charts. Quantities are shown in
decimal units, as the seeds use them (1 GB = 10^9 bytes).
"""

from lookup.capacity.cache import CacheAssumptions, CachePlan, cache
from lookup.capacity.checks import validate_assumption
from lookup.capacity.core import Figure, Plan
from lookup.capacity.crawler import CrawlerAssumptions, CrawlerPlan, crawler
from lookup.capacity.helpers import (
    BASE62,
    DAYS_PER_YEAR,
    MONTHS_PER_YEAR,
    SECONDS_PER_DAY,
    SECONDS_PER_HOUR,
    bloom_bits_per_item,
    bloom_false_positive_rate,
    bloom_optimal_hashes,
    bloom_size_bytes,
    decay_factor,
    decay_series,
    density,
    fanout_tail_probability,
    key_length_for,
    keyspace,
    keyspace_fill_series,
    littles_law,
    steady_state_score,
)
from lookup.capacity.ids import IdsAssumptions, IdsPlan, ids
from lookup.capacity.proximity import ProximityAssumptions, ProximityPlan, proximity
from lookup.capacity.registry import PLANNERS, figures, plan
from lookup.capacity.search import SearchAssumptions, SearchPlan, search
from lookup.capacity.shortener import ShortenerAssumptions, ShortenerPlan, shortener
from lookup.capacity.typeahead import TypeaheadAssumptions, TypeaheadPlan, typeahead
from lookup.capacity.units import format_quantity

__all__ = [
    "BASE62",
    "CacheAssumptions",
    "CachePlan",
    "DAYS_PER_YEAR",
    "MONTHS_PER_YEAR",
    "PLANNERS",
    "SECONDS_PER_DAY",
    "SECONDS_PER_HOUR",
    "CrawlerAssumptions",
    "CrawlerPlan",
    "Figure",
    "IdsAssumptions",
    "IdsPlan",
    "Plan",
    "ProximityAssumptions",
    "ProximityPlan",
    "SearchAssumptions",
    "SearchPlan",
    "ShortenerAssumptions",
    "ShortenerPlan",
    "TypeaheadAssumptions",
    "TypeaheadPlan",
    "bloom_bits_per_item",
    "bloom_false_positive_rate",
    "bloom_optimal_hashes",
    "bloom_size_bytes",
    "cache",
    "crawler",
    "decay_factor",
    "decay_series",
    "density",
    "fanout_tail_probability",
    "ids",
    "figures",
    "format_quantity",
    "key_length_for",
    "keyspace",
    "keyspace_fill_series",
    "littles_law",
    "plan",
    "proximity",
    "search",
    "shortener",
    "steady_state_score",
    "typeahead",
    "validate_assumption",
]
