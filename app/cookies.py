"""A cookie the page sets in the browser and reads back on the next visit.

Streamlit reads the cookies a browser sends (``st.context.cookies``, taken when the
page connects) but cannot set one; this tiny Components-v2 element (inline JavaScript,
drawn as nothing) writes ``document.cookie`` for the dashboard's own origin. So a value
survives reloads and new tabs without putting it in the address, where a shared link
would hand it on.
"""

from __future__ import annotations

import re

import streamlit as st

_JS = r"""
export default function({ data }) {
  const want = data.name + "=" + encodeURIComponent(data.value);
  if (!document.cookie.split("; ").includes(want)) {
    document.cookie = want + "; path=/; max-age=" + data.maxAge + "; SameSite=Strict";
  }
}
"""

_component = st.components.v2.component("lookup_cookie", html="", js=_JS)

#: A cookie value this page writes: URL-safe characters only, nothing to escape.
SAFE_VALUE = re.compile(r"[A-Za-z0-9_\-]{16,200}")


def read_cookie(name: str) -> str | None:
    """The cookie ``name`` the browser sent when this session connected, if well-formed."""
    value = st.context.cookies.get(name)
    return value if isinstance(value, str) and SAFE_VALUE.fullmatch(value) else None


def remember_cookie(name: str, value: str, days: int = 365) -> None:
    """Have the browser keep ``name=value`` for ``days`` (sent on every later visit)."""
    if not SAFE_VALUE.fullmatch(value):
        raise ValueError(f"cookie value for {name} must match {SAFE_VALUE.pattern}")
    if read_cookie(name) == value:
        return  # the browser already has it
    _component(data={"name": name, "value": value, "maxAge": days * 86400}, key=f"cookie-{name}")
