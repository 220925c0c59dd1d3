"""Web crawler: crawl the sandbox web, watch politeness live, inspect what was deduplicated.

The crawl runs as a child process (``lookup crawl``, via
:class:`lookup.crawler.session.CrawlSession`) writing into ``$LOOKUP_DATA_DIR/crawls``;
this page reads the crawl's own SQLite state while it runs — including the
frontier's own per-host ready times, which the crawler writes twice a second — and
the sandbox web's request log (``$LOOKUP_SANDBOX_URL``, which ``make run`` sets) to
show every request from the server's side. With no sandbox answering, the page
offers to start one.
"""

from __future__ import annotations

import html
import re
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pandas as pd
import plotly.graph_objects as go
import streamlit as st
from common import api_client, api_url, data_dir, term_help
from crawlcontrols import controls_tab
from crawlfleet import fleet_panel
from crawltimeline import crawl_timeline, short_host, timeline_figure
from navigation import PAGES
from plotly.subplots import make_subplots

from lookup.crawler.inspector import (
    DiffSegment,
    DuplicateCluster,
    compare_texts,
    duplicate_clusters,
    fetched_pages,
    host_probes,
    page_text,
    soft_404_pages,
)
from lookup.crawler.session import (
    CrawlSession,
    CrawlSettings,
    CrawlSnapshot,
    HostStatus,
    SandboxProbe,
    SandboxProcess,
    list_crawls,
    politeness_gaps,
    probe_sandbox,
    sandbox_url,
)
from lookup.crawler.soft404 import masked_words
from lookup.crawler.store import CrawlStateError, crawl_state_url, open_crawl_reader

SELECTED = "crawler.selected"
NOTICE = "crawler.notice"
INDEX_RESULT = "crawler.index_result"
#: The bounds a crawl started from this page must stay within (the machine is shared).
MAX_SECONDS = (5, 120)
MAX_PAGES = (20, 3000)
#: Height of one row of st.dataframe, so a whole table shows without scrolling.
ROW_PX = 35
#: The pages-per-second chart's rate is taken over this many seconds of samples.
RATE_WINDOW_S = 3.0
SANDBOX_ONLY = (
    "The `*.sandbox.test` addresses exist **only inside the sandbox web**: the crawler "
    "resolves them from the sandbox's name table, a browser cannot. Open a page's "
    "*stored copy* (the crawler's WARC record, served by the API at 127.0.0.1) instead."
)
COPY_COLUMN = st.column_config.LinkColumn(
    "Stored copy",
    display_text="open ↗",
    help="The page as the crawler stored it (its WARC record), served by the API.\n\n"
    + term_help("WARC"),
)
KIND_BADGE = {
    "exact": ":blue-badge[exact]",
    "simhash": ":violet-badge[SimHash]",
    "minhash": ":orange-badge[MinHash]",
    "original": ":green-badge[original]",
}


# ----------------------------------------------------------------------------- runtime


