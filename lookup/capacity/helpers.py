"""The small formulas that stand on their own: key space, Bloom filters, fan-out, decay.

Notebooks and charts call them directly; the planners name them where a figure is
a rule rather than plain arithmetic (the shortest key length that stays sparse, the
better whole number of hash functions) or where a closed form loses precision
(the fan-out tail at tiny probabilities).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from lookup.capacity.checks import check as _check

SECONDS_PER_DAY = 86_400
SECONDS_PER_HOUR = 3_600
DAYS_PER_YEAR = 365
MONTHS_PER_YEAR = 12
BASE62 = 62


def keyspace(length: int, alphabet: int = BASE62) -> int:
    """How many distinct keys of ``length`` characters an ``alphabet`` can spell."""
    length = _check("length", length, minimum=0, inclusive=True, integer=True)
    alphabet = _check("alphabet", alphabet, minimum=2, inclusive=True, integer=True)
    return alphabet**length


def density(count: float, length: int, alphabet: int = BASE62) -> float:
    """Fraction of the key space of ``length`` characters used by ``count`` keys.

    Above 1 means the keys cannot fit at all.
    """
    count = _check("count", count, minimum=0, inclusive=True)
    return count / keyspace(length, alphabet)


def key_length_for(count: float, max_density: float = 0.01, alphabet: int = BASE62) -> int:
    """The shortest key length whose key space is at most ``max_density`` full of ``count``.

    Sizing for density rather than bare capacity keeps random keys from colliding and
    valid keys from being guessed (the seed picks 7 over 6 for this reason).
    """
    count = _check("count", count, minimum=0, inclusive=True)
    max_density = _check("max_density", max_density, minimum=0.0, maximum=1.0)
    alphabet = _check("alphabet", alphabet, minimum=2, inclusive=True, integer=True)
    if count == 0:
        return 1
    # Start from the logarithm's answer, then step to the exact boundary.
    length = max(1, math.ceil(math.log(count / max_density) / math.log(alphabet)))
    while length > 1 and density(count, length - 1, alphabet) <= max_density:
        length -= 1
    while density(count, length, alphabet) > max_density:
        length += 1
    return length


def bloom_bits_per_item(fp_rate: float) -> float:
    """Bits per item of an optimally hashed Bloom filter: −ln p / (ln 2)² (≈9.59 at 1%)."""
    fp_rate = _check("fp_rate", fp_rate, minimum=0.0, maximum=1.0, max_inclusive=False)
    return -math.log(fp_rate) / math.log(2) ** 2


def bloom_size_bytes(n: float, fp_rate: float) -> float:
    """Bytes a Bloom filter needs to hold ``n`` items at false-positive rate ``fp_rate``."""
    n = _check("n", n, minimum=0, inclusive=True)
    return n * bloom_bits_per_item(fp_rate) / 8


def bloom_false_positive_rate(bits_per_item: float, hashes: int) -> float:
    """Textbook false-positive rate (1 − e^(−k/b))^k for b bits per item and k hashes."""
    bits_per_item = _check("bits_per_item", bits_per_item)
    hashes = _check("hashes", hashes, minimum=1, inclusive=True, integer=True)
    return (-math.expm1(-hashes / bits_per_item)) ** hashes


def bloom_optimal_hashes(fp_rate: float) -> int:
    """Whole number of hash functions that minimises false positives at the sized filter.

    The real optimum is (bits per item) × ln 2 = −log2 p; of its floor and ceiling,
    the one with the lower textbook false-positive rate wins.
    """
    bits = bloom_bits_per_item(fp_rate)
    ideal = bits * math.log(2)
    candidates = {max(1, math.floor(ideal)), max(1, math.ceil(ideal))}
    return min(candidates, key=lambda k: (bloom_false_positive_rate(bits, k), k))


def fanout_tail_probability(p_slow: float, shards: int) -> float:
    """Chance a query touching every shard meets at least one slow one: 1 − (1 − p)^shards."""
    p_slow = _check("p_slow", p_slow, minimum=0.0, inclusive=True, maximum=1.0)
    shards = _check("shards", shards, minimum=1, inclusive=True, integer=True)
    if p_slow == 1.0:
        return 1.0
    return -math.expm1(shards * math.log1p(-p_slow))


def decay_factor(half_life: float, interval: float) -> float:
    """Multiplier applied to a score per ``interval`` so it halves every ``half_life``.

    Both in the same unit (days, hours, ...): 0.5^(interval / half_life).
    """
    half_life = _check("half_life", half_life)
    interval = _check("interval", interval, minimum=0.0, inclusive=True)
    return 0.5 ** (interval / half_life)


def steady_state_score(daily_count: float, factor: float) -> float:
    """Where ``score = factor × score + daily_count`` settles: daily_count / (1 − factor)."""
    daily_count = _check("daily_count", daily_count, minimum=0.0, inclusive=True)
    factor = _check("factor", factor, minimum=0.0, inclusive=True, maximum=1.0, max_inclusive=False)
    return daily_count / (1 - factor)


def decay_series(
    daily_count: float,
    factor: float,
    days: int,
    stop_after: int | None = None,
    start: float = 0.0,
) -> list[float]:
    """Score at the end of each day 0..``days`` under ``score = factor × score + count``.

    The query is searched ``daily_count`` times a day up to and including day
    ``stop_after`` (every day when ``None``) and not at all afterwards — for plotting
    the climb to the steady state and the halving once a query goes quiet.
    """
    daily_count = _check("daily_count", daily_count, minimum=0.0, inclusive=True)
    factor = _check("factor", factor, minimum=0.0, inclusive=True, maximum=1.0)
    days = _check("days", days, minimum=0, inclusive=True, integer=True)
    if stop_after is not None:
        stop_after = _check("stop_after", stop_after, minimum=0, inclusive=True, integer=True)
    score = _check("start", start, minimum=0.0, inclusive=True)
    series = [score]
    for day in range(1, days + 1):
        count = daily_count if stop_after is None or day <= stop_after else 0.0
        score = factor * score + count
        series.append(score)
    return series


def littles_law(rate: float, time: float) -> float:
    """Requests in flight = arrival rate × time each one takes (Little's law)."""
    rate = _check("rate", rate, minimum=0.0, inclusive=True)
    time = _check("time", time, minimum=0.0, inclusive=True)
    return rate * time


def keyspace_fill_series(
    links_per_year: float,
    years: int,
    lengths: Sequence[int] = (6, 7, 8),
    alphabet: int = BASE62,
) -> list[dict[str, float]]:
    """Key-space density year by year (0..``years``) for each key length, long form.

    One dict per (length, year): ``length``, ``year``, ``links``, ``key_space``,
    ``density`` — ready for a line chart coloured by length.
    """
    links_per_year = _check("links_per_year", links_per_year, minimum=0.0, inclusive=True)
    years = _check("years", years, minimum=1, inclusive=True, integer=True)
    if not lengths:
        raise ValueError("lengths must name at least one key length")
    rows: list[dict[str, float]] = []
    for length in lengths:
        space = keyspace(length, alphabet)
        for year in range(years + 1):
            links = links_per_year * year
            rows.append(
                {
                    "length": length,
                    "year": year,
                    "links": links,
                    "key_space": float(space),
                    "density": links / space,
                }
            )
    return rows
