"""Typeahead: a search box that suggests on every keystroke, and the machinery behind it.

The box is ``app/searchbox.py`` (a text input and its dropdown in one Components-v2
element with inline JavaScript, so nothing comes from a CDN): it reports its text as the
person types, debounced in the browser, and a suggestion chosen with the mouse or the
arrow keys and Enter is submitted as a search. Everything else is a client of the HTTP
API at ``$LOOKUP_API_URL``: ``GET /v1/suggest`` for the answers, ``/v1/typeahead/trace``
for the trie walk, ``POST /v1/searches`` for a chosen suggestion and the trending replay,
and the snapshot and blocklist endpoints for swap, rollback and blocking.

This session plays the design's *client* (:class:`lookup.typeahead.client.SuggestClient`):
it debounces (in the browser), keeps a local prefix cache honouring the answer's
``Cache-Control: max-age``, and reuses an answer marked ``complete`` by filtering it for
longer prefixes instead of asking again. The counters show what that saves: keystrokes
typed against requests actually sent.
"""

from __future__ import annotations

import html
from typing import Any

import httpx
import pandas as pd
import plotly.graph_objects as go
import streamlit as st
from common import (
    LOOKUP,
    Answer,
    api_client,
    api_url,
    cached_health,
    data_dir,
    probe_health,
    show_api_status,
)
from common import call as api_call
from searchbox import box_state, searchbox
from snapshotpanel import PageHooks, snapshots_panel
from suggestmine import recent_controls, search_request, usage_tab, with_recent
from typeaheadbackends import backends_panel
from typomarks import lookup_marks, matches_panel, tag_items

from lookup.kit.admin import server_admin_token
from lookup.typeahead import normalize_prefix
from lookup.typeahead.client import Shown, SuggestClient

MARKETS = {"en-IN": "English · en-IN", "hi-IN": "Hindi · hi-IN"}
PLACEHOLDER = {"en-IN": "Start typing: ip, weather in, flights to …", "hi-IN": "kya, मौसम, सोना …"}
HINT = {
    "en-IN": "Try `ip`, then keep typing `hone 16 p` and backspace: once an answer is "
    "`complete` the box stops asking. `iphnoe` (a learned typo) still finds *iphone*.",
    "hi-IN": "Try `kya` and `kyaa` (several Latin spellings, one suggestion), or Devanagari "
    "`क्ष`: one syllable, three code points — see them under the walk.",
}
#: A query the generated log never holds, so the replay shows a true newcomer.
BURST_TERMS = {"en-IN": "ind vs aus final live", "hi-IN": "भारत बनाम ऑस्ट्रेलिया फाइनल"}
#: Searches per simulated minute in the replayed burst (a ramp, like a real spike).
BURST_RAMP = (15, 40, 90, 160, 250, 330)
BURST_USERS = 60
MAX_CHARS = 100
BUILD_COMMANDS = (
    f"{LOOKUP} datasets build typeahead   # the query log (~20 s)\n"
    f"{LOOKUP} typeahead build            # a validated snapshot per market"
)

CLIENT = "typeahead.client"
TRACES = "typeahead.traces"
NOTICE = "typeahead.notice"
BURST = "typeahead.burst"
BOX = "typeahead-q"
SEARCHED = "typeahead.searched"
SUBMITTED = "typeahead.submitted-seq"

CSS = """
<style>
.ta-walk { display: flex; flex-wrap: wrap; align-items: center; gap: .3rem;
  margin: .3rem 0 .5rem 0; }
.ta-node { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: .9rem;
  border: 1px solid #c7d2fe; background: #eef2ff; color: #1e3a8a; border-radius: 6px;
  padding: .1rem .45rem; }
.ta-node.ta-root { border-color: #d1d5db; background: #f3f4f6; color: #374151; }
.ta-node.ta-miss { border-color: #fecaca; background: #fef2f2; color: #991b1b; }
.ta-node small { color: #6b7280; margin-left: .25rem; }
.ta-arrow { color: #9ca3af; }
.ta-cp { font-family: ui-monospace, monospace; font-size: .8rem; color: #6b7280; }
</style>
"""


