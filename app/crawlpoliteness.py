"""The crawler page's politeness: the live view of a crawl (its figures, its pace, each host's
queue and pause) and the *Politeness timeline* tab, which judges the pauses from the
sandbox web's own request log — the server's side, not the crawler's word.

The live view reads the crawl's own SQLite state while it runs, including the frontier's
per-host ready times, which the crawler writes twice a second.
"""

from __future__ import annotations

import time
from typing import Any

import pandas as pd
import plotly.graph_objects as go
import streamlit as st
from common import metric_row
from crawlruns import ROW_PX
from crawltimeline import crawl_timeline, short_host, timeline_figure
from plotly.subplots import make_subplots

from lookup.crawler.session import CrawlSession, CrawlSnapshot, HostStatus, politeness_gaps

#: The pages-per-second chart's rate is taken over this many seconds of samples.
RATE_WINDOW_S = 3.0


# ----------------------------------------------------------------------------- live view


def host_rows(
    hosts: list[HostStatus], now: float, live: bool, budget: int | None = None
) -> pd.DataFrame:
    """One row per host; "Next request" is the frontier's own ready time for it."""
    rows = []
    for h in hosts:
        if h.robots_state is None:
            robots = "not read yet"
        elif h.robots_state == "disallow-all":
            robots = f"{h.robots_status or 'no answer'}: crawl nothing"
        elif h.robots_state == "allow-all":
            robots = f"{h.robots_status}: no rules"
        else:
            robots = f"{h.robots_status}: rules"
        row: dict[str, Any] = {
            "Host": h.label,
            "Address": h.address,
            "robots.txt": robots,
            "Crawl-delay": "—" if h.crawl_delay is None else f"{h.crawl_delay:g} s",
            "Queued": h.queued,
            "In flight": h.in_flight,
            "Fetched": h.fetched,
            "Budget used": f"{h.budget_used} of {budget}" if budget else str(h.budget_used),
            "Last pause (s)": None if h.last_delay is None else round(h.last_delay, 3),
            "Errors": h.errors,
            "Back-offs": h.backoffs,
        }
        if live:
            wait = h.wait(now)
            if h.robots_state == "disallow-all":
                row["Next request"] = "parked until robots.txt is readable"
            elif wait is None:
                row["Next request"] = "robots.txt first"
            elif h.queued == 0 and h.in_flight == 0:
                row["Next request"] = "nothing queued"
            else:
                row["Next request"] = "now" if wait == 0 else f"in {wait:.2f} s"
        rows.append(row)
    return pd.DataFrame(rows)


def smoothed_rates(t: list[float], pages: list[int], window: float = RATE_WINDOW_S) -> list[float]:
    """Pages per second at each sample, over the last ``window`` seconds.

    Samples come twice a second and a polite crawl fetches a page or two per host per
    second, so the rate between neighbouring samples jumps between 0 and 2; over a few
    seconds it reads as the crawl's pace.
    """
    rates: list[float] = []
    j = 0
    for i in range(len(t)):
        while t[i] - t[j] > window:
            j += 1
        first = j if j < i else max(0, i - 1)
        dt = t[i] - t[first]
        rates.append((pages[i] - pages[first]) / dt if dt > 0 else 0.0)
    return rates


def progress_chart(session: CrawlSession) -> go.Figure | None:
    samples = session.history()
    if len(samples) < 2:
        return None
    t = [s.t for s in samples]
    rates = smoothed_rates(t, [s.pages for s in samples])
    fig = make_subplots(
        rows=1,
        cols=2,
        subplot_titles=(
            f"Pages per second (over {RATE_WINDOW_S:g} s)",
            "Frontier (URLs waiting) and duplicates",
        ),
        horizontal_spacing=0.08,
    )
    lines = (
        (rates, "pages/s", dict(color="#1f6feb"), 1),
        ([s.frontier for s in samples], "frontier", dict(color="#8250df"), 2),
        ([s.duplicates for s in samples], "duplicates", dict(color="#bf8700", dash="dot"), 2),
    )
    for y, name, line, col in lines:
        fig.add_trace(go.Scatter(x=t, y=y, mode="lines", name=name, line=line), row=1, col=col)
    fig.update_xaxes(title_text="seconds since the crawl started")
    fig.update_layout(height=280, margin=dict(l=10, r=10, t=40, b=10), legend=dict(x=1.02, y=1))
    return fig


