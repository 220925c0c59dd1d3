"""The crawler page's *Crawler fleet* panel: start a 3-worker crawl, kill a worker, watch it heal.

Everything the panel shows is real and started by the panel itself: a throw-away
PostgreSQL (the shared crawl store), a throw-away etcd (the partition leases) and three
``lookup crawl-worker`` processes (:class:`lookup.crawler.fleet.CrawlFleet`) over the
page's sandbox web. Live, once a second: the workers and the partitions each holds, with
the grant's epoch and the lease's expiry (read from etcd, :mod:`lookup.crawler.fleetview`),
a map of the partitions by owner, and the politeness timeline judged from the sandbox's
own request log — which must stay clean while a worker is killed and its partitions move.
Only processes this panel started can be killed from it.
"""

from __future__ import annotations

import signal
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from lookup.crawler.controls import ControlCommand, ControlError, open_crawl_controls
from lookup.crawler.fleet import CrawlFleet
from lookup.crawler.fleetview import FleetView, fleet_view, host_owners
from lookup.crawler.health import host_health
from lookup.crawler.session import SandboxProbe, politeness_gaps, read_request_log
from lookup.crawler.store import open_crawl_reader
from lookup.kit.etcd import EtcdServer, etcd_available, etcd_client
from lookup.kit.pgserver import PostgresServer, postgres_available

__all__ = ["fleet_panel"]

WORKERS = 3
PARTITIONS = 64
LEASE_TTL = 3
MIN_DELAY = 0.25
FLEET = "dashboard"


@dataclass
class FleetRun:
    """A fleet this page started, with its servers (stopped together)."""

    pg: PostgresServer
    etcd: EtcdServer
    fleet: CrawlFleet
    store_url: str
    out: Path
    sandbox_url: str
    log_since: int
    started_at: float = field(default_factory=time.time)
    killed: dict[str, tuple[float, int]] = field(default_factory=dict)  # when, partitions held
    last_view: FleetView | None = None
    history: list[tuple[float, dict[str, int]]] = field(default_factory=list)

    def stop(self) -> None:
        self.fleet.stop()
        self.etcd.stop()
        self.pg.stop()


@dataclass
class FleetRuntime:
    lock: threading.Lock = field(default_factory=threading.Lock)
    run: FleetRun | None = None


@st.cache_resource(show_spinner=False)
def fleet_runtime() -> FleetRuntime:
    return FleetRuntime()


def _argv(
    probe: SandboxProbe, out: Path, store: str, coordinator: str, seconds: float
) -> list[str]:
    """``lookup crawl-worker`` options (minus ``--worker-id``) for the page's fleet."""
    return [
        *probe.seeds, "--out", str(out), "--quiet", "--hosts", probe.hosts_url,
        "--allow-range", "127.0.0.0/8", "--min-delay", f"{MIN_DELAY:g}", "--delay-factor", "2",
        "--timeout", "2", "--store", store, "--coordinator", coordinator, "--fleet-name", FLEET,
        "--lease-ttl", str(LEASE_TTL), "--partitions", str(PARTITIONS),
        "--max-seconds", f"{seconds:g}",
    ]  # fmt: skip


def _start(probe: SandboxProbe, seconds: float) -> None:
    """Start PostgreSQL, etcd and the workers (a failure is a notice, never a traceback)."""
    rt = fleet_runtime()
    with rt.lock:
        if rt.run is not None:
            rt.run.stop()
            rt.run = None
        out = Path(tempfile.mkdtemp(prefix="lookup-fleet-"))
        pg: PostgresServer | None = None
        try:
            pg = PostgresServer().start()
            etcd = EtcdServer().start()
        except Exception as exc:  # noqa: BLE001 - shown on the page
            if pg is not None:
                pg.stop()
            st.session_state["fleet.notice"] = f"The fleet's servers did not start: {exc}"
            return
        since = len(read_request_log(probe.url))
        coordinator = etcd.url.replace("http://", "etcd://")
        fleet = CrawlFleet(_argv(probe, out / "fleet", pg.url, coordinator, seconds), out / "fleet")
        fleet.start_all(WORKERS)
        rt.run = FleetRun(pg, etcd, fleet, pg.url, out, probe.url, since)


