"""Home: the hub — what the workbench is, each system's live status, next step and picture
(its read path and write path), and the one idea behind them all."""

from __future__ import annotations

from typing import Any

import streamlit as st
from common import GLOSSARY, LOOKUP, PROBLEM_LABELS, ApiHealth, show_api_status

from lookup import capacity

st.title("Lookup Workbench")
st.markdown(
    "Four systems that answer in milliseconds — a **URL shortener**, **typeahead**, "
    "**proximity search** and a **web crawler with its search engine** — each built for "
    "real and explained with its numbers. One idea runs through all of them: **reads vastly "
    "outnumber writes, so decide the answer in advance.**"
)
st.caption(
    "The workbench follows five short design write-ups — how to build a URL shortener, a "
    "typeahead, proximity search and a web crawler with its search engine, and the "
    "building blocks they share (unique ids, rate limiters, caches). The pages call them "
    "**the design notes**; their figures are the *design scale* below."
)
health = show_api_status()

st.header("The four systems")
short_plan = capacity.shortener()
typeahead_plan = capacity.typeahead()
proximity_plan = capacity.proximity()
crawler_plan = capacity.crawler()
q = capacity.format_quantity
SYSTEMS = [
    (
        ":material/link: URL shortener",
        "Turns a long web address into a short one like `sh.example/aZ3k9Qx` and sends "
        "everyone who clicks it to the right place, instantly, with click statistics for "
        "the owner.",
        "**Key:** the short code. **Answer:** the long address.",
        f"At design scale: {q(short_plan.peak_reads_per_s, '/s')} redirects at peak "
        f"against {q(short_plan.peak_writes_per_s, '/s')} new links; keys are "
        f"{short_plan.key_length} characters so that the key space stays nearly empty.",
    ),
    (
        ":material/keyboard: Typeahead",
        "Suggests what you are probably looking for while you type, letter by letter, "
        "from what millions of people searched before — trending and safe.",
        "**Key:** the prefix typed so far. **Answer:** the ten best completions.",
        f"At design scale: every keystroke counts, "
        f"{q(typeahead_plan.origin_peak_per_s, '/s')} lookups at peak reach the servers, "
        f"and the whole {q(typeahead_plan.total_bytes, 'B')} index fits in one machine's "
        "memory.",
    ),
    (
        ":material/location_on: Proximity search",
        "Finds the places near you — restaurants within two kilometres, the nearest "
        "airport — and pages through them on a map.",
        "**Key:** the map cell you are in. **Answer:** the places in that cell.",
        f"At design scale: {q(proximity_plan.peak_search_rate_per_s, '/s')} searches at "
        f"peak over a {q(proximity_plan.index_bytes, 'B')} location index, about "
        f"{q(proximity_plan.reads_per_write_at_peak, '')} reads for every write.",
    ),
    (
        ":material/travel_explore: Web crawler and search",
        "Visits web pages politely, one host at a time, skipping duplicates and traps, "
        "and builds the index that a search box answers from. It is the one system that "
        "builds an index instead of reading one.",
        "**Key:** the words of the query. **Answer:** the pages that contain them.",
        f"At design scale: {q(crawler_plan.fetch_rate_per_s, '/s')} pages fetched, "
        f"{q(crawler_plan.link_checks_per_s, '/s')} “seen this link?” checks, and one "
        f"big site still takes {q(crawler_plan.big_site_days, 'days')} to crawl politely.",
    ),
]
#: Per card: the pages it links, the /healthz system it reports, its next step when that
#: system has nothing built, and its read path and write path as Graphviz DOT.
HUB: list[dict[str, Any]] = [
    {
        "pages": [("views/shortener.py", "Open the URL shortener", ":material/link:")],
        "system": "shortener",
        "next": "Shorten a link and click it.",
        "not_built": "",
        "read": '"GET /key" -> "LRU cache" -> "302"; "LRU cache" -> "link DB" [label=miss]; '
        '"302" -> "link DB" [style=invis]',  # one column: narrow enough to read
        "write": '"POST /v1/links" -> "link DB"; "POST /v1/links" -> "click" [style=invis]; '
        '"click" -> "buffer" -> "click log" -> "aggregator"',
    },
    {
        "pages": [("views/typeahead.py", "Open the typeahead", ":material/keyboard:")],
        "system": "typeahead",
        "next": "Type “wea” and choose a suggestion.",
        "not_built": "`make run` builds the query log and the snapshots (or run "
        f"`{LOOKUP} datasets build typeahead` then `{LOOKUP} typeahead build`).",
        "read": '"keystroke" -> "radix trie" -> "top 10"',
        "write": '"search" -> "query log" -> "offline build" -> "snapshot"; '
        '"snapshot" -> "radix trie" [label=swap]',
    },
    {
        "pages": [("views/places.py", "Open places near me", ":material/location_on:")],
        "system": "places",
        "next": "Find “Pune” and see what is within 2 km.",
        "not_built": "`make run` builds the places data set "
        f"(or `{LOOKUP} datasets build places`).",
        "read": '"your point" -> "geohash cell" -> "9 cells" -> "exact distance"',
        "write": '"owner edit" -> "places DB" -> "change stream" -> "9 cells"',
    },
    {
        "pages": [
            ("views/crawler.py", "Open the web crawler", ":material/travel_explore:"),
            ("views/search.py", "Open web search", ":material/search:"),
        ],
        "system": "search",
        "next": "Search the crawled pages.",
        "not_built": "Web search needs a crawl first: start one on the Web crawler page, "
        "then press “Build search index”.",
        "read": '"query" -> "shards" -> "BM25" -> "top 10"',
        "write": '"frontier" -> "polite fetch" -> "WARC" -> "index build" -> "shards"',
    },
]


