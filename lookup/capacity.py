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

The small helpers (key space, Bloom filter sizing, fan-out tail, score decay,
Little's law) stand on their own for notebooks and charts. Quantities are shown in
decimal units, as the seeds use them (1 GB = 10^9 bytes).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

SECONDS_PER_DAY = 86_400
SECONDS_PER_HOUR = 3_600
DAYS_PER_YEAR = 365
MONTHS_PER_YEAR = 12
BASE62 = 62


# --------------------------------------------------------------------------- checks


def _check(
    name: str,
    value: Any,
    *,
    minimum: float | None = 0.0,
    inclusive: bool = False,
    maximum: float | None = None,
    max_inclusive: bool = True,
    integer: bool = False,
) -> int | float:
    """Validate one number and return it as a plain ``int``/``float``.

    Raises ``ValueError`` naming the value and the rule it broke.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be a number, got {value!r}")
    number = float(value)
    if math.isnan(number):
        raise ValueError(f"{name} must be a number, got NaN")
    if math.isinf(number):
        raise ValueError(f"{name} must be finite, got {number}")
    if integer and not number.is_integer():
        raise ValueError(f"{name} must be a whole number, got {value!r}")
    if minimum is not None:
        if inclusive and number < minimum:
            raise ValueError(f"{name} must be at least {minimum:g}, got {value!r}")
        if not inclusive and number <= minimum:
            raise ValueError(f"{name} must be greater than {minimum:g}, got {value!r}")
    if maximum is not None:
        if max_inclusive and number > maximum:
            raise ValueError(f"{name} must be at most {maximum:g}, got {value!r}")
        if not max_inclusive and number >= maximum:
            raise ValueError(f"{name} must be less than {maximum:g}, got {value!r}")
    return int(number) if integer else number


def _assume(
    default: float,
    help: str,
    *,
    minimum: float | None = 0.0,
    inclusive: bool = False,
    maximum: float | None = None,
    max_inclusive: bool = True,
    integer: bool = False,
) -> Any:
    """A dataclass field carrying its help text and validation rule in its metadata."""
    rule = {
        "minimum": minimum,
        "inclusive": inclusive,
        "maximum": maximum,
        "max_inclusive": max_inclusive,
        "integer": integer,
    }
    return field(default=default, metadata={"help": help, "rule": rule})


def _fraction(
    default: float, help: str, *, allow_zero: bool = True, allow_one: bool = False
) -> Any:
    return _assume(
        default,
        help,
        minimum=0.0,
        inclusive=allow_zero,
        maximum=1.0,
        max_inclusive=allow_one,
    )


class _Validated:
    """Mixin: validates every field of a frozen assumptions dataclass on creation."""

    def __post_init__(self) -> None:
        for f in fields(self):  # type: ignore[arg-type]
            rule = f.metadata.get("rule")
            if rule is None:
                continue
            value = _check(f.name, getattr(self, f.name), **rule)
            object.__setattr__(self, f.name, value)


def _ceil(x: float) -> int:
    """``math.ceil`` that ignores float noise (4.0000000001 is 4, not 5)."""
    return math.ceil(x - 1e-9 * max(1.0, abs(x)))


# ----------------------------------------------------------------------- formatting

_WORDS = ((1e15, "quadrillion"), (1e12, "trillion"), (1e9, "billion"), (1e6, "million"))
_SHORT = ((1e12, "T"), (1e9, "B"), (1e6, "M"))
_BYTE_PREFIXES = ("", "K", "M", "G", "T", "P", "E")


def _round_sig(value: float, sig: int = 3) -> float:
    if value == 0 or not math.isfinite(value):
        return value
    return round(value, sig - 1 - math.floor(math.log10(abs(value))))


def _g(value: float) -> str:
    """Up to three significant figures, no exponent for the magnitudes used here."""
    text = f"{value:.3g}"
    if "e" in text:
        return f"{value:.3e}"
    return text


def _plain(value: float) -> str:
    """A count or rate: '12 billion', '139,000', '38.6'."""
    if not math.isfinite(value):
        return str(value)
    rounded = _round_sig(value)
    size = abs(rounded)
    for scale, word in _WORDS:
        if size >= scale:
            return f"{_g(rounded / scale)} {word}"
    if size >= 1000:
        return f"{int(rounded):,}"
    return _g(rounded)


def _prefixed(value: float, unit: str) -> str:
    rounded = _round_sig(value)
    index = 0
    while abs(rounded) >= 1000 and index < len(_BYTE_PREFIXES) - 1:
        rounded /= 1000
        index += 1
    return f"{_g(rounded)} {_BYTE_PREFIXES[index]}{unit}"


def format_quantity(value: float, unit: str) -> str:
    """Render a figure the way the seeds write it, in decimal units.

    Units: ``"B"``, ``"B/s"`` (bytes, SI prefixes: 6e12 → "6 TB"); ``"bit"``,
    ``"bit/s"`` ("192 Gbit", "309 Mbit/s"); ``"fraction"`` (alias ``"%"``; the value
    is a fraction: 0.0034 → "0.34%"); ``"/s"``, ``"/day"``, ``"/month"``, ``"/year"``
    (139000 → "139,000/s"); ``"s"`` (seconds); ``"count"`` or ``""`` (a bare number,
    "12 billion"); any other unit is appended after a space ("5 nodes").
    """
    value = float(value)
    if not math.isfinite(value):
        return f"{value} {unit}".strip()
    if unit in ("B", "B/s"):
        return _prefixed(value, unit)
    if unit in ("bit", "bit/s"):
        return _prefixed(value, unit)
    if unit in ("fraction", "%"):
        return f"{_g(_round_sig(value * 100))}%"
    if unit.startswith("/"):
        return f"{_plain(value)}{unit}"
    if unit == "s":
        if value != 0 and abs(value) < 1:
            return f"{_g(_round_sig(value * 1000))} ms"
        if value.is_integer() and abs(value) < 1e10:
            return f"{int(value):,} s"
        return f"{_plain(value)} s"
    if unit in ("", "count"):
        return _plain(value)
    return f"{_plain(value)} {unit}"


def _n(value: float) -> str:
    """A number inside a formula: exact when short, else compact ('100M', '2,592,000')."""
    value = float(value)
    if not math.isfinite(value):
        return str(value)
    size = abs(value)
    if size >= 1e6:
        for scale, suffix in _SHORT:
            if size >= scale and _round_sig(value / scale) == value / scale:
                return f"{_g(value / scale)}{suffix}"
        if value.is_integer() and size < 1e10:
            return f"{int(value):,}"
        for scale, suffix in _SHORT:
            if size >= scale:
                return f"{_g(_round_sig(value) / scale)}{suffix}"
    if value.is_integer():
        return f"{int(value):,}"
    if size >= 1000:
        return f"{int(_round_sig(value)):,}"
    return _g(_round_sig(value))


def _q(value: float, unit: str) -> str:
    return format_quantity(value, unit)


# ------------------------------------------------------------------------- helpers


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


# -------------------------------------------------------------------------- figures


@dataclass(frozen=True)
class Figure:
    """One line of an estimate: what it is, its value in base units and how it was got."""

    key: str
    label: str
    value: float
    unit: str
    formula: str

    @property
    def text(self) -> str:
        """The value rendered for people (``format_quantity``)."""
        return format_quantity(self.value, self.unit)


# ------------------------------------------------------------------------ shortener


@dataclass(frozen=True)
class ShortenerAssumptions(_Validated):
    """The URL shortener's sizing assumptions (seed: 100M links a month, 100:1 reads)."""

    links_per_month: float = _assume(100e6, "new short links created per month")
    read_write_ratio: float = _assume(100.0, "redirects per link created")
    peak_factor: float = _assume(5.0, "peak traffic as a multiple of the average")
    retention_years: float = _assume(10.0, "years a link is kept")
    bytes_per_link: float = _assume(500.0, "bytes per stored link incl. URL, owner, index")
    bytes_per_click_event: float = _assume(200.0, "bytes per click event on the stream")
    replicas: int = _assume(3, "copies of the link store", minimum=1, inclusive=True, integer=True)
    alphabet: int = _assume(
        BASE62, "characters allowed in a key (base62)", minimum=2, inclusive=True, integer=True
    )
    max_key_density: float = _fraction(
        0.01,
        "highest acceptable key-space fill after the retention period",
        allow_zero=False,
        allow_one=True,
    )
    hot_links_per_day: float = _assume(10e6, "distinct links clicked on a given day")
    cache_bytes_per_link: float = _assume(300.0, "bytes per link in the cache")
    days_per_month: float = _assume(30.0, "days in a month for the per-second conversion")


@dataclass(frozen=True)
class ShortenerPlan:
    """The shortener's estimate: rates, storage, click stream, key length and hot set."""

    assumptions: ShortenerAssumptions
    seconds_per_month: float
    writes_per_s: float
    peak_writes_per_s: float
    reads_per_s: float
    peak_reads_per_s: float
    links_total: float
    storage_bytes: float
    replicated_storage_bytes: float
    clicks_per_day: float
    click_bytes_per_day: float
    peak_click_bytes_per_s: float
    too_short_length: int
    too_short_key_space: int
    fit_length: int
    fit_key_space: int
    fit_density: float
    key_length: int
    key_space: int
    key_density: float
    hot_set_bytes: float

    def rows(self) -> list[Figure]:
        """The estimate in reading order, each figure with its worked formula."""
        a = self.assumptions
        al = a.alphabet
        rows = [
            Figure(
                "seconds_per_month",
                "Seconds in a month",
                self.seconds_per_month,
                "s",
                f"{_n(a.days_per_month)} × {SECONDS_PER_DAY:,} s",
            ),
            Figure(
                "writes_per_s",
                "Writes (new links)",
                self.writes_per_s,
                "/s",
                f"{_n(a.links_per_month)} / {_n(self.seconds_per_month)} s",
            ),
            Figure(
                "peak_writes_per_s",
                "Writes at peak",
                self.peak_writes_per_s,
                "/s",
                f"{_q(self.writes_per_s, '/s')} × {_n(a.peak_factor)}",
            ),
            Figure(
                "reads_per_s",
                "Reads (redirects)",
                self.reads_per_s,
                "/s",
                f"{_q(self.writes_per_s, '/s')} × {_n(a.read_write_ratio)}",
            ),
            Figure(
                "peak_reads_per_s",
                "Reads at peak",
                self.peak_reads_per_s,
                "/s",
                f"{_q(self.reads_per_s, '/s')} × {_n(a.peak_factor)}",
            ),
            Figure(
                "links_total",
                f"Links in {_n(a.retention_years)} years",
                self.links_total,
                "count",
                f"{_n(a.links_per_month)} × {MONTHS_PER_YEAR} × {_n(a.retention_years)}",
            ),
            Figure(
                "storage_bytes",
                "Storage",
                self.storage_bytes,
                "B",
                f"{_n(self.links_total)} × {_q(a.bytes_per_link, 'B')}",
            ),
            Figure(
                "replicated_storage_bytes",
                f"Storage with {a.replicas} replicas",
                self.replicated_storage_bytes,
                "B",
                f"{_q(self.storage_bytes, 'B')} × {a.replicas}",
            ),
            Figure(
                "clicks_per_day",
                "Clicks a day",
                self.clicks_per_day,
                "/day",
                f"{_q(self.reads_per_s, '/s')} × {SECONDS_PER_DAY:,} s",
            ),
            Figure(
                "click_bytes_per_day",
                "Click events a day",
                self.click_bytes_per_day,
                "B",
                f"{_n(self.clicks_per_day)} × {_q(a.bytes_per_click_event, 'B')}",
            ),
            Figure(
                "peak_click_bytes_per_s",
                "Click events at peak",
                self.peak_click_bytes_per_s,
                "B/s",
                f"{_q(self.peak_reads_per_s, '/s')} × {_q(a.bytes_per_click_event, 'B')}",
            ),
        ]
        if self.too_short_length >= 1:
            rows.append(
                Figure(
                    "too_short_key_space",
                    f"Key space at {self.too_short_length} characters",
                    self.too_short_key_space,
                    "count",
                    f"{al}^{self.too_short_length} < {_n(self.links_total)} links → too short",
                )
            )
        if self.fit_length < self.key_length:
            rows += [
                Figure(
                    "fit_key_space",
                    f"Key space at {self.fit_length} characters",
                    self.fit_key_space,
                    "count",
                    f"{al}^{self.fit_length}",
                ),
                Figure(
                    "fit_density",
                    f"Fill at {self.fit_length} characters",
                    self.fit_density,
                    "fraction",
                    f"{_n(self.links_total)} / {_n(self.fit_key_space)}",
                ),
            ]
        rows += [
            Figure(
                "key_length",
                "Key length chosen",
                self.key_length,
                "chars",
                f"shortest length with fill ≤ {_q(a.max_key_density, 'fraction')}",
            ),
            Figure(
                "key_space",
                f"Key space at {self.key_length} characters",
                self.key_space,
                "count",
                f"{al}^{self.key_length}",
            ),
            Figure(
                "key_density",
                f"Fill at {self.key_length} characters",
                self.key_density,
                "fraction",
                f"{_n(self.links_total)} / {_n(self.key_space)}",
            ),
            Figure(
                "hot_set_bytes",
                "Hot set in cache",
                self.hot_set_bytes,
                "B",
                f"{_n(a.hot_links_per_day)} links × {_q(a.cache_bytes_per_link, 'B')}",
            ),
        ]
        return rows

    def driver(self) -> str:
        """The one number that shapes the design, and why."""
        shorter = (
            f"{self.fit_length} characters would fit but be "
            f"{_q(self.fit_density, 'fraction')} full, "
            if self.fit_length < self.key_length
            else ""
        )
        return (
            f"Key-space density, not storage, drives the design: "
            f"{_q(self.links_total, 'count')} links in "
            f"{_n(self.assumptions.retention_years)} years — {shorter}"
            f"so keys are {self.key_length} characters "
            f"({_q(self.key_density, 'fraction')} full), while "
            f"{_q(self.storage_bytes, 'B')} of storage and "
            f"{_q(self.peak_writes_per_s, '/s')} peak writes are routine and the effort "
            f"goes to {_q(self.peak_reads_per_s, '/s')} peak reads."
        )


def shortener(a: ShortenerAssumptions = ShortenerAssumptions()) -> ShortenerPlan:
    """Size the URL shortener: per-second rates, bytes, key length and the hot set."""
    seconds_per_month = a.days_per_month * SECONDS_PER_DAY
    writes = a.links_per_month / seconds_per_month
    reads = writes * a.read_write_ratio
    peak_reads = reads * a.peak_factor
    links_total = a.links_per_month * MONTHS_PER_YEAR * a.retention_years
    storage = links_total * a.bytes_per_link
    clicks_per_day = reads * SECONDS_PER_DAY
    fit_length = key_length_for(links_total, max_density=1.0, alphabet=a.alphabet)
    key_length = key_length_for(links_total, max_density=a.max_key_density, alphabet=a.alphabet)
    return ShortenerPlan(
        assumptions=a,
        seconds_per_month=seconds_per_month,
        writes_per_s=writes,
        peak_writes_per_s=writes * a.peak_factor,
        reads_per_s=reads,
        peak_reads_per_s=peak_reads,
        links_total=links_total,
        storage_bytes=storage,
        replicated_storage_bytes=storage * a.replicas,
        clicks_per_day=clicks_per_day,
        click_bytes_per_day=clicks_per_day * a.bytes_per_click_event,
        peak_click_bytes_per_s=peak_reads * a.bytes_per_click_event,
        too_short_length=fit_length - 1,
        too_short_key_space=keyspace(fit_length - 1, a.alphabet),
        fit_length=fit_length,
        fit_key_space=keyspace(fit_length, a.alphabet),
        fit_density=density(links_total, fit_length, a.alphabet),
        key_length=key_length,
        key_space=keyspace(key_length, a.alphabet),
        key_density=density(links_total, key_length, a.alphabet),
        hot_set_bytes=a.hot_links_per_day * a.cache_bytes_per_link,
    )


# ------------------------------------------------------------------------ typeahead


@dataclass(frozen=True)
class TypeaheadAssumptions(_Validated):
    """Typeahead's sizing assumptions (seed: 1B searches a day, 12 keystrokes each)."""

    searches_per_day: float = _assume(1e9, "searches submitted per day")
    keystrokes_per_search: float = _assume(12.0, "keystrokes typed per search")
    requests_per_search: float = _assume(6.0, "requests per search after debounce and reuse")
    peak_factor: float = _assume(2.0, "peak traffic as a multiple of the average")
    edge_hit_ratio: float = _fraction(0.4, "share of requests answered by edge/browser caches")
    lookups_per_node_per_s: float = _assume(20_000.0, "lookups one serving node handles per second")
    headroom_factor: float = _assume(
        1.5,
        "spare capacity on top of the minimum fleet (1.5 = 50% more nodes)",
        minimum=1.0,
        inclusive=True,
    )
    distinct_queries: float = _assume(100e6, "distinct queries kept after filtering")
    bytes_per_query: float = _assume(20.0, "average bytes per query string")
    query_length_chars: float = _assume(20.0, "average characters per query (plain-trie depth)")
    bytes_per_score: float = _assume(4.0, "bytes per query score")
    radix_nodes_per_query: float = _assume(2.0, "compressed-trie nodes per query, at most")
    node_label_bytes: float = _assume(8.0, "bytes for a node's edge label", inclusive=True)
    node_children_bytes: float = _assume(16.0, "bytes for a node's children", inclusive=True)
    top_k: int = _assume(
        10, "suggestions precomputed per node", minimum=1, inclusive=True, integer=True
    )
    query_id_bytes: float = _assume(4.0, "bytes per query id in a top-k list")
    score_half_life_days: float = _assume(7.0, "days for an unsearched query's score to halve")
    build_interval_hours: float = _assume(1.0, "hours between pipeline runs (decay per run)")
    example_daily_count: float = _assume(
        10_000.0, "searches a day of the example query for the steady score", inclusive=True
    )


@dataclass(frozen=True)
class TypeaheadPlan:
    """Typeahead's estimate: keystroke traffic, serving fleet, trie memory and score decay."""

    assumptions: TypeaheadAssumptions
    keystrokes_per_day: float
    keystroke_rate_per_s: float
    peak_keystroke_rate_per_s: float
    requests_per_day: float
    request_rate_per_s: float
    peak_request_rate_per_s: float
    origin_peak_per_s: float
    nodes_min: int
    nodes_with_headroom: int
    string_bytes: float
    score_bytes: float
    plain_trie_nodes: float
    radix_nodes: float
    node_bytes: float
    trie_bytes: float
    total_bytes: float
    topk_list_bytes: float
    topk_bytes: float
    daily_decay_factor: float
    interval_decay_factor: float
    steady_state_score: float

    def rows(self) -> list[Figure]:
        """The estimate in reading order, each figure with its worked formula."""
        a = self.assumptions
        half_life_hours = a.score_half_life_days * 24
        return [
            Figure(
                "keystrokes_per_day",
                "Keystrokes a day",
                self.keystrokes_per_day,
                "/day",
                f"{_n(a.searches_per_day)} searches × {_n(a.keystrokes_per_search)}",
            ),
            Figure(
                "keystroke_rate_per_s",
                "Every keystroke sent",
                self.keystroke_rate_per_s,
                "/s",
                f"{_n(self.keystrokes_per_day)} / {SECONDS_PER_DAY:,} s",
            ),
            Figure(
                "peak_keystroke_rate_per_s",
                "Every keystroke sent, at peak",
                self.peak_keystroke_rate_per_s,
                "/s",
                f"{_q(self.keystroke_rate_per_s, '/s')} × {_n(a.peak_factor)}",
            ),
            Figure(
                "requests_per_day",
                "Requests a day after debounce and reuse",
                self.requests_per_day,
                "/day",
                f"{_n(a.searches_per_day)} searches × {_n(a.requests_per_search)}",
            ),
            Figure(
                "request_rate_per_s",
                "Requests after debounce",
                self.request_rate_per_s,
                "/s",
                f"{_n(self.requests_per_day)} / {SECONDS_PER_DAY:,} s",
            ),
            Figure(
                "peak_request_rate_per_s",
                "Requests after debounce, at peak",
                self.peak_request_rate_per_s,
                "/s",
                f"{_q(self.request_rate_per_s, '/s')} × {_n(a.peak_factor)}",
            ),
            Figure(
                "origin_peak_per_s",
                f"Origin at peak (edge absorbs {_q(a.edge_hit_ratio, 'fraction')})",
                self.origin_peak_per_s,
                "/s",
                f"{_q(self.peak_request_rate_per_s, '/s')} × "
                f"(1 − {_q(a.edge_hit_ratio, 'fraction')})",
            ),
            Figure(
                "nodes_min",
                "Serving nodes per region",
                self.nodes_min,
                "nodes",
                f"ceil({_n(self.origin_peak_per_s)} / {_n(a.lookups_per_node_per_s)})",
            ),
            Figure(
                "nodes_with_headroom",
                "Serving nodes with headroom",
                self.nodes_with_headroom,
                "nodes",
                f"ceil({self.nodes_min} × {_n(a.headroom_factor)})",
            ),
            Figure(
                "string_bytes",
                "Query strings",
                self.string_bytes,
                "B",
                f"{_n(a.distinct_queries)} × {_q(a.bytes_per_query, 'B')}",
            ),
            Figure(
                "score_bytes",
                "Scores",
                self.score_bytes,
                "B",
                f"{_n(a.distinct_queries)} × {_q(a.bytes_per_score, 'B')}",
            ),
            Figure(
                "plain_trie_nodes",
                "Plain trie nodes, worst case",
                self.plain_trie_nodes,
                "count",
                f"{_n(a.distinct_queries)} × {_n(a.query_length_chars)} characters → too many",
            ),
            Figure(
                "radix_nodes",
                "Compressed (radix) trie nodes, at most",
                self.radix_nodes,
                "count",
                f"{_n(a.radix_nodes_per_query)} × {_n(a.distinct_queries)}",
            ),
            Figure(
                "node_bytes",
                "Bytes per node",
                self.node_bytes,
                "B",
                f"label {_q(a.node_label_bytes, 'B')} + children "
                f"{_q(a.node_children_bytes, 'B')} + top-{a.top_k} ids "
                f"{_q(self.topk_list_bytes, 'B')}",
            ),
            Figure(
                "trie_bytes",
                "Trie",
                self.trie_bytes,
                "B",
                f"{_n(self.radix_nodes)} × {_q(self.node_bytes, 'B')}",
            ),
            Figure(
                "total_bytes",
                "Index memory in total",
                self.total_bytes,
                "B",
                f"{_q(self.string_bytes, 'B')} + {_q(self.score_bytes, 'B')} + "
                f"{_q(self.trie_bytes, 'B')}",
            ),
            Figure(
                "topk_bytes",
                f"of which precomputed top-{a.top_k} lists",
                self.topk_bytes,
                "B",
                f"{_n(self.radix_nodes)} × {_q(self.topk_list_bytes, 'B')}",
            ),
            Figure(
                "daily_decay_factor",
                f"Daily decay factor ({_n(a.score_half_life_days)}-day half-life)",
                self.daily_decay_factor,
                "",
                f"0.5^(1/{_n(a.score_half_life_days)})",
            ),
            Figure(
                "interval_decay_factor",
                f"Decay factor per run (every {_n(a.build_interval_hours)} h)",
                self.interval_decay_factor,
                "",
                f"0.5^({_n(a.build_interval_hours)}/{_n(half_life_hours)})",
            ),
            Figure(
                "steady_state_score",
                f"Steady score of a query searched {_n(a.example_daily_count)} times a day",
                self.steady_state_score,
                "",
                f"{_n(a.example_daily_count)} / (1 − {_n(self.daily_decay_factor)})",
            ),
        ]

    def driver(self) -> str:
        """The one number that shapes the design, and why."""
        return (
            f"Requests per keystroke, not per search, drive the design: "
            f"{_n(self.assumptions.keystrokes_per_search)} keystrokes per search make "
            f"{_q(self.peak_keystroke_rate_per_s, '/s')} at peak, and debounce plus edge "
            f"caching cut what reaches the origin to {_q(self.origin_peak_per_s, '/s')} — "
            f"{self.nodes_with_headroom} nodes per region, each holding the whole "
            f"{_q(self.total_bytes, 'B')} index in memory, replicated rather than sharded."
        )


def typeahead(a: TypeaheadAssumptions = TypeaheadAssumptions()) -> TypeaheadPlan:
    """Size typeahead: keystroke traffic, origin load, serving nodes, trie memory, decay."""
    keystrokes_per_day = a.searches_per_day * a.keystrokes_per_search
    keystroke_rate = keystrokes_per_day / SECONDS_PER_DAY
    requests_per_day = a.searches_per_day * a.requests_per_search
    request_rate = requests_per_day / SECONDS_PER_DAY
    peak_requests = request_rate * a.peak_factor
    origin_peak = peak_requests * (1 - a.edge_hit_ratio)
    nodes_min = max(1, _ceil(origin_peak / a.lookups_per_node_per_s))
    string_bytes = a.distinct_queries * a.bytes_per_query
    score_bytes = a.distinct_queries * a.bytes_per_score
    radix_nodes = a.radix_nodes_per_query * a.distinct_queries
    topk_list_bytes = a.top_k * a.query_id_bytes
    node_bytes = a.node_label_bytes + a.node_children_bytes + topk_list_bytes
    trie_bytes = radix_nodes * node_bytes
    daily = decay_factor(a.score_half_life_days, 1.0)
    return TypeaheadPlan(
        assumptions=a,
        keystrokes_per_day=keystrokes_per_day,
        keystroke_rate_per_s=keystroke_rate,
        peak_keystroke_rate_per_s=keystroke_rate * a.peak_factor,
        requests_per_day=requests_per_day,
        request_rate_per_s=request_rate,
        peak_request_rate_per_s=peak_requests,
        origin_peak_per_s=origin_peak,
        nodes_min=nodes_min,
        nodes_with_headroom=_ceil(nodes_min * a.headroom_factor),
        string_bytes=string_bytes,
        score_bytes=score_bytes,
        plain_trie_nodes=a.distinct_queries * a.query_length_chars,
        radix_nodes=radix_nodes,
        node_bytes=node_bytes,
        trie_bytes=trie_bytes,
        total_bytes=string_bytes + score_bytes + trie_bytes,
        topk_list_bytes=topk_list_bytes,
        topk_bytes=radix_nodes * topk_list_bytes,
        daily_decay_factor=daily,
        interval_decay_factor=decay_factor(a.score_half_life_days * 24, a.build_interval_hours),
        steady_state_score=steady_state_score(a.example_daily_count, daily),
    )


# ------------------------------------------------------------------------ proximity


@dataclass(frozen=True)
class ProximityAssumptions(_Validated):
    """Proximity search's sizing assumptions (seed: 200M businesses, 100M daily users)."""

    businesses: float = _assume(200e6, "businesses in the index")
    daily_active_users: float = _assume(100e6, "daily active users")
    searches_per_user_per_day: float = _assume(5.0, "searches per user per day")
    peak_factor: float = _assume(3.0, "peak traffic as a multiple of the average")
    edits_per_day: float = _assume(1e6, "business adds/edits per day (writes touching location)")
    reviews_per_day: float = _assume(10e6, "reviews written per day", inclusive=True)
    index_bytes_per_business: float = _assume(
        40.0, "bytes per business in the narrow location index"
    )
    profile_bytes: float = _assume(1000.0, "bytes per business profile")
    review_bytes: float = _assume(1000.0, "bytes per review")
    businesses_per_leaf: float = _assume(100.0, "businesses a quadtree leaf holds before it splits")
    quadtree_node_bytes: float = _assume(64.0, "bytes per quadtree node (bounds + child pointers)")
    id_bytes: float = _assume(8.0, "bytes per business id")


@dataclass(frozen=True)
class ProximityPlan:
    """Proximity's estimate: search and write rates, the narrow index, a quadtree, the rest."""

    assumptions: ProximityAssumptions
    searches_per_day: float
    search_rate_per_s: float
    peak_search_rate_per_s: float
    edit_rate_per_s: float
    reads_per_write_at_peak: float
    index_bytes: float
    quadtree_leaves: float
    quadtree_internal_nodes: float
    quadtree_node_bytes: float
    quadtree_id_bytes: float
    quadtree_total_bytes: float
    profile_bytes: float
    review_bytes_per_year: float

    def rows(self) -> list[Figure]:
        """The estimate in reading order, each figure with its worked formula."""
        a = self.assumptions
        nodes = self.quadtree_leaves + self.quadtree_internal_nodes
        return [
            Figure(
                "searches_per_day",
                "Searches a day",
                self.searches_per_day,
                "/day",
                f"{_n(a.daily_active_users)} users × {_n(a.searches_per_user_per_day)}",
            ),
            Figure(
                "search_rate_per_s",
                "Searches",
                self.search_rate_per_s,
                "/s",
                f"{_n(self.searches_per_day)} / {SECONDS_PER_DAY:,} s",
            ),
            Figure(
                "peak_search_rate_per_s",
                "Searches at peak",
                self.peak_search_rate_per_s,
                "/s",
                f"{_q(self.search_rate_per_s, '/s')} × {_n(a.peak_factor)}",
            ),
            Figure(
                "edit_rate_per_s",
                "Writes touching location",
                self.edit_rate_per_s,
                "/s",
                f"{_n(a.edits_per_day)} / {SECONDS_PER_DAY:,} s",
            ),
            Figure(
                "reads_per_write_at_peak",
                "Reads per write at peak",
                self.reads_per_write_at_peak,
                "reads/write",
                f"{_q(self.peak_search_rate_per_s, '/s')} / {_q(self.edit_rate_per_s, '/s')}",
            ),
            Figure(
                "index_bytes",
                "Location index (only what search needs)",
                self.index_bytes,
                "B",
                f"{_n(a.businesses)} × {_q(a.index_bytes_per_business, 'B')}",
            ),
            Figure(
                "quadtree_leaves",
                "Quadtree leaves",
                self.quadtree_leaves,
                "count",
                f"{_n(a.businesses)} / {_n(a.businesses_per_leaf)} per leaf",
            ),
            Figure(
                "quadtree_internal_nodes",
                "Quadtree internal nodes",
                self.quadtree_internal_nodes,
                "count",
                f"({_n(self.quadtree_leaves)} − 1) / 3",
            ),
            Figure(
                "quadtree_node_bytes",
                "Quadtree nodes",
                self.quadtree_node_bytes,
                "B",
                f"{_n(nodes)} × {_q(a.quadtree_node_bytes, 'B')}",
            ),
            Figure(
                "quadtree_id_bytes",
                "Business ids in the leaves",
                self.quadtree_id_bytes,
                "B",
                f"{_n(a.businesses)} × {_q(a.id_bytes, 'B')}",
            ),
            Figure(
                "quadtree_total_bytes",
                "Quadtree in total",
                self.quadtree_total_bytes,
                "B",
                f"{_q(self.quadtree_node_bytes, 'B')} + {_q(self.quadtree_id_bytes, 'B')}",
            ),
            Figure(
                "profile_bytes",
                "Profiles",
                self.profile_bytes,
                "B",
                f"{_n(a.businesses)} × {_q(a.profile_bytes, 'B')}",
            ),
            Figure(
                "review_bytes_per_year",
                "Reviews a year",
                self.review_bytes_per_year,
                "B",
                f"{_n(a.reviews_per_day)} × {DAYS_PER_YEAR} × {_q(a.review_bytes, 'B')}",
            ),
        ]

    def driver(self) -> str:
        """The one number that shapes the design, and why."""
        return (
            f"The narrow location index drives the design: "
            f"{_q(self.index_bytes, 'B')} for {_q(self.assumptions.businesses, 'count')} "
            f"businesses fits in one server's memory, so it is replicated (not sharded) to "
            f"serve {_q(self.peak_search_rate_per_s, '/s')} at peak, and "
            f"{_q(self.reads_per_write_at_peak, '')} reads per write let edits reach it "
            f"asynchronously; profiles ({_q(self.profile_bytes, 'B')}) and reviews are an "
            f"ordinary sharded database."
        )


def proximity(a: ProximityAssumptions = ProximityAssumptions()) -> ProximityPlan:
    """Size proximity search: search and edit rates, the location index, quadtree memory."""
    searches_per_day = a.daily_active_users * a.searches_per_user_per_day
    rate = searches_per_day / SECONDS_PER_DAY
    peak = rate * a.peak_factor
    edit_rate = a.edits_per_day / SECONDS_PER_DAY
    leaves = max(1.0, a.businesses / a.businesses_per_leaf)
    internal = (leaves - 1) / 3  # a full 4-ary tree with L leaves has (L − 1) / 3 inner nodes
    node_bytes = (leaves + internal) * a.quadtree_node_bytes
    id_bytes = a.businesses * a.id_bytes
    return ProximityPlan(
        assumptions=a,
        searches_per_day=searches_per_day,
        search_rate_per_s=rate,
        peak_search_rate_per_s=peak,
        edit_rate_per_s=edit_rate,
        reads_per_write_at_peak=peak / edit_rate,
        index_bytes=a.businesses * a.index_bytes_per_business,
        quadtree_leaves=leaves,
        quadtree_internal_nodes=internal,
        quadtree_node_bytes=node_bytes,
        quadtree_id_bytes=id_bytes,
        quadtree_total_bytes=node_bytes + id_bytes,
        profile_bytes=a.businesses * a.profile_bytes,
        review_bytes_per_year=a.reviews_per_day * DAYS_PER_YEAR * a.review_bytes,
    )


# -------------------------------------------------------------------------- crawler


@dataclass(frozen=True)
class CrawlerAssumptions(_Validated):
    """The crawler's sizing assumptions (seed: 1B pages a month, 100 KB each)."""

    pages_per_month: float = _assume(1e9, "pages fetched per month")
    days_per_month: float = _assume(30.0, "days in a month for the per-second conversion")
    peak_factor: float = _assume(2.0, "peak fetch rate as a multiple of the average")
    page_bytes: float = _assume(100e3, "average uncompressed HTML page in bytes")
    compression_ratio: float = _assume(
        5.0, "storage compression ratio", minimum=1.0, inclusive=True
    )
    retention_months: float = _assume(12.0, "months of page versions kept")
    links_per_page: float = _assume(50.0, "links extracted per page", inclusive=True)
    known_urls: float = _assume(20e9, "URLs known in total (the seen-URL set)")
    bloom_fp_rate: float = _fraction(
        0.01, "seen-URL Bloom filter false-positive rate", allow_zero=False
    )
    bloom_partitions: int = _assume(
        64, "partitions the Bloom filter is split over", minimum=1, inclusive=True, integer=True
    )
    url_metadata_bytes: float = _assume(200.0, "bytes of metadata per known URL")
    fetch_seconds: float = _assume(2.0, "seconds per fetch (DNS, connect, slow servers)")
    connections_per_machine: float = _assume(500.0, "connections one async fetcher holds")
    host_delay_seconds: float = _assume(2.0, "seconds between requests to the same host")
    big_site_pages: float = _assume(10e6, "pages on one big site")


@dataclass(frozen=True)
class CrawlerPlan:
    """The crawler's estimate: fetch rate, bandwidth, storage, seen-set, fleet, politeness."""

    assumptions: CrawlerAssumptions
    seconds_per_month: float
    fetch_rate_per_s: float
    peak_fetch_rate_per_s: float
    bandwidth_bytes_per_s: float
    bandwidth_bits_per_s: float
    peak_bandwidth_bits_per_s: float
    raw_bytes_per_month: float
    compressed_bytes_per_month: float
    retained_bytes: float
    link_checks_per_s: float
    bloom_bits_per_url: float
    bloom_hashes: int
    bloom_bits: float
    bloom_bytes: float
    bloom_partition_bytes: float
    url_metadata_bytes: float
    in_flight: float
    fetch_machines: int
    hosts_active: float
    big_site_seconds: float
    big_site_days: float

    def rows(self) -> list[Figure]:
        """The estimate in reading order, each figure with its worked formula."""
        a = self.assumptions
        return [
            Figure(
                "seconds_per_month",
                "Seconds in a month",
                self.seconds_per_month,
                "s",
                f"{_n(a.days_per_month)} × {SECONDS_PER_DAY:,} s",
            ),
            Figure(
                "fetch_rate_per_s",
                "Fetch rate",
                self.fetch_rate_per_s,
                "/s",
                f"{_n(a.pages_per_month)} pages / {_n(self.seconds_per_month)} s",
            ),
            Figure(
                "peak_fetch_rate_per_s",
                "Fetch rate at peak",
                self.peak_fetch_rate_per_s,
                "/s",
                f"{_q(self.fetch_rate_per_s, '/s')} × {_n(a.peak_factor)}",
            ),
            Figure(
                "bandwidth_bytes_per_s",
                "Bandwidth",
                self.bandwidth_bytes_per_s,
                "B/s",
                f"{_q(self.fetch_rate_per_s, '/s')} × {_q(a.page_bytes, 'B')}",
            ),
            Figure(
                "bandwidth_bits_per_s",
                "Bandwidth in bits",
                self.bandwidth_bits_per_s,
                "bit/s",
                f"{_q(self.bandwidth_bytes_per_s, 'B/s')} × 8",
            ),
            Figure(
                "peak_bandwidth_bits_per_s",
                "Bandwidth at peak",
                self.peak_bandwidth_bits_per_s,
                "bit/s",
                f"{_q(self.bandwidth_bits_per_s, 'bit/s')} × {_n(a.peak_factor)}",
            ),
            Figure(
                "raw_bytes_per_month",
                "Raw pages a month",
                self.raw_bytes_per_month,
                "B",
                f"{_n(a.pages_per_month)} × {_q(a.page_bytes, 'B')}",
            ),
            Figure(
                "compressed_bytes_per_month",
                "Stored pages a month (compressed)",
                self.compressed_bytes_per_month,
                "B",
                f"{_q(self.raw_bytes_per_month, 'B')} / {_n(a.compression_ratio)}",
            ),
            Figure(
                "retained_bytes",
                f"Stored pages for {_n(a.retention_months)} months",
                self.retained_bytes,
                "B",
                f"{_q(self.compressed_bytes_per_month, 'B')} × {_n(a.retention_months)}",
            ),
            Figure(
                "link_checks_per_s",
                "Link checks",
                self.link_checks_per_s,
                "/s",
                f"{_q(self.fetch_rate_per_s, '/s')} × {_n(a.links_per_page)} links",
            ),
            Figure(
                "bloom_bits_per_url",
                f"Bloom bits per URL at {_q(a.bloom_fp_rate, 'fraction')} false positives",
                self.bloom_bits_per_url,
                "bits",
                f"−ln {_n(a.bloom_fp_rate)} / (ln 2)²",
            ),
            Figure(
                "bloom_hashes",
                "Bloom hash functions",
                self.bloom_hashes,
                "hashes",
                f"≈ {_n(self.bloom_bits_per_url)} × ln 2, rounded to the better whole number",
            ),
            Figure(
                "bloom_bits",
                "Seen-URL set (Bloom filter)",
                self.bloom_bits,
                "bit",
                f"{_n(a.known_urls)} × {_n(self.bloom_bits_per_url)} bits",
            ),
            Figure(
                "bloom_bytes",
                "Seen-URL set in bytes",
                self.bloom_bytes,
                "B",
                f"{_q(self.bloom_bits, 'bit')} / 8",
            ),
            Figure(
                "bloom_partition_bytes",
                f"Per partition ({a.bloom_partitions})",
                self.bloom_partition_bytes,
                "B",
                f"{_q(self.bloom_bytes, 'B')} / {a.bloom_partitions}",
            ),
            Figure(
                "url_metadata_bytes",
                "URL metadata",
                self.url_metadata_bytes,
                "B",
                f"{_n(a.known_urls)} URLs × {_q(a.url_metadata_bytes, 'B')}",
            ),
            Figure(
                "in_flight",
                "Fetches in flight (Little's law)",
                self.in_flight,
                "count",
                f"{_q(self.peak_fetch_rate_per_s, '/s')} × {_n(a.fetch_seconds)} s",
            ),
            Figure(
                "fetch_machines",
                "Fetcher machines, minimum",
                self.fetch_machines,
                "machines",
                f"ceil({_n(self.in_flight)} / {_n(a.connections_per_machine)} connections)",
            ),
            Figure(
                "hosts_active",
                "Hosts that must be active at once",
                self.hosts_active,
                "hosts",
                f"{_q(self.peak_fetch_rate_per_s, '/s')} × {_n(a.host_delay_seconds)} s per host",
            ),
            Figure(
                "big_site_seconds",
                "Crawling one big site",
                self.big_site_seconds,
                "s",
                f"{_n(a.big_site_pages)} pages × {_n(a.host_delay_seconds)} s",
            ),
            Figure(
                "big_site_days",
                "Crawling one big site, in days",
                self.big_site_days,
                "days",
                f"{_n(self.big_site_seconds)} s / {SECONDS_PER_DAY:,} s",
            ),
        ]

    def driver(self) -> str:
        """The one number that shapes the design, and why."""
        return (
            f"Politeness, not the fleet, sets the pace: at one request per "
            f"{_n(self.assumptions.host_delay_seconds)} s per host a "
            f"{_q(self.assumptions.big_site_pages, 'count')}-page site takes "
            f"{_q(self.big_site_days, 'days')}, while the whole "
            f"{_q(self.peak_fetch_rate_per_s, '/s')} peak needs only {self.fetch_machines} "
            f"fetcher machines — so design per-host queues and crawl budgets, and keep the "
            f"{_q(self.link_checks_per_s, '/s')} link checks cheap with an in-memory "
            f"{_q(self.bloom_bytes, 'B')} Bloom filter."
        )


def crawler(a: CrawlerAssumptions = CrawlerAssumptions()) -> CrawlerPlan:
    """Size the crawler: fetch rate, bandwidth, storage, seen-URL set, fleet, politeness."""
    seconds_per_month = a.days_per_month * SECONDS_PER_DAY
    rate = a.pages_per_month / seconds_per_month
    peak = rate * a.peak_factor
    bandwidth = rate * a.page_bytes
    raw = a.pages_per_month * a.page_bytes
    compressed = raw / a.compression_ratio
    bits_per_url = bloom_bits_per_item(a.bloom_fp_rate)
    bloom_bits = a.known_urls * bits_per_url
    in_flight = littles_law(peak, a.fetch_seconds)
    big_site_seconds = a.big_site_pages * a.host_delay_seconds
    return CrawlerPlan(
        assumptions=a,
        seconds_per_month=seconds_per_month,
        fetch_rate_per_s=rate,
        peak_fetch_rate_per_s=peak,
        bandwidth_bytes_per_s=bandwidth,
        bandwidth_bits_per_s=bandwidth * 8,
        peak_bandwidth_bits_per_s=bandwidth * 8 * a.peak_factor,
        raw_bytes_per_month=raw,
        compressed_bytes_per_month=compressed,
        retained_bytes=compressed * a.retention_months,
        link_checks_per_s=rate * a.links_per_page,
        bloom_bits_per_url=bits_per_url,
        bloom_hashes=bloom_optimal_hashes(a.bloom_fp_rate),
        bloom_bits=bloom_bits,
        bloom_bytes=bloom_bits / 8,
        bloom_partition_bytes=bloom_bits / 8 / a.bloom_partitions,
        url_metadata_bytes=a.known_urls * a.url_metadata_bytes,
        in_flight=in_flight,
        fetch_machines=max(1, _ceil(in_flight / a.connections_per_machine)),
        hosts_active=littles_law(peak, a.host_delay_seconds),
        big_site_seconds=big_site_seconds,
        big_site_days=big_site_seconds / SECONDS_PER_DAY,
    )


# --------------------------------------------------------------------------- search


@dataclass(frozen=True)
class SearchAssumptions(_Validated):
    """Web search's sizing assumptions (seed 003: 10B documents, 100 shards)."""

    documents: float = _assume(10e9, "documents in the index")
    terms_per_document: float = _assume(500.0, "distinct terms per document")
    bytes_per_posting: float = _assume(4.0, "bytes per posting after compression")
    shards: int = _assume(
        100,
        "index shards (by document) every query touches",
        minimum=1,
        inclusive=True,
        integer=True,
    )
    shard_slow_probability: float = _fraction(
        0.001, "chance one shard answers slowly (e.g. beyond its p99.9)", allow_one=True
    )
    top_k: int = _assume(
        10, "results each shard returns to the merger", minimum=1, inclusive=True, integer=True
    )
    pages_per_month: float = _assume(1e9, "pages crawled per month")
    page_bytes: float = _assume(100e3, "average raw page in bytes")
    text_bytes_per_page: float = _assume(5e3, "extracted text per page in bytes")
    seen_urls: float = _assume(10e9, "URLs in the seen-URL Bloom filter")
    bloom_fp_rate: float = _fraction(
        0.01, "seen-URL Bloom filter false-positive rate", allow_zero=False
    )


@dataclass(frozen=True)
class SearchPlan:
    """Search's estimate: postings and index size, extracted text, fan-out tail, seen-set."""

    assumptions: SearchAssumptions
    postings: float
    index_bytes: float
    shard_index_bytes: float
    text_bytes_per_month: float
    page_to_text_ratio: float
    fanout_tail_probability: float
    candidates_merged: int
    seen_url_bloom_bytes: float

    def rows(self) -> list[Figure]:
        """The estimate in reading order, each figure with its worked formula."""
        a = self.assumptions
        return [
            Figure(
                "postings",
                "Postings",
                self.postings,
                "count",
                f"{_n(a.documents)} documents × {_n(a.terms_per_document)} terms",
            ),
            Figure(
                "index_bytes",
                "Inverted index",
                self.index_bytes,
                "B",
                f"{_n(self.postings)} × {_q(a.bytes_per_posting, 'B')}",
            ),
            Figure(
                "shard_index_bytes",
                f"Per shard ({a.shards} shards)",
                self.shard_index_bytes,
                "B",
                f"{_q(self.index_bytes, 'B')} / {a.shards}",
            ),
            Figure(
                "text_bytes_per_month",
                "Extracted text a month",
                self.text_bytes_per_month,
                "B",
                f"{_n(a.pages_per_month)} pages × {_q(a.text_bytes_per_page, 'B')}",
            ),
            Figure(
                "page_to_text_ratio",
                "Raw page vs its text",
                self.page_to_text_ratio,
                "times smaller",
                f"{_q(a.page_bytes, 'B')} / {_q(a.text_bytes_per_page, 'B')}",
            ),
            Figure(
                "fanout_tail_probability",
                "Queries that hit at least one slow shard",
                self.fanout_tail_probability,
                "fraction",
                f"1 − (1 − {_n(a.shard_slow_probability)})^{a.shards}",
            ),
            Figure(
                "candidates_merged",
                "Results merged per query",
                self.candidates_merged,
                "results",
                f"{a.shards} shards × top {a.top_k}",
            ),
            Figure(
                "seen_url_bloom_bytes",
                "Seen-URL Bloom filter",
                self.seen_url_bloom_bytes,
                "B",
                f"{_n(a.seen_urls)} × {_n(bloom_bits_per_item(a.bloom_fp_rate))} bits / 8",
            ),
        ]

    def driver(self) -> str:
        """The one number that shapes the design, and why."""
        a = self.assumptions
        return (
            f"The fan-out tail drives the design: the {_q(self.index_bytes, 'B')} index is "
            f"sharded by document over {a.shards} shards, so every query touches all of them "
            f"and a one-in-{_n(1 / a.shard_slow_probability) if a.shard_slow_probability else '∞'}"
            f" slow shard makes {_q(self.fanout_tail_probability, 'fraction')} of queries "
            f"slow — hence hedged requests to replicas and per-shard deadlines with partial "
            f"results."
        )


def search(a: SearchAssumptions = SearchAssumptions()) -> SearchPlan:
    """Size web search: postings, index bytes per shard, extracted text, fan-out tail."""
    postings = a.documents * a.terms_per_document
    index_bytes = postings * a.bytes_per_posting
    return SearchPlan(
        assumptions=a,
        postings=postings,
        index_bytes=index_bytes,
        shard_index_bytes=index_bytes / a.shards,
        text_bytes_per_month=a.pages_per_month * a.text_bytes_per_page,
        page_to_text_ratio=a.page_bytes / a.text_bytes_per_page,
        fanout_tail_probability=fanout_tail_probability(a.shard_slow_probability, a.shards),
        candidates_merged=a.shards * a.top_k,
        seen_url_bloom_bytes=bloom_size_bytes(a.seen_urls, a.bloom_fp_rate),
    )


# ------------------------------------------------------------------------- registry

#: Every system's assumptions class and planner, by the name the CLI and dashboard use.
PLANNERS: dict[str, tuple[type, Callable[..., Any]]] = {
    "shortener": (ShortenerAssumptions, shortener),
    "typeahead": (TypeaheadAssumptions, typeahead),
    "proximity": (ProximityAssumptions, proximity),
    "crawler": (CrawlerAssumptions, crawler),
    "search": (SearchAssumptions, search),
}


def validate_assumption(cls: type, name: str, value: Any) -> int | float:
    """Check one value against the rule of assumption ``name`` of ``cls``; return it cleaned.

    Raises ``ValueError`` with a message naming the assumption and the rule.
    """
    for f in fields(cls):
        if f.name == name and "rule" in f.metadata:
            return _check(name, value, **f.metadata["rule"])
    raise ValueError(f"{cls.__name__} has no assumption {name!r}")


def plan(system: str, **overrides: float) -> Any:
    """Plan ``system`` from the seed's assumptions with ``overrides`` applied.

    Raises ``ValueError`` for an unknown system, an unknown assumption or a bad value.
    """
    if system not in PLANNERS:
        raise ValueError(f"unknown system {system!r}; choose from {', '.join(PLANNERS)}")
    cls, planner = PLANNERS[system]
    names = {f.name for f in fields(cls)}
    unknown = sorted(set(overrides) - names)
    if unknown:
        raise ValueError(f"unknown {system} assumption(s): {', '.join(unknown)}")
    return planner(cls(**overrides))


def figures(p: Any) -> dict[str, float]:
    """A plan's numeric fields by name (everything but its assumptions)."""
    return {f.name: getattr(p, f.name) for f in fields(p) if f.name != "assumptions"}
