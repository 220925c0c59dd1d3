"""Capacity planner: move the assumptions, watch the numbers that drive each design follow."""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st
from planner import (
    SYSTEMS,
    System,
    basis_note,
    build_plan,
    chart_for,
    figures_by_key,
    label_with_basis,
    metric_rows,
    peak_factor,
    tiles_per_row,
    widget_key,
)

st.title("Capacity planner")
st.markdown(
    "The estimation habit: turn the assumptions into **per-second rates**, then into "
    "**bytes**, then name **the one number that drives the design**. Every input starts at "
    "the design notes' assumption; every figure below is recomputed as you move them, with the "
    "arithmetic written out."
)

#: Height of one row of st.dataframe, so the whole worked-out table shows without scrolling.
ROW_PX = 35


def _reset(system: System) -> None:
    """Put every input of ``system`` back to the design notes' assumption."""
    for name, value in system.defaults().items():
        st.session_state[widget_key(system, name)] = _shown_default(system, name, value)


def _shown_default(system: System, name: str, value: Any) -> float | int:
    shown = system.knob(name).to_shown(value)
    return int(round(shown)) if system.is_integer(name) else float(shown)


def _input(system: System, name: str) -> float | int:
    """One input for one assumption; its value lives in session state under a stable key."""
    knob = system.knob(name)
    key = widget_key(system, name)
    number = int if system.is_integer(name) else float
    if key not in st.session_state:
        st.session_state[key] = _shown_default(system, name, system.defaults()[name])
    common: dict[str, Any] = dict(
        label=knob.label,
        min_value=number(knob.minimum),
        max_value=number(knob.maximum),
        step=number(knob.step),
        key=key,
        help=system.help(name) or None,
        persist_state="session",
    )
    if knob.fmt and number is float:
        common["format"] = knob.fmt
    if knob.slider:
        return st.slider(**common)
    return st.number_input(**common)


def _inputs(system: System) -> dict[str, float | int]:
    """Sliders for the main assumptions, number boxes for the rest, and a reset button."""
    names = system.field_names()
    sliders = [n for n in names if system.knob(n).slider]
    others = [n for n in names if n not in sliders]
    shown: dict[str, float | int] = {}
    for name in sliders:
        shown[name] = _input(system, name)
    with st.expander(f"All other assumptions ({len(others)})", expanded=False):
        for name in others:
            shown[name] = _input(system, name)
    st.button(
        "Reset to the design notes' assumptions",
        key=f"{system.name}.reset",
        on_click=_reset,
        args=(system,),
        icon=":material/restart_alt:",
    )
    return shown


def _seed_figures(system: System) -> dict[str, Any]:
    return figures_by_key(system.plan(system.assumptions()))


def _tab(system: System) -> None:
    st.caption(system.intro)
    controls, results = st.columns([1, 2.4], gap="large")
    with controls:
        st.subheader("Assumptions")
        shown = _inputs(system)
    with results:
        try:
            plan = build_plan(system, shown)
        except ValueError as exc:
            st.error(f"These assumptions do not make a plan: {exc}", icon=":material/error:")
            return
        figures = figures_by_key(plan)
        seed = _seed_figures(system)
        peak = peak_factor(system, shown)
        note = basis_note(system, peak)
        st.info(plan.driver() + (f"\n\n{note}" if note else ""), icon=":material/lightbulb:")
        headline = [figures[k] for k in system.headline if k in figures]
        per_row = tiles_per_row([(label_with_basis(f, peak), f.text) for f in headline])
        for row in metric_rows(headline, per_row):
            for column, figure in zip(st.columns(len(row)), row, strict=True):
                was = seed.get(figure.key)
                changed = was is not None and was.text != figure.text
                column.metric(
                    label_with_basis(figure, peak),
                    figure.text,
                    delta=f"design notes: {was.text}" if changed else None,
                    delta_color="off",
                    delta_arrow="off",
                    help=figure.formula,
                    border=True,
                )
        st.plotly_chart(chart_for(system, plan), key=f"{system.name}.chart")
    st.subheader("How each figure is worked out")
    table = pd.DataFrame(
        [
            {"Figure": label_with_basis(f, peak), "Value": f.text, "Worked out as": f.formula}
            for f in plan.rows()
        ]
    )
    st.dataframe(
        table, hide_index=True, height=ROW_PX * (len(table) + 1) + 3, key=f"{system.name}.table"
    )


#: The open tab's title. Only the open tab runs and is drawn (each has a chart, a table and
#: a dozen inputs: all seven at once made a visit several seconds slower); the inputs of the
#: others keep their values in the session.
TAB = "capacity.tab"

for tab, system in zip(
    st.tabs([s.title for s in SYSTEMS], key=TAB, on_change="rerun"), SYSTEMS, strict=True
):
    if tab.open:
        with tab:
            _tab(system)
