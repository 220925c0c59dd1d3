"""The shortener page's *Backends* panel: which backend each seam runs on, what each cache
layer answered on each worker, the click stream's health — and, only against servers
``lookup up`` started, the cache-tier drill (stop Redis, watch misses fall back to the store).
"""

from __future__ import annotations

from typing import Any

import httpx
import pandas as pd
import streamlit as st
from common import api_url, data_dir, metric_row, term_help
from drillcharts import drill_figures, drill_story
from shortlinks import call

from lookup.kit.admin import load_admin_token_in, server_admin_token
from lookup.labs import fleet_state, layer_counts, outage_drill

DRILL_RESULT = "shortener.drill_result"
FLEET_NOTICE = "shortener.fleet_notice"
# ------------------------------------------------------------------ backends and the fleet

#: The shortener's seams as ``metrics()["backends"]`` names them, in the order shown.
SEAMS = {
    "store": "Links, aliases, audit, click budgets",
    "ids": "Id blocks",
    "secrets": "Key secret, HMAC keys",
    "cache": "Shared cache tier",
    "limits": "Rate limits",
    "clicks": "Click stream",
    "clickCounts": "Click counts",
    "blocklist": "Domain blocklist",
}


def running_fleet() -> dict[str, Any] | None:
    """The fleet ``lookup up --backend …`` runs over this data directory, when the API this
    page talks to is one of its workers (else None)."""
    state = fleet_state(data_dir())
    if state and api_url() in [w["url"].rstrip("/") for w in state.get("workers", [])]:
        return state
    return None


def simulator_targets() -> list[str]:
    """Where the simulator sends its traffic: every worker of a running fleet, round-robin,
    or the one API."""
    fleet = running_fleet()
    return [w["url"] for w in fleet["workers"]] if fleet else [api_url()]


def backend_row(seam: str, described: Any) -> dict[str, str]:
    """One seam's backend as a person reads it: the engine and its address."""
    text = str(described or "embedded")
    scheme = text.split("://", 1)[0].lower() if "://" in text else ""
    engine = {"postgresql": "PostgreSQL", "postgres": "PostgreSQL", "redis": "Redis"}.get(scheme)
    if engine:
        return {"Seam": SEAMS.get(seam, seam), "Backend": engine, "Where": text.split("://", 1)[1]}
    where = {
        "embedded": "this process",
        "sqlite": "SQLite in the data directory",
        "none": "none (the in-process LRU only)",
        "off": "off (analytics disabled)",
    }
    return {"Seam": SEAMS.get(seam, seam), "Backend": "embedded", "Where": where.get(text, text)}


def backends_table(metrics: dict[str, Any]) -> pd.DataFrame:
    """Which backend each seam runs on, from the API's ``backends`` (read defensively: an
    API without the key, or without a seam in it, runs that seam embedded)."""
    backends = metrics.get("backends")
    backends = backends if isinstance(backends, dict) else {}
    seams = list(SEAMS) + [k for k in backends if k not in SEAMS]
    return pd.DataFrame([backend_row(seam, backends.get(seam)) for seam in seams])


def layer_table(counts: dict[str, Any]) -> pd.DataFrame:
    """Per worker (and in total): how many redirect lookups each layer answered, as shares."""
    rows = []
    labelled = [(w["url"], w) for w in counts["workers"]] + [("All workers", counts["total"])]
    for label, row in labelled:
        if "error" in row:
            rows.append({"Worker": label, "Lookups": None, "Note": row["error"]})
            continue
        total = max(1, row["requests"])
        rows.append(
            {
                "Worker": label,
                "Lookups": row["requests"],
                "In-process LRU": row["l1"] / total,
                "Negative cache": row["negative"] / total,
                "Redis tier": row["shared"] / total,
                "Store": row["store"] / total,
                "Tier errors": row["sharedErrors"],
            }
        )
    return pd.DataFrame(rows)


def _control(fleet: dict[str, Any], action: str) -> str:
    """Ask the fleet's supervisor to stop or start its Redis (admin token); a sentence."""
    token = load_admin_token_in(data_dir() / "servers")
    try:
        answer = httpx.post(
            f"{fleet['control']}/fleet/cache/{action}",
            headers={"Authorization": f"Bearer {token}"},
            timeout=30,
        )
    except httpx.HTTPError as exc:
        return f"The fleet's control endpoint did not answer ({type(exc).__name__})."
    if answer.status_code != 200:
        return f"The fleet refused: HTTP {answer.status_code} {answer.text[:200]}"
    return "The cache tier is " + ("running again." if answer.json()["running"] else "stopped.")


def metrics_token() -> str:
    """The API's admin token: a fleet ``lookup up`` started gives all its processes the one
    in ``<data-dir>/servers``; a single server keeps its own in the data directory."""
    servers = data_dir() / "servers" / "admin.token"
    if servers.exists():
        return load_admin_token_in(servers.parent)
    return server_admin_token(data_dir())


