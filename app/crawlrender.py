"""The crawler page's *Rendering* tab and the crawl form's render budget: the two-tier crawl.

Every page gets the cheap fetch; a page whose fetched HTML is a script's empty shell is
rendered in headless Chromium while the crawl's render budget lasts. The tab shows the
share rendered, what the detector flagged and what became of it, each rendered page with
what the render added, and every request the renders made — each in its host's turn,
like any fetch.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st

from lookup.crawler.output import read_events
from lookup.crawler.session import CrawlSession
from lookup.crawler.state import CrawlStateError, crawl_state_url, open_crawl_reader

#: The crawl form's field, and the largest budget a dashboard crawl may spend.
RENDER_BUDGET = "crawl-render-budget"
MAX_RENDER_BUDGET = 200
ROW_PX = 35  # a table row's height, as on the crawler page's other tabs


def render_budget_field() -> None:
    """The render budget in the crawl form (0: the cheap fetch only)."""
    st.number_input(
        "Render budget (pages)",
        min_value=0,
        max_value=MAX_RENDER_BUDGET,
        value=0,
        step=5,
        key=RENDER_BUDGET,
        help="Pages built by their scripts (an empty app root, little text) are rendered in "
        "headless Chromium — about ten times the cost of a fetch — up to this many per crawl. "
        "0: every page is kept as fetched.",
    )


def _report(out_dir: Path) -> dict[str, Any] | None:
    try:
        data = json.loads((out_dir / "report.json").read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def render_tab(session: CrawlSession) -> None:
    """What the render tier did in this crawl."""
    st.markdown(
        "**Two-tier crawl.** Every page gets the cheap fetch. A page with scripts, little "
        "visible text and an empty app root (or mostly inline script) is queued for a "
        "**headless-browser render**, while the crawl's render budget lasts. The render's "
        "own requests go through the crawler's fetcher in the host's turn: only its host, "
        "only what robots.txt allows."
    )
    out = session.out_dir
    report = _report(out)
    try:
        events = read_events(out / "events.jsonl")
        with open_crawl_reader(crawl_state_url(out)) as reader:
            requests = [f for f in reader.fetch_log() if f.kind == "render"]
    except (OSError, CrawlStateError, ValueError) as exc:
        st.error(f"This crawl's renders cannot be read: {exc}")
        return
    rendered = [ev for ev in events if ev.get("type") == "PageFetched" and ev.get("rendered")]
    fetched = sum(1 for ev in events if ev.get("type") == "PageFetched")
    render = (report or {}).get("render") or {}
    a, b, c, d = st.columns(4)
    a.metric("Pages rendered", len(rendered))
    b.metric(
        "Share rendered",
        f"{report['rendered_share']:.0%}" if report else f"{len(rendered) / max(1, fetched):.0%}",
        help="Rendered pages among the pages fetched.",
    )
    c.metric("Render requests", len(requests), help="Requests the renders made to their hosts.")
    d.metric("Render budget", render.get("budget", "—") if report else "—")
    if report is not None and not render.get("budget"):
        st.info("This crawl had no render budget: every page was kept as fetched.",
                icon=":material/info:")  # fmt: skip
    if render.get("unavailable_reason"):
        st.warning(
            f"Rendering was unavailable ({render['unavailable_reason']}): "
            f"{render.get('unavailable', 0)} candidate pages were kept as fetched.",
            icon=":material/warning:",
        )
    if render:
        flagged = pd.DataFrame(
            [
                {"What": label, "Pages": int(render.get(key, 0))}
                for key, label in (
                    ("candidates", "flagged by the detector"),
                    ("rendered", "rendered"),
                    ("over-budget", "kept as fetched: budget spent"),
                    ("failed", "kept as fetched: the render failed"),
                    ("unavailable", "kept as fetched: no browser"),
                    ("refused-other-host", "requests refused: another host"),
                    ("refused-robots", "requests refused: robots.txt"),
                    ("refused-method", "requests refused: not GET"),
                    ("cached", "scripts and styles reused from an earlier render"),
                )
            ]
        )
        st.dataframe(flagged, hide_index=True, key="render-counts",
                     height=ROW_PX * (len(flagged) + 1) + 3)  # fmt: skip
    st.markdown("**Rendered pages**")
    if not rendered:
        st.caption("No page rendered in this crawl.")
    else:
        pages = pd.DataFrame(
            [
                {
                    "URL": ev["url"],
                    "Title": ev.get("title", ""),
                    "Links found": ev.get("outLinks", 0),
                }
                for ev in rendered
            ]  # fmt: skip
        )
        st.dataframe(pages, hide_index=True, key="render-pages",
                     height=ROW_PX * (min(len(pages), 12) + 1) + 3)  # fmt: skip
    st.markdown("**The renders' own requests** (each in its host's turn)")
    if not requests:
        st.caption("No render request.")
        return
    log = pd.DataFrame(
        [
            {
                "URL": f.url,
                "Status": f.status,
                "Took (s)": round(f.took, 3),
                "Pause after (s)": round(f.delay or 0.0, 3),
            }
            for f in requests
        ]
    )
    st.dataframe(log, hide_index=True, key="render-requests",
                 height=ROW_PX * (min(len(log), 12) + 1) + 3)  # fmt: skip
