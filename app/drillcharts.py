"""The cache-tier outage drill, drawn: every request's latency, and what answered when.

The drill (:func:`lookup.fleet.outage_drill`) stops the fleet's Redis under steady
redirects and starts it again; it samples each worker's layer counters four times a
second. The story to see: before the outage the Redis tier answers the lookups a worker's
own memory cannot (a link another worker made, a key nobody made); while Redis is down
those fall back to the store — and no request fails; once it is back the tier answers
them again. :func:`layer_rates` turns the counters into lookups per second,
:func:`phase_rates` sums each phase, :func:`drill_story` says it in a sentence.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import plotly.express as px
import plotly.graph_objects as go
from chartstyle import legend_below, log_axis

#: The layers drawn, as the counters name them: (column, label, colour, dash, width).
LAYERS = (
    ("shared", "Redis tier", "#1f6feb", None, 3),
    ("store", "store (PostgreSQL)", "#bc4c00", None, 3),
    ("l1", "in-process LRU", "#8c959f", "dot", 1.5),
)
#: Rates are counted over this many seconds (the counters are sampled every 0.25 s).
WINDOW_S = 1.0
#: Seconds after a stop or a start before a phase is counted (the switch takes a moment).
SETTLE_S = 0.5
OUTAGE_COLOR = "#cf222e"


def layer_rates(drill: dict[str, Any], window_s: float = WINDOW_S) -> pd.DataFrame:
    """Lookups per second each layer answered, over the last ``window_s`` at each sample."""
    samples = pd.DataFrame(drill.get("layers") or [])
    if len(samples) < 2:
        return pd.DataFrame(columns=["t", *(c for c, *_ in LAYERS)])
    t = samples["t"].to_numpy()
    rows = []
    for i in range(1, len(samples)):
        j = i - 1
        while j > 0 and t[i] - t[j] < window_s:
            j -= 1
        dt = max(t[i] - t[j], 1e-9)
        rows.append({"t": t[i], **{c: (samples[c].iloc[i] - samples[c].iloc[j]) / dt
                                   for c, *_ in LAYERS}})  # fmt: skip
    return pd.DataFrame(rows)


def phase_rates(drill: dict[str, Any]) -> dict[str, dict[str, float]]:
    """Each layer's lookups per second ``before``, ``during`` and ``after`` the outage
    (each phase from its counters at its ends, a moment after each switch)."""
    samples = pd.DataFrame(drill.get("layers") or [])
    marks = drill.get("marks") or {}
    if samples.empty or "stop" not in marks or "start" not in marks:
        return {}
    end = float(samples["t"].iloc[-1])
    spans = {
        "before": (0.0, marks["stop"]),
        "during": (marks["stop"] + SETTLE_S, marks["start"]),
        # the second half of the time after the start: Redis takes a moment to come back
        # and each worker's circuit breaker to try it again
        "after": (max(marks["start"] + 2 * SETTLE_S, (marks["start"] + end) / 2), end),
    }
    out: dict[str, dict[str, float]] = {}
    for phase, (lo, hi) in spans.items():
        part = samples[(samples["t"] >= lo) & (samples["t"] <= hi)]
        if len(part) < 2:
            continue
        dt = float(part["t"].iloc[-1] - part["t"].iloc[0]) or 1e-9
        out[phase] = {c: float(part[c].iloc[-1] - part[c].iloc[0]) / dt for c, *_ in LAYERS}
    return out


def drill_story(drill: dict[str, Any]) -> str | None:
    """What the layers did, in a sentence (None when the drill has too few samples)."""
    rates = phase_rates(drill)
    if set(rates) != {"before", "during", "after"}:
        return None
    b, d, a = rates["before"], rates["during"], rates["after"]
    return (
        f"Before the outage the Redis tier answered **{b['shared']:.0f} lookups/s** (the "
        f"store {b['store']:.0f}/s); while Redis was stopped it answered "
        f"**{d['shared']:.0f}/s** and the store took **{d['store']:.0f}/s** instead; once "
        f"it was back the tier answered **{a['shared']:.0f}/s** again. The in-process LRU "
        f"answered {b['l1']:.0f}/s throughout: a warm link never leaves the process."
    )


def _shade_outage(fig: go.Figure, drill: dict[str, Any]) -> None:
    marks = drill.get("marks") or {}
    if "stop" in marks and "start" in marks:
        fig.add_vrect(x0=marks["stop"], x1=marks["start"], fillcolor=OUTAGE_COLOR,
                      opacity=0.12, line_width=0, annotation_text="Redis stopped",
                      annotation_position="top left")  # fmt: skip


def drill_figures(drill: dict[str, Any]) -> tuple[go.Figure, go.Figure]:
    """The drill's timelines: every request's latency (failures marked), and what the
    layers answered per second, with the outage shaded; legends under the plots."""
    events = pd.DataFrame(drill["events"])
    events["answer"] = events["status"].map(lambda s: "no answer" if s == 0 else f"HTTP {s}")
    lat = px.scatter(
        events, x="t", y="ms", color="op", symbol="answer",
        title="Every request: latency over time", labels={"t": "seconds", "ms": "ms"},
    )  # fmt: skip
    log_axis(lat, "y", events["ms"], title="ms (log scale)")
    rates = go.Figure()
    frame = layer_rates(drill)
    for column, name, color, dash, width in LAYERS:
        rates.add_scatter(x=frame["t"], y=frame[column], name=name, mode="lines",
                          line=dict(color=color, dash=dash, width=width))  # fmt: skip
    rates.update_layout(title="What answered, per second", xaxis_title="seconds",
                        yaxis_title="lookups/s (over the last second)")  # fmt: skip
    for fig in (lat, rates):
        _shade_outage(fig, drill)
        fig.update_layout(height=360, margin=dict(l=10, r=10, t=40, b=10))
        legend_below(fig, bottom=110)
    return lat, rates
