"""The crawler page's *Crawler fleet* panel: start a 3-worker crawl, kill a worker, watch it heal.

Everything the panel shows is real, started for it by the dashboard's lab supervisor
(:class:`lookup.labs.CrawlFleetLab`, so a reloaded page finds its fleet again): a
throw-away PostgreSQL (the shared crawl store), a throw-away etcd (the partition leases)
and three ``lookup crawl-worker`` processes over the page's sandbox web. Live, once a
second: the workers and the partitions each holds, with the grant's epoch and the
lease's expiry (read from etcd, :mod:`lookup.crawler.fleetview`),
a map of the partitions by owner, the politeness timeline judged from the sandbox's own
request log — which must stay clean while a worker is killed and its partitions move —
and every host's health with the worker that owns it. Every control command (the
Controls tab's form, :func:`crawlcontrols.control_form`) goes to the fleet's store, which
each worker reads once a second. Only processes this panel started can be killed from it.
"""

from __future__ import annotations

import time
from dataclasses import replace
from functools import partial

import pandas as pd
import plotly.graph_objects as go
import streamlit as st
from common import labs, left_running
from crawlcontrols import control_form, controls_in_force, flagged_hosts, health_frame
from crawltimeline import request_rows, timeline_figure

from lookup.crawler.controls import (
    ControlCommand,
    ControlError,
    ControlState,
    open_crawl_controls,
)
from lookup.crawler.fleetview import FleetView, coordinator_owner
from lookup.crawler.health import host_health
from lookup.crawler.session import SandboxProbe, too_close
from lookup.crawler.state import open_crawl_reader
from lookup.labs import CrawlFleetLab, available
from lookup.labs.crawlfleet import DELAY_FACTOR, LEASE_TTL, MIN_DELAY, PARTITIONS, WORKERS

__all__ = ["fleet_panel"]

#: The politeness timeline shows this many recent seconds (it is redrawn every second).
TIMELINE_WINDOW_S = 30.0
#: The lab's kind in the dashboard's supervisor (one fleet per dashboard).
KIND = "crawl-fleet"


def fleet_lab() -> CrawlFleetLab | None:
    """The fleet this dashboard runs, if any (found again by a reloaded page)."""
    lab = labs().get(KIND)
    return lab if isinstance(lab, CrawlFleetLab) else None


def _start(probe: SandboxProbe, seconds: float) -> None:
    """Start PostgreSQL, etcd and the workers (a failure is a notice, never a traceback);
    a fleet already running is stopped first, as a fresh start asks."""
    labs().stop(KIND)
    try:
        labs().start(KIND, probe=probe, seconds=seconds)
    except Exception as exc:  # noqa: BLE001 - shown on the page
        st.session_state["fleet.notice"] = f"The fleet's servers did not start: {exc}"


def _stop() -> None:
    lab = fleet_lab()
    if lab is not None:
        started = time.time() - lab.started_at
        labs().stop(KIND)
        st.session_state["fleet.notice"] = (
            f"Fleet stopped after {started:.0f} s: its {WORKERS} workers, PostgreSQL and "
            "etcd are shut down."
        )


def _kill(name: str) -> None:
    lab = fleet_lab()
    if lab is not None:
        lab.kill(name)


def partition_map(view: FleetView, partitions: int, names: list[str]) -> go.Figure:
    """The partitions as a grid coloured by owner (``names``: every worker, so a worker keeps
    its colour when another dies; grey: free, waiting for a taker)."""
    side = int(partitions**0.5)
    z, text = [], []
    for row in range(side):
        zr, tr = [], []
        for col in range(side):
            part = row * side + col
            owner, epoch = view.holders.get(part, ("", 0))
            zr.append(names.index(owner) + 1 if owner in names else 0)
            tr.append(
                f"partition {part}: {owner or 'free'} (epoch {epoch})"
                if owner
                else f"partition {part}: free"
            )
        z.append(zr)
        text.append(tr)
    palette = ["#d0d7de", "#1f6feb", "#2da44e", "#bf8700", "#8250df", "#cf222e"]
    n = max(1, len(names))
    key = "  ".join(
        f"<span style='color:{palette[min(i, len(palette) - 1)]}'>■</span> {label}"
        for i, label in enumerate(["free", *names])
    )
    scale = [[i / n, palette[min(i, len(palette) - 1)]] for i in range(n + 1)]
    fig = go.Figure(
        go.Heatmap(
            z=z,
            text=text,
            hoverinfo="text",
            colorscale=scale,
            zmin=0,
            zmax=n,
            showscale=False,
            xgap=2,
            ygap=2,
        )
    )
    fig.update_layout(
        height=260,
        margin=dict(l=10, r=10, t=30, b=10),
        title="Partitions by owner: " + key,
        xaxis_visible=False,
        yaxis_visible=False,
    )
    return fig


