"""The capacity planner's model: one input per assumption, the headline figures, the charts.

Kept apart from the page so it can be checked without a running app: every field of
every ``*Assumptions`` class in :mod:`lookup.capacity` must have a :class:`Knob`
(the page falls back to a plain number input for a field added later), and the
charts are plain plotly figures built from :mod:`lookup.capacity`'s helpers.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import MISSING, dataclass, fields
from decimal import Decimal
from typing import Any

import numpy as np
import plotly.graph_objects as go

from lookup import capacity

#: Percent shown, fraction stored.
PERCENT = 0.01


@dataclass(frozen=True)
class Knob:
    """How one assumption is shown: label in the shown unit, range, step, slider or box.

    The assumption's value is ``shown value × scale`` (e.g. links per month shown in
    millions has ``scale=1e6``; a fraction shown in percent has ``scale=0.01``).
    """

    field: str
    label: str
    minimum: float
    maximum: float
    step: float
    scale: float = 1.0
    slider: bool = False
    fmt: str | None = None

    def to_value(self, shown: float) -> float:
        """The assumption's value for a shown value, without float noise (0.1 % → 0.001)."""
        return clean(shown * self.scale)

    def to_shown(self, value: float) -> float:
        """The shown value for an assumption's value."""
        return clean(value / self.scale)


def clean(x: float) -> float:
    """``x`` to 12 significant figures: 0.1 × 0.01 is 0.001, not 0.0010000000000000002."""
    return float(f"{x:.12g}")


@dataclass(frozen=True)
class System:
    """One tab of the planner: its assumptions class, planner, knobs and headline figures."""

    name: str
    title: str
    assumptions: type
    plan: Callable[[Any], Any]
    knobs: tuple[Knob, ...]
    headline: tuple[str, ...]
    intro: str

    def knob(self, field: str) -> Knob:
        """The knob for ``field``; a plain number input for a field without one."""
        for k in self.knobs:
            if k.field == field:
                return k
        return Knob(field, field.replace("_", " ").capitalize(), 0.0, 1e18, 1.0)

    def field_names(self) -> list[str]:
        """Every assumption of the system, in the dataclass's order."""
        return [f.name for f in fields(self.assumptions)]

    def defaults(self) -> dict[str, Any]:
        """The design notes' value of every assumption."""
        return {f.name: f.default for f in fields(self.assumptions) if f.default is not MISSING}

    def help(self, field: str) -> str:
        """The assumption's own description from :mod:`lookup.capacity`."""
        for f in fields(self.assumptions):
            if f.name == field:
                return str(f.metadata.get("help", ""))
        return ""

    def is_integer(self, field: str) -> bool:
        """Whether the assumption must be a whole number (its shown value too)."""
        for f in fields(self.assumptions):
            if f.name == field:
                rule = f.metadata.get("rule") or {}
                return bool(rule.get("integer"))
        return False


#: How an assumption may be shown: in these units, at this scale of its value.
SHOWN_IN: dict[str, float] = {"millions": 1e6, "billions": 1e9, "KB": 1e3, "%": PERCENT}


def _decimals(x: float) -> int:
    exponent = Decimal(str(x)).as_tuple().exponent
    return max(0, -exponent) if isinstance(exponent, int) else 0


def _k(
    field: str,
    label: str,
    lo: float,
    hi: float,
    step: float,
    *,
    shown_in: str | None = None,
    slider: bool = False,
    fmt: str | None = None,
) -> Knob:
    """A knob; ``shown_in`` names the unit (and so the scale) it is shown in.

    The label says the unit ("New links a month (millions)") and the number format
    shows as many decimals as the smallest value or the step needs, unless ``fmt``
    says otherwise.
    """
    scale = SHOWN_IN[shown_in] if shown_in else 1.0
    if shown_in:
        label = f"{label} ({shown_in})"
    if fmt is None:
        fmt = f"%.{max(_decimals(lo), _decimals(step))}f"
    return Knob(field, label, lo, hi, step, scale, slider, fmt)


