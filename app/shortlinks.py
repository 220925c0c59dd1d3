"""The shortener page's links: the owner token and the calls made with it, the form that
shortens a link, the card of the last link made, and the table of "My links".

Everything goes over HTTP to the API at ``$LOOKUP_API_URL`` (the same calls any client
makes). The page's owner token, minted once with ``POST /v1/tokens``, is kept in a cookie
of this browser (``app/cookies.py``), so "My links" — ``GET /v1/links`` with that token —
are still there after a reload or in a new tab.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pandas as pd
import streamlit as st
from common import Answer
from common import call as api_call
from cookies import read_cookie, remember_cookie
from linkdomains import domain_params, domain_picker

TOKEN = "shortener.token"
#: The browser cookie that keeps the owner token across reloads.
TOKEN_COOKIE = "lookup_owner_token"
#: Set after a link is made: the next run empties the form's boxes.
CLEAR_FORM = "shortener.clear_form"
FORM_KEYS = {"create-url": "", "create-alias": "", "create-password": ""}
#: The forwarding switches of a new link, as the API defaults them (Shlink's defaults).
FORWARD_DEFAULTS = {"create-forward-query": True, "create-forward-path": False}
CREATED = "shortener.created"
PROBE = "shortener.probe"
SELECTED = "shortener.selected"
#: A link to select on the next run (a widget's own key cannot change once it is drawn).
SELECT_NEXT = "shortener.select_next"


def call(method: str, path: str, *, auth: bool = True, **kwargs: Any) -> Answer:
    """One API call with the page's owner token; network failures become an Answer."""
    headers = dict(kwargs.pop("headers", {}) or {})
    if auth and st.session_state.get(TOKEN):
        headers["Authorization"] = f"Bearer {st.session_state[TOKEN]}"
    return api_call(method, path, headers=headers, **kwargs)


def ensure_token() -> bool:
    """This browser's owner token: the one its cookie holds, else one minted now (and
    stored in the cookie); False (with a message) if minting fails."""
    if not st.session_state.get(TOKEN):
        kept = read_cookie(TOKEN_COOKIE)
        if kept is None:
            answer = call("POST", "/v1/tokens", auth=False)
            if not answer.ok or not isinstance(answer.body, dict):
                st.error(
                    f"Could not get an owner token: {answer.message()}", icon=":material/key_off:"
                )
                return False
            kept = answer.body["token"]
        st.session_state[TOKEN] = kept
    remember_cookie(TOKEN_COOKIE, st.session_state[TOKEN])
    return True


def refusal(answer: Answer, long_url: str) -> str:
    """Why a link was not made, in words for the person who typed it (the API's code kept
    at the end for whoever reports it)."""
    body = answer.body if isinstance(answer.body, dict) else {}
    if body.get("error") != "INVALID_URL":
        return answer.message()
    if not long_url:
        return "type or paste a web address first (INVALID_URL)"
    reason = str(body.get("message", "")).replace("longUrl", "the address")
    return (
        f"“{long_url[:80]}” is not a web address this shortener accepts — {reason}. "
        "Write it in full, such as https://example.com/page (INVALID_URL)"
    )


# ------------------------------------------------------------------------------ create


def create_form() -> None:
    """The form that shortens a link, with the optional extras."""
    if st.session_state.pop(CLEAR_FORM, False):
        st.session_state.update(FORM_KEYS)  # before the boxes are drawn: they start empty
        st.session_state["create-max-clicks"] = 0
        st.session_state["create-expiry"] = None
        st.session_state.update(FORWARD_DEFAULTS)
    for name, default in FORWARD_DEFAULTS.items():
        st.session_state.setdefault(name, default)
    with st.form("shortener-create", border=True):
        st.markdown("**Shorten a link**")
        long_url = st.text_input(
            "Long URL", placeholder="https://example.com/a/very/long/path", key="create-url"
        )
        left, right = st.columns(2)
        alias = left.text_input(
            "Custom alias (optional)",
            placeholder="spring-sale",
            max_chars=32,
            key="create-alias",
            help="3 to 32 letters, digits, '-' or '_'; reserved words are refused.",
        )
        password = right.text_input(
            "Password (optional)",
            type="password",
            key="create-password",
            help="Visitors see a password page first.",
        )
        left, right = st.columns(2)
        expires = left.datetime_input(
            "Expires (UTC, optional)",
            value=None,
            min_value=datetime.now(UTC).replace(tzinfo=None),
            key="create-expiry",
            format="YYYY-MM-DD",
        )
        max_clicks = right.number_input(
            "Max clicks (0 = unlimited)",
            min_value=0,
            max_value=1_000_000,
            step=1,
            key="create-max-clicks",
        )
        left, right = st.columns(2)
        forward_query = left.toggle(
            "Forward the visitor's query",
            key="create-forward-query",
            help="/key?utm_source=x goes on to the destination with utm_source=x merged into "
            "its own query (the visitor's value wins).",
        )
        forward_path = right.toggle(
            "Forward an extra path",
            key="create-forward-path",
            help="/key/more/path goes on to the destination's path + /more/path.",
        )
        domain = domain_picker()
        submitted = st.form_submit_button(
            "Shorten", type="primary", icon=":material/link:", key="create-submit"
        )
    if not submitted:
        return
    body: dict[str, Any] = {"longUrl": long_url.strip()}
    if alias.strip():
        body["customAlias"] = alias.strip()
    if password:
        body["password"] = password
    if expires is not None:
        body["expiresAt"] = expires.replace(tzinfo=UTC).isoformat().replace("+00:00", "Z")
    if max_clicks:
        body["maxClicks"] = int(max_clicks)
    if not forward_query:
        body["forwardQuery"] = False
    if forward_path:
        body["forwardPath"] = True
    if domain:
        body["domain"] = domain
    answer = call("POST", "/v1/links", json=body)
    if answer.ok:
        st.session_state[CREATED] = answer.body
        st.session_state[SELECT_NEXT] = answer.body["key"]
        st.session_state[CLEAR_FORM] = True
        st.session_state.pop(PROBE, None)
        st.rerun()
    else:
        st.session_state.pop(CREATED, None)
        st.error(f"Not shortened: {refusal(answer, long_url.strip())}", icon=":material/error:")