def _live(run: CrawlFleetLab) -> None:
    now = time.time()
    try:
        view = run.view()
    except Exception as exc:  # noqa: BLE001 - etcd unreachable is a state to show
        st.warning(f"etcd does not answer: {exc}")
        return
    running = set(run.running())
    codes = run.workers()
    rows = []
    for name in sorted(codes):
        w = view.workers.get(name)
        code = codes[name]
        state = (
            "running"
            if name in running
            else ("killed (SIGKILL)" if name in run.killed else f"exited {code}")
        )
        epochs = sorted(w.partitions.values()) if w else []
        rows.append(
            {
                "Worker": name,
                "Process": state,
                "Partitions held": len(w.partitions) if w else 0,
                "Epochs": f"{epochs[0]}…{epochs[-1]}" if epochs else "–",
                "Lease expires in (s)": None if not w or w.ttl_left is None else w.ttl_left,
            }
        )
    free = PARTITIONS - len(view.holders)
    fewest = (
        min((len(view.workers[w].partitions) if w in view.workers else 0) for w in running)
        if running
        else 0
    )
    st.markdown(
        f"**{len(running)} of {WORKERS} workers running** · {len(view.holders)} of "
        f"{PARTITIONS} partitions held · fewest on one running worker: {fewest}"
        + (f" · {free} free, waiting for a taker" if free else "")
    )
    st.dataframe(pd.DataFrame(rows), hide_index=True, key="fleet-workers")
    cols = st.columns(WORKERS)
    for col, name in zip(cols, sorted(codes), strict=False):
        col.button(
            f"Kill {name}",
            key=f"fleet-kill-{name}",
            on_click=_kill,
            args=(name,),
            disabled=name not in running,
            icon=":material/skull:",
        )
    for name, (at, held) in run.killed.items():
        since = at - run.started_at
        back = [
            t
            for t, bal in run.history
            if t > since and sum(bal.values()) == PARTITIONS and not bal.get(name)
        ]
        if not held:
            moved = "it held no partition"
        elif back:
            moved = f"its {held} partitions, all held again {back[0] - since:.1f} s later"
        else:
            moved = f"its {held} partitions wait for its lease to expire"
        st.caption(f"{name} killed {now - at:.0f} s ago: {moved}.")
    st.plotly_chart(partition_map(view, PARTITIONS, sorted(codes)), key="fleet-map")
    _politeness(run, now)
    try:
        controls = open_crawl_controls(run.store_url)
        try:
            state, acks = ControlState.of(controls.since(0)), controls.acks()
        finally:
            controls.close()
        with open_crawl_reader(run.store_url) as reader:
            owner = coordinator_owner(view, PARTITIONS)
            health = host_health(reader, state, owner, now=now)
    except Exception as exc:  # noqa: BLE001 - the store not made yet
        st.caption(f"No crawl state yet ({type(exc).__name__}).")
        return
    controls_in_force(state, acks, now)
    flagged_hosts(health, now)
    st.markdown("**Per-host health**, with the worker whose partition holds the host")
    if not health:
        st.caption("No host contacted yet.")
        return
    frame = health_frame(health, now)
    frame["Worker"] = frame["Worker"].replace("", "free")  # its partition between owners
    owner = ["Host", "Worker", "Epoch"]  # first: they are what moves when a worker dies
    frame = frame[owner + [c for c in frame.columns if c not in owner]]
    st.dataframe(frame, hide_index=True, key="fleet-hosts")