@dataclass
class Runtime:
    """What outlives one script run: the sandbox this page started and the running crawls."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    sandbox: SandboxProcess | None = None
    sessions: dict[str, CrawlSession] = field(default_factory=dict)

    def running(self) -> CrawlSession | None:
        return next((s for s in self.sessions.values() if s.running), None)


@st.cache_resource(show_spinner=False)
def runtime() -> Runtime:
    """One per dashboard server; its child processes are stopped when the server exits."""
    return Runtime()


@st.cache_data(ttl=3, show_spinner=False)
def cached_probe(url: str) -> SandboxProbe:
    return probe_sandbox(url)


def crawls_root() -> Path:
    return data_dir() / "crawls"


def current_sandbox() -> SandboxProbe:
    """The sandbox at ``$LOOKUP_SANDBOX_URL`` if it answers, else the one this page started."""
    probe = cached_probe(sandbox_url())
    if probe.up:
        return probe
    own = runtime().sandbox
    if own is not None and own.running and own.port is not None:
        mine = cached_probe(own.url)
        if mine.up:
            return mine
    return probe


def short_url(url: str, width: int = 80) -> str:
    """A URL without scheme and port, cut to ``width`` characters."""
    rest = url.split("://", 1)[-1]
    host, _, path = rest.partition("/")
    text = f"{short_host(host)}/{path}"
    return text if len(text) <= width else text[: width - 1] + "…"


def plural(n: int, one: str, many: str | None = None) -> str:
    """``1 copy``, ``2 copies``, ``1,200 pages``."""
    return f"{n:,} {one if n == 1 else (many or one + 's')}"


def stored_copy_url(session: CrawlSession, url: str) -> str | None:
    """The API's cached view of ``url`` as this crawl stored it (None: not a crawl of this page's
    directory, so the API cannot name it)."""
    if session.out_dir.resolve().parent != crawls_root().resolve():
        return None
    crawl = quote(session.out_dir.name, safe="")
    return f"{api_url()}/search/cached?url={quote(url, safe='')}&crawl={crawl}"


def copy_link(session: CrawlSession, url: str, label: str | None = None) -> str:
    """Markdown: ``url`` (shortened) linked to its stored copy, or plain when there is none."""
    text = (label or short_url(url, 70)).replace("[", "(").replace("]", ")")
    href = stored_copy_url(session, url)
    return f"[{text}]({href})" if href else text


def seconds(value: float | None, digits: int = 2) -> str:
    return "—" if value is None else f"{value:.{digits}f} s"


# ----------------------------------------------------------------------------- sandbox


def start_own_sandbox() -> None:
    rt = runtime()
    with rt.lock:
        if rt.sandbox is not None and rt.sandbox.running:
            return
        sandbox = SandboxProcess(crawls_root() / "sandbox.log", size="small", crawl_delay=0.25)
        try:
            sandbox.start()
        except (OSError, RuntimeError, TimeoutError) as exc:
            st.session_state[NOTICE] = ("error", f"The sandbox web did not start: {exc}")
            return
        rt.sandbox = sandbox
    cached_probe.clear()
    st.session_state[NOTICE] = ("success", f"Started a small sandbox web at {sandbox.url}.")


def stop_own_sandbox() -> None:
    rt = runtime()
    with rt.lock:
        if rt.sandbox is not None:
            rt.sandbox.stop()
            rt.sandbox = None
    cached_probe.clear()


def sandbox_panel() -> SandboxProbe:
    """One status line for the sandbox web, the host list, and the offer to start one."""
    probe = current_sandbox()
    own = runtime().sandbox
    with st.container(key="sandbox-status"):
        if probe.up:
            mine = own is not None and own.running and own.port is not None and probe.url == own.url
            origin = "started by this page" if mine else "`LOOKUP_SANDBOX_URL`"
            st.markdown(
                f":green-badge[:material/check_circle: Sandbox web up] "
                f"{len(probe.hosts)} hosts answering at {probe.url} ({origin}) · "
                f"[request log]({probe.url}/_sandbox/log) · "
                f"[ground truth]({probe.url}/_sandbox/manifest)"
            )
            with st.expander("The hosts of the sandbox web", expanded=False):
                hosts = pd.DataFrame(
                    [
                        {"Host": short_host(h["name"]), "Address": h["address"], "Role": h["role"]}
                        for h in probe.hosts
                    ]
                )
                st.dataframe(hosts, hide_index=True, key="sandbox-hosts")
                st.caption(
                    "These names exist only inside the sandbox web (there is no DNS for "
                    f".sandbox.test): the crawler reads them from {probe.hosts_url}. "
                    "A browser opens a crawled page through its stored copy."
                )
            if mine:
                st.button(
                    "Stop the sandbox web this page started",
                    key="stop-sandbox",
                    on_click=stop_own_sandbox,
                    icon=":material/stop_circle:",
                )
        else:
            st.markdown(
                f":orange-badge[:material/cloud_off: No sandbox web] Nothing answers at "
                f"{probe.url} ({probe.problem}). `make run` starts one on port 8600; "
                "`lookup sandbox --port 8600` starts one by hand; or start a small one here."
            )
            st.button(
                "Start a small sandbox web",
                key="start-sandbox",
                type="primary",
                on_click=start_own_sandbox,
                icon=":material/play_circle:",
            )
    return probe


# ------------------------------------------------------------------------------ crawls


def new_crawl_dir() -> Path:
    root = crawls_root()
    stamp = datetime.now().strftime("crawl-%Y%m%d-%H%M%S")
    path = root / stamp
    n = 1
    while path.exists():
        n += 1
        path = root / f"{stamp}-{n}"
    return path


def start_crawl(probe: SandboxProbe, settings: CrawlSettings) -> None:
    rt = runtime()
    with rt.lock:
        if rt.running() is not None:
            st.session_state[NOTICE] = ("warning", "A crawl is already running; wait for it.")
            return
        out = new_crawl_dir()
        try:
            session = CrawlSession.start(out, probe, settings)
        except (OSError, RuntimeError) as exc:
            st.session_state[NOTICE] = ("error", f"The crawl did not start: {exc}")
            return
        rt.sessions[str(out)] = session
    st.session_state[SELECTED] = str(out)
    st.session_state.pop(INDEX_RESULT, None)


def submit_crawl(probe: SandboxProbe) -> None:
    """The form's callback: runs before the page is drawn again, so the page shows the crawl."""
    state = st.session_state
    try:
        settings = CrawlSettings(
            max_seconds=float(state["crawl-seconds"]),
            max_pages=int(state["crawl-pages"]),
            min_delay=float(state["crawl-min-delay"]),
            delay_factor=float(state["crawl-factor"]),
        )
    except (KeyError, TypeError, ValueError) as exc:
        state[NOTICE] = ("error", f"These settings do not make a crawl: {exc}")
        return
    start_crawl(probe, settings)


