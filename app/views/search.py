"""Web search: ranked results over the crawled pages, why each one ranks, and the shard fan-out.

Everything goes over HTTP to the API at ``$LOOKUP_API_URL``: ``GET /search`` with
``explain=true&trace=true`` for the results, each score's breakdown and the per-shard
fan-out; ``GET /search/shards`` for the coordinator's counters; the fault switches are
``PUT /search/shards/{n}/fault`` and ``PUT /search/coordinator``. Fault switches live in
the API process, so they stay set (for every client) until healed here.
"""

from __future__ import annotations

import html
import statistics
import time
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

import httpx
import pandas as pd
import plotly.graph_objects as go
import streamlit as st
from chartstyle import log_axis
from common import (
    PROBLEM_LABELS,
    Answer,
    admin_headers,
    api_url,
    data_dir,
    show_api_status,
    term_help,
)
from common import call as api_call
from navigation import PAGES

QUERY = "search.query"
PAGE = "search.page"
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
EXAMPLES = ["regular expression", "socket timeout", "parse arguments", "heap queue", "zip file"]

PRIMARY_COLOR = "#1f6feb"
HEDGE_COLOR = "#8250df"
MISSED_COLOR = "#cf222e"
TERM_COLORS = ["#1f6feb", "#54aeff", "#0969da", "#80ccff", "#218bff", "#b6e3ff"]
LINK_COLOR = "#bf8700"
FRESH_COLOR = "#1a7f37"

CSS = """
<style>
.lw-result { margin: 0.2rem 0 0.1rem 0; }
.lw-url { font-size: 0.82rem; color: #1a7f37; overflow-wrap: anywhere; }
.lw-title { font-size: 1.15rem; font-weight: 600; text-decoration: none; color: #0b57d0; }
.lw-title:hover { text-decoration: underline; }
.lw-snippet { margin-top: 0.15rem; line-height: 1.5; color: inherit; opacity: 0.92; }
.lw-snippet mark { background: #fff3b0; color: #1f2328; font-weight: 600;
  padding: 0 0.1em; border-radius: 3px; }
.lw-meta { font-size: 0.78rem; opacity: 0.65; margin-top: 0.1rem; }
.lw-meta a, .lw-url a { color: inherit; }
.lw-where { color: #57606a; }
</style>
"""


# ---------------------------------------------------------------------------- the API


def call(method: str, path: str, timeout: float = 5.0, **kwargs: Any) -> Answer:
    """One API call with this page's longer default timeout (the fan-out can be slow)."""
    return api_call(method, path, timeout=timeout, **kwargs)


def _search_timeout(deadline_ms: float | None) -> float:
    return 5.0 + (deadline_ms or 250.0) / 1000.0


# ---------------------------------------------------------------------- safe rendering


def snippet_html(snippet: str) -> str:
    """The snippet with its ``<em>`` matches as ``<mark>`` and every other character escaped.

    The API already escapes page text, but the page does not rely on it: each piece
    between the markers is unescaped once and escaped again, so text is shown exactly
    once-escaped whatever the API did, and nothing but ``<mark>`` can become markup.
    """
    out: list[str] = []
    rest = snippet
    while rest:
        start = rest.find("<em>")
        if start < 0:
            out.append(html.escape(html.unescape(rest)))
            break
        end = rest.find("</em>", start + 4)
        if end < 0:
            out.append(html.escape(html.unescape(rest)))
            break
        out.append(html.escape(html.unescape(rest[:start])))
        out.append("<mark>" + html.escape(html.unescape(rest[start + 4 : end])) + "</mark>")
        rest = rest[end + 5 :]
    return "".join(out)


def safe_href(url: str) -> str | None:
    """``url`` escaped for an ``href`` if it is http(s); None for anything else."""
    try:
        scheme = urlsplit(url).scheme.lower()
    except ValueError:
        return None
    return html.escape(url, quote=True) if scheme in ("http", "https") else None