def status_line(health: ApiHealth, system: str, not_built: str, ready: str) -> str:
    """The card's live status from ``/healthz`` and the next step it implies."""
    if not health.up:
        return ":red-badge[API down] Start it with `make run`."
    state = (health.systems or {}).get(system)
    status = state.get("status") if isinstance(state, dict) else None
    if isinstance(state, dict) and state.get("remedy"):  # damaged: the page says what to do
        label = PROBLEM_LABELS.get(str(status), "not working")
        return f":red-badge[{label}] {state['remedy'][:1].upper()}{state['remedy'][1:]}."
    if status == "NOT_BUILT":
        return f":orange-badge[not built yet] {not_built}"
    if status is None:
        return ":gray-badge[not served] This API does not run it; restart it with `make run`."
    return f":green-badge[ready] {ready}"


def paths_dot(read: str, write: str) -> str:
    """One small top-to-bottom picture: the read path (blue) beside the write path (grey),
    drawn downwards so that it fits a narrow card at a readable size (left to right, the
    four cards' text came out about 5 px high at 1280 px).
    A node named after a term of the glossary (BM25, WARC) explains it as its tooltip."""
    tips = "".join(
        f' "{term}" [tooltip="{text}"];' for term, text in GLOSSARY.items()
        if f'"{term}"' in read + write
    )  # fmt: skip
    return (
        "digraph { rankdir=TB; bgcolor=transparent; nodesep=0.12; ranksep=0.16;"
        'node [shape=box style="rounded,filled" fontsize=12 fontname="sans-serif" '
        'height=0.25 margin="0.06,0.03"]; edge [arrowsize=0.5 fontsize=10];'
        'subgraph cluster_r { label="read"; fontsize=11; color="#1f6feb"; '
        f'node [fillcolor="#ddf4ff" color="#1f6feb"]; {read} }}'
        'subgraph cluster_w { label="write"; fontsize=11; color="#8c959f"; '
        f'node [fillcolor="#f6f8fa" color="#8c959f"]; {write} }}{tips} }}'
    )


for column, (title, what, key, scale), hub in zip(
    st.columns(len(SYSTEMS)), SYSTEMS, HUB, strict=True
):
    with column.container(border=True, height="stretch", key=f"hub-{hub['system']}"):
        st.markdown(f"#### {title}")
        st.markdown(status_line(health, hub["system"], hub["not_built"], hub["next"]))
        for page, label, icon in hub["pages"]:
            st.page_link(page, label=label, icon=icon)
        st.markdown(what)
        st.graphviz_chart(paths_dot(hub["read"], hub["write"]), width="stretch")
        st.markdown(key)
        st.caption(scale)

st.header("The one idea: decide the answer in advance")
st.markdown(
    "A short link is created once and clicked thousands of times; the suggestions for "
    "*“wea”* are worked out once and shown to millions of people who type it. So the "
    "expensive work happens once, when the data changes, and every read becomes a single "
    "cheap lookup. Five moves make that work:"
)
MOVES = [
    (
        ":material/key: Choose the key",
        "The short code, the letters typed so far, the map cell you stand in. "
        "The right key turns every read into one fetch.",
    ),
    (
        ":material/inventory_2: Precompute the answer",
        "Store the destination per code, the top ten per prefix, the places per cell — "
        "the finished answer, not raw data to sort on every request.",
    ),
    (
        ":material/bolt: Cache the hot head",
        "A few links, prefixes and city centres get most of the traffic. Caches at the "
        "edge and in memory absorb them; the store serves the long tail.",
    ),
    (
        ":material/sync: Rebuild offline, swap at once",
        "Indexes are rebuilt in the background as new versions and switched in with "
        "one atomic swap, while reads carry on against the old one.",
    ),
    (
        ":material/call_split: Keep writes off the read path",
        "Clicks, search logs and business edits go into a queue and are processed later, "
        "so they never slow down a read.",
    ),
]
for column, (title, text) in zip(st.columns(len(MOVES)), MOVES, strict=True):
    with column.container(border=True, height="stretch"):
        st.markdown(f"**{title}**")
        st.caption(text)

st.header("Explore")
with st.container(border=True):
    st.markdown(
        "**Capacity planner** — every design starts from a few numbers: requests per "
        "second, bytes, and the one figure that decides the design. Move the assumptions "
        "and watch the numbers and the charts follow."
    )
    st.page_link(
        "views/capacity.py", label="Open the capacity planner", icon=":material/calculate:"
    )
with st.container(border=True):
    st.markdown(
        "**Building blocks** — the parts every system stands on, each working on its own: "
        "unique ids, rate limiters, the hash ring and a quorum-replicated store, and a "
        "distributed cache you can break."
    )
    st.page_link("views/blocks.py", label="Open the building blocks", icon=":material/widgets:")
with st.container(border=True):
    st.markdown(
        "**Study** — practise for a system-design interview against the systems themselves: "
        "your estimates are checked by the capacity planner, your predictions by running the "
        "real code, a drill breaks a live system after you say what will happen, and a timed "
        "mock interview walks one design from clarifying questions to curveballs."
    )
    st.page_link("views/study.py", label="Start a study session", icon=":material/school:")