def crawl_form(probe: SandboxProbe) -> None:
    """The bounds and politeness of the next crawl, and the button that starts it."""
    busy = runtime().running() is not None
    with st.form("crawl-form", border=True):
        st.markdown("**Crawl the sandbox web**")
        a, b, c, d = st.columns(4)
        a.slider("Stop after (seconds)", *MAX_SECONDS, value=30, step=5, key="crawl-seconds")
        b.number_input(
            "Stop after (pages)",
            min_value=MAX_PAGES[0],
            max_value=MAX_PAGES[1],
            value=800,
            step=50,
            key="crawl-pages",
        )
        c.select_slider(
            "Minimum pause per host (s)",
            options=[0.0, 0.05, 0.1, 0.25, 0.5, 1.0, 2.0],
            value=0.1,
            key="crawl-min-delay",
            help="The pause after each request to a host is max(robots.txt Crawl-delay, "
            "factor × how long the fetch took, this minimum).",
        )
        d.select_slider(
            "Pause factor × fetch time",
            options=[0.0, 1.0, 2.0, 5.0, 10.0, 20.0],
            value=10.0,
            key="crawl-factor",
            help="A host that answers slowly is probably busy: wait longer before asking again.",
        )
        st.form_submit_button(
            "Start crawl",
            type="primary",
            icon=":material/travel_explore:",
            disabled=busy or not probe.up,
            key="crawl-start",
            on_click=submit_crawl,
            args=(probe,),
        )
    if busy:
        st.caption("A crawl is running — one at a time; it stops by itself at its limits.")


def show_notice() -> None:
    notice = st.session_state.pop(NOTICE, None)
    if notice:
        kind, text = notice
        getattr(st, kind)(text)


def choose_crawl() -> CrawlSession | None:
    """The crawl to show: the one just started, or any earlier one in the data directory."""
    rt = runtime()
    root = crawls_root()
    dirs = {str(p): p for p in list_crawls(root)}
    for key, session in rt.sessions.items():
        if Path(key).parent == root and (session.running or Path(key).exists()):
            dirs.setdefault(key, Path(key))
    if not dirs:
        st.info(
            "No crawl yet. Start one above: it crawls the sandbox web politely and stops at "
            "its limits; everything it found stays inspectable here afterwards.",
            icon=":material/info:",
        )
        return None
    options = sorted(dirs, key=lambda k: Path(k).name, reverse=True)
    if st.session_state.get(SELECTED) not in options:
        st.session_state[SELECTED] = options[0]

    st.selectbox(
        "Crawl to show",
        options,
        format_func=lambda k: Path(k).name,
        key=SELECTED,
        help=f"Every crawl started here is kept in {crawls_root()}.",
    )
    key = st.session_state[SELECTED]
    session = rt.sessions.get(key)
    if session is not None:
        return session
    try:
        return CrawlSession.open(key)
    except FileNotFoundError:
        st.warning(f"{key} holds no crawl any more.")
        return None


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
        for col, (label, value, helptext) in zip(st.columns(len(row)), row, strict=True):
            col.metric(label, value, help=helptext, border=True)
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


# ------------------------------------------------------------------------- dedup tab


def diff_html(segments: list[DiffSegment]) -> str:
    style = {
        "delete": "background:#ffebe9;color:#82071e;text-decoration:line-through;",
        "insert": "background:#dafbe1;color:#055d20;",
        "replace": "background:#fff8c5;color:#633c01;",
    }
    parts = []
    for seg in segments:
        if seg.collapsed:
            parts.append(
                "<span style='color:#57606a;background:#eaeef2;border-radius:8px;"
                f"padding:0 6px;font-size:0.85em'>… {len(seg.words):,} identical words …</span>"
            )
        elif seg.op == "equal":
            parts.append(html.escape(seg.text))
        else:
            parts.append(
                f"<span style='{style[seg.op]}border-radius:3px;padding:0 2px'>"
                f"{html.escape(seg.text)}</span>"
            )
    body = " ".join(parts)
    return (
        "<div style='max-height:340px;overflow-y:auto;border:1px solid #d0d7de;border-radius:8px;"
        f"padding:10px 12px;line-height:1.6;font-size:0.92em'>{body}</div>"
    )


def cluster_label(c: DuplicateCluster) -> str:
    kinds = ", ".join(f"{k} {n}" for k, n in sorted(c.kinds.items()))
    copies = plural(len(c.duplicates), "copy", "copies")
    return f"{short_url(c.original.url, 70)} — {copies} ({kinds})"


