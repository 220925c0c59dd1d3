"""Building blocks → Distributed cache: eviction explorer, stampede and cold-restart demos,
and the Redis Cluster failover drill.

Not a page of its own: ``views/blocks.py`` calls :func:`render` inside its "Distributed
cache" tab. The eviction explorer replays a real trace (the shortener simulator's
clicks, the typeahead query log, clicks with a one-off scan) through every hand-written
policy at several sizes. The demos run only against servers this tab started itself — a
throw-away ``redis-server`` for the stampede and the cold restart, a throw-away 3 + 3
Redis Cluster for the failover drill — and stop them with their buttons and at exit.
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pandas as pd
import plotly.graph_objects as go
import streamlit as st
from chartstyle import legend_below, log_axis
from common import labs, left_running, term_help

from lookup.blocks.cache import experiments
from lookup.blocks.cache.eviction import POLICIES, Belady, hit_ratio_curves
from lookup.blocks.cache.store import BackingStore
from lookup.datasets.cache_traces import TRACES, trace
from lookup.labs import RedisClusterLab, RedisLab, available

__all__ = ["render"]

SIZES = (25, 50, 100, 200, 400, 800)
_LAYOUT = dict(
    height=380,
    margin=dict(l=10, r=10, t=50, b=10),
    legend=dict(orientation="h", y=1.0, x=1.0, xanchor="right", yanchor="bottom"),
)


@st.cache_data(show_spinner=False, max_entries=8)
def _curves(name: str, length: int, sizes: tuple[int, ...],
            policies: tuple[str, ...]) -> pd.DataFrame:  # fmt: skip
    keys = trace(name, length)
    return pd.DataFrame(hit_ratio_curves(keys, sizes, policies, optimal=True))


def _curve_chart(rows: pd.DataFrame, title: str, x: str = "size") -> go.Figure:
    fig = go.Figure()
    for policy, part in rows.groupby("policy", sort=False):
        fig.add_scatter(
            x=part[x],
            y=part["hit ratio"],
            mode="lines+markers",
            name=str(policy),
            line=dict(dash="dot" if policy == Belady.name else None),
        )
    fig.update_layout(title=title, yaxis_title="hit ratio", **_LAYOUT)
    log_axis(fig, "x", rows[x], pad=1.15, ticks=sorted(set(rows[x])),
             title="cache size (keys, log scale)")  # fmt: skip
    return legend_below(fig)


def _eviction() -> None:
    st.markdown(
        "Hit ratio against cache size for every hand-written policy on a real trace; "
        "Belady's offline optimum (dotted) is the ceiling. LRU, LFU and FIFO are checked "
        "decision by decision against `cachetools`."
    )
    cols = st.columns(3)
    name = cols[0].selectbox("Trace", TRACES, key="cache-trace")
    length = int(cols[1].select_slider("Accesses", [10_000, 30_000, 60_000], 30_000,
                                       key="cache-length"))  # fmt: skip
    policies = cols[2].multiselect("Policies", list(POLICIES), list(POLICIES),
                                   key="cache-policies")  # fmt: skip
    if st.button("Replay the trace", key="cache-replay", type="primary",
                 disabled=not policies):  # fmt: skip
        with st.spinner("replaying ..."):
            st.session_state["cache-curves"] = (name, _curves(name, length, SIZES, tuple(policies)))
    got = st.session_state.get("cache-curves")
    if got:
        shown, rows = got
        st.plotly_chart(_curve_chart(rows, f"Hit ratio vs cache size · {shown}"),
                        key="cache-curves-chart")  # fmt: skip
        wide = (
            rows.pivot(index="size", columns="policy", values="hit ratio")
            .reset_index()
            .rename(columns={"size": "cache size"})
        )
        st.dataframe(wide, hide_index=True, key="cache-curves-table")


def _redis() -> RedisLab | None:
    """The tab's redis-server while it runs (a lab of the dashboard's supervisor)."""
    lab = labs().get("redis", "cache")
    return lab if isinstance(lab, RedisLab) and lab.alive() else None


def _store(name: str, latency: float = 0.0) -> BackingStore:
    """A SQLite store in this session's temporary directory (removed at exit)."""
    directory = st.session_state.get("cache-dir")
    if directory is None:
        directory = st.session_state["cache-dir"] = tempfile.mkdtemp(prefix="lookup-cache-")
        atexit.register(shutil.rmtree, directory, ignore_errors=True)
    return BackingStore(Path(directory) / f"{name}.sqlite", read_latency_s=latency)