# ------------------------------------------------------------------------------ HTTP


@st.cache_resource(show_spinner=False)
def keepalive_client(base_url: str) -> httpx.Client:
    """One pooled client per API address: a browser keeps its connection open too."""
    return api_client(base_url)


def call(method: str, path: str, client: httpx.Client | None = None, **kwargs: Any) -> Answer:
    """One API call over ``client``, else this session's kept-alive connection; calls that
    change something carry the admin token (swap, rollback, blocking, the replay)."""
    if method != "GET":
        admin = {"Authorization": f"Bearer {server_admin_token(data_dir())}"}
        kwargs["headers"] = {**admin, **kwargs.get("headers", {})}
    return api_call(method, path, client=client or keepalive_client(api_url()), **kwargs)


def fetch_suggest(raw: str, market: str) -> Answer:
    """``GET /v1/suggest`` exactly as a browser would send it."""
    return call("GET", "/v1/suggest", params={"q": raw, "market": market, "limit": 10})


def client() -> SuggestClient:
    """This browser tab's client (kept in the session)."""
    if CLIENT not in st.session_state:
        st.session_state[CLIENT] = SuggestClient()
    return st.session_state[CLIENT]


def drop_answers(market: str | None = None) -> None:
    """After a swap, a block or a burst: forget cached answers and traces, ask afresh."""
    client().forget(market)
    st.session_state.pop(TRACES, None)
    trending_set.clear()


# ----------------------------------------------------------------------- the search box


def dropdown(shown: Shown, trending: set[str]) -> tuple[list[dict[str, Any]], str]:
    """The suggestions as a search engine's dropdown (the typed part plain, the rest bold)
    and what the list says when it has none."""
    if shown.source == "error":
        return [], ""
    if not shown.prefix.strip():
        return [], "Type to see suggestions."
    if not shown.suggestions:
        return [], f"No suggestion starts with “{shown.prefix}”."
    p = shown.prefix
    # A suggestion reached through another spelling (a learned typo, a transliteration)
    # does not start with the typed text: all of it is shown bold.
    return [
        {"s": s, "typed": p if s.startswith(p) else "", "hot": s in trending}
        for s in shown.suggestions
    ], ""


def submit_search(q: str, market: str, before: Shown | None = None) -> None:
    """``POST /v1/searches``: the chosen query is searched — trending's window counts it,
    and the next build folds it in (with this device's token, and whether it was picked
    from ``before``, the list on screen: app/suggestmine.py). Remembered for the line
    under the box."""
    answer = call("POST", "/v1/searches", **search_request(q, market, before))
    if answer.ok and isinstance(answer.body, dict):
        st.session_state[SEARCHED] = ("success", answer.body.get("q", q), market)
    else:
        st.session_state[SEARCHED] = ("error", f"{q}: {answer.message()}", market)


def searched_line(market: str) -> None:
    """What happened to the last search submitted from the box."""
    last = st.session_state.get(SEARCHED)
    if not last or last[2] != market:
        return
    kind, text, _ = last
    if kind == "success":
        st.success(
            f"Searched for **{text}** — recorded by `POST /v1/searches`: it counts in "
            "trending's ten-minute window (a query trends once many users search it, see "
            f"the Trending tab) and in the next `{LOOKUP} typeahead build`.",
            icon=":material/search:",
        )
    else:
        st.error(f"The search was not recorded — {text}", icon=":material/error:")


def source_line(shown: Shown) -> str:
    """One sentence saying where the answer on screen came from."""
    version = f" · snapshot `{shown.version}`" if shown.version else ""
    done = " · `complete`: every completion is listed" if shown.complete else ""
    if shown.source == "server":
        return (
            f":blue-badge[:material/cloud_download: server] answered in {shown.ms:.1f} ms"
            f"{version}{done}"
        )
    if shown.source == "cache":
        return f":green-badge[:material/memory: local cache] no request sent{version}{done}"
    if shown.source == "complete":
        return (
            f":green-badge[:material/filter_alt: complete reuse] filtered the complete answer "
            f"for `{shown.via}` locally, no request sent{version}"
        )
    return ""


