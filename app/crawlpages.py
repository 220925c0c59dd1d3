"""The crawler page's *Stored pages* and *Search index* tabs: every page a crawl stored (each
linked to its stored copy on the API) and the search index built from them with
``lookup index``.
"""

from __future__ import annotations

from pathlib import Path

import httpx
import pandas as pd
import streamlit as st
from common import api_client, api_url, data_dir, labs, plural, term_help
from crawlruns import COPY_COLUMN, INDEX_RESULT, crawls_root, short_url, stored_copy_url
from crawltimeline import short_host
from navigation import PAGES

from lookup.crawler.inspector import fetched_pages
from lookup.crawler.session import CrawlSession
from lookup.labs import IndexBuildLab
from lookup.labs.indexbuild import progress_of

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


def build_index(out_dir: Path) -> None:
    """``lookup index CRAWL_DIR`` into the data directory (a lab of the dashboard's
    supervisor, so a page reloaded mid-build follows it again), its progress shown as it
    goes."""
    key = str(out_dir)
    lab = labs().get("index-build", key)
    if not (isinstance(lab, IndexBuildLab) and lab.alive()):
        lab = labs().start("index-build", key, out_dir=out_dir, data_dir=data_dir())
    assert isinstance(lab, IndexBuildLab)
    with st.status("Building the search index …", expanded=True) as status:
        bar = st.progress(0.0, text="starting `lookup index` …")
        lines: list[str] = []
        for line in lab.follow():
            progress = progress_of(line)
            if progress is not None:
                bar.progress(progress.fraction, text=f"{progress.stage}: {progress.count}")
            elif line.strip():
                lines.append(line.rstrip())
        ok = lab.returncode == 0
        if lab.failure:
            lines = [lab.failure]
        text = "\n".join(lines if ok else lines[-8:]).strip()
        if ok:
            bar.progress(1.0, text="done")
        status.update(
            label="Indexing finished" if ok else "Indexing failed",
            state="complete" if ok else "error",
            expanded=False,
        )
    labs().stop("index-build", key)  # it has ended: nothing left to find
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
    building = labs().get("index-build", str(session.out_dir))
    if st.button(
        "Build search index from this crawl",
        key="build-index",
        type="primary",
        icon=":material/manage_search:",
        disabled=running,
    ) or (isinstance(building, IndexBuildLab) and building.alive()):
        build_index(session.out_dir)  # or follow the one running, after a reload
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
