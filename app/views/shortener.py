"""URL shortener: shorten a link, click it, watch its clicks, push traffic through the caches.

The page's skeleton: the form and the card of the last link made (:mod:`shortlinks`),
"My links" and one link's clicks (:mod:`linkclicks`, with its safety panel,
:mod:`linksafety`), the traffic simulator (:mod:`linktraffic`) and the backends
(:mod:`linkbackends`).

Everything here goes over HTTP to the API at ``$LOOKUP_API_URL`` (the same calls any
client makes). The page's owner token, minted once with ``POST /v1/tokens``, is kept in
a cookie of this browser (``app/cookies.py``), so "My links" — ``GET /v1/links`` with
that token — are still there after a reload or in a new tab.
"""

from __future__ import annotations

import streamlit as st
from common import LOOKUP, show_api_status
from linkbackends import backends_panel
from linkclicks import link_panel
from linkfinder import bulk_paste, filtering, find_controls, find_links
from linkrules import rules_panel
from linktraffic import simulator
from linkwebhooks import webhooks_panel
from shortlinks import SELECTED, create_form, created_card, ensure_token, links_table

st.title("URL shortener")
st.markdown(
    "A short link is created once and clicked a hundred times more: the redirect is "
    "**one cache lookup**, and everything else — click analytics, the safety scanner — "
    "runs **beside it, never in it**."
)
health = show_api_status()
if not health.up:
    st.info(
        "This page needs the API: it creates links, follows clicks and reads statistics "
        f"over HTTP. Start it with `make run` (or `{LOOKUP} serve`) and reload.",
        icon=":material/cloud_off:",
    )
    st.stop()
if not ensure_token():
    st.stop()

form_col, card_col = st.columns([3, 2], gap="large")
with form_col:
    create_form()
with card_col:
    created_card()

links_tab, sim_tab = st.tabs(["My links and their clicks", "Traffic simulator"])
with links_tab:
    bulk_paste()
    wanted = find_controls()
    mine = find_links(wanted)
    if not mine and filtering(wanted):
        st.caption("No link matches this search or these dates.")
    elif not mine:
        st.caption("No links yet: shorten one above, or run the traffic simulator.")
    else:
        links_table(mine)
        st.subheader("Clicks")
        link_panel(mine)
        st.subheader("Redirect rules")
        rules_panel(st.session_state.get(SELECTED))
with sim_tab:
    simulator()

st.subheader("Webhooks")
webhooks_panel()

st.subheader("Backends")
backends_panel()

with st.expander("How it works", icon=":material/info:"):
    st.markdown(
        "- **Redirect**: in-process LRU (TTL 60 s) → negative cache for unknown keys (30 s) "
        "→ SQLite, with single-flight loading. `302` with "
        "`Cache-Control: max-age=0, s-maxage=60`, so every click stays visible and revocable.\n"
        "- **Analytics**: after the response is sent, the click goes into a bounded in-memory "
        "buffer (dropped and counted when full). A shipper thread parses the user agent, "
        "hashes the IP and writes batches to the click log; an aggregator (its own process "
        "under `lookup serve`) folds the log into per-minute and per-hour counts, skipping "
        "clicks it has already counted, with a HyperLogLog per link for unique visitors.\n"
        "- **Safety**: new and changed links are scanned off the request path (blocklist, "
        "threat feed, URL heuristics); popular links are rescanned hourly, all links on a "
        "rolling sweep and whenever the blocklist changes. A bad verdict disables the link and "
        "purges every cache layer, so the next click gets the warning page."
    )