def _system(
    name: str, intro: str, headline: tuple[str, ...], *knobs: Knob, title: str | None = None
) -> System:
    """One tab: the assumptions class and planner are :data:`lookup.capacity.PLANNERS`'s."""
    assumptions, plan = capacity.PLANNERS[name]
    return System(name, title or name.capitalize(), assumptions, plan, knobs, headline, intro)


SHORTENER = _system(
    "shortener",
    "One exact key to one long address, written once and read a hundred times. The key's "
    "length is a choice about how full the key space gets, not just whether it fits.",
    ("writes_per_s", "reads_per_s", "links_total", "replicated_storage_bytes", "key_length"),
    _k("links_per_month", "New links a month", 1, 2000, 1, shown_in="millions", slider=True),
    _k("read_write_ratio", "Redirects per link created", 1, 1000, 1, slider=True),
    _k("peak_factor", "Peak traffic (× average)", 1, 20, 0.5, slider=True),
    _k("retention_years", "Years a link is kept", 1, 30, 1, fmt="%d", slider=True),
    _k("bytes_per_link", "Bytes per stored link", 50, 10_000, 50),
    _k("bytes_per_click_event", "Bytes per click event", 10, 5_000, 10),
    _k("replicas", "Copies of the link store", 1, 9, 1),
    _k("alphabet", "Characters allowed in a key", 10, 94, 1),
    _k("max_key_density", "Highest acceptable key-space fill", 0.001, 100, 0.1, shown_in="%"),
    _k("hot_links_per_day", "Distinct links clicked a day", 0.1, 10_000, 1, shown_in="millions"),
    _k("cache_bytes_per_link", "Cache bytes per hot link", 10, 10_000, 10),
    _k("days_per_month", "Days in a month", 28, 31, 1),
)

TYPEAHEAD = _system(
    "typeahead",
    "Every key with a given prefix, answered on each keystroke. The top ten per prefix are "
    "precomputed in a trie built offline from the query log.",
    ("keystroke_rate_per_s", "origin_peak_per_s", "nodes_with_headroom", "total_bytes",
     "steady_state_score"),
    _k("searches_per_day", "Searches a day", 0.1, 20, 0.1, shown_in="billions", slider=True),
    _k("keystrokes_per_search", "Keystrokes per search", 1, 40, 1, slider=True),
    _k("requests_per_search", "Requests per search after debounce", 1, 40, 0.5, slider=True),
    _k("peak_factor", "Peak traffic (× average)", 1, 10, 0.5, slider=True),
    _k("edge_hit_ratio", "Answered by edge and browser caches", 0, 95, 5, shown_in="%",
       fmt="%.0f%%", slider=True),
    _k("score_half_life_days", "Score half-life (days)", 0.5, 60, 0.5, slider=True),
    _k("lookups_per_node_per_s", "Lookups per second one node serves", 1_000, 500_000, 1_000),
    _k("headroom_factor", "Fleet headroom (× minimum)", 1, 5, 0.1),
    _k("distinct_queries", "Distinct queries kept", 1, 10_000, 10, shown_in="millions"),
    _k("bytes_per_query", "Bytes per query string", 1, 200, 1),
    _k("query_length_chars", "Characters per query", 1, 200, 1),
    _k("bytes_per_score", "Bytes per score", 1, 16, 1),
    _k("radix_nodes_per_query", "Radix-trie nodes per query, at most", 0.1, 4, 0.1),
    _k("node_label_bytes", "Bytes per node label", 0, 64, 1),
    _k("node_children_bytes", "Bytes per node's children", 0, 128, 1),
    _k("top_k", "Suggestions precomputed per node", 1, 50, 1),
    _k("query_id_bytes", "Bytes per query id", 1, 16, 1),
    _k("build_interval_hours", "Hours between index builds", 0.25, 168, 0.25),
    _k("example_daily_count", "Example query: searches a day", 0, 10_000_000, 1_000),
)  # fmt: skip

