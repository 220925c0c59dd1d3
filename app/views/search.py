"""Web search: ranked results over the crawled pages, why each one ranks, and the shard fan-out.

The page's skeleton: the index line, the search box, the results (:mod:`searchresults`,
each one's breakdown in :mod:`searchexplain`) and the shards panel (:mod:`searchshards`).

Everything goes over HTTP to the API at ``$LOOKUP_API_URL``: ``GET /search`` with
``explain=true&trace=true`` for the results, each score's breakdown and the per-shard
fan-out; ``GET /search/shards`` for the coordinator's counters; the fault switches are
``PUT /search/shards/{n}/fault`` and ``PUT /search/coordinator``; the index versions
panel (:mod:`searchversions`) is ``GET /search/versions`` and its rollback button. Fault
switches live in the API process, so they stay set (for every client) until healed here.
"""

from __future__ import annotations

import time
from datetime import datetime
from typing import Any

import streamlit as st
from common import PROBLEM_LABELS, Answer, data_dir, plural, show_api_status, term_help
from navigation import PAGES
from searchcluster import cluster_panel
from searchfacets import clear_filters, facet_panel, filter_bar, more_from_site, search_params
from searchresults import PAGE, QUERY, ms_text, show_results, summary, syntax_caret
from searchshards import (
    NOTICE,
    call,
    fanout_chart,
    load_test,
    search_timeout,
    shard_switches,
    shard_table,
)
from searchversions import versions_panel

EXAMPLES = ["regular expression", "socket timeout", "parse arguments", "heap queue", "zip file"]


# ------------------------------------------------------------------------ not built


def crawler_page() -> Any:
    """The Crawler page's spec if the dashboard has one (it holds the build button)."""
    return next((p for p in PAGES if p.script.endswith("crawler.py")), None)


def show_not_built(answer: Answer) -> None:
    """How to get an index, when the API says there is none yet."""
    with st.container(border=True, key="search-not-built"):
        st.markdown("### :material/database_off: No search index yet")
        st.markdown(
            "The search engine answers from an index built from a crawl: the crawler "
            "fetches pages into WARC files and an event log, and the indexer turns them "
            "into immutable, sharded segments. Build one either way:",
            help=term_help("WARC"),
        )
        spec = crawler_page()
        st.markdown(
            "**1. From the dashboard:** crawl the sandbox web on the Crawler page, then press "
            "*Build search index from this crawl*."
        )
        if spec is not None:
            st.page_link(spec.script, label="Open the Crawler page", icon=spec.icon)
        st.markdown("**2. From a shell**, next to the running API:")
        st.code(
            "lookup sandbox --port 8600 &                 # the local test web\n"
            "lookup crawl --sandbox 8600 --out crawl/ --max-pages 500\n"
            f"lookup index crawl/ --data-dir {data_dir()}",
            language="bash",
        )
        st.caption(
            f"The API noticed: {answer.message()}. It picks a newly published index up by "
            "itself within a second — search again once the build has finished."
        )
        st.button("Check again", key="search-check", icon=":material/refresh:")


# -------------------------------------------------------------------------- callbacks


def _submit() -> None:
    st.session_state[QUERY] = str(st.session_state.get("search-q") or "").strip()
    st.session_state[PAGE] = 1
    clear_filters()  # a new query starts unfiltered


def _example() -> None:
    choice = st.session_state.get("search-example")
    if choice:
        st.session_state[QUERY] = choice
        st.session_state["search-q"] = choice
        st.session_state[PAGE] = 1
    st.session_state["search-example"] = None


# ------------------------------------------------------------------------------ search


def run_search(query: str, page: int, limit: int, deadline_ms: float | None) -> Answer:
    """``GET /search`` with the explanation, the fan-out trace, the facets and the filters
    clicked (:mod:`searchfacets`)."""
    params = {"q": query, "page": page, "limit": limit, "explain": "true", "trace": "true"}
    params.update(search_params())
    return call("GET", "/search", timeout=search_timeout(deadline_ms), params=params)


def search_box() -> None:
    """The query form (words, results per page) and, before the first query, a few to try."""
    with st.form("search-form", border=False):
        box, per_page, button = st.columns([7, 1.3, 1.3], vertical_alignment="bottom")
        box.text_input(
            "Search the crawled pages",
            key="search-q",
            placeholder='e.g. regular expression — or a phrase in quotes: "standard library"',
            max_chars=500,
        )
        per_page.selectbox("Per page", [10, 20, 50], key="search-limit")
        button.form_submit_button(
            "Search", type="primary", icon=":material/search:", on_click=_submit,
            key="search-submit", width="stretch",
        )  # fmt: skip
    st.caption(
        'Operators: `json OR heapq` · `-decoder` or `NOT decoder` · `"exact phrase"` · '
        "`(a OR b) c` · `jso*` · `title:heap` · `site:docs.sandbox.test` · "
        "`after:2026-01-01` / `before:` (crawl date) · `lang:ja` · `inurl:tutorial` · "
        "`intitle:heap` · `filetype:txt` · `json^2` (boost) · `pickle~1` (fuzzy) · "
        '`"heap queue"~3` (words up to 3 moves apart)'
    )
    if not st.session_state.get(QUERY):
        st.pills(
            "Try one", EXAMPLES, key="search-example", on_change=_example,
            label_visibility="collapsed",
        )  # fmt: skip


