"""Home: what the workbench is, the one idea behind its four systems, and whether the API is up."""

from __future__ import annotations

import streamlit as st
from common import show_api_status

from lookup import capacity

st.title("Lookup Workbench")
st.markdown(
    "Four systems that answer in milliseconds — a **URL shortener**, **typeahead**, "
    "**proximity search** and a **web crawler with its search engine** — each built for "
    "real and explained with its numbers. One idea runs through all of them: **reads vastly "
    "outnumber writes, so decide the answer in advance.**"
)
show_api_status()

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
        f"At the seed's scale: {q(short_plan.peak_reads_per_s, '/s')} redirects at peak "
        f"against {q(short_plan.peak_writes_per_s, '/s')} new links; keys are "
        f"{short_plan.key_length} characters so that the key space stays nearly empty.",
    ),
    (
        ":material/keyboard: Typeahead",
        "Suggests what you are probably looking for while you type, letter by letter, "
        "from what millions of people searched before — trending and safe.",
        "**Key:** the prefix typed so far. **Answer:** the ten best completions.",
        f"At the seed's scale: every keystroke counts, "
        f"{q(typeahead_plan.origin_peak_per_s, '/s')} lookups at peak reach the servers, "
        f"and the whole {q(typeahead_plan.total_bytes, 'B')} index fits in one machine's "
        "memory.",
    ),
    (
        ":material/location_on: Proximity search",
        "Finds the places near you — restaurants within two kilometres, the nearest "
        "airport — and pages through them on a map.",
        "**Key:** the map cell you are in. **Answer:** the places in that cell.",
        f"At the seed's scale: {q(proximity_plan.peak_search_rate_per_s, '/s')} searches at "
        f"peak over a {q(proximity_plan.index_bytes, 'B')} location index, about "
        f"{q(proximity_plan.reads_per_write_at_peak, '')} reads for every write.",
    ),
    (
        ":material/travel_explore: Web crawler and search",
        "Visits web pages politely, one host at a time, skipping duplicates and traps, "
        "and builds the index that a search box answers from. It is the one system that "
        "builds an index instead of reading one.",
        "**Key:** the words of the query. **Answer:** the pages that contain them.",
        f"At the seed's scale: {q(crawler_plan.fetch_rate_per_s, '/s')} pages fetched, "
        f"{q(crawler_plan.link_checks_per_s, '/s')} “seen this link?” checks, and one "
        f"big site still takes {q(crawler_plan.big_site_days, 'days')} to crawl politely.",
    ),
]
for column, (title, what, key, scale) in zip(st.columns(len(SYSTEMS)), SYSTEMS, strict=True):
    with column.container(border=True, height="stretch"):
        st.markdown(f"#### {title}")
        st.markdown(what)
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
