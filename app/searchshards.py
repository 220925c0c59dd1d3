"""The search page's *Shards* panel: the fan-out of the last query (how long each shard took,
who answered, where the hedge and the deadline were), the fault switches, the per-shard
counters and the load test.

The fault switches are ``PUT /search/shards/{n}/fault`` and ``PUT /search/coordinator``
(admin token); they live in the API process, so they stay set — for every client — until
healed here.
"""

from __future__ import annotations

import statistics
from datetime import datetime
from typing import Any

import httpx
import pandas as pd
import plotly.graph_objects as go
import streamlit as st
from chartstyle import log_axis
from common import Answer, admin_headers, api_url
from common import call as api_call
from searchexplain import FRESH_COLOR, LINK_COLOR

NOTICE = "search.notice"
BURSTS = "search.bursts"
SLOW_DEFAULT_MS = 200

FAULTS = ["ok", "slow", "dead-primary", "down"]
FAULT_LABELS = {
    "ok": "Healthy",
    "slow": "Slow primary",
    "dead-primary": "Dead primary",
    "down": "Down",
}

PRIMARY_COLOR = "#1f6feb"
HEDGE_COLOR = "#8250df"
MISSED_COLOR = "#cf222e"


def call(method: str, path: str, timeout: float = 5.0, **kwargs: Any) -> Answer:
    """One API call with this page's longer default timeout (the fan-out can be slow)."""
    return api_call(method, path, timeout=timeout, **kwargs)


def search_timeout(deadline_ms: float | None) -> float:
    return 5.0 + (deadline_ms or 250.0) / 1000.0


def _note(answer: Answer, what: str) -> None:
    if not answer.ok:
        st.session_state[NOTICE] = f"Could not {what}: {answer.message()}"


def apply_fault(shard: int, choice: str, slow_ms: float) -> None:
    """Set shard ``shard``'s replicas to match one of :data:`FAULTS`."""
    path = f"/search/shards/{shard}/fault"
    admin = admin_headers()
    answer = call("PUT", path, json={"mode": "ok"}, headers=admin)
    if answer.ok and choice == "slow":
        body = {"mode": "slow", "replica": 0, "delayMs": slow_ms}
        answer = call("PUT", path, json=body, headers=admin)
    elif answer.ok and choice == "dead-primary":
        answer = call("PUT", path, json={"mode": "dead", "replica": 0}, headers=admin)
    elif answer.ok and choice == "down":
        answer = call("PUT", path, json={"mode": "dead"}, headers=admin)
    _note(answer, f"switch shard {shard} to {FAULT_LABELS.get(choice, choice)}")


def _fault_changed(shard: int) -> None:
    choice = st.session_state.get(f"search-fault-{shard}") or "ok"
    apply_fault(shard, choice, float(st.session_state.get("search-slow-ms", SLOW_DEFAULT_MS)))


def _slow_changed(shards: int) -> None:
    slow = float(st.session_state.get("search-slow-ms", SLOW_DEFAULT_MS))
    for s in range(shards):
        if st.session_state.get(f"search-fault-{s}") == "slow":
            apply_fault(s, "slow", slow)


def _coordinator_changed() -> None:
    body = {
        "hedging": bool(st.session_state.get("search-hedging", True)),
        "deadlineMs": float(st.session_state.get("search-deadline", 250)),
    }
    answer = call("PUT", "/search/coordinator", json=body, headers=admin_headers())
    _note(answer, "change the coordinator")


def _heal() -> None:
    _note(call("DELETE", "/search/shards/faults", headers=admin_headers()), "heal the shards")


def _reset() -> None:
    answer = call("POST", "/search/shards/reset", headers=admin_headers())
    _note(answer, "reset the latency history")


def fault_of(shard: dict[str, Any]) -> tuple[str, float | None]:
    """Which of :data:`FAULTS` a shard's replicas are in, and the slow delay if slow."""
    modes = [r["fault"]["mode"] for r in shard.get("replicas", [])]
    if modes and all(m == "dead" for m in modes):
        return "down", None
    if modes and modes[0] == "dead":
        return "dead-primary", None
    if modes and modes[0] == "slow":
        return "slow", float(shard["replicas"][0]["fault"]["delayMs"])
    return "ok", None


# ----------------------------------------------------------------------- shard panel


