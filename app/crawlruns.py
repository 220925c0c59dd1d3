"""The crawler page's crawls: the sandbox web it may start, the form that starts a crawl, and
which crawl the page shows — and how a crawled page is named and linked (its stored copy).

The crawl runs as a child process (``lookup crawl``, via
:class:`lookup.crawler.session.CrawlSession`) writing into ``$LOOKUP_DATA_DIR/crawls``;
each crawl, and the sandbox web the page may start, is a lab of the dashboard's supervisor
(:mod:`lookup.labs`): kept for as long as the dashboard lives, found again by a reload.
With no sandbox answering at ``$LOOKUP_SANDBOX_URL`` (which ``make run`` sets), the page
offers to start one.
"""

from __future__ import annotations

import threading
from datetime import datetime
from pathlib import Path
from urllib.parse import quote

import pandas as pd
import streamlit as st
from common import api_url, data_dir, labs, term_help
from crawlrender import RENDER_BUDGET, render_budget_field
from crawltimeline import short_host

from lookup.crawler.session import (
    CrawlSession,
    CrawlSettings,
    SandboxProbe,
    list_crawls,
    probe_sandbox,
    sandbox_url,
)
from lookup.labs import CrawlLab, SandboxLab

SELECTED = "crawler.selected"
NOTICE = "crawler.notice"
INDEX_RESULT = "crawler.index_result"
#: The bounds a crawl started from this page must stay within (the machine is shared).
MAX_SECONDS = (5, 120)
MAX_PAGES = (20, 3000)
#: Height of one row of st.dataframe, so a whole table shows without scrolling.
ROW_PX = 35
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


# ----------------------------------------------------------------------------- runtime


#: One crawl at a time per dashboard: the check and the start happen under it.
_START_LOCK = threading.Lock()


def crawl_sessions() -> dict[str, CrawlSession]:
    """The crawls this dashboard started (running or ended), by directory: labs of the
    dashboard's supervisor, stopped when it exits."""
    return {
        lab.key: lab.session
        for lab in labs().labs()
        if isinstance(lab, CrawlLab) and lab.session is not None
    }


def running_crawl() -> CrawlSession | None:
    return next((s for s in crawl_sessions().values() if s.running), None)


@st.cache_data(ttl=3, show_spinner=False)
def cached_probe(url: str) -> SandboxProbe:
    return probe_sandbox(url)


def crawls_root() -> Path:
    return data_dir() / "crawls"


def own_sandbox() -> SandboxLab | None:
    """The sandbox web this page started, while it runs."""
    lab = labs().get("sandbox-web")
    return lab if isinstance(lab, SandboxLab) and lab.alive() else None


def current_sandbox() -> SandboxProbe:
    """The sandbox at ``$LOOKUP_SANDBOX_URL`` if it answers, else the one this page started."""
    probe = cached_probe(sandbox_url())
    if probe.up:
        return probe
    own = own_sandbox()
    if own is not None:
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


# ----------------------------------------------------------------------------- sandbox


def start_own_sandbox() -> None:
    if own_sandbox() is not None:
        return
    try:
        lab = labs().start("sandbox-web", log_path=crawls_root() / "sandbox.log",
                           size="small", crawl_delay=0.25)  # fmt: skip
    except (OSError, RuntimeError, TimeoutError) as exc:
        st.session_state[NOTICE] = ("error", f"The sandbox web did not start: {exc}")
        return
    cached_probe.clear()
    assert isinstance(lab, SandboxLab)
    st.session_state[NOTICE] = ("success", f"Started a small sandbox web at {lab.url}.")


def stop_own_sandbox() -> None:
    labs().stop("sandbox-web")
    cached_probe.clear()


def sandbox_panel() -> SandboxProbe:
    """One status line for the sandbox web, the host list, and the offer to start one."""
    probe = current_sandbox()
    own = own_sandbox()
    with st.container(key="sandbox-status"):
        if probe.up:
            mine = own is not None and probe.url == own.url
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
    with _START_LOCK:
        if running_crawl() is not None:
            st.session_state[NOTICE] = ("warning", "A crawl is already running; wait for it.")
            return
        out = new_crawl_dir()
        try:
            labs().start("crawl", str(out), out_dir=out, probe=probe, settings=settings)
        except (OSError, RuntimeError) as exc:
            st.session_state[NOTICE] = ("error", f"The crawl did not start: {exc}")
            return
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
            render_budget=int(state.get(RENDER_BUDGET, 0)),
        )
    except (KeyError, TypeError, ValueError) as exc:
        state[NOTICE] = ("error", f"These settings do not make a crawl: {exc}")
        return
    start_crawl(probe, settings)


def crawl_form(probe: SandboxProbe) -> None:
    """The bounds and politeness of the next crawl, and the button that starts it."""
    busy = running_crawl() is not None
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
        render_budget_field()
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


def choose_crawl() -> CrawlSession | None:
    """The crawl to show: the one just started, or any earlier one in the data directory."""
    sessions = crawl_sessions()
    root = crawls_root()
    dirs = {str(p): p for p in list_crawls(root)}
    for key, session in sessions.items():
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
    session = sessions.get(key)
    if session is not None:
        return session
    try:
        return CrawlSession.open(key)
    except FileNotFoundError:
        st.warning(f"{key} holds no crawl any more.")
        return None
