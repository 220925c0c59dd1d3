"""Estimate answers, computed — never stored: a planner's figure or a block's formula.

An estimate item names a :mod:`lookup.capacity` planner and one of its figures, or one
of the :data:`FUNCTIONS` below (each a thin, named call into the helper that owns the
formula: :mod:`lookup.capacity.helpers`, :mod:`lookup.geo.geohash`, the Snowflake
layout). Either way the answer comes back as a :class:`~lookup.study.measure.Measured`
whose chain is the working a learner compares theirs with.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from typing import Any

from lookup import capacity
from lookup.capacity.units import format_quantity, number
from lookup.study.measure import Measured


@dataclass(frozen=True)
class Formula:
    """A named formula: ``fn(**params) -> (value, chain lines)`` in ``unit``."""

    name: str
    unit: str
    fn: Callable[..., tuple[float, list[str]]]
    defaults: Mapping[str, float]


FUNCTIONS: dict[str, Formula] = {}


def _formula(unit: str, **defaults: float) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    def register(fn: Callable[..., tuple[float, list[str]]]) -> Callable[..., Any]:
        FUNCTIONS[fn.__name__] = Formula(fn.__name__, unit, fn, defaults)
        return fn

    return register


def _n(x: float) -> str:
    return number(x)


@_formula("count", alphabet=62)
def keyspace(length: float, alphabet: float = 62) -> tuple[float, list[str]]:
    """Distinct keys of ``length`` characters."""
    value = float(capacity.keyspace(int(length), int(alphabet)))
    return value, [f"{int(alphabet)}^{int(length)} = {_n(value)} keys"]


@_formula("chars", max_density=0.01, alphabet=62)
def key_length_for(
    count: float, max_density: float = 0.01, alphabet: float = 62
) -> tuple[float, list[str]]:
    """Shortest key length whose space is at most ``max_density`` full of ``count`` keys."""
    length = capacity.key_length_for(count, max_density, int(alphabet))
    chain = [
        f"need {int(alphabet)}^L ≥ {_n(count)} / {_n(max_density)} = {_n(count / max_density)}"
    ]
    if length > 1:
        chain.append(
            f"{int(alphabet)}^{length - 1} = {_n(float(alphabet) ** (length - 1))} is too small"
        )
    chain.append(f"{int(alphabet)}^{length} = {_n(float(alphabet) ** length)} → L = {length}")
    return float(length), chain


@_formula("B")
def bloom_size_bytes(n: float, fp_rate: float) -> tuple[float, list[str]]:
    """Bytes of an optimally hashed Bloom filter holding ``n`` items."""
    bits = capacity.bloom_bits_per_item(fp_rate)
    value = capacity.bloom_size_bytes(n, fp_rate)
    return value, [
        f"bits per item = −ln({_n(fp_rate)}) / (ln 2)² = {bits:.2f}",
        f"{_n(n)} items × {bits:.2f} bits / 8 = {format_quantity(value, 'B')}",
    ]


@_formula("bit")
def bloom_bits_per_item(fp_rate: float) -> tuple[float, list[str]]:
    """Bits per item at false-positive rate ``fp_rate``."""
    bits = capacity.bloom_bits_per_item(fp_rate)
    return bits, [f"−ln({_n(fp_rate)}) / (ln 2)² = {bits:.2f} bits per item"]


@_formula("count")
def bloom_optimal_hashes(fp_rate: float) -> tuple[float, list[str]]:
    """Number of hash functions for a filter sized for ``fp_rate``."""
    k = capacity.bloom_optimal_hashes(fp_rate)
    bits = capacity.bloom_bits_per_item(fp_rate)
    return float(k), [
        f"k = (bits per item) × ln 2 = {bits:.2f} × 0.693 = {bits * math.log(2):.2f} → {k}"
    ]


@_formula("fraction")
def fanout_tail_probability(p_slow: float, shards: float) -> tuple[float, list[str]]:
    """Chance a query that waits for every shard meets at least one slow one."""
    value = capacity.fanout_tail_probability(p_slow, int(shards))
    return value, [f"1 − (1 − {_n(p_slow)})^{int(shards)} = {format_quantity(value, 'fraction')}"]


@_formula("fraction")
def hedged_tail_probability(p_slow: float, shards: float) -> tuple[float, list[str]]:
    """The same with one hedged request per shard: a shard is slow only if both copies are."""
    both = p_slow * p_slow
    value = capacity.fanout_tail_probability(both, int(shards))
    return value, [
        f"a shard is slow only if both replicas are: {_n(p_slow)}² = {_n(both)}",
        f"1 − (1 − {_n(both)})^{int(shards)} = {format_quantity(value, 'fraction')}",
    ]


@_formula("count")
def littles_law(rate: float, seconds: float) -> tuple[float, list[str]]:
    """Requests in flight: arrival rate × time each takes."""
    value = capacity.littles_law(rate, seconds)
    return value, [f"{_n(rate)}/s × {_n(seconds)} s = {_n(value)} in flight"]


@_formula("count", interval_days=1.0)
def steady_state_score(
    daily_count: float, half_life_days: float, interval_days: float = 1.0
) -> tuple[float, list[str]]:
    """Where a decayed score settles for a query searched ``daily_count`` times a day."""
    factor = capacity.decay_factor(half_life_days, interval_days)
    per_interval = daily_count * interval_days
    value = capacity.steady_state_score(per_interval, factor)
    return value, [
        f"decay per run = 0.5^({_n(interval_days)} / {_n(half_life_days)}) = {factor:.4f}",
        f"score settles at {_n(per_interval)} / (1 − {factor:.4f}) = {_n(value)}",
    ]


@_formula("fraction")
def decay_factor(half_life: float, interval: float) -> tuple[float, list[str]]:
    """Multiplier per interval so a score halves every ``half_life``."""
    value = capacity.decay_factor(half_life, interval)
    return value, [f"0.5^({_n(interval)} / {_n(half_life)}) = {value:.4f}"]


@_formula("/s")
def per_second(count: float, days: float) -> tuple[float, list[str]]:
    """A count over ``days`` as a rate per second."""
    seconds = days * capacity.SECONDS_PER_DAY
    value = count / seconds
    return value, [f"{_n(count)} / ({_n(days)} × 86,400 s) = {format_quantity(value, '/s')}"]


@_formula("B")
def total_bytes(count: float, bytes_each: float) -> tuple[float, list[str]]:
    """Bytes for ``count`` things of ``bytes_each``."""
    value = count * bytes_each
    return value, [f"{_n(count)} × {_n(bytes_each)} B = {format_quantity(value, 'B')}"]


@_formula("B")
def limiter_memory_bytes(identities: float, bytes_per_identity: float) -> tuple[float, list[str]]:
    """Memory a rate limiter keeps for ``identities`` at ``bytes_per_identity`` each."""
    value = identities * bytes_per_identity
    return value, [
        f"{_n(identities)} identities × {_n(bytes_per_identity)} B = {format_quantity(value, 'B')}"
    ]


@_formula("count")
def fixed_window_worst_burst(limit: float) -> tuple[float, list[str]]:
    """Requests a fixed window lets through in one window-length across a boundary."""
    value = 2 * limit
    return value, [
        f"{_n(limit)} at the end of one window + {_n(limit)} at the start of the next",
        f"= {_n(value)} within one window's length",
    ]


@_formula("count")
def quorum_overlap(n: float, r: float, w: float) -> tuple[float, list[str]]:
    """Replicas every read quorum is sure to share with every write quorum (0: none)."""
    value = max(0.0, r + w - n)
    verdict = (
        "every read meets the latest write" if value > 0 else "a read can miss the latest write"
    )
    return value, [
        f"max(0, R + W − N) = max(0, {_n(r)} + {_n(w)} − {_n(n)}) = {_n(value)}: {verdict}"
    ]


@_formula("count")
def snowflake_ids_per_ms(sequence_bits: float) -> tuple[float, list[str]]:
    """Ids one Snowflake worker can mint in a millisecond."""
    value = float(2 ** int(sequence_bits))
    return value, [f"2^{int(sequence_bits)} sequence values = {_n(value)} ids per ms per worker"]


@_formula("years")
def snowflake_years(timestamp_bits: float) -> tuple[float, list[str]]:
    """Years a millisecond timestamp of ``timestamp_bits`` lasts from its epoch."""
    ms = 2.0 ** int(timestamp_bits)
    years = ms / 1000 / capacity.SECONDS_PER_DAY / capacity.DAYS_PER_YEAR
    return years, [
        f"2^{int(timestamp_bits)} ms = {_n(ms)} ms",
        f"/ 1000 / 86,400 / {_n(capacity.DAYS_PER_YEAR)} = {years:.1f} years",
    ]


@_formula("chars")
def base62_chars_for_bits(bits: float) -> tuple[float, list[str]]:
    """Base62 characters needed to spell every ``bits``-bit number."""
    chars = math.ceil(int(bits) / math.log2(62))
    while 62**chars < 2 ** int(bits):  # guard the float division at exact powers
        chars += 1
    return float(chars), [
        f"log62(2^{int(bits)}) = {int(bits)} / log2(62) = {int(bits) / math.log2(62):.2f}",
        f"round up → {chars} characters",
    ]


@_formula("m", lat=0.0)
def geohash_cell_width_m(precision: float, lat: float = 0.0) -> tuple[float, list[str]]:
    """East-west width of a geohash cell of ``precision`` characters at latitude ``lat``."""
    from lookup.geo.geohash import axis_bits, cell_size_m

    lat_bits, lng_bits = axis_bits(int(precision))
    height, width = cell_size_m(int(precision), lat)
    return width, [
        f"{int(precision)} characters × 5 bits = {lat_bits} latitude + {lng_bits} longitude bits",
        f"360° / 2^{lng_bits} of longitude at latitude {_n(lat)}° = {width:,.0f} m wide "
        f"(and {height:,.0f} m tall)",
    ]


@_formula("count", lat=0.0)
def geohash_precision_for_radius(radius_m: float, lat: float = 0.0) -> tuple[float, list[str]]:
    """The finest precision whose 3×3 block of cells still covers ``radius_m``."""
    from lookup.geo.geohash import cell_size_m, precision_for_radius

    p = precision_for_radius(radius_m, lat)
    height, width = cell_size_m(p, lat)
    return float(p), [
        f"cells of precision {p} are {height:,.0f} m tall × {width:,.0f} m wide at {_n(lat)}°",
        f"the smaller side ≥ the {_n(radius_m)} m radius, so the user's cell and its 8 "
        f"neighbours cover the circle → precision {p}",
    ]


@_formula("count", headroom=1.0)
def servers_needed(
    peak_rate: float, rate_per_server: float, headroom: float = 1.0
) -> tuple[float, list[str]]:
    """Servers to carry ``peak_rate`` at ``rate_per_server`` with ``headroom`` to spare."""
    bare = peak_rate / rate_per_server
    value = float(math.ceil(bare * headroom))
    return value, [
        f"{_n(peak_rate)}/s / {_n(rate_per_server)}/s per server = {bare:.1f}",
        f"× {_n(headroom)} headroom, rounded up = {int(value)} servers",
    ]


@_formula("bit/s")
def bandwidth_bits_per_s(rate: float, bytes_each: float) -> tuple[float, list[str]]:
    """Bits per second to move ``rate`` objects a second of ``bytes_each``."""
    value = rate * bytes_each * 8
    return value, [f"{_n(rate)}/s × {_n(bytes_each)} B × 8 = {format_quantity(value, 'bit/s')}"]


# -- the planners ------------------------------------------------------------------
def _depends_on(plan: Any, key: str) -> list[str]:
    """Steps ``key`` is worked out from (itself included), in the plan's reading order."""
    index = type(plan).step_index
    seen: set[str] = set()
    todo = [key]
    while todo:
        name = todo.pop()
        if name in seen or name not in index:
            continue
        seen.add(name)
        for template in index[name].templates():
            todo.extend(slot.name for slot in template.slots())
    return [step.key for step in type(plan).steps if step.key in seen]


