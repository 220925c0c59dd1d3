"""The search page's results: each hit as a card (where it lives, its title linked to the
stored copy, the snippet with the matched words marked), the answer at a glance, the
spelling suggestion, the pager — and, under each card, why it ranks (:mod:`searchexplain`).

Nothing the API sends becomes markup unchecked: :func:`snippet_html` lets only ``<mark>``
through and :func:`safe_href` only http(s) links.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

import streamlit as st
from common import api_url, plural
from searchexplain import composition_chart, explain_panel

QUERY = "search.query"
PAGE = "search.page"

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


def _md(text: str) -> str:
    """``text`` with Markdown's marks escaped (a typed ``*`` stays a star)."""
    return "".join("\\" + c if c in "\\`*_{}[]<>()#+-.!|~^" else c for c in text)


def corrections_line(body: dict[str, Any]) -> str | None:
    """ "Showing results for …": the query with the words typo tolerance corrected in bold."""
    query = str(body.get("query") or "")
    fixes = [c for c in body.get("corrections") or () if isinstance(c, dict)]
    spans = []
    for c in fixes:
        at, typed = c.get("position"), str(c.get("from") or "")
        if isinstance(at, int) and typed and query[at : at + len(typed)] == typed:
            spans.append((at, at + len(typed), str(c.get("to") or typed)))
    if not spans:
        return None
    out, last = [], 0
    for start, end, to in sorted(spans):
        out += [_md(query[last:start]), f"**{_md(to)}**"]
        last = end
    out.append(_md(query[last:]))
    shown = "".join(out)
    if any(c.get("typedFound") for c in fixes):  # the words as typed found pages too
        return f"Also showing results for {shown} (a correction weighs less than a typed word)."
    return f"Showing results for {shown}."


def expansions_caption(body: dict[str, Any]) -> str | None:
    """What each ``prefix*`` and ``word~`` became, and whether the expansion limit cut it."""
    parts = []
    for e in body.get("expansions") or ():
        if not isinstance(e, dict):
            continue
        cut = f", cut at the limit of {e.get('limit')}" if e.get("truncated") else ""
        parts.append(f"`{e.get('text')}` → {e.get('terms')} of {e.get('matching')} terms{cut}")
    return "Expanded: " + "; ".join(parts) + "." if parts else None


def synonyms_caption(body: dict[str, Any]) -> str | None:
    """What the synonym table added to the query (``js`` also searched as ``javascript``)."""
    uses = [u for u in body.get("synonyms") or () if isinstance(u, dict) and u.get("synonyms")]
    if not uses:
        return None
    parts = [
        f"**{u.get('term', '')}** also as {', '.join(f'*{w}*' for w in u['synonyms'])}"
        for u in uses
    ]
    return (
        "Synonyms applied: "
        + "; ".join(parts)
        + " (weighted below the words as typed, so exact matches rank first)."
    )


def syntax_caret(query: str, body: Any) -> str | None:
    """The query with a caret under the character a syntax error names (a code block)."""
    if not isinstance(body, dict) or not isinstance(body.get("position"), int):
        return None
    return f"{query}\n{' ' * body['position']}^ {body.get('message', '')}"


def _page_step(step: int) -> None:
    st.session_state[PAGE] = max(1, int(st.session_state.get(PAGE, 1)) + step)


def ms_text(value: float) -> str:
    return f"{value:.1f} ms" if value < 100 else f"{value:,.0f} ms"


def summary(body: dict[str, Any]) -> None:
    """The answer at a glance, and a warning when some shards were left out."""
    fanout = body.get("fanout") or {}
    answered, queried = int(body.get("shardsAnswered", 0)), int(body.get("shardsQueried", 0))
    total = int(body.get("estimatedTotal", 0))
    cols = st.columns(5)
    bound = body.get("totalRelation") == "gte"  # counted up to trackTotalHits, then pruned
    cols[0].metric("Results", f"{'at least' if bound else 'about'} {total:,}", border=True)
    cols[1].metric("Took", ms_text(float(body.get("tookMs", 0.0))), border=True)
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


def show_results(
    body: dict[str, Any],
    limit: int,
    after_card: Callable[[dict[str, Any], int], None] | None = None,
) -> None:
    """The result cards with their explain panels, the pager and the score composition;
    ``after_card(item, rank)`` adds to a card (the search page's "more from this site")."""
    results = body.get("results") or []
    fanout = body.get("fanout") or {}
    total = int(body.get("estimatedTotal", 0))
    did_you_mean(body)
    fixed = corrections_line(body)
    if fixed:
        st.markdown(fixed)
    for caption in (synonyms_caption(body), expansions_caption(body)):
        if caption:
            st.caption(caption)
    notice = body.get("notice") or {}
    if not results and notice.get("message"):
        st.info(f"Nothing searched: {notice['message']}.", icon=":material/info:")
        return
    if not results:
        terms = fanout.get("terms") or []
        if terms and all(str(t).startswith("gram:") for t in terms):  # stop words, paired
            st.info(
                f"No page has “{body.get('query', '')}” word after word (a query of stop "
                "words only is searched as a phrase).",
                icon=":material/search_off:",
            )
        elif not terms:
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
        if after_card is not None:
            after_card(item, rank)
        if item.get("explain"):
            explain_panel(item["explain"], key=f"explain-{rank}")
    pager(total, limit)
    composition_chart(results, page, limit)


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
