"""The crawler page's *robots.txt* and *Traps* tabs: what the crawler refused to fetch, and why —
each host's robots.txt decision, the URLs it kept the crawler from, and the URLs a trap
rule cut before they were queued.
"""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
import streamlit as st
from crawlruns import ROW_PX

from lookup.crawler.session import CrawlSession, CrawlSnapshot
from lookup.crawler.state import CrawlStateError, crawl_state_url, open_crawl_reader

# ------------------------------------------------------------------- robots and traps


#: What became of each sitemap or feed the crawler read, by outcome.
SITEMAP_RESULTS = {
    "sitemap": "read",
    "sitemap-unparseable": "could not be read: counted, its links unknown",
    "sitemap-absent": "none there (robots.txt named none, /sitemap.xml tried)",
}


def _robots_decision(state: str | None, reason: str | None) -> str:
    """What the crawler does on a host, as its robots.txt answer decided."""
    if state == "disallow-all" and (reason or "").startswith("unparseable"):
        return "crawl nothing: answered, but not a rules file (fail closed)"
    return {
        "rules": "follow its rules",
        "allow-all": "no rules: crawl freely",
        "disallow-all": "crawl nothing (fail closed)",
    }.get(state or "", "not read yet")


def sitemap_table(rows: list[dict[str, str]]) -> None:
    """The sitemaps and feeds this crawl read, and the ones it could not."""
    bad = sum(r["Result"].startswith("could not") for r in rows)
    st.markdown(f"**Sitemaps and feeds ({len(rows):,}; {bad:,} could not be read)**")
    if rows:
        st.dataframe(pd.DataFrame(rows), hide_index=True, key="sitemap-table")
    else:
        st.caption("None read yet.")


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
                "Decision": _robots_decision(h.robots_state, h.robots_reason),
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
            sitemaps = [
                {"Sitemap or feed": u.url, "Result": label, "Why": u.reason or ""}
                for outcome, label in SITEMAP_RESULTS.items()
                for u in reader.urls_with_outcome(outcome)
            ]
    except (FileNotFoundError, CrawlStateError) as exc:
        st.error(f"This crawl's robots decisions cannot be read: {exc}")
        return
    sitemap_table(sitemaps)
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