PROXIMITY = _system(
    "proximity",
    "From one dimension to two: a map cell is the key, so “near me” becomes a prefix "
    "question again. Only a narrow index (id, position, a few ranking fields) needs memory.",
    ("search_rate_per_s", "peak_search_rate_per_s", "reads_per_write_at_peak", "index_bytes",
     "quadtree_total_bytes"),
    _k("businesses", "Businesses", 1, 2_000, 1, shown_in="millions", slider=True),
    _k("daily_active_users", "Daily active users", 1, 2_000, 1, shown_in="millions", slider=True),
    _k("searches_per_user_per_day", "Searches per user a day", 1, 50, 1, slider=True),
    _k("peak_factor", "Peak traffic (× average)", 1, 10, 0.5, slider=True),
    _k("edits_per_day", "Business adds and edits a day", 0.01, 100, 0.1, shown_in="millions"),
    _k("reviews_per_day", "Reviews a day", 0, 1_000, 1, shown_in="millions", fmt="%.1f"),
    _k("index_bytes_per_business", "Bytes per business in the location index", 8, 512, 4),
    _k("profile_bytes", "Bytes per business profile", 100, 100_000, 100),
    _k("review_bytes", "Bytes per review", 100, 100_000, 100),
    _k("businesses_per_leaf", "Businesses per quadtree leaf", 1, 10_000, 10),
    _k("quadtree_node_bytes", "Bytes per quadtree node", 8, 1_024, 8),
    _k("id_bytes", "Bytes per business id", 1, 32, 1),
)  # fmt: skip

CRAWLER = _system(
    "crawler",
    "The one system that builds an index instead of reading one. Scale is modest; "
    "politeness, duplicates and the “have we seen this link?” check are the hard parts.",
    ("fetch_rate_per_s", "bandwidth_bits_per_s", "retained_bytes", "bloom_bytes",
     "big_site_days"),
    _k("pages_per_month", "Pages fetched a month", 0.1, 20, 0.1, shown_in="billions", slider=True),
    _k("peak_factor", "Peak fetch rate (× average)", 1, 10, 0.5, slider=True),
    _k("page_bytes", "Average page", 10, 2_000, 10, shown_in="KB", slider=True),
    _k("links_per_page", "Links per page", 0, 500, 5, slider=True),
    _k("host_delay_seconds", "Seconds between requests to one host", 0.1, 60, 0.1, slider=True),
    _k("fetch_seconds", "Seconds per fetch", 0.1, 30, 0.1, slider=True),
    _k("bloom_fp_rate", "Bloom filter false positives", 0.0001, 50, 0.1, shown_in="%"),
    _k("known_urls", "URLs known in total", 0.1, 1_000, 1, shown_in="billions"),
    _k("bloom_partitions", "Bloom filter partitions", 1, 4_096, 1),
    _k("compression_ratio", "Compression ratio", 1, 20, 0.5),
    _k("retention_months", "Months of page versions kept", 1, 120, 1),
    _k("url_metadata_bytes", "Metadata bytes per URL", 10, 10_000, 10),
    _k("connections_per_machine", "Connections one fetcher holds", 10, 100_000, 50),
    _k("big_site_pages", "Pages on one big site", 0.01, 1_000, 1, shown_in="millions"),
    _k("render_share", "Pages rendered in a browser", 0, 100, 1, shown_in="%"),
    _k("render_cost_factor", "A render's cost (× a plain fetch)", 1, 100, 1),
    _k("fetch_cpu_seconds", "Processor seconds per plain fetch", 0.001, 10, 0.001),
    _k("fetch_memory_bytes", "Memory per fetch in flight", 100, 1_000_000, 100, shown_in="KB"),
    _k("render_seconds", "Seconds per render", 0.1, 120, 0.1),
    _k("days_per_month", "Days in a month", 28, 31, 1),
)  # fmt: skip