def compare_pair(session: CrawlSession, left: str, right: str, verdict: str | None) -> None:
    try:
        a = page_text(session.out_dir, left)
        b = page_text(session.out_dir, right)
    except (KeyError, OSError, ValueError) as exc:
        st.warning(f"These pages cannot be read back from the crawl's WARC files: {exc}")
        return
    r = compare_texts(a.text, b.text, context=30)
    metrics = (
        (
            "SimHash distance",
            f"{r.hamming} of 64 bits",
            "Hamming distance between the two 64-bit SimHash fingerprints of the word "
            "3-shingles; the crawler calls ≤ 3 a near-duplicate.",
        ),
        (
            "Shingle Jaccard",
            f"{r.jaccard:.3f}",
            "Shared distinct word 3-shingles ÷ all distinct shingles of the two pages (exact).",
        ),
        (
            "MinHash estimate",
            f"{r.minhash_jaccard:.3f}",
            "datasketch's estimate of that Jaccard from 128 permutations; the crawler's LSH "
            "calls ≥ 0.8 a near-duplicate.",
        ),
        (
            "Words that differ",
            f"{r.words_changed_left} / {r.words_changed_right}",
            "Words only on the left / only on the right, aligned with difflib.",
        ),
        (
            "Same text (SHA-256)",
            "yes" if r.identical else "no",
            "An exact duplicate has the same hash of its whitespace-normalised main text.",
        ),
    )
    for col, (label, value, hint) in zip(st.columns(len(metrics)), metrics, strict=True):
        col.metric(label, value, help=hint, border=True)
    if verdict:
        st.caption(f"The crawler's verdict: {verdict}")
    lcol, rcol = st.columns(2)
    for col, page, segs in ((lcol, a, r.left), (rcol, b, r.right)):
        with col:
            st.markdown(f"**{html.escape(page.title) or 'untitled'}**")
            note = (
                f" · stored as a revisit of {short_url(page.stored_as)}" if page.stored_as else ""
            )
            st.caption(
                f"`{page.url}` · {plural(page.words, 'word')}{note} · "
                + copy_link(session, page.url, "open the stored copy ↗")
            )
            st.markdown(diff_html(segs), unsafe_allow_html=True)
    st.caption(
        ":red-background[struck out]: only on the left · :green-background[green]: only on "
        "the right · :orange-background[yellow]: replaced. Long identical stretches are folded."
    )


def dedup_tab(session: CrawlSession, snap: CrawlSnapshot) -> None:
    st.markdown(
        "Each page's **main text** (its `<main>` without navigation, header and footer) is "
        "checked three ways, cheapest first: **exact** (SHA-256 of the text), **SimHash** "
        "(64-bit fingerprint, ≤ 3 bits apart, found with 4 × 16-bit block tables) and "
        "**MinHash LSH** (estimated shingle Jaccard ≥ 0.8). A duplicate is stored as a "
        "pointer to its original and never reaches the search index."
    )
    try:
        clusters = duplicate_clusters(session.out_dir)
    except Exception as exc:  # noqa: BLE001 - a damaged crawl file is a message
        st.error(f"The duplicates of this crawl cannot be read: {exc}")
        return
    cols = st.columns(4)
    d = snap.duplicates
    cols[0].metric("Exact duplicates", f"{d.get('exact', 0):,}", border=True)
    cols[1].metric("Near, by SimHash", f"{d.get('simhash', 0):,}", border=True)
    cols[2].metric("Near, by MinHash", f"{d.get('minhash', 0):,}", border=True)
    cols[3].metric("Clusters", f"{len(clusters):,}", border=True)
    if not clusters:
        st.caption("No duplicate found (yet).")
        return
    near = [c for c in clusters if not c.exact_only]
    exact = [c for c in clusters if c.exact_only]
    choice = st.segmented_control(
        "Show",
        ["near-duplicates", "exact duplicates", "any two pages"],
        default="near-duplicates",
        key="dedup-mode",
        help=f"{len(near)} clusters hold a near-duplicate; {len(exact)} hold exact copies only.",
    )
    choice = choice or "near-duplicates"
    if choice.startswith("any"):
        pages = fetched_pages(session.out_dir)
        if len(pages) < 2:
            st.caption("Fewer than two pages are stored.")
            return
        lcol, rcol = st.columns(2)
        left = lcol.selectbox("Left page", pages, index=0, format_func=short_url, key="any-left")
        right = rcol.selectbox("Right page", pages, index=1, format_func=short_url, key="any-right")
        compare_pair(session, left, right, None)
        return
    shown = exact if choice.startswith("exact") else near
    if not shown:
        kind = "exact-only" if choice.startswith("exact") else "near-duplicate"
        st.caption(f"No {kind} cluster (yet).")
        return
    table = pd.DataFrame(
        [
            {
                "Original": short_url(c.original.url),
                "Copies": len(c.duplicates),
                "Caught by": ", ".join(f"{k} {n}" for k, n in sorted(c.kinds.items())),
            }
            for c in shown
        ]
    )
    st.dataframe(
        table, hide_index=True, key="clusters-table", height=min(250, 35 * len(table) + 38)
    )
    by_original = {c.original.url: c for c in shown}
    picked = st.selectbox(
        "Cluster",
        list(by_original),
        format_func=lambda u: cluster_label(by_original[u]),
        key="cluster-exact" if choice.startswith("exact") else "cluster-near",
    )
    if picked is None:
        return
    cluster = by_original[picked]
    st.markdown(
        " ".join(
            f"{KIND_BADGE.get(m.kind, m.kind)} {copy_link(session, m.url, short_url(m.url, 60))}"
            for m in cluster.members
        )
    )
    st.caption(SANDBOX_ONLY, help=term_help("WARC"))
    members = [m.url for m in cluster.members]
    lcol, rcol = st.columns(2)
    left = lcol.selectbox("Left page", members, index=0, format_func=short_url, key="pair-left")
    right = rcol.selectbox("Right page", members, index=1, format_func=short_url, key="pair-right")
    by_url = {m.url: m for m in cluster.members}
    verdict = None
    for one, other in ((by_url[right], left), (by_url[left], right)):
        if one.kind != "original" and other == cluster.original.url:
            score = (
                f", Hamming distance {one.score:g}" if one.kind == "simhash" else
                f", estimated Jaccard {one.score:.3f}" if one.kind == "minhash" else ""
            )  # fmt: skip
            verdict = f"{short_url(one.url)} duplicates the original, caught by {one.kind}{score}."
    compare_pair(session, left, right, verdict)


