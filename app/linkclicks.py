"""The shortener page's *Clicks* panel: one link's clicks over the last hour or day — people,
bots and link previews apart — and where the people came from (countries, devices,
referrers, browsers, operating systems), read from ``GET /v1/links/{key}/stats``.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import plotly.express as px
import plotly.graph_objects as go
import streamlit as st
from common import metric_row
from linksafety import SCAN_BADGE, safety_panel
from shortlinks import SELECT_NEXT, SELECTED, call

HUMAN_COLOR = "#1f6feb"
BOT_COLOR = "#bf8700"
PREVIEW_COLOR = "#8250df"
STATUS_BADGE = {
    "ACTIVE": ":green-badge[ACTIVE]",
    "DISABLED": ":red-badge[DISABLED]",
    "EXPIRED": ":gray-badge[EXPIRED]",
    "DELETED": ":gray-badge[DELETED]",
}


def figure_style(fig: go.Figure, height: int = 300) -> go.Figure:
    fig.update_layout(
        height=height,
        margin=dict(l=10, r=10, t=30, b=10),
        legend=dict(orientation="h", yanchor="bottom", y=1.02, x=0),
        bargap=0.15,
    )
    return fig


def timeline_chart(stats: dict[str, Any]) -> go.Figure:
    """Clicks over time: people, crawlers and link previews stacked."""
    frame = pd.DataFrame(stats["series"])
    frame["t"] = pd.to_datetime(frame["t"])
    fig = go.Figure()
    for column, name, color in (
        ("clicks", "People", HUMAN_COLOR),
        ("bots", "Bots", BOT_COLOR),
        ("previews", "Link previews", PREVIEW_COLOR),
    ):
        fig.add_bar(x=frame["t"], y=frame[column], name=name, marker_color=color)
    fig.update_layout(barmode="stack", yaxis_title="clicks")
    return figure_style(fig, 300)


def breakdown_chart(rows: list[dict[str, Any]], top: int = 10) -> go.Figure:
    """A horizontal bar chart of the top values of one breakdown."""
    frame = pd.DataFrame(rows[:top])
    fig = px.bar(frame, x="clicks", y="value", orientation="h", text="clicks")
    fig.update_traces(
        marker_color=HUMAN_COLOR, textposition="outside", textangle=0, cliponaxis=False
    )
    fig.update_yaxes(autorange="reversed", title=None)
    fig.update_xaxes(title=None)
    return figure_style(fig, 260)


def devices_chart(rows: list[dict[str, Any]]) -> go.Figure:
    """Devices as a donut."""
    frame = pd.DataFrame(rows)
    fig = px.pie(frame, names="value", values="clicks", hole=0.55)
    fig.update_traces(textinfo="label+percent", showlegend=False)
    return figure_style(fig, 260)


def link_panel(links: list[dict[str, Any]]) -> None:
    """One link's clicks (charts), and the disable / enable action with the next click."""
    options = [link["key"] for link in links]
    labels = {
        link["key"]: f"{link['key']} → {(link.get('longUrl') or link['status'].lower())[:60]}"
        for link in links
    }
    pending = st.session_state.pop(SELECT_NEXT, None)
    if pending in options:
        st.session_state[SELECTED] = pending
    if st.session_state.get(SELECTED) not in options:
        st.session_state[SELECTED] = options[0]
    top = st.columns([3, 2, 1], vertical_alignment="bottom")
    key = top[0].selectbox("Link", options, format_func=labels.get, key=SELECTED)
    window = top[1].segmented_control(
        "Window",
        ["Last hour, by minute", "Last 24 hours, by hour"],
        default="Last hour, by minute",
        key="stats-window",
    )
    top[2].button("Refresh", icon=":material/refresh:", key="stats-refresh")
    link = next(link for link in links if link["key"] == key)
    granularity = "hour" if window == "Last 24 hours, by hour" else "minute"
    answer = call("GET", f"/v1/links/{key}/stats", params={"granularity": granularity})
    if not answer.ok:
        st.warning(f"No statistics: {answer.message()}", icon=":material/warning:")
        return
    stats = answer.body
    totals = stats["totals"]
    figures = st.columns(5)
    metric_row(
        figures[:4],
        [
            (
                "People",
                f"{totals['clicks']:,}",
                "Clicks by people: bots and link previews excluded.",
            ),
            (
                "Unique visitors",
                f"{stats['uniqueVisitors']['allTime']:,}",
                "HyperLogLog estimate of distinct (IP, browser) pairs, all time (±1.6 %).",
            ),
            ("Bots", f"{totals['bots']:,}", "Crawlers and scripted clients, counted apart."),
            (
                "Link previews",
                f"{totals['previews']:,}",
                "Chat apps fetching the link to draw a preview card.",
            ),
        ],
    )
    verdict = link.get("scanVerdict", "?")
    figures[4].markdown(
        f"**Status** {STATUS_BADGE.get(link['status'], link['status'])}  \n"
        f"**Scan** {SCAN_BADGE.get(verdict, verdict)}"
    )
    if link.get("scanReasons"):
        figures[4].caption(f"{len(link['scanReasons'])} scan rule(s) fired — see below")
    if totals["total"] == 0:
        st.info(
            "No clicks yet. Open the short link (in the table above, or with **Open it** "
            "below), or run the traffic simulator — the charts fill in as clicks arrive.",
            icon=":material/ads_click:",
        )
    else:
        st.markdown(f"**Clicks per {stats['granularity']}** (UTC)")
        st.plotly_chart(timeline_chart(stats), key="chart-timeline")
        breakdowns = stats["breakdowns"]
        charts = [
            ("Countries", "chart-countries", lambda: breakdown_chart(breakdowns["countries"])),
            ("Devices", "chart-devices", lambda: devices_chart(breakdowns["devices"])),
            ("Referrers", "chart-referrers", lambda: breakdown_chart(breakdowns["referrers"])),
            ("Browsers", "chart-browsers", lambda: breakdown_chart(breakdowns["browsers"], 8)),
            ("Operating systems", "chart-os", lambda: breakdown_chart(breakdowns["os"], 8)),
        ]
        for row in (charts[:3], charts[3:]):
            for column, (title, key_name, build) in zip(st.columns(len(row)), row, strict=True):
                with column:
                    st.markdown(f"**{title}** · people only")
                    if totals["clicks"]:
                        st.plotly_chart(build(), key=key_name)
                    else:
                        st.caption("Only bots and link previews so far.")
    safety_panel(link)