def plan_figure(system: str, figure: str, params: Mapping[str, Any]) -> Measured:
    """The planner's ``figure`` for assumptions ``params``, with its chain of rows."""
    p = capacity.plan(system, **params)
    values = capacity.figures(p)
    if figure not in values:
        raise KeyError(f"the {system} planner has no figure {figure!r}")
    rows = {row.key: row for row in p.rows()}
    chain = [
        f"{rows[k].label}: {rows[k].formula} = {rows[k].text}"
        for k in _depends_on(p, figure)
        if k in rows
    ]
    unit = type(p).step_index[figure].unit
    if figure not in rows:
        chain.append(f"{figure} = {format_quantity(values[figure], unit)}")
    return Measured(float(values[figure]), unit, tuple(chain))


def plan_defaults(system: str) -> dict[str, Any]:
    """The planner's own assumptions (the design text's figures) by name."""
    cls, _ = capacity.PLANNERS[system]
    default = cls()
    return {f.name: getattr(default, f.name) for f in fields(cls)}


def function_value(name: str, params: Mapping[str, Any]) -> Measured:
    """The formula ``name`` of :data:`FUNCTIONS` worked out on ``params``."""
    if name not in FUNCTIONS:
        raise KeyError(f"no formula {name!r}; known: {', '.join(sorted(FUNCTIONS))}")
    formula = FUNCTIONS[name]
    value, chain = formula.fn(**{**formula.defaults, **params})
    return Measured(float(value), formula.unit, tuple(chain))