def created_card() -> None:
    """The last link made: a short URL that really redirects, and its QR code."""
    created = st.session_state.get(CREATED)
    with st.container(border=True, key="created-card", height="stretch"):
        if not created:
            st.markdown("**Your short link appears here**")
            st.caption(
                "It redirects through the real API server: click it and the server answers "
                "`302` with the destination in `Location` — and drops a click event into its "
                "analytics buffer after the answer has gone out."
            )
            return
        short = created["shortUrl"]
        st.markdown("**Your short link**")
        st.markdown(f"#### [{short}]({short})")
        st.caption(f"→ {created['longUrl']}")
        text, qr = st.columns([3, 2], vertical_alignment="center")
        with text:
            st.markdown(
                f"[Preview page]({short}+) shows the destination, the safety verdict and "
                "the reasons for it before going there."
            )
            if created.get("expiresAt"):
                st.caption(f"Expires {created['expiresAt']}")
        params = {"scale": 6, **domain_params(created)}
        answer = call("GET", f"/v1/links/{created['key']}/qr.png", params=params)
        if answer.ok:
            qr.image(answer.content, caption="Scan to open", width="stretch")  # within the card
        else:
            qr.caption(f"QR code unavailable: {answer.message()}")


# ---------------------------------------------------------------------------- my links


def my_links() -> list[dict[str, Any]]:
    """The owner's links, newest first (at most 200)."""
    answer = call("GET", "/v1/links", params={"limit": 200})
    if not answer.ok:
        st.warning(f"Could not list your links: {answer.message()}", icon=":material/warning:")
        return []
    return list(answer.body.get("links", []))


def scan_why(link: dict[str, Any]) -> str:
    """The scanner's reasons for a link's verdict, in one line (what fired, or why none)."""
    reasons = link.get("scanReasons") or []
    if reasons:
        return "; ".join(reasons)
    if link.get("scanVerdict") == "PENDING":
        return "not scanned yet"
    return "no rule fired"


def _when(text: str | None) -> Any:
    """An ISO time from the API as a pandas time (None stays None)."""
    return pd.to_datetime(text) if text else None


def links_table(links: list[dict[str, Any]]) -> None:
    """A table of the owner's links with status, scan verdict and the reasons for it."""
    rows = [
        {
            "Short URL": link["shortUrl"],
            "Destination": link.get("longUrl") or "—",
            "Status": link["status"],
            "Scan": link.get("scanVerdict", ""),
            "Why": scan_why(link),
            "Created": pd.to_datetime(link["createdAt"]),
            "Expires": pd.to_datetime(link["expiresAt"]) if link.get("expiresAt") else None,
            "Clicks": (link.get("clicks") or {}).get("total"),
            "Last click": _when((link.get("clicks") or {}).get("lastClickAt")),
            "Clicks left": link.get("clicksRemaining"),
            "Tags": ", ".join(link.get("tags") or []),
        }
        for link in links
    ]
    st.dataframe(
        pd.DataFrame(rows),
        hide_index=True,
        key="links-table",
        height=min(420, 38 + 35 * len(rows)),
        column_config={
            "Short URL": st.column_config.LinkColumn("Short URL", width="medium"),
            "Destination": st.column_config.TextColumn("Destination", width="large"),
            "Why": st.column_config.TextColumn(
                "Why", width="medium", help="The safety scanner's rules that fired"
            ),
            "Created": st.column_config.DatetimeColumn("Created", format="YYYY-MM-DD HH:mm"),
            "Expires": st.column_config.DatetimeColumn("Expires", format="YYYY-MM-DD HH:mm"),
            "Clicks": st.column_config.NumberColumn(
                "Clicks", help="Every click so far, bots and link previews included"
            ),
            "Last click": st.column_config.DatetimeColumn(
                "Last click", format="YYYY-MM-DD HH:mm", help="To the minute (an hour if older)"
            ),
        },
    )