SEARCH = _system(
    "search",
    "The crawler's pages, split by document over many shards. Every query asks every "
    "shard, so the slowest shard sets the pace.",
    ("index_bytes", "shard_index_bytes", "fanout_tail_probability", "candidates_merged"),
    _k("documents", "Documents in the index", 0.1, 100, 0.1, shown_in="billions", slider=True),
    _k("shards", "Index shards every query touches", 1, 1_000, 1, slider=True),
    _k("shard_slow_probability", "Chance one shard is slow", 0, 100, 0.01, shown_in="%",
       fmt="%.3f"),
    _k("terms_per_document", "Distinct terms per document", 10, 10_000, 10),
    _k("bytes_per_posting", "Bytes per posting", 0.5, 16, 0.5),
    _k("top_k", "Results each shard returns", 1, 1_000, 1),
    _k("pages_per_month", "Pages crawled a month", 0.1, 20, 0.1, shown_in="billions"),
    _k("page_bytes", "Average raw page", 1, 2_000, 10, shown_in="KB"),
    _k("text_bytes_per_page", "Extracted text per page", 0.1, 1_000, 0.5, shown_in="KB"),
    _k("seen_urls", "URLs in the seen-URL filter", 0.1, 1_000, 1, shown_in="billions"),
    _k("bloom_fp_rate", "Bloom filter false positives", 0.0001, 50, 0.1, shown_in="%"),
)  # fmt: skip

IDS = _system(
    "ids",
    "Unique ids made without a network call per id (the design notes): Snowflake splits 63 "
    "bits into milliseconds, a worker id and a per-millisecond sequence. The split is the "
    "design.",
    ("ids_per_ms_fleet", "range_years", "workers", "repartition_ids_per_ms_per_worker",
     "peak_headroom"),
    _k("timestamp_bits", "Bits of milliseconds since the epoch", 30, 50, 1, slider=True),
    _k("worker_bits", "Bits of worker id", 1, 20, 1, slider=True),
    _k("sequence_bits", "Bits of sequence per millisecond", 1, 20, 1, slider=True),
    _k("repartition_worker_bits", "Worker bits after re-partitioning", 1, 21, 1),
    _k("ids_needed_per_s", "Ids the fleet needs per second at peak", 0.001, 10_000, 1,
       shown_in="millions"),
    title="IDs",
)  # fmt: skip

CACHE = _system(
    "cache",
    "A distributed cache in front of a store (the design notes): the store is sized for the miss "
    "rate, not the hit rate — five points of hit rate can double its load, and a cold "
    "restart of the tier sends it everything.",
    ("store_reads_per_s", "store_reads_lower_per_s", "miss_rate_ratio",
     "node_loss_reads_per_s", "cold_ratio"),
    _k("requests_per_s", "Requests at the cache tier per second", 0.001, 100, 0.01,
       shown_in="millions", slider=True),
    _k("hit_rate", "Hit rate", 0, 100, 0.1, shown_in="%", slider=True),
    _k("lower_hit_rate", "Hit rate to compare with", 0, 100, 0.1, shown_in="%", slider=True),
    _k("reads_per_primary", "Reads per second one primary serves", 100, 1_000_000, 100),
    _k("cache_nodes", "Cache nodes", 1, 1_000, 1),
    title="Cache",
)  # fmt: skip

SYSTEMS: tuple[System, ...] = (SHORTENER, TYPEAHEAD, PROXIMITY, CRAWLER, SEARCH, IDS, CACHE)


def widget_key(system: System, field: str) -> str:
    """The stable ``key=`` of the input for one assumption (tests drive inputs by it)."""
    return f"{system.name}.{field}"