# ------------------------------------------------------------------- robots and traps


def robots_tab(session: CrawlSession, snap: CrawlSnapshot) -> None:
    st.markdown(
        "robots.txt is read **before anything else** on a host (RFC 9309, parsed with "
        "`protego`): a 4xx answer means no rules; a 5xx or no answer means **crawl nothing** "
        "until it can be read (fail closed). Page-level `noindex`/`nofollow` (meta robots, "
        "`X-Robots-Tag`) are honoured too."
    )
    hosts = pd.DataFrame(
        [
            {
                "Host": h.label,
                "robots.txt answer": (
                    f"HTTP {h.robots_status}" if h.robots_status else h.robots_reason or "—"
                ),
                "Decision": {
                    "rules": "follow its rules",
                    "allow-all": "no rules: crawl freely",
                    "disallow-all": "crawl nothing (fail closed)",
                }.get(h.robots_state or "", "not read yet"),
                "Crawl-delay": "—" if h.crawl_delay is None else f"{h.crawl_delay:g} s",
                "Pages fetched": h.fetched,
            }
            for h in snap.hosts
        ]
    )
    st.markdown("**Each host's robots.txt**")
    if hosts.empty:
        st.caption("No host contacted yet.")
    else:
        st.dataframe(
            hosts, hide_index=True, key="robots-hosts", height=ROW_PX * (len(hosts) + 1) + 3
        )
    try:
        with open_crawl_reader(crawl_state_url(session.out_dir)) as reader:
            blocked = [(u.url, u.reason) for u in reader.blocked()]
            waiting = reader.waiting_on_robots()
            noindex = [(u.url, u.reason) for u in reader.urls_with_outcome("noindex")]
    except (FileNotFoundError, CrawlStateError) as exc:
        st.error(f"This crawl's robots decisions cannot be read: {exc}")
        return
    rows = [{"URL": u, "Decision": r or "disallowed by robots.txt"} for u, r in blocked]
    rows += [
        {"URL": u, "Decision": f"not fetched: robots.txt unreadable ({s or r})"}
        for u, r, s in waiting
    ]
    st.markdown(f"**URLs robots.txt kept the crawler from ({len(rows):,})**")
    if rows:
        st.dataframe(pd.DataFrame(rows), hide_index=True, key="blocked-table")
        st.caption(
            "Never fetched, so nothing is stored: these addresses exist only inside the "
            "sandbox web."
        )
    else:
        st.caption("None.")
    st.markdown(f"**Pages fetched but kept out of the index ({len(noindex):,})**")
    if noindex:
        st.dataframe(
            pd.DataFrame([{"URL": u, "Directive": r} for u, r in noindex]),
            hide_index=True,
            key="noindex-table",
        )
    else:
        st.caption("None.")


TRAP_RULES = {
    "url-length": "URL longer than the limit",
    "path-depth": "too many path segments",
    "repeated-segments": "a path segment repeats (a ../ loop)",
    "session-param": "a session id in the URL",
    "host-budget": "the host's page budget for this crawl cycle is spent (deferred to the next)",
    "depth-limit": "too many links from a start page (an infinite calendar)",
    "duplicate-pattern": "this URL pattern keeps producing duplicates",
    "redirect-limit": "too many redirects in a row",
}


