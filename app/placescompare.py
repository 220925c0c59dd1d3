"""The Places page's comparison of planners: the page's query through each, timed, and
whether each answers exactly as brute force does.

Geohash, quadtree and brute force run in the API's memory; PostGIS (``index=postgis``)
lets the places table's GiST index pick the candidates (``ST_DWithin``) before the same
exact check and ranking — offered only by a server whose places live in PostgreSQL, so
elsewhere its row is left out with the API's reason (``POSTGIS_UNAVAILABLE``).
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from typing import Any

import httpx
import pandas as pd
import plotly.graph_objects as go
import streamlit as st
from chartstyle import log_axis
from common import Answer, call
from placesmap import BLUE, GREEN, ORANGE, fmt_m

#: The planners compared, in the table's order; brute force is the oracle.
COMPARED = ["geohash", "quadtree", "scan", "postgis"]
LABELS = {"geohash": "Geohash", "quadtree": "Quadtree", "scan": "Brute force", "postgis": "PostGIS"}
PURPLE = "#8250df"
#: The API's radius search is fast; a brute-force comparison over millions may take longer.
TIMEOUT = httpx.Timeout(30.0, connect=2.0)
REPEATS = 5
TIME_COLUMN = f"Server time (ms, median of {REPEATS})"


def _get(params: dict[str, str]) -> Answer:
    answer = call("GET", "/v1/search", params=params, timeout=TIMEOUT)
    if answer.problem is None and answer.body is None:
        return Answer(answer.status, problem=f"/v1/search did not answer JSON ({answer.status})")
    return answer


def timings_chart(table: pd.DataFrame) -> go.Figure:
    """The planners' server times (median of the repeats), as bars on a log scale."""
    ms = table[TIME_COLUMN]
    colours = {"Geohash": BLUE, "Quadtree": GREEN, "Brute force": ORANGE, "PostGIS": PURPLE}
    fig = go.Figure(
        go.Bar(
            x=ms,
            y=table["Index"],
            orientation="h",
            marker_color=[colours.get(i, BLUE) for i in table["Index"]],
            text=[f"{t:,.2f} ms" for t in ms],
            textposition="outside",
            cliponaxis=False,
        )
    )
    log_axis(fig, "x", ms, title="server time per query (ms, log scale)")
    fig.update_yaxes(autorange="reversed", title=None)
    fig.update_layout(
        height=60 + 40 * len(table), margin=dict(l=10, r=60, t=10, b=10), showlegend=False
    )
    return fig


def _cells(index: str, explain: dict[str, Any]) -> str:
    if index == "scan":
        return "all"
    if index == "postgis":
        return "GiST index"
    return str(len(explain.get("cells") or []))


def _key(a: Answer) -> tuple[Any, ...]:
    return (
        a.body["total"],
        a.body["radiusUsedM"],
        tuple((r["id"], r["distanceM"]) for r in a.body["results"]),
    )


def compare_indexes(params_of: Callable[[str], dict[str, str]], page_size: int) -> None:
    """Run the page's query (``params_of(index)``) through each planner :data:`REPEATS`
    times; draw the timings and a table saying whether each equals brute force."""
    rows: list[dict[str, Any]] = []
    answers: dict[str, Answer] = {}
    for index in COMPARED:
        took, trips, answer = [], [], None
        for _ in range(REPEATS):
            answer = _get(params_of(index))
            if not answer.ok:
                break
            took.append(float(answer.body["explain"]["tookMs"]))
            trips.append(answer.ms)
        assert answer is not None
        if not answer.ok:
            if index == "postgis" and answer.error == "POSTGIS_UNAVAILABLE":
                st.caption(f"PostGIS is not compared here: {answer.message()}")
                continue
            st.warning(f"{LABELS[index]}: {answer.message()}", icon=":material/warning:")
            return
        answers[index] = answer
        explain = answer.body["explain"]
        row = {
            "Index": LABELS[index],
            "Cells read": _cells(index, explain),
            "Candidates read": int(explain.get("read", 0)),
            "Results": int(answer.body.get("total", 0)),
            TIME_COLUMN: round(statistics.median(took), 3),
            "Round trip (ms, median)": round(statistics.median(trips), 1),
        }
        rows.append(row)
    oracle = _key(answers["scan"])
    for row, index in zip(rows, answers, strict=True):
        row["Same results as brute force"] = "yes" if _key(answers[index]) == oracle else "NO"
    table = pd.DataFrame(rows)
    scan_ms = table.loc[table["Index"] == "Brute force", TIME_COLUMN].iloc[0]
    table["Speed-up vs brute force"] = [
        f"{scan_ms / t:,.1f}×" if t > 0 else "—" for t in table[TIME_COLUMN]
    ]
    radius = fmt_m(float(oracle[1]))
    st.caption(
        f"The query the page shows: {oracle[0]:,} places within {radius} of where you "
        f"stand, with its filters, first page of {page_size}; each index runs it "
        f"{REPEATS} times without the result cache."
    )
    chart, numbers = st.columns([1, 1.6], gap="medium")
    with chart:
        st.plotly_chart(timings_chart(table), key="places-compare-chart")
    with numbers:
        st.dataframe(table, hide_index=True, key="places-compare")
    if all(r["Same results as brute force"] == "yes" for r in rows):
        count = {3: "three", 4: "four"}.get(len(rows), str(len(rows)))
        st.caption(
            f"All {count} return the same {oracle[0]:,} places within {radius} in the "
            f"same order (the first {len(answers['scan'].body['results'])} compared "
            "by id and distance). Brute force reads every row; the indexes read only "
            "the rows in their cells"
            + (
                "; PostGIS's GiST index picks the candidates in the database, then the "
                "same exact check and ranking run."
                if "postgis" in answers
                else "."
            )
        )
    else:
        st.error("The planners disagree on this query.", icon=":material/error:")