def build_plan(system: System, shown: dict[str, float]) -> Any:
    """Plan ``system`` from shown input values; raises ``ValueError`` for a bad combination."""
    values: dict[str, Any] = {}
    for name in system.field_names():
        if name not in shown:
            continue
        value = system.knob(name).to_value(shown[name])
        values[name] = int(round(value)) if system.is_integer(name) else value
    return system.plan(system.assumptions(**values))


def figures_by_key(plan: Any) -> dict[str, capacity.Figure]:
    """A plan's figures by key."""
    return {figure.key: figure for figure in plan.rows()}


def peak_factor(system: System, shown: dict[str, float]) -> float | None:
    """The "× average" the system's peak figures are at, or None if it has no such knob."""
    if "peak_factor" not in system.field_names():
        return None
    return float(shown.get("peak_factor", system.defaults()["peak_factor"]))


def basis(figure: capacity.Figure, peak: float | None) -> str | None:
    """What a rate stands for — ``"average"`` or ``"peak (×N)"`` — or None for a non-rate.

    The tiles mostly show average rates while the summary sentence quotes peaks; saying
    which is which on each figure keeps the two from looking contradictory.
    """
    if peak is None:
        return None
    if "peak" in figure.key:
        return f"peak (×{peak:g})"
    if figure.unit.endswith("/s"):
        return "average"
    return None


def label_with_basis(figure: capacity.Figure, peak: float | None) -> str:
    """The figure's label with its basis: "Reads (redirects), average", "Writes at peak (×5)"."""
    kind = basis(figure, peak)
    if kind is None:
        return figure.label
    if kind != "average" and re.search(r"\bpeak\b", figure.label):
        return re.sub(r"\bpeak\b", kind, figure.label, count=1)
    return f"{figure.label}, {kind}"


def basis_note(system: System, peak: float | None) -> str:
    """The sentence under the summary that says what its peaks are."""
    if peak is None:
        return ""
    knob = system.knob("peak_factor").label.split(" (")[0]  # "Peak traffic (× average)"
    return (
        f"A **peak** here is ×{peak:g} the average (the “{knob}” assumption); the tiles "
        "show average rates unless their label says peak."
    )


#: The longest label and value a tile three to a row shows uncut at a 1280-pixel window.
TILE3_LABEL_CHARS, TILE3_VALUE_CHARS = 30, 12


def tiles_per_row(labels_and_values: Sequence[tuple[str, str]]) -> int:
    """Three tiles to a row, or two when a label or value would be cut ("Origin at pe…")."""
    fits = all(
        len(label) <= TILE3_LABEL_CHARS and len(value) <= TILE3_VALUE_CHARS
        for label, value in labels_and_values
    )
    return 3 if fits else 2


def metric_rows(items: list[Any], per_row: int = 3) -> list[list[Any]]:
    """Split headline metrics into evenly filled rows of at most ``per_row`` (5 → 3 + 2)."""
    if not items:
        return []
    rows = math.ceil(len(items) / per_row)
    width = math.ceil(len(items) / rows)
    return [items[i : i + width] for i in range(0, len(items), width)]


# ---------------------------------------------------------------------------- charts

MARKER_COLOR = "#262730"
PERCENT_TICKS = [0.0001, 0.001, 0.01, 0.1, 1, 10, 50]
SHARD_TICKS = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000]

_LAYOUT = dict(
    height=380,
    margin=dict(l=10, r=10, t=60, b=10),
    legend=dict(orientation="h", yanchor="bottom", y=1.0, xanchor="right", x=1.0),
    hovermode="x unified",
)


def _fill_label(density: float) -> str:
    """``"0.341%"``, or how many times over full a key space would be."""
    if density > 1:
        return f"{density:.3g}× full, does not fit"
    return capacity.format_quantity(density, "fraction")


