"""The shortener page's *Traffic simulator*: realistic traffic through the real HTTP redirect
path — people, a viral burst, crawlers, link previews, a key-guessing scraper — and what
each cache layer absorbed, from the server's own counters before and after.
"""

from __future__ import annotations

import httpx
import pandas as pd
import plotly.express as px
import streamlit as st
from common import metric_row
from linkbackends import metrics_token, simulator_targets
from linkclicks import figure_style
from shortlinks import SELECT_NEXT, TOKEN

from lookup.shortener.simulate import TrafficPlan, simulate_traffic

SIM_RESULT = "shortener.sim_result"
SIM_KEYS = "shortener.sim_keys"
TRAFFIC_LABELS = {
    "human": "People, Zipf-skewed over the links",
    "viral": "Viral burst (cache entry just purged)",
    "bot": "Crawlers (Googlebot, bingbot, …)",
    "preview": "Link-preview fetchers (Slack, WhatsApp, …)",
    "scraper": "Scraper guessing keys",
}

# --------------------------------------------------------------------------- simulator


def simulator() -> None:
    """Run the traffic simulator against the API and show what each layer absorbed."""
    st.markdown(
        "Sends realistic traffic through the **real HTTP redirect path** — people clicking "
        "links with Zipf-skewed popularity, a viral link whose cache entry was just purged "
        "hit by a burst, crawlers, link-preview fetchers and a scraper guessing keys — and "
        "reads the server's own counters before and after."
    )
    with st.form("simulator-form", border=True):
        cols = st.columns(3)
        requests = cols[0].slider("Requests", 200, 10_000, 2_000, step=100, key="sim-requests")
        links = cols[1].slider("Links", 5, 100, 30, step=5, key="sim-links")
        zipf_s = cols[2].slider("Popularity skew (Zipf s)", 0.5, 2.0, 1.1, step=0.1, key="sim-zipf")
        cols = st.columns(4)
        viral = cols[0].slider("Viral burst", 0.0, 0.5, 0.2, step=0.05, key="sim-viral")
        bots = cols[1].slider("Crawlers", 0.0, 0.3, 0.08, step=0.02, key="sim-bots")
        previews = cols[2].slider("Link previews", 0.0, 0.2, 0.04, step=0.02, key="sim-previews")
        scraper = cols[3].slider(
            "Key-guessing scraper", 0.0, 0.4, 0.1, step=0.05, key="sim-scraper"
        )
        run = st.form_submit_button(
            "Run the simulation", type="primary", icon=":material/play_arrow:", key="sim-run"
        )
    if run:
        plan = TrafficPlan(
            requests=requests,
            links=links,
            zipf_s=zipf_s,
            viral_share=viral,
            bot_share=bots,
            preview_share=previews,
            scraper_share=scraper,
        )
        try:
            plan.validate()
        except ValueError as exc:
            st.error(f"This mix cannot run: {exc}.", icon=":material/error:")
            return
        keys = st.session_state.get(SIM_KEYS)
        if not keys or len(keys) != links + 1:
            keys = None
        targets = simulator_targets()
        with st.spinner(f"Sending {requests:,} requests to {', '.join(targets)} …"):
            try:
                result = simulate_traffic(
                    targets,
                    plan,
                    token=st.session_state[TOKEN],
                    admin_token=metrics_token(),  # the metrics need it
                    keys=keys,
                )
            except (httpx.HTTPError, RuntimeError) as exc:
                st.error(f"The simulation stopped: {exc}", icon=":material/error:")
                return
        st.session_state[SIM_KEYS] = result.keys
        st.session_state[SIM_RESULT] = result
        st.session_state[SELECT_NEXT] = result.viral_key
        st.rerun()  # so "My links", drawn earlier in this run, shows the new links too
    result = st.session_state.get(SIM_RESULT)
    if result is None:
        st.caption("Choose a mix and run it; the results stay here until the next run.")
        return
    layers = result.layers
    lookups = max(1, layers.get("lookups", 0))
    served_from_memory = layers.get("l1Hits", 0) + layers.get("negativeHits", 0)
    metric_row(
        st.columns(5),
        [
            ("Requests", f"{result.total:,}", None),
            (
                "Answered from memory",
                f"{served_from_memory / lookups:.1%}",
                "LRU hits plus negative-cache hits, of all redirect lookups.",
            ),
            (
                "Store reads",
                f"{layers.get('storeReads', 0):,}",
                "Lookups that reached SQLite (found or not).",
            ),
            (
                "Latency p50 / p99",
                f"{result.latency_ms['p50']:.0f} / {result.latency_ms['p99']:.0f} ms",
                "Round trips measured by the simulator's client "
                "(two cores shared with the server).",
            ),
            (
                "Clicks dropped",
                f"{result.analytics.get('dropped', 0):,}",
                "Click events the analytics buffer had to drop (full buffer).",
            ),
        ],
    )
    rows = result.layer_rows()
    left, right = st.columns([1, 1], gap="medium")
    with left:
        frame = pd.DataFrame(rows)
        fig = px.bar(
            frame,
            x="lookups",
            y="layer",
            orientation="h",
            text="lookups",
            title="What each layer absorbed",
            color="layer",
            color_discrete_sequence=[
                "#1f6feb",
                "#2da44e",
                "#8250df",
                "#6e7781",
                "#bf8700",
                "#cf222e",
            ],
        )
        fig.update_yaxes(
            categoryorder="array", categoryarray=[r["layer"] for r in rows][::-1], title=None
        )
        fig.update_xaxes(title="redirect lookups")
        fig.update_layout(showlegend=False)
        st.plotly_chart(figure_style(fig, 320), key="chart-layers")
    with right:
        st.dataframe(
            pd.DataFrame(rows)[["layer", "lookups", "share", "meaning"]],
            hide_index=True,
            key="layers-table",
            column_config={
                "layer": st.column_config.TextColumn("Layer", width="medium"),
                "lookups": st.column_config.NumberColumn("Lookups", format="%d", width="small"),
                "share": st.column_config.ProgressColumn(
                    "Share", format="percent", min_value=0.0, max_value=1.0, width="small"
                ),
                "meaning": st.column_config.TextColumn("What it means", width="large"),
            },
        )
        st.caption(
            f"Single-flight: {layers.get('loads', 0):,} loads served "
            f"{layers.get('loads', 0) + layers.get('collapsed', 0):,} misses "
            f"({layers.get('collapsed', 0):,} requests waited for a load already in flight). "
            f"Viral link: `{result.viral_key}`."
        )
    kinds = pd.DataFrame(
        [
            {
                "Traffic": label,
                "Sent": result.sent.get(kind, 0),
                "Answers": ", ".join(
                    f"{status or 'error'} × {n:,}"
                    for status, n in sorted(result.statuses.get(kind, {}).items())
                ),
            }
            for kind, label in TRAFFIC_LABELS.items()
        ]
    )
    st.dataframe(
        kinds,
        hide_index=True,
        key="sim-kinds",
        column_config={
            "Traffic": st.column_config.TextColumn(width="large"),
            "Sent": st.column_config.NumberColumn(width="small"),
            "Answers": st.column_config.TextColumn("HTTP answers", width="medium"),
        },
    )
    st.caption(
        f"{result.total:,} requests in {result.elapsed_s:.1f} s "
        f"({result.requests_per_s:,.0f}/s from a Python client on the same two cores — "
        "the client, not the server, is the limit here). The simulated links are in "
        "“My links”, tagged `simulated`: pick one to see its countries, devices and referrers."
    )