def _redis_controls() -> RedisLab | None:
    if left_running("redis", "cache", "cache-redis-left"):
        return None
    lab = _redis()
    if lab is not None:
        st.caption(f"Throw-away redis-server at `{lab.url}` (started by this tab).")
        if st.button("Stop the redis-server", key="cache-redis-stop"):
            labs().stop("redis", "cache")
            st.rerun()
        return lab
    if not available("redis"):
        st.info("redis-server is not installed: `apt-get install redis-server` for the demos.")
        return None
    if st.button("Start a throw-away redis-server", key="cache-redis-start"):
        with st.spinner("starting redis-server ..."):
            labs().start("redis", "cache")
        st.rerun()
    return None


def _bins_chart(rows: list[dict[str, Any]], label: str, title: str) -> go.Figure:
    fig = go.Figure()
    for row in rows:
        bins = pd.DataFrame(row["bins"])
        fig.add_scatter(
            x=bins["t"], y=bins["store loads"], mode="lines", name=str(row[label]), line_shape="hv"
        )
    fig.update_layout(title=title, xaxis_title="seconds", yaxis_title="store loads per 0.1 s",
                      **_LAYOUT)  # fmt: skip
    return fig


def _demos() -> None:
    st.markdown(
        "**Stampede**: many simultaneous misses on one key (the store takes 0.2 s a read) — "
        "unprotected, with in-process single-flight, and with a Redis lease shared by four "
        "independent clients. **Cold restart**: the redis-server is restarted (empty) under "
        "Zipf traffic — cold, warmed with the hottest half first, or with clients staged back in."
    )
    lab = _redis_controls()
    if lab is None:
        return
    cols = st.columns(2)
    callers = int(cols[0].select_slider("Simultaneous callers", [50, 100, 250, 500], 500,
                                        key="cache-callers"))  # fmt: skip
    if cols[0].button("Run the stampede", key="cache-stampede"):
        with st.spinner(f"{callers} callers miss at once ..."):
            store = _store("stampede", 0.2)
            st.session_state["cache-stampede-rows"] = experiments.stampede(
                lab.url, store, callers=callers
            )
            store.close()
    if cols[1].button("Run the cold-restart demo", key="cache-restart"):
        with st.spinner("restarting redis-server three times ..."):
            store = _store("restart")
            st.session_state["cache-restart-rows"] = experiments.cold_restart(
                lab.server, store, keys=4_000, readers=3, rate=1_000, duration_s=2.5
            )
            store.close()
    rows = st.session_state.get("cache-stampede-rows")
    if rows:
        st.markdown("**Stampede**: store loads for one key missed by every caller at once")
        st.dataframe(pd.DataFrame(rows), hide_index=True, key="cache-stampede-table")
    restart = st.session_state.get("cache-restart-rows")
    if restart:
        st.plotly_chart(_bins_chart(restart, "restart", "Store load after a cache restart"),
                        key="cache-restart-chart")  # fmt: skip
        st.dataframe(pd.DataFrame([{k: v for k, v in r.items() if k != "bins"}
                                   for r in restart]), hide_index=True,
                     key="cache-restart-table")  # fmt: skip


def _timeline_chart(report: dict[str, Any]) -> go.Figure:
    """Reads per 0.1 s stacked by outcome, and the failed writes, around the kill."""
    frame = pd.DataFrame(report["timeline"]).fillna(0)

    def total(outcome: str) -> Any:
        cols = [c for c in frame.columns if c.startswith(outcome + " (")]
        return frame[cols].sum(axis=1) if cols else frame["t"] * 0

    fig = go.Figure()
    for outcome, color in (("hit", "#2e7d32"), ("miss", "#9e9e9e"), ("failed → miss", "#ef6c00")):
        fig.add_scatter(
            x=frame["t"],
            y=total(outcome),
            name=f"reads: {outcome}",
            mode="lines",
            stackgroup="reads",
            line=dict(color=color, width=0.5),
        )
    fig.add_scatter(
        x=frame["t"],
        y=total("write failed"),
        name="writes failed",
        mode="lines",
        line=dict(color="#c62828", dash="dash"),
    )
    fig.add_vline(
        x=report["killed at (s)"], line_dash="dot", line_color="red", annotation_text="kill -9"
    )
    if report["failover (s)"] is not None:
        fig.add_vline(
            x=report["killed at (s)"] + report["failover (s)"],
            line_dash="dot",
            line_color="green",
            annotation_text="replica promoted",
        )
    fig.update_layout(title="Calls per 0.1 s during the failover", xaxis_title="seconds",
                      yaxis_title="calls per 0.1 s", **{**_LAYOUT, "height": 420})  # fmt: skip
    return fig