def traps_tab(session: CrawlSession, snap: CrawlSnapshot) -> None:
    st.markdown(
        "Trap defences refuse a URL **before** it is queued: its length, depth and repeated "
        "segments, session parameters, a page budget per host, a depth limit from the start pages, "
        "and URL patterns whose pages keep coming back as duplicates."
    )
    if not snap.traps:
        st.caption("No URL was cut as a trap (yet).")
        return
    counts = pd.DataFrame(
        [
            {"Rule": rule, "URLs cut": n, "What it means": TRAP_RULES.get(rule, "")}
            for rule, n in sorted(snap.traps.items(), key=lambda kv: -kv[1])
        ]
    )
    left, right = st.columns([2, 3])
    with left:
        fig = go.Figure(
            go.Bar(
                x=counts["URLs cut"],
                y=counts["Rule"],
                orientation="h",
                marker_color="#8250df",
                text=counts["URLs cut"],
                textposition="outside",
            )
        )
        fig.update_layout(
            height=60 + 34 * len(counts),
            margin=dict(l=10, r=30, t=10, b=10),
            yaxis=dict(autorange="reversed"),
            xaxis=dict(title_text="URLs cut", range=[0, counts["URLs cut"].max() * 1.25]),
        )
        st.plotly_chart(fig, key="traps-chart")
    with right:
        st.dataframe(counts, hide_index=True, key="trap-rules")
    rule = st.selectbox("Show the URLs cut by", ["every rule", *counts["Rule"]], key="trap-rule")
    try:
        with open_crawl_reader(crawl_state_url(session.out_dir)) as reader:
            cuts = reader.cuts(None if rule == "every rule" else rule)
    except (FileNotFoundError, CrawlStateError) as exc:
        st.error(f"This crawl's cuts cannot be read: {exc}")
        return
    st.dataframe(
        pd.DataFrame([{"URL": c.url, "Rule": c.rule, "Why": c.detail} for c in cuts]),
        hide_index=True,
        key="cuts-table",
    )
    st.caption(
        "A cut URL is never fetched, so nothing is stored: these addresses exist only inside "
        "the sandbox web."
    )


# ------------------------------------------------------------------------- soft 404s


def soft404_tab(session: CrawlSession, snap: CrawlSnapshot) -> None:
    st.markdown(
        "A **soft 404** answers `200 OK` with a page that means *not found*. Right after "
        "robots.txt the crawler asks each host once for a URL that cannot exist (a random "
        "token): a host that answers it `404` says \"not found\" properly; a host that "
        "answers `200` shows what its \"not found\" looks like, and every page whose main "
        "text matches that answer (the URL's own words masked out; same text, shingle "
        "Jaccard ≥ 0.7 or SimHash ≤ 3 bits) is a soft 404. A short page whose title, "
        "heading or first words say *not found* is one too. Soft 404s are never indexed "
        "and their links are not followed."
    )
    try:
        pages = soft_404_pages(session.out_dir)
        probes = host_probes(session.out_dir)
    except Exception as exc:  # noqa: BLE001 - a damaged crawl file is a message
        st.error(f"This crawl's soft 404s cannot be read: {exc}")
        return
    labels = {h.host: h.label for h in snap.hosts}
    cols = st.columns(2)
    cols[0].metric(
        "Caught by the probe", f"{sum(p.method == 'probe' for p in pages):,}", border=True
    )
    cols[1].metric(
        "Caught by the wording", f"{sum(p.method == 'wording' for p in pages):,}", border=True
    )
    st.markdown("**Each host's answer to a URL that cannot exist**")
    if probes:
        st.dataframe(
            pd.DataFrame(
                [
                    {
                        "Host": labels.get(p.host, short_host(p.host)),
                        "Probe": "/" + p.url.split("://", 1)[-1].partition("/")[2],
                        "Answer": "no answer" if p.status is None else f"HTTP {p.status}",
                        "Meaning": (
                            "answers every unknown URL with a page: compare pages with it"
                            if p.soft
                            else "says “not found” properly"
                            if p.status in (404, 410)
                            else "no soft-404 page to compare with"
                        ),
                    }
                    for p in probes.values()
                ]
            ),
            hide_index=True,
            key="probes-table",
        )
    else:
        st.caption("No host probed yet.")
    st.markdown(f"**Pages that said “not found” with 200 OK ({len(pages):,})**")
    if not pages:
        st.caption("None (yet).")
        return
    st.dataframe(
        pd.DataFrame(
            [
                {
                    "URL": p.url,
                    "How it was caught": p.reason,
                    "Stored copy": stored_copy_url(session, p.url),
                }
                for p in pages
            ]
        ),
        hide_index=True,
        key="soft404-table",
        column_config={"Stored copy": COPY_COLUMN},
    )
    by_url = {p.url: p for p in pages}
    picked = st.selectbox(
        "Look at one", list(by_url), format_func=short_url, key="soft404-page"
    )
    if picked is None:
        return
    page = by_url[picked]
    try:
        text = page_text(session.out_dir, page.url)
    except (KeyError, OSError, ValueError) as exc:
        st.warning(f"This page cannot be read back from the crawl's WARC files: {exc}")
        return
    st.markdown(copy_link(session, page.url, "Open this page's stored copy ↗"))
    probe = probes.get(page.host)
    if probe is not None and probe.soft:
        # Compared as the crawler compares them: each without its own URL's words.
        r = compare_texts(
            " ".join(masked_words(probe.text, probe.url)),
            " ".join(masked_words(text.text, page.url)),
            context=30,
        )
        c = st.columns(3)
        c[0].metric("Jaccard with the probe", f"{r.jaccard:.3f}", border=True)
        c[1].metric("Bits apart from the probe (SimHash)", f"{r.hamming} of 64", border=True)
        c[2].metric("Words not in the probe's page", f"{r.words_changed_right}", border=True)
        st.caption(
            f"The crawler's verdict: {page.reason}. Both texts are shown lower-cased and "
            "without the words of their own URL, as the crawler compares them."
        )
        lcol, rcol = st.columns(2)
        with lcol:
            st.markdown(f"**The probe's answer** · {html.escape(probe.title) or 'untitled'}")
            st.markdown(diff_html(r.left), unsafe_allow_html=True)
        with rcol:
            st.markdown(f"**This page** · {html.escape(text.title) or 'untitled'}")
            st.markdown(diff_html(r.right), unsafe_allow_html=True)
    else:
        st.caption(f"The crawler's verdict: {page.reason}.")
        st.markdown(f"**{html.escape(text.title) or 'untitled'}**")
        st.markdown(diff_html([DiffSegment("equal", tuple(text.text.split()))]),
                    unsafe_allow_html=True)  # fmt: skip