def index_line(status: dict[str, Any]) -> None:
    """What is live: version, shards, documents, the crawl it came from, the real-time tier."""
    built = status.get("builtAt")
    when = ""
    if isinstance(built, int | float) and built > 0:
        when = f" · built {datetime.fromtimestamp(built).strftime('%Y-%m-%d %H:%M')}"
    rt = status.get("realtime") or {}
    fresh = f" · {int(rt.get('docs', 0)):,} in the real-time tier" if rt else ""
    st.caption(
        f":material/inventory_2: Index version {status.get('version')} · "
        f"{plural(int(status.get('liveDocs', 0)), 'page')} in "
        f"{plural(int(status.get('shards') or 0), 'shard')}{fresh}{when}"
        f" · from `{status.get('crawlDir', '?')}`"
    )


# ------------------------------------------------------------------------------ page


def main() -> None:
    """The page."""
    st.title("Web search")
    st.markdown(
        "Ranked keyword search over the pages the crawler fetched: **BM25** over an inverted "
        "index that is **sharded by document**, so every query fans out to every shard. A "
        "query is as slow as its slowest shard — so each shard has a replica to **hedge** "
        "to, and a **deadline** after which it is left out.",
        help=term_help("BM25"),
    )
    health = show_api_status()
    if not health.up:
        st.warning(
            "Search needs the API: start it with `lookup serve` (or `make run`) and reload.",
            icon=":material/cloud_off:",
        )
        return
    status = call("GET", "/search/status")
    if status.error == "NOT_BUILT":
        show_not_built(status)
        return
    if status.error in PROBLEM_LABELS:
        return  # the status line above names the damaged file and the rebuild
    if status.status == 404:
        st.error(
            "This API has no search engine mounted (`GET /search/status` is 404).",
            icon=":material/error:",
        )
        return
    if not status.ok or not isinstance(status.body, dict):
        st.error(f"The search status is unavailable: {status.message()}", icon=":material/error:")
        return
    index_line(status.body)
    # Conditional parts live in containers that are always there, so the blocks after
    # them keep their place from run to run (and the shard panel's tabs stay selected).
    notice = st.session_state.pop(NOTICE, None)
    with st.container():
        if notice:
            st.error(notice, icon=":material/error:")

    query = str(st.session_state.get(QUERY) or "")
    limit = int(st.session_state.get("search-limit", 10))
    before = call("GET", "/search/shards")
    deadline = before.body.get("deadlineMs") if before.ok and before.body else None
    answer = None
    started = time.perf_counter()
    if query:
        answer = run_search(query, int(st.session_state.get(PAGE, 1)), limit, deadline)
    round_trip = (time.perf_counter() - started) * 1000.0
    shards = call("GET", "/search/shards")
    shard_body = shards.body if shards.ok and isinstance(shards.body, dict) else {}

    search_box()
    with st.container():
        if answer is not None and answer.ok:
            summary(answer.body)
    left, right = st.columns([11, 9], gap="large")
    with left:
        if answer is not None:
            filter_bar()  # the filters in force stay removable whatever the answer
        if answer is None:
            st.caption(
                "Type a few words; results show the matched words highlighted, and each one "
                "opens its score's breakdown."
            )
        elif not answer.ok:
            if answer.status == 400:
                st.warning(f"That query cannot be run: {answer.message()}", icon=":material/info:")
                if caret := syntax_caret(query, answer.body):
                    st.code(caret, language=None)
            else:
                st.error(f"The search failed: {answer.message()}", icon=":material/error:")
        else:
            facet_panel(answer.body)
            show_results(answer.body, limit, after_card=more_from_site)
            st.caption(f"Round trip from the dashboard: {ms_text(round_trip)}.")
    with right:
        st.subheader("Shards")
        fanout = answer.body.get("fanout") if answer is not None and answer.ok else None
        with st.container():
            if fanout and fanout.get("shards"):
                st.markdown(
                    f"**Fan-out of this query:** {fanout.get('shardsAnswered')} of "
                    f"{fanout.get('shardsQueried')} shards answered, "
                    f"{plural(int(fanout.get('hedgesFired', 0)), 'hedge')} fired."
                )
                fanout_chart(fanout, shard_body)
                st.caption(
                    ":blue[■] the primary answered · :violet[■] the hedge to the other replica "
                    "won · :red[■] missed the deadline. A hedge fires "
                    "when a shard has not answered by about its p95 latency."
                )
            else:
                st.caption("Run a query to see how long each shard took and who answered.")
        if shard_body:
            shard_switches(shard_body)
            stats, load = st.tabs(["Shard statistics", "Load test"])
            with stats:
                shard_table(shard_body)
            with load:
                load_test(query, shard_body)
        else:
            st.error(f"Shard status unavailable: {shards.message()}", icon=":material/error:")
    versions_panel()  # kept and rejected versions, the canary queries, rollback
    cluster_panel(query)  # the shards as processes: stop or kill one, watch the hedges


# Streamlit runs a page as ``__main__``; importing the module (the tests do) only defines.
if __name__ == "__main__":
    main()