def _cluster() -> None:
    st.markdown(
        "A Redis Cluster of 3 masters + 3 replicas on loopback, used through redis-py's "
        "cluster client. Redis Cluster does **not** use a hash ring: every key falls in one "
        "of **16,384 hash slots** (CRC16 of the key mod 16384) and each master owns ranges of "
        "slots. The drill kills one master with `SIGKILL` under load: the cache answers its "
        "keys with misses, not errors, until a replica is promoted; acknowledged writes that "
        "had not reached the replica are lost — a cache is never the source of truth."
    )
    if left_running("redis-cluster", "", "cache-cluster-left"):
        return
    lab = labs().get("redis-cluster")
    if not (isinstance(lab, RedisClusterLab) and lab.alive()):
        if not available("redis-cluster"):
            st.info("redis-server / redis-cli are not installed: no cluster drill here.")
            return
        if st.button("Start a throw-away Redis Cluster (3 + 3)", key="cache-cluster-start"):
            with st.spinner("starting 6 nodes and creating the cluster ..."):
                labs().start("redis-cluster")
            st.rerun()
        return
    cluster = lab.cluster
    st.dataframe(pd.DataFrame([{"port": r["port"], "role": r["role"],
                                "slots": ", ".join(f"{a}-{b}" for a, b in r["slots"]),
                                "flags": ",".join(r["flags"])}
                               for r in cluster.topology()]),
                 hide_index=True, key="cache-cluster-nodes")  # fmt: skip
    lag = st.checkbox(
        "Freeze its replica (SIGSTOP) for 0.8 s first, with 16 KB values: a lagging replica",
        key="cache-cluster-lag",
        help="What the master acknowledges while its replica lags and has not "
        "reached it when the master dies is lost at the promotion.\n\n" + term_help("SIGSTOP"),
    )
    cols = st.columns(2)
    if cols[0].button("Kill -9 the master of slot 0 under load", key="cache-cluster-kill",
                      type="primary"):  # fmt: skip
        with st.spinner("load, kill -9, failover ..."):
            st.session_state["cache-cluster-report"] = experiments_failover(lab, lag)
        st.rerun()
    if cols[1].button("Stop the cluster", key="cache-cluster-stop"):
        labs().stop("redis-cluster")
        st.session_state.pop("cache-cluster-report", None)
        st.rerun()
    report = st.session_state.get("cache-cluster-report")
    if report:
        m = st.columns(4)
        m[0].metric("Failover", f"{report['failover (s)']} s")
        m[1].metric("Reads answered as misses", f"{report['reads'].get('failed → miss', 0):,}")
        m[2].metric("Errors reaching the caller", report["errors reaching the caller"])
        m[3].metric("Acknowledged writes lost", report["acknowledged writes lost"])
        st.plotly_chart(_timeline_chart(report), key="cache-cluster-chart")
        if report["replica lag (s)"]:
            st.caption(
                f"While its replica was frozen the master acknowledged "
                f"{report['acknowledged on the victim while its replica lagged']:,} "
                "writes; those the socket buffers had not carried to the replica "
                "were lost at the promotion (the figure varies run to run)."
            )
        st.caption(
            f"Node timeout {report['node timeout (ms)']} ms. Misses after the "
            "promotion are keys whose writes failed during the outage. The killed "
            f"master (port {report['victim port']}) was restarted after the drill and "
            f"rejoined as a replica. {report['acknowledged writes']:,} writes were "
            "acknowledged; each was read back after the failover."
        )


def experiments_failover(lab: RedisClusterLab, lag: bool = False) -> dict[str, Any]:
    """The drill, then the killed node restarted so the cluster has its replica again."""
    from lookup.blocks.cache.cluster import failover_drill

    cluster = lab.cluster
    report = (failover_drill(cluster, before_s=1.2, after_s=2.0, replica_lag_s=0.8,
                             value_bytes=16_384) if lag
              else failover_drill(cluster, before_s=1.0, after_s=2.0))  # fmt: skip
    cluster.restart(report["victim port"])
    cluster.wait_ok(30)
    return report


def render() -> None:
    """The Distributed cache tab."""
    st.markdown(
        "The design notes' distributed cache, on real engines: eviction policies written by hand "
        "and replayed on real traces; the stampede and cold-restart behaviours on a real "
        "Redis over a SQLite store; a real Redis Cluster losing a master."
    )
    ev, demos, cluster = st.tabs(["Eviction explorer", "Stampede & cold restart",
                                  "Redis Cluster failover"])  # fmt: skip
    with ev:
        _eviction()
    with demos:
        _demos()
    with cluster:
        _cluster()
