"""The typeahead page's personal and usage parts (issue 27 items 8-10).

* **Recent searches at the top**: this browser session is one device; it asks the API
  for a signed device token once (``POST /v1/suggest/recent/token``), sends it with its
  searches, and puts its own recent searches that start with the typed text at the top
  of the dropdown (``GET /v1/suggest/recent``), above the shared answer, which stays the
  same for everyone. A button clears them (``DELETE``).
* **Marks**: a suggestion the shared answer found by a word inside it is tagged
  "word match"; a recent one "recent".
* **Picked or typed**: a search chosen from the dropdown is sent with
  ``fromSuggestion``, its rank and the prefix typed; the Usage tab shows the pick rate per
  prefix from the last build and the prefixes the server answered with nothing.
"""

from __future__ import annotations

from typing import Any

import httpx
import pandas as pd
import streamlit as st
from common import Answer, api_client, api_url
from common import call as api_call

from lookup.typeahead.client import Shown
from lookup.typeahead.normalize import normalize_query

TOKEN = "typeahead.device-token"
#: Recent searches shown above the shared suggestions at most.
RECENT_SHOWN = 3
RECENT_TAG = "recent"
INFIX_TAG = "word match"


@st.cache_resource(show_spinner=False)
def _client(base_url: str) -> httpx.Client:
    return api_client(base_url)


def _call(method: str, path: str, **kwargs: Any) -> Answer:
    return api_call(method, path, client=_client(api_url()), **kwargs)


def device_token() -> str | None:
    """This session's signed device token (asked for once; None if the API has none)."""
    token = st.session_state.get(TOKEN)
    if token is None:
        answer = _call("POST", "/v1/suggest/recent/token")
        if answer.ok and isinstance(answer.body, dict):
            token = st.session_state[TOKEN] = str(answer.body["token"])
    return token


def _auth() -> dict[str, str]:
    token = device_token()
    return {"Authorization": f"Bearer {token}"} if token else {}


def recent(market: str, prefix: str) -> list[str]:
    """This device's recent searches starting with ``prefix``, newest first."""
    if not _auth():
        return []
    answer = _call(
        "GET",
        "/v1/suggest/recent",
        headers=_auth(),
        params={"q": prefix, "market": market, "limit": RECENT_SHOWN},
    )
    if not answer.ok or not isinstance(answer.body, dict):
        return []
    return [str(r["query"]) for r in answer.body.get("recent", [])]


def with_recent(items: list[dict[str, Any]], shown: Shown, market: str) -> list[dict[str, Any]]:
    """The dropdown: this device's matching recent searches first, then the shared
    suggestions (those found by a word inside marked), without repeating one."""
    for item, how in zip(items, shown.match, strict=False):
        if how == "infix":
            item["tag"] = INFIX_TAG
    if shown.source == "error" or not shown.prefix.strip():
        return items
    mine = recent(market, shown.prefix)
    top = [
        {
            "s": q,
            "typed": shown.prefix if q.startswith(shown.prefix) else "",
            "hot": False,
            "tag": RECENT_TAG,
        }
        for q in mine
    ]
    return top + [i for i in items if i["s"] not in set(mine)]


def search_request(q: str, market: str, before: Shown | None) -> dict[str, Any]:
    """``POST /v1/searches``'s arguments for a submitted search: sent with this device's
    token (so it joins the recent list) and, when it was one of the shared suggestions
    on screen for a shorter text, marked as picked with its rank and the prefix typed."""
    body: dict[str, Any] = {"q": q, "market": market}
    if before is not None and before.market == market and q in before.suggestions:
        typed = before.prefix
        if normalize_query(q) != normalize_query(typed):
            body.update(fromSuggestion=True, rank=before.suggestions.index(q) + 1, prefix=typed)
    return {"json": body, "headers": _auth()}


def recent_controls(market: str) -> None:
    """The button that forgets this device's recent searches."""
    if not st.session_state.get(TOKEN):
        return
    if st.button(
        "Clear my recent searches",
        key="ta-recent-clear",
        icon=":material/history:",
        help="DELETE /v1/suggest/recent: forgets this device's list (every "
        "market). The shared suggestions are not affected.",
    ):
        answer = _call("DELETE", "/v1/suggest/recent", headers=_auth())
        if answer.ok and isinstance(answer.body, dict):
            st.success(
                f"Forgot {answer.body.get('cleared', 0)} recent searches.",
                icon=":material/check_circle:",
            )
        else:
            st.error(f"Not cleared: {answer.message()}", icon=":material/error:")


def usage_tab(market: str) -> None:
    """Pick rate per prefix (the last build's report) and zero-hit prefixes (this server)."""
    st.caption(
        "Suggestions shape what people search, and searches shape the suggestions. The "
        "build counts a search picked from the list for less than one typed out in full "
        "(setting `typeahead_picked_weight`), and reports, for each prefix someone picked "
        "at, how often the list was used rather than typed past. Zero-hit prefixes are "
        "what people typed that the list had nothing for, counted by this server."
    )
    answer = _call("GET", "/v1/typeahead/insights", params={"market": market})
    if not answer.ok or not isinstance(answer.body, dict):
        st.warning(f"No usage figures: {answer.message()}", icon=":material/warning:")
        return
    picks = answer.body.get("picks") or {}
    zero = answer.body.get("zeroHits") or []
    a, b, c = st.columns(3)
    a.metric("Searches in the log", f"{picks.get('searches', 0):,}", border=True)
    b.metric(
        "Picked from the list",
        f"{picks.get('pickRate', 0.0):.0%}",
        border=True,
        help="Share of submitted searches chosen from the suggestions (last build).",
    )
    c.metric(
        "Zero-hit prefixes",
        f"{len(zero):,}",
        border=True,
        help="Distinct prefixes this server answered with an empty list since it started.",
    )
    left, right = st.columns(2, gap="large")
    with left:
        st.markdown("**Pick rate per prefix** (last build)")
        rows = picks.get("prefixes") or []
        if rows:
            frame = pd.DataFrame(rows).rename(
                columns={
                    "prefix": "prefix",
                    "picks": "picked",
                    "typedOut": "typed past",
                    "pickRate": "pick rate",
                    "meanRank": "mean rank",
                }
            )
            st.dataframe(frame, hide_index=True)
        else:
            st.caption("No picks yet: choose a suggestion in the box, then build.")
    with right:
        st.markdown("**Zero-hit prefixes** (this server)")
        if zero:
            st.dataframe(pd.DataFrame(zero).rename(columns={"count": "times"}), hide_index=True)
        else:
            st.caption("None yet: every prefix typed had a suggestion.")


__all__ = [
    "device_token",
    "recent",
    "recent_controls",
    "search_request",
    "usage_tab",
    "with_recent",
]
