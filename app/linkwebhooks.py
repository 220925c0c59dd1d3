"""The shortener page's webhooks panel: register endpoints, see each one's delivery log.

An admin's panel: every call carries the API's admin token (:func:`common.admin_headers`),
as ``lookup serve`` and the dashboard share a data directory. Registering shows the
endpoint's secret once (the API never shows it again); the log lists each POST's state,
attempts, response code and last error, newest first.
"""

from __future__ import annotations

from typing import Any

import streamlit as st
from common import admin_headers, call

EVENTS = ["link.created", "link.updated", "link.deleted", "link.clicked"]
_NEW_SECRET = "webhook-new-secret"


def _add_form() -> None:
    with st.form("webhook-form", clear_on_submit=False, border=True):
        url = st.text_input(
            "Receiver URL",
            key="webhook-url",
            placeholder="https://hooks.example.com/lookup",
            help="Checked as a link destination is: private and internal addresses are refused.",
        )
        events = st.multiselect("Events", EVENTS, default=EVENTS, key="webhook-events")
        secret = st.text_input(
            "Secret (optional)",
            key="webhook-secret",
            type="password",
            help="Leave empty and a random one is made for you.",
        )
        submitted = st.form_submit_button("Add endpoint", key="webhook-add")
    if not submitted:
        return
    body: dict[str, Any] = {"url": url.strip(), "events": events}
    if secret.strip():
        body["secret"] = secret.strip()
    answer = call("POST", "/v1/shortener/webhooks", json=body, headers=admin_headers())
    if answer.ok:
        st.session_state[_NEW_SECRET] = (answer.body["id"], answer.body["secret"])
    else:
        st.error(f"Not added: {answer.message()}", icon=":material/block:")


def _log(hook: dict[str, Any]) -> None:
    answer = call("GET", f"/v1/shortener/webhooks/{hook['id']}/deliveries", headers=admin_headers())
    if not answer.ok:
        st.warning(f"No delivery log: {answer.message()}")
        return
    rows = answer.body["deliveries"]
    if not rows:
        st.caption("Nothing sent yet: create, change or click a link.")
        return
    st.dataframe(
        [
            {
                "Event": r["event"],
                "Events": r["events"],
                "State": r["state"],
                "Attempts": r["attempts"],
                "Response": r["responseCode"],
                "Last error": r["lastError"] or "",
                "Created": r["createdAt"],
                "Next try": r["nextAttemptAt"] or "",
            }
            for r in rows
        ],
        hide_index=True,
        width="stretch",
    )


def webhooks_panel() -> None:
    """Register, list and delete webhook endpoints; one endpoint's delivery log."""
    st.caption(
        "Each event is POSTed as JSON, signed with `X-Lookup-Signature: sha256=<HMAC-SHA256 "
        "of the body>` and stamped with `X-Lookup-Timestamp` (also inside the signed body). "
        "Clicks arrive in batches; a failed POST is retried with growing waits."
    )
    _add_form()
    made = st.session_state.get(_NEW_SECRET)
    if made:
        st.success(
            f"Endpoint {made[0]} added. Its secret, shown this once: `{made[1]}`",
            icon=":material/key:",
        )
    answer = call("GET", "/v1/shortener/webhooks", headers=admin_headers())
    if not answer.ok:
        st.warning(f"Webhooks unavailable: {answer.message()}")
        return
    hooks = answer.body["webhooks"]
    if not hooks:
        st.caption("No webhook endpoints yet.")
        return
    st.dataframe(
        [
            {
                "Id": h["id"],
                "URL": h["url"],
                "Events": ", ".join(h["events"]),
                "Added": h["createdAt"],
            }
            for h in hooks
        ],
        hide_index=True,
        width="stretch",
    )
    ids = [h["id"] for h in hooks]
    chosen = st.selectbox("Delivery log of", ids, key="webhook-pick")
    hook = next(h for h in hooks if h["id"] == chosen)
    left, right = st.columns(2)
    left.button("Refresh the log", key="webhook-refresh")
    if right.button("Delete this endpoint", key="webhook-delete"):
        gone = call("DELETE", f"/v1/shortener/webhooks/{chosen}", headers=admin_headers())
        if gone.ok:
            st.session_state.pop(_NEW_SECRET, None)
            st.rerun()
        st.error(f"Not deleted: {gone.message()}")
    _log(hook)