def not_built_message(market: str, detail: str = "") -> None:
    """The fix when a market has no snapshot yet."""
    st.info(
        f"No typeahead snapshot for **{market}** yet{': ' + detail if detail else ''}. "
        "Build the query log and the snapshots — the API picks them up within a second:",
        icon=":material/construction:",
    )
    st.code(BUILD_COMMANDS, language="bash")


@st.fragment(run_every=2)
def wait_for_snapshots() -> None:
    """Poll ``/healthz`` while nothing is built; redraw the page once the API serves."""
    system = (probe_health(api_url()).systems or {}).get("typeahead")
    if isinstance(system, dict) and system.get("status") != "NOT_BUILT":
        cached_health.clear()
        st.rerun(scope="app")
    st.caption("Watching the API: this page fills in by itself once a snapshot is served.")


@st.cache_data(ttl=2, show_spinner=False)
def trending_set(base_url: str, market: str) -> set[str]:
    """The market's trending terms now (to badge them in the dropdown); kept two seconds."""
    answer = call("GET", "/v1/typeahead/trending", params={"market": market})
    if not answer.ok or not isinstance(answer.body, dict):
        return set()
    return {t["q"] for t in answer.body.get("terms", [])}


@st.fragment
def search_panel(market: str, debounce: int) -> None:
    """The box, the dropdown, the counters and the trie walk; reruns alone on each keystroke."""
    c = client()
    before = c.shown  # the list on screen before this rerun: what a pick was made from
    box, walk = st.columns([1.1, 1], gap="large")
    with box, st.container(border=True, key="ta-search"):
        st.markdown("**Search**")
        state = box_state(BOX)
        value = state.text
        picked = state.seq > st.session_state.get(SUBMITTED, 0) and bool(state.submitted.strip())
        if picked and value == state.submitted:
            changed = value != c.last_value
            c.last_value = value  # a choice fills the box: no keystrokes typed
        else:
            changed = c.typed(value)
        shown = c.shown
        if changed or shown is None or shown.market != market or shown.raw != value:
            shown = c.resolve(value, market, fetch_suggest, typed=changed)
            c.note_local(shown)
        items, empty = dropdown(shown, trending_set(api_url(), market))
        marks = lookup_marks(shown.prefix, market, shown.version) if items else {}
        items = tag_items(items, marks)  # corrected suggestions, marked (app/typomarks.py)
        items = with_recent(items, shown, market)  # this device's recent first, infix marked
        searchbox(
            BOX,
            items,
            empty=empty,
            placeholder=PLACEHOLDER[market],
            debounce=debounce,
            max_chars=MAX_CHARS,
        )
        if picked:
            st.session_state[SUBMITTED] = state.seq
            submit_search(state.submitted, market, before)
        if shown.source == "error":
            if shown.code == "NOT_BUILT":
                not_built_message(market)
            else:
                st.warning(f"No suggestions: {shown.problem}", icon=":material/warning:")
        else:
            line = source_line(shown)
            if line:
                st.markdown(line)
            matches_panel(shown.suggestions, marks)
        searched_line(market)
        recent_controls(market)
        counters(c)
    with walk, st.container(border=True, key="ta-walk"):
        trie_walk(shown)


