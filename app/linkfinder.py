"""Finding one's links: a search box, a sort and a creation-date range over "My links",
and a box to paste many URLs at once.

The list is ``GET /v1/links`` with ``search``, ``sort``, ``order``, ``createdFrom`` and
``createdTo`` (each item comes with its click counts, read from the same counters as the
stats); the paste box is ``POST /v1/links/bulk``, one link per line, either each line on
its own or all or nothing.
"""

from __future__ import annotations

from datetime import date, timedelta
from typing import Any

import pandas as pd
import streamlit as st
from shortlinks import call

#: The sort choices a person sees → the API's ``sort`` and ``order``.
SORTS = {
    "Newest first": ("created", "desc"),
    "Oldest first": ("created", "asc"),
    "Most clicked": ("clicks", "desc"),
    "Least clicked": ("clicks", "asc"),
    "Clicked most recently": ("lastClick", "desc"),
}
#: The most lines one paste may hold (the server's own limit may be lower).
MAX_PASTE = 200


def find_controls() -> dict[str, str]:
    """The search box, the sort and the date range; the list's query parameters."""
    left, middle, right = st.columns([3, 2, 2])
    text = left.text_input(
        "Search my links",
        key="links-search",
        placeholder="part of the key or the destination",
        help="Case-insensitive, in the short key and the destination URL.",
    )
    choice = middle.selectbox("Sort", list(SORTS), key="links-sort")
    days = right.date_input(
        "Created between",
        value=(),
        key="links-dates",
        help="Pick the first and the last day (UTC); leave empty for all.",
    )
    sort, order = SORTS[choice or "Newest first"]
    params = {"limit": "200", "sort": sort, "order": order}
    if text.strip():
        params["search"] = text.strip()
    picked = [d for d in (days if isinstance(days, (list, tuple)) else [days]) if d]
    if picked:
        first: date = picked[0]
        last: date = picked[-1]
        params["createdFrom"] = first.isoformat()
        params["createdTo"] = (last + timedelta(days=1)).isoformat()
    return params


def find_links(params: dict[str, str]) -> list[dict[str, Any]]:
    """The owner's links the controls ask for (at most 200), with their click counts."""
    answer = call("GET", "/v1/links", params=params)
    if not answer.ok:
        st.warning(f"Could not list your links: {answer.message()}", icon=":material/warning:")
        return []
    return list(answer.body.get("links", []))


def filtering(params: dict[str, str]) -> bool:
    """Whether the list is narrowed (so an empty list means "no match", not "no links")."""
    return "search" in params or "createdFrom" in params


def bulk_paste() -> None:
    """Paste many URLs, one per line; each becomes a link (or all do, or none)."""
    with st.expander("Shorten many URLs at once", icon=":material/playlist_add:"):
        text = st.text_area(
            "One URL per line",
            key="bulk-urls",
            height=140,
            placeholder="https://example.com/one\nhttps://example.com/two",
        )
        atomic = st.toggle(
            "All or nothing",
            key="bulk-atomic",
            help="On: if any line is refused, no link is made. Off: each line on its own.",
        )
        if not st.button("Shorten all", key="bulk-submit", icon=":material/link:"):
            return
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        if not lines:
            st.warning("Paste at least one URL.", icon=":material/warning:")
            return
        if len(lines) > MAX_PASTE:
            st.warning(f"At most {MAX_PASTE} lines at a time.", icon=":material/warning:")
            return
        body = {"links": [{"longUrl": line} for line in lines], "atomic": atomic}
        answer = call("POST", "/v1/links/bulk", json=body)
        result = answer.body if isinstance(answer.body, dict) else {}
        items = result.get("items")
        if not isinstance(items, list):
            st.error(f"Not shortened: {answer.message()}", icon=":material/error:")
            return
        if answer.ok:
            st.success(f"{result['created']} of {len(lines)} shortened.", icon=":material/done:")
        else:
            st.error(
                f"Nothing was shortened: {result.get('failed')} of {len(lines)} refused "
                "(all or nothing).",
                icon=":material/error:",
            )
        rows = [
            {
                "URL": lines[item["index"]],
                "Result": item.get("shortUrl") or item.get("error") or "not made",
                "Why": item.get("message") or "",
            }
            for item in items
        ]
        st.dataframe(pd.DataFrame(rows), hide_index=True, key="bulk-results")
