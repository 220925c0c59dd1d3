"""The Study page's Progress tab: accuracy over time, weakest topics, cards due, recent reviews.

Everything is read from the learner's :class:`~lookup.study.progress.ProgressStore`:
``accuracy_by_day`` for the chart, ``accuracy`` (weakest first) for the topic table,
``due_counts`` for the cards due now, today and this week, and the reviews themselves.
"""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go
import streamlit as st
from study_common import learner, store
from study_interview import past_interviews

from lookup.study.bank import SYSTEMS


def accuracy_chart(rows: list[dict[str, Any]]) -> go.Figure:
    """Accuracy per day, one line per system (0–100 %), from ``accuracy_by_day`` rows."""
    fig = go.Figure()
    one_day = len({r["day"] for r in rows}) < 2  # bars side by side; lines need two days
    for system in dict.fromkeys(r["system"] for r in rows):
        mine = [r for r in rows if r["system"] == system]
        common: dict[str, Any] = dict(
            x=[r["day"] for r in mine],
            y=[r["accuracy"] * 100 for r in mine],
            name=SYSTEMS.get(system, system),
            customdata=[r["reviews"] for r in mine],
            hovertemplate="%{y:.0f}% over %{customdata} reviews<extra>%{fullData.name}</extra>",
        )
        if one_day:
            fig.add_trace(
                go.Bar(
                    **common, text=[f"{r['accuracy']:.0%}" for r in mine], textposition="outside"
                )
            )
        else:
            fig.add_trace(go.Scatter(**common, mode="lines+markers", marker=dict(size=9)))
    fig.update_layout(
        barmode="group",
        bargap=0.4,
        title="Accuracy by day and system",
        xaxis_title="day",
        xaxis_type="category",
        yaxis_title="accuracy (%)",
        yaxis_range=[0, 115] if one_day else [-5, 105],
        height=360,
        margin=dict(l=10, r=10, t=60, b=10),
        legend=dict(orientation="h", yanchor="bottom", y=1.0, xanchor="right", x=1.0),
        hovermode="x unified",
    )
    return fig


def _result(row: dict[str, Any]) -> str:
    return row["verdict"] or row["grade"]


def render() -> None:
    """The Progress tab."""
    name = learner()
    if name is None:
        st.info("Type your name above to see your progress.", icon=":material/person:")
        return
    s = store()
    reviews = s.reviews(name)
    due = s.due_counts(name)
    interviews = s.interviews(name)
    with st.container(key="study-progress-metrics", horizontal=True):
        st.metric("Reviews", f"{len(reviews):,}", border=True)
        st.metric("Due now", due["now"], border=True)
        st.metric("Due today", due["today"], border=True)
        st.metric("Due this week", due["week"], border=True)
        st.metric("Mock interviews", len(interviews), border=True)
    if not reviews:
        st.info(
            f"No answers recorded for {name} yet: start a session on the Session tab.",
            icon=":material/inbox:",
        )
    else:
        st.plotly_chart(accuracy_chart(s.accuracy_by_day(name)), key="study-accuracy-chart")
        left, right = st.columns([2, 3], gap="large")
        with left, st.container(key="study-weakest-topics"):
            st.markdown("#### Weakest topics first")
            st.dataframe(
                [
                    {
                        "system": SYSTEMS.get(r["system"], r["system"]),
                        "topic": r["topic"],
                        "reviews": r["reviews"],
                        "accuracy": r["accuracy"] * 100,
                    }
                    for r in s.accuracy(name)
                ],
                hide_index=True,
                column_config={
                    "accuracy": st.column_config.ProgressColumn(
                        "accuracy", format="%.0f%%", min_value=0, max_value=100
                    )
                },
                key="study-weakest",
            )
        with right, st.container(key="study-recent-reviews"):
            st.markdown("#### Recent reviews")
            st.dataframe(
                [
                    {
                        "when (UTC)": r["at"][:16].replace("T", " "),
                        "item": r["item_id"],
                        "kind": r["kind"],
                        "result": _result(r),
                        "answer": r["answer"] or "",
                    }
                    for r in reversed(reviews[-20:])
                ],
                hide_index=True,
                key="study-recent",
            )
    past_interviews(name)