# ---------------------------------------------------------------------- stored pages


def pages_tab(session: CrawlSession) -> None:
    """Every page this crawl stored, each linked to its stored copy (the cached view)."""
    st.markdown(
        "Every page whose answer the crawler stored in its WARC files — originals, near- "
        "and exact duplicates, soft 404s — each with its **stored copy**: the API serves "
        "the WARC record at `/search/cached` with its fetch date, scripts removed and "
        "links leading to the other stored copies. The `*.sandbox.test` addresses themselves "
        "exist **only inside the sandbox web** (the crawler resolves them from the sandbox's "
        "name table): a browser cannot open them.",
        help=term_help("WARC"),
    )
    try:
        urls = fetched_pages(session.out_dir)
    except Exception as exc:  # noqa: BLE001 - a damaged crawl file is a message
        st.error(f"This crawl's stored pages cannot be read: {exc}")
        return
    if not urls:
        st.caption("No page stored (yet).")
        return
    if stored_copy_url(session, urls[0]) is None:
        st.caption(
            f"This crawl is outside {crawls_root()}, so the API cannot name it: only the "
            "crawl the search index was built from has stored copies there."
        )
    hosts = sorted({short_host(u.split("://", 1)[-1].split("/", 1)[0]) for u in urls})
    host = st.selectbox(
        f"{plural(len(urls), 'page')} stored on {plural(len(hosts), 'host')}",
        ["every host", *hosts],
        key="pages-host",
    )
    shown = [u for u in urls if host == "every host" or f"//{host}:" in u or f"//{host}/" in u]
    st.dataframe(
        pd.DataFrame(
            [{"Page": short_url(u), "Stored copy": stored_copy_url(session, u)} for u in shown]
        ),
        hide_index=True,
        key="pages-table",
        column_config={"Stored copy": COPY_COLUMN},
    )


# ---------------------------------------------------------------------- search index


#: A progress line of ``lookup index``: ``  <stage>   42.0%  1,234/2,938``.
INDEX_PROGRESS = re.compile(r"^\s+(?P<stage>\S.*?)\s+(?P<pct>\d+(?:\.\d+)?)%\s+(?P<count>\S+)$")


def build_index(out_dir: Path) -> None:
    """``lookup index CRAWL_DIR`` into the data directory, its progress shown as it goes."""
    argv = [sys.executable, "-m", "lookup.cli", "index", str(out_dir)]
    argv += ["--data-dir", str(data_dir())]
    with st.status("Building the search index …", expanded=True) as status:
        bar = st.progress(0.0, text="starting `lookup index` …")
        lines: list[str] = []
        try:
            with subprocess.Popen(
                argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1
            ) as proc:
                for line in proc.stdout or ():
                    m = INDEX_PROGRESS.match(line.rstrip())
                    if m:
                        pct = min(100.0, float(m.group("pct")))
                        bar.progress(pct / 100.0, text=f"{m.group('stage')}: {m.group('count')}")
                    elif line.strip():
                        lines.append(line.rstrip())
                ok = proc.wait() == 0
        except OSError as exc:
            ok, lines = False, [f"indexing failed: {exc}"]
        text = "\n".join(lines if ok else lines[-8:]).strip()
        if ok:
            bar.progress(1.0, text="done")
        status.update(
            label="Indexing finished" if ok else "Indexing failed",
            state="complete" if ok else "error",
            expanded=False,
        )
    st.session_state[INDEX_RESULT] = (str(out_dir), ok, text)


