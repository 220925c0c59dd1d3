"""The search page's index versions panel: what is live, what was rejected and why, rollback.

``GET /search/versions`` lists the kept versions (the live one, the rollback target), the
canary queries the live version holds the next one to, and the versions validation
refused with each check's outcome. The rollback button is ``POST
/search/versions/rollback`` with the admin token: the API swaps the pointer and serves the
previous version before it answers, so the page drawn after the click already shows it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pandas as pd
import streamlit as st
from common import admin_headers, plural
from searchshards import call

#: Where the outcome of the last rollback waits for the next run of the page.
ROLLBACK_NOTICE = "search.versions.notice"
#: Rejected versions shown (the newest first).
REJECTED_SHOWN = 5


def _when(stamp: Any) -> str:
    if isinstance(stamp, int | float) and stamp > 0:
        return datetime.fromtimestamp(stamp).strftime("%Y-%m-%d %H:%M:%S")
    return ""


def roll_back() -> None:
    """The button's callback: ask the API to make the previous version live again."""
    answer = call("POST", "/search/versions/rollback", headers=admin_headers())
    body = answer.body if isinstance(answer.body, dict) else {}
    if answer.ok:
        st.session_state[ROLLBACK_NOTICE] = (
            "success",
            f"Rolled back: index version {body.get('version')} is live again (it replaced "
            f"version {body.get('previous')}, which is now the rollback target).",
        )
    else:
        st.session_state[ROLLBACK_NOTICE] = ("error", f"Rollback refused: {answer.message()}")


STATE_LABELS = {"live": "live", "previous": "previous (rollback target)", "kept": "kept"}


def versions_table(info: dict[str, Any]) -> None:
    """The kept versions, newest first."""
    rows = [
        {
            "version": v["version"],
            "state": STATE_LABELS.get(v.get("state", ""), v.get("state", "")),
            "pages": v.get("liveDocs"),
            "shards": v.get("shards"),
            "canary queries": len(v.get("canaries") or []),
            "built": _when(v.get("createdAt")),
        }
        for v in reversed(info.get("versions") or [])
    ]
    if rows:
        st.dataframe(pd.DataFrame(rows), hide_index=True, key="search-versions")


def rejected_list(info: dict[str, Any]) -> None:
    """The versions validation refused, each with the checks that failed."""
    rejected = (info.get("rejected") or [])[:REJECTED_SHOWN]
    if not rejected:
        st.caption("No version has been rejected.")
        return
    for r in rejected:
        st.warning(
            f"Version {r['version']} was rejected {_when(r.get('rejectedAt'))} — "
            f"{r.get('reason') or 'no reason recorded'}. Version {r.get('live')} kept serving.",
            icon=":material/block:",
        )
    checks = [
        {"version": r["version"], "check": c.get("name"), "passed": bool(c.get("ok")),
         "detail": c.get("detail")}
        for r in rejected
        for c in r.get("checks") or []
    ]  # fmt: skip
    if checks:
        st.dataframe(pd.DataFrame(checks), hide_index=True, key="search-rejected-checks")


def versions_panel() -> None:
    """The panel: kept versions, the live one's canary queries, rejections, rollback."""
    notice = st.session_state.pop(ROLLBACK_NOTICE, None)
    answer = call("GET", "/search/versions")
    with st.expander("Index versions: validation and rollback", icon=":material/history:"):
        if notice:
            kind, text = notice
            (st.success if kind == "success" else st.error)(text)
        if not answer.ok or not isinstance(answer.body, dict):
            st.error(f"The index versions are unavailable: {answer.message()}")
            return
        info = answer.body
        st.markdown(
            "A new index version goes live only if it passes validation: no empty shard, "
            "its page count within bounds of the live version's, and the live version's "
            "**canary queries** (the titles of its most-linked pages) still finding their "
            "pages. Otherwise it is rejected with the reason and the live version keeps "
            "serving. Rolling back swaps to the previous version at once."
        )
        versions_table(info)
        live = next((v for v in info.get("versions") or [] if v.get("state") == "live"), None)
        if live is not None and live.get("canaries"):
            shown = ", ".join(f"“{q}”" for q in live["canaries"][:8])
            more = len(live["canaries"]) - 8
            st.caption(
                f"Canary queries of version {live['version']} "
                f"({plural(len(live['canaries']), 'query', 'queries')}): {shown}"
                + (f" and {more} more." if more > 0 else ".")
            )
        previous = info.get("previous")
        kept = {v["version"] for v in info.get("versions") or []}
        can_roll = previous is not None and previous in kept
        st.button(
            f"Roll back to version {previous}" if can_roll else "Roll back",
            key="search-rollback",
            icon=":material/undo:",
            disabled=not can_roll,
            on_click=roll_back,
            help="POST /search/versions/rollback (admin token)",
        )
        if not can_roll:
            st.caption("There is no previous version to roll back to yet.")
        rejected_list(info)