def display_url(url: str) -> str:
    """``host › path`` the way result pages show where a hit lives."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return url
    path = parts.path.strip("/").replace("/", " › ")
    return f"{parts.netloc} › {path}" if path else parts.netloc


def plural(n: int, one: str, many: str | None = None) -> str:
    """``1 page``, ``2 pages``, ``1,200 pages``."""
    return f"{n:,} {one if n == 1 else (many or one + 's')}"


def sandbox_only(url: str) -> bool:
    """Whether ``url`` names a sandbox web host, which only the crawler can resolve."""
    try:
        return (urlsplit(url).hostname or "").lower().endswith(".sandbox.test")
    except ValueError:
        return False


def cached_href(item: dict[str, Any]) -> str | None:
    """The stored copy of a result on the API (``cachedUrl``), escaped for an ``href``."""
    path = str(item.get("cachedUrl") or "")
    if not path.startswith("/search/cached?"):
        return None
    return html.escape(api_url() + path, quote=True)


def result_card(rank: int, item: dict[str, Any]) -> str:
    """One result as HTML: where it lives, its title linked to the stored copy, the snippet.

    The title opens the page's **stored copy** (the crawler's WARC record, served by the
    API over 127.0.0.1): the sandbox web's ``*.sandbox.test`` names resolve only inside
    the crawler, so a browser could not open the original. A page outside the sandbox
    keeps a second link to its original address.
    """
    url = str(item.get("url", ""))
    title = html.escape(str(item.get("title") or url))
    cached = cached_href(item)
    original = safe_href(url)
    target = cached or (None if sandbox_only(url) else original)
    heading = (
        f'<a class="lw-title" href="{target}" target="_blank" rel="noopener noreferrer">{title}</a>'
        if target
        else f'<span class="lw-title">{title}</span>'
    )
    crawled = str(item.get("crawledAt") or "")[:10]
    explain = item.get("explain") or {}
    where = f" · shard {explain['shard']}" if "shard" in explain else ""
    tier = " · real-time tier" if explain.get("tier") == "realtime" else ""
    if sandbox_only(url):
        place = (
            ' <span class="lw-where" title="a *.sandbox.test name resolves only inside the '
            'sandbox web, for the crawler; the title opens the stored copy">'
            "· only inside the sandbox web</span>"
        )
    elif original and cached:
        place = (
            f' · <a class="lw-orig" href="{original}" target="_blank" '
            'rel="noopener noreferrer">original ↗</a>'
        )
    else:
        place = ""
    copy = (
        f' · <a class="lw-copy" href="{cached}" target="_blank" rel="noopener noreferrer">'
        "stored copy</a>"
        if cached
        else ""
    )
    return (
        f'<div class="lw-result"><div class="lw-url">{html.escape(display_url(url))}{place}</div>'
        f"{heading}"
        f'<div class="lw-snippet">{snippet_html(str(item.get("snippet") or ""))}</div>'
        f'<div class="lw-meta">#{rank} · score {float(item.get("score", 0.0)):.3f}'
        f" · fetched {html.escape(crawled)}{copy}{where}{tier}</div></div>"
    )


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


def _example() -> None:
    choice = st.session_state.get("search-example")
    if choice:
        st.session_state[QUERY] = choice
        st.session_state["search-q"] = choice
        st.session_state[PAGE] = 1
    st.session_state["search-example"] = None


def _take_suggestion(query: str) -> None:
    st.session_state[QUERY] = query
    st.session_state["search-q"] = query
    st.session_state[PAGE] = 1


def did_you_mean(body: dict[str, Any]) -> None:
    """The spelling suggestion the API offers when a query finds little, as a button."""
    hint = body.get("didYouMean") or {}
    if not hint.get("query"):
        return
    found = plural(int(hint.get("estimatedTotal", 0)), "result")
    st.button(
        f"Did you mean: **{hint['query']}** ({found})?", key="search-did-you-mean",
        on_click=_take_suggestion, args=(str(hint["query"]),), type="tertiary",
        icon=":material/spellcheck:",
    )  # fmt: skip


def syntax_caret(query: str, body: Any) -> str | None:
    """The query with a caret under the character a syntax error names (a code block)."""
    if not isinstance(body, dict) or not isinstance(body.get("position"), int):
        return None
    return f"{query}\n{' ' * body['position']}^ {body.get('message', '')}"


def _page_step(step: int) -> None:
    st.session_state[PAGE] = max(1, int(st.session_state.get(PAGE, 1)) + step)


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


# ------------------------------------------------------------------------------ search


def run_search(query: str, page: int, limit: int, deadline_ms: float | None) -> Answer:
    """``GET /search`` with the explanation and the fan-out trace."""
    params = {"q": query, "page": page, "limit": limit, "explain": "true", "trace": "true"}
    return call("GET", "/search", timeout=_search_timeout(deadline_ms), params=params)


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
        "Operators: `json OR heapq` · `-decoder` or `NOT decoder` · `\"exact phrase\"` · "
        "`(a OR b) c` · `jso*` · `title:heap` · `site:docs.sandbox.test` · "
        "`after:2026-01-01` / `before:` (crawl date)"
    )
    if not st.session_state.get(QUERY):
        st.pills(
            "Try one", EXAMPLES, key="search-example", on_change=_example,
            label_visibility="collapsed",
        )  # fmt: skip


def _ms(value: float) -> str:
    return f"{value:.1f} ms" if value < 100 else f"{value:,.0f} ms"


def summary(body: dict[str, Any]) -> None:
    """The answer at a glance, and a warning when some shards were left out."""
    fanout = body.get("fanout") or {}
    answered, queried = int(body.get("shardsAnswered", 0)), int(body.get("shardsQueried", 0))
    total = int(body.get("estimatedTotal", 0))
    cols = st.columns(5)
    bound = body.get("totalRelation") == "gte"  # counted up to trackTotalHits, then pruned
    cols[0].metric("Results", f"{'at least' if bound else 'about'} {total:,}", border=True)
    cols[1].metric("Took", _ms(float(body.get("tookMs", 0.0))), border=True)
    cols[2].metric("Shards answered", f"{answered} of {queried}", border=True)
    cols[3].metric("Hedges fired", f"{int(fanout.get('hedgesFired', 0))}", border=True)
    mode = {"and": "AND", "or": "OR", "query": "operators"}.get(str(fanout.get("mode")), "—")
    cols[4].metric(
        "Words matched with", mode, border=True,
        help="AND first (pages with every word); if no page has them all, the engine falls "
        "back to OR (pages with any of them). A phrase in double quotes is always required, "
        "word after word, so a query with one never falls back; a query with operators "
        "(OR, NOT, fields …) matches exactly what they say.",
    )  # fmt: skip
    if queried and answered < queried:
        missing = [str(s["shard"]) for s in fanout.get("shards", []) if s.get("missedDeadline")]
        st.warning(
            f"**Partial results:** shard {', '.join(missing) or '?'} did not answer within "
            "the deadline, so its pages are missing from this page and the total is "
            f"extrapolated from the {plural(answered, 'shard')} that answered.",
            icon=":material/running_with_errors:",
        )


def show_results(body: dict[str, Any], limit: int) -> None:
    """The result cards with their explain panels, the pager and the score composition."""
    results = body.get("results") or []
    fanout = body.get("fanout") or {}
    total = int(body.get("estimatedTotal", 0))
    did_you_mean(body)
    if not results:
        terms = fanout.get("terms") or []
        if not terms:
            st.info(
                "Nothing searchable in that query — only stop words or punctuation. "
                "Try a word or two with meaning.",
                icon=":material/info:",
            )
        else:
            st.info(f"No page contains {' or '.join(terms)}.", icon=":material/search_off:")
        return
    page = int(st.session_state.get(PAGE, 1))
    st.html(CSS)
    for i, item in enumerate(results):
        rank = (page - 1) * limit + i + 1
        st.html(result_card(rank, item))
        if item.get("explain"):
            explain_panel(item["explain"], key=f"explain-{rank}")
    pager(total, limit)
    composition_chart(results, page, limit)


def explain_panel(ex: dict[str, Any], key: str) -> None:
    """Each term's idf, tf, length normalisation and contribution; each signal's boost."""
    score = float(ex.get("score", 0.0))
    with st.expander(f"Why this rank — score {score:.3f}", icon=":material/calculate:"):
        terms = ex.get("terms") or []
        rows = [
            {
                "term": t["term"],
                "pages with it (df)": int(t["df"]),
                "idf": round(float(t["idf"]), 4),
                "tf here": int(t["tf"]),
                "length norm": round(float(t["lengthNorm"]), 4),
                "BM25 part": round(float(t["score"]), 4),
            }
            for t in terms
        ]
        st.dataframe(
            pd.DataFrame(rows), hide_index=True, key=f"{key}-terms",
            column_config={"BM25 part": st.column_config.NumberColumn(
                "BM25 part", help=term_help("BM25"))},
        )  # fmt: skip
        k1, b = float(ex.get("k1", 1.2)), float(ex.get("b", 0.75))
        dl, avg = float(ex.get("docLength", 0)), float(ex.get("avgDocLength", 1))
        norm = terms[0]["lengthNorm"] if terms else k1 * (1 - b + b * dl / avg)
        st.caption(
            f"BM25 (Lucene): idf = ln(1 + (N − df + 0.5) / (df + 0.5)) over N = "
            f"{plural(int(ex.get('docs', 0)), 'page')}; length norm = k1·(1 − b + b·|d|/avgdl) = "
            f"{k1:g}·(1 − {b:g} + {b:g}·{dl:.0f}/{avg:.1f}) = {float(norm):.3f} — this page is "
            f"{'longer' if dl > avg else 'shorter'} than average, so each match counts "
            f"{'less' if dl > avg else 'more'}; part = idf · tf / (tf + norm). Terms are the "
            "index's Snowball stems, so “values” and “value” both count as “valu”.",
            help=term_help("BM25"),
        )
        sig = ex.get("signals") or {}
        bm25 = float(ex.get("bm25", 0.0))
        link = float(sig.get("linkBoost", 0.0))
        fresh = float(sig.get("freshBoost", 0.0))
        inlinks = int(float(sig.get("inLinks", 0)))
        verb = "links" if inlinks == 1 else "link"
        learned = ex.get("learned")
        hand = float(learned["handScore"]) if learned else score
        st.markdown(
            f"**BM25 {bm25:.3f}** + in-links {link:+.3f} "
            f"({plural(inlinks, 'page')} of the crawl {verb} here) + freshness "
            f"{fresh:+.3f} (fetched {float(sig.get('ageDays', 0.0)):.0f} days ago) "
            f"= **{hand:.3f}**" + (" (hand-set)" if learned else ""),
            help=term_help("BM25"),
        )
        if learned:
            learned_panel(learned, key)


def learned_panel(learned: dict[str, Any], key: str) -> None:
    """The learned model's score: each ranking feature's contribution (weight × value)."""
    parts = learned.get("contributions") or {}
    st.dataframe(
        pd.DataFrame(
            [{"feature": f, "contribution": round(float(c), 4)} for f, c in parts.items()]
        ),
        hide_index=True,
        key=f"{key}-learned",
    )
    st.caption(
        f"Learned model {learned.get('model')}: the contributions add up to "
        f"{float(learned.get('score', 0.0)):.3f}; the hand-set blend ranked this page "
        f"#{int(learned.get('handRank', 0))}. Train another with `lookup search train`."
    )


def composition_chart(results: list[dict[str, Any]], page: int, limit: int) -> None:
    """One stacked bar per result: what each term and each signal added to its score."""
    rows = [r for r in results if r.get("explain")]
    if not rows:
        return
    with st.expander("Score composition of this page of results", icon=":material/bar_chart:"):
        labels = [
            f"#{(page - 1) * limit + i + 1} {str(r.get('title') or r['url'])[:38]}"
            for i, r in enumerate(rows)
        ]
        fig = go.Figure()
        learned = rows[0]["explain"].get("learned")
        if learned:  # the learned model ordered them: stack its feature contributions
            for feature in learned.get("contributions") or {}:
                fig.add_bar(
                    y=labels,
                    x=[float(r["explain"]["learned"]["contributions"][feature]) for r in rows],
                    name=feature,
                    orientation="h",
                )
            fig.update_layout(
                barmode="relative",
                height=90 + 28 * len(rows),
                margin=dict(l=10, r=10, t=10, b=10),
                yaxis=dict(autorange="reversed"),
                xaxis_title=f"learned score (model {learned.get('model')}): weight × feature",
                legend=dict(orientation="h", y=-0.25),
            )
            st.plotly_chart(fig, key="search-composition")
            return
        terms = [t["term"] for t in rows[0]["explain"].get("terms", [])]
        for j, term in enumerate(terms):
            fig.add_bar(
                y=labels,
                x=[float(r["explain"]["terms"][j]["score"]) for r in rows],
                name=f"“{term}”",
                orientation="h",
                marker_color=TERM_COLORS[j % len(TERM_COLORS)],
            )
        for name, field, color in (
            ("in-links", "linkBoost", LINK_COLOR),
            ("freshness", "freshBoost", FRESH_COLOR),
        ):
            fig.add_bar(
                y=labels,
                x=[float(r["explain"].get("signals", {}).get(field, 0.0)) for r in rows],
                name=name,
                orientation="h",
                marker_color=color,
            )
        fig.update_layout(
            barmode="stack",
            height=90 + 28 * len(rows),
            margin=dict(l=10, r=10, t=10, b=10),
            yaxis=dict(autorange="reversed"),
            xaxis_title="score",
            legend=dict(orientation="h", y=-0.25),
        )
        st.plotly_chart(fig, key="search-composition")


def pager(total: int, limit: int) -> None:
    """Previous / next page buttons (the API caps depth at 1,000 results)."""
    page = int(st.session_state.get(PAGE, 1))
    last = max(1, min((total + limit - 1) // limit, 1000 // limit))
    if last <= 1 and page == 1:
        return
    prev, label, nxt = st.columns([1, 2, 1], vertical_alignment="center")
    prev.button(
        "Previous", key="search-prev", on_click=_page_step, args=(-1,), disabled=page <= 1,
        icon=":material/chevron_left:", width="stretch",
    )  # fmt: skip
    label.markdown(f"<div style='text-align:center'>page {page}</div>", unsafe_allow_html=True)
    nxt.button(
        "Next", key="search-next", on_click=_page_step, args=(1,), disabled=page >= last,
        icon=":material/chevron_right:", width="stretch",
    )  # fmt: skip


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
            with httpx.Client(base_url=api_url(), timeout=_search_timeout(deadline)) as client:
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
            show_results(answer.body, limit)
            st.caption(f"Round trip from the dashboard: {_ms(round_trip)}.")
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


# Streamlit runs a page as ``__main__``; importing the module (the tests do) only defines.
if __name__ == "__main__":
    main()