def counters(c: SuggestClient) -> None:
    """Keystrokes typed against requests sent: what debounce, the cache and reuse saved."""
    k, r, local = st.columns(3)
    k.metric(
        "Keystrokes typed",
        f"{c.keystrokes:,}",
        border=True,
        help="Characters typed or deleted, worked out from the changes between the texts "
        "the box reported.",
    )
    r.metric(
        "Requests sent", f"{c.requests:,}", border=True, help="GET /v1/suggest calls this tab made."
    )
    local.metric(
        "Answered locally",
        f"{c.answered_locally:,}",
        border=True,
        help="Answers from the local prefix cache or filtered from a complete answer.",
    )
    typed_requests = c.requests - c.refreshes
    saved = max(0.0, 1 - typed_requests / c.keystrokes) if c.keystrokes else 0.0
    debounced = max(0, c.keystrokes - c.reports)
    refreshes = (
        f" ({c.refreshes:,} of the requests were refreshes after a market switch, swap or block)"
        if c.refreshes
        else ""
    )
    st.caption(
        f"Debounce merged {debounced:,} keystrokes into the values the box reported · "
        f"{c.from_cache:,} from the local cache · {c.from_complete:,} by filtering a complete "
        f"answer · **{saved:.0%}** of keystrokes never became a request{refreshes}."
    )
    with st.expander("What the client did, keystroke by keystroke"):
        if c.history:
            st.dataframe(pd.DataFrame(list(reversed(c.history))), hide_index=True, key="ta-history")
        else:
            st.caption("Nothing yet.")
        if st.button("Reset counters and cache", key="ta-reset", icon=":material/restart_alt:"):
            st.session_state[CLIENT] = SuggestClient(last_value=c.last_value)
            st.rerun(scope="fragment")


def trace(prefix: str, market: str, version: str | None) -> Answer:
    """``/v1/typeahead/trace`` for a prefix, remembered per snapshot version."""
    cache = st.session_state.setdefault(TRACES, {})
    key = (market, prefix, version)
    if version is not None and key in cache:
        return cache[key]
    answer = call("GET", "/v1/typeahead/trace", params={"q": prefix, "market": market})
    if answer.ok and version is not None:
        if len(cache) > 200:
            cache.clear()
        cache[key] = answer
    return answer


def trie_walk(shown: Shown) -> None:
    """The server's walk for the current prefix: nodes, time, the list stored at the node."""
    st.markdown("**The trie walk on the server**")
    if not shown.prefix.strip() or shown.source == "error":
        st.caption(
            "Each keystroke walks one node per edge of the radix trie — as many steps as the "
            "prefix is long, however many queries sit below — then reads the top 10 stored "
            "at that node. Type to see the walk."
        )
        return
    answer = trace(shown.prefix, shown.market, shown.version)
    if not answer.ok or not isinstance(answer.body, dict):
        st.warning(f"The trace is unavailable: {answer.message()}", icon=":material/warning:")
        return
    t = answer.body
    a, b, c = st.columns(3)
    a.metric(
        "Nodes visited",
        t["nodesVisited"],
        border=True,
        help="Root included; a radix trie collapses single-child chains into one edge.",
    )
    b.metric(
        "Walk",
        f"{t['walkMicros']:.1f} µs",
        border=True,
        help="Finding the node, averaged over 200 walks on the server.",
    )
    c.metric(
        "Whole lookup",
        f"{t['lookupMicros']:.1f} µs",
        border=True,
        help="Walk + stored top 10 + hot blocklist + trending blend, in process.",
    )
    chips = []
    for i, step in enumerate(t["path"]):
        if i == 0:
            chips.append('<span class="ta-node ta-root">root</span>')
            continue
        label = html.escape(step["label"]).replace(" ", "␣")
        chips.append(
            '<span class="ta-arrow">→</span>'
            f'<span class="ta-node">{label}<small>{step["probes"]}</small></span>'
        )
    if not t["found"]:
        chips.append(
            '<span class="ta-arrow">→</span><span class="ta-node ta-miss">no such edge</span>'
        )
    st.markdown('<div class="ta-walk">' + "".join(chips) + "</div>", unsafe_allow_html=True)
    st.markdown(
        f'<div class="ta-cp">{len(t["codePoints"])} code points: '
        f"{html.escape(' '.join(t['codePoints']))}</div>",
        unsafe_allow_html=True,
    )
    st.caption(
        "Each box is one node, labelled with its edge; the small number is the binary-search "
        f"steps among its siblings. Snapshot `{t['version']}`."
    )
    if not t["found"]:
        st.markdown(
            f"No query starts with `{t['q']}`: the walk stops early and the answer is empty "
            "(and `complete`)."
        )
        return
    stored = t["stored"]
    st.markdown(
        f"**Stored at this node:** {len(stored)} suggestion ids"
        + (" — the whole subtree, so `complete`" if t["complete"] else "")
    )
    st.dataframe(
        pd.DataFrame({"#": range(1, len(stored) + 1), "stored suggestion": stored}),
        hide_index=True,
        height=35 * (len(stored) + 1) + 3,
        key="ta-stored",
    )


