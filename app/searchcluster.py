"""The search page's *Cluster* panel: the shards as real processes, stopped and killed by hand.

The dashboard's lab supervisor (:class:`lookup.labs.SearchClusterLab`) starts one
``lookup search serve-shard`` process per replica of every shard of the data directory's
index, and a coordinator over them. Per replica: its address, process, state, the index
version and health it reports itself, the coordinator's counters (requests, errors,
hedges sent to it, races won) and the p50/p99 of the shard answers it gave. The buttons
send SIGSTOP, SIGCONT or SIGKILL to a replica this panel started; *Run queries* sends a
burst through the coordinator, so the hedges and the partial answers show as they happen.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st
from common import data_dir, labs, left_running, plural

from lookup.labs.searchcluster import REPLICAS, SearchClusterLab

__all__ = ["BURST_QUERIES", "cluster_panel"]

#: The lab's kind in the dashboard's supervisor (one cluster per dashboard).
KIND = "search-cluster"
NOTICE = "search.cluster.notice"
BURSTS = "search.cluster.bursts"
#: What a burst sends (common words of any English crawl; each is a full fan-out).
BURST_QUERIES = ["file", "value", "return", "python", "data", "list", "time", "page"]
ROUNDS = 3


def cluster_lab() -> SearchClusterLab | None:
    """The cluster this dashboard runs, if any (found again by a reloaded page)."""
    lab = labs().get(KIND)
    return lab if isinstance(lab, SearchClusterLab) else None


def _start() -> None:
    labs().stop(KIND)
    try:
        labs().start(KIND, index=data_dir() / "search", replicas=REPLICAS)
    except Exception as exc:  # noqa: BLE001 - shown on the page
        st.session_state[NOTICE] = f"The cluster did not start: {exc}"
    st.session_state[BURSTS] = []


def _stop() -> None:
    labs().stop(KIND)
    st.session_state[NOTICE] = "Cluster stopped: every shard server process has exited."
    st.session_state[BURSTS] = []


def _signal(shard: int, replica: int, name: str) -> None:
    lab = cluster_lab()
    if lab is not None:
        lab.signal(shard, replica, name)


def _burst(query: str) -> None:
    lab = cluster_lab()
    if lab is None:
        return
    words = BURST_QUERIES + ([query] if query else [])
    hedging = bool(st.session_state.get("search-cluster-hedging", True))
    burst = lab.run_queries(words, rounds=ROUNDS, hedging=hedging)
    st.session_state.setdefault(BURSTS, []).append(burst.to_json())


def _ms(value: Any) -> str:
    return "–" if value is None else f"{float(value):,.1f} ms"


def member_table(members: list[dict[str, Any]]) -> None:
    """One row per replica with its figures."""
    frame = pd.DataFrame(
        [
            {
                "Shard": m["shard"],
                "Replica": m["replica"],
                "Process": m["pid"],
                "State": m["state"],
                "Version": m["version"] or "–",
                "Health": m["health"],
                "Requests": m["requests"],
                "Errors": m["errors"],
                "Hedges to it": m["hedges"],
                "Won": m["wins"],
                "p50": _ms(m["p50Ms"]),
                "p99": _ms(m["p99Ms"]),
                "Address": m["address"],
            }
            for m in members
        ]
    )
    st.dataframe(frame, hide_index=True, width="stretch")


def member_buttons(members: list[dict[str, Any]]) -> None:
    """Per replica: SIGSTOP, SIGCONT and Kill."""
    for m in members:
        s, r, state = m["shard"], m["replica"], m["state"]
        label, stop, cont, kill = st.columns([3, 2, 2, 2], vertical_alignment="center")
        label.markdown(f"Shard {s} · replica {r} — **{state}**")
        gone = state in ("killed", "exited")
        frozen = state == "stopped"
        stop.button("SIGSTOP", key=f"search-cluster-stop-{s}-{r}", disabled=gone or frozen,
                    on_click=_signal, args=(s, r, "SIGSTOP"))  # fmt: skip
        cont.button("SIGCONT", key=f"search-cluster-cont-{s}-{r}", disabled=state != "stopped",
                    on_click=_signal, args=(s, r, "SIGCONT"))  # fmt: skip
        kill.button("Kill", key=f"search-cluster-kill-{s}-{r}", disabled=gone,
                    on_click=_signal, args=(s, r, "SIGKILL"), type="primary")  # fmt: skip


def burst_results(bursts: list[dict[str, Any]]) -> None:
    """The latest burst's figures, and every burst of this run as a table."""
    last = bursts[-1]
    st.markdown(
        f"**Last burst:** {plural(last['queries'], 'query', 'queries')} with hedging "
        f"{'on' if last['hedging'] else 'off'} — {plural(last['hedges_fired'], 'hedge')} "
        f"fired, {last['hedges_won']} won by the other replica, "
        f"{plural(last['partial'], 'partial answer')} (fewer than {last['shards']} shards "
        f"answered), p50 {_ms(last['p50_ms'])}, p99 {_ms(last['p99_ms'])}."
    )
    frame = pd.DataFrame(
        [
            {
                "Hedging": "on" if b["hedging"] else "off",
                "Queries": b["queries"],
                "Hedges fired": b["hedges_fired"],
                "Hedges won": b["hedges_won"],
                "Partial answers": b["partial"],
                "p50": _ms(b["p50_ms"]),
                "p99": _ms(b["p99_ms"]),
            }
            for b in bursts
        ]
    )
    st.dataframe(frame, hide_index=True, width="stretch")


def recent_table(recent: list[dict[str, Any]]) -> None:
    """The coordinator's latest queries: how many shards answered, hedges fired."""
    rows = [
        {
            "Query": q["query"],
            "Shards answered": f"{q['shardsAnswered']} of {q['shardsQueried']}",
            "Hedges": q["hedgesFired"],
            "Took": _ms(q["tookMs"]),
        }
        for q in reversed(recent[-12:])
    ]
    if rows:
        st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")


def cluster_panel(query: str = "") -> None:
    """The panel (below the shard statistics on the search page)."""
    with st.container(border=True, key="search-cluster"):
        st.subheader("Cluster")
        if notice := st.session_state.pop(NOTICE, None):
            st.info(notice, icon=":material/info:")
        if left_running(KIND, "", "search-cluster-left"):
            return
        lab = cluster_lab()
        if lab is None or lab.status() != "running":
            st.caption(
                f"Run every shard of this index as its own server process, {REPLICAS} "
                "replicas each, with a coordinator that sends each query to one replica "
                "per shard and hedges to the other when the first is late. Then stop or "
                "kill a replica and watch the queries go on."
            )
            st.button("Start the cluster", key="search-cluster-start", on_click=_start,
                      icon=":material/hub:")  # fmt: skip
            return
        view = lab.cluster()
        st.caption(
            f"{plural(len(view['members']), 'shard server')} · deadline "
            f"{_ms(view['deadlineMs'])} per query. Version and health are what each process "
            "reports itself; a stopped process does not answer its health probe."
        )
        member_table(view["members"])
        member_buttons(view["members"])
        hedging, run, stop = st.columns([3, 3, 3], vertical_alignment="center")
        hedging.toggle("Hedging", value=True, key="search-cluster-hedging")
        run.button("Run queries", key="search-cluster-burst", on_click=_burst, args=(query,),
                   icon=":material/bolt:")  # fmt: skip
        stop.button("Stop the cluster", key="search-cluster-halt", on_click=_stop,
                    icon=":material/stop_circle:")  # fmt: skip
        if bursts := st.session_state.get(BURSTS):
            burst_results(bursts)
        recent_table(view["recent"])