def click_stream_row(metrics: dict[str, Any]) -> None:
    """The click stream's health when it is a bounded Redis stream: the group's lag, the
    clicks retention trimmed before they were counted, the dead-lettered entries."""
    stream = ((metrics.get("analytics") or {}).get("log")) or {}
    if "lostToRetention" not in stream:
        return
    lag = stream.get("groupLag")
    metric_row(
        st.columns(3),
        [
            ("Clicks not yet read", f"{stream['undelivered']:,}",
             f"Clicks in the stream the aggregators' group has not been handed yet "
             f"({'?' if lag is None else f'{lag:,}'} entries, as Redis counts its lag)."),
            ("Clicks lost to retention", f"{stream['lostToRetention']:,}",
             "Clicks the stream's MAXLEN trimmed before an aggregator counted them "
             "(aggregators stopped or too slow for the retention)."),
            ("Dead-lettered entries", f"{stream.get('deadLettered', 0):,}",
             "Entries that could not be decoded or folded, kept aside in <stream>:dead."),
        ],
    )  # fmt: skip


def backends_panel() -> None:
    """Which backends the API runs on, what each layer answered on each worker, and — only
    against servers ``lookup up`` started — the cache-tier drill."""
    # Metrics count links in the store: slower than the page's 2 s default on a busy store.
    answer = call(
        "GET",
        "/v1/shortener/metrics",
        auth=False,
        timeout=10.0,
        headers={"Authorization": f"Bearer {metrics_token()}"},  # admin only
    )
    if not answer.ok or not isinstance(answer.body, dict):
        st.warning(f"No metrics: {answer.message()}", icon=":material/warning:")
        return
    fleet = running_fleet()
    workers = [w["url"] for w in fleet["workers"]] if fleet else [api_url()]
    st.markdown(
        f"**{len(workers)} API processes** of one fleet (`lookup up --backend "
        f"{','.join(fleet['backends'])}`)." if fleet else
        "**One API process.** `make run-fleet` (`lookup up --backend postgres,redis`) runs "
        "several on PostgreSQL and Redis."
    )  # fmt: skip
    st.dataframe(
        backends_table(answer.body), hide_index=True, key="backends-table",
        column_config={"Seam": st.column_config.TextColumn("Seam", help=term_help("seam"))},
    )  # fmt: skip
    share = st.column_config.ProgressColumn(format="percent", min_value=0.0, max_value=1.0)
    st.dataframe(
        layer_table(layer_counts(workers, timeout=10.0, admin_token=metrics_token())),
        hide_index=True, key="fleet-layers",
        column_config={c: share for c in ("In-process LRU", "Negative cache", "Redis tier",
                                          "Store")},
    )  # fmt: skip
    st.caption("Shares of redirect lookups since each process started.")
    click_stream_row(answer.body)
    redis = (fleet or {}).get("servers", {}).get("redis") or {}
    if not redis.get("started"):
        st.caption(
            "Stopping the cache tier is offered only against a Redis that `lookup up "
            "--backend redis` started here."
        )
        return
    st.markdown(
        f"**The cache tier** — `{redis['url']}` is "
        + (":green-badge[running]" if redis.get("running") else ":red-badge[stopped]")
    )
    cols = st.columns(3)
    if redis.get("running"):
        if cols[0].button("Stop the cache tier", icon=":material/stop_circle:", key="tier-stop"):
            st.session_state[FLEET_NOTICE] = _control(fleet, "stop")
            st.rerun()
    elif cols[0].button("Start the cache tier", icon=":material/play_circle:", key="tier-start"):
        st.session_state[FLEET_NOTICE] = _control(fleet, "start")
        st.rerun()
    if redis.get("running") and cols[1].button(
        "Run the outage drill", icon=":material/bolt:", key="tier-drill",
        help="Steady redirects (warm links and fresh ones), Redis stopped for 3 s, started "
             "again: watch the misses fall back to the store and return to the tier.",
    ):  # fmt: skip
        with st.spinner("Redirects for 9 s, Redis stopped for 3 of them …"):
            st.session_state[DRILL_RESULT] = outage_drill(
                workers, lambda: _control(fleet, "stop"), lambda: _control(fleet, "start"),
                before_s=2.0, outage_s=3.0, after_s=4.0, rate=15.0, admin_token=metrics_token(),
            )  # fmt: skip
        st.rerun()
    if st.session_state.get(FLEET_NOTICE):
        st.info(st.session_state.pop(FLEET_NOTICE), icon=":material/info:")
    drill = st.session_state.get(DRILL_RESULT)
    if drill:
        statuses = pd.Series([e["status"] for e in drill["events"]])
        failed = int((statuses == 0).sum() + (statuses >= 500).sum())
        redirects = [e for e in drill["events"] if e["op"].startswith("redirect")]
        metric_row(
            st.columns(3),
            [
                ("Requests", f"{len(drill['events']):,}", None),
                ("5xx or no answer", f"{failed:,}", "Should be 0: the store answers misses."),
                ("Redirect p99", f"{pd.Series([e['ms'] for e in redirects]).quantile(0.99):.0f} ms",
                 "A circuit breaker, not a connect timeout per request."),
            ],
        )  # fmt: skip
        lat, rates = drill_figures(drill)
        left, right = st.columns(2)
        left.plotly_chart(lat, key="chart-drill-latency")
        right.plotly_chart(rates, key="chart-drill-layers")
        story = drill_story(drill)
        if story:
            st.markdown(story)