def fanout_chart(fanout: dict[str, Any], shards: dict[str, Any]) -> None:
    """One bar per shard: how long it took, who answered, where the hedge and deadline were."""
    traces = fanout.get("shards") or []
    deadline = float(shards.get("deadlineMs", 250.0))
    delays = {s["shard"]: s.get("hedgeDelayMs") for s in shards.get("shards", [])}
    labels = [f"shard {t['shard']}" for t in traces]
    values, colors, texts = [], [], []
    for t in traces:
        if t.get("missedDeadline"):
            values.append(deadline)
            colors.append(MISSED_COLOR)
            texts.append("missed the deadline")
        else:
            values.append(float(t.get("latencyMs") or 0.0))
            hedge_won = t.get("replica") not in (0, None)
            colors.append(HEDGE_COLOR if hedge_won else PRIMARY_COLOR)
            who = "hedge (replica 1)" if hedge_won else "primary"
            hedge = delays.get(t["shard"])
            fired = f" · hedged at {hedge:.0f} ms" if t.get("hedged") and hedge else ""
            texts.append(f"{values[-1]:.1f} ms · {who}{fired}")
    fig = go.Figure(
        go.Bar(
            y=labels, x=values, orientation="h", marker_color=colors, text=texts,
            textposition="auto", cliponaxis=False,
            hovertemplate="%{y}: %{x:.2f} ms<extra></extra>",
        )
    )  # fmt: skip
    longest = max([*values, 1.0])
    if longest >= deadline * 0.5 or any(t.get("missedDeadline") for t in traces):
        fig.add_vline(
            x=deadline, line_dash="dash", line_color=MISSED_COLOR,
            annotation_text=f"deadline {deadline:.0f} ms", annotation_position="top",
        )  # fmt: skip
    fig.update_layout(
        height=70 + 42 * max(1, len(traces)),
        margin=dict(l=10, r=10, t=28, b=10),
        xaxis_title="milliseconds after the query was sent",
        yaxis=dict(autorange="reversed"),
        showlegend=False,
        uniformtext_minsize=9,
    )
    st.plotly_chart(fig, key="search-fanout")


def shard_switches(shards: dict[str, Any]) -> None:
    """Per-shard fault switches, the slow delay, hedging and the deadline."""
    groups = shards.get("shards") or []
    slow_seen = [d for d in (fault_of(g)[1] for g in groups) if d is not None]
    if slow_seen:
        st.session_state["search-slow-ms"] = int(slow_seen[0])
    elif "search-slow-ms" not in st.session_state:
        st.session_state["search-slow-ms"] = SLOW_DEFAULT_MS
    st.session_state["search-hedging"] = bool(shards.get("hedging", True))
    st.session_state["search-deadline"] = int(min(1000, max(10, shards.get("deadlineMs", 250))))
    st.markdown(
        "**Fault switches** — each shard has a primary replica and one to hedge to; "
        "*Down* kills both."
    )
    for g in groups:
        s = int(g["shard"])
        st.session_state[f"search-fault-{s}"] = fault_of(g)[0]
        name, switch = st.columns([1, 6], vertical_alignment="center")
        name.markdown(f"Shard {s}")
        with switch:
            st.segmented_control(
                f"Shard {s}", FAULTS, format_func=FAULT_LABELS.get, key=f"search-fault-{s}",
                on_change=_fault_changed, args=(s,), required=True,
                label_visibility="collapsed",
            )  # fmt: skip
    st.slider(
        "A slow primary answers after (ms)", 20, 1000, step=10, key="search-slow-ms",
        on_change=_slow_changed, args=(len(groups),),
    )  # fmt: skip
    left, right = st.columns(2, vertical_alignment="bottom")
    left.slider(
        "Per-shard deadline (ms)", 10, 1000, step=10, key="search-deadline",
        on_change=_coordinator_changed,
        help="A shard that has not answered by then is left out of the answer.",
    )  # fmt: skip
    right.toggle(
        "Hedged requests", key="search-hedging", on_change=_coordinator_changed,
        help="Ask the shard's other replica when the first has not answered by the shard's "
        "p95 latency; the first answer wins.",
    )  # fmt: skip
    a, b = st.columns(2)
    a.button(
        "Heal every shard", key="search-heal", on_click=_heal, icon=":material/healing:",
        width="stretch",
    )  # fmt: skip
    b.button(
        "Reset latency history", key="search-reset", on_click=_reset,
        icon=":material/restart_alt:", width="stretch",
    )  # fmt: skip


def shard_table(shards: dict[str, Any]) -> None:
    """Per-shard counters since the last reset."""
    rows = []
    for g in shards.get("shards") or []:
        faults = [
            r["fault"]["mode"]
            + (f" +{r['fault']['delayMs']:.0f} ms" if r["fault"]["mode"] == "slow" else "")
            for r in g.get("replicas", [])
        ]
        rows.append(
            {
                "shard": g["shard"],
                "queries": g["queries"],
                "p50 ms": g.get("p50Ms"),
                "p95 ms": g.get("p95Ms"),
                "hedge after ms": g.get("hedgeDelayMs"),
                "hedges fired": g.get("hedgesFired"),
                "hedge wins": g.get("hedgeWins"),
                "deadline misses": g.get("deadlineMisses"),
                "replicas": " / ".join(faults),
            }
        )
    st.dataframe(pd.DataFrame(rows), hide_index=True, key="search-shard-table")
    st.caption(
        "p50/p95 are of each shard's answered requests, timed from when that request was "
        "sent; the hedge fires at about the p95."
    )


