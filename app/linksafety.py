"""The shortener page's safety panel: a link's scan verdict with the reasons behind it, the
button that takes it down (or puts it back), and exactly what the next click gets.
"""

from __future__ import annotations

import ipaddress
from typing import Any
from urllib.parse import urlsplit

import streamlit as st
from common import show_notice
from shortlinks import PROBE, call

NOTICE = "shortener.notice"
SCAN_BADGE = {
    "SAFE": ":green-badge[SAFE]",
    "SUSPICIOUS": ":orange-badge[SUSPICIOUS]",
    "MALICIOUS": ":red-badge[MALICIOUS]",
    "PENDING": ":gray-badge[PENDING]",
}

#: The take-down button a link's status offers: label, icon, widget key, status it sets.
STATUS_TOGGLE = {
    "ACTIVE": ("Disable link", ":material/block:", "link-disable", "DISABLED"),
    "DISABLED": ("Enable link", ":material/check_circle:", "link-enable", "ACTIVE"),
}


def _set_status(key: str, status: str) -> None:
    answer = call("PATCH", f"/v1/links/{key}", json={"status": status})
    if answer.ok:
        st.session_state[NOTICE] = ("success", f"{key} is now {status}.")
    else:
        st.session_state[NOTICE] = ("error", f"Could not change {key}: {answer.message()}")
    st.session_state.pop(PROBE, None)


def _probe(key: str) -> None:
    answer = call("GET", f"/{key}", auth=False)
    title = ""
    if answer.content and b"<h1" in answer.content:
        head = answer.content.split(b"<h1", 1)[1].split(b">", 1)[1].split(b"</h1>", 1)[0]
        title = head.decode("utf-8", "replace")
    st.session_state[PROBE] = {
        "key": key,
        "status": answer.status,
        "location": answer.headers.get("location") if answer.headers else None,
        "title": title,
        "problem": answer.problem,
    }


def local_address(url: str) -> bool:
    """Whether ``url`` points at this machine or a private network (the sandbox web,
    the dashboard): an IP address the scanner cannot tell from a phishing host."""
    try:
        host = urlsplit(url).hostname or ""
        return ipaddress.ip_address(host).is_private or host == "localhost"
    except ValueError:
        return host == "localhost" or host.endswith(".localhost")


def scan_verdict(link: dict[str, Any]) -> None:
    """The safety scan's verdict with the reasons behind it: the rules and blocklist
    entries that fired, as the scanner recorded them."""
    verdict = link.get("scanVerdict", "?")
    reasons = link.get("scanReasons") or []
    st.markdown(f"**Safety scan** {SCAN_BADGE.get(verdict, verdict)}")
    if reasons:
        st.markdown("Why:\n" + "\n".join(f"- {reason}" for reason in reasons))
    elif verdict == "PENDING":
        st.caption("Not scanned yet: the scanner checks every new link within moments.")
    else:
        st.caption("No safety rule fired for this destination.")
    if verdict == "SUSPICIOUS" and local_address(link.get("longUrl") or ""):
        st.info(
            "**Why a local address scores SUSPICIOUS:** the destination is an IP address on "
            "this machine (the sandbox web or the dashboard), not a domain name — and phishing "
            "links often hide behind a bare IP and an unusual port, so the scanner adds points "
            "for both. Nothing is wrong with the link: it still redirects; its preview page "
            "shows a caution.",
            icon=":material/info:",
        )
    st.caption(
        f"The same verdict and reasons are on the link's public [preview page]"
        f"({link['shortUrl']}+)."
    )


def safety_panel(link: dict[str, Any]) -> None:
    """The scan verdict and its reasons; disable or enable the link, and see exactly what
    the next click gets."""
    key = link["key"]
    with st.container(border=True, key="safety-panel"):
        scan_verdict(link)
        st.markdown("**Take it down** — a disabled link gets a warning page, never a `Location`")
        buttons = st.columns([1, 1, 1, 2], vertical_alignment="center")
        toggle = STATUS_TOGGLE.get(link["status"])
        if toggle is not None:
            label, icon, widget_key, target = toggle
            buttons[0].button(
                label, icon=icon, key=widget_key, on_click=_set_status, args=(key, target)
            )
        buttons[1].button(
            "Try the next click",
            icon=":material/ads_click:",
            key="link-probe",
            on_click=_probe,
            args=(key,),
        )
        buttons[2].link_button("Open it", link["shortUrl"], icon=":material/open_in_new:")
        show_notice(NOTICE)
        probe = st.session_state.get(PROBE)
        if probe and probe["key"] == key:
            if probe["problem"]:
                st.warning(probe["problem"])
            elif probe["location"]:
                st.success(
                    f"`GET /{key}` → **HTTP {probe['status']}**, `Location: {probe['location']}`",
                    icon=":material/call_made:",
                )
            else:
                shown = f" — the page says: *{probe['title']}*" if probe["title"] else ""
                st.error(
                    f"`GET /{key}` → **HTTP {probe['status']}**, no `Location` header{shown}",
                    icon=":material/gpp_bad:",
                )
