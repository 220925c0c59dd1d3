"""Web crawler: crawl the sandbox web, watch politeness live, inspect what was deduplicated.

The page's skeleton: the sandbox web and the form that starts a crawl
(:mod:`crawlruns`), the crawler fleet (:mod:`crawlfleet`), then one crawl — live while it
runs (:mod:`crawlpoliteness`) — and its tabs: the politeness timeline, duplicates and soft
404s (:mod:`crawldedup`), robots.txt and traps (:mod:`crawlrules`), stored pages and the
search index (:mod:`crawlpages`), the controls (:mod:`crawlcontrols`) and the render
tier (:mod:`crawlrender`).

The crawl runs as a child process (``lookup crawl``, via
:class:`lookup.crawler.session.CrawlSession`) writing into ``$LOOKUP_DATA_DIR/crawls``;
this page reads the crawl's own SQLite state while it runs — including the
frontier's own per-host ready times, which the crawler writes twice a second — and
the sandbox web's request log (``$LOOKUP_SANDBOX_URL``, which ``make run`` sets) to
show every request from the server's side. With no sandbox answering, the page
offers to start one.
"""

from __future__ import annotations

import streamlit as st
from common import show_notice
from crawlcontrols import controls_tab
from crawldedup import dedup_tab, soft404_tab
from crawlfleet import fleet_panel
from crawlpages import pages_tab, search_tab
from crawlpoliteness import live_panel, politeness_tab
from crawlrender import render_tab
from crawlrules import robots_tab, traps_tab
from crawlruns import NOTICE, choose_crawl, crawl_form, crawls_root, current_sandbox, sandbox_panel

# -------------------------------------------------------------------------------- page

#: The tabs under a crawl, and the key holding the open one.
CRAWL_TABS = [
    ":material/timeline: Politeness timeline", ":material/content_copy: Duplicates",
    ":material/search_off: Soft 404s", ":material/smart_toy: robots.txt",
    ":material/block: Traps", ":material/inventory_2: Stored pages",
    ":material/manage_search: Search index", ":material/tune: Controls & host health",
    ":material/web: Rendering",
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
show_notice(NOTICE)
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
            lambda: render_tab(session),
        ]
        # Only the open tab runs and is drawn: all of them at once took seconds after a crawl.
        for tab, body in zip(st.tabs(CRAWL_TABS, key=CRAWL_TAB, on_change="rerun"), tab_bodies,
                             strict=True):  # fmt: skip
            if tab.open:
                with tab:
                    body()