def settings_label(shards: dict[str, Any]) -> str:
    """A short description of the fault settings, for the load-test history."""
    bad = []
    for g in shards.get("shards") or []:
        choice, delay = fault_of(g)
        if choice != "ok":
            extra = f" {delay:.0f} ms" if delay else ""
            bad.append(f"shard {g['shard']} {FAULT_LABELS[choice].lower()}{extra}")
    hedge = "hedging on" if shards.get("hedging") else "hedging off"
    deadline = float(shards.get("deadlineMs", 0))
    return f"{', '.join(bad) or 'all healthy'}; {hedge}; deadline {deadline:.0f} ms"


def load_test(query: str, shards: dict[str, Any]) -> None:
    """Send the current query many times and compare the tails of the settings tried."""
    st.caption(
        "Sends the current query repeatedly through `GET /search` and keeps each answer's "
        "`tookMs`: try it healthy, with a slow primary, then with hedging off."
    )
    left, right = st.columns([2, 1], vertical_alignment="bottom")
    n = left.slider("Queries to send", 10, 200, 40, step=10, key="search-burst-n")
    go_now = right.button(
        "Send them", key="search-burst", icon=":material/bolt:", disabled=not query,
        width="stretch",
    )  # fmt: skip
    if go_now and query:
        took, partial, hedges = [], 0, 0
        deadline = float(shards.get("deadlineMs", 250.0))
        progress = st.progress(0.0, text="sending queries …")
        try:
            with httpx.Client(base_url=api_url(), timeout=search_timeout(deadline)) as client:
                for i in range(int(n)):
                    r = client.get("/search", params={"q": query, "trace": "true"})
                    if r.status_code != 200:
                        st.session_state[NOTICE] = f"load test stopped: HTTP {r.status_code}"
                        break
                    body = r.json()
                    took.append(float(body["tookMs"]))
                    partial += body["shardsAnswered"] < body["shardsQueried"]
                    hedges += int(body.get("fanout", {}).get("hedgesFired", 0))
                    progress.progress((i + 1) / n, text=f"{i + 1} of {n} queries")
        except httpx.HTTPError as exc:
            st.session_state[NOTICE] = f"load test stopped: {type(exc).__name__}"
        progress.empty()
        if took:
            q = statistics.quantiles(took, n=100, method="inclusive") if len(took) > 1 else took
            history = st.session_state.setdefault(BURSTS, [])
            history.append(
                {
                    "#": len(history) + 1,
                    "p50 ms": round(statistics.median(took), 2),
                    "p99 ms": round(q[98] if len(q) > 98 else max(took), 2),
                    "max ms": round(max(took), 2),
                    "partial answers": partial,
                    "hedges fired": hedges,
                    "queries": len(took),
                    "settings": settings_label(shards),
                    "took": took,
                    "at": datetime.now().strftime("%H:%M:%S"),
                }
            )
            st.rerun()  # so the fan-out and the shard counters include the burst
    history = st.session_state.get(BURSTS) or []
    if history:
        table = pd.DataFrame([{k: v for k, v in h.items() if k != "took"} for h in history])
        st.dataframe(table, hide_index=True, key="search-burst-table")
        fig = go.Figure()
        colors = [PRIMARY_COLOR, HEDGE_COLOR, LINK_COLOR, FRESH_COLOR, MISSED_COLOR]
        for i, h in enumerate(history):
            label = f"#{h['#']}"
            fig.add_box(
                x=h["took"], y=[label] * len(h["took"]), name=label, orientation="h",
                boxpoints="outliers", marker_color=colors[i % len(colors)],
            )  # fmt: skip
        took = [max(t, 0.05) for h in history for t in h["took"]]
        fig.update_layout(
            height=90 + 40 * len(history),
            margin=dict(l=10, r=10, t=10, b=10),
            yaxis=dict(type="category", autorange="reversed"),
            showlegend=False,
        )  # fmt: skip
        log_axis(fig, "x", took, pad=1.5, title="tookMs per query (log scale)")
        st.plotly_chart(fig, key="search-burst-chart")
        if st.button("Clear history", key="search-burst-clear"):
            st.session_state[BURSTS] = []
            st.rerun()