def live_panel(session: CrawlSession, was_running: bool) -> None:
    """Metrics, progress chart and the host table; refreshed every second while crawling."""
    running = session.running
    if was_running and not running:
        st.rerun()  # the crawl just ended: redraw the whole page with its results
    try:
        snap = session.snapshot()
    except FileNotFoundError:
        if running:
            st.info("The crawler is starting …", icon=":material/hourglass_top:")
        else:
            problem = session.failed() or "it left no crawl state"
            st.error(f"This crawl did not run: {problem}")
        return
    except Exception as exc:  # noqa: BLE001 - a damaged crawl file is a message, not a crash
        st.error(f"This crawl's state cannot be read: {exc}")
        return
    settings = session.settings
    cycle = f" · crawl cycle {snap.cycle}" + (
        f" (budget {snap.host_budget:,} pages per host)" if snap.host_budget else ""
    )
    if running:
        limit = settings.get("max_seconds")
        bound = f" of at most {limit:g} s" if limit else ""
        st.markdown(
            f":blue-badge[:material/sync: Crawling] {snap.elapsed:.0f} s{bound} · "
            f"{snap.requests} requests so far{cycle} · refreshed every second"
        )
        st.button("Stop the crawl", key="crawl-stop", on_click=session.stop, icon=":material/stop:")
    elif snap.finished:
        st.markdown(
            f":green-badge[:material/check_circle: Finished] stopped at **{snap.stop_reason}** "
            f"after {snap.elapsed:.1f} s · {snap.requests} requests "
            f"({snap.robots_fetches} for robots.txt){cycle}"
        )
    else:
        problem = session.failed()
        st.markdown(
            ":orange-badge[:material/warning: Stopped early] the crawler left no final report"
            + (
                f" ({problem})"
                if problem
                else " (it was killed); `lookup crawl --resume` would continue it"
            )
        )
    rate = snap.recent_pages_per_second if running else snap.pages_per_second
    figures = [
        ("Pages fetched", f"{snap.pages:,}", "HTTP answers to page requests (not robots.txt)"),
        (
            "Pages per second",
            f"{rate:.1f}",
            "over the last 5 s" if running else "over the whole crawl",
        ),
        ("Frontier", f"{snap.frontier:,}", "URLs queued or in flight"),
        ("New pages", f"{snap.events:,}", "PageFetched events written for the search index"),
        ("Duplicates", f"{snap.duplicates_total:,}", "pages whose text another page already had"),
        ("Soft 404s", f"{snap.soft_404s:,}", "pages that answered 200 OK but meant “not found”"),
        ("Traps cut", f"{snap.traps_total:,}", "URLs refused by a trap rule"),
        ("Blocked by robots", f"{snap.blocked:,}", "URLs robots.txt kept the crawler from"),
    ]
    for row in (figures[:4], figures[4:]):  # four to a row: every label fits its tile
        metric_row(st.columns(len(row)), row)
    fig = progress_chart(session)
    if fig is not None:
        st.plotly_chart(fig, key="crawl-progress")
    st.markdown("**Hosts: each one's queue and politeness**")
    st.caption(
        "One back queue per host; a host is asked again only after its pause — "
        "max(Crawl-delay, factor × fetch time, minimum) — and only one request per host and "
        "per address is ever in flight. Hosts whose robots.txt cannot be read get nothing "
        "fetched (fail closed). *Next request* is the frontier's own ready time for the "
        "host (its heap of ready times, written by the crawler twice a second); *Budget "
        "used* counts the pages admitted for the host in this crawl cycle."
    )
    if snap.hosts:
        st.dataframe(
            host_rows(snap.hosts, time.time(), running, snap.host_budget),
            hide_index=True,
            key="hosts-table",
            height=ROW_PX * (len(snap.hosts) + 1) + 3,
        )
    else:
        st.caption("No host contacted yet.")


# --------------------------------------------------------------------- politeness tab


def politeness_tab(session: CrawlSession, snap: CrawlSnapshot) -> None:
    st.markdown(
        "Every request this crawl made, **as the sandbox web logged it** — the server's side, "
        "not the crawler's word. Each mark is one request (◆ = robots.txt, which always comes "
        "first); the empty stretches between marks on a lane are the pauses the crawler kept."
    )
    by = st.segmented_control(
        "Lanes", ["host", "address"], default="host", key="timeline-by",
        help="Several host names share one address (shared hosting): the crawler keeps one "
        "request in flight per address too.",
    )  # fmt: skip
    by = by or "host"
    timeline = crawl_timeline(session, snap)
    if timeline.note:
        st.info(timeline.note, icon=":material/info:")
    if timeline.rows.empty:
        st.caption("No request yet.")
        return
    st.plotly_chart(timeline_figure(timeline.rows, by), key="timeline")
    if timeline.source != "sandbox":
        return
    settings = session.settings
    if "min_delay" not in settings:
        st.caption("This crawl was not started here, so its politeness settings are unknown.")
        return
    delays = {short_host(h.host): h.crawl_delay for h in snap.hosts if h.crawl_delay}
    # Judged here: the floors that need no clock but the server's — the minimum pause and
    # each host's Crawl-delay. The "factor × fetch time" part uses the crawler's own
    # timing (a page cut off at the size cap ends later on the server than for the
    # crawler), and is checked against it in the crawler's tests.
    gaps = politeness_gaps(
        timeline.entries,
        min_delay=settings["min_delay"],
        delay_factor=0.0,
        crawl_delays=delays,
        by=by,
    )
    violations = sum(g.violations for g in gaps)
    checked = sum(max(0, g.requests - 1) for g in gaps)
    floor = f"the minimum pause ({settings['min_delay']:g} s) and the host's Crawl-delay"
    if violations == 0:
        st.success(
            f"Politeness checked from the server's side: all {checked:,} gaps between "
            f"consecutive requests to one {by} were at least {floor}.",
            icon=":material/verified:",
        )
    else:
        st.error(
            f"{violations} of {checked:,} gaps were shorter than {floor}.",
            icon=":material/gpp_bad:",
        )
    table = pd.DataFrame(
        [
            {
                by.capitalize(): short_host(g.key),
                "Requests": g.requests,
                "Smallest gap (s)": g.min_gap,
                "Median gap (s)": g.median_gap,
                "Closest to the floor (s)": g.min_slack,
                "Too close": g.violations,
            }
            for g in gaps
        ]
    )
    st.dataframe(
        table,
        hide_index=True,
        key="gaps-table",
        column_config={
            c: st.column_config.NumberColumn(format="%.3f")
            for c in ("Smallest gap (s)", "Median gap (s)", "Closest to the floor (s)")
        },
    )
