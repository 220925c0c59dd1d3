"""The crawler's politeness timeline: every request on its host's lane, as the server logged it.

Drawn by the crawler page's *Politeness timeline* tab (one crawl) and by the *Crawler
fleet* panel (three workers, refreshed every second), from the sandbox web's request log.
"""

from __future__ import annotations

import threading
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx
import pandas as pd
import plotly.graph_objects as go

from lookup.crawler.sandbox import LoggedRequest
from lookup.crawler.session import CrawlSession, CrawlSnapshot
from lookup.crawler.state import CrawlStateError, crawl_state_url, open_crawl_reader

__all__ = [
    "STATUS_COLORS",
    "Timeline",
    "crawl_timeline",
    "request_rows",
    "short_host",
    "status_class",
    "timeline_figure",
    "timeline_rows",
]

X_TITLE = "seconds since the crawl started"

STATUS_COLORS = {
    "2xx": "#2da44e",
    "3xx": "#1f6feb",
    "4xx": "#bf8700",
    "5xx": "#cf222e",
    "no answer": "#6e7781",
}


def status_class(status: Any) -> str:
    """An HTTP status as its class (``2xx`` …), or ``no answer``."""
    if status is None or pd.isna(status):
        return "no answer"
    return f"{int(status) // 100}xx" if 200 <= int(status) < 600 else "no answer"


def timeline_figure(rows: pd.DataFrame, by: str, x_title: str = X_TITLE) -> go.Figure:
    """One lane per host (or address), a mark per request coloured by its answer; a request
    flagged ``too_close`` (a column of :func:`request_rows`) is ringed in red."""
    rows = rows.sort_values("t").copy()
    rows["class"] = [status_class(s) for s in rows["status"]]
    rows["gap"] = rows.groupby(by)["t"].diff() - rows.groupby(by)["duration"].shift()
    lanes = sorted(rows[by].unique(), reverse=True)
    fig = go.Figure()
    # Each request's duration as a short bar on its host's lane.
    xs: list[Any] = []
    ys: list[Any] = []
    for t, d, lane in zip(rows["t"], rows["duration"], rows[by], strict=True):
        xs += [t, t + d, None]
        ys += [lane, lane, None]
    fig.add_trace(
        go.Scatter(
            x=xs,
            y=ys,
            mode="lines",
            line=dict(color="rgba(110,119,129,0.55)", width=9),
            hoverinfo="skip",
            showlegend=False,
        )
    )
    for cls, color in STATUS_COLORS.items():
        part = rows[rows["class"] == cls]
        if part.empty:
            continue
        robots = part["target"].str.startswith("/robots.txt")
        fig.add_trace(
            go.Scatter(
                x=part["t"],
                y=part[by],
                mode="markers",
                name=cls,
                marker=dict(
                    color=color,
                    size=[11 if r else 7 for r in robots],
                    symbol=["diamond" if r else "line-ns" for r in robots],
                    line=dict(width=2, color=color),
                ),
                customdata=list(
                    zip(
                        part["target"],
                        part["status"].fillna(0).astype(int),
                        part["duration"] * 1000,
                        part["gap"],
                        strict=True,
                    )
                ),
                hovertemplate=(
                    "%{y}<br>%{customdata[0]}<br>HTTP %{customdata[1]} in "
                    "%{customdata[2]:.1f} ms<br>%{x:.3f} s after the start<br>"
                    "gap since the previous request: %{customdata[3]:.3f} s<extra></extra>"
                ),
            )
        )
    close = rows[rows["too_close"]] if "too_close" in rows else rows.iloc[:0]
    if not close.empty:
        fig.add_trace(
            go.Scatter(
                x=close["t"],
                y=close[by],
                mode="markers",
                name="too close",
                marker=dict(symbol="circle-open", size=16, color="#cf222e", line=dict(width=3)),
                hovertemplate="%{y}<br>too close to the one before<extra></extra>",
            )
        )
    fig.update_layout(
        height=max(260, 34 * len(lanes) + 110),
        margin=dict(l=10, r=10, t=30, b=10),
        xaxis_title=x_title,
        yaxis=dict(categoryorder="array", categoryarray=lanes),
        legend=dict(orientation="h", y=1.06, x=0, title_text="answer: "),
        hovermode="closest",
    )
    return fig


def short_host(host: str) -> str:
    """A host without its port."""
    return host.split(":", 1)[0]


def request_rows(
    entries: Sequence[LoggedRequest], started: float, close: Collection[int] = ()
) -> pd.DataFrame:
    """The logged requests as the figure's rows (``t``: seconds after ``started``, a wall
    clock time); ``close``: the ``seq`` of the requests that came too close."""
    return pd.DataFrame(
        {
            "host": [short_host(e.host) for e in entries],
            "address": [e.address for e in entries],
            "t": [e.wall - started for e in entries],
            "duration": [max(0.0, e.end - e.start) for e in entries],
            "status": [e.status for e in entries],
            "target": [e.target for e in entries],
            "aborted": [e.aborted for e in entries],
            "too_close": [e.seq in close for e in entries],
        }
    )


@dataclass(frozen=True)
class Timeline:
    """Requests to plot: from the sandbox's own log when it answers, else the crawler's."""

    rows: pd.DataFrame
    source: str
    note: str | None
    entries: list[Any] = field(default_factory=list)


def timeline_rows(session: CrawlSession, snap: CrawlSnapshot) -> Timeline:
    started = snap.started_at or 0.0
    note = None
    try:
        entries = session.request_log()
    except httpx.HTTPError:
        entries = None
        note = (
            f"The sandbox web that served this crawl ({session.sandbox_url}) does not answer, "
            "so its request log is gone; this is the crawler's own fetch log instead."
        )
    if entries:
        rows = request_rows(entries, started)
        return Timeline(rows, "sandbox", note, entries)
    if entries is not None and session.sandbox_url:
        note = "The sandbox's log holds no request from this crawl (was it restarted?)."
    try:
        with open_crawl_reader(crawl_state_url(session.out_dir)) as reader:
            fetches = reader.fetch_log(order="started")
    except (FileNotFoundError, CrawlStateError):
        fetches = []
    rows = pd.DataFrame(
        {
            "host": [short_host(f.host) for f in fetches],
            "address": [f.address or "" for f in fetches],
            "t": [f.started - started for f in fetches],
            "duration": [f.took for f in fetches],
            "status": [f.status for f in fetches],
            "target": ["/" + f.url.split("://", 1)[-1].partition("/")[2] for f in fetches],
            "aborted": [False for _ in fetches],
        }
    )
    return Timeline(rows, "crawler", note)


#: Timelines of finished crawls, read once from the sandbox's log: they never change, and a
#: visit after a crawl no longer asks the sandbox for its whole log again. Shared by every
#: session of the dashboard server; the newest few are kept.
_FINISHED: dict[tuple[str, int], Timeline] = {}
_FINISHED_KEPT = 8
_finished_lock = threading.Lock()


def crawl_timeline(session: CrawlSession, snap: CrawlSnapshot) -> Timeline:
    """:func:`timeline_rows`, remembered once the crawl has finished and its log was read."""
    if not snap.finished:
        return timeline_rows(session, snap)
    key = (str(session.out_dir), snap.requests)
    with _finished_lock:
        kept = _FINISHED.get(key)
    if kept is not None:
        return kept
    timeline = timeline_rows(session, snap)
    if timeline.source == "sandbox":
        with _finished_lock:
            while len(_FINISHED) >= _FINISHED_KEPT:
                _FINISHED.pop(next(iter(_FINISHED)))
            _FINISHED[key] = timeline
    return timeline