# ------------------------------------------------------------------------------ trending


def replay_burst(term: str, market: str, watch: str) -> dict[str, Any]:
    """POST a ramp of searches for ``term`` minute by minute; after each simulated minute
    ask for suggestions of ``watch`` and the trending set. Returns what was seen."""
    rows = []
    appeared_at = None
    before = call("GET", "/v1/suggest", params={"q": watch, "market": market})
    bar = st.progress(0.0, text="Replaying the burst …")
    sent = 0
    with api_client() as http:
        for minute, n in enumerate(BURST_RAMP, start=1):
            for i in range(n):
                # The admin token makes the replay a trusted relay: it names each
                # simulated user and the address they search from (one network each).
                u = (sent + i) % BURST_USERS
                answer = call(
                    "POST",
                    "/v1/searches",
                    http,
                    json={
                        "q": term,
                        "market": market,
                        "userId": f"replay-{u}",
                        "clientAddress": f"198.18.{u}.7",
                    },
                )
                if not answer.ok:
                    bar.empty()
                    return {"error": answer.message(), "term": term, "market": market}
            sent += n
            suggest = call("GET", "/v1/suggest", http, params={"q": watch, "market": market})
            trending = call("GET", "/v1/typeahead/trending", http, params={"market": market})
            terms = trending.body.get("terms", []) if isinstance(trending.body, dict) else []
            mine = next((t for t in terms if t["q"] == normalize_prefix(term).strip()), None)
            shown = suggest.body.get("suggestions", []) if isinstance(suggest.body, dict) else []
            visible = normalize_prefix(term).strip() in shown
            if visible and appeared_at is None:
                appeared_at = minute
            rows.append(
                {
                    "minute": minute,
                    "searches": n,
                    "in window": mine["count"] if mine else None,
                    "trending": mine is not None,
                    "boost": mine["boost"] if mine else 0.0,
                    "suggested": visible,
                    "rank": shown.index(normalize_prefix(term).strip()) + 1 if visible else None,
                }
            )
            bar.progress(minute / len(BURST_RAMP), text=f"Simulated minute {minute}: {n} searches")
        after = call("GET", "/v1/suggest", http, params={"q": watch, "market": market})
        policy = (trending.body or {}).get("policy") if isinstance(trending.body, dict) else None
    bar.empty()

    def lst(a: Answer) -> list[str]:
        return a.body.get("suggestions", []) if isinstance(a.body, dict) else []

    return {
        "term": normalize_prefix(term).strip(),
        "market": market,
        "watch": watch,
        "rows": rows,
        "appeared_at": appeared_at,
        "before": lst(before),
        "after": lst(after),
        "policy": policy,
        "sent": sent,
    }


def burst_chart(result: dict[str, Any]) -> go.Figure:
    """Searches per simulated minute, the window's running count and the trending floor."""
    rows = result["rows"]
    minutes = [r["minute"] for r in rows]
    window, total = [], 0
    for r in rows:
        total += r["searches"]
        window.append(total)
    floor = (result.get("policy") or {}).get("floor", 500)
    fig = go.Figure()
    fig.add_bar(
        x=minutes,
        y=[r["searches"] for r in rows],
        name="searches that minute",
        marker_color="#93c5fd",
    )
    fig.add_scatter(
        x=minutes,
        y=window,
        name="searches replayed so far (all inside the 10-minute window)",
        mode="lines+markers",
        line=dict(color="#1d4ed8", width=3),
    )
    fig.add_hline(
        y=floor,
        line_dash="dash",
        line_color="#dc2626",
        annotation_text=f"trending floor: {floor} searches in the window",
        annotation_position="top left",
    )
    if result.get("appeared_at"):
        m = result["appeared_at"]
        fig.add_vline(
            x=m,
            line_color="#16a34a",
            line_width=2,
            annotation_text=f"suggested from minute {m}",
            annotation_position="top right",
        )
    fig.update_layout(
        height=300,
        margin=dict(l=10, r=10, t=30, b=10),
        legend=dict(orientation="h", y=-0.25),
        xaxis_title="simulated minute",
        yaxis_title="searches",
        bargap=0.3,
    )
    return fig


