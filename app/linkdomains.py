"""The shortener page's domain picker: which short domain a new link lives on.

The server lists its short domains at ``GET /v1/domains`` (the default one first,
then those of ``LOOKUP_SHORTENER_DOMAINS``). With only the default domain there is
nothing to choose and the picker says so in a caption; with more, the form shows a
select box, and the link is made with ``"domain"`` in its body — the same alias may then
exist once per domain.
"""

from __future__ import annotations

from typing import Any

import streamlit as st
from common import call

#: The select box's key (the form reads it when it is submitted).
PICKER = "create-domain"


def short_domains() -> list[dict[str, Any]]:
    """The server's short domains, default first (empty when the call fails)."""
    answer = call("GET", "/v1/domains")
    if not answer.ok or not isinstance(answer.body, list):
        return []
    return [d for d in answer.body if isinstance(d, dict) and d.get("domain")]


def domain_picker() -> str | None:
    """Draw the picker inside the create form; the chosen domain, or None for the default
    one (what the API assumes when a create names none)."""
    domains = short_domains()
    if len(domains) < 2:
        if domains:
            st.caption(f"Short domain: {domains[0]['domain']}")
        return None
    names = [str(d["domain"]) for d in domains]
    chosen = st.selectbox(
        "Short domain",
        names,
        index=0,
        key=PICKER,
        help="The domain in the short URL. An alias is unique per domain, in any letter case: "
        "IPL-Final and ipl-final are one alias.",
    )
    default = next((d for d in domains if d.get("isDefault")), domains[0])
    return None if chosen in (None, default["domain"]) else str(chosen)


def domain_params(link: dict[str, Any]) -> dict[str, str]:
    """The ``?domain=`` that names ``link`` (from its JSON) in the management API (the
    default domain's name is accepted there too)."""
    domain = link.get("domain")
    return {"domain": str(domain)} if domain else {}