def _stop() -> None:
    rt = fleet_runtime()
    with rt.lock:
        if rt.run is not None:
            rt.run.stop()
            rt.run = None


def _kill(name: str) -> None:
    run = fleet_runtime().run
    if run is not None and name in run.fleet.running():
        view = run.last_view
        held = len(view.workers[name].partitions) if view and name in view.workers else 0
        run.fleet.signal(name, signal.SIGKILL)
        run.killed[name] = (time.time(), held)


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
        title="Partitions by owner",
        xaxis_visible=False,
        yaxis_visible=False,
    )
    return fig


def _live(run: FleetRun) -> None:
    now = time.time()
    try:
        view = fleet_view(etcd_client(run.etcd.url), FLEET)
    except Exception as exc:  # noqa: BLE001 - etcd unreachable is a state to show
        st.warning(f"etcd does not answer: {exc}")
        return
    run.history.append((now - run.started_at, view.balance()))
    run.last_view = view
    running = set(run.fleet.running())
    rows = []
    for name in sorted(run.fleet.procs):
        w = view.workers.get(name)
        code = run.fleet.procs[name].poll()
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
    for col, name in zip(cols, sorted(run.fleet.procs), strict=False):
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
    st.plotly_chart(partition_map(view, PARTITIONS, sorted(run.fleet.procs)), key="fleet-map")
    log = [
        e
        for e in read_request_log(run.sandbox_url, since=run.log_since)
        if e.host.endswith(".sandbox.test")
    ]
    gaps = politeness_gaps(log, min_delay=MIN_DELAY, delay_factor=2.0)
    too_close = sum(g.violations for g in gaps)
    st.markdown(
        f"**Politeness, from the sandbox's log:** {len(log)} requests · "
        f"{too_close} too close to the one before on the same host"
    )
    try:
        with open_crawl_reader(run.store_url) as reader:
            hosts = [(h.host, h.address) for h in reader.hosts()]
            owners = host_owners(hosts, view, PARTITIONS)
            health = host_health(reader, None, owners)
    except Exception as exc:  # noqa: BLE001 - the store not made yet
        st.caption(f"No crawl state yet ({type(exc).__name__}).")
        return
    st.dataframe(
        pd.DataFrame(
            [
                {
                    "Host": h.host,
                    "Worker": h.worker or "–",
                    "Epoch": h.epoch,
                    "Requests": h.requests,
                    "Pages": h.pages,
                    "Queued": h.queued,
                }
                for h in health
            ]
        ),
        hide_index=True,
        key="fleet-hosts",
    )


def _block(run: FleetRun, host: str) -> None:
    controls = open_crawl_controls(run.store_url)
    try:
        rec = controls.issue(ControlCommand("block-host", host, note="from the fleet panel"))
        st.session_state["fleet.notice"] = f"Control v{rec.version}: block-host {rec.target}"
    except ControlError as exc:
        st.session_state["fleet.notice"] = f"Not issued: {exc.message} ({exc.code})"
    finally:
        controls.close()


def fleet_panel(probe: SandboxProbe) -> None:
    """The panel: start/stop a fleet, and its live view while it runs."""
    with st.expander(
        ":material/hub: Crawler fleet: 3 workers, partitions under leases",
        expanded=fleet_runtime().run is not None,
    ):
        if not (etcd_available() and postgres_available()):
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
        run = fleet_runtime().run
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
        with st.form("fleet-block"):
            host = st.text_input(
                "Block a host in the fleet (every worker, within a second)",
                key="fleet-block-host",
                placeholder="news.sandbox.test",
            )
            if st.form_submit_button("Block"):
                _block(run, host)
        st.fragment(run_every=1.0)(_live)(run)