@st.fragment
def trending_tab(market: str) -> None:
    """The speed layer: replay a burst of searches and watch a newcomer get suggested.

    A fragment: the replay reruns this tab alone and leaves the search box as it is (its
    cached answers are dropped, so its next keystroke asks the server afresh).
    """
    st.markdown(
        "A newcomer cannot win on the batch path: 50,000 searches today score 50,000, below "
        "an old favourite at ≈106,000, and the next build is hours away. So every submitted "
        "search (`POST /v1/searches`) also feeds a sliding ten-minute window; a query far "
        "above its normal rate, above an absolute floor and from enough distinct users is "
        "blended into the answers by score + boost — within the same minute."
    )
    left, right = st.columns([1, 1.2], gap="large")
    with left:
        term = st.text_input(
            "A new query to make trend",
            value=BURST_TERMS[market],
            key=f"ta-burst-term-{market}",
            max_chars=MAX_CHARS,
        )
        norm = normalize_prefix(term).strip()
        watch = norm[:3]
        st.caption(
            f"Replays {sum(BURST_RAMP):,} searches from {BURST_USERS} users as a ramp over "
            f"{len(BURST_RAMP)} simulated minutes ({', '.join(map(str, BURST_RAMP))}), then "
            f"watches the suggestions for **{watch or '…'}**. The replay takes a few seconds; "
            "the server's window sees it all as the last few minutes."
        )
        if st.button(
            "Replay a burst of searches",
            key="ta-burst",
            type="primary",
            icon=":material/local_fire_department:",
            disabled=len(norm) < 3,
        ):
            st.session_state[BURST] = replay_burst(term, market, watch)
            drop_answers(market)  # the box asks afresh on the next keystroke
    with right:
        answer = call("GET", "/v1/typeahead/trending", params={"market": market})
        terms = answer.body.get("terms", []) if answer.ok and isinstance(answer.body, dict) else []
        st.markdown(f"**Trending now in {market}** ({len(terms)})")
        if terms:
            st.dataframe(
                pd.DataFrame(terms).rename(
                    columns={
                        "q": "query",
                        "count": "searches in window",
                        "users": "users",
                        "baseline": "normal for this hour",
                        "boost": "boost",
                    }
                ),
                hide_index=True,
                key="ta-trending-table",
            )
        elif answer.ok:
            st.caption("Nothing is trending: no query is far above its normal rate right now.")
        else:
            st.caption(f"Unavailable: {answer.message()}")
        policy = (answer.body or {}).get("policy") if isinstance(answer.body, dict) else None
        if policy:
            st.caption(
                f"Trending = at least {policy['floor']} searches in {policy['window_s'] // 60} "
                f"minutes, from at least {policy['min_users']} users, at least "
                f"{policy['ratio']:g}× the query's normal rate for the hour; never blocked or "
                "private-looking. The boost (the excess projected to a day) fades as the "
                "window moves on."
            )
    result = st.session_state.get(BURST)
    if not result or result.get("market") != market:
        return
    if "error" in result:
        st.error(f"The replay stopped: {result['error']}", icon=":material/error:")
        return
    st.divider()
    chart, lists = st.columns([1.4, 1], gap="large")
    with chart:
        if result["appeared_at"]:
            st.success(
                f"**{result['term']}** was suggested for **{result['watch']}** from simulated "
                f"minute {result['appeared_at']} — no rebuild, no new snapshot.",
                icon=":material/trending_up:",
            )
        else:
            st.warning(
                f"**{result['term']}** was not suggested for **{result['watch']}**: it did not "
                "pass the trending checks (blocked, private-looking, or already popular).",
                icon=":material/trending_flat:",
            )
        st.plotly_chart(burst_chart(result), key="ta-burst-chart")
    with lists:
        before, after = result["before"], result["after"]
        st.markdown(f"**Suggestions for `{result['watch']}`**")
        width = max(len(before), len(after))
        st.dataframe(
            pd.DataFrame(
                {
                    "before the burst": before + [""] * (width - len(before)),
                    "after the burst": after + [""] * (width - len(after)),
                }
            ),
            hide_index=True,
            height=35 * (width + 1) + 3,
            key="ta-burst-lists",
        )