def ask_search_api(query: str) -> str:
    try:
        with api_client() as client:
            resp = client.get("/search", params={"q": query, "limit": 3})
    except httpx.HTTPError:
        return f"The API at {api_url()} is not running; start it to search the new index."
    if resp.status_code != 200:
        return f"`GET /search` answered HTTP {resp.status_code} at {api_url()}."
    try:
        body = resp.json()
        total = body.get("estimatedTotal", 0)
        titles = [r.get("title") or r.get("url") for r in body.get("results", [])]
    except (ValueError, AttributeError):
        return "`GET /search` did not answer JSON."
    top = "; ".join(f"“{t}”" for t in titles[:3])
    found = plural(int(total), "page")
    return f"`GET /search?q={query}` at {api_url()} now finds about {found}: {top}"


def search_tab(session: CrawlSession, running: bool) -> None:
    st.markdown(
        f"The crawl's `events.jsonl` (one `PageFetched` event per new or changed page) and "
        f"WARC files feed the search engine: `lookup index {session.out_dir}` builds its "
        f"sharded index into the data directory ({data_dir()}), where the API's `/search` "
        "and the Search page find it. Duplicates and noindex pages are not in it.",
        help=term_help("WARC"),
    )
    if st.button(
        "Build search index from this crawl",
        key="build-index",
        type="primary",
        icon=":material/manage_search:",
        disabled=running,
    ):
        build_index(session.out_dir)
    if running:
        st.caption("Wait for the crawl to finish (or stop it) first.")
    result = st.session_state.get(INDEX_RESULT)
    if result and result[0] == str(session.out_dir):
        _, ok, text = result
        if ok:
            st.success("Search index built.", icon=":material/check_circle:")
            st.code(text, language=None)
            st.markdown(ask_search_api("module"))
            search_page = next((p for p in PAGES if p.url_path == "search"), None)
            if search_page is not None:
                st.page_link(
                    search_page.script, label="Open the Search page", icon=search_page.icon
                )
        else:
            st.error(f"The index was not built:\n\n```\n{text}\n```")


# -------------------------------------------------------------------------------- page

#: The tabs under a crawl, and the key holding the open one.
CRAWL_TABS = [
    ":material/timeline: Politeness timeline", ":material/content_copy: Duplicates",
    ":material/search_off: Soft 404s", ":material/smart_toy: robots.txt",
    ":material/block: Traps", ":material/inventory_2: Stored pages",
    ":material/manage_search: Search index", ":material/tune: Controls & host health",
]  # fmt: skip
CRAWL_TAB = "crawl-tab"

st.title("Web crawler")
_hosts = len(current_sandbox().hosts)
st.markdown(
    f"Crawl a **local web of {_hosts or 'a dozen'} hosts** built to misbehave like the real "
    "one — mirrors and "
    "print views, http and https copies, pages differing only by a timestamp or an advert, "
    "an infinite calendar, faceted navigation, session ids, soft 404s, robots.txt that "
    "fails, slow and rate-limiting hosts — and watch the crawler stay **polite** (one "
    "request per host at a time, with a pause), **deduplicate** what it has seen and "
    "**cut** the traps."
)
show_notice()
sandbox = sandbox_panel()
crawl_form(sandbox)
fleet_panel(sandbox)
session = choose_crawl()
if session is not None:
    was_running = session.running
    st.fragment(run_every=1.0 if was_running else None)(live_panel)(session, was_running)
    try:
        snapshot = session.snapshot()
    except FileNotFoundError:
        snapshot = None
    except Exception as exc:  # noqa: BLE001 - a damaged crawl file is a message
        st.error(f"This crawl's state cannot be read: {exc}")
        snapshot = None
    if snapshot is not None:
        in_root = session.out_dir.resolve().parent == crawls_root().resolve()
        tab_bodies = [
            lambda: politeness_tab(session, snapshot),
            lambda: dedup_tab(session, snapshot),
            lambda: soft404_tab(session, snapshot),
            lambda: robots_tab(session, snapshot),
            lambda: traps_tab(session, snapshot),
            lambda: pages_tab(session),
            lambda: search_tab(session, was_running),
            lambda: controls_tab(
                session.out_dir, session.out_dir.name if in_root else None, was_running
            ),
        ]
        # Only the open tab runs and is drawn: all eight at once took seconds after a crawl.
        for tab, body in zip(st.tabs(CRAWL_TABS, key=CRAWL_TAB, on_change="rerun"), tab_bodies,
                             strict=True):  # fmt: skip
            if tab.open:
                with tab:
                    body()