def keyspace_fill_chart(
    plan: capacity.ShortenerPlan, lengths: Sequence[int] = (6, 7, 8)
) -> go.Figure:
    """Key-space fill year by year for each key length, the chosen one highlighted.

    At the design notes' assumptions the end points are their 21% (6 characters) and
    0.34% (7 characters).
    """
    a = plan.assumptions
    years = max(1, math.ceil(a.retention_years))
    shown = sorted(set(lengths) | {plan.key_length})
    rows = capacity.keyspace_fill_series(
        a.links_per_month * 12, years, lengths=shown, alphabet=a.alphabet
    )
    fig = go.Figure()
    for length in shown:
        series = [r for r in rows if r["length"] == length and r["year"] >= 1]
        chosen = length == plan.key_length
        end = series[-1]
        fig.add_trace(
            go.Scatter(
                x=[r["year"] for r in series],
                y=[r["density"] * 100 for r in series],
                mode="lines+markers+text",
                name=f"{length} characters" + (" (chosen)" if chosen else ""),
                line=dict(width=4 if chosen else 2),
                text=[""] * (len(series) - 1) + [_fill_label(end["density"])],
                textposition="top left" if end["density"] > 1 else "middle right",
                textfont=dict(size=14),
                hovertemplate=f"{length} chars: %{{y:.3g}}%<extra></extra>",
            )
        )
    fig.add_hline(
        y=a.max_key_density * 100,
        line_dash="dash",
        line_color="gray",
        annotation_text=(
            f"acceptable fill {capacity.format_quantity(a.max_key_density, 'fraction')}"
        ),
        annotation_position="bottom right",
    )
    densities = [r["density"] * 100 for r in rows if r["year"] >= 1] + [a.max_key_density * 100]
    low, high = math.log10(min(densities)), math.log10(max(densities))
    fig.update_layout(
        title=f"Key-space fill over the years (base{a.alphabet})",
        xaxis_title="years",
        xaxis_range=[0.5, years * 1.15 + 0.5],
        xaxis_tickvals=list(range(0, years + 1, max(1, years // 10))),
        yaxis_title="share of the key space used (%, log scale)",
        yaxis_type="log",
        yaxis_range=[low - 0.3, high + 0.6],
        **_LAYOUT,
    )
    return fig


def bloom_size_chart(known_urls: float, fp_rate: float) -> go.Figure:
    """Bloom filter size for ``known_urls`` as the false-positive rate goes from 10⁻⁶ to 50%."""
    rates = np.logspace(-6, math.log10(0.5), 80)
    sizes = [capacity.bloom_size_bytes(known_urls, float(p)) for p in rates]
    here = capacity.bloom_size_bytes(known_urls, fp_rate)
    fig = go.Figure()
    fig.add_trace(
        go.Scatter(
            x=rates * 100,
            y=sizes,
            mode="lines",
            name="filter size",
            hovertemplate="%{x:.3g}% → %{y:.3s}B<extra></extra>",
        )
    )
    fig.add_trace(
        go.Scatter(
            x=[fp_rate * 100],
            y=[here],
            mode="markers+text",
            name="your assumption",
            marker=dict(size=14, symbol="diamond", color=MARKER_COLOR),
            text=[
                f"{capacity.format_quantity(fp_rate, 'fraction')} → "
                f"{capacity.format_quantity(here, 'B')}"
            ],
            textposition="top right",
            textfont=dict(size=14),
            hoverinfo="skip",
        )
    )
    fig.update_layout(
        title=f"Seen-URL Bloom filter for {capacity.format_quantity(known_urls, 'count')} URLs",
        xaxis_title="false-positive rate (%, log scale)",
        yaxis_title="filter size",
        xaxis_type="log",
        xaxis_tickvals=PERCENT_TICKS,
        xaxis_ticktext=[f"{t:g}%" for t in PERCENT_TICKS],
        yaxis_tickformat="~s",
        yaxis_ticksuffix="B",
        **_LAYOUT,
    )
    return fig


def fanout_tail_chart(p_slow: float, shards: int, max_shards: int = 1_000) -> go.Figure:
    """Share of queries meeting at least one slow shard, against the number of shards."""
    counts = np.unique(np.round(np.logspace(0, math.log10(max(max_shards, shards)), 120)))
    fig = go.Figure()
    probabilities = sorted({p_slow, p_slow / 10, min(1.0, p_slow * 10)} - {0.0}, reverse=True)
    for p in probabilities or [p_slow]:
        mine = p == p_slow
        fig.add_trace(
            go.Scatter(
                x=counts,
                y=[capacity.fanout_tail_probability(p, int(n)) * 100 for n in counts],
                mode="lines",
                name=f"one shard slow {capacity.format_quantity(p, 'fraction')} of the time",
                line=dict(width=4 if mine else 2, dash=None if mine else "dot"),
                hovertemplate="%{x:.0f} shards: %{y:.3g}%<extra></extra>",
            )
        )
    here = capacity.fanout_tail_probability(p_slow, shards)
    fig.add_trace(
        go.Scatter(
            x=[shards],
            y=[here * 100],
            mode="markers+text",
            name="your assumption",
            marker=dict(size=14, symbol="diamond", color=MARKER_COLOR),
            text=[f"{shards} shards → {capacity.format_quantity(here, 'fraction')}"],
            textposition="top left",
            textfont=dict(size=14),
            hoverinfo="skip",
        )
    )
    fig.update_layout(
        title="Queries that wait for at least one slow shard",
        xaxis_title="shards every query touches (log scale)",
        yaxis_title="queries (%)",
        xaxis_type="log",
        xaxis_tickvals=[t for t in SHARD_TICKS if t <= counts[-1]],
        yaxis_range=[0, 100],
        **_LAYOUT,
    )
    return fig


def decay_chart(plan: capacity.TypeaheadPlan) -> go.Figure:
    """A query searched every day until it goes quiet: its score climbs, settles, then halves."""
    a = plan.assumptions
    quiet_from = max(14, math.ceil(a.score_half_life_days * 6))
    days = quiet_from * 2
    series = capacity.decay_series(
        a.example_daily_count, plan.daily_decay_factor, days, stop_after=quiet_from
    )
    fig = go.Figure()
    fig.add_trace(
        go.Scatter(
            x=list(range(days + 1)),
            y=series,
            mode="lines",
            name="score",
            line=dict(width=3),
            hovertemplate="day %{x}: %{y:,.0f}<extra></extra>",
        )
    )
    fig.add_hline(
        y=plan.steady_state_score,
        line_dash="dash",
        line_color="gray",
        annotation_text=(f"steady score {capacity.format_quantity(plan.steady_state_score, '')}"),
        annotation_position="bottom right",
    )
    fig.add_vline(
        x=quiet_from,
        line_dash="dot",
        line_color="gray",
        annotation_text="searches stop",
        annotation_position="bottom right",
    )
    fig.update_layout(
        title=(
            f"Score of a query searched {capacity.format_quantity(a.example_daily_count, '')} "
            f"times a day (half-life {a.score_half_life_days:g} days)"
        ),
        xaxis_title="day",
        yaxis_title="score",
        **_LAYOUT,
    )
    return fig


def proximity_sizes_chart(plan: capacity.ProximityPlan) -> go.Figure:
    """The narrow location index beside the data it is not: profiles and reviews."""
    parts = [
        ("Location index", plan.index_bytes),
        ("Quadtree", plan.quadtree_total_bytes),
        ("Profiles", plan.profile_bytes),
        ("Reviews a year", plan.review_bytes_per_year),
    ]
    fig = go.Figure(
        go.Bar(
            x=[name for name, _ in parts],
            y=[max(size, 1.0) for _, size in parts],
            text=[capacity.format_quantity(size, "B") for _, size in parts],
            textposition="outside",
            textfont=dict(size=14),
            marker_color=["#1f77b4", "#1f77b4", "#aaaaaa", "#aaaaaa"],
            hoverinfo="skip",
        )
    )
    fig.update_layout(
        title="The index is not the data: what must sit in memory vs in a database",
        yaxis_title="bytes (log scale)",
        yaxis_type="log",
        yaxis_dtick=1,
        yaxis_tickformat="~s",
        yaxis_ticksuffix="B",
        showlegend=False,
        **{**_LAYOUT, "hovermode": False},
    )
    return fig


def id_split_chart(plan: capacity.IdsPlan) -> go.Figure:
    """Every split of the bits under the timestamp between worker and sequence: workers
    against ids per ms per worker (their product, the fleet's rate, stays the same)."""
    a = plan.assumptions
    total = a.worker_bits + a.sequence_bits
    splits = list(range(0, total + 1))
    fig = go.Figure()
    fig.add_scatter(
        x=[2**w for w in splits],
        y=[2 ** (total - w) for w in splits],
        mode="lines+markers",
        name=f"every split of {total} bits",
        hovertemplate="%{x:,} workers: %{y:,} ids/ms each<extra></extra>",
    )
    for label, w in (("your layout", a.worker_bits), ("re-partitioned", a.repartition_worker_bits)):
        if w <= total:
            fig.add_scatter(
                x=[2**w],
                y=[2 ** (total - w)],
                mode="markers",
                name=label,
                marker=dict(size=14, symbol="diamond"),
            )
    fig.update_layout(
        title=f"Workers × ids per ms per worker = {2**total:,} ids per ms, whatever the split",
        xaxis_title="workers (log)", yaxis_title="ids per ms per worker (log)",
        xaxis_type="log", yaxis_type="log", **_LAYOUT,
    )  # fmt: skip
    return fig


def store_load_chart(plan: capacity.CachePlan) -> go.Figure:
    """The store's reads per second against the hit rate, the two compared rates marked."""
    a = plan.assumptions
    rates = np.linspace(0.80, 1.0, 201)
    fig = go.Figure()
    fig.add_scatter(
        x=rates * 100,
        y=a.requests_per_s * (1 - rates),
        mode="lines",
        name="store reads",
        hovertemplate="%{x:.1f}% hits: %{y:,.0f}/s<extra></extra>",
    )
    for label, rate, reads in (
        ("hit rate", a.hit_rate, plan.store_reads_per_s),
        ("compared with", a.lower_hit_rate, plan.store_reads_lower_per_s),
    ):
        fig.add_scatter(
            x=[rate * 100],
            y=[reads],
            mode="markers+text",
            name=label,
            marker=dict(size=14, symbol="diamond"),
            textposition="top right",
            text=[
                f"{capacity.format_quantity(rate, 'fraction')} → "
                f"{capacity.format_quantity(reads, '/s')}"
            ],
        )
    fig.add_hline(
        y=a.reads_per_primary, line_dash="dot", line_color="grey", annotation_text="one primary"
    )
    fig.update_layout(title="Store load against the hit rate: size the store for the misses",
                      xaxis_title="hit rate (%)", yaxis_title="store reads per second",
                      **_LAYOUT)  # fmt: skip
    return fig


def chart_for(system: System, plan: Any) -> go.Figure:
    """The chart shown in ``system``'s tab."""
    if system is CACHE:
        return store_load_chart(plan)
    if system is IDS:
        return id_split_chart(plan)
    if system is SHORTENER:
        return keyspace_fill_chart(plan)
    if system is TYPEAHEAD:
        return decay_chart(plan)
    if system is PROXIMITY:
        return proximity_sizes_chart(plan)
    if system is CRAWLER:
        return bloom_size_chart(plan.assumptions.known_urls, plan.assumptions.bloom_fp_rate)
    return fanout_tail_chart(plan.assumptions.shard_slow_probability, plan.assumptions.shards)