# ----------------------------------------------------------------------------- snapshots


def tab_state(intro: str, path: str, unavailable: str) -> dict[str, Any] | None:
    """A management tab's opening: its explanation, then its state from ``GET path``
    (None, with a warning saying why, when the API cannot give it)."""
    st.markdown(intro)
    answer = call("GET", path)
    if not answer.ok or not isinstance(answer.body, dict):
        st.warning(f"{unavailable}: {answer.message()}", icon=":material/warning:")
        return None
    return answer.body


def finish(kind: str, text: str, market: str | None) -> None:
    """After a build, swap, rollback or canary: keep a notice, forget cached answers, rerun."""
    st.session_state[NOTICE] = (kind, text)
    drop_answers(market)
    st.rerun()


def snapshots_tab(market: str) -> None:
    """Stored versions of the market's snapshot: build, validated swap, rollback, canary."""
    body = tab_state(
        "Each build publishes an immutable, versioned snapshot. Swapping one in loads it "
        "beside the current one, **validates** it (structure and checksum, size within "
        "tolerance, probe prefixes still sensible, nothing blocked or private) and replaces "
        "one pointer; lookups in flight finish on the trie they started on. The previous "
        "snapshot stays loaded for a one-step rollback.",
        "/v1/typeahead/snapshots",
        "Snapshot versions unavailable",
    )
    if body is not None:
        snapshots_panel(market, body, PageHooks(call, finish, not_built_message))


# ----------------------------------------------------------------------------- blocklist


def blocklist_tab(market: str) -> None:
    """The hot blocklist: a phrase added here disappears from every answer at once."""
    body = tab_state(
        "Some removals cannot wait for the next build — a legal order, a tragedy. The suggest "
        "service checks every candidate against a small **hot blocklist**, matched at word "
        "boundaries (`fake aadhaar` blocks *buy fake aadhaar card*). It takes effect on the "
        "very next request; where a blocked suggestion leaves a stored top 10 short, the "
        "server reads further down the subtree to fill it.",
        "/v1/typeahead/blocklist",
        "The blocklist is unavailable",
    )
    if body is None:
        return
    shown = client().shown
    current = shown.suggestions if shown and shown.market == market else []
    left, right = st.columns([1, 1], gap="large")
    with left, st.form("ta-block-form", border=True):
        st.markdown("**Block a phrase**")
        term = st.text_input(
            "Phrase",
            key="ta-block-term",
            max_chars=MAX_CHARS,
            placeholder=current[0] if current else "a phrase to block",
            help="Pick one of the suggestions showing in the box to watch it disappear.",
        )
        submitted = st.form_submit_button(
            "Block now", type="primary", icon=":material/block:", key="ta-block-submit"
        )
    if submitted:
        block(term, market, shown)
    with right:
        hot = body.get("terms", [])
        st.markdown(f"**Hot blocklist** ({len(hot)} · version {body.get('version')})")
        if not hot:
            st.caption("Empty: only the built-in policy list below applies.")
        for t in hot:
            row = st.columns([4, 1], vertical_alignment="center")
            row[0].markdown(f"`{t}`")
            if row[1].button("Unblock", key=f"ta-unblock-{t}", icon=":material/undo:"):
                out = call("DELETE", "/v1/typeahead/blocklist", params={"term": t})
                st.session_state[NOTICE] = (
                    ("success", f"Unblocked `{t}`: it may be suggested again.")
                    if out.ok
                    else ("error", f"Could not unblock `{t}`: {out.message()}")
                )
                drop_answers()
                st.rerun()
        builtin = body.get("builtin", [])
        st.caption(
            "Built-in policy list (every build and every request): "
            + ", ".join(f"`{b}`" for b in builtin)
        )