def _politeness(run: CrawlFleetLab, now: float) -> None:
    """The politeness timeline of the last seconds, and the count over the whole run."""
    try:
        log = run.requests()
    except Exception as exc:  # noqa: BLE001 - the sandbox not answering is a state to show
        st.warning(f"The sandbox's request log does not answer: {exc}")
        return
    by_host = too_close(log, min_delay=MIN_DELAY, delay_factor=DELAY_FACTOR, by="host")
    by_address = too_close(log, min_delay=MIN_DELAY, delay_factor=DELAY_FACTOR, by="address")
    st.markdown(
        f"**Politeness timeline** (the last {TIMELINE_WINDOW_S:g} s, from the sandbox's log)"
    )
    recent = [e for e in log if e.wall >= now - TIMELINE_WINDOW_S]
    if recent:
        rows = request_rows(recent, run.started_at, by_host | by_address)
        fig = timeline_figure(rows, "host", x_title="seconds since the fleet started")
        for name, (at, _) in run.killed.items():
            if at >= now - TIMELINE_WINDOW_S:
                fig.add_vline(
                    x=at - run.started_at,
                    line=dict(color="#cf222e", dash="dash"),
                    annotation_text=f"{name} killed",
                )
        fig.update_xaxes(range=[float(rows["t"].min()) - 0.5, now - run.started_at + 0.5])
        st.plotly_chart(fig, key="fleet-timeline")
    st.caption(
        f"{len(log)} requests · {len(by_host)} too close to the one before on the same host "
        f"· {len(by_address)} on the same address (ringed in red)"
    )


def _issue(run: CrawlFleetLab, cmd: ControlCommand) -> tuple[bool, str]:
    """Issue ``cmd`` to the fleet's store (every worker applies it within a second)."""
    controls = open_crawl_controls(run.store_url)
    try:
        rec = controls.issue(replace(cmd, note=cmd.note or "from the fleet panel"))
    except ControlError as exc:
        return False, f"Not issued: {exc.message} ({exc.code})"
    finally:
        controls.close()
    return True, f"Control v{rec.version} issued to the fleet: {rec.command} {rec.target}".rstrip()


def fleet_panel(probe: SandboxProbe) -> None:
    """The panel: start/stop a fleet, and its live view while it runs."""
    with st.expander(
        ":material/hub: Crawler fleet: 3 workers, partitions under leases",
        # open while a fleet runs and while a notice about it waits to be read (a stop
        # must not fold the panel away with its own confirmation)
        expanded=fleet_lab() is not None or "fleet.notice" in st.session_state,
    ):
        if left_running(KIND, "", "fleet-left"):
            return
        if not available(KIND):
            st.info(
                "A fleet needs PostgreSQL and etcd installed (`apt-get install "
                "postgresql etcd-server`)."
            )
            return
        st.markdown(
            f"{WORKERS} `lookup crawl-worker` processes share one PostgreSQL store; hosts "
            f"are hashed (by address) into {PARTITIONS} partitions, each leased from etcd "
            f"for {LEASE_TTL} s and renewed every third of it. Kill a worker: its leases "
            "expire, the others take its partitions over (new, larger epochs) and replay "
            "them from the store — and no host is ever asked twice at once."
        )
        run = fleet_lab()
        c1, c2 = st.columns(2)
        c1.button(
            "Start a 3-worker crawl",
            key="fleet-start",
            disabled=not probe.up,
            on_click=_start,
            args=(probe, 90.0),
            icon=":material/play_arrow:",
        )
        c2.button(
            "Stop the fleet",
            key="fleet-stop",
            disabled=run is None,
            on_click=_stop,
            icon=":material/stop:",
        )
        notice = st.session_state.pop("fleet.notice", None)
        if notice:
            st.info(notice)
        if run is None:
            return
        st.markdown("**Steer the fleet**: a command reaches every worker within a second.")
        control_form("fleet-control", partial(_issue, run), placeholder="news.sandbox.test")
        st.fragment(run_every=1.0)(_live)(run)
