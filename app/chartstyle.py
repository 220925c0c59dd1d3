"""Chart details the dashboard's Plotly figures share: readable log axes, legends out of
the way.

Plotly labels the minor ticks of a log axis with their first digit only — a range from
1 to 30 reads "1 2 5 10 2" — so :func:`log_axis` names every tick in full (1, 2, 5, 10,
20 …, or only the powers of ten over a wide range). A horizontal legend above the plot
sits on the title when both are there; :func:`legend_below` moves it under the x axis.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

#: Above this many decades, only the powers of ten are ticked.
WIDE_DECADES = 3


def tick_label(value: float) -> str:
    """``0.5`` → ``0.5``, ``20`` → ``20``, ``2000`` → ``2k``, ``3e6`` → ``3M``."""
    for scale, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= scale:
            return f"{value / scale:g}{suffix}"
    return f"{value:g}"


def log_ticks(low: float, high: float) -> tuple[list[float], list[str]]:
    """Tick values for a log axis spanning ``low``..``high`` (both > 0): 1, 2 and 5 of each
    decade, or only the powers of ten when it spans more than :data:`WIDE_DECADES`; each
    labelled in full."""
    if low <= 0 or high <= 0:
        raise ValueError("a log axis needs positive values")
    low, high = min(low, high), max(low, high)
    first, last = math.floor(math.log10(low)), math.ceil(math.log10(high))
    steps = (1,) if last - first > WIDE_DECADES else (1, 2, 5)
    values = [
        round(m * 10.0**e, 12)
        for e in range(first, last + 1)
        for m in steps
        if low / 1.0001 <= m * 10.0**e <= high * 1.0001
    ]
    if len(values) < 2:  # a narrow range: its ends, rounded to two significant figures
        values = sorted({float(f"{low:.2g}"), float(f"{high:.2g}")})
    return values, [tick_label(v) for v in values]


def log_axis(fig: Any, axis: str, values: Iterable[float], *, pad: float = 1.3,
             ticks: Iterable[float] | None = None, **layout: Any) -> Any:  # fmt: skip
    """Make ``axis`` (``"x"`` or ``"y"``) of ``fig`` logarithmic over ``values`` (zeros and
    negatives left out), with every tick labelled in full — at ``ticks`` when given (the
    values a chart was measured at), else at :func:`log_ticks`; ``layout``: more settings."""
    positive = [float(v) for v in values if v is not None and float(v) > 0]
    settings: dict[str, Any] = {"type": "log", **layout}
    if positive:
        low, high = min(positive) / pad, max(positive) * pad
        if ticks is None:
            tickvals, labels = log_ticks(low, high)
        else:
            tickvals = [float(t) for t in ticks if t > 0]
            labels = [tick_label(t) for t in tickvals]
        settings.update(tickvals=tickvals, ticktext=labels,
                        range=[math.log10(low), math.log10(high)])  # fmt: skip
    (fig.update_xaxes if axis == "x" else fig.update_yaxes)(**settings)
    return fig


def legend_below(fig: Any, *, bottom: int = 70) -> Any:
    """A horizontal legend under the x axis (never over the title), with room for it."""
    margin = fig.layout.margin
    fig.update_layout(
        legend=dict(orientation="h", yanchor="top", y=-0.22, x=0, xanchor="left", title=None),
        margin=dict(
            l=margin.l if margin.l is not None else 10,
            r=margin.r if margin.r is not None else 10,
            t=margin.t if margin.t is not None else 40,
            b=max(bottom, margin.b or 0),
        ),
    )
    return fig