def block(term: str, market: str, shown: Shown | None) -> None:
    """Block ``term`` and show what left the answer for the current prefix."""
    if not term.strip():
        st.session_state[NOTICE] = ("error", "Type a phrase to block.")
        st.rerun()
    prefix = shown.raw if shown and shown.market == market and shown.prefix.strip() else term[:2]
    before = fetch_suggest(prefix, market)
    out = call("POST", "/v1/typeahead/blocklist", json={"terms": [term]})
    if not out.ok:
        st.session_state[NOTICE] = ("error", f"Not blocked: {out.message()}")
        st.rerun()
    after = fetch_suggest(prefix, market)
    old = before.body.get("suggestions", []) if isinstance(before.body, dict) else []
    new = after.body.get("suggestions", []) if isinstance(after.body, dict) else []
    gone = [s for s in old if s not in new]
    stored = ", ".join(f"`{t}`" for t in out.body.get("added", [])) or f"`{term}`"
    if gone:
        lost = ", ".join(f"~~{s}~~" for s in gone)
        msg = (
            f"Blocked {stored}. The answer for **{prefix.strip()}** lost {lost} on the next "
            "request."
        )
    else:
        msg = f"Blocked {stored}. Nothing in the answer for **{prefix.strip()}** matched it."
    st.session_state[NOTICE] = ("success", msg)
    drop_answers()
    st.rerun()


# ------------------------------------------------------------------------------- the page

st.title("Typeahead")
st.markdown(
    "Suggestions on **every keystroke**, from a trie built offline with the **top 10 stored at "
    "every node** — so a keystroke costs a walk as long as the prefix, not a ranking of "
    "everything below it. Type below; the counters show how the client (debounce, a local "
    "prefix cache, reuse of `complete` answers) keeps most keystrokes from ever reaching "
    "the server."
)
st.html(CSS)
health = show_api_status()
if not health.up:
    st.warning(
        "The typeahead needs the API. Start it (and build the data if needed) with:",
        icon=":material/cloud_off:",
    )
    st.code(f"make run\n# or, by hand:\n{BUILD_COMMANDS}\n{LOOKUP} serve", language="bash")
    st.stop()
system = (health.systems or {}).get("typeahead")
if not isinstance(system, dict):
    st.warning(
        f"The API at {health.url} does not serve the typeahead. Restart it with `make run`.",
        icon=":material/warning:",
    )
    st.stop()
if system.get("status") == "NOT_BUILT":
    not_built_message("any market", "the API is up but has nothing to serve")
    cached_health.clear()
    wait_for_snapshots()
    st.stop()

top = st.columns([1.2, 1, 2], vertical_alignment="bottom")
market = top[0].segmented_control(
    "Market",
    list(MARKETS),
    format_func=MARKETS.get,
    default="en-IN",
    key="ta-market",
    required=True,
)
market = market or "en-IN"
debounce = top[1].slider(
    "Debounce (ms)",
    0,
    400,
    100,
    step=25,
    key="ta-debounce",
    help="The box reports its text only after typing pauses this long; 0 reports every keystroke.",
)
top[2].caption(HINT[market])
notice = st.session_state.pop(NOTICE, None)
if notice:
    kind, text = notice
    show, icon = {
        "success": (st.success, ":material/check_circle:"),
        "info": (st.info, ":material/info:"),
    }.get(kind, (st.error, ":material/error:"))
    show(text, icon=icon)

search_panel(market, debounce)

trending, snapshots, blocklist, usage, backends = st.tabs(
    [":material/trending_up: Trending", ":material/layers: Snapshots", ":material/block: Blocklist",
     ":material/insights: Usage", ":material/dns: Backends"]
)  # fmt: skip
with trending:
    trending_tab(market)
with snapshots:
    snapshots_tab(market)
with blocklist:
    blocklist_tab(market)
with usage:
    usage_tab(market)
with backends:
    backends_panel(system, call)
